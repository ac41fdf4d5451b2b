"""Step 2's "A chat model (asks questions)" and step 3's forced-choice results: handlers with plain values.

A chat model is asked which sentence of each pair is more plausible, with the two sentences in both orders
(the forced-choice measure, :mod:`biastest.measures.forced_choice`). It runs in this process (an instruct model
with a chat template, loaded from the Hub or a folder) or behind an OpenAI-compatible chat endpoint (address,
served name, a key for this session only: passed to the run and never put in the session's state, a file or a log;
public mode refuses addresses that are not public, as for the completions endpoint).

Before the run, the cost (:func:`cost_view`: questions, estimated tokens) is shown next to the button; a run at a
hosted endpoint with more questions than the measure's limit needs the confirmation box ticked
(:func:`confirmation_needed`, the app's ``--yes``). The prompt template is a named one or the user's own text,
checked with the measure's messages (:func:`chat_template`).

Step 3 shows a forced-choice result (:func:`fc_view`): the measure's plain-language readings first, the headline
share with its interval and the rates, a per-pair grid whose hover quotes the model's raw answers in both orders,
the per-term table, CSV/JSON downloads, the comparison with every other chat model asked in this session on the
same pairs (:func:`~biastest.measures.forced_choice.compare_forced_choice`) and, when the session holds a
likelihood (stereotype score) result on the same pairs, whether the two agree
(:func:`~biastest.measures.forced_choice.agreement_with_likelihood`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from biastest.errors import BiastestError, DataError, OptionError
from biastest.measures.forced_choice import (
    ForcedChoiceItems,
    ForcedChoiceOptions,
    ForcedChoiceResult,
    agreement_with_likelihood,
    compare_forced_choice,
    estimate_cost,
    report,
    run_forced_choice,
)
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.forced_choice.result import ANTI_FIRST, STEREOTYPED_FIRST
from biastest.measures.forced_choice.templates import CUSTOM, DEFAULT_TEMPLATE, SEPARATOR, TEMPLATES, custom_template
from biastest.measures.stereotype import report as lm_report
from biastest.measures.stereotype.result import StereotypeResult
from biastest.models.protocols import ChatLM
from biastest.report import compare as rep
from biastest.report.figures import item_grid
from biastest.report.text import md_escape
from biastest.spec import BiasSpec
from biastest.stats.compare import keyed, model_labels
from biastest.ui.chat_choice import (
    CHAT_ENDPOINT,
    CHAT_HERE,
    CHAT_WHERE_CHOICES,
    MSG_CONFIRM_NEEDED,
    MSG_NO_CHAT_MODEL,
    chat_where_visibility,
    confirmation_needed,
    model_and_endpoint,
)
from biastest.ui.common import progress_callback, session_export_dir, unlock_step, user_errors
from biastest.ui.gpt.handlers import ACTION_CHAT, _model_slot, _seed, inline_failures
from biastest.ui.gpt.handlers import _spec as _checked_spec

__all__ = [
    "CHAT_ENDPOINT",
    "CHAT_HERE",
    "CHAT_RUN_OUTPUTS",
    "CHAT_WHERE_CHOICES",
    "ChatInputs",
    "FC_VIEW_OUTPUTS",
    "MAX_COMPARED",
    "MSG_CHAT_DONE",
    "MSG_CONFIRM_NEEDED",
    "MSG_NO_CHAT_MODEL",
    "chat_options",
    "chat_template",
    "chat_where_visibility",
    "confirmation_needed",
    "cost_view",
    "empty_fc_view",
    "fc_view",
    "run_chat",
    "run_chat_inputs",
    "template_box",
    "template_choices",
    "template_text",
]

#: Most forced-choice results a comparison holds (the latest ones on the same pairs).
MAX_COMPARED = 6

MSG_CHAT_DONE = "✅ Asked {model} about {n} sentence pairs ({requests:,} questions): the results are in step 3."
MSG_CHAT_PARTIAL = "⚠️ Asked {model} about {n} sentence pairs, but the run stopped early: {why}"
MSG_COST_NEEDS_PAIRS = "The cost is shown here once the table holds sentence pairs to ask about."
MSG_COST = "**Before you run:** {text}"
MSG_COST_CONFIRM = (
    " The endpoint is hosted and the run asks more than {limit:,} questions: tick the box to confirm the cost."
)
MSG_CHAT_HINT = (
    "The model is asked which sentence of each pair is more plausible, with the two sentences in both orders "
    "(A/B swapped); refusals and answers that cannot be read are counted apart, never given to either side. "
    "The key is used for this session's requests only: it is never stored, logged or written to the results."
)
MSG_NO_COMPARISON = (
    "Ask another chat model about the same pairs in step 2 (change the model and run again): every chat model "
    "asked in this session about these pairs is compared here."
)
MSG_AGREEMENT = (
    "**Forced choice vs likelihood ({likelihood}):** on {n_decided} of {n_common} shared pairs both gave a "
    "direction; they agree on {est:.1f}% of them ({level} interval {low:.1f}–{high:.1f}%), Cohen's kappa {kappa}. "
    "Table (forced choice | likelihood): {table}."
)
MSG_AGREEMENT_NONE = (
    "Run the stereotype score on the same pairs (a model on this server or a completions endpoint) to see "
    "whether the likelihood and the chat model's choices agree."
)
MSG_AGREEMENT_FAILED = "**Forced choice vs likelihood:** {message}"
SUMMARY_HEAD = "### Stereotyped choices: {est}\n\n{what}\n\n| Figure | Estimate | Interval | Count |\n|---|---|---|---|"


# ------------------------------------------------------------------ template and cost
def template_text(name: str) -> str:
    """A named template as the editable text (system message, a ``---`` line, user message)."""
    t = TEMPLATES.get(name)
    if t is None:
        return ""
    return f"{t.system}\n{SEPARATOR}\n{t.user}" if t.system else t.user


def template_box(name: Any) -> Any:
    """The text box after a pick in the template list: the named template's text (``custom`` keeps the box)."""
    return template_text(name) if name in TEMPLATES else gr.skip()


