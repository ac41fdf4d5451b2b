"""The language-model app's layout and event wiring: one builder per step, one function that connects them.

:func:`build_demo` lays out the three gated tabs (:func:`build_step1`, :func:`build_step2`, :func:`build_step3`,
each returning its components as a small record) and connects them (:func:`wire_steps`); the handlers are in
:mod:`.handlers`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import gradio as gr

from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as lm_run
from biastest.options import DEFAULT_SEED
from biastest.runner import services
from biastest.ui import compare
from biastest.ui.common import DETAILS_LABEL, end_session_files_on_unload, gradio_cache_policy, user_errors
from biastest.ui.common import index_link as show_index_link
from biastest.ui.dataset_panel import build_dataset_panel
from biastest.ui.gpt import bbq, chat
from biastest.ui.gpt.handlers import (
    CLUSTER_CHOICES,
    CLUSTER_INFO,
    DEFAULT_METHOD,
    INTRO,
    KEEP_NON_MINIMAL_INFO,
    KEEP_NON_MINIMAL_LABEL,
    METHOD_HELP,
    MODEL_ENDPOINT,
    MODEL_HERE,
    MODEL_WHERE_CHOICES,
    MSG_ENDPOINT_HINT,
    MSG_FAILED,
    MSG_TOKENIZER_INFO,
    _fresh_state,
    _model_info,
    confirm_spec,
    find_sentences,
    generate,
    import_file,
    method_choices,
    method_info,
    model_where_visibility,
    panel_handler,
    prompt_info,
    recluster,
    refresh_handler,
    restart,
    run_test,
)
from biastest.ui.model_picker import build_model_picker
from biastest.ui.spec_step import CUSTOM, SpecInputs, build_spec_inputs, fill_from_library, wire_validation
from biastest.ui.stop import StopControl, time_limit_hint

__all__ = ["TABLE_COLUMN_WIDTHS", "build_demo", "build_step1", "build_step2", "build_step3", "wire_steps"]

#: Widths of the pairs table's columns (in the order of :data:`report.PAIR_HEADERS`): wide enough for
#: each header's longest word, so headers wrap between words; sentences wrap within their columns.
TABLE_COLUMN_WIDTHS = ["80px", "130px", "130px", "300px", "150px", "300px", "120px", "130px", "260px"]


@dataclass
class Step1:
    """Step 1's components: the spec inputs and the Next button."""

    inputs: SpecInputs
    next_btn: Any


@dataclass
class Generation:
    """The "Generate new sentences" accordion's components (its inputs in the handler's order)."""

    inputs: list[Any]
    prompt: Any
    prompt_md: Any
    button: Any
    stop: Any
    message: Any


@dataclass
class ChatFields:
    """Step 2's "A chat model (asks questions)": the model, the prompt, the sampling, the cost and the button."""

    box: Any
    where: Any
    model: Any
    endpoint_box: Any
    url: Any
    key: Any
    template: Any
    template_text: Any
    samples: Any
    temperature: Any
    cost: Any
    confirm: Any
    run_btn: Any
    message: Any


@dataclass
class ForcedChoiceView:
    """Step 3's forced-choice part (shown for a chat model's result), in :func:`chat.fc_view`'s order."""

    box: Any
    readings: Any
    summary: Any
    grid: Any
    terms: Any
    dl_csv: Any
    dl_json: Any
    compare: Any
    forest: Any
    pairwise: Any
    agreement: Any


@dataclass
class Step2:
    """Step 2's components: finding, importing and generating pairs, the table, the model and the run."""

    tab: Any
    testing: Any
    show_panel: Any
    wire_panel: Any
    find_btn: Any
    find_msg: Any
    coverage: Any
    upload: Any
    fmt: Any
    import_btn: Any
    import_msg: Any
    gen: Generation
    table: Any
    model_where: Any
    model_here_box: Any
    model_endpoint_box: Any
    model: Any
    endpoint: list[Any]
    method_box: Any
    method: Any
    method_md: Any
    seed: Any
    chat: ChatFields
    run_btn: Any
    run_msg: Any
    restart: Any
    keep_non_minimal: Any = None
    endpoint_tokenizer: Any = None


