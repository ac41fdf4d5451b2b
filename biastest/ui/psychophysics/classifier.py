"""A text classifier as the 2AFC's model in the word-embedding app (the ``twoafc-classifier`` measure).

Step 2's "Which model?" → a text classifier: a Hugging Face text-classification model in this process (a Hub id or
folder) or one behind an HTTP endpoint that answers label scores (its full address; a key for this run only). For
each target of the 2AFC specification and each cue pair, sentences that differ only in the cue ("The woman is a
nurse." / "The man is a nurse.", several neutral templates) are scored by the classifier's label (typed, or the one
called positive); which sentence scores higher is the 2AFC outcome. Step 3 shows the headline, P(cue 1) per target
with intervals and hover, the labour-statistics scatter (when one cue side is female), the per-target and summary
tables, the CSV/JSON, and "Compare with another classifier" (paired per target, the house's comparison).
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import BiastestError, OptionError
from biastest.measures.classifier_twoafc import (
    TwoAFCClassifierItems,
    TwoAFCClassifierOptions,
    TwoAFCClassifierResult,
    compare_twoafc_classifier,
    report,
    run_twoafc_classifier,
)
from biastest.measures.labour import DEFAULT_TABLE, LABOUR_TABLES
from biastest.models.protocols import TextClassifier
from biastest.report import compare as rep
from biastest.report.text import md_escape
from biastest.spec import TwoAFCSpec
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, chat_where_visibility, model_and_endpoint
from biastest.ui.common import (
    inline_failures,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.psychophysics.data import female_cue_side
from biastest.ui.psychophysics.state import ACTION_CLASSIFIER, MSG_SPEC_FIRST, Section, need_session

__all__ = [
    "MSG_CLASSIFIER_DONE",
    "MSG_COMPARE_FIRST",
    "TABLE_CHOICES",
    "WHERE_CHOICES",
    "build_results",
    "build_step2",
    "classifier_options",
    "classifier_view",
    "compare_view",
    "make_classifier_run_handler",
    "make_compare_handler",
    "run_classifier_core",
    "table_frame",
    "wire",
]

WHERE_CHOICES = [("A text-classification model on this server (Hub id or folder)", CHAT_HERE),
                 ("A classifier behind an HTTP endpoint that answers label scores", CHAT_ENDPOINT)]
TABLE_CHOICES = [(t.label, name) for name, t in LABOUR_TABLES.items()]
MSG_CLASSIFIER_DONE = "✅ {headline} The results are in step 3."
MSG_COMPARE_DONE = "✅ {n} classifiers compared on the same {targets} targets."
MSG_COMPARE_FIRST = "Score with a classifier in step 2 first; then add another one here to compare them."
MSG_CLASSIFIER_HINT = (
    "For each target and cue pair, two sentences that differ only in the cue ('The woman is a nurse.' / 'The man is "
    "a nurse.', several neutral templates) are scored by the classifier's label; the sentence with the higher score "
    "wins. The result is P(first cue wins | target) with intervals clustered by cue pair, ties counted apart, and "
    "its correlation with the share of women in each occupation."
)
COMPARE_HELP = (
    "Score the **same sentences** with another classifier and compare them target by target: the difference of their "
    "mean P(first cue wins), with a paired bootstrap interval over the targets both decided, and a sign test."
)


def classifier_options(where: Any, model: Any, url: Any, label: Any, seed: Any, *, table: Any = DEFAULT_TABLE,
                       female_cue: int = 1, n_resamples: int | None = None) -> TwoAFCClassifierOptions:
    """Step 2's classifier fields as checked options (the measure's messages on a mistake)."""
    model_id, endpoint = model_and_endpoint(where, model, url)
    values: dict[str, Any] = {"model_id": model_id, "endpoint": endpoint, "label": str(label or "").strip() or None,
                              "seed": option_value("seed", seed), "labour_table": table or DEFAULT_TABLE,
                              "female_cue": female_cue}
    if n_resamples is not None:
        values["n_resamples"] = n_resamples
    return TwoAFCClassifierOptions.parse(values)


def _score(spec: TwoAFCSpec, where: Any, model_id: Any, url: Any, api_key: Any, label: Any, seed: Any, table: Any, *,
           progress=None, model: TextClassifier | None = None, n_resamples: int | None = None
           ) -> TwoAFCClassifierResult:
    options = classifier_options(where, model_id, url, label, seed, table=table,
                                 female_cue=female_cue_side(spec) or 1, n_resamples=n_resamples)
    key = str(api_key or "").strip() or None
    return run_twoafc_classifier(options, TwoAFCClassifierItems(spec), progress=progress, model=model,
                                 api_key=key if options.endpoint else None)


def run_classifier_core(session: dict[str, Any], where: Any, model_id: Any, url: Any, api_key: Any, label: Any,
                        seed: Any, table: Any = DEFAULT_TABLE, *, progress=None, model: TextClassifier | None = None,
                        n_resamples: int | None = None) -> dict[str, Any]:
    """Check the fields, score the sentences; the session with ``classifier`` set (the key is not in it) and any
    earlier comparison dropped (it described another run)."""
    spec = need_session(session)["spec"]
    if not isinstance(spec, TwoAFCSpec):
        raise OptionError(MSG_SPEC_FIRST)
    result = _score(spec, where, model_id, url, api_key, label, seed, table, progress=progress, model=model,
                    n_resamples=n_resamples)
    return {**session, "classifier": result, "classifier_compare": []}


def make_classifier_run_handler(n_outputs: int):
    """The "Score with the classifier" handler; outputs: message, session, tabs, tab 3, :func:`classifier_view`'s."""

    @user_errors
    @inline_failures(ACTION_CLASSIFIER, 4 + n_outputs, 0)
    def run_handler(session, where, model_id, url, api_key, label, seed, table=DEFAULT_TABLE, progress=gr.Progress(),
                    *, model: TextClassifier | None = None, n_resamples: int | None = None):
        """Score, show the result in step 3 (a mistake: the measure's message next to the button)."""
        try:
            new = run_classifier_core(session, where, model_id, url, api_key, label, seed, table,
                                      progress=progress_callback(progress), model=model, n_resamples=n_resamples)
        except BiastestError as exc:
            gr.Warning(exc.message.split("\n", 1)[0])
            return ("⚠️ " + md_escape(exc.message), *(gr.skip(),) * (3 + n_outputs))
        tabs, tab3 = unlock_step("results")
        message = MSG_CLASSIFIER_DONE.format(headline=md_escape(report.headline(new["classifier"])))
        return (message, new, tabs, tab3, *classifier_view(new))

    return run_handler


