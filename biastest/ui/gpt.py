"""The language-model app (``app_gpt.py``): BiasTestGPT rebuilt so its numbers can be trusted.

Step 1 — a bias specification (library or four term boxes). Step 2 — test
sentence pairs: found in the dataset, imported from a file (BiasTestGPT,
CrowS-Pairs, StereoSet) or generated (OpenAI key, an OpenAI-compatible
endpoint, or a local model); an editable table; the model to test and the
scoring method. Step 3 — results: the score with its interval, per-term bars,
a per-pair grid with hover, a plain-language reading, CSV and JSON downloads.

All per-user data lives in ``gr.State``; the model cache and the store are
process-wide services.
"""

from __future__ import annotations

import math
from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import DataError, SpecError
from biastest.metrics.stereotype_score import METHODS
from biastest.report import gpt as report
from biastest.report.text import md_escape
from biastest.runner import services
from biastest.spec import BiasSpec
from biastest.ui.common import (
    end_session_files_on_unload,
    gated_tabs_reset,
    gradio_cache_policy,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.spec_step import (
    CUSTOM,
    build_spec_inputs,
    fill_from_library,
    spec_from_inputs,
    spec_summary,
    wire_validation,
)
from biastest.ui.stop import StopControl, time_limit_hint

__all__ = ["SUGGESTED_MODELS", "build_demo"]

#: Suggested models for the dropdown (any Hub id or local folder may be typed instead).
SUGGESTED_MODELS = [
    "gpt2",
    "gpt2-medium",
    "distilgpt2",
    "bert-base-uncased",
    "bert-large-uncased",
    "roberta-base",
    "distilbert-base-uncased",
    "albert-base-v2",
    "microsoft/biogpt",
    "EleutherAI/pythia-160m",
    "meta-llama/Llama-3.2-1B",
    "tiiuae/falcon-rw-1b",
]

INTRO = """# Language models: stereotype score
Does a language model find stereotyped sentences more likely than their counterparts? Describe the bias
(two social groups and two attribute lists), get test sentence pairs that differ only in the group term,
and see in what share of the pairs the model prefers the stereotyped sentence (50 % = no preference),
with an uncertainty interval and every pair inspectable."""

METHOD_HELP = "\n".join(f"- **{m.name}** ({', '.join(m.kinds)} models): {m.summary}" for m in METHODS.values())

MSG_NO_SPEC = "Complete step 1 first: the bias specification is missing."
MSG_FOUND = "Found {n_pairs} sentence pairs for this specification in the dataset ({n_sentences} sentences)."
MSG_NOTHING_FOUND = "No stored sentences match this specification yet. Generate some below or import a file."
MSG_IMPORTED = "Imported {n} sentence pairs from {name}."
MSG_NO_FILE = "Choose a file to import first."
MSG_NO_MODEL = "Type or choose the model to test (a Hub id such as gpt2, or a local folder)."
MSG_BAD_SEED = "The seed must be a whole number, got {value!r}."


def _fresh_state() -> dict[str, Any]:
    return {"spec": None, "result": None}


def _seed(value: Any) -> int:
    from biastest.options import check_option

    try:
        f = float(value)
    except (TypeError, ValueError):
        raise DataError(MSG_BAD_SEED.format(value=value)) from None
    if not math.isfinite(f) or f != int(f):
        raise DataError(MSG_BAD_SEED.format(value=value))
    return check_option("seed", int(f))


def _spec(state: dict[str, Any]) -> BiasSpec:
    if not state or not state.get("spec"):
        raise SpecError(MSG_NO_SPEC)
    return BiasSpec.from_dict(state["spec"])


def _merge(table: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    if table is None or len(table) == 0:
        return new.reset_index(drop=True)
    merged = pd.concat([table, new], ignore_index=True)
    return merged.drop_duplicates(subset=["stereotyped", "anti_stereotyped"], keep="first").reset_index(drop=True)


# ------------------------------------------------------------------ handlers
@user_errors
def confirm_spec(library, g1, g2, s1, a1, state):
    spec = spec_from_inputs(library, g1, g2, s1, a1)
    state = {**_fresh_state(), "spec": spec.to_dict()}
    tabs, tab = unlock_step("data")
    return state, spec_summary(spec), tabs, tab, f"**Testing:** {md_escape(spec.name)}"


@user_errors
def find_sentences(state, table):
    spec = _spec(state)
    found = services.retrieve_pairs(spec)
    if not found.pairs:
        return table, MSG_NOTHING_FOUND, found.coverage_markdown
    merged = _merge(table, report.pairs_to_table(found.pairs))
    return merged, MSG_FOUND.format(n_pairs=len(found.pairs), n_sentences=found.n_sentences), found.coverage_markdown


@user_errors
def import_file(file, fmt, state, table):
    if file is None:
        raise DataError(MSG_NO_FILE)
    spec = _spec(state)
    path = file if isinstance(file, str) else getattr(file, "name", file)
    pairs = services.import_pairs(path, fmt=fmt, spec=spec)
    merged = _merge(table, report.pairs_to_table(pairs))
    return merged, MSG_IMPORTED.format(n=len(pairs), name=md_escape(str(path).rsplit("/", 1)[-1]))


@user_errors
def generate(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table, progress=gr.Progress(), *,
             cancel=None, max_seconds=services.GENERATION_MAX_SECONDS):
    """Generate the missing sentences; a run stopped (``cancel`` set, or ``max_seconds`` passed) keeps its pairs.

    The pairs made before a stop are stored and added to the table like those of a finished run; the message says
    why the run stopped and how many were kept.
    """
    spec = _spec(state)
    run = services.generate_pairs(
        spec,
        kind=kind,
        api_key=api_key,
        base_url=base_url,
        model=model,
        per_attribute=int(per_attribute or 0),
        prompt=prompt,
        seed=_seed(seed),
        progress=progress_callback(progress),
        cancel=cancel,
        max_seconds=max_seconds,
    )
    merged = _merge(table, report.pairs_to_table(run.pairs)) if run.pairs else table
    return merged, md_escape(run.report.message), ""


@user_errors
def run_test(model_id, method, seed, state, table, progress=gr.Progress()):
    spec = _spec(state)
    if not model_id or not str(model_id).strip():
        raise DataError(MSG_NO_MODEL)
    pairs = report.pairs_from_table(table, spec_name=spec.name)
    result = services.run_lm_test(
        pairs=pairs,
        model_id=str(model_id).strip(),
        method=method,
        seed=_seed(seed),
        spec=spec,
        progress=progress_callback(progress),
    )
    state = {**state, "result": result.to_dict()}
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-lm-"))
    tabs, tab = unlock_step("results")
    return (
        state,
        tabs,
        tab,
        report.summary_markdown(result),
        report.interpretation(result),
        report.attribute_figure(result),
        report.group_figure(result),
        report.pair_grid(result),
        gr.DownloadButton(value=str(csv_path), visible=True),
        gr.DownloadButton(value=str(json_path), visible=True),
    )


def restart():
    tabs, t2, t3 = gated_tabs_reset()
    return (
        _fresh_state(),
        tabs,
        t2,
        t3,
        report.pairs_to_table([]),
        "",
        "",
        "",
        "",
        None,
        None,
        None,
        gr.DownloadButton(visible=False),
        gr.DownloadButton(visible=False),
    )


def method_info(method: str) -> str:
    m = METHODS.get(method)
    if m is None:
        return ""
    return f"**{m.title}** — {m.summary} *Formula:* `{m.formula}`. *Reference:* {m.reference}."


# ------------------------------------------------------------------ layout
def build_demo(*, generation_seconds: float = services.GENERATION_MAX_SECONDS) -> gr.Blocks:
    """Build the language-model app (no queue, no launch).

    Parameters
    ----------
    generation_seconds : float
        Time limit of one sentence-generation run (the Stop button ends a run sooner; both keep what was made).
    """
    stops = StopControl()

    def generate_handler(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                         request: gr.Request, progress=gr.Progress()):
        with stops.running(request) as cancel:
            return generate(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                            progress=progress, cancel=cancel, max_seconds=generation_seconds)

    with gr.Blocks(title="biastest · language models", delete_cache=gradio_cache_policy()) as demo:
        state = gr.State(_fresh_state())
        gr.Markdown(INTRO)
        with gr.Tabs(selected="spec") as tabs:
            with gr.Tab("1 · Bias specification", id="spec"):
                inputs = build_spec_inputs()
                next_btn = gr.Button("Next: test sentences ▶", variant="primary", elem_id="spec-next")
            with gr.Tab("2 · Test sentences", id="data", interactive=False) as tab_data:
                testing = gr.Markdown("")
                with gr.Row():
                    find_btn = gr.Button("Find sentences in the dataset", elem_id="data-find")
                find_msg = gr.Markdown("", elem_id="data-find-message")
                coverage = gr.Markdown("", elem_id="data-coverage")
                with gr.Accordion("Import sentence pairs from a file", open=False):
                    with gr.Row():
                        upload = gr.File(label="CSV or JSON file", file_types=[".csv", ".json"])
                        fmt = gr.Dropdown(
                            choices=list(services.IMPORT_FORMATS),
                            value="auto",
                            label="File format",
                            info="BiasTestGPT pairs or sentences CSV, CrowS-Pairs CSV, StereoSet JSON",
                        )
                    import_btn = gr.Button("Import")
                    import_msg = gr.Markdown("")
                with gr.Accordion("Generate new sentences with a language model", open=False):
                    gr.Markdown(
                        "Sentences are written for each (group term, attribute term), kept only if they are one "
                        "sentence containing both terms, and paired by swapping the group term. An API key is used "
                        "for this session only and is never stored. "
                        + time_limit_hint(generation_seconds),
                        elem_classes=["bt-hint"],
                    )
                    with gr.Row():
                        gen_kind = gr.Radio(
                            choices=[(desc, k) for k, desc in services.text_generator_choices()],
                            value="openai",
                            label="Generator",
                        )
                    with gr.Row():
                        api_key = gr.Textbox(
                            label="OpenAI API key", type="password", placeholder="sk-…", elem_id="gen-api-key"
                        )
                        base_url = gr.Textbox(
                            label="Endpoint address (compatible servers)",
                            placeholder="http://…/v1",
                            elem_id="gen-base-url",
                        )
                        gen_model = gr.Textbox(label="Generator model", value="gpt-4o-mini", elem_id="gen-model")
                    with gr.Row():
                        per_attr = gr.Number(
                            label="Sentences per attribute term",
                            value=2,
                            precision=0,
                            minimum=1,
                            elem_id="gen-per-attribute",
                        )
                        prompt = gr.Dropdown(
                            choices=services.sentence_prompt_choices(), value="with-context", label="Prompt"
                        )
                        gen_seed = gr.Number(label="Seed", value=42, precision=0)
                    with gr.Row():
                        gen_btn = gr.Button("Generate", elem_id="gen-run")
                        gen_stop = StopControl.button("gen-stop")
                    gen_msg = gr.Markdown("", elem_id="gen-message")
                gr.Markdown(
                    "**Test sentence pairs.** Edit any cell to fix a sentence; untick *keep* to leave a pair out.",
                    elem_classes=["bt-hint"],
                )
                table = gr.Dataframe(
                    value=report.pairs_to_table([]),
                    headers=report.PAIR_COLUMNS,
                    datatype=["bool", "str", "str", "str", "str", "str", "str", "str", "str"],
                    interactive=True,
                    wrap=True,
                    max_height=420,
                    elem_id="pairs-table",
                )
                with gr.Row():
                    model = gr.Dropdown(
                        choices=SUGGESTED_MODELS,
                        value="gpt2",
                        allow_custom_value=True,
                        label="Model to test",
                        info="Any Hugging Face Hub id or a local folder.",
                        elem_id="model-id",
                    )
                    method = gr.Dropdown(
                        choices=[(f"{m.name} — {m.title}", m.name) for m in METHODS.values()],
                        value="causal-sum",
                        label="Scoring method",
                        elem_id="method",
                    )
                    seed = gr.Number(label="Seed (intervals)", value=42, precision=0, elem_id="seed")
                method_md = gr.Markdown(method_info("causal-sum"), elem_classes=["bt-hint"])
                with gr.Accordion("What the scoring methods do", open=False):
                    gr.Markdown(METHOD_HELP)
                run_btn = gr.Button("Run the test ▶", variant="primary", elem_id="data-run")
                restart2 = gr.Button("New bias test", elem_id="restart-data")
            with gr.Tab("3 · Results", id="results", interactive=False) as tab_results:
                summary = gr.Markdown("", elem_id="results-summary", elem_classes=["bt-score"])
                reading = gr.Markdown("", elem_id="results-reading")
                grid = gr.Plot(label="Every pair", elem_id="pair-grid")
                with gr.Row():
                    attr_plot = gr.Plot(label="Per attribute term", elem_id="attribute-bars")
                    group_plot = gr.Plot(label="Per group term", elem_id="group-bars")
                with gr.Row():
                    dl_csv = gr.DownloadButton("Download pairs (CSV)", visible=False, elem_id="download-csv")
                    dl_json = gr.DownloadButton("Download result (JSON)", visible=False, elem_id="download-json")
                restart3 = gr.Button("New bias test", variant="secondary", elem_id="restart")

        spec_boxes = [inputs.library, *inputs.term_boxes]
        inputs.library.change(user_errors(fill_from_library), inputs.library, [*inputs.term_boxes, inputs.message])
        wire_validation(inputs, concurrency_id="gpt-spec-validate")
        next_btn.click(confirm_spec, [*spec_boxes, state], [state, inputs.message, tabs, tab_data, testing])
        find_btn.click(find_sentences, [state, table], [table, find_msg, coverage])
        import_btn.click(import_file, [upload, fmt, state, table], [table, import_msg])
        stops.wire(
            demo,
            generate_btn=gen_btn,
            stop_btn=gen_stop,
            fn=generate_handler,
            inputs=[gen_kind, api_key, base_url, gen_model, per_attr, prompt, gen_seed, state, table],
            outputs=[table, gen_msg, coverage],
            api_name="generate_sentences",
            concurrency_id="generation",
        )
        method.change(method_info, method, method_md)
        run_btn.click(
            run_test,
            [model, method, seed, state, table],
            [state, tabs, tab_results, summary, reading, attr_plot, group_plot, grid, dl_csv, dl_json],
            concurrency_id="inference",
            concurrency_limit=1,
        )
        reset_outputs = [
            state,
            tabs,
            tab_data,
            tab_results,
            table,
            find_msg,
            coverage,
            summary,
            reading,
            attr_plot,
            group_plot,
            grid,
            dl_csv,
            dl_json,
        ]
        for btn in (restart2, restart3):
            btn.click(restart, None, reset_outputs).then(
                lambda: ("", "", "", "", "", CUSTOM), None, [*inputs.term_boxes, inputs.message, inputs.library]
            )
        end_session_files_on_unload(demo)
    return demo
