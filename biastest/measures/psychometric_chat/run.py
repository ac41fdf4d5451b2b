"""A psychometric test of a chat model, end to end: one call for the command line (and later the app).

:func:`run` takes checked :class:`~.options.PsychometricChatOptions` and :class:`PsychometricItems` (the
continuum, and the specification the run is filed under), asks every question of the plan
(:func:`~.score.plan_questions`: contexts × stimuli × both orders × ``samples``) in one call of the model's
:meth:`~biastest.models.protocols.ChatLM.chat`, reads every answer (:func:`~.score.read_ask`) and summarises each
context (:mod:`.summary`). A model may be given already built (tests); otherwise it is built from the options
behind the response cache. A run stopped early keeps what was answered: the rest is ``not-asked``, counted.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.continuum import NAME_CONTINUUM_FILE, Continuum, load_continuum_csv, name_continuum
from biastest.errors import DataError
from biastest.measures import chat_common
from biastest.measures.forced_choice.run import backend_record
from biastest.measures.psychometric_chat.options import PsychometricChatOptions
from biastest.measures.psychometric_chat.report import reading
from biastest.measures.psychometric_chat.result import PARSEABLE, PairSummaries, PsychometricChatResult
from biastest.measures.psychometric_chat.score import plan_questions, read_ask, request_seed
from biastest.measures.psychometric_chat.summary import FitSettings, summarize_contexts
from biastest.models.protocols import ChatLM, ProgressCallback
from biastest.models.response_cache import default_cache_dir
from biastest.provenance import provenance

__all__ = ["MSG_BAD_REPLIES", "MSG_NO_CONTINUUM", "PsychometricItems", "continuum_of", "run"]

MSG_PROGRESS_ASKING = (
    "Asking {model_id} {n:,} questions ({contexts} contexts × {stimuli:,} stimuli{pairs} × 2 orders × {samples})…"
)
MSG_PROGRESS_SUMMARY = "Reading the answers and fitting the curves…"
MSG_PROGRESS_DONE = "Done: {parseable:,} of {n:,} answers named a cue."
MSG_BAD_REPLIES = "The chat model returned {got} replies for {n} questions; the run cannot tell which is which."
MSG_NO_CONTINUUM = "A psychometric test needs a stimulus continuum (a Continuum); got {type_name}."


@dataclass(frozen=True)
class PsychometricItems:
    """What a psychometric test asks about: the stimulus continuum, and the specification it is filed under.

    Attributes
    ----------
    continuum : Continuum or None
        None: the one the options name (:func:`continuum_of`; an audit cell's items).
    spec : object, optional
        Recorded by name only.
    """

    continuum: Continuum | None
    spec: Any = None


def continuum_of(options: PsychometricChatOptions) -> Continuum:
    """The continuum the options name: the user's CSV, or the built-in name continuum."""
    return load_continuum_csv(options.continuum) if options.continuum else name_continuum()


def run(
    options: PsychometricChatOptions,
    items: PsychometricItems,
    *,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    model: ChatLM | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
) -> PsychometricChatResult:
    """Ask a chat model which cue each stimulus is, in every context and both orders; fit each context's curve.

    Parameters
    ----------
    options : PsychometricChatOptions
    items : PsychometricItems
    progress : callable, optional
        ``progress(done, total, message)``.
    cancel : threading.Event, optional
        Stops the run early (passed to the backend built here).
    model : ChatLM, optional
        An already built chat model; None builds it from the options.
    api_key : str, optional
        The endpoint's key for this call only (never recorded).
    cache_dir : Path, optional
        The response cache's folder when ``options.use_cache`` (default: in the data dir).

    Returns
    -------
    PsychometricChatResult

    Raises
    ------
    DataError
        Not a continuum, or the backend answered a different number of questions than asked.
    """
    continuum = items.continuum if items.continuum is not None else continuum_of(options)
    if not isinstance(continuum, Continuum):
        raise DataError(MSG_NO_CONTINUUM.format(type_name=type(continuum).__name__))
    template, pairs, contexts = options.prompt(), options.cue_pairs(), options.contexts
    cues = pairs[0]
    questions = plan_questions(continuum, contexts, pairs, template, samples=options.samples,
                               temperature=options.temperature, max_tokens=options.max_answer_tokens,
                               top_logprobs=options.top_logprobs, seed=options.seed)
    if model is None:
        cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        model = chat_common.build_chat_model(options, api_key=api_key, cache_dir=cache_dir, cancel=cancel)
    if progress is not None:
        progress(0, len(questions), MSG_PROGRESS_ASKING.format(
            model_id=options.model_id, n=len(questions), contexts=len(contexts), stimuli=len(continuum),
            pairs=f" × {len(pairs)} cue pairs" if len(pairs) > 1 else "", samples=options.samples))
    replies = list(model.chat([q.request for q in questions], progress=progress))
    if len(replies) != len(questions):
        raise DataError(MSG_BAD_REPLIES.format(got=len(replies), n=len(questions)))
    if progress is not None:
        progress(len(questions), len(questions), MSG_PROGRESS_SUMMARY)
    asks = [read_ask(q, r, continuum) for q, r in zip(questions, replies, strict=True)]
    settings = FitSettings(sigmoid=options.sigmoid, guess_lapse=options.guess_lapse, bootstrap=options.bootstrap,
                           n_bootstrap=options.n_bootstrap, confidence=options.confidence, seed=options.seed)
    builtin = NAME_CONTINUUM_FILE in continuum.source
    pooled_cues = cues if len(pairs) == 1 else (" / ".join(p[0] for p in pairs), " / ".join(p[1] for p in pairs))
    reader = functools.partial(reading, cues=pooled_cues, names=builtin)
    summaries, q_fixed = summarize_contexts(asks, continuum, contexts, reference=options.reference - 1,
                                            settings=settings, reader=reader)
    per_pair = [] if len(pairs) == 1 else [
        PairSummaries(pair_index=p, cues=pair, summaries=summarize_contexts(
            [a for a in asks if a.pair_index == p], continuum, contexts, reference=options.reference - 1,
            settings=settings, reader=functools.partial(reading, cues=pair, names=builtin), pair=p,
            q_asks=asks)[0])
        for p, pair in enumerate(pairs)]
    learned = backend_record(model, replies)
    spec_name = getattr(items.spec, "name", None)
    prov = provenance(
        options=options.dump(), template=template.as_dict(), seed=options.seed,
        request_seeds={str(k): request_seed(options.seed, k) for k in range(options.samples)},
        continuum_source=continuum.source, spec=spec_name, **options.model_ref().served_at(), **learned)
    result = PsychometricChatResult(
        model_id=options.model_id, served_model=(learned["served_models"] or [None])[0], seed=options.seed,
        template=template.as_dict(), cues=cues, contexts=contexts, reference=options.reference,
        continuum=continuum.as_dict(), samples=options.samples, temperature=options.temperature,
        sigmoid=options.sigmoid, guess_lapse_mode=options.guess_lapse, guess_lapse_fixed=q_fixed,
        bootstrap=options.bootstrap, n_bootstrap=options.n_bootstrap, confidence=options.confidence,
        n_requests=len(questions), summaries=summaries, cue_pairs=pairs, per_pair=per_pair,
        asks=asks, stop_message=learned["stop_message"],
        provenance=prov)
    if progress is not None:
        n_parseable = sum(a.outcome in PARSEABLE for a in asks)
        progress(1, 1, MSG_PROGRESS_DONE.format(parseable=n_parseable, n=len(questions)))
    return result
