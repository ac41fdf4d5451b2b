"""A text classifier as the 2AFC's model in the word-embedding app (the ``classifier-2afc`` measure).

Step 2's "Which model?" → a text classifier: a Hugging Face text-classification model in this process (a Hub id or
folder) or one behind an HTTP endpoint that answers label scores (its full address; a key for this run only). Its
two groups are the 2AFC specification's cue sides (the first cue of every pair, e.g. *woman*, *she*, against the
second); the measure fills its shipped templates ("{person} feels {word}.") with the shipped emotion words and each
pair of group terms in the same position, and asks which of two sentences that differ only in the group term the
classifier scores as more positive (the positive label: typed, or the label called positive). Step 3 shows the
measure's headline, the per-template, term-pair, word and emotion table, and the CSV/JSON.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import BiastestError, OptionError
from biastest.measures.classifier_2afc import (
    Classifier2AFCItems,
    Classifier2AFCOptions,
    Classifier2AFCResult,
    report,
    run_classifier_2afc,
)
from biastest.measures.classifier_2afc.templates import emotion_words
from biastest.models.protocols import TextClassifier
from biastest.report.text import md_escape
from biastest.spec import BiasSpec, TwoAFCSpec
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, chat_where_visibility, model_and_endpoint
from biastest.ui.common import inline_failures, option_value, progress_callback, unlock_step, user_errors
from biastest.ui.psychophysics.state import ACTION_CLASSIFIER, MSG_SPEC_FIRST, Section, need_session

__all__ = [
    "MSG_CLASSIFIER_DONE",
    "WHERE_CHOICES",
    "bias_spec_of",
    "build_results",
    "build_step2",
    "classifier_options",
    "classifier_view",
    "make_classifier_run_handler",
    "run_classifier_core",
    "table_frame",
    "wire",
]

WHERE_CHOICES = [("A text-classification model on this server (Hub id or folder)", CHAT_HERE),
                 ("A classifier behind an HTTP endpoint that answers label scores", CHAT_ENDPOINT)]
MSG_CLASSIFIER_DONE = "✅ {headline} The results are in step 3."
MSG_CLASSIFIER_HINT = (
    "Sentences that differ only in the group term (the first cue of each pair against the second, e.g. "
    "'woman feels happy.' / 'man feels happy.') are scored by the classifier; the result is the share of pairs in "
    "which the first cue's sentence scores higher, and the paired difference, with intervals clustered by template."
)


def bias_spec_of(spec: TwoAFCSpec) -> BiasSpec:
    """The bias specification the measure asks about: the cue sides as the two groups (emotion words recorded as
    its attributes: the sentences' words)."""
    words = emotion_words()
    joy = tuple(w for e, w in words if e == "joy")
    other = tuple(w for e, w in words if e != "joy")
    return BiasSpec(name=f"{spec.name} (cue sides as groups)",
                    social_groups=((spec.cue1_name, tuple(p[0] for p in spec.cue_pairs)),
                                   (spec.cue2_name, tuple(p[1] for p in spec.cue_pairs))),
                    attributes=(("joy", joy), ("other emotions", other)))


def classifier_options(where: Any, model: Any, url: Any, positive: Any, seed: Any, *,
                       n_resamples: int | None = None) -> Classifier2AFCOptions:
    """Step 2's classifier fields as checked options (the measure's messages on a mistake)."""
    model_id, endpoint = model_and_endpoint(where, model, url)
    values: dict[str, Any] = {"model_id": model_id, "endpoint": endpoint,
                              "positive_label": str(positive or "").strip() or None,
                              "seed": option_value("seed", seed)}
    if n_resamples is not None:
        values.update(n_resamples=n_resamples, n_permutations=n_resamples)
    return Classifier2AFCOptions.parse(values)


def run_classifier_core(session: dict[str, Any], where: Any, model_id: Any, url: Any, api_key: Any, positive: Any,
                        seed: Any, *, progress=None, model: TextClassifier | None = None,
                        n_resamples: int | None = None) -> dict[str, Any]:
    """Check the fields, score the pairs; the session with ``classifier`` set (the key is not in it)."""
    spec = need_session(session)["spec"]
    if not isinstance(spec, TwoAFCSpec):
        raise OptionError(MSG_SPEC_FIRST)
    options = classifier_options(where, model_id, url, positive, seed, n_resamples=n_resamples)
    key = str(api_key or "").strip() or None
    result = run_classifier_2afc(options, Classifier2AFCItems(bias_spec_of(spec)), progress=progress, model=model,
                                 api_key=key if options.endpoint else None)
    return {**session, "classifier": result}


def make_classifier_run_handler(n_outputs: int):
    """The "Score with the classifier" handler; outputs: message, session, tabs, tab 3, :func:`classifier_view`'s."""

    @user_errors
    @inline_failures(ACTION_CLASSIFIER, 4 + n_outputs, 0)
    def run_handler(session, where, model_id, url, api_key, positive, seed, progress=gr.Progress(), *,
                    model: TextClassifier | None = None, n_resamples: int | None = None):
        """Score, show the result in step 3 (a mistake: the measure's message next to the button)."""
        try:
            new = run_classifier_core(session, where, model_id, url, api_key, positive, seed,
                                      progress=progress_callback(progress), model=model, n_resamples=n_resamples)
        except BiastestError as exc:
            gr.Warning(exc.message.split("\n", 1)[0])
            return ("⚠️ " + md_escape(exc.message), *(gr.skip(),) * (3 + n_outputs))
        tabs, tab3 = unlock_step("results")
        message = MSG_CLASSIFIER_DONE.format(headline=md_escape(report.headline(new["classifier"])))
        return (message, new, tabs, tab3, *classifier_view(new))

    return run_handler


def table_frame(result: Classifier2AFCResult) -> pd.DataFrame:
    """The measure's summary rows (per template, term pair, group term, word, emotion) as a table."""
    return pd.DataFrame(report.summary_rows(result))


def classifier_view(session: dict[str, Any]) -> tuple:
    """Step 3's classifier components: box, headline, table, CSV, JSON."""
    result: Classifier2AFCResult = session["classifier"]
    csv_path, json_path = report.export_files(result)
    return (gr.Column(visible=True), md_escape(report.reading(result)), table_frame(result),
            gr.DownloadButton(value=str(csv_path), visible=True), gr.DownloadButton(value=str(json_path), visible=True))


# ------------------------------------------------------------------ controls and wiring
def build_step2() -> Section:
    """Step 2's classifier fields (hidden until "A text classifier" is chosen)."""
    sec = Section()
    with sec.add("box", gr.Column(visible=False, elem_id="classifier-box"), gr.update(visible=False)):
        gr.Markdown(MSG_CLASSIFIER_HINT)
        sec.add("where", gr.Radio(WHERE_CHOICES, value=CHAT_HERE, label="Where the classifier runs",
                                  elem_id="classifier-where"), CHAT_HERE)
        sec.add("model", gr.Textbox(label="Classifier (Hub id or folder; at an endpoint, a name for it)",
                                    elem_id="classifier-model"), "")
        with sec.add("endpoint_box", gr.Column(visible=False), gr.update(visible=False)):
            sec.add("url", gr.Textbox(label="Endpoint address (the full URL that takes POST {\"inputs\": [...]})",
                                      elem_id="classifier-url"), "")
            sec.add("key", gr.Textbox(label="Key (this run only; never stored)", type="password",
                                      elem_id="classifier-key"), "")
        sec.add("positive", gr.Textbox(label="Positive label (empty: the label called positive or pos)",
                                       elem_id="classifier-positive"), "")
        sec.add("message", gr.Markdown("", elem_id="classifier-message"), "")
        sec.run = gr.Button("Score with the classifier →", variant="primary", elem_id="classifier-run")
    return sec


def build_results() -> Section:
    """Step 3's classifier results (hidden until a run)."""
    sec = Section()
    with sec.add("result_box", gr.Column(visible=False, elem_id="classifier-results"), gr.update(visible=False)):
        sec.add("headline", gr.Markdown("", elem_id="classifier-headline"), "")
        sec.add("table", gr.Dataframe(label="Per template, term pair, group term, word and emotion",
                                      interactive=False, elem_id="classifier-table"), None)
        with gr.Row():
            sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="classifier-download-csv"),
                    gr.update(value=None, visible=False))
            sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="classifier-download-json"),
                    gr.update(value=None, visible=False))
    sec.outputs = [sec.result_box, sec.headline, sec.table, sec.csv, sec.json]
    return sec


def wire(sec: Section, session: Any, *, seed: Any, results: Section, tabs: Any, tab3: Any) -> None:
    """The endpoint boxes and the run."""
    sec.where.change(chat_where_visibility, sec.where, sec.endpoint_box, queue=False, show_progress="hidden")
    sec.run.click(lambda: "", None, sec.message, queue=False, show_progress="hidden").then(
        make_classifier_run_handler(len(results.outputs)),
        [session, sec.where, sec.model, sec.url, sec.key, sec.positive, seed],
        [sec.message, session, tabs, tab3, *results.outputs],
        concurrency_id="text-classifier", concurrency_limit=1,
    )
