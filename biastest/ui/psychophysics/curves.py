"""Psychometric curves of a chat model in the word-embedding app (the ``psychometric-chat`` measure).

Under step 2's chat model (:mod:`.chat`: the same model, address, key, samples, temperature and seed), a section
asks the model which cue each stimulus of a continuum is — built in: first names placed by the share of women with
the name (α = 0 … 1); or the user's CSV ``stimulus,alpha[,group]`` — in every context the user types (one sentence a
line, ``{stimulus}`` where the stimulus goes), both orders. The measure fits one curve per context with a guess/lapse
rate and reports the PSE and JND per context and the PSE shift from the first context, with bootstrap intervals.
The cost is shown before the run; a hosted endpoint over the limit needs the confirmation.

Step 3 shows the readings first, the curves in one figure with hover (the measure's
:func:`~biastest.measures.psychometric_chat.report.curves_figure`), the PSE/JND/shift table and the CSV/JSON, then
“Compare with another chat model” (:mod:`.model_compare`: PSE per context and the difference of shifts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import pandas as pd

from biastest import public
from biastest.continuum import load_continuum_csv, name_continuum
from biastest.errors import BiastestError, OptionError
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.psychometric_chat import (
    PsychometricChatOptions,
    PsychometricChatResult,
    PsychometricItems,
    estimate_cost,
    report,
    run_psychometric_chat,
)
from biastest.measures.psychometric_chat.templates import DEFAULT_CONTEXTS, DEFAULT_CUES
from biastest.models.protocols import ChatLM
from biastest.report.text import md_escape
from biastest.ui.chat_choice import MSG_CONFIRM_NEEDED, confirmation_needed, model_and_endpoint
from biastest.ui.common import (
    inline_failures,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.psychophysics import model_compare
from biastest.ui.psychophysics.state import ACTION_CURVES, Section, file_path, need_session

__all__ = [
    "CONTINUUM_NAMES",
    "CONTINUUM_UPLOAD",
    "CurvesInputs",
    "MSG_CURVES_DONE",
    "MSG_NO_CONTINUUM_FILE",
    "build_results",
    "build_step2",
    "curves_cost_handler",
    "curves_options",
    "curves_view",
    "make_curves_run_handler",
    "run_curves_core",
    "run_curves_inputs",
    "table_frame",
    "wire",
]

CONTINUUM_NAMES = "names"
CONTINUUM_UPLOAD = "upload"
MSG_NO_CONTINUUM_FILE = "Upload a continuum CSV (columns stimulus,alpha[,group]), or choose the built-in names."
MSG_CURVES_DONE = "✅ Asked {model} {requests:,} questions ({contexts} contexts × {stimuli:,} stimuli × 2 orders): " \
                  "the curves are in step 3."
MSG_CURVES_PARTIAL = "⚠️ Asked {model}, but the run stopped early: {why}"
MSG_CURVES_COST = "**Before you run:** {text}"
MSG_CURVES_HINT = (
    "The chat model above is asked, for every stimulus of a continuum with a known α and in every context, which "
    "cue the stimulus is (both orders). One psychometric curve per context (with a guess/lapse rate for the "
    "model's position habit) gives the PSE, the JND and the PSE shift from the first context, with intervals."
)
TABLE_COLUMNS = ["context", "fit_status", "pse", "pse_low", "pse_high", "jnd", "jnd_low", "jnd_high", "pse_shift",
                 "shift_low", "shift_high", "guess_lapse", "refusal_pct", "unparseable_pct", "first_position_pct"]


def _contexts(text: Any) -> list[str]:
    return [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]


def curves_options(where: Any, model: Any, url: Any, contexts: Any, cues: Any, source: Any, upload: Any,
                   samples: Any, temperature: Any, seed: Any, n_bootstrap: Any) -> PsychometricChatOptions:
    """The section's fields (and the chat model's) as checked options; the measure's messages on a mistake."""
    model_id, endpoint = model_and_endpoint(where, model, url)
    continuum = None
    if source == CONTINUUM_UPLOAD:
        continuum = file_path(upload)
        if not continuum:
            raise OptionError(MSG_NO_CONTINUUM_FILE)
        public.check_upload([continuum])
    values: dict[str, Any] = {"model_id": model_id, "endpoint": endpoint, "contexts": _contexts(contexts),
                              "cues": str(cues or "").strip(), "continuum": continuum,
                              "seed": option_value("seed", seed), "samples": samples, "temperature": temperature,
                              "n_bootstrap": n_bootstrap}
    for k in ("samples", "n_bootstrap"):
        if isinstance(values[k], float) and values[k].is_integer():
            values[k] = int(values[k])
    return PsychometricChatOptions.parse(values)


def _continuum(options: PsychometricChatOptions):
    return load_continuum_csv(options.continuum) if options.continuum else name_continuum()


