"""The language-model app's "BBQ benchmark" tab: a chat model answers BBQ questions (Parrish et al. 2022).

No bias specification is needed: the questions come from the BBQ files (``<data dir>/bbq``, CC BY 4.0). The user
picks the chat model (on this server, or behind a chat endpoint with a key for that run only), the categories and
a seeded number of questions per category; the line above the button gives the number of requests and the
estimated tokens first (the whole benchmark is about 58,000 requests), and a hosted endpoint over the measure's
limit needs the confirmation box ticked. The results: per category and overall, accuracy in ambiguous and in
disambiguated contexts, the bias scores s_DIS and s_AMB with their intervals (clustered by BBQ template), the
refusal and unparseable rates apart; CSV/JSON downloads (:mod:`biastest.measures.bbq.report`).

Handlers take and return plain values (tests call them directly); :func:`build_bbq_tab` lays the tab out and
:func:`wire_bbq` connects it.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from biastest import public
from biastest.errors import BiastestError, DataError, OptionError
from biastest.measures.bbq import CATEGORIES, BBQData, BBQItems, BBQOptions, BBQResult, estimate_cost, load_bbq, report
from biastest.measures.bbq import run_bbq as bbq_run
from biastest.measures.bbq.result import Estimate, GroupScores
from biastest.measures.bbq.run import data_dir_of
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, check_endpoint_url
from biastest.models.protocols import ChatLM
from biastest.options import DEFAULT_SEED
from biastest.report.text import md_escape
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, CHAT_WHERE_CHOICES, MSG_NO_CHAT_MODEL, confirmation_needed
from biastest.ui.common import progress_callback, session_export_dir, user_errors
from biastest.ui.gpt.handlers import ACTION_BBQ, MSG_FAILED, _model_slot, _seed, inline_failures

__all__ = ["BBQ_RUN_OUTPUTS", "DEFAULT_PER_CATEGORY", "MSG_BBQ_CONFIRM", "MSG_BBQ_DONE", "BBQInputs",
           "bbq_cost_handler", "bbq_options", "build_bbq_tab", "category_frame", "run_bbq_handler", "run_bbq_inputs",
           "summary_markdown", "wire_bbq"]

#: Questions drawn per category by default (seeded): a first look costs a few hundred requests, not 58,000.
DEFAULT_PER_CATEGORY = 20
MSG_BBQ_INTRO = """### BBQ benchmark (question answering; no specification needed)
Each BBQ question (Parrish et al. 2022) gives a context — *ambiguous* (the right answer is "unknown") or
*disambiguated* — a question and three answers (a member of the stereotyped group, one of the other group,
"unknown"), shown in a balanced, recorded order. Reported per category: accuracy in each context and the bias scores
(−1…1, 0 = no bias) **s_DIS** = 2·(biased answers)/(answers that are not "unknown") − 1 over the disambiguated
questions and **s_AMB** = (1 − ambiguous accuracy)·(2·(biased answers)/(answers that are not "unknown") − 1) over
the ambiguous ones, with intervals clustered by BBQ template (where that interval has no width, as at 0 %, the exact
Clopper–Pearson one, marked *exact*). Only answers that chose an option enter accuracy and the bias scores;
refusals and unreadable answers are counted apart, never as a side. The key is used for this run's requests only:
it is never stored, logged or written to the results."""
MSG_BBQ_COST = "**Before you run:** {text}"
MSG_BBQ_COST_CONFIRM = (
    " The endpoint is hosted and the run asks more than {limit:,} questions: tick the box to confirm the cost."
)
MSG_BBQ_CONFIRM = (
    "This run asks {requests:,} questions of a hosted endpoint, more than {limit:,}: tick 'I accept this cost' "
    "next to the button to run it."
)
MSG_BBQ_DONE = "✅ Asked {model} {n:,} BBQ questions ({requests:,} requests): the results are below."
MSG_BBQ_PARTIAL = "⚠️ Asked {model} {n:,} BBQ questions, but the run stopped early: {why}"
MSG_BBQ_NO_CATEGORY = "Choose at least one BBQ category."
#: How the count names the model before one is typed.
MODEL_NOT_YET = "the chat model"
CATEGORY_COLUMNS = ["category", "questions", "accuracy ambiguous", "accuracy disambiguated", "s_DIS", "s_AMB",
                    "refused", "unparseable"]


@functools.lru_cache(maxsize=4)
def _load(folder: str, categories: tuple[str, ...]) -> BBQData:
    """The BBQ files of ``categories`` (read once per process: they do not change while it runs)."""
    return load_bbq(folder, categories)


def bbq_options(chat_where: Any, model: Any, url: Any, categories: Any, per_category: Any, seed: int, *,
                n_resamples: int | None = None, bbq_dir: str | None = None, for_count: bool = False) -> BBQOptions:
    """The tab's fields as checked BBQ options (every mistake raised with its message, before any request).

    ``for_count``: the options of the count shown before a model is typed (the model then named
    :data:`MODEL_NOT_YET`; the count does not depend on it).
    """
    model = str(model or "").strip()
    if not model and for_count:
        model = MODEL_NOT_YET
    elif not model:
        raise DataError(MSG_NO_CHAT_MODEL)
    if not categories:
        raise OptionError(MSG_BBQ_NO_CATEGORY)
    endpoint = None
    if chat_where == CHAT_ENDPOINT:
        url = str(url or "").strip()
        if not url:
            raise OptionError(MSG_NEED_ENDPOINT_URL)
        endpoint = check_endpoint_url(url)
    elif model != MODEL_NOT_YET:
        model = public.check_model_reference(model)
    n = per_category
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    values: dict[str, Any] = {"model_id": model, "endpoint": endpoint, "categories": list(categories), "n_items": n,
                              "seed": seed, "bbq_dir": bbq_dir}
    if n_resamples is not None:
        values["n_resamples"] = n_resamples
    return BBQOptions.parse(values)


def _items(options: BBQOptions, data: BBQData | None) -> BBQItems:
    return BBQItems(data if data is not None else _load(str(data_dir_of(options)), tuple(options.categories)))


@user_errors
def bbq_cost_handler(chat_where, model, url, categories, per_category, seed, *, data: BBQData | None = None,
                     bbq_dir: str | None = None):
    """The request count and token estimate shown above the button, and whether the confirmation box shows."""
    try:
        options = bbq_options(chat_where, model, url, categories, per_category, _seed(seed), bbq_dir=bbq_dir,
                              for_count=True)
        cost = estimate_cost(options, _items(options, data))
    except BiastestError as exc:
        return "⚠️ " + md_escape(exc.message), gr.Checkbox(visible=False)
    text = MSG_BBQ_COST.format(text=md_escape(cost.text))
    if cost.needs_confirmation:
        text += MSG_BBQ_COST_CONFIRM.format(limit=cost.limit)
    return text, gr.Checkbox(visible=cost.needs_confirmation)


def _bounds(e: Estimate) -> tuple[float | None, float | None, str]:
    """The cluster bootstrap interval; where it has no width (alike answers, as at 0 %) and the measure gives the
    exact Clopper–Pearson one, that one, marked ``exact``."""
    if e.low is not None and e.low == e.high and e.exact_low is not None and e.exact_high is not None:
        return e.exact_low, e.exact_high, ", exact"
    return e.low, e.high, ""


def _fmt(e: Estimate, *, percent: bool) -> str:
    if e.value is None:
        return "n/a" + (f" ({e.reason})" if e.reason else "")
    low, high, how = _bounds(e)
    if percent:
        text = f"{100 * e.value:.1f}%"
        return text + (f" ({100 * low:.1f}–{100 * high:.1f}%{how})" if low is not None and high is not None else "")
    return f"{e.value:+.3f}" + (f" ({low:+.3f} to {high:+.3f}{how})" if low is not None and high is not None else "")


def _row(name: str, g: GroupScores) -> dict[str, Any]:
    return {"category": name, "questions": g.n_items,
            "accuracy ambiguous": _fmt(g.accuracy_ambig, percent=True),
            "accuracy disambiguated": _fmt(g.accuracy_disambig, percent=True),
            "s_DIS": _fmt(g.s_dis, percent=False), "s_AMB": _fmt(g.s_amb, percent=False),
            "refused": _fmt(g.refusal_rate, percent=True), "unparseable": _fmt(g.unparseable_rate, percent=True)}


def category_frame(result: BBQResult) -> pd.DataFrame:
    """One row per category, then the overall row: accuracies, s_DIS, s_AMB (intervals), refusals apart."""
    rows = [_row(name, g) for name, g in result.categories.items()] + [_row("overall", result.overall)]
    return pd.DataFrame(rows, columns=CATEGORY_COLUMNS)


def summary_markdown(result: BBQResult) -> str:
    """The overall figures in a few lines (the table below gives each category)."""
    o = result.overall
    return (f"{md_escape(report.verdict_sentence(result))}\n\n### BBQ: {md_escape(result.model_id)}\n\n"
            f"Accuracy: ambiguous {_fmt(o.accuracy_ambig, percent=True)}, disambiguated "
            f"{_fmt(o.accuracy_disambig, percent=True)}. Bias scores (−1…1, 0 = none): s_DIS "
            f"{_fmt(o.s_dis, percent=False)}, s_AMB {_fmt(o.s_amb, percent=False)}. Counted apart: refused "
            f"{_fmt(o.refusal_rate, percent=True)}, unparseable {_fmt(o.unparseable_rate, percent=True)}. "
            f"{result.n_items:,} questions, {result.n_requests:,} requests, seed {result.seed}, template "
            f"{md_escape(result.template_name)}.")


BBQ_RUN_OUTPUTS = 5  # message, summary, per-category table, CSV and JSON downloads


@dataclass(frozen=True)
class BBQInputs:
    """What the tab sets for a BBQ run: the button's inputs, in the order the event passes them.

    ``api_key`` is left out of the record's ``repr``: it goes to the run's requests only.
    """

    chat_where: Any
    model_id: Any
    url: Any
    api_key: Any = field(repr=False)
    categories: Any
    per_category: Any
    seed: Any
    confirmed: Any


@user_errors
@inline_failures(ACTION_BBQ, BBQ_RUN_OUTPUTS, 0)
def run_bbq_handler(*values, progress=gr.Progress(), model: ChatLM | None = None, data: BBQData | None = None,
                    bbq_dir: str | None = None, cache_dir: Path | None = None, n_resamples: int | None = None,
                    slot: threading.Lock | None = None):
    """:func:`run_bbq_inputs` with the tab's values given in the button's order (:class:`BBQInputs`' fields)."""
    return run_bbq_inputs(BBQInputs(*values), progress=progress, model=model, data=data, bbq_dir=bbq_dir,
                          cache_dir=cache_dir, n_resamples=n_resamples, slot=slot)


def run_bbq_inputs(inputs: BBQInputs, *, progress=None, model: ChatLM | None = None, data: BBQData | None = None,
                   bbq_dir: str | None = None, cache_dir: Path | None = None, n_resamples: int | None = None,
                   slot: threading.Lock | None = None):
    """Check everything (the count and the confirmation first), then ask; the results in the tab.

    The key (``inputs.api_key``) goes to the run only. ``model`` and ``data`` (tests) are an already built chat
    model and BBQ data.
    """
    skip = (gr.skip(),) * (BBQ_RUN_OUTPUTS - 1)
    try:
        options = bbq_options(inputs.chat_where, inputs.model_id, inputs.url, inputs.categories, inputs.per_category,
                              _seed(inputs.seed), n_resamples=n_resamples, bbq_dir=bbq_dir)
        items = _items(options, data)
        cost = estimate_cost(options, items)
        if confirmation_needed(cost, inputs.confirmed):
            raise OptionError(MSG_BBQ_CONFIRM.format(requests=cost.requests, limit=cost.limit))
        key = str(inputs.api_key or "").strip() or None
        held = slot if (options.endpoint is None and model is None) else None  # as the chat model's run
        with _model_slot(held, progress):
            result = bbq_run(options, items, progress=progress_callback(progress), model=model,
                             api_key=key if options.endpoint else None, cache_dir=cache_dir)
    except BiastestError as exc:  # every failure's own message, next to the button
        gr.Warning(exc.message.split("\n", 1)[0])
        return ("⚠️ " + md_escape(exc.message), *skip)
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-bbq-"))
    name = md_escape(result.model_id)
    message = (MSG_BBQ_PARTIAL.format(model=name, n=result.n_items, why=md_escape(result.stop_message))
               if result.stop_message else MSG_BBQ_DONE.format(model=name, n=result.n_items,
                                                                requests=result.n_requests))
    return (message, summary_markdown(result), gr.Dataframe(value=category_frame(result), visible=True),
            gr.DownloadButton(value=str(csv_path), visible=True), gr.DownloadButton(value=str(json_path), visible=True))


# ------------------------------------------------------------------ layout and wiring
def build_bbq_tab() -> dict[str, Any]:
    """The "BBQ benchmark" tab's contents (inside its tab): the chat model, the sample, the cost, the results."""
    gr.Markdown(MSG_BBQ_INTRO)
    where = gr.Radio(CHAT_WHERE_CHOICES, value=CHAT_HERE, label="Where the chat model runs", elem_id="bbq-where")
    with gr.Row():
        model = gr.Textbox("", label="Chat model", elem_id="bbq-model",
                           info="On this server: a Hub id or folder of an instruct model. At an endpoint: its name.")
        with gr.Column(visible=False) as endpoint_box:
            url = gr.Textbox("", label="Chat endpoint address", placeholder="https://api.openai.com/v1",
                             elem_id="bbq-url")
            key = gr.Textbox("", label="API key (optional; this session only, never stored)", type="password",
                             elem_id="bbq-key")
    categories = gr.CheckboxGroup(list(CATEGORIES), value=["Age", "Gender_identity"], label="Categories",
                                  elem_id="bbq-categories")
    with gr.Row():
        per_category = gr.Number(DEFAULT_PER_CATEGORY, label="Questions per category (seeded draw)", precision=0,
                                 minimum=1, elem_id="bbq-n")
        seed = gr.Number(DEFAULT_SEED, label="Seed (the draw, the answer orders, the intervals)", precision=0,
                         elem_id="bbq-seed")
    cost = gr.Markdown("", elem_id="bbq-cost")
    confirm = gr.Checkbox(False, label="I accept this cost", visible=False, elem_id="bbq-confirm")
    run_btn = gr.Button("Ask the BBQ questions →", variant="primary", elem_id="bbq-run")
    message = gr.Markdown("", elem_id="bbq-message", min_height=40)
    summary = gr.Markdown("", elem_id="bbq-summary")
    table = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="bbq-table")
    with gr.Row():
        dl_csv = gr.DownloadButton("Download answers (CSV)", visible=False, elem_id="bbq-download-csv")
        dl_json = gr.DownloadButton("Download result (JSON)", visible=False, elem_id="bbq-download-json")
    return {"where": where, "model": model, "endpoint_box": endpoint_box, "url": url, "key": key,
            "categories": categories, "per_category": per_category, "seed": seed, "cost": cost, "confirm": confirm,
            "run_btn": run_btn, "message": message, "summary": summary, "table": table, "dl_csv": dl_csv,
            "dl_json": dl_json}


