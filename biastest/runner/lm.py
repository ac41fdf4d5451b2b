"""The language-model bias test, end to end: one call for the app and the command line.

:func:`run_stereotype_test` validates its inputs, loads the model once per
process (through :data:`~biastest.models.cache.MODEL_CACHE`), scores every
pair with the chosen method in batches and returns a
:class:`~biastest.metrics.stereotype_score.StereotypeResult`.

:func:`pairs_from_templates` builds sentence pairs from stored or imported
:class:`~biastest.records.TestSentence` records (sentences about one group
term) by swapping in the spec's counterpart term with the data engineer's
rules (:func:`biastest.generate.counterfactual.swap_counterfactual`: case
kept, gendered agreeing words swapped for gender pairs). Freshly generated
sentences already come with their pairs from
:func:`biastest.generate.sentences.generate_sentences`.

Examples
--------
>>> # result = run_stereotype_test(pairs=pairs, model_id="gpt2", method="causal-sum", seed=42)
>>> # result.overall.score, result.overall.ci_low, result.overall.p_value
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from biastest.errors import DataError, SpecError
from biastest.metrics.stereotype_score import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CLUSTERS,
    DEFAULT_TIE_TOLERANCE,
    StereotypeResult,
    check_clusters,
    check_method_for_kind,
    check_pairs,
    check_tie_tolerance,
    get_method,
    score_pairs,
    summarize_stereotype,
)
from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.endpoint_lm import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_TIME_LIMIT,
)
from biastest.models.lm import ProgressCallback, detect_model_kind, load_language_model
from biastest.options import validate_options
from biastest.records import SentencePair, TestSentence
from biastest.remote import RetryPolicy, RunLimits
from biastest.spec import BiasSpec, contains_term
from biastest.stats.bootstrap import check_confidence, check_n_resamples, check_seed

__all__ = ["PairBuild", "pairs_from_templates", "run_stereotype_test"]

MSG_PROGRESS_LOADING = "Loading the model '{model_id}'…"
MSG_PROGRESS_ENDPOINT = "Scoring with the model '{model_id}' at {where}…"
MSG_PROGRESS_SUMMARY = "Computing scores and confidence intervals…"
MSG_PROGRESS_DONE = "Done: {n_scored} of {n_pairs} pairs scored."
MSG_BAD_SPEC = "The specification must be a BiasSpec, got {type_name}."

MSG_SKIP_GROUP_TERM = "Its group term '{term}' is in neither social group of the specification."
MSG_SKIP_ATTRIBUTE = "Its attribute term '{term}' is in neither attribute list of the specification."
MSG_SKIP_NO_GROUP_IN_TEXT = "The sentence does not contain its group term '{term}'."
MSG_SKIP_NO_ATTRIBUTE_IN_TEXT = "The sentence does not contain its attribute term '{term}'."
MSG_SKIP_NO_CHANGE = "Swapping '{term}' for '{counterpart}' did not change the sentence."
MSG_SKIP_DUPLICATE = "The same pair was already built from another sentence."
MSG_BAD_PAIRING = "Unknown pairing '{value}'. Choose 'positional' or 'all'."


def run_stereotype_test(
    *,
    pairs: Sequence[SentencePair],
    model_id: str,
    method: str,
    seed: int,
    spec: BiasSpec | None = None,
    revision: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: Any = "auto",
    dtype: Any = "auto",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    progress: ProgressCallback | None = None,
    cache: ModelCache | None = MODEL_CACHE,
    endpoint: str | None = None,
    api_key: str | None = None,
    tokenizer: str | bool | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_requests: int = DEFAULT_MAX_REQUESTS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    retry: RetryPolicy | None = None,
    cancel: threading.Event | None = None,
    clusters: str = DEFAULT_CLUSTERS,
) -> StereotypeResult:
    """Test a language model for stereotype preference on sentence pairs.

    The model runs in this process, or on a server (``endpoint``): then it is
    scored through the OpenAI completions protocol
    (:class:`biastest.models.endpoint_lm.EndpointCausalLM`) with ``causal-sum``
    or ``causal-diff-span``, and everything else is as for a model in this
    process (same checks first, same result; the provenance names the endpoint).

    Parameters
    ----------
    pairs : sequence of SentencePair
        Stereotyped / anti-stereotyped sentence pairs.
    model_id : str
        Hugging Face Hub id or local folder of a masked or causal LM.
    method : str
        A scoring method that applies to the model's kind
        (:func:`biastest.metrics.stereotype_score.methods_for_kind`).
    seed : int
        Seed of the bootstrap intervals (recorded).
    spec : BiasSpec, optional
        The specification the pairs test (recorded in the result).
    revision : str, optional
        Hub revision (branch, tag, commit).
    batch_size : int
        Sequences per forward pass.
    device, dtype :
        See :func:`biastest.models.lm.load_language_model`.
    n_resamples, confidence :
        Bootstrap settings.
    tie_tolerance : float
        Score differences within this (nats) are ties.
    progress : callable, optional
        ``progress(done, total, message)``; ``total`` is the number of
        forward-pass batches while scoring.
    cache : ModelCache or None
        Model cache (default: the process-wide one).
    endpoint : str, optional
        API root of a server that serves ``model_id`` (e.g.
        ``http://localhost:8000/v1``); ``device``, ``dtype`` and ``cache`` then
        do not apply and ``batch_size`` is the number of prompts per request.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    tokenizer : str, False or None
        The served model's tokenizer (Hub id or folder; ``revision`` applies)
        for token-id prompts, whose scores equal in-process scores; ``False``
        sends text; None tries ``model_id`` and sends text if that fails.
    concurrency, max_requests, time_limit, request_timeout :
        Requests in flight at once, the request budget (retries included), the
        overall time limit and one request's time-out, in seconds. When a
        limit stops the run, the pairs not scored are listed as excluded
        (``not-scored``) and ``provenance["model"]["stop_message"]`` says why.
    retry : RetryPolicy, optional
        Retries on 429, 5xx, time-outs (default
        :func:`biastest.models.endpoint_lm.default_retry`).
    cancel : threading.Event, optional
        Set to stop an endpoint run early, keeping what was scored.
    clusters : {"auto", "template", "attribute-term", "pair"}
        How pairs group into independent clusters for the cluster-aware interval and test
        (:func:`biastest.metrics.stereotype_score.resolve_clusters`; ``auto``: template, else attribute
        term, else pair). Checked before the model loads.

    Returns
    -------
    StereotypeResult

    Raises
    ------
    DataError
        No pairs, a bad seed/setting, or no pair could be scored.
    MethodError
        Unknown method, or one that does not apply to the model kind (checked
        from the configuration, before the weights are loaded).
    ModelLoadError, ModelKindError
        The model cannot be loaded or is not a masked/causal LM.
    OptionError, PolicyError
        A bad endpoint address or setting, an unknown clustering, or one public mode refuses.
    EndpointError
        The endpoint could not score any sentence, or answered unusably (no
        prompt log-probabilities, another model, an unreadable answer).
    """
    validate_options({"seed": seed, "n_resamples": n_resamples, "confidence": confidence, "batch_size": batch_size,
                      "tie_tolerance": tie_tolerance})
    if endpoint is not None:
        validate_options({"concurrency": concurrency, "max_requests": max_requests, "time_limit": time_limit,
                          "request_timeout": request_timeout})
    clusters = check_clusters(clusters)
    pairs = check_pairs(pairs)
    seed = check_seed(seed)
    n_resamples = check_n_resamples(n_resamples)
    confidence = check_confidence(confidence)
    tie_tolerance = check_tie_tolerance(tie_tolerance)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise DataError(f"The batch size must be a positive whole number, got {batch_size!r}.")
    if spec is not None and not isinstance(spec, BiasSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    m = get_method(method)
    extra: dict[str, Any] = {}
    if endpoint is not None:
        from biastest.models.endpoint_lm import EndpointCausalLM, check_endpoint_method

        check_endpoint_method(m.name)  # masked-LM methods need the model in this process
        lm: Any = EndpointCausalLM(
            endpoint, model_id, api_key=api_key, tokenizer=tokenizer, revision=revision, concurrency=concurrency,
            limits=RunLimits(max_requests=max_requests, max_seconds=float(time_limit),
                             request_timeout=float(min(request_timeout, time_limit))),
            retry=retry, seed=seed, cancel=cancel,
        )
        lm.check_method(m.name)  # causal-diff-span needs the tokenizer; all checked before any request
        if progress is not None:
            progress(0, 1, MSG_PROGRESS_ENDPOINT.format(model_id=lm.model_id, where=lm.where))
        extra["endpoint"] = lm.where
    else:
        if progress is not None:
            progress(0, 1, MSG_PROGRESS_LOADING.format(model_id=str(model_id).strip()))
        kind = detect_model_kind(model_id, revision=revision)
        check_method_for_kind(m, kind, model_id=str(model_id).strip())
        lm = load_language_model(model_id, revision=revision, kind=kind, device=device, dtype=dtype, cache=cache)
    scores = score_pairs(
        lm, pairs, method=m.name, batch_size=batch_size, tie_tolerance=tie_tolerance, progress=progress
    )
    if progress is not None:
        progress(1, 1, MSG_PROGRESS_SUMMARY)
    result = summarize_stereotype(
        scores,
        model=lm if endpoint is None else lm.describe(),
        method=m.name,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        tie_tolerance=tie_tolerance,
        batch_size=batch_size,
        spec=spec.to_dict() if spec is not None else None,
        extra_provenance={"pair_sources": sorted({p.source for p in pairs}), **extra},
        clusters=clusters,
    )
    if progress is not None:
        progress(1, 1, MSG_PROGRESS_DONE.format(n_scored=result.n_scored, n_pairs=result.n_pairs))
    return result


@dataclass(frozen=True)
class PairBuild:
    """Pairs built from sentences, and the sentences that gave none.

    Attributes
    ----------
    pairs : tuple of SentencePair
    skipped : tuple of (int, str, str)
        ``(index of the sentence, sentence id, reason)``.
    """

    pairs: tuple[SentencePair, ...]
    skipped: tuple[tuple[int, str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": [p.to_row() for p in self.pairs], "skipped": [list(s) for s in self.skipped]}


def _counterparts(spec: BiasSpec, pairing: str) -> dict[str, list[str]]:
    if pairing not in ("positional", "all"):
        raise DataError(MSG_BAD_PAIRING.format(value=pairing))
    out: dict[str, list[str]] = {}
    if pairing == "positional" and len(spec.group1) == len(spec.group2):
        for a, b in zip(spec.group1, spec.group2, strict=True):
            out[a.casefold()] = [b]
            out[b.casefold()] = [a]
        return out
    for a in spec.group1:
        out[a.casefold()] = list(spec.group2)
    for b in spec.group2:
        out[b.casefold()] = list(spec.group1)
    return out


def pairs_from_templates(
    spec: BiasSpec,
    sentences: Sequence[TestSentence],
    *,
    pairing: str = "positional",
    agreement: bool = True,
) -> PairBuild:
    """Build stereotyped / anti-stereotyped pairs from single sentences.

    Each sentence's group term is swapped for its counterpart in the other
    social group (``positional``: the term at the same position, when both
    groups are equally long, else every term of the other group; ``all``:
    every term of the other group) with
    :func:`~biastest.generate.counterfactual.swap_counterfactual`. The
    sentence is the stereotyped version when its group (1 or 2) equals its
    attribute's side (stereotype of group 1 = side 1), otherwise the
    counterfactual is. The pair's template is the sentence with ``[T]`` at the
    group term and ``[R]`` at swapped agreeing words; its category is the name
    of the attribute list.

    Parameters
    ----------
    spec : BiasSpec
        Two groups and two attribute lists.
    sentences : sequence of TestSentence
    pairing : {"positional", "all"}
    agreement : bool
        Swap gendered agreeing words for gender pairs.

    Returns
    -------
    PairBuild
        Pairs in input order (duplicates dropped) and the skipped sentences
        with reasons (``MSG_SKIP_*``).
    """
    from biastest.generate.counterfactual import swap_counterfactual

    spec.check_testable()
    counterparts = _counterparts(spec, pairing)
    list_name = {t.casefold(): spec.attribute1_name for t in spec.attributes1}
    list_name.update({t.casefold(): spec.attribute2_name for t in spec.attributes2})
    pairs: list[SentencePair] = []
    skipped: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for i, s in enumerate(sentences):
        group = spec.group_of(s.group_term)
        side = spec.attribute_side(s.attribute_term)
        if group is None:
            skipped.append((i, s.id, MSG_SKIP_GROUP_TERM.format(term=s.group_term)))
            continue
        if side is None:
            skipped.append((i, s.id, MSG_SKIP_ATTRIBUTE.format(term=s.attribute_term)))
            continue
        if not contains_term(s.text, s.group_term):
            skipped.append((i, s.id, MSG_SKIP_NO_GROUP_IN_TEXT.format(term=s.group_term)))
            continue
        if not contains_term(s.text, s.attribute_term):
            skipped.append((i, s.id, MSG_SKIP_NO_ATTRIBUTE_IN_TEXT.format(term=s.attribute_term)))
            continue
        made_any = False
        for counterpart in counterparts[s.group_term.casefold()]:
            cf = swap_counterfactual(s.text, s.group_term, counterpart, agreement=agreement)
            if cf.text == s.text:
                skipped.append((i, s.id, MSG_SKIP_NO_CHANGE.format(term=s.group_term, counterpart=counterpart)))
                continue
            stereotyped_first = group == side
            st, anti = (s.text, cf.text) if stereotyped_first else (cf.text, s.text)
            gst, ganti = (s.group_term, cf.counterpart) if stereotyped_first else (cf.counterpart, s.group_term)
            pair = SentencePair(
                stereotyped=st,
                anti_stereotyped=anti,
                attribute_term=s.attribute_term,
                group_term_stereotyped=gst,
                group_term_anti=ganti,
                template=cf.template,
                category=list_name[s.attribute_term.casefold()],
                source=s.source,
                spec_name=spec.name,
                provenance={
                    "sentence_id": s.id,
                    "built_by": "pairs_from_templates",
                    "pairing": pairing,
                    "sentence_side": "stereotyped" if stereotyped_first else "anti_stereotyped",
                    "counterfactual": cf.to_dict(),
                },
            )
            if pair.id in seen:
                if not made_any:
                    skipped.append((i, s.id, MSG_SKIP_DUPLICATE))
                continue
            seen.add(pair.id)
            pairs.append(pair)
            made_any = True
    return PairBuild(pairs=tuple(pairs), skipped=tuple(skipped))
