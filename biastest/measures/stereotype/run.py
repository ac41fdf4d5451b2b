"""The language-model bias test, end to end: one call for the app, the command line and the audit.

:func:`run` takes checked :class:`~biastest.measures.stereotype.options.StereotypeOptions` and the
:class:`StereotypeItems` to test, loads the model once per process (through
:data:`~biastest.models.cache.MODEL_CACHE`) or reaches it at an endpoint, scores every pair with the chosen
method in batches and returns a :class:`~biastest.measures.stereotype.result.StereotypeResult`.

:func:`run_lm_test` is the test as the apps run it: a public server loads Hub models only, and a model
behind an endpoint (:class:`LMEndpoint`, checked by :func:`check_lm_endpoint`) is scored through the
completions protocol.

Examples
--------
>>> # options = StereotypeOptions.parse(model_id="gpt2", method="causal-sum", seed=42)
>>> # result = run(options, StereotypeItems(pairs))
>>> # result.overall.score, result.overall.ci_low, result.overall.p_value
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from biastest import public
from biastest.errors import DataError, OptionError, SpecError
from biastest.generate.minimal import format_differences
from biastest.measures.stereotype.options import StereotypeOptions, check_endpoint_method
from biastest.measures.stereotype.pairs import minimal_checks, minimal_provenance
from biastest.measures.stereotype.result import PairScore, StereotypeResult
from biastest.measures.stereotype.score import check_method_for_kind, check_pairs, excluded_score, score_pairs
from biastest.measures.stereotype.summary import summarize_stereotype
from biastest.models.cache import MODEL_CACHE, ModelCache
from biastest.models.endpoint_lm import (
    DEFAULT_MAX_REQUESTS,
    DEFAULT_TIME_LIMIT,
    MSG_NEED_ENDPOINT_URL,
    MSG_NO_MODEL_NAME,
    check_endpoint_url,
)
from biastest.models.factory import LanguageBackend, ModelRef, language_model, language_model_kind
from biastest.models.protocols import ProgressCallback, TextCausalLM
from biastest.options import validate_options
from biastest.records import SentencePair
from biastest.remote import RetryPolicy
from biastest.spec import BiasSpec
from biastest.words import plural

__all__ = ["LMEndpoint", "StereotypeItems", "check_lm_endpoint", "run", "run_lm_test", "tokenizer_choice"]

MSG_PROGRESS_LOADING = "Loading the model '{model_id}'…"
MSG_PROGRESS_ENDPOINT = "Scoring with the model '{model_id}' at {where}…"
MSG_PROGRESS_SUMMARY = "Computing scores and confidence intervals…"
MSG_PROGRESS_DONE = "Done: {n_scored} of {pairs} scored."
MSG_BAD_SPEC = "The specification must be a BiasSpec, got {type_name}."
MSG_NO_MINIMAL_PAIRS = (
    "None of the {n} sentence pairs is a minimal pair: in each, the two sentences differ in more than the group "
    "term and the words that agree with it, so the test leaves them all out. Fix the pairs, or keep them anyway "
    "(keep_non_minimal, --keep-non-minimal) to reproduce a published result."
)
#: What the progress says while the model is made ready, by where it is served (:attr:`ModelRef.served_by`).
MSG_PROGRESS_MODEL = {"process": MSG_PROGRESS_LOADING, "endpoint": MSG_PROGRESS_ENDPOINT}


@dataclass(frozen=True)
class StereotypeItems:
    """What a stereotype-score test scores: sentence pairs, and the specification they test.

    Attributes
    ----------
    pairs : sequence of SentencePair
        Stereotyped / anti-stereotyped sentence pairs (checked by :func:`run`).
    spec : BiasSpec, optional
        The specification the pairs test (recorded in the result).
    """

    pairs: Sequence[SentencePair]
    spec: BiasSpec | None = None


def run(
    options: StereotypeOptions,
    items: StereotypeItems,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    api_key: str | None = None,
    retry: RetryPolicy | None = None,
    cache: ModelCache | None = MODEL_CACHE,
) -> StereotypeResult:
    """Test a language model for stereotype preference on sentence pairs.

    The model runs in this process, or on a server (``options.endpoint``): then it is scored through the
    OpenAI completions protocol (:class:`biastest.models.endpoint_lm.EndpointCausalLM`) with ``causal-sum``
    or ``causal-diff-span``, and everything else is as for a model in this process (same checks first, same
    result; the provenance names the endpoint).

    Parameters
    ----------
    options : StereotypeOptions
        The model, method, seed and settings (checked when they were parsed).
    items : StereotypeItems
        The pairs and the specification.
    progress : callable, optional
        ``progress(done, total, message)``; ``total`` is the number of forward-pass batches while scoring.
    cancel : threading.Event, optional
        Set to stop an endpoint run early, keeping what was scored.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    retry : RetryPolicy, optional
        Retries on 429, 5xx, time-outs (default :func:`biastest.models.endpoint_lm.default_retry`).
    cache : ModelCache or None
        Model cache for a model in this process (default: the process-wide one).

    Returns
    -------
    StereotypeResult

    Raises
    ------
    DataError
        No pairs, or no pair could be scored.
    SpecError
        ``items.spec`` is not a :class:`~biastest.spec.BiasSpec`, or has more than two groups
        (:data:`~biastest.spec.MSG_TWO_GROUPS_ONLY`).
    MethodError
        A method that does not apply to the model kind (checked from the configuration, before the weights
        are loaded), or one an endpoint cannot score without the model's tokenizer.
    ModelLoadError, ModelKindError
        The model cannot be loaded or is not a masked/causal LM.
    OptionError, PolicyError
        A bad endpoint address, or one public mode refuses.
    EndpointError
        The endpoint could not score any sentence, or answered unusably.
    """
    spec = items.spec
    if spec is not None and not isinstance(spec, BiasSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    if spec is not None:
        spec.check_two_groups("The stereotype score")  # three or more groups: MAC and the Bayesian estimate
    pairs = check_pairs(items.pairs)
    flagged = minimal_checks(pairs)
    left_out = {} if options.keep_non_minimal else flagged
    if len(left_out) == len(pairs):
        raise DataError(MSG_NO_MINIMAL_PAIRS.format(n=len(pairs)))
    ref = options.model_ref()
    lm = _language_model(options, ref, progress=progress, cancel=cancel, api_key=api_key, retry=retry, cache=cache)
    tested = [p for i, p in enumerate(pairs) if i not in left_out]
    scores = _with_left_out(score_pairs(lm, tested, method=options.method, batch_size=options.batch_size,
                                        tie_tolerance=options.tie_tolerance, progress=progress), pairs, left_out)
    if progress is not None:
        progress(1, 1, MSG_PROGRESS_SUMMARY)
    result = summarize_stereotype(
        scores,
        model=lm.describe(),
        method=options.method,
        seed=options.seed,
        n_resamples=options.n_resamples,
        confidence=options.confidence,
        tie_tolerance=options.tie_tolerance,
        batch_size=options.batch_size,
        spec=spec.to_dict() if spec is not None else None,
        extra_provenance={"pair_sources": sorted({p.source for p in pairs}), **ref.served_at(),
                          "minimal_pairs": minimal_provenance(pairs, flagged,
                                                              keep_non_minimal=options.keep_non_minimal)},
        clusters=options.clusters,
    )
    if progress is not None:
        progress(1, 1, MSG_PROGRESS_DONE.format(n_scored=result.n_scored, pairs=plural(result.n_pairs, "pair")))
    return result


def _with_left_out(scores: list[PairScore], pairs: Sequence[SentencePair], left_out: dict[int, Any]
                   ) -> list[PairScore]:
    """Every input pair in input order: the scores of the tested ones, an excluded record (``not-minimal``,
    naming the differing words) for each left out; ``index`` is the position among the input pairs."""
    if not left_out:
        return scores
    tested = iter(scores)
    out = []
    for i, pair in enumerate(pairs):
        if i in left_out:
            out.append(excluded_score(i, pair, "not-minimal",
                                      differences=format_differences(left_out[i].differences)))
        else:
            out.append(next(tested).model_copy(update={"index": i}))
    return out


def _language_model(options: StereotypeOptions, ref: ModelRef, *, progress: ProgressCallback | None,
                    cancel: threading.Event | None, api_key: str | None, retry: RetryPolicy | None,
                    cache: ModelCache | None) -> LanguageBackend:
    """The model to score with, from the factory, once the method is known to apply to it.

    The method is checked against the model's kind before any weights load (the kind comes from the
    configuration; behind an endpoint it is causal), and, for a backend that tokenizes the text itself
    (:class:`~biastest.models.protocols.TextCausalLM`), against what it can score without the model's
    tokenizer — all before any request.
    """
    model_id = str(ref.model_id).strip()
    if progress is not None:
        progress(0, 1, MSG_PROGRESS_MODEL[ref.served_by].format(model_id=model_id, where=ref.where))
    check_method_for_kind(options.method, language_model_kind(ref), model_id=model_id)
    lm = language_model(ref, api_key=api_key, cache=cache, retry=retry, seed=options.seed, cancel=cancel)
    if isinstance(lm, TextCausalLM):
        lm.check_method(options.method)  # causal-diff-span needs the model's tokenizer
    return lm


@dataclass(frozen=True)
class LMEndpoint:
    """A language model behind an endpoint, as the user gave it for one run.

    The key is for this run's requests only: it is not shown by ``repr``, never put in a session's state, a file,
    a log or a result (the result records ``api_key: ***``), and the object cannot be pickled.

    Attributes
    ----------
    base_url : str
        The API root (``http://localhost:8000/v1``).
    model : str
        The model's name as the server serves it.
    api_key : str or None
    max_requests, time_limit :
        The request budget (retries included) and the run's time limit in seconds; a limit keeps what was scored.
    retry : RetryPolicy, optional
        Retries on 429, 5xx and time-outs (default :func:`biastest.models.endpoint_lm.default_retry`).
    tokenizer : str, False or None
        The served model's tokenizer (Hub id or folder) for token-id prompts, whose scores equal in-process ones;
        ``False`` (or ``"none"``) sends text for the server to split; None or ``""`` (default) tries the served name
        and sends text when no tokenizer loads from it (:attr:`StereotypeOptions.tokenizer`).
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_requests: int = DEFAULT_MAX_REQUESTS
    time_limit: float = DEFAULT_TIME_LIMIT
    retry: Any = field(default=None, repr=False)
    tokenizer: str | bool | None = None

    def __getstate__(self) -> Any:
        raise TypeError("LMEndpoint may hold an API key and cannot be pickled.")


def check_lm_endpoint(endpoint: LMEndpoint, method: str) -> LMEndpoint:
    """Check an endpoint choice before anything is sent or loaded; the stripped choice.

    Raises
    ------
    OptionError
        No address (:data:`MSG_NEED_ENDPOINT_URL`), one that is not a web address, no served model name, or a
        budget or time limit out of bounds (:mod:`biastest.options`).
    PolicyError
        Public mode and the address is not public (:func:`biastest.remote.check_outbound_url`).
    MethodError
        A masked-LM method (it needs the model in this process), or an unknown one.
    """
    url = str(endpoint.base_url or "").strip()
    if not url:
        raise OptionError(MSG_NEED_ENDPOINT_URL)
    url = check_endpoint_url(url)
    name = str(endpoint.model or "").strip()
    if not name:
        raise OptionError(MSG_NO_MODEL_NAME)
    check_endpoint_method(method)
    validate_options({"max_requests": endpoint.max_requests, "time_limit": endpoint.time_limit})
    key = str(endpoint.api_key or "").strip() or None
    return LMEndpoint(url, name, key, endpoint.max_requests, float(endpoint.time_limit), endpoint.retry,
                      tokenizer_choice(endpoint.tokenizer))


def tokenizer_choice(value: Any) -> str | bool | None:
    """A tokenizer as typed: ``""`` or None → None (try the served name), ``"none"`` or False → False (send text)."""
    if value is None or value is False:
        return value
    text = str(value).strip()
    if not text:
        return None
    return False if text.lower() == "none" else text


def run_lm_test(
    *,
    pairs: Sequence[SentencePair],
    model_id: str,
    method: str,
    seed: int,
    spec: BiasSpec | None,
    progress: ProgressCallback | None = None,
    endpoint: LMEndpoint | None = None,
    cancel: threading.Event | None = None,
    clusters: str = "auto",
    keep_non_minimal: bool = False,
) -> StereotypeResult:
    """The language-model test as the apps run it (a public server loads Hub models only).

    ``clusters`` chooses the pairs that lean together for the cluster-aware interval and test
    (:data:`biastest.measures.stereotype.clusters.CLUSTERINGS`); ``keep_non_minimal`` keeps pairs that break the
    minimal-pair rule instead of leaving them out (recorded; :class:`StereotypeOptions`).

    With ``endpoint`` the model is the one served there (``model_id`` is ignored): checked with
    :func:`check_lm_endpoint` first, then scored through the completions protocol (:func:`run` with
    ``options.endpoint``).
    """
    items = StereotypeItems(pairs, spec)
    if endpoint is not None:
        endpoint = check_lm_endpoint(endpoint, method)
        options = StereotypeOptions.parse(model_id=endpoint.model, method=method, seed=seed, clusters=clusters,
                                          endpoint=endpoint.base_url, max_requests=endpoint.max_requests,
                                          time_limit=endpoint.time_limit, keep_non_minimal=keep_non_minimal,
                                          tokenizer=endpoint.tokenizer)
        return run(options, items, progress=progress, cancel=cancel, api_key=endpoint.api_key, retry=endpoint.retry)
    model_id = public.check_model_reference(model_id)
    options = StereotypeOptions.parse(model_id=model_id, method=method, seed=seed, clusters=clusters,
                                      keep_non_minimal=keep_non_minimal)
    return run(options, items, progress=progress)
