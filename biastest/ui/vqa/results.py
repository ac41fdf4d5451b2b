"""The model and the results of the vision-language app: run the test (end of step 2), then step 3.

:func:`build_model_section` lays out the model, prompt and settings controls
of step 2 and :func:`build_results_tab` the results tab (summary, bars, the
per-image grid with its hover card, the picked-image panel, the table and the
downloads); :func:`wire_run` connects the Run button to both. The report layer
(:mod:`biastest.measures.vlm.report`) turns the typed result into text, tables and
figures; this module only wires components.

Step 3's "Pictures that lean together" choice (:data:`CLUSTER_CHOICES`) says which pictures form the
independent clusters of the cluster-aware interval and test; the run uses it, and changing it afterwards
recomputes the results from the scored pictures without running the model again (:func:`recluster_handler`).

The model runs on this server (the model list), or behind an endpoint: an
OpenAI-compatible chat server that reads images (vLLM serving LLaVA or
Qwen-VL, a hosted GPT-4o-class model), given by its address, the served
model's name and an optional key. The key goes from its password box to that
run's requests only: it is never put in the session, a file, a log or a result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from biastest import public
from biastest.errors import DataError, EndpointError, MethodError, OptionError
from biastest.measures.vlm import VLMItems, VLMOptions, run
from biastest.measures.vlm import report as rep
from biastest.measures.vlm import report_figures as figs
from biastest.measures.vlm.options import (
    DEFAULT_CLUSTERS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_QUESTION,
    PROMPT_TEMPLATES,
    QUESTIONS,
    check_clusters,
)
from biastest.models.catalog import CATALOGS
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL, MSG_NO_MODEL_NAME, check_endpoint_url
from biastest.options import DEFAULT_SEED
from biastest.remote import safe_base_url
from biastest.ui.common import (
    DETAILS_LABEL,
    USER_MISTAKES,
    escape,
    inline_failures,
    offered,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
    warn_inline,
)
from biastest.ui.model_picker import build_model_picker
from biastest.ui.vqa.session import MSG_NO_IMAGES_YET, _copy, _spec, session_root

__all__ = [
    "CLUSTER_CHOICES",
    "CLUSTER_INFO",
    "MODEL_ENDPOINT",
    "MODEL_HERE",
    "MODEL_SUGGESTIONS",
    "MODEL_WHERE_CHOICES",
    "ModelSection",
    "ResultsTab",
    "RunInputs",
    "build_model_section",
    "build_results_tab",
    "image_detail",
    "recluster_handler",
    "results_view",
    "run_core",
    "run_handler",
    "run_inputs",
    "wire_run",
]

#: The Hub ids the model list suggests (after the models on this machine: :mod:`biastest.ui.model_picker`).
MODEL_SUGGESTIONS = CATALOGS["vlm"].hub_ids

MSG_NO_MODEL = "Type or choose the model to test (a Hugging Face Hub id such as {example}, or a local folder)."
MSG_NO_TEMPLATE = "Choose at least one prompt template, or type your own with {{term}}."
MSG_RUN_FIRST = "Run the test in step 2 first."
#: Where the model to test runs (step 2's choice): loaded on this server, or served elsewhere.
MODEL_HERE = "here"
MODEL_ENDPOINT = "endpoint"
MODEL_WHERE_CHOICES = [("A model on this server", MODEL_HERE), ("A model behind an endpoint", MODEL_ENDPOINT)]
MSG_ENDPOINT_HINT = (
    "The model is asked the question about each picture where it is served, through the OpenAI chat protocol with "
    "images (vLLM serving LLaVA or Qwen-VL, or a hosted model such as GPT-4o), with the target terms as the allowed "
    "answers, twice: once with each list named first (two requests per picture). Refusals ('I cannot tell') and "
    "answers that are not an allowed answer are counted apart, never as not stereotyped. Its answers always give a "
    "score; the score from probabilities needs the answers' log-probabilities "
    "(vLLM and OpenAI give them). Prompt templates and the settings for several terms apply to CLIP-like models on "
    "this server only. The key is used for this session's requests only: it is never stored, logged or written to "
    "the results."
)
MSG_RUN_PARTIAL = "⚠️ Tested {n} of {total} images with {model}: the results in step 3 are partial. {why}"
MSG_TOAST_PARTIAL = "The endpoint stopped early: the results are partial (step 2 says why)."
#: Step 3's choice of the pictures that lean together (the cluster-aware interval and test), in plain words.
CLUSTER_CHOICES = [
    ("Automatic: pictures generated from one prompt, else each picture on its own — within each image term",
     "auto"),
    ("Pictures generated from the same prompt", "image-prompt"),
    ("Each image term as one cluster (the former automatic choice; terms are fixed conditions)", "image-term"),
    ("None: treat every picture as independent", "image"),
]
CLUSTER_INFO = (
    "Pictures of one family lean together, so they count as one piece of evidence: the interval and the test "
    "resample and count whole families. Changing this recomputes the results without running the model again."
)


# --------------------------------------------------------------------------- run
def _templates(selected: Any, custom: str | None) -> list[str]:
    out = [t for t in (selected or []) if t]
    if custom and custom.strip():
        out.append(custom.strip())
    if not out:
        raise MethodError(MSG_NO_TEMPLATE)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class RunInputs:
    """What step 2 sets for a run: the Run button's inputs after the session, in the order the event passes them.

    The endpoint's fields come after the settings of a model on this server, then step 3's clusters, so a call
    through the API that names a model on this server keeps its order. ``endpoint_key`` is left out of the record's
    ``repr``: it goes to the run's requests only.
    """

    model_id: str | None
    templates: Any
    custom_template: str | None
    combine: str | None
    question: str | None
    seed: Any
    batch_size: Any
    n_resamples: Any
    where: str | None = MODEL_HERE
    endpoint_url: str | None = None
    endpoint_model: str | None = None
    endpoint_key: str | None = field(default=None, repr=False)
    clusters: str | None = DEFAULT_CLUSTERS


def run_core(session: dict[str, Any], *values: Any, progress=None) -> dict[str, Any]:
    """:func:`run_inputs` with step 2's values given in the Run button's order (:class:`RunInputs`' fields)."""
    return run_inputs(session, RunInputs(*values), progress=progress)


def run_inputs(session: dict[str, Any], inputs: RunInputs, *, progress=None) -> dict[str, Any]:
    """Run the test on the session's images; returns the session with its result.

    With ``inputs.where`` :data:`MODEL_ENDPOINT` the model is the one served at ``endpoint_url`` under
    ``endpoint_model`` (``model_id``, the templates, ``combine`` and ``batch_size`` do not apply); the address and
    the name are checked before anything is read or sent, and ``endpoint_key`` goes to the run's requests only.
    ``clusters`` is step 3's choice of the pictures that lean together (:data:`CLUSTER_CHOICES`), checked first.
    """
    clusters = check_clusters(inputs.clusters or DEFAULT_CLUSTERS)
    new = _copy(session)
    spec = _spec(new)
    if inputs.where == MODEL_ENDPOINT:
        return _run_endpoint(new, spec, inputs, clusters, progress=progress)
    model_id = (inputs.model_id or "").strip()
    if not model_id:
        raise MethodError(MSG_NO_MODEL.format(example=MODEL_SUGGESTIONS[0]))
    model_id = public.check_model_reference(model_id)  # a public server loads Hub models only
    if not new["images"]:
        raise DataError(MSG_NO_IMAGES_YET)
    settings = {
        "model_id": model_id,
        "prompt_template": _templates(inputs.templates, inputs.custom_template),
        "question": (inputs.question or "").strip() or DEFAULT_QUESTION,
        "combine": inputs.combine or offered("vlm", "combine")[0],
        "seed": option_value("seed", inputs.seed),
        "batch_size": option_value("batch_size", inputs.batch_size),
        "n_resamples": option_value("n_resamples", inputs.n_resamples),
        "clusters": clusters,
    }
    result = run(VLMOptions.parse(settings), VLMItems(list(new["images"]), session_root(new), spec), progress=progress)
    new.update(result=result, settings=settings)
    return new


def _run_endpoint(new: dict[str, Any], spec, inputs: RunInputs, clusters: str, *, progress=None) -> dict[str, Any]:
    """:func:`run_inputs` for a model behind an endpoint (the key reaches the runner only, never ``new``)."""
    url = str(inputs.endpoint_url or "").strip()
    if not url:
        raise OptionError(MSG_NEED_ENDPOINT_URL)
    url = check_endpoint_url(url)  # a web address, and in public mode a public one: before anything is sent
    name = str(inputs.endpoint_model or "").strip()
    if not name:
        raise OptionError(MSG_NO_MODEL_NAME)
    if not new["images"]:
        raise DataError(MSG_NO_IMAGES_YET)
    settings = {
        "model_id": name,
        "question": (inputs.question or "").strip() or DEFAULT_QUESTION,
        "seed": option_value("seed", inputs.seed),
        "n_resamples": option_value("n_resamples", inputs.n_resamples),
        "clusters": clusters,
    }
    result = run(VLMOptions.parse(settings, endpoint=url), VLMItems(list(new["images"]), session_root(new), spec),
                 progress=progress, api_key=str(inputs.endpoint_key or "").strip() or None)
    new.update(result=result, settings={**settings, "endpoint": safe_base_url(url)})
    return new


def _image_choices(result) -> list[tuple[str, int]]:
    lab = rep.labels(result)
    return [
        (f"#{i + 1} · {img.image_term} · leans to {rep.leans_to(img, lab)}", i)
        for i, img in enumerate(result.images)
    ]


def image_detail(session: dict[str, Any], index: Any) -> tuple[str | None, str]:
    """Path and Markdown details of result image ``index`` (None, "" when there is none)."""
    result = (session or {}).get("result")
    if result is None or index is None or not 0 <= int(index) < len(result.images):
        return None, ""
    img = result.images[int(index)]
    path = Path(session["dir"]) / img.path if session.get("dir") else None
    probs = ", ".join(f"P({escape(t)}) = {p:.3f}" for t, p in img.term_probabilities.items())
    # the same lines, in the same words, as the grid's hover label (rep.image_facts)
    md = "\n".join(f"- **{escape(field)}:** {escape(value)}" for field, value in rep.image_facts(result, img))
    md += f"\n\nPer target term: {probs}" if probs else f"\n\nNo probability: {escape(img.note or 'none given')}."
    return (str(path) if path is not None and path.is_file() else None), md


def results_view(session: dict[str, Any]) -> tuple:
    """Values of the result components (see ``result_outputs`` in :func:`build_demo`)."""
    result = session["result"]
    root = Path(session["dir"])
    thumbs = {img.image_id: figs.thumbnail_uri(root / img.path) for img in result.images}
    csv_path, json_path = rep.write_exports(result, folder=session_export_dir("biastest-vqa-"))
    choices = _image_choices(result)
    first_path, first_md = image_detail(session, 0 if choices else None)
    reading, details = rep.summary_parts(result)
    return (
        reading,
        details,
        figs.term_bars(result),
        figs.image_grid(result, thumbnails=thumbs),
        rep.image_table(result),
        gr.update(choices=choices, value=0 if choices else None),
        first_path,
        first_md,
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


RECLUSTER_OUTPUTS = 6  # session, reading, details, bars, CSV and JSON downloads


@user_errors
def recluster_handler(session, clusters):
    """Step 3's clusters changed: the last result summarised again with them (no model runs), files rewritten.

    Outputs: session, reading, details, bars, CSV and JSON downloads (all unchanged when there is no result yet). The
    per-image grid and table do not depend on the clusters.
    """
    result = (session or {}).get("result")
    if result is None:
        return (gr.skip(),) * RECLUSTER_OUTPUTS
    try:
        clusters = check_clusters(clusters or DEFAULT_CLUSTERS)
    except USER_MISTAKES as exc:  # only through the API: the dropdown offers valid choices
        gr.Warning(exc.message)
        return (gr.skip(),) * RECLUSTER_OUTPUTS
    new = _copy(session)
    new["result"] = result.with_clusters(clusters)
    new["settings"] = {**(new.get("settings") or {}), "clusters": clusters}
    csv_path, json_path = rep.write_exports(new["result"], folder=session_export_dir("biastest-vqa-"))
    return (
        new,
        *rep.summary_parts(new["result"]),
        figs.term_bars(new["result"]),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


#: The Run button's action, as its failure message names it (:func:`~biastest.ui.common.inline_failures`).
ACTION_RUN = "The test"
#: Outputs of :func:`run_handler`: session, run message, tabs, results tab, then :func:`results_view`'s ten.
RUN_OUTPUTS = 14


@user_errors
@inline_failures(ACTION_RUN, RUN_OUTPUTS, 1)
def run_handler(session, *values, progress=gr.Progress()):
    """Step 2 → results: run, render, unlock the results tab; a mistake the user can fix stays inline in step 2.

    ``values`` are step 2's inputs in the Run button's order (:class:`RunInputs`: the endpoint's fields come last,
    with defaults, then step 3's clusters, so a call through the API that names a model on this server keeps its
    order). What an endpoint answers that keeps it from answering (another model, a refused key, a server that
    keeps failing) is shown next to the button; a run a limit stopped keeps what was answered and says so.
    """
    try:
        new = run_inputs(session, RunInputs(*values), progress=progress_callback(progress))
    except (*USER_MISTAKES, EndpointError) as exc:  # an endpoint's answer: what to check is in the message
        return (session, warn_inline(exc), *(gr.skip(),) * (RUN_OUTPUTS - 2))
    tabs, tab3 = unlock_step("results")
    result, message = new["result"], ""
    if result.not_scored:
        why = result.provenance.get("model", {}).get("stop_message") or ""
        message = escape(MSG_RUN_PARTIAL.format(n=result.n_images, total=result.n_images + len(result.not_scored),
                                                model=result.model_id, why=why))
        gr.Warning(MSG_TOAST_PARTIAL)
    return (new, message, tabs, tab3, *results_view(new))


def model_where_visibility(where: str) -> tuple[Any, Any]:
    """Show the model list for a model on this server, the endpoint's fields for one behind an endpoint."""
    return gr.Column(visible=where != MODEL_ENDPOINT), gr.Column(visible=where == MODEL_ENDPOINT)


@user_errors
def detail_handler(session, index):
    """The picked result image and its details."""
    return image_detail(session, index)


@user_errors
def table_select_handler(session, evt: gr.SelectData):
    """A click on a row of the per-image table picks that image."""
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if (session or {}).get("result") is None or row is None:
        return gr.skip()
    return int(row)


HOVER_CARD_TEMPLATE = (
    "<div class='bt-hover-card' style='min-height:180px'>"
    "<img class='bt-card-img' alt='picture of the hovered square' "
    "style='display:none;max-width:100%;width:160px;image-rendering:auto;border-radius:8px'/>"
    "<div class='bt-card-text' style='font-size:0.92em;white-space:pre-line'>${value}</div></div>"
)
HOVER_CARD_HINT = "Hover over (or click) a square of the grid to see its picture here."

# Plotly hover labels cannot show images: this attaches a plotly_hover listener to the grid and shows the
# hovered point's thumbnail (the data: URI in its last customdata column) and its details in the card.
HOVER_CARD_JS = r"""
const PLOT = '#vqa-image-grid', CARD = '#vqa-hover-card';
const plain = (s) => new DOMParser().parseFromString(String(s ?? '').replace(/<br\s*\/?>/gi, ' '), 'text/html')
  .documentElement.textContent;
function show(ev) {
  const pt = ev && ev.points && ev.points[0];
  const card = document.querySelector(CARD);
  const gd = document.querySelector(PLOT + ' .js-plotly-plot');
  if (!pt || !card) return;
  const cd = pt.customdata || [];
  const meta = (gd && gd.layout && gd.layout.meta) || {};
  const img = card.querySelector('img.bt-card-img'), box = card.querySelector('.bt-card-text');
  const uri = String(cd[cd.length - 1] || '');
  if (img) {
    if (uri.startsWith('data:image/')) { img.src = uri; img.style.display = 'block'; }
    else { img.removeAttribute('src'); img.style.display = 'none'; }
    img.dataset.imageId = String(cd[cd.length - 2] || '');
  }
  if (box) {
    // the hover label's lines (measures.vlm.report.image_facts): field names in layout.meta, values in customdata
    box.textContent = (meta.fields || []).map((f, i) => f + ': ' + plain(cd[i])).join('\n');
  }
}
window.__btVqaShow = show;
function attach() {
  const gd = document.querySelector(PLOT + ' .js-plotly-plot');
  if (!gd || typeof gd.on !== 'function') return;
  const has = gd._ev && typeof gd._ev.listeners === 'function'
    ? gd._ev.listeners('plotly_hover').includes(window.__btVqaShow) : gd.__btVqa === true;
  if (!has) {
    gd.on('plotly_hover', window.__btVqaShow);
    gd.on('plotly_click', window.__btVqaShow);
    gd.__btVqa = true;
  }
}
if (!window.__btVqaTimer) { window.__btVqaTimer = setInterval(attach, 300); }
"""


# --------------------------------------------------------------------------- layout and wiring
@dataclass
class ModelSection:
    """The model part of step 2: the run's inputs (after the session), its message and buttons."""

    inputs: list[Any]
    run_btn: Any
    run_md: Any
    new_btn: Any
    resets: list[tuple[Any, Any]]


def build_model_section() -> ModelSection:
    """Lay out the model, prompts, question and settings of step 2, the Run and New bias test buttons."""
    gr.Markdown("### The model to test")
    where = gr.Radio(MODEL_WHERE_CHOICES, value=MODEL_HERE, label="Where the model to test runs",
                     elem_id="model-where")
    with gr.Column() as here_box:
        # the honest model list: this machine first, then Hub ids marked as downloads (or as needing the internet)
        picker = build_model_picker("vlm", label="Model (Hugging Face Hub id or local folder)",
                                    info="CLIP-like, visual question answering (ViLT) or image-to-text (BLIP, GIT); "
                                         "its kind is read from its configuration.",
                                    elem_id="model-id", note_id="model-note")
    model_id = picker.dropdown
    with gr.Column(visible=False) as endpoint_box:
        with gr.Row():
            endpoint_url = gr.Textbox("", label="Endpoint address", placeholder="http://localhost:8000/v1",
                                      elem_id="endpoint-url")
            endpoint_model = gr.Textbox("", label="Served model name", placeholder="llava-hf/llava-1.5-7b-hf",
                                        info="As the server lists it (vLLM: the model or --served-model-name).",
                                        elem_id="endpoint-model")
            endpoint_key = gr.Textbox("", label="API key (optional; this session only, never stored)",
                                      type="password", elem_id="endpoint-key")
        gr.Markdown(MSG_ENDPOINT_HINT, elem_id="endpoint-hint", elem_classes=["bt-hint"])
    where.change(model_where_visibility, where, [here_box, endpoint_box], queue=False, show_progress="hidden")
    with gr.Row():
        templates = gr.CheckboxGroup(
            [(f"{label}: “{tpl}”", tpl) for tpl, label in PROMPT_TEMPLATES.items()],
            value=[DEFAULT_PROMPT_TEMPLATE],
            label="Prompt templates (CLIP-like models)",
            elem_id="prompt-templates",
        )
        with gr.Column():
            custom_template = gr.Textbox(label="Your own prompt template (with {term})",
                                         placeholder="a picture of a {term}", elem_id="custom-template")
            question = gr.Dropdown(
                [(f"{q} — {label}", q) for q, label in QUESTIONS.items()], value=DEFAULT_QUESTION,
                allow_custom_value=True, label="Question (VQA and image-to-text models)",
                info="{T1} and {T2} are replaced by the two lists of target terms.", elem_id="question")
    with gr.Accordion("Settings", open=False):
        with gr.Row():
            combine = gr.Radio(list(offered("vlm", "combine")), value=offered("vlm", "combine")[0],
                               label="Several terms in a concept (CLIP-like)",
                               info="sum-prob: add their probabilities; mean-embedding: average their "
                                    "text embeddings first.", elem_id="combine")
            seed = gr.Number(DEFAULT_SEED, precision=0, label="Seed (repeat it to get the same numbers)",
                             elem_id="seed")
            batch = gr.Number(16, precision=0, label="Images per batch", elem_id="batch-size")
            n_boot = gr.Number(10_000, precision=0, label="Bootstrap samples for the intervals",
                               elem_id="n-bootstrap")
    run_md = gr.Markdown("", elem_id="run-message")
    with gr.Row():
        run_btn = gr.Button("Run the test →", variant="primary", elem_id="run-test")
        new_btn = gr.Button("New bias test", elem_id="new-test-2")
    resets = [
        (model_id, picker.default), (templates, [DEFAULT_PROMPT_TEMPLATE]), (custom_template, ""),
        (question, DEFAULT_QUESTION), (combine, offered("vlm", "combine")[0]), (seed, 0), (batch, 16), (n_boot, 10_000),
        (run_md, ""), (where, MODEL_HERE), (here_box, gr.Column(visible=True)),
        (endpoint_box, gr.Column(visible=False)), (endpoint_url, ""), (endpoint_model, ""), (endpoint_key, ""),
    ]
    # the endpoint's fields come last: run_handler's API order for a model on this server is unchanged
    return ModelSection(inputs=[model_id, templates, custom_template, combine, question, seed, batch, n_boot, where,
                                endpoint_url, endpoint_model, endpoint_key],
                        run_btn=run_btn, run_md=run_md, new_btn=new_btn, resets=resets)


@dataclass
class ResultsTab:
    """The results tab: the outputs :func:`results_view` fills, in order, and the New bias test button."""

    outputs: list[Any]
    new_btn: Any
    resets: list[tuple[Any, Any]]
    clusters: Any = None


def build_results_tab(session: gr.State) -> ResultsTab:
    """Lay out step 3 (inside its tab) and wire the image picker and the table to the picked-image panel, and the
    clusters choice to :func:`recluster_handler`."""
    summary_md = gr.Markdown("", elem_id="result-summary")  # the reading, its verdict first (issue 28)
    bars = gr.Plot(label="Bias score per term", elem_id="vqa-term-bars")
    with gr.Row():
        with gr.Column(scale=3):
            grid = gr.Plot(label="Every image", elem_id="vqa-image-grid")
        with gr.Column(scale=1, min_width=200):
            gr.HTML(HOVER_CARD_HINT, html_template=HOVER_CARD_TEMPLATE, js_on_load=HOVER_CARD_JS,
                    elem_id="vqa-hover-card")
            pick = gr.Dropdown([], label="Or pick an image", elem_id="vqa-pick")
            picked = gr.Image(label="Picked image", type="filepath", interactive=False, height=200,
                              elem_id="vqa-picked-image")
            picked_md = gr.Markdown("", elem_id="vqa-picked-details")
    table = gr.Dataframe(label="Per image (click a row to see it)", interactive=False,
                         elem_id="vqa-image-table")
    with gr.Accordion(DETAILS_LABEL, open=False, elem_id="result-details"):
        clusters = gr.Dropdown(choices=CLUSTER_CHOICES, value=DEFAULT_CLUSTERS, label="Pictures that lean together",
                               info=CLUSTER_INFO, elem_id="vqa-clusters")
        details_md = gr.Markdown("", elem_id="result-details-text")
    with gr.Row():
        csv_btn = gr.DownloadButton("Download CSV", visible=False, elem_id="download-csv")
        json_btn = gr.DownloadButton("Download JSON", visible=False, elem_id="download-json")
    new_btn = gr.Button("New bias test", elem_id="new-test-3")

    # Queued on purpose: an unqueued event's file addresses lack the mount prefix (/vqa) under the suite's server,
    # so the picked image would not load (Gradio computes the root of /run/predict from the whole request path).
    pick.change(detail_handler, [session, pick], [picked, picked_md], show_progress="hidden")
    table.select(table_select_handler, session, pick, queue=False)
    clusters.input(recluster_handler, [session, clusters], [session, summary_md, details_md, bars, csv_btn, json_btn],
                   concurrency_id="vqa-recluster", show_progress_on=[summary_md])

    resets = [
        (clusters, DEFAULT_CLUSTERS), (summary_md, ""), (details_md, ""), (bars, None), (grid, None), (table, None),
        (pick, gr.update(choices=[], value=None)), (picked, None), (picked_md, ""),
        (csv_btn, gr.update(value=None, visible=False)), (json_btn, gr.update(value=None, visible=False)),
    ]
    return ResultsTab(outputs=[summary_md, details_md, bars, grid, table, pick, picked, picked_md, csv_btn, json_btn],
                      new_btn=new_btn, resets=resets, clusters=clusters)


def wire_run(session: gr.State, model: ModelSection, results: ResultsTab, tabs: gr.Tabs, tab3: gr.Tab) -> None:
    """Run button → :func:`run_handler` → the results tab (one model run at a time per process)."""
    # step 3's clusters come after the endpoint's fields: the API order of the earlier inputs is unchanged
    model.run_btn.click(_run_event, [session, *model.inputs, results.clusters],
                        [session, model.run_md, tabs, tab3, *results.outputs],
                        api_name="run_handler", concurrency_id="vqa-model", concurrency_limit=1)


def _run_event(session, progress=gr.Progress(), *values):
    """:func:`run_handler` as the Run button calls it: Gradio passes the inputs positionally and puts its progress
    tracker at the index of the parameter whose default is a ``gr.Progress`` (a positional one, hence before
    ``values``)."""
    return run_handler(session, *values, progress=progress)