def table_frame(result: TwoAFCClassifierResult) -> pd.DataFrame:
    """The measure's summary rows (overall, per cue pair, per template, the correlation) as a table."""
    return pd.DataFrame(report.summary_rows(result))


def _labour_plot(result: TwoAFCClassifierResult, spec: Any):
    lab = result.labour
    if lab is None or not lab.used or not isinstance(spec, TwoAFCSpec) or female_cue_side(spec) is None:
        return gr.Plot(value=None, visible=False)
    female = result.cue1_name if lab.female_cue == 1 else result.cue2_name
    return gr.Plot(value=report.labour_figure(lab, female_label=female), visible=True)


def classifier_view(session: dict[str, Any]) -> tuple:
    """Step 3's classifier components: box, headline, per-target figure, labour scatter, summary table, per-target
    table, CSV, JSON, and the comparison's outputs emptied."""
    result: TwoAFCClassifierResult = session["classifier"]
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-twoafc-classifier-"))
    return (gr.Column(visible=True), md_escape(report.reading(result)), report.targets_figure(result),
            _labour_plot(result, session.get("spec")), table_frame(result), pd.DataFrame(report.target_rows(result)),
            gr.DownloadButton(value=str(csv_path), visible=True), gr.DownloadButton(value=str(json_path), visible=True),
            *_empty_compare())


# ------------------------------------------------------------------ compare with another classifier
def _empty_compare() -> tuple:
    return ("", None, "", None, *(gr.update(value=None, visible=False),) * 3)


