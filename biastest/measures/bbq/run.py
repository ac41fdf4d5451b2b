"""A BBQ run: options and questions → the requests asked of a chat model → its answers read → the scores.

:func:`run` draws the questions (:func:`~biastest.measures.bbq.design.sample_items`), orders their answers
(:func:`~biastest.measures.bbq.design.answer_orders`), asks every request in chunks of :data:`CHUNK` (a
``cancel`` between chunks leaves the rest *not asked*; what was answered is kept), reads each answer
(:func:`~biastest.measures.bbq.score.read_row`) and scores each category and all of them
(:func:`~biastest.measures.bbq.score.group_scores`). The model is built from the options
(:func:`~biastest.measures.chat_common.build_chat_model`) unless one is given (tests, the app).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest import settings
from biastest.errors import DataError
from biastest.measures.bbq.data import BBQData, load_bbq
from biastest.measures.bbq.design import sample_items, trials
from biastest.measures.bbq.options import BBQOptions
from biastest.measures.bbq.result import BBQResult
from biastest.measures.bbq.score import group_scores, read_row
from biastest.measures.chat_common import build_chat_model
from biastest.models.response_cache import default_cache_dir
from biastest.provenance import provenance
from biastest.remote import safe_base_url

__all__ = ["CHUNK", "MSG_NO_ITEMS", "BBQItems", "data_dir_of", "plan", "run"]

#: Requests handed to the backend at once (a cancel takes effect between chunks).
CHUNK = 256
MSG_NO_ITEMS = "No BBQ question is left to ask with these choices (categories {categories}, conditions {conditions})."
MSG_PROGRESS_ASK = "Asking {done:,} of {total:,} BBQ requests"
MSG_PROGRESS_SCORE = "Scoring the BBQ answers"

ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class BBQItems:
    """What a BBQ run asks: the data read by :func:`~biastest.measures.bbq.data.load_bbq`."""

    data: BBQData


def data_dir_of(options: BBQOptions) -> Path:
    """The BBQ folder: ``options.bbq_dir``, else ``<data dir>/bbq`` (``BIASTEST_DATA_DIR``)."""
    return Path(options.bbq_dir).expanduser() if options.bbq_dir else settings.data_dir() / "bbq"


def _data(options: BBQOptions, items: Any) -> BBQData:
    if isinstance(items, BBQItems):
        return items.data
    if isinstance(items, BBQData):
        return items
    return load_bbq(data_dir_of(options), options.categories)


def plan(options: BBQOptions, items: Any = None) -> tuple[BBQData, list]:
    """The data and every request of the run (nothing is asked): for the count and the cost shown first."""
    data = _data(options, items)
    chosen = sample_items(data.items, options.categories, options.conditions, options.n_items, options.sample_per,
                          options.seed)
    if not chosen:
        raise DataError(MSG_NO_ITEMS.format(categories=", ".join(options.categories),
                                            conditions=", ".join(options.conditions)))
    return data, trials(chosen, options.prompt_template(), options.order, seed=options.seed,
                        samples=options.samples, temperature=options.temperature,
                        max_tokens=options.max_answer_tokens, top_logprobs=options.top_logprobs)


def _ask(model: Any, requests: list, *, progress: ProgressCallback | None,
         cancel: threading.Event | None) -> tuple[list, str | None]:
    replies: list = []
    stop = None
    for start in range(0, len(requests), CHUNK):
        if cancel is not None and cancel.is_set():
            stop = stop or "stopped by the user"
            break
        chunk = requests[start:start + CHUNK]
        got = list(model.chat(chunk))
        replies.extend(got[:len(chunk)] + [None] * (len(chunk) - len(got)))
        stop = getattr(model, "stop_message", None) or stop
        if progress is not None:
            progress(len(replies), len(requests), MSG_PROGRESS_ASK.format(done=len(replies), total=len(requests)))
        if stop is not None and any(r is None for r in got):
            break
    return replies + [None] * (len(requests) - len(replies)), stop


def run(options: BBQOptions, items: Any = None, *, progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None, model: Any = None, api_key: str | None = None,
        cache_dir: Path | None = None) -> BBQResult:
    """Ask the chosen BBQ questions and score the answers.

    Parameters
    ----------
    options : BBQOptions
    items : BBQItems or BBQData, optional
        The data; None reads ``options.bbq_dir`` (or ``<data dir>/bbq``).
    progress : callable, optional
        ``progress(done, total, message)``.
    cancel : threading.Event, optional
        Stops between chunks; the requests not asked are counted as such.
    model : ChatLM, optional
        The backend; None builds it from the options.
    api_key : str, optional
        The endpoint's key for this run only (never recorded).
    cache_dir : Path, optional
        The response cache's folder, used when ``options.use_cache`` (default:
        :func:`~biastest.models.response_cache.default_cache_dir`, in the data dir, so a rerun, a resumed audit or
        a second user asking the same question costs nothing).

    Raises
    ------
    DataError
        The data cannot be read, or no question is left (:data:`MSG_NO_ITEMS`).
    """
    data, planned = plan(options, items)
    if model is None:
        cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        model = build_chat_model(options, api_key=api_key, cache_dir=cache_dir, cancel=cancel)
    replies, stop = _ask(model, [t.request for t in planned], progress=progress, cancel=cancel)
    if progress is not None:
        progress(len(planned), len(planned), MSG_PROGRESS_SCORE)
    rows = [read_row(t, r) for t, r in zip(planned, replies, strict=True)]
    kw = {"seed": options.seed, "n_resamples": options.n_resamples, "confidence": options.confidence}
    categories = {c: group_scores(c, [r for r in rows if r.category == c], **kw)
                  for c in options.categories if any(r.category == c for r in rows)}
    overall = group_scores("overall", rows, **kw)
    served = sorted({r.reply["served_model"] for r in rows if r.reply and r.reply.get("served_model")})
    fingerprints = sorted({r.reply["system_fingerprint"] for r in rows
                           if r.reply and r.reply.get("system_fingerprint")})
    template = options.prompt_template()
    dumped = options.dump()
    if options.endpoint:  # the address without credentials or query
        dumped["endpoint"] = safe_base_url(options.endpoint)
    record = provenance(
        options=dumped, model=model.describe(), served_models=served, system_fingerprints=fingerprints,
        template_name="custom" if options.template_text is not None else options.template, template=template,
        seeds={"sample": options.seed, "order": options.seed, "api": options.seed, "bootstrap": options.seed},
        sample=list(dict.fromkeys(r.key for r in rows)),
        counts={"n_items": overall.n_items, "n_requests": len(rows), "outcomes": overall.outcomes},
        data=data.provenance(), dataset="BBQ (Parrish et al. 2022), CC BY 4.0",
    )
    return BBQResult(model_id=options.model_id, template_name=record["template_name"], template=template,
                     order_scheme=options.order, seed=options.seed, n_items=overall.n_items, n_requests=len(rows),
                     overall=overall, categories=categories, rows=rows, stop_message=stop, provenance=record)