@dataclass
class Step3:
    """Step 3's components: the clusters choice, the results, the downloads, the comparison and the restart."""

    tab: Any
    clusters: Any
    summary: Any
    reading: Any
    grid: Any
    attr_plot: Any
    group_plot: Any
    dl_csv: Any
    dl_json: Any
    compare_ui: Any
    restart: Any
    lm_box: Any = None
    fc: ForcedChoiceView | None = None

    def fc_outputs(self) -> list[Any]:
        """The outputs of :func:`chat.fc_view`, in its order."""
        fc = self.fc
        return [self.lm_box, fc.box, fc.readings, fc.summary, fc.grid, fc.terms, fc.dl_csv, fc.dl_json, fc.compare,
                fc.forest, fc.pairwise, fc.agreement]


def build_step1() -> Step1:
    """Step 1's contents (inside its tab): the bias specification and the Next button."""
    inputs = build_spec_inputs()
    next_btn = gr.Button("Next: test data →", variant="primary", elem_id="spec-next")
    return Step1(inputs=inputs, next_btn=next_btn)


def _build_import() -> tuple[Any, Any, Any, Any]:
    """The "Import sentence pairs from a file" accordion: (file, format, button, message)."""
    with gr.Accordion("Import sentence pairs from a file", open=False):
        with gr.Row():
            upload = gr.File(label="CSV or JSON file", file_types=[".csv", ".json"], elem_id="import-file")
            fmt = gr.Dropdown(
                choices=list(services.IMPORT_FORMATS),
                value="auto",
                label="File format",
                info="BiasTestGPT pairs or sentences CSV, CrowS-Pairs CSV, StereoSet JSON",
            )
        import_btn = gr.Button("Import", elem_id="import-run")
        import_msg = gr.Markdown("", elem_id="import-message")
    return upload, fmt, import_btn, import_msg


def _build_generation(generation_seconds: float) -> Generation:
    """The "Generate new sentences with a language model" accordion."""
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
            with gr.Column():
                prompt = gr.Dropdown(
                    choices=[(name, name) for _, name in services.sentence_prompt_choices()],
                    value="with-context",
                    label="Prompt",
                    elem_id="gen-prompt",
                )
                prompt_md = gr.Markdown(prompt_info("with-context"), elem_id="gen-prompt-info",
                                        elem_classes=["bt-hint"])
            gen_seed = gr.Number(label="Seed", value=DEFAULT_SEED, precision=0)
        with gr.Row():
            gen_btn = gr.Button("Generate", elem_id="gen-run")
            gen_stop = StopControl.button("gen-stop")
        gen_msg = gr.Markdown("", elem_id="gen-message")
    return Generation(inputs=[gen_kind, api_key, base_url, gen_model, per_attr, prompt, gen_seed], prompt=prompt,
                      prompt_md=prompt_md, button=gen_btn, stop=gen_stop, message=gen_msg)