def compare_view(session: dict[str, Any], *, seed: int, n_resamples: int = 2000) -> tuple:
    """The comparison of the session's classifier with every one added: summary, forest, reading, pairs, downloads."""
    results = [session["classifier"], *session.get("classifier_compare", [])]
    cmp = compare_twoafc_classifier(results, seed=seed, n_resamples=n_resamples,
                                    labels=[f"{r.model_id} ({r.label})" for r in results])
    rows = [{"model": r.model_id, **row} for r in results for row in report.target_rows(r)]
    items_csv, json_path, cmp_csv = rep.comparison_exports(
        cmp, item_rows=rows, results=[r.to_dict() for r in results],
        directory=session_export_dir("biastest-compare-classifiers-"), app="psychophysics")
    return (rep.summary_markdown(cmp), rep.forest_figure(cmp), rep.reading_markdown(cmp), rep.pairwise_frame(cmp),
            gr.update(value=str(items_csv), visible=True), gr.update(value=str(json_path), visible=True),
            gr.update(value=str(cmp_csv), visible=True))


def make_compare_handler():
    """The "Add this classifier to the comparison" handler: the same design, another classifier, the same seed.

    Outputs: session, message, then :func:`compare_view`'s seven.
    """

    @user_errors
    def add_handler(session, where, model_id, url, api_key, label, seed, table=DEFAULT_TABLE,
                    progress=gr.Progress(), *, model: TextClassifier | None = None, n_resamples: int | None = None):
        """Score the same sentences with the other classifier; compare (a mistake: its message, nothing else)."""
        first = (session or {}).get("classifier")
        if first is None:
            return (gr.skip(), "⚠️ " + md_escape(MSG_COMPARE_FIRST), *(gr.skip(),) * 7)
        try:
            spec = need_session(session)["spec"]
            other = _score(spec, where, model_id, url, api_key, label, seed, table,
                           progress=progress_callback(progress), model=model, n_resamples=n_resamples)
            new = {**session, "classifier_compare": [*session.get("classifier_compare", []), other]}
            view = compare_view(new, seed=first.seed, n_resamples=n_resamples or 2000)
        except BiastestError as exc:
            gr.Warning(exc.message.split("\n", 1)[0])
            return (gr.skip(), "⚠️ " + md_escape(exc.message), *(gr.skip(),) * 7)
        message = MSG_COMPARE_DONE.format(n=1 + len(new["classifier_compare"]), targets=first.n_targets)
        return (new, message, *view)

    return add_handler


# ------------------------------------------------------------------ controls and wiring
def _model_fields(sec: Section, prefix: str) -> None:
    sec.add("where", gr.Radio(WHERE_CHOICES, value=CHAT_HERE, label="Where the classifier runs",
                              elem_id=f"{prefix}-where"), CHAT_HERE)
    sec.add("model", gr.Textbox(label="Classifier (Hub id or folder; at an endpoint, a name for it)",
                                elem_id=f"{prefix}-model"), "")
    with sec.add("endpoint_box", gr.Column(visible=False), gr.update(visible=False)):
        sec.add("url", gr.Textbox(label="Endpoint address (the full URL that takes POST {\"inputs\": [...]})",
                                  elem_id=f"{prefix}-url"), "")
        sec.add("key", gr.Textbox(label="Key (this run only; never stored)", type="password",
                                  elem_id=f"{prefix}-key"), "")
    sec.add("positive", gr.Textbox(label="Label read as the score (empty: the label called positive or pos; a gender "
                                         "or zero-shot classifier's label, e.g. female)",
                                   elem_id=f"{prefix}-positive"), "")


def build_step2() -> Section:
    """Step 2's classifier fields (hidden until "A text classifier" is chosen)."""
    sec = Section()
    with sec.add("box", gr.Column(visible=False, elem_id="classifier-box"), gr.update(visible=False)):
        gr.Markdown(MSG_CLASSIFIER_HINT)
        _model_fields(sec, "classifier")
        sec.add("table", gr.Dropdown(TABLE_CHOICES, value=DEFAULT_TABLE, label="Labour statistics to validate against",
                                     elem_id="classifier-table-choice"), DEFAULT_TABLE)
        sec.add("message", gr.Markdown("", elem_id="classifier-message"), "")
        sec.run = gr.Button("Score with the classifier →", variant="primary", elem_id="classifier-run")
    return sec


