"""The 2AFC test of a chat model in the word-embedding app: step 2's "Which model?" and step 3's chat results.

Step 2 of a 2AFC specification asks which model answers: a word embedding (the cue mixed between the two cue
vectors, :mod:`.data`), a text classifier (:mod:`.classifier`) or **a chat model that is asked questions** (the
``twoafc-chat`` measure, :mod:`biastest.measures.chat_twoafc`): for each target and cue pair, which cue fits the
target better, with the cues in both orders and ``samples`` seeded samples. The chat model runs in this process or
behind an OpenAI-compatible endpoint (:mod:`biastest.ui.chat_choice`: the same choice and checks as the
language-model app; the key goes to the run only, never into the session, a file or a log). The cost (questions,
estimated tokens) is shown before the run; a hosted endpoint over the measure's limit needs the confirmation box
ticked.

Step 3 shows the measure's readings first, then P(cue 1) per target with its interval (hover: counts), the rates
(refusals, unparseable answers, position bias, order consistency) with their intervals, the labour-statistics
scatter (:func:`biastest.measures.chat_twoafc.report.labour_figure`, hover per occupation), the per-target table and
the CSV/JSON downloads, then “Compare with another chat model” (:mod:`.model_compare`: the same questions asked of
another model, compared target by target). Handlers take and return plain values (tests call them directly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from biastest.errors import BiastestError, OptionError
from biastest.measures.chat_twoafc import (
    TEMPLATES,
    TwoAFCChatItems,
    TwoAFCChatOptions,
    TwoAFCChatResult,
    report,
    run_twoafc_chat,
)
from biastest.measures.chat_twoafc import estimate_cost as chat_cost
from biastest.measures.chat_twoafc.templates import CUSTOM, DEFAULT_TEMPLATE, custom_template
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.models.protocols import ChatLM
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import md_escape
from biastest.spec import TwoAFCSpec
from biastest.ui.chat_choice import (
    CHAT_HERE,
    CHAT_WHERE_CHOICES,
    MSG_CONFIRM_NEEDED,
    chat_where_visibility,
    confirmation_needed,
    model_and_endpoint,
)
from biastest.ui.common import (
    inline_failures,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.psychophysics import classifier, curves, model_compare
from biastest.ui.psychophysics.data import female_cue_side
from biastest.ui.psychophysics.state import ACTION_CHAT, MSG_SPEC_FIRST, Section, need_session

__all__ = [
    "ChatRunInputs",
    "MODEL_CHAT",
    "MODEL_CLASSIFIER",
    "MODEL_EMBEDDING",
    "MODEL_KIND_CHOICES",
    "MSG_CHAT_DONE",
    "MSG_COST",
    "MSG_COST_CONFIRM",
    "MSG_COST_NEEDS_MODEL",
    "build_results",
    "build_step2",
    "chat_options",
    "chat_template",
    "chat_view",
    "cost_handler",
    "make_chat_run_handler",
    "model_kind_view",
    "p_cue1_figure",
    "rates_figure",
    "run_chat_core",
    "run_chat_inputs",
    "summary_frame",
    "targets_frame",
    "template_text",
    "wire",
]

MODEL_EMBEDDING = "embedding"
MODEL_CHAT = "chat"
MODEL_CLASSIFIER = "classifier"
MODEL_KIND_CHOICES = [("A word embedding (the cue mixed between two word vectors)", MODEL_EMBEDDING),
                      ("A chat model (asks it questions)", MODEL_CHAT),
                      ("A text classifier (scores sentences that differ only in the cue)", MODEL_CLASSIFIER)]
SEPARATOR = "---"

MSG_CHAT_DONE = ("✅ Asked {model} {requests:,} questions about {n} targets ({parseable:,} answers chose a cue): "
                 "the results are in step 3.")
MSG_CHAT_PARTIAL = "⚠️ Asked {model} about {n} targets, but the run stopped early: {why}"
MSG_COST = "**Before you run:** {text}"
MSG_COST_NEEDS_MODEL = "The cost of the run is shown here once you type the chat model."
MSG_COST_CONFIRM = (
    " The endpoint is hosted and the run asks more than {limit:,} questions: tick the box to confirm the cost."
)
MSG_CHAT_HINT = (
    "For each target the model is asked which cue fits it better, with the two cues in both orders (A/B swapped) "
    "and the samples you set; refusals and answers that cannot be read are counted apart, never given to either "
    "cue. The key is used for this run's requests only: it is never stored, logged or written to the results."
)
RATES = (("P(cue 1)", "p_cue1_rate"), ("refusals", "refusal_rate"), ("unparseable", "unparseable_rate"),
         ("first option chosen (position bias)", "position_bias"), ("same cue in both orders", "order_consistency"))


# ------------------------------------------------------------------ options, template, cost
def template_text(name: Any) -> str:
    """A named template as the editable text (system message, a ``---`` line, user message)."""
    t = TEMPLATES.get(str(name))
    if t is None:
        return ""
    return f"{t.system}\n{SEPARATOR}\n{t.user}" if t.system else t.user


def _template_box(name: Any) -> Any:
    return template_text(name) if name in TEMPLATES else gr.skip()


def chat_template(name: Any, text: Any) -> tuple[str, str | None]:
    """``(template, template_text)``: a named template when the box holds its text unchanged, else the user's own.

    Raises
    ------
    OptionError
        The measure's template messages (:func:`~biastest.measures.chat_twoafc.custom_template`).
    """
    name = str(name or DEFAULT_TEMPLATE)
    text = "" if text is None else str(text)
    if name in TEMPLATES and text.strip() in ("", template_text(name).strip()):
        return name, None
    custom_template(text)
    return CUSTOM, text


def chat_options(spec: TwoAFCSpec, where: Any, model: Any, url: Any, template: Any, text: Any, samples: Any,
                 temperature: Any, seed: Any, *, n_resamples: int | None = None) -> TwoAFCChatOptions:
    """Step 2's chat fields as checked options (every mistake raised with its message before any request).

    The female cue (for the labour-statistics validation) is the specification's recognisably female side (1 when
    neither side is).
    """
    model_id, endpoint = model_and_endpoint(where, model, url)
    name, own = chat_template(template, text)
    values: dict[str, Any] = {"model_id": model_id, "endpoint": endpoint, "template": name, "template_text": own,
                              "seed": option_value("seed", seed), "samples": samples, "temperature": temperature,
                              "female_cue": female_cue_side(spec) or 1}
    if isinstance(samples, float) and samples.is_integer():
        values["samples"] = int(samples)
    if n_resamples is not None:
        values["n_resamples"] = n_resamples
    return TwoAFCChatOptions.parse(values)


def _twoafc_spec(session: Any) -> TwoAFCSpec:
    spec = need_session(session)["spec"]
    if not isinstance(spec, TwoAFCSpec):
        raise OptionError(MSG_SPEC_FIRST)
    return spec


@user_errors
def cost_handler(session, where, model, url, template, text, samples, temperature, seed):
    """The cost line next to the button and whether the confirmation box shows (a mistake is shown in the line)."""
    if not str(model or "").strip():
        return MSG_COST_NEEDS_MODEL, gr.Checkbox(visible=False)
    try:
        spec = _twoafc_spec(session)
        cost = chat_cost(chat_options(spec, where, model, url, template, text, samples, temperature, seed), spec)
    except BiastestError as exc:
        return "⚠️ " + md_escape(exc.message), gr.Checkbox(visible=False)
    line = MSG_COST.format(text=md_escape(cost.text))
    if cost.needs_confirmation:
        line += MSG_COST_CONFIRM.format(limit=cost.limit)
    return line, gr.Checkbox(visible=bool(cost.needs_confirmation))


@user_errors
def model_kind_view(kind):
    """Which of step 2's parts shows: the embedding's options and button, the chat model's or the classifier's."""
    embedding = kind not in (MODEL_CHAT, MODEL_CLASSIFIER)
    return (gr.Column(visible=embedding), gr.Column(visible=kind == MODEL_CHAT),
            gr.Column(visible=kind == MODEL_CLASSIFIER), gr.Button(visible=embedding))


# ------------------------------------------------------------------ the run
@dataclass(frozen=True)
class ChatRunInputs:
    """Step 2's chat model fields for a run: the button's inputs after the session, in the order it passes them.

    ``api_key`` is left out of the record's ``repr``: it goes to the run's requests only.
    """

    where: Any
    model_id: Any
    url: Any
    api_key: Any = field(repr=False)
    template: Any
    text: Any
    samples: Any
    temperature: Any
    seed: Any
    confirmed: Any


def run_chat_core(session: dict[str, Any], *values: Any, progress=None, model: ChatLM | None = None, cache_dir=None,
                  n_resamples: int | None = None) -> dict[str, Any]:
    """:func:`run_chat_inputs` with step 2's values given in the button's order (:class:`ChatRunInputs`' fields)."""
    return run_chat_inputs(session, ChatRunInputs(*values), progress=progress, model=model, cache_dir=cache_dir,
                           n_resamples=n_resamples)


def run_chat_inputs(session: dict[str, Any], inputs: ChatRunInputs, *, progress=None, model: ChatLM | None = None,
                    cache_dir=None, n_resamples: int | None = None) -> dict[str, Any]:
    """Check every field, then ask the chat model; the session with ``chat`` set (the key is not in it).

    Raises
    ------
    BiastestError
        The options' and the measure's messages; :data:`~biastest.ui.chat_choice.MSG_CONFIRM_NEEDED` for a hosted
        endpoint over the limit without the confirmation.
    """
    spec = _twoafc_spec(session)
    options = chat_options(spec, inputs.where, inputs.model_id, inputs.url, inputs.template, inputs.text,
                           inputs.samples, inputs.temperature, inputs.seed, n_resamples=n_resamples)
    cost = chat_cost(options, spec)
    if confirmation_needed(cost, inputs.confirmed):
        raise OptionError(MSG_CONFIRM_NEEDED.format(requests=cost.requests, limit=CONFIRM_ABOVE_REQUESTS))
    key = str(inputs.api_key or "").strip() or None
    result = run_twoafc_chat(options, TwoAFCChatItems(spec), progress=progress, model=model,
                             api_key=key if options.endpoint else None, cache_dir=cache_dir)
    new = dict(session)
    new.update(chat=result, chat_options=options, chat_compare=None, result=None, labour=None, bayes=None,
               posterior=None)
    return new


def _done_message(result: TwoAFCChatResult) -> str:
    name = md_escape(result.served_model or result.model_id)
    if result.stop_message:
        return MSG_CHAT_PARTIAL.format(model=name, n=result.n_targets, why=md_escape(result.stop_message))
    return MSG_CHAT_DONE.format(model=name, requests=result.n_requests, n=result.n_targets,
                                parseable=result.p_cue1_rate.n)


#: Step 3's embedding parts a chat run hides: summary, 2AFC box, WEAT box, CSV, JSON.
EMBEDDING_HIDDEN = ("", gr.update(visible=False), gr.update(visible=False), gr.update(value=None, visible=False),
                    gr.update(value=None, visible=False))


def make_chat_run_handler(stale: tuple, n_chat_outputs: int):
    """The "Ask the chat model" handler; outputs: message, session, tabs, tab 3, :data:`EMBEDDING_HIDDEN`'s five,
    ``stale``'s, then :func:`chat_view`'s. A mistake changes only the message (⚠️ and the measure's message)."""

    @user_errors
    @inline_failures(ACTION_CHAT, 4 + len(EMBEDDING_HIDDEN) + len(stale) + n_chat_outputs, 0)
    def run_handler(session, *values, progress=gr.Progress(), model: ChatLM | None = None, cache_dir=None,
                    n_resamples: int | None = None):
        """Step 2 (chat model) → results: ask, render, unlock the results tab (``values``: :class:`ChatRunInputs`'
        fields in order; the button's event is :func:`_progress_event` of this handler)."""
        try:
            new = run_chat_inputs(session, ChatRunInputs(*values), progress=progress_callback(progress), model=model,
                                  cache_dir=cache_dir, n_resamples=n_resamples)
        except BiastestError as exc:  # the measure's own message, next to the button
            gr.Warning(exc.message.split("\n", 1)[0])
            return ("⚠️ " + md_escape(exc.message),
                    *(gr.skip(),) * (3 + len(EMBEDDING_HIDDEN) + len(stale) + n_chat_outputs))
        tabs, tab3 = unlock_step("results")
        return (_done_message(new["chat"]), new, tabs, tab3, *EMBEDDING_HIDDEN, *stale, *chat_view(new))

    return run_handler


def _progress_event(handler):
    """``handler`` (``(session, *values, progress=…)``) as a button's event calls it: Gradio passes the inputs
    positionally and puts its progress tracker at the index of the parameter whose default is a ``gr.Progress`` (a
    positional one, hence before ``values``). The event keeps the name ``run_handler`` (its API name)."""

    def run_handler(session, progress=gr.Progress(), *values):
        return handler(session, *values, progress=progress)

    return run_handler


# ------------------------------------------------------------------ step 3
def p_cue1_figure(result: TwoAFCChatResult) -> go.Figure:
    """P(cue 1) per target (% of its parseable answers) with its cluster-bootstrap interval; hover gives counts."""
    targets = sorted(result.targets, key=lambda t: -(t.p_cue1_rate.estimate if t.p_cue1_rate.estimate is not None
                                                     else -1.0))
    shown = [t for t in targets if t.p_cue1_rate.estimate is not None]
    y = [hover_safe(t.target) for t in shown]
    x = [t.p_cue1_rate.estimate for t in shown]
    lows = [t.p_cue1.low if t.p_cue1 is not None and t.p_cue1.low is not None else None for t in shown]
    highs = [t.p_cue1.high if t.p_cue1 is not None and t.p_cue1.high is not None else None for t in shown]
    plus = [0 if h is None else h - v for h, v in zip(highs, x, strict=True)]
    minus = [0 if lo is None else v - lo for lo, v in zip(lows, x, strict=True)]
    custom = [[hover_safe(t.target), f"{v:.1f}",
               "no interval" if lo is None else f"{lo:.1f}–{h:.1f}%", t.p_cue1_rate.n,
               t.counts.get("refused", 0), t.counts.get("unparseable", 0)]
              for t, v, lo, h in zip(shown, x, lows, highs, strict=True)]
    cue1 = hover_safe(result.cue1_name)
    fig = go.Figure(go.Scatter(
        x=x, y=y, mode="markers", marker={"size": 9, "color": NEUTRAL}, customdata=custom, name="target",
        error_x={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1},
        hovertemplate=("<b>%{customdata[0]}</b><br>P(" + cue1 + "): %{customdata[1]}% (%{customdata[2]})<br>"
                       "answers that chose: %{customdata[3]}<br>refused: %{customdata[4]} · unparseable: "
                       "%{customdata[5]}<extra></extra>")))
    fig.add_vline(x=50, line_dash="dot", line_color="#94a3b8")
    fig.update_layout(title=f"P({cue1} cue) per target, both orders (50% = no preference)",
                      xaxis_title=f"P({cue1} cue), % of the answers that chose", xaxis_range=[-2, 102],
                      yaxis={"autorange": "reversed"}, font_family=FONT, height=max(320, 22 * len(shown) + 120),
                      margin={"l": 10, "r": 10, "t": 60, "b": 50}, showlegend=False)
    return fig


def rates_figure(result: TwoAFCChatResult) -> go.Figure:
    """The overall rates with their intervals: P(cue 1), refusals, unparseable, position bias, order consistency."""
    rows = [(label, getattr(result, field)) for label, field in RATES]
    rows = [(label, r) for label, r in rows if r.estimate is not None]
    custom = [[label, f"{r.estimate:.1f}", "no interval" if r.low is None else f"{r.low:.1f}–{r.high:.1f}%",
               r.k, r.n] for label, r in rows]
    fig = go.Figure(go.Bar(
        x=[r.estimate for _, r in rows], y=[label for label, _ in rows], orientation="h", marker_color=NEUTRAL,
        error_x={"type": "data", "symmetric": False,
                 "array": [0 if r.high is None else r.high - r.estimate for _, r in rows],
                 "arrayminus": [0 if r.low is None else r.estimate - r.low for _, r in rows]},
        customdata=custom,
        hovertemplate="<b>%{customdata[0]}</b>: %{customdata[1]}% (%{customdata[2]})<br>%{customdata[3]} of "
                      "%{customdata[4]}<extra></extra>"))
    fig.update_layout(title="Refusals, unparseable answers and position effects (with intervals)",
                      xaxis_title="% of answers", xaxis_range=[0, 102], yaxis={"autorange": "reversed"},
                      font_family=FONT, height=320, margin={"l": 10, "r": 10, "t": 60, "b": 50}, showlegend=False)
    return fig


def summary_frame(result: TwoAFCChatResult) -> pd.DataFrame:
    """The overall figures as a table: measure, estimate, interval, counts."""
    rows = [{"measure": r["measure"], "estimate": None if r["estimate"] is None else round(r["estimate"], 3),
             "ci_low": None if r.get("ci_low") is None else round(r["ci_low"], 3),
             "ci_high": None if r.get("ci_high") is None else round(r["ci_high"], 3),
             "interval": r.get("interval"), "n": r.get("n")} for r in report.summary_records(result)]
    return pd.DataFrame(rows, columns=["measure", "estimate", "ci_low", "ci_high", "interval", "n"])


def targets_frame(result: TwoAFCChatResult) -> pd.DataFrame:
    """One row per target (the measure's :func:`~biastest.measures.chat_twoafc.report.target_rows`)."""
    return pd.DataFrame(report.target_rows(result))


def chat_view(session: dict[str, Any]) -> tuple:
    """Values of step 3's chat components for the session's chat result (in the order of ``outputs``)."""
    result: TwoAFCChatResult = session["chat"]
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-twoafc-chat-"))
    readings = "\n\n".join(md_escape(line) for line in report.readings(result))
    spec = session.get("spec")
    labour = result.labour if isinstance(spec, TwoAFCSpec) and female_cue_side(spec) is not None else None
    female = result.cue1_name if result.labour is None or result.labour.female_cue == 1 else result.cue2_name
    labour_plot = (gr.Plot(value=report.labour_figure(labour, female_label=female), visible=True)
                   if labour is not None and labour.used else gr.Plot(value=None, visible=False))
    return (gr.Column(visible=True), readings, p_cue1_figure(result), rates_figure(result), summary_frame(result),
            labour_plot, targets_frame(result), gr.DownloadButton(value=str(csv_path), visible=True),
            gr.DownloadButton(value=str(json_path), visible=True))


# ------------------------------------------------------------------ controls and wiring
def build_step2() -> Section:
    """Step 2's "Which model?" and the chat model's fields (call inside the 2AFC part of step 2)."""
    sec = Section()
    sec.add("kind", gr.Radio(MODEL_KIND_CHOICES, value=MODEL_EMBEDDING, label="Which model?",
                             elem_id="model-kind"), MODEL_EMBEDDING)
    with sec.add("box", gr.Column(visible=False, elem_id="chat-box"), gr.update(visible=False)):
        gr.Markdown(MSG_CHAT_HINT)
        sec.add("where", gr.Radio(CHAT_WHERE_CHOICES, value=CHAT_HERE, label="Where the chat model runs",
                                  elem_id="chat-where"), CHAT_HERE)
        sec.add("model", gr.Textbox(label="Chat model (Hub id or folder; at an endpoint, the name it serves)",
                                    elem_id="chat-model"), "")
        with sec.add("endpoint_box", gr.Column(visible=False), gr.update(visible=False)):
            sec.add("url", gr.Textbox(label="Endpoint address (API root, e.g. https://api.example.com/v1)",
                                      elem_id="chat-url"), "")
            sec.add("key", gr.Textbox(label="Key (this run only; never stored)", type="password",
                                      elem_id="chat-key"), "")
        with gr.Row():
            sec.add("template", gr.Dropdown([(n, n) for n in TEMPLATES] + [("custom (your own text below)", CUSTOM)],
                                            value=DEFAULT_TEMPLATE, label="Question template",
                                            elem_id="chat-template"), DEFAULT_TEMPLATE)
            sec.add("samples", gr.Number(1, precision=0, label="Samples per question and order",
                                         elem_id="chat-samples"), 1)
            sec.add("temperature", gr.Number(0.0, label="Temperature (0: the most likely answer)",
                                             elem_id="chat-temperature"), 0.0)
        sec.add("text", gr.Textbox(template_text(DEFAULT_TEMPLATE), lines=6,
                                   label="Template text (system message, a line ---, then the user message with "
                                         "{target}, {option_a} and {option_b})", elem_id="chat-template-text"),
                template_text(DEFAULT_TEMPLATE))
        sec.add("cost", gr.Markdown("", elem_id="chat-cost"), "")
        sec.add("confirm", gr.Checkbox(False, label="I accept this cost", visible=False, elem_id="chat-confirm"),
                gr.update(value=False, visible=False))
        sec.add("message", gr.Markdown("", elem_id="chat-message"), "")
        sec.run = gr.Button("Ask the chat model →", variant="primary", elem_id="chat-run")
        sec.curves = curves.build_step2()
    sec.classifier = classifier.build_step2()
    return sec


def build_results() -> Section:
    """Step 3's chat-model results (hidden until a chat run); ``sec.outputs`` lists what :func:`chat_view` fills."""
    sec = Section()
    with sec.add("box", gr.Column(visible=False, elem_id="chat-results"), gr.update(visible=False)):
        sec.add("readings", gr.Markdown("", elem_id="chat-readings"), "")
        sec.add("p_plot", gr.Plot(label="P(cue 1) per target", elem_id="chat-p-plot"), None)
        sec.add("rates_plot", gr.Plot(label="Rates", elem_id="chat-rates-plot"), None)
        sec.add("summary_df", gr.Dataframe(label="Overall figures", interactive=False, elem_id="chat-summary"),
                None)
        sec.add("labour_plot", gr.Plot(label="P(female cue) vs labour statistics", visible=False,
                                       elem_id="chat-labour-plot"), gr.update(value=None, visible=False))
        sec.add("targets_df", gr.Dataframe(label="Per target", interactive=False, elem_id="chat-targets"), None)
        with gr.Row():
            sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="chat-download-csv"),
                    gr.update(value=None, visible=False))
            sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="chat-download-json"),
                    gr.update(value=None, visible=False))
        model_compare.build(sec, model_compare.CHAT)
    sec.outputs = [sec.box, sec.readings, sec.p_plot, sec.rates_plot, sec.summary_df, sec.labour_plot,
                   sec.targets_df, sec.csv, sec.json]
    return sec