def _build_model() -> dict[str, Any]:
    """Where the model runs, the model (a list, or an endpoint's fields), the scoring method and the seed."""
    model_where = gr.Radio(MODEL_WHERE_CHOICES, value=MODEL_HERE, label="Where the model to test runs",
                           elem_id="model-where")
    with gr.Row():
        with gr.Column() as model_here_box:
            picker = build_model_picker("lm", label="Model to test", info=_model_info(),
                                        elem_id="model-id", note_id="model-note")
        with gr.Column(visible=False) as model_endpoint_box:
            endpoint_url = gr.Textbox("", label="Endpoint address", placeholder="http://localhost:8000/v1",
                                      elem_id="endpoint-url")
            endpoint_model = gr.Textbox(
                "", label="Served model name", placeholder="meta-llama/Llama-3.1-8B",
                info="As the server lists it (vLLM: the model or --served-model-name; llama.cpp: --alias).",
                elem_id="endpoint-model")
            endpoint_key = gr.Textbox("", label="API key (optional; this session only, never stored)",
                                      type="password", elem_id="endpoint-key")
            endpoint_tokenizer = gr.Textbox("", label="Tokenizer (optional)", placeholder="the served model name",
                                            info=MSG_TOKENIZER_INFO, elem_id="endpoint-tokenizer")
            gr.Markdown(MSG_ENDPOINT_HINT, elem_id="endpoint-hint", elem_classes=["bt-hint"])
        with gr.Column() as method_box:
            method = gr.Dropdown(
                choices=method_choices(),
                value=DEFAULT_METHOD,
                label="Scoring method",
                elem_id="method",
            )
            method_md = gr.Markdown(method_info(DEFAULT_METHOD), elem_id="method-info", elem_classes=["bt-hint"])
        seed = gr.Number(label="Seed (repeat it to get the same numbers)", value=DEFAULT_SEED, precision=0,
                         elem_id="seed")
    with gr.Accordion("What the scoring methods do", open=False):
        gr.Markdown(METHOD_HELP)
    return {"model_where": model_where, "model_here_box": model_here_box, "model_endpoint_box": model_endpoint_box,
            "model": picker.dropdown, "endpoint": [endpoint_url, endpoint_model, endpoint_key],
            "endpoint_tokenizer": endpoint_tokenizer,
            "method_box": method_box, "method": method,
            "method_md": method_md, "seed": seed}


def _build_chat() -> ChatFields:
    """Step 2's chat model: where it runs, the model, the prompt template, the sampling, the cost and its button."""
    with gr.Column(visible=False, elem_id="chat-box") as box:
        gr.Markdown(chat.MSG_CHAT_HINT, elem_classes=["bt-hint"])
        where = gr.Radio(chat.CHAT_WHERE_CHOICES, value=chat.CHAT_HERE, label="Where the chat model runs",
                         elem_id="chat-where")
        with gr.Row():
            model = gr.Textbox("", label="Chat model",
                               info="On this server: a Hub id or folder of an instruct model with a chat template. "
                                    "At an endpoint: the name it serves.", elem_id="chat-model")
            with gr.Column(visible=False) as endpoint_box:
                url = gr.Textbox("", label="Chat endpoint address", placeholder="https://api.openai.com/v1",
                                 elem_id="chat-url")
                key = gr.Textbox("", label="API key (optional; this session only, never stored)", type="password",
                                 elem_id="chat-key")
        with gr.Row():
            template = gr.Dropdown(chat.template_choices(), value=chat.DEFAULT_TEMPLATE, label="Prompt template",
                                   elem_id="chat-template")
            samples = gr.Number(1, label="Samples per order", precision=0, minimum=1, elem_id="chat-samples")
            temperature = gr.Slider(0.0, 2.0, value=0.0, step=0.1, label="Temperature (0: the most likely answer)",
                                    elem_id="chat-temperature")
        template_text = gr.Textbox(chat.template_text(chat.DEFAULT_TEMPLATE), lines=6, max_lines=20,
                                   label="The prompt (system message, a line ---, then the question with "
                                         "{option_a} and {option_b}); edit it to ask your own way",
                                   elem_id="chat-template-text")
        cost = gr.Markdown(chat.MSG_COST_NEEDS_PAIRS, elem_id="chat-cost")
        confirm = gr.Checkbox(False, label="I accept this cost", visible=False, elem_id="chat-confirm")
        run_btn = gr.Button("Ask the chat model →", variant="primary", elem_id="chat-run")
        message = gr.Markdown("", elem_id="chat-run-message", min_height=40)
    return ChatFields(box=box, where=where, model=model, endpoint_box=endpoint_box, url=url, key=key,
                      template=template, template_text=template_text, samples=samples, temperature=temperature,
                      cost=cost, confirm=confirm, run_btn=run_btn, message=message)