def build_results() -> Section:
    """Step 3's classifier results and its comparison (hidden until a run)."""
    sec = Section()
    with sec.add("result_box", gr.Column(visible=False, elem_id="classifier-results"), gr.update(visible=False)):
        sec.add("headline", gr.Markdown("", elem_id="classifier-headline"), "")
        sec.add("targets_plot", gr.Plot(label="P(first cue wins) per target (hover for details)",
                                        elem_id="classifier-targets-plot"), None)
        sec.add("labour_plot", gr.Plot(label="Against labour statistics", visible=False,
                                       elem_id="classifier-labour-plot"), gr.update(value=None, visible=False))
        sec.add("table", gr.Dataframe(label="Overall, per cue pair, per template, and the correlation",
                                      interactive=False, elem_id="classifier-table"), None)
        sec.add("targets_table", gr.Dataframe(label="Per target", interactive=False,
                                              elem_id="classifier-targets-table"), None)
        with gr.Row():
            sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="classifier-download-csv"),
                    gr.update(value=None, visible=False))
            sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="classifier-download-json"),
                    gr.update(value=None, visible=False))
        with gr.Accordion("Compare with another classifier", open=False, elem_id="classifier-compare"):
            gr.Markdown(COMPARE_HELP, elem_classes=["bt-hint"])
            other = Section()
            _model_fields(other, "classifier-compare")
            sec.compare_inputs = other
            for name, (component, value) in zip(("c_where", "c_model", "c_endpoint_box", "c_url", "c_key",
                                                 "c_positive"), other.resets(), strict=True):
                sec.add(name, component, value)
            sec.compare_add = gr.Button("Add this classifier to the comparison", variant="primary",
                                        elem_id="classifier-compare-add")
            sec.add("c_message", gr.Markdown("", elem_id="classifier-compare-message"), "")
            sec.add("c_summary", gr.Markdown("", elem_id="classifier-compare-summary"), "")
            sec.add("c_forest", gr.Plot(label="Every classifier on the same targets (hover for details)",
                                        elem_id="classifier-compare-forest"), None)
            sec.add("c_reading", gr.Markdown("", elem_id="classifier-compare-reading"), "")
            sec.add("c_pairs", gr.Dataframe(label="Every pair of classifiers", interactive=False,
                                            elem_id="classifier-compare-table"), None)
            with gr.Row():
                for name, label in (("c_items", "Download every classifier's targets (CSV)"),
                                    ("c_json", "Download every result and the comparison (JSON)"),
                                    ("c_cmp", "Download the comparison (CSV)")):
                    sec.add(name, gr.DownloadButton(label, visible=False, elem_id=f"classifier-compare-{name[2:]}"),
                            gr.update(value=None, visible=False))
    sec.compare_outputs = [sec.c_summary, sec.c_forest, sec.c_reading, sec.c_pairs, sec.c_items, sec.c_json,
                           sec.c_cmp]
    sec.outputs = [sec.result_box, sec.headline, sec.targets_plot, sec.labour_plot, sec.table, sec.targets_table,
                   sec.csv, sec.json, *sec.compare_outputs]
    return sec


def wire(sec: Section, session: Any, *, seed: Any, results: Section, tabs: Any, tab3: Any) -> None:
    """The endpoint boxes, the run and the comparison."""
    sec.where.change(chat_where_visibility, sec.where, sec.endpoint_box, queue=False, show_progress="hidden")
    sec.run.click(lambda: "", None, sec.message, queue=False, show_progress="hidden").then(
        make_classifier_run_handler(len(results.outputs)),
        [session, sec.where, sec.model, sec.url, sec.key, sec.positive, seed, sec.table],
        [sec.message, session, tabs, tab3, *results.outputs],
        concurrency_id="text-classifier", concurrency_limit=1,
    )
    other = results.compare_inputs
    other.where.change(chat_where_visibility, other.where, other.endpoint_box, queue=False, show_progress="hidden")
    results.compare_add.click(
        make_compare_handler(),
        [session, other.where, other.model, other.url, other.key, other.positive, seed, sec.table],
        [session, results.c_message, *results.compare_outputs],
        concurrency_id="text-classifier", concurrency_limit=1, show_progress_on=[results.c_message],
    )
