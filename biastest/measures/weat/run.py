"""Running WEAT and MAC end to end: :func:`run` (WEAT) and :func:`run_mac`.

Each loads the embedding source (once per process), looks every word up and
reports the missing ones per list, refuses a list whose words are mostly
missing (:data:`biastest.models.embeddings.MSG_MOSTLY_MISSING`), runs the score
and records provenance (source, method, seed, spec, versions, time).

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biastest.errors import DataError
from biastest.measures.embedding_common import MSG_NO_TERMS, Progress, check_terms, tick
from biastest.measures.weat.null_sim import vocabulary_slice, weat_null
from biastest.measures.weat.options import MACOptions, WEATOptions
from biastest.measures.weat.result import MACResult, WEATResult
from biastest.measures.weat.score import WEATSettings, mac, weat
from biastest.models.embeddings import check_coverage
from biastest.models.factory import word_vectors
from biastest.provenance import provenance

__all__ = ["MACItems", "WEATItems", "run", "run_mac"]


@dataclass(frozen=True)
class WEATItems:
    """What a WEAT run tests: target lists X, Y and attribute lists A, B (or a spec that gives them).

    ``spec`` (a :class:`biastest.spec.BiasSpec`) fills X, Y (social groups 1, 2) and A, B
    (attributes 1, 2) and their names; ``names`` overrides the names.
    """

    X: Sequence[str] | None = None
    Y: Sequence[str] | None = None
    A: Sequence[str] | None = None
    B: Sequence[str] | None = None
    names: Mapping[str, str] | None = None
    spec: Any = None

    def resolved(self) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The four checked word lists by role, and their names."""
        X, Y, A, B = self.X, self.Y, self.A, self.B
        names = {"X": "X", "Y": "Y", "A": "A", "B": "B"}
        spec = self.spec
        if spec is not None:
            spec.check_two_groups("WEAT")
            X = X or list(spec.group1)
            Y = Y or list(spec.group2)
            A = A or list(spec.attributes1)
            B = B or list(spec.attributes2)
            names = {"X": spec.group1_name, "Y": spec.group2_name, "A": spec.attribute1_name,
                     "B": spec.attribute2_name}
        lists = {
            "X": check_terms(f"target list X ({names['X']})", X),
            "Y": check_terms(f"target list Y ({names['Y']})", Y),
            "A": check_terms(f"attribute list A ({names['A']})", A),
            "B": check_terms(f"attribute list B ({names['B']})", B),
        }
        return lists, {**names, **dict(self.names or {})}


@dataclass(frozen=True)
class MACItems:
    """What a MAC run tests: protected words and attribute classes (class name → words), or a spec.

    A spec gives words = the words of every social group and its attribute lists as classes. A group spec
    (each group with its own stereotype list, :attr:`~biastest.spec.BiasSpec.is_group_spec`, any number of
    groups) also gives the groups and their stereotypes, for MAC per group and its contrasts; ``groups``
    (group → words) with ``stereotypes`` (group → class) give them without a spec.
    """

    words: Sequence[str] | None = None
    attribute_classes: Mapping[str, Sequence[str]] | None = field(default=None)
    spec: Any = None
    groups: Mapping[str, Sequence[str]] | None = None
    stereotypes: Mapping[str, str] | None = None

    def resolved(self) -> tuple[Any, Any, dict[str, list[str]] | None, dict[str, str] | None]:
        """Protected words, attribute classes, groups and their stereotypes (from the spec where not given)."""
        words, classes, groups, stereotypes = self.words, self.attribute_classes, self.groups, self.stereotypes
        spec = self.spec
        if spec is not None:
            words = words or [t for _, terms in spec.social_groups for t in terms]
            classes = classes or {n: list(terms) for n, terms in spec.attributes}
            if groups is None and spec.is_group_spec:
                spec.check_group_spec()
                groups = {n: list(terms) for n, terms in spec.social_groups}
                stereotypes = spec.stereotype_of()
        return words, classes, (None if groups is None else {str(g): list(t) for g, t in groups.items()}), (
            None if stereotypes is None else dict(stereotypes))


def _spec_dict(spec: Any) -> dict[str, Any] | None:
    return spec.to_dict() if spec is not None and hasattr(spec, "to_dict") else None