def build_step2(state: Any, *, generation_seconds: float, dataset=None) -> Step2:
    """Step 2's tab: the "Testing:" line, the shared-dataset panel, find/import/generate, the table and the run."""

    def show_panel_handler(state):
        return panel_handler(state, dataset=dataset)

    def refresh_panel_handler(state):
        return refresh_handler(state, dataset=dataset)

    with gr.Tab("2 · Test data", id="data", interactive=False) as tab_data:
        testing = gr.Markdown("", elem_id="data-testing")
        show_panel, _, wire_panel = build_dataset_panel(
            visible=True, session=state, panel_fn=show_panel_handler, refresh_fn=refresh_panel_handler)
        with gr.Row():
            find_btn = gr.Button("Find sentences in the dataset", elem_id="data-find")
        find_msg = gr.Markdown("", elem_id="data-find-message")
        coverage = gr.Markdown("", elem_id="data-coverage")
        upload, fmt, import_btn, import_msg = _build_import()
        gen = _build_generation(generation_seconds)
        gr.Markdown(
            "**Test sentence pairs.** Edit any cell to fix a sentence; untick *Keep* to leave a pair out. "
            "A pair's two sentences must differ only in the group term (and the words that agree with it).",
            elem_classes=["bt-hint"],
        )
        table = gr.Dataframe(
            value=report.pairs_to_table([]),
            datatype=["bool", "str", "str", "str", "str", "str", "str", "str", "str"],
            interactive=True,
            wrap=True,
            column_widths=TABLE_COLUMN_WIDTHS,
            max_height=420,
            elem_id="pairs-table",
        )
        model = _build_model()
        chat_fields = _build_chat()
        keep = gr.Checkbox(False, label=KEEP_NON_MINIMAL_LABEL, info=KEEP_NON_MINIMAL_INFO,
                           elem_id="keep-non-minimal")
        run_btn = gr.Button("Run the test →", variant="primary", elem_id="data-run")
        run_msg = gr.Markdown("", elem_id="run-message", min_height=40)
        restart2 = gr.Button("New bias test", elem_id="restart-data")
    return Step2(tab=tab_data, testing=testing, show_panel=show_panel, wire_panel=wire_panel, find_btn=find_btn,
                 find_msg=find_msg, coverage=coverage, upload=upload, fmt=fmt, import_btn=import_btn,
                 import_msg=import_msg, gen=gen, table=table, run_btn=run_btn, run_msg=run_msg, restart=restart2,
                 chat=chat_fields, keep_non_minimal=keep, **model)


def build_step3() -> Step3:
    """Step 3's tab: the clusters choice, the score, the reading, the figures, the downloads and the comparison."""
    with gr.Tab("3 · Results", id="results", interactive=False) as tab_results:
        fc = _build_fc_view()
        with gr.Column() as lm_box:
            clusters, summary, reading, grid, attr_plot, group_plot, dl_csv, dl_json, compare_ui = _build_lm_view()
        restart3 = gr.Button("New bias test", variant="secondary", elem_id="restart")
    return Step3(tab=tab_results, clusters=clusters, summary=summary, reading=reading, grid=grid,
                 attr_plot=attr_plot, group_plot=group_plot, dl_csv=dl_csv, dl_json=dl_json, compare_ui=compare_ui,
                 restart=restart3, lm_box=lm_box, fc=fc)


def _build_fc_view() -> ForcedChoiceView:
    """Step 3's forced-choice part: readings first, the figures, the pairs, the downloads, the comparison."""
    with gr.Column(visible=False) as box:
        readings = gr.Markdown("", elem_id="fc-readings")
        summary = gr.Markdown("", elem_id="fc-summary")
        grid = gr.Plot(label="Every pair (hover: the model's answers in both orders)", elem_id="fc-grid")
        terms = gr.Dataframe(label="Per attribute and group term", interactive=False, wrap=True, elem_id="fc-terms")
        with gr.Row():
            dl_csv = gr.DownloadButton("Download answers (CSV)", visible=False, elem_id="fc-download-csv")
            dl_json = gr.DownloadButton("Download result (JSON)", visible=False, elem_id="fc-download-json")
        with gr.Accordion("Compare with other chat models and with the likelihood score", open=True):
            compare_md = gr.Markdown("", elem_id="fc-compare")
            forest = gr.Plot(label="Chat models on the same pairs", visible=False, elem_id="fc-forest")
            pairwise = gr.Dataframe(interactive=False, wrap=True, visible=False, elem_id="fc-pairwise")
            agreement = gr.Markdown("", elem_id="fc-agreement")
    return ForcedChoiceView(box=box, readings=readings, summary=summary, grid=grid, terms=terms, dl_csv=dl_csv,
                            dl_json=dl_json, compare=compare_md, forest=forest, pairwise=pairwise, agreement=agreement)