def wire_bbq(tab: Any, c: dict[str, Any], *, slot: threading.Lock) -> None:
    """Connect the tab: the endpoint's fields, the cost line (on every change, and when the tab opens), the run."""
    c["where"].change(lambda w: gr.Column(visible=w == CHAT_ENDPOINT), c["where"], c["endpoint_box"], queue=False,
                      show_progress="hidden")
    cost_inputs = [c["where"], c["model"], c["url"], c["categories"], c["per_category"], c["seed"]]
    for component in cost_inputs:
        component.change(bbq_cost_handler, cost_inputs, [c["cost"], c["confirm"]], concurrency_id="gpt-bbq-cost",
                         show_progress_on=[c["cost"]])

    def run(where, model, url, key, categories, per_category, seed, confirmed, progress=gr.Progress()):
        return run_bbq_handler(where, model, url, key, categories, per_category, seed, confirmed, progress=progress,
                               slot=slot)

    event = c["run_btn"].click(
        run, [c["where"], c["model"], c["url"], c["key"], c["categories"], c["per_category"], c["seed"],
              c["confirm"]],
        [c["message"], c["summary"], c["table"], c["dl_csv"], c["dl_json"]], api_name="ask_bbq",
        concurrency_id="gpt-bbq-run", concurrency_limit=2, show_progress_on=[c["message"]])
    event.failure(lambda: MSG_FAILED, None, c["message"], queue=False, show_progress="hidden")
    tab.select(bbq_cost_handler, cost_inputs, [c["cost"], c["confirm"]], concurrency_id="gpt-bbq-cost",
               show_progress_on=[c["cost"]])