def template_choices() -> list[tuple[str, str]]:
    """The named templates of the dropdown (and ``custom``: the text box as typed)."""
    return [(name, name) for name in TEMPLATES] + [("custom (your own text below)", CUSTOM)]


def chat_template(name: Any, text: Any) -> tuple[str, str | None]:
    """``(template, template_text)`` for the options: a named template when the box holds its text unchanged.

    Raises
    ------
    OptionError
        The measure's messages (:func:`~biastest.measures.forced_choice.custom_template`): an empty template, one
        too long, placeholders missing or repeated, a field it cannot fill.
    """
    name = str(name or DEFAULT_TEMPLATE)
    text = "" if text is None else str(text)
    if name in TEMPLATES and text.strip() in ("", template_text(name).strip()):
        return name, None
    custom_template(text)
    return CUSTOM, text


def chat_options(chat_where: Any, model: Any, url: Any, template: Any, text: Any, samples: Any,
                 temperature: Any, seed: int, *, n_resamples: int | None = None) -> ForcedChoiceOptions:
    """Step 2's chat fields as checked options (every mistake raised with its message, before any request).

    Raises
    ------
    DataError
        No model typed (:data:`MSG_NO_CHAT_MODEL`).
    OptionError, PolicyError
        No endpoint address or a bad one (public mode: one that is not public), a bad template, samples or
        temperature out of bounds (the options' own messages).
    """
    model, endpoint = model_and_endpoint(chat_where, model, url)
    name, custom = chat_template(template, text)
    values: dict[str, Any] = {"model_id": model, "endpoint": endpoint, "template": name, "template_text": custom,
                              "seed": seed, "samples": samples, "temperature": temperature}
    if isinstance(samples, float) and samples.is_integer():
        values["samples"] = int(samples)
    if n_resamples is not None:
        values["n_resamples"] = n_resamples
    return ForcedChoiceOptions.parse(values)


def cost_view(options: ForcedChoiceOptions | None, pairs: list | None) -> tuple[str, bool]:
    """The cost line shown next to the button, and whether the confirmation box is shown."""
    if options is None or not pairs:
        return MSG_COST_NEEDS_PAIRS, False
    cost = estimate_cost(options, pairs)
    text = MSG_COST.format(text=md_escape(cost.text))
    if cost.needs_confirmation:
        text += MSG_COST_CONFIRM.format(limit=cost.limit)
    return text, cost.needs_confirmation