def _build_lm_view() -> tuple:
    """Step 3's likelihood part (the stereotype score): the reading (its verdict first), the figures, the downloads,
    then the details (the clusters choice and every number of the score, closed) and the comparison."""
    reading = gr.Markdown("", elem_id="results-reading")  # the verdict sentence first (issue 28)
    grid = gr.Plot(label="Every pair", elem_id="pair-grid")
    with gr.Row():
        attr_plot = gr.Plot(label="Per attribute term", elem_id="attribute-bars")
        group_plot = gr.Plot(label="Per group term", elem_id="group-bars")
    with gr.Row():
        dl_csv = gr.DownloadButton("Download pairs (CSV)", visible=False, elem_id="download-csv")
        dl_json = gr.DownloadButton("Download result (JSON)", visible=False, elem_id="download-json")
    with gr.Accordion(DETAILS_LABEL, open=False, elem_id="results-details"):
        clusters = gr.Dropdown(choices=CLUSTER_CHOICES, value="auto", label="Pairs that lean together",
                               info=CLUSTER_INFO, elem_id="clusters")
        summary = gr.Markdown("", elem_id="results-summary", elem_classes=["bt-score"])
    compare_ui = compare.build_lm_compare(method_choices=method_choices(), default_method=DEFAULT_METHOD)
    return clusters, summary, reading, grid, attr_plot, group_plot, dl_csv, dl_json, compare_ui


def _run_handler(slot: threading.Lock):
    """The Run button's handler: the endpoint's fields make an :class:`~lm_run.LMEndpoint` for this call only."""

    def run_handler(model_id, method, seed, state, table, model_where, endpoint_url, endpoint_model, endpoint_key,
                    clusters="auto", keep_non_minimal=False, endpoint_tokenizer="", progress=gr.Progress()):
        # the key lives in this call only: it is passed to the runner, never put in the session's state; an empty
        # tokenizer box tries the served name (token-id prompts), "none" sends text (:func:`lm_run.tokenizer_choice`)
        endpoint = (lm_run.LMEndpoint(endpoint_url, endpoint_model, endpoint_key,
                                      tokenizer=lm_run.tokenizer_choice(endpoint_tokenizer))
                    if model_where == MODEL_ENDPOINT else None)
        # a model behind an endpoint does not use this server's model slot: it does not wait for a local test
        return run_test(model_id, method, seed, state, table, progress=progress,
                        slot=slot if endpoint is None else None, endpoint=endpoint, clusters=clusters,
                        keep_non_minimal=bool(keep_non_minimal))

    return run_handler


def _generate_handler(stops: StopControl, *, generation_seconds: float, dataset=None):
    """The Generate button's handler: a run the Stop button (or the time limit) ends, keeping what was made."""

    def generate_handler(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                         request: gr.Request, progress=gr.Progress()):
        with stops.running(request) as cancel:
            return generate(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                            progress=progress, cancel=cancel, max_seconds=generation_seconds, dataset=dataset)

    return generate_handler


def _chat_run_handler(slot: threading.Lock):
    """The chat model's button: the key lives in this call only (passed to the run, never put in the state)."""

    def chat_handler(chat_where, model, url, key, template, text, samples, temperature, seed, confirmed, state, table,
                     progress=gr.Progress()):
        return chat.run_chat(chat_where, model, url, key, template, text, samples, temperature, seed, confirmed,
                             state, table, progress=progress, slot=slot)

    return chat_handler