@user_errors
def curves_cost_handler(session, where, model, url, contexts, cues, source, upload, samples, temperature, seed,
                        n_bootstrap):
    """The section's cost line and whether its confirmation box shows (a mistake is shown in the line)."""
    if not str(model or "").strip():
        return "", gr.Checkbox(visible=False)
    try:
        options = curves_options(where, model, url, contexts, cues, source, upload, samples, temperature, seed,
                                 n_bootstrap)
        cost = estimate_cost(options, _continuum(options))
    except BiastestError as exc:
        return "⚠️ " + md_escape(exc.message), gr.Checkbox(visible=False)
    return MSG_CURVES_COST.format(text=md_escape(cost.text)), gr.Checkbox(visible=bool(cost.needs_confirmation))


@dataclass(frozen=True)
class CurvesInputs:
    """The fields of a curves run: the button's inputs after the session, in the order it passes them.

    ``api_key`` is left out of the record's ``repr``: it goes to the run's requests only.
    """

    where: Any
    model_id: Any
    url: Any
    api_key: Any = field(repr=False)
    contexts: Any
    cues: Any
    source: Any
    upload: Any
    samples: Any
    temperature: Any
    seed: Any
    n_bootstrap: Any
    confirmed: Any


def run_curves_core(session: dict[str, Any], *values: Any, progress=None, model: ChatLM | None = None,
                    cache_dir=None) -> dict[str, Any]:
    """:func:`run_curves_inputs` with the values given in the button's order (:class:`CurvesInputs`' fields)."""
    return run_curves_inputs(session, CurvesInputs(*values), progress=progress, model=model, cache_dir=cache_dir)


def run_curves_inputs(session: dict[str, Any], inputs: CurvesInputs, *, progress=None, model: ChatLM | None = None,
                      cache_dir=None) -> dict[str, Any]:
    """Check every field, ask the chat model, fit the curves; the session with ``curves`` set (no key in it)."""
    session = need_session(session)
    options = curves_options(inputs.where, inputs.model_id, inputs.url, inputs.contexts, inputs.cues, inputs.source,
                             inputs.upload, inputs.samples, inputs.temperature, inputs.seed, inputs.n_bootstrap)
    continuum = _continuum(options)
    cost = estimate_cost(options, continuum)
    if confirmation_needed(cost, inputs.confirmed):
        raise OptionError(MSG_CONFIRM_NEEDED.format(requests=cost.requests, limit=CONFIRM_ABOVE_REQUESTS))
    key = str(inputs.api_key or "").strip() or None
    result = run_psychometric_chat(options, PsychometricItems(continuum, session["spec"]), progress=progress,
                                   model=model, api_key=key if options.endpoint else None, cache_dir=cache_dir)
    return {**session, "curves": result, "curves_options": options, "curves_continuum": continuum,
            "curves_compare": None}


def _done(result: PsychometricChatResult) -> str:
    name = md_escape(result.model_id)
    if result.stop_message:
        return MSG_CURVES_PARTIAL.format(model=name, why=md_escape(result.stop_message))
    return MSG_CURVES_DONE.format(model=name, requests=result.n_requests, contexts=len(result.summaries),
                                  stimuli=len(result.continuum["stimuli"]))


def make_curves_run_handler(n_outputs: int):
    """The "Fit the curves" handler; outputs: message, session, tabs, tab 3, then :func:`curves_view`'s
    ``n_outputs``."""

    @user_errors
    @inline_failures(ACTION_CURVES, 4 + n_outputs, 0)
    def run_handler(session, *values, progress=gr.Progress(), model: ChatLM | None = None, cache_dir=None):
        """Ask, fit and show the curves in step 3 (a mistake: the measure's message next to the button).

        ``values``: :class:`CurvesInputs`' fields in order; the button's event is :func:`_progress_event` of this
        handler."""
        try:
            new = run_curves_inputs(session, CurvesInputs(*values), progress=progress_callback(progress), model=model,
                                    cache_dir=cache_dir)
        except BiastestError as exc:
            gr.Warning(exc.message.split("\n", 1)[0])
            return ("⚠️ " + md_escape(exc.message), *(gr.skip(),) * (3 + n_outputs))
        tabs, tab3 = unlock_step("results")
        return (_done(new["curves"]), new, tabs, tab3, *curves_view(new))

    return run_handler


def _progress_event(handler):
    """``handler`` (``(session, *values, progress=…)``) as a button's event calls it: Gradio passes the inputs
    positionally and puts its progress tracker at the index of the parameter whose default is a ``gr.Progress`` (a
    positional one, hence before ``values``). The event keeps the name ``run_handler`` (its API name)."""

    def run_handler(session, progress=gr.Progress(), *values):
        return handler(session, *values, progress=progress)

    return run_handler


def table_frame(result: PsychometricChatResult) -> pd.DataFrame:
    """PSE, JND and shift per context with their intervals, the fit's status and the rates."""
    rows = report.summary_records(result)
    frame = pd.DataFrame(rows)
    return frame[[c for c in TABLE_COLUMNS if c in frame.columns]].round(3)