# ------------------------------------------------------------------ the run
def _inline(exc: BiastestError) -> str:
    gr.Warning(exc.message.split("\n", 1)[0])
    return "⚠️ " + md_escape(exc.message)


def _spec(state: Any) -> BiasSpec | None:
    spec = (state or {}).get("spec") if isinstance(state, dict) else None
    return BiasSpec.from_dict(spec) if spec else None


def _pairs(state: Any, table: Any) -> list:
    spec = _spec(state)
    return lm_report.pairs_from_table(table, spec_name=spec.name if spec else "")


@user_errors
def cost_handler(state, table, chat_where, model, url, template, text, samples, temperature, seed):
    """The cost line and the confirmation box, from step 2's current fields (a mistake is shown in the line)."""
    if table is None or not len(table):
        return MSG_COST_NEEDS_PAIRS, gr.Checkbox(visible=False)
    try:
        pairs = _pairs(state, table)
        options = chat_options(chat_where, model, url, template, text, samples, temperature, _seed(seed))
    except BiastestError as exc:
        return "⚠️ " + md_escape(exc.message), gr.Checkbox(visible=False)
    line, confirm = cost_view(options, pairs)
    return line, gr.Checkbox(visible=confirm)


FC_VIEW_OUTPUTS = 12  # lm box, fc box, readings, summary, grid, terms, csv, json, compare md, forest, table, agreement
CHAT_RUN_OUTPUTS = 4  # run message, state, tabs, results tab (then :data:`FC_VIEW_OUTPUTS`)


def _record(state: dict[str, Any], result: ForcedChoiceResult) -> dict[str, Any]:
    """The session's forced-choice results with ``result`` last (a rerun of the same model replaces its own)."""
    same = (result.model_id, result.served_model, result.template.get("system"), result.template.get("user"),
            result.samples, result.temperature)
    kept = [r for r in state.get("fc") or []
            if (r["model_id"], r.get("served_model"), r["template"].get("system"), r["template"].get("user"),
                r["samples"], r["temperature"]) != same]
    return {**state, "fc": [*kept, result.to_dict()][-MAX_COMPARED:], "shown": "fc"}


@dataclass(frozen=True)
class ChatInputs:
    """What step 2 sets for a chat model's run: the button's inputs, in the order the event passes them.

    ``api_key`` is left out of the record's ``repr``: it goes to the run's requests only.
    """

    chat_where: Any
    model_id: Any
    url: Any
    api_key: Any = field(repr=False)
    template: Any
    text: Any
    samples: Any
    temperature: Any
    seed: Any
    confirmed: Any
    state: Any
    table: Any


@user_errors
@inline_failures(ACTION_CHAT, CHAT_RUN_OUTPUTS + FC_VIEW_OUTPUTS, 0)
def run_chat(*values, progress=gr.Progress(), model: ChatLM | None = None, slot: threading.Lock | None = None,
             cache_dir=None, n_resamples: int | None = None):
    """:func:`run_chat_inputs` with step 2's values given in the button's order (:class:`ChatInputs`' fields)."""
    return run_chat_inputs(ChatInputs(*values), progress=progress, model=model, slot=slot, cache_dir=cache_dir,
                           n_resamples=n_resamples)