def _wire_chat(tabs: Any, state: Any, s2: Step2, s3: Step3, *, slot: threading.Lock) -> Any:
    """Connect the chat model's fields: where it runs, the template, the cost line, the run; the run's event."""
    c = s2.chat
    c.where.change(chat.chat_where_visibility, c.where, c.endpoint_box, queue=False, show_progress="hidden")
    c.template.input(chat.template_box, c.template, c.template_text, queue=False, show_progress="hidden")
    cost_inputs = [state, s2.table, c.where, c.model, c.url, c.template, c.template_text, c.samples, c.temperature,
                   s2.seed]
    for component in (s2.table, s2.model_where, c.where, c.model, c.url, c.template_text, c.samples, c.temperature,
                      s2.seed):
        component.change(chat.cost_handler, cost_inputs, [c.cost, c.confirm], queue=False, show_progress="hidden")
    return c.run_btn.click(
        _chat_run_handler(slot),
        [c.where, c.model, c.url, c.key, c.template, c.template_text, c.samples, c.temperature, s2.seed, c.confirm,
         state, s2.table],
        [c.message, state, tabs, s3.tab, *s3.fc_outputs()],
        api_name="ask_chat_model",
        concurrency_id="gpt-chat-run",
        concurrency_limit=4,
        show_progress_on=[c.message],
    )


def wire_steps(demo: gr.Blocks, tabs: Any, state: Any, s1: Step1, s2: Step2, s3: Step3, *,
               generation_seconds: float, dataset=None, bbq_tab: tuple[Any, dict[str, Any]] | None = None) -> None:
    """Connect the three steps' events (inside ``demo``'s ``with`` block), and the BBQ tab's (``(tab, fields)``)."""
    stops = StopControl()
    model_slot = threading.Lock()  # one test scores at a time; its inputs are checked before it waits here
    if bbq_tab is not None:
        bbq.wire_bbq(*bbq_tab, slot=model_slot)
    inputs = s1.inputs
    step2_msgs = [s2.find_msg, s2.coverage, s2.import_msg, s2.gen.message, s2.run_msg]
    # .input, not .change: only the user's pick fills the boxes. 'New bias test' sets the dropdown back to Custom;
    # a .change would then empty the boxes again after the reset, wiping what a user typed meanwhile.
    inputs.library.input(user_errors(fill_from_library), inputs.library, [*inputs.term_boxes, inputs.message])
    wire_validation(inputs, concurrency_id="gpt-spec-validate")
    s1.next_btn.click(confirm_spec, [inputs.library, *inputs.term_boxes, state],
                      [state, inputs.message, tabs, s2.tab, s2.testing, s2.table, *step2_msgs])
    failed = []  # (event, its message box): a red error also ends in a message next to the button

    def find_handler(state, table):
        return find_sentences(state, table, dataset=dataset)

    failed.append((s2.find_btn.click(find_handler, [state, s2.table], [s2.table, *step2_msgs]), s2.find_msg))
    failed.append((s2.import_btn.click(import_file, [s2.upload, s2.fmt, state, s2.table],
                                       [s2.table, s2.find_msg, s2.import_msg, s2.gen.message, s2.run_msg]),
                   s2.import_msg))
    generation = stops.wire(
        demo,
        generate_btn=s2.gen.button,
        stop_btn=s2.gen.stop,
        fn=_generate_handler(stops, generation_seconds=generation_seconds, dataset=dataset),
        inputs=[*s2.gen.inputs, state, s2.table],
        outputs=[s2.table, *step2_msgs, state],
        api_name="generate_sentences",
        concurrency_id="generation",
    )
    failed.append((generation, s2.gen.message))
    s2.show_panel(generation)
    s2.wire_panel()
    s2.method.change(method_info, s2.method, s2.method_md, show_progress="hidden")
    s2.gen.prompt.change(prompt_info, s2.gen.prompt, s2.gen.prompt_md, show_progress="hidden")
    # an edit of the table makes the last run message (e.g. a row to fix) stale
    s2.table.input(lambda: "", None, s2.run_msg, queue=False, show_progress="hidden")
    # The run checks its inputs at once and only then waits for the model (``model_slot``), saying so in step 2:
    # waiting for a Gradio concurrency slot first left a zero-pair run silent behind other users' tests.
    s2.model_where.change(model_where_visibility, s2.model_where,
                          [s2.model_here_box, s2.model_endpoint_box, s2.method_box, s2.run_btn, s2.chat.box],
                          queue=False, show_progress="hidden")
    results = [s3.summary, s3.reading, s3.attr_plot, s3.group_plot, s3.grid, s3.dl_csv, s3.dl_json]
    running = s2.run_btn.click(
        _run_handler(model_slot),
        # the endpoint's fields come last: a call through the API that names a model on this server (model,
        # method, seed, table) keeps working, the rest taking their defaults
        [s2.model, s2.method, s2.seed, state, s2.table, s2.model_where, *s2.endpoint, s3.clusters,
         s2.keep_non_minimal, s2.endpoint_tokenizer],
        [s2.run_msg, state, tabs, s3.tab, *results],
        api_name="run_test",
        concurrency_id="gpt-run",
        concurrency_limit=4,
        show_progress_on=[s2.run_msg],
    )
    failed.append((running, s2.run_msg))
    running.then(chat.boxes_view, state, [s3.lm_box, s3.fc.box], queue=False, show_progress="hidden")
    failed.append((_wire_chat(tabs, state, s2, s3, slot=model_slot), s2.chat.message))
    compare.wire_lm_compare(s3.compare_ui, state, slot=model_slot, clusters=s3.clusters,
                            clear_on=[s2.run_btn, s2.restart, s3.restart])
    s3.clusters.input(recluster, [s3.clusters, state],
                      [state, s3.summary, s3.reading, s3.attr_plot, s3.group_plot, s3.dl_csv, s3.dl_json],
                      concurrency_id="gpt-recluster", show_progress_on=[s3.summary])
    for event, box in failed:  # Gradio 6.31 runs ``.failure`` listeners (not ``.then``) after an error
        event.failure(lambda: MSG_FAILED, None, box, queue=False, show_progress="hidden")
    # the order of :func:`restart`'s outputs
    reset_outputs = [state, tabs, s2.tab, s3.tab, s2.table, s2.testing, *step2_msgs, *results]
    for btn in (s2.restart, s3.restart):
        restarted = btn.click(restart, None, reset_outputs)
        restarted.then(lambda: ("", *chat.empty_fc_view()), None, [s2.chat.message, *s3.fc_outputs()], queue=False)
        s2.show_panel(restarted)
        restarted.then(
            lambda: ("", "", "", "", "", CUSTOM), None, [*inputs.term_boxes, inputs.message, inputs.library]
        )


