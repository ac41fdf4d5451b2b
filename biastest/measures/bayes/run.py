"""Running the Bayesian estimate: options and word lists in, :class:`~biastest.measures.bayes.result.BayesResult` out.

The app and the command line call :func:`run` only. It resolves the embedding source through
:func:`biastest.models.factory.word_vectors` (loaded once per process), refuses word lists that
are mostly missing, builds the distance data with the control lists and fits the model
(:func:`~biastest.measures.bayes.fit.fit_bayes`), recording provenance. Progress reaches the caller as
``progress(done, total, message)``; nothing here knows about Gradio.

JAX and parallel chains: the first sampling call in a process gives JAX one CPU device per chain when
JAX is not yet initialised (see :func:`~biastest.measures.bayes.sampler.configure_parallel_chains`);
otherwise chains run one after the other with the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import SpecError
from biastest.measures.bayes.fit import fit_bayes
from biastest.measures.bayes.options import BayesOptions
from biastest.measures.bayes.result import BayesResult
from biastest.measures.bayes.score import BAYES_MODELS, build_distance_data, load_controls
from biastest.models import factory
from biastest.models.embeddings import WordEmbeddings, check_coverage

__all__ = ["MSG_ONE_LIST_PER_GROUP", "MSG_TWO_LISTS", "BayesItems", "Progress", "available_models", "fraction_progress",
           "group_lists", "run", "word_vectors"]

Progress = Callable[[int, int, str], None]

MSG_TWO_LISTS = (
    "The Bayesian estimate needs at least two {kind} (got {count}: {names}). "
    "Give them in order: the first {kind_one} goes with the first attribute list."
)
MSG_ONE_LIST_PER_GROUP = (
    "The Bayesian estimate needs one stereotype attribute list per social group, in the same order (the first "
    "list is the stereotype of the first group): got {n_groups} groups ({groups}) and {n_attributes} attribute "
    "lists ({attributes})."
)


@dataclass(frozen=True)
class BayesItems:
    """What the Bayesian estimate tests: target lists, one attribute list per target list, and the control lists.

    Parameters
    ----------
    groups : mapping name -> terms
        Two or more target (social-group) lists, in order.
    attributes : mapping name -> terms
        As many attribute lists, in order: the k-th is the stereotype of the k-th group.
    human, none : sequence of str, optional
        Custom control lists (default: the shipped ones).
    spec_name : str, optional
        Recorded in provenance.
    """

    groups: Mapping[str, Sequence[str]]
    attributes: Mapping[str, Sequence[str]]
    human: Sequence[str] | None = None
    none: Sequence[str] | None = None
    spec_name: str | None = None

    @classmethod
    def from_spec(cls, spec: Any) -> BayesItems:
        """Every group and its stereotype list of a group spec (:attr:`~biastest.spec.BiasSpec.is_group_spec`,
        e.g. Manzini et al.'s three religions); otherwise the first two target and attribute lists."""
        if spec.is_group_spec:
            spec.check_group_spec()
            return cls(groups=dict(spec.social_groups), attributes=dict(spec.attributes), spec_name=spec.name)
        return cls(groups=dict(spec.social_groups[:2]), attributes=dict(spec.attributes[:2]), spec_name=spec.name)


def available_models() -> list[dict[str, Any]]:
    """The Bayesian models with their printable priors (for the app's model picker)."""
    return [m.to_dict() for m in BAYES_MODELS.values()]


def word_vectors(embeddings: WordEmbeddings, terms: Sequence[str]) -> dict[str, np.ndarray]:
    """Term → vector for the terms the embedding knows (missing terms are simply absent)."""
    terms = list(dict.fromkeys(terms))
    vecs, missing = embeddings.vectors(terms)
    gone = set(missing)
    found = [t for t in terms if t not in gone]
    return {t: vecs[i] for i, t in enumerate(found)}


def two_lists(mapping: Mapping[str, Sequence[str]], kind: str, kind_one: str) -> list[tuple[str, list[str]]]:
    """The named lists of ``mapping``, in order; :data:`MSG_TWO_LISTS` when there are fewer than two."""
    items = [(str(k), list(v)) for k, v in mapping.items()]
    if len(items) < 2:
        raise SpecError(
            MSG_TWO_LISTS.format(kind=kind, count=len(items), names=", ".join(k for k, _ in items) or "none",
                                 kind_one=kind_one),
            count=len(items),
        )
    return items


def group_lists(items: BayesItems) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]:
    """The groups and their attribute lists, two or more of each and as many of one as of the other."""
    groups = two_lists(items.groups, "social groups", "group")
    attrs = two_lists(items.attributes, "attribute lists", "group")
    if len(groups) != len(attrs):
        raise SpecError(MSG_ONE_LIST_PER_GROUP.format(
            n_groups=len(groups), groups=", ".join(n for n, _ in groups), n_attributes=len(attrs),
            attributes=", ".join(n for n, _ in attrs)))
    return groups, attrs


def fraction_progress(progress: Progress | None) -> Callable[[float, str], None] | None:
    """``progress(done, total, message)`` as the samplers' ``tick(fraction, message)`` (percent steps)."""
    if progress is None:
        return None
    return lambda fraction, message: progress(round(fraction * 100), 100, message)


def run(options: BayesOptions | Mapping[str, Any], items: BayesItems, *, progress: Progress | None = None,
        cancel: Any = None) -> BayesResult:
    """Bayesian estimate with control groups for two or more target lists, each with its stereotype list.

    Parameters
    ----------
    options : BayesOptions or mapping
        The settings; a mapping is checked as given (:meth:`BayesOptions.given`: a ``None`` is refused).
    items : BayesItems
        The word lists.
    progress : callable(done, total, message), optional
    cancel : optional
        Not used: one sampler run cannot be interrupted (JAX runs it compiled); kept for the measures' shape.

    Returns
    -------
    BayesResult
    """
    opts = options if isinstance(options, BayesOptions) else BayesOptions.given(options)
    groups, attrs = group_lists(items)
    tick = fraction_progress(progress)
    if tick:
        tick(0.0, "Looking up the words")
    emb = factory.word_vectors(opts.source)
    for name, terms in groups + attrs:
        check_coverage(emb.lookup_report(terms), role=name)
    shipped = load_controls()
    human_l = list(shipped.human if items.human is None else items.human)
    none_l = list(shipped.none if items.none is None else items.none)
    all_terms = [t for _, ts in groups + attrs for t in ts] + human_l + none_l
    vectors = word_vectors(emb, all_terms)
    data = build_distance_data(
        groups=[t for _, t in groups], attributes=[t for _, t in attrs],
        vectors=vectors, human=human_l, none=none_l,
        group_names=[n for n, _ in groups], attribute_names=[n for n, _ in attrs],
        control_source=shipped.source if items.human is None and items.none is None else "user-supplied control lists",
    )
    spec = {"name": items.spec_name, "social_groups": dict(groups), "attributes": dict(attrs)}
    return fit_bayes(
        data, model=opts.model, seed=opts.seed, draws=opts.draws, tune=opts.tune, chains=opts.chains,
        hdi_prob=opts.hdi_prob, time_limit=opts.time_limit, max_attempts=opts.max_attempts, progress=tick,
        provenance_fields={"model_id": emb.name, "embedding": emb.describe(), "spec": spec},
    )