def run_chat_inputs(inputs: ChatInputs, *, progress=None, model: ChatLM | None = None,
                    slot: threading.Lock | None = None, cache_dir=None, n_resamples: int | None = None):
    """Check everything, then ask the chat model (step 2's "Ask the chat model"); the result in step 3.

    The key (``inputs.api_key``) goes to the run only; the session's state holds the result, which records no key.
    ``model`` (tests) is an already built chat model; ``slot`` is held while a model in this process answers.

    Outputs: run message, state, tabs, results tab, then :func:`fc_view`'s.
    """
    skip = (gr.skip(),) * (CHAT_RUN_OUTPUTS - 1 + FC_VIEW_OUTPUTS)
    try:
        state = inputs.state
        _checked_spec(state)
        options = chat_options(inputs.chat_where, inputs.model_id, inputs.url, inputs.template, inputs.text,
                               inputs.samples, inputs.temperature, _seed(inputs.seed), n_resamples=n_resamples)
        pairs = _pairs(state, inputs.table)
        cost = estimate_cost(options, pairs)
        if confirmation_needed(cost, inputs.confirmed):
            raise OptionError(MSG_CONFIRM_NEEDED.format(requests=cost.requests, limit=CONFIRM_ABOVE_REQUESTS))
        key = str(inputs.api_key or "").strip() or None
        # a model on this server waits for the one test at a time (saying so); an endpoint's does not
        held = slot if (options.endpoint is None and model is None) else None
        with _model_slot(held, progress):
            result = run_forced_choice(options, ForcedChoiceItems(pairs, _spec(state)),
                                       progress=progress_callback(progress), model=model,
                                       api_key=key if options.endpoint else None, cache_dir=cache_dir)
    except BiastestError as exc:  # every failure's own message, next to the button
        return (_inline(exc), *skip)
    state = _record(state, result)
    tabs, tab = unlock_step("results")
    name = md_escape(result.served_model or result.model_id)
    if result.stop_message:
        message = MSG_CHAT_PARTIAL.format(model=name, n=result.n_items, why=md_escape(result.stop_message))
    else:
        message = MSG_CHAT_DONE.format(model=name, n=result.n_items, requests=result.n_requests)
    return (message, state, tabs, tab, *fc_view(state))


# ------------------------------------------------------------------ step 3


def _rate(value: Any) -> tuple[str, str, str]:
    if value is None or value.estimate is None:
        return "—", "—", "0 answers"
    return f"{value.estimate:.1f}%", f"{value.low:.1f}–{value.high:.1f}%", f"{value.k:,} of {value.n:,}"


def summary_markdown(result: ForcedChoiceResult) -> str:
    """The headline share with its interval, then the rates (refusal, unparseable, position, consistency)."""
    s = result.share
    if s is None:
        est = "no answer chose a sentence"
    else:
        interval = f"{s.low:.1f}–{s.high:.1f}%" if s.interval_shown else (s.reason or "no interval")
        est = f"{s.estimate:.1f}% ({s.confidence:.0%} interval {interval}; 50% = no preference)"
    what = (f"{md_escape(result.served_model or result.model_id)} · template {md_escape(result.template['name'])} · "
            f"{result.n_items} pairs × 2 orders × {result.samples} sample(s) · temperature {result.temperature:g}")
    rows = [("Stereotyped-choice share (Wilson)", result.share_rate), ("Refusal rate", result.refusal_rate),
            ("Unparseable rate", result.unparseable_rate), ("Position bias (first option chosen)",
                                                            result.position_bias),
            ("Order consistency", result.order_consistency)]
    lines = [SUMMARY_HEAD.format(est=est, what=what)]
    lines += [f"| {label} | " + " | ".join(_rate(r)) + " |" for label, r in rows]
    return "\n".join(lines)


def _answers(item, order: str) -> str:
    asks = [a for a in item.asks if a.order == order]
    return " / ".join(f"{a.text!r} → {a.outcome}" if a.text is not None else a.outcome for a in asks)


def item_figure(result: ForcedChoiceResult) -> go.Figure:
    """One square per pair, coloured by its stereotyped-choice share; the hover quotes the raw answers."""
    hover = [{"pair": it.index + 1, "stereotyped": it.stereotyped, "anti-stereotyped": it.anti_stereotyped,
              "answers, stereotyped sentence as A": _answers(it, STEREOTYPED_FIRST),
              "answers, anti-stereotyped sentence as A": _answers(it, ANTI_FIRST),
              "stereotyped share": "no choice" if it.share is None else f"{100 * it.share:.0f}%"}
             for it in result.items]
    fig = item_grid(x=[it.index + 1 for it in result.items],
                     y=[it.attribute_term or "(no term)" for it in result.items],
                     color=[None if it.share is None else 100 * it.share for it in result.items], hover=hover,
                     title="Every pair: share of its answers that chose the stereotyped sentence (both orders)",
                     x_title="pair", y_title="attribute term", color_title="stereotyped %", midpoint=50.0)
    fig.update_traces(marker={"cmin": 0.0, "cmax": 100.0})  # a share: the colour scale is 0–100 %, 50 % white
    return fig