def curves_view(session: dict[str, Any]) -> tuple:
    """Step 3's curve components for the session's psychometric result (box, readings, figure, table, CSV, JSON)."""
    result: PsychometricChatResult = session["curves"]
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-psychometric-chat-"))
    readings = "\n\n".join(md_escape(line) for line in report.readings(result))
    return (gr.Column(visible=True), readings, report.curves_figure(result), table_frame(result),
            gr.DownloadButton(value=str(csv_path), visible=True), gr.DownloadButton(value=str(json_path), visible=True))


# ------------------------------------------------------------------ controls and wiring
def build_step2() -> Section:
    """The section's controls (call inside the chat model's part of step 2)."""
    sec = Section()
    with gr.Accordion("Psychometric curves of this chat model (a continuum of names, several contexts)", open=False,
                      elem_id="curves-section"):
        gr.Markdown(MSG_CURVES_HINT)
        sec.add("contexts", gr.Textbox("\n".join(DEFAULT_CONTEXTS), lines=3, elem_id="curves-contexts",
                                       label="Contexts, one a line ({stimulus} where the name goes)"),
                "\n".join(DEFAULT_CONTEXTS))
        with gr.Row():
            sec.add("cues", gr.Textbox("/".join(DEFAULT_CUES), label="Cues: the answer at α = 0 / at α = 1",
                                       elem_id="curves-cues"), "/".join(DEFAULT_CUES))
            sec.add("n_boot", gr.Number(1000, precision=0, label="Bootstrap fits per context",
                                        elem_id="curves-bootstrap"), 1000)
        sec.add("source", gr.Radio([("Built-in first names (α = share of women with the name, US SSA)",
                                     CONTINUUM_NAMES), ("A continuum CSV that you upload", CONTINUUM_UPLOAD)],
                                   value=CONTINUUM_NAMES, label="Stimulus continuum", elem_id="curves-source"),
                CONTINUUM_NAMES)
        sec.add("upload", gr.File(label="Continuum CSV (stimulus,alpha[,group])", file_types=[".csv"],
                                  visible=False, elem_id="curves-upload"), gr.update(value=None, visible=False))
        sec.add("cost", gr.Markdown("", elem_id="curves-cost"), "")
        sec.add("confirm", gr.Checkbox(False, label="I accept this cost", visible=False, elem_id="curves-confirm"),
                gr.update(value=False, visible=False))
        sec.add("message", gr.Markdown("", elem_id="curves-message"), "")
        sec.run = gr.Button("Fit the curves →", variant="primary", elem_id="curves-run")
    return sec


def build_results() -> Section:
    """Step 3's curves (hidden until a run); ``sec.outputs`` lists what :func:`curves_view` fills."""
    sec = Section()
    with sec.add("box", gr.Column(visible=False, elem_id="curves-results"), gr.update(visible=False)):
        sec.add("readings", gr.Markdown("", elem_id="curves-readings"), "")
        sec.add("plot", gr.Plot(label="Psychometric curves per context", elem_id="curves-plot"), None)
        sec.add("table", gr.Dataframe(label="PSE, JND and shift per context", interactive=False,
                                      elem_id="curves-table"), None)
        with gr.Row():
            sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="curves-download-csv"),
                    gr.update(value=None, visible=False))
            sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="curves-download-json"),
                    gr.update(value=None, visible=False))
        model_compare.build(sec, model_compare.CURVES)
    sec.outputs = [sec.box, sec.readings, sec.plot, sec.table, sec.csv, sec.json]
    return sec


def wire(sec: Section, session: Any, *, chat: Section, seed: Any, curve_results: Section, tabs: Any,
         tab3: Any) -> None:
    """The continuum choice, the cost line and the run (with the chat model's fields of ``chat``)."""
    sec.source.input(lambda s: gr.File(visible=s == CONTINUUM_UPLOAD), sec.source, sec.upload, queue=False,
                     show_progress="hidden")
    cost_inputs = [session, chat.where, chat.model, chat.url, sec.contexts, sec.cues, sec.source, sec.upload,
                   chat.samples, chat.temperature, seed, sec.n_boot]
    for control in (sec.contexts, sec.cues, sec.source, sec.n_boot, chat.model, chat.url, chat.samples):
        control.change(curves_cost_handler, cost_inputs, [sec.cost, sec.confirm], queue=False, show_progress="hidden")
    sec.upload.upload(curves_cost_handler, cost_inputs, [sec.cost, sec.confirm], queue=False, show_progress="hidden")
    sec.run.click(lambda: "", None, sec.message, queue=False, show_progress="hidden").then(
        _progress_event(make_curves_run_handler(len(curve_results.outputs))),
        [session, chat.where, chat.model, chat.url, chat.key, sec.contexts, sec.cues, sec.source, sec.upload,
         chat.samples, chat.temperature, seed, sec.n_boot, sec.confirm],
        [sec.message, session, tabs, tab3, *curve_results.outputs],
        concurrency_id="chat-model", concurrency_limit=1,
    )
    model_compare.wire(curve_results, session, model_compare.CURVES, clear_on=[sec.run])


