"""A forced-choice test, end to end: one call for the app, the command line and the audit.

:func:`run` takes checked :class:`~.options.ForcedChoiceOptions` and the :class:`ForcedChoiceItems` (the sentence
pairs of the stereotype test, and their specification), asks the chat model every question of the plan
(:func:`~.score.plan_questions`: both orders, ``samples`` per order) in one call of its
:meth:`~biastest.models.protocols.ChatLM.chat`, reads every answer (:mod:`.parse`, :mod:`.score`) and summarises
(:mod:`.summary`). A model may be given already built (tests, the app's loaded model); otherwise it is built from
the options (:func:`biastest.measures.chat_common.build_chat_model`). A run stopped early (``cancel``, a request
or time limit) keeps what was answered: the rest is ``not-asked``, counted.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import DataError, SpecError
from biastest.measures import chat_common
from biastest.measures.forced_choice.options import ForcedChoiceOptions
from biastest.measures.forced_choice.result import ForcedChoiceResult
from biastest.measures.forced_choice.score import plan_questions, read_items, request_seed
from biastest.measures.forced_choice.summary import summarize_items
from biastest.measures.stereotype.score import check_pairs
from biastest.models.chat_records import ChatReply
from biastest.models.protocols import ChatLM, ProgressCallback
from biastest.models.response_cache import default_cache_dir
from biastest.provenance import provenance
from biastest.records import SentencePair
from biastest.spec import BiasSpec

__all__ = ["MSG_BAD_REPLIES", "ForcedChoiceItems", "backend_record", "run"]

MSG_PROGRESS_ASKING = "Asking {model_id} {n:,} questions ({pairs:,} pairs × 2 orders × {samples})…"
MSG_PROGRESS_SUMMARY = "Reading the answers and computing intervals…"
MSG_PROGRESS_DONE = "Done: {parseable:,} of {n:,} answers chose a sentence."
MSG_BAD_SPEC = "The specification must be a BiasSpec, got {type_name}."
MSG_BAD_REPLIES = "The chat model returned {got} replies for {n} questions; the run cannot tell which is which."


@dataclass(frozen=True)
class ForcedChoiceItems:
    """What a forced-choice test asks about: sentence pairs and the specification they test.

    Attributes
    ----------
    pairs : sequence of SentencePair
    spec : BiasSpec, optional
    """

    pairs: Sequence[SentencePair]
    spec: BiasSpec | None = None


def backend_record(model: ChatLM, replies: Sequence[ChatReply | None]) -> dict[str, Any]:
    """What the run learned of the backend: served models, fingerprints, requests asked and read from the cache."""
    got = [r for r in replies if r is not None]
    return {
        "model": model.describe(),
        "served_models": sorted({r.served_model for r in got if r.served_model}),
        "system_fingerprints": sorted({r.system_fingerprint for r in got if r.system_fingerprint}),
        "n_requests": len(replies),
        "n_replies": len(got),
        "n_cache_hits": sum(r.cached for r in got),
        "finish_reasons": dict(Counter(str(r.finish_reason) for r in got)),
        "stop_message": getattr(model, "stop_message", None),
    }


def run(
    options: ForcedChoiceOptions,
    items: ForcedChoiceItems,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    model: ChatLM | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
) -> ForcedChoiceResult:
    """Ask a chat model which sentence of each pair is more plausible, in both orders; summarise.

    Parameters
    ----------
    options : ForcedChoiceOptions
    items : ForcedChoiceItems
    progress : callable, optional
        ``progress(done, total, message)``.
    cancel : threading.Event, optional
        Stops the run early (passed to the backend built here); what was answered is kept.
    model : ChatLM, optional
        An already built chat model; None builds it from the options.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    cache_dir : Path, optional
        The response cache's folder, used when ``options.use_cache`` (default:
        :func:`~biastest.models.response_cache.default_cache_dir`, in the data dir, so a rerun, a resumed
        audit or a second user asking the same question costs nothing).

    Returns
    -------
    ForcedChoiceResult

    Raises
    ------
    DataError
        No pairs, or the backend answered a different number of questions than asked.
    SpecError
        ``items.spec`` is not a BiasSpec.
    """
    pairs = check_pairs(items.pairs)
    spec = items.spec
    if spec is not None and not isinstance(spec, BiasSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    template = options.prompt()
    questions = plan_questions(pairs, template, samples=options.samples, temperature=options.temperature,
                               max_tokens=options.max_answer_tokens, top_logprobs=options.top_logprobs,
                               seed=options.seed)
    if model is None:
        cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        model = chat_common.build_chat_model(options, api_key=api_key, cache_dir=cache_dir, cancel=cancel)
    if progress is not None:
        progress(0, len(questions), MSG_PROGRESS_ASKING.format(model_id=options.model_id, n=len(questions),
                                                               pairs=len(pairs), samples=options.samples))
    replies = list(model.chat([q.request for q in questions], progress=progress))
    if len(replies) != len(questions):
        raise DataError(MSG_BAD_REPLIES.format(got=len(replies), n=len(questions)))
    if progress is not None:
        progress(len(questions), len(questions), MSG_PROGRESS_SUMMARY)
    records = read_items(pairs, questions, replies)
    figures = summarize_items(records, clusters=options.clusters, seed=options.seed,
                              n_resamples=options.n_resamples, confidence=options.confidence)
    learned = backend_record(model, replies)
    prov = provenance(
        options=options.dump(), template=template.as_dict(), seed=options.seed,
        request_seeds={str(k): request_seed(options.seed, k) for k in range(options.samples)},
        pair_sources=sorted({p.source for p in pairs}), spec=spec.name if spec is not None else None,
        **options.model_ref().served_at(), **learned,
    )
    result = ForcedChoiceResult(
        model_id=options.model_id, served_model=(learned["served_models"] or [None])[0], seed=options.seed,
        template=template.as_dict(), samples=options.samples, temperature=options.temperature, items=tuple(records),
        n_items=len(records), n_requests=len(questions), stop_message=learned["stop_message"],
        spec=spec.to_dict() if spec is not None else None, provenance=prov, **figures)
    if progress is not None:
        progress(1, 1, MSG_PROGRESS_DONE.format(parseable=result.share_rate.n, n=len(questions)))
    return result