def terms_frame(result: ForcedChoiceResult) -> pd.DataFrame:
    """Per attribute and group term: the share, its interval and the counts."""
    rows = []
    for family, terms in (("attribute", result.per_attribute), ("group", result.per_group)):
        for t in terms:
            share = t.share
            rows.append({"term": f"{family}: {t.term}", "share %": None if share is None else round(share.estimate, 1),
                         "interval": "" if share is None or not share.interval_shown else
                         f"{share.low:.1f}–{share.high:.1f}", "pairs": t.n_items, "answers": t.n_answers,
                         "refused": t.n_refused, "unparseable": t.n_unparseable})
    return pd.DataFrame(rows, columns=["term", "share %", "interval", "pairs", "answers", "refused", "unparseable"])


def _same_items(results: list[ForcedChoiceResult]) -> list[ForcedChoiceResult]:
    last = results[-1]
    ids = sorted(keyed([it.pair_id for it in last.items]))
    return [r for r in results if sorted(keyed([it.pair_id for it in r.items])) == ids]


def _comparison(results: list[ForcedChoiceResult]) -> tuple:
    same = _same_items(results)
    if len(same) < 2:
        return MSG_NO_COMPARISON, _hidden_plot(), _hidden_table()
    labels = model_labels([r.served_model or r.model_id for r in same], [r.template["name"] for r in same])
    try:
        cmp = compare_forced_choice(same, seed=same[-1].seed, labels=labels)
    except DataError as exc:
        return "⚠️ " + md_escape(exc.message), _hidden_plot(), _hidden_table()
    return (rep.summary_markdown(cmp) + "\n\n" + rep.reading_markdown(cmp),
            gr.Plot(value=rep.forest_figure(cmp), visible=True),
            gr.Dataframe(value=rep.pairwise_frame(cmp), visible=True))


def _hidden_plot() -> Any:
    return gr.Plot(value=None, visible=False)


def _hidden_table() -> Any:
    return gr.Dataframe(value=None, visible=False)


def _agreement(result: ForcedChoiceResult, likelihood: Any) -> str:
    if not likelihood:
        return MSG_AGREEMENT_NONE
    lik = StereotypeResult.from_dict(likelihood)
    try:
        a = agreement_with_likelihood(result, lik)
    except DataError as exc:
        return MSG_AGREEMENT_FAILED.format(message=md_escape(exc.message))
    r = a.agreement
    kappa = "undefined" if a.kappa is None else f"{a.kappa:.2f}"
    table = ", ".join(f"{k} {v}" for k, v in a.table.items())
    return MSG_AGREEMENT.format(likelihood=md_escape(f"{lik.model_id}, {lik.method}"), n_decided=a.n_decided,
                                n_common=a.n_common, est=r.estimate, level=f"{r.confidence:.0%}", low=r.low,
                                high=r.high, kappa=kappa, table=md_escape(table))


def empty_fc_view() -> tuple:
    """Step 3 with no forced-choice result: the likelihood part shown, the forced-choice part hidden and empty."""
    hidden = gr.DownloadButton(visible=False)
    return (gr.Column(visible=True), gr.Column(visible=False), "", "", None, None, hidden, hidden, "", _hidden_plot(),
            _hidden_table(), "")


def fc_view(state: Any) -> tuple:
    """Step 3 for the session's last forced-choice result (:data:`FC_VIEW_OUTPUTS` values; see the module)."""
    stored = (state or {}).get("fc") if isinstance(state, dict) else None
    if not stored or state.get("shown") != "fc":
        return empty_fc_view()
    results = [ForcedChoiceResult.from_dict(r) for r in stored]
    result = results[-1]
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-fc-"))
    compared, forest, table = _comparison(results)
    readings = "\n\n".join(md_escape(line) for line in report.readings(result))
    return (gr.Column(visible=False), gr.Column(visible=True), readings, summary_markdown(result),
            item_figure(result), terms_frame(result), gr.DownloadButton(value=str(csv_path), visible=True),
            gr.DownloadButton(value=str(json_path), visible=True), compared, forest, table,
            _agreement(result, state.get("result")))


def boxes_view(state: Any) -> tuple[Any, Any]:
    """Which of step 3's parts shows: the likelihood result's or the forced-choice result's."""
    fc = isinstance(state, dict) and state.get("shown") == "fc" and bool(state.get("fc"))
    return gr.Column(visible=not fc), gr.Column(visible=fc)