def wire(sec: Section, session: Any, *, data: Section, results: Section, chat_results: Section, tabs: Any,
         tab3: Any, stale: list[tuple[Any, Any]]) -> None:
    """The model choice, the endpoint boxes, the template, the cost line and the chat run."""
    sec.kind.change(model_kind_view, sec.kind, [data.embedding_box, sec.box, sec.classifier.box, data.run],
                    queue=False)
    sec.where.change(chat_where_visibility, sec.where, sec.endpoint_box, queue=False, show_progress="hidden")
    sec.template.input(_template_box, sec.template, sec.text, queue=False, show_progress="hidden")
    cost_inputs = [session, sec.where, sec.model, sec.url, sec.template, sec.text, sec.samples, sec.temperature,
                   data.seed]
    for control in (sec.kind, sec.where, sec.model, sec.url, sec.template, sec.text, sec.samples, sec.temperature):
        control.change(cost_handler, cost_inputs, [sec.cost, sec.confirm], queue=False, show_progress="hidden")
    sec.run.click(lambda: "", None, sec.message, queue=False, show_progress="hidden").then(
        _progress_event(make_chat_run_handler(tuple(v for _, v in stale), len(chat_results.outputs))),
        [session, sec.where, sec.model, sec.url, sec.key, sec.template, sec.text, sec.samples, sec.temperature,
         data.seed, sec.confirm],
        [sec.message, session, tabs, tab3, results.summary, results.twoafc_box, results.weat_box, results.csv,
         results.json, *(c for c, _ in stale), *chat_results.outputs],
        concurrency_id="chat-model", concurrency_limit=1,
    )
    model_compare.wire(chat_results, session, model_compare.CHAT, clear_on=[sec.run])