def build_demo(*, generation_seconds: float = services.GENERATION_MAX_SECONDS, dataset=None,
               index_link: bool = False) -> gr.Blocks:
    """Build the language-model app (no queue, no launch).

    Parameters
    ----------
    generation_seconds : float
        Time limit of one sentence-generation run (the Stop button ends a run sooner; both keep what was made).
    dataset : SharedDataset, optional
        The store and shared dataset that step 2 reads, writes and shows. Default: the process's
        (:func:`biastest.runner.services.shared_dataset`, started on first use).
    index_link : bool
        Show the link back to the suite's index page (:data:`~biastest.ui.common.INDEX_LINK`; the suite's server
        sets it).
    """
    with gr.Blocks(title="biastest · language models", delete_cache=gradio_cache_policy()) as demo:
        state = gr.State(_fresh_state())
        show_index_link(index_link)
        gr.Markdown(INTRO)
        with gr.Tabs(selected="spec") as tabs:
            with gr.Tab("1 · Bias specification", id="spec"):
                s1 = build_step1()
            s2 = build_step2(state, generation_seconds=generation_seconds, dataset=dataset)
            s3 = build_step3()
            with gr.Tab("BBQ benchmark", id="bbq") as tab_bbq:
                bbq_fields = bbq.build_bbq_tab()
        wire_steps(demo, tabs, state, s1, s2, s3, generation_seconds=generation_seconds, dataset=dataset,
                   bbq_tab=(tab_bbq, bbq_fields))
        end_session_files_on_unload(demo)
    return demo
