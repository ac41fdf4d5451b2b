"""A 2AFC test of a chat model, end to end: one call for the command line, the audit and the apps.

:func:`run` takes checked :class:`~.options.TwoAFCChatOptions` and :class:`TwoAFCChatItems` (a 2AFC specification:
targets and cue pairs), asks the chat model every question of the plan (:func:`~.score.plan_questions`: every
target × cue pair in both orders × ``samples``) in one call of its :meth:`~biastest.models.protocols.ChatLM.chat`,
reads every answer (:mod:`.score`), summarises (:mod:`.summary`) and validates against labour statistics
(:mod:`.labour`). A model may be given already built (tests, an app's loaded model); otherwise it is built from the
options (:func:`biastest.measures.chat_common.build_chat_model`, the response cache in the data dir). A run stopped
early keeps what was answered: the rest is ``not-asked``, counted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import DataError, SpecError
from biastest.measures import chat_common
from biastest.measures.chat_twoafc.options import TwoAFCChatOptions
from biastest.measures.chat_twoafc.result import PARSEABLE, TwoAFCChatResult
from biastest.measures.chat_twoafc.score import plan_questions, read_asks, request_seed
from biastest.measures.chat_twoafc.summary import summarize_targets, target_record
from biastest.measures.forced_choice.run import MSG_BAD_REPLIES, backend_record
from biastest.measures.labour import labour_validation
from biastest.models.protocols import ChatLM, ProgressCallback
from biastest.models.response_cache import default_cache_dir
from biastest.provenance import provenance
from biastest.spec import TwoAFCSpec

__all__ = ["MSG_BAD_SPEC", "MSG_NO_SPEC", "TwoAFCChatItems", "run"]

MSG_PROGRESS_ASKING = ("Asking {model_id} {n:,} questions ({targets:,} targets × {pairs} cue pairs × 2 orders × "
                       "{samples})…")
MSG_PROGRESS_SUMMARY = "Reading the answers and computing intervals…"
MSG_PROGRESS_DONE = "Done: {parseable:,} of {n:,} answers chose a cue."
MSG_BAD_SPEC = "The 2AFC test of a chat model needs a 2AFC specification (targets and cue pairs), got {type_name}."
MSG_NO_SPEC = "The 2AFC test of a chat model needs a specification of targets and cue pairs; none was given."


@dataclass(frozen=True)
class TwoAFCChatItems:
    """What a 2AFC test of a chat model asks about: the specification's targets and cue pairs.

    Attributes
    ----------
    spec : TwoAFCSpec
    table : sequence of mapping, optional
        Rows with ``occupation`` and ``pct_female`` to validate against (default: the options' ``labour_table``).
    """

    spec: TwoAFCSpec
    table: Sequence[Mapping[str, Any]] | None = None


def _check_spec(spec: Any) -> TwoAFCSpec:
    if spec is None:
        raise SpecError(MSG_NO_SPEC)
    if not isinstance(spec, TwoAFCSpec):
        raise SpecError(MSG_BAD_SPEC.format(type_name=type(spec).__name__))
    return spec


def run(
    options: TwoAFCChatOptions,
    items: TwoAFCChatItems,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    model: ChatLM | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
) -> TwoAFCChatResult:
    """Ask a chat model, for each target, which cue of each pair fits it better, in both orders; summarise.

    Parameters
    ----------
    options : TwoAFCChatOptions
    items : TwoAFCChatItems
    progress : callable, optional
        ``progress(done, total, message)``.
    cancel : threading.Event, optional
        Stops the run early (passed to the backend built here); what was answered is kept.
    model : ChatLM, optional
        An already built chat model; None builds it from the options.
    api_key : str, optional
        The endpoint's key, for this call only (never recorded).
    cache_dir : Path, optional
        The response cache's folder when ``options.use_cache`` (default: the data dir's).

    Raises
    ------
    SpecError
        No specification, or not a 2AFC one.
    DataError
        The backend answered a different number of questions than asked.
    """
    spec = _check_spec(items.spec)
    targets, cue_pairs = list(spec.targets), [tuple(p) for p in spec.cue_pairs]
    template = options.prompt()
    questions = plan_questions(targets, cue_pairs, template, samples=options.samples,
                               temperature=options.temperature, max_tokens=options.max_answer_tokens,
                               top_logprobs=options.top_logprobs, seed=options.seed)
    if model is None:
        cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        model = chat_common.build_chat_model(options, api_key=api_key, cache_dir=cache_dir, cancel=cancel)
    if progress is not None:
        progress(0, len(questions), MSG_PROGRESS_ASKING.format(
            model_id=options.model_id, n=len(questions), targets=len(targets), pairs=len(cue_pairs),
            samples=options.samples))
    replies = list(model.chat([q.request for q in questions], progress=progress))
    if len(replies) != len(questions):
        raise DataError(MSG_BAD_REPLIES.format(got=len(replies), n=len(questions)))
    if progress is not None:
        progress(len(questions), len(questions), MSG_PROGRESS_SUMMARY)
    kw = {"seed": options.seed, "n_resamples": options.n_resamples, "confidence": options.confidence}
    records = [target_record(i, t, asks, cue_pairs, **kw)
               for i, (t, asks) in enumerate(zip(targets, read_asks(len(targets), questions, replies), strict=True))]
    figures = summarize_targets(records, **kw)
    labour = labour_validation(records, female_cue=options.female_cue,
                               table=items.table if items.table is not None else options.labour_table, **kw)
    learned = backend_record(model, replies)
    prov = provenance(
        options=options.dump(), template=template.as_dict(), seed=options.seed,
        request_seeds={str(k): request_seed(options.seed, k) for k in range(options.samples)},
        spec=spec.name, n_targets=len(targets), n_cue_pairs=len(cue_pairs), **options.model_ref().served_at(),
        **learned,
    )
    result = TwoAFCChatResult(
        model_id=options.model_id, served_model=(learned["served_models"] or [None])[0], seed=options.seed,
        template=template.as_dict(), samples=options.samples, temperature=options.temperature,
        cue1_name=spec.cue1_name, cue2_name=spec.cue2_name, cue_pairs=tuple(cue_pairs), targets=tuple(records),
        labour=labour, n_targets=len(records), n_requests=len(questions), stop_message=learned["stop_message"],
        spec=spec.to_dict(), provenance=prov, **figures)
    if progress is not None:
        parseable = sum(result.counts[o] for o in PARSEABLE)
        progress(1, 1, MSG_PROGRESS_DONE.format(parseable=parseable, n=len(questions)))
    return result