def run(
    options: WEATOptions,
    items: WEATItems,
    *,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> WEATResult:
    """Run WEAT (Caliskan et al. 2017) on an embedding source.

    Missing words are dropped and reported per list; a list with more than
    ``max_missing_fraction`` missing is refused. ``options.n_resamples``
    resamples of the words (X, Y, A and B each with replacement) give the
    interval of d at level ``options.confidence``
    (:func:`biastest.measures.weat.score.weat_effect_size_bootstrap`).
    ``options.null_draws`` random word lists of the same sizes (from ``options.null_from``) give the
    distribution of d by chance (:mod:`biastest.measures.weat.null_sim`); when they cannot be drawn (an encoder
    has no vocabulary, a vocabulary too small) the result says why in ``null_note``.
    ``cancel`` is not polled (one vectorised step; accepted for the common signature).

    Returns
    -------
    WEATResult
        Effect size d with its interval, test statistic, permutation p-values, per-word table.
    """
    lists, names = items.resolved()
    tick(progress, 0, 3, "Loading the embedding")
    emb = word_vectors(options.source)
    tick(progress, 1, 3, "Looking the words up")
    vecs, missing = {}, {}
    for role, words in lists.items():
        rep = emb.lookup_report(words)
        check_coverage(rep, role=f"words of '{names[role]}'", max_missing_fraction=options.max_missing_fraction)
        v, miss = emb.vectors(words)
        vecs[role] = (v, [w for w in words if w not in set(miss)])
        missing[role] = tuple(miss)
    tick(progress, 2, 3, "Computing WEAT and the permutation test")
    prov = provenance(
        method="WEAT (Caliskan et al. 2017): effect size d (ddof=1) and permutation test",
        model_id=emb.name,
        embedding=emb.describe(),
        seed=options.seed,
        n_permutations=options.n_permutations,
        exact_limit=options.exact_limit,
        n_bootstrap=options.n_resamples,
        confidence=options.confidence,
        effect_size_interval="percentile bootstrap over the words (X, Y, A, B each resampled with replacement)",
        alternative=options.alternative,
        spec=_spec_dict(items.spec),
        max_missing_fraction=options.max_missing_fraction,
        null_draws=options.null_draws,
        null_from=options.null_from if options.null_draws else None,
    )
    result = weat(
        vecs["X"][0],
        vecs["Y"][0],
        vecs["A"][0],
        vecs["B"][0],
        x_words=vecs["X"][1],
        y_words=vecs["Y"][1],
        a_words=vecs["A"][1],
        b_words=vecs["B"][1],
        settings=WEATSettings(seed=options.seed, alternative=options.alternative,
                              n_permutations=options.n_permutations, exact_limit=options.exact_limit,
                              n_bootstrap=options.n_resamples, ci_level=options.confidence),
        names=names,
        missing=missing,
        provenance=prov,
    )
    if options.null_draws:
        result = _with_null(result, options, emb, vecs, lists)
    tick(progress, 3, 3, "Done")
    return result


def _with_null(result: WEATResult, options: WEATOptions, emb: Any, vecs: dict[str, Any],
               lists: dict[str, list[str]]) -> WEATResult:
    """The result with its null simulation, or with the reason there is none (``null_note``)."""
    try:
        pool, label = None, ""
        if options.null_from == "vocabulary":
            _, pool, label = vocabulary_slice(emb, exclude=[w for ws in lists.values() for w in ws])
        null = weat_null(result.effect_size, mode=options.null_from, n_draws=options.null_draws,
                         seed=options.seed, role_vectors={r: vecs[r][0] for r in "XYAB"}, pool_vectors=pool,
                         pool_label=label)
    except DataError as exc:
        return result.model_copy(update={"null_note": str(exc)})
    prov = {**result.provenance, "null_pool": null.pool}
    return result.model_copy(update={"null_simulation": null, "provenance": prov})


def run_mac(
    options: MACOptions,
    items: MACItems,
    *,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> MACResult:
    """Run MAC (Manzini et al. 2019) on an embedding source.

    ``items.words`` are the protected words; ``items.attribute_classes`` maps a
    class name to its attribute words; with groups (a group spec, or ``items.groups``) also MAC per group
    and the contrast per group, own stereotype − the other groups' (any number of groups). MAC has no
    randomness.

    Returns
    -------
    MACResult
    """
    spec = items.spec
    words, attribute_classes, groups, stereotypes = items.resolved()
    words = check_terms("protected word", words)
    if not attribute_classes:
        raise DataError(MSG_NO_TERMS.format(role="attribute class"), role="attribute class")
    classes = {str(k): check_terms(f"attribute class '{k}'", v) for k, v in attribute_classes.items()}
    limit = options.max_missing_fraction
    tick(progress, 0, 3, "Loading the embedding")
    emb = word_vectors(options.source)
    tick(progress, 1, 3, "Looking the words up")
    rep = emb.lookup_report(words)
    check_coverage(rep, role="protected words", max_missing_fraction=limit)
    wv, wmiss = emb.vectors(words)
    missing = {"protected words": tuple(wmiss)}
    cvecs, cwords = {}, {}
    for c, terms in classes.items():
        check_coverage(emb.lookup_report(terms), role=f"words of '{c}'", max_missing_fraction=limit)
        v, miss = emb.vectors(terms)
        cvecs[c] = v
        cwords[c] = [t for t in terms if t not in set(miss)]
        missing[c] = tuple(miss)
    tick(progress, 2, 3, "Computing MAC")
    prov = provenance(
        method="MAC (Manzini et al. 2019): mean cosine distance per protected word and attribute class",
        model_id=emb.name,
        embedding=emb.describe(),
        seed=None,
        spec=_spec_dict(spec),
        max_missing_fraction=limit,
    )
    result = mac(wv, cvecs, words=[w for w in words if w not in set(wmiss)], class_words=cwords, missing=missing,
                 provenance=prov, groups=groups, stereotypes=stereotypes)
    tick(progress, 3, 3, "Done")
    return result
