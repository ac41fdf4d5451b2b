"""The vision-language app: does a CLIP, ViLT, BLIP or GIT model tie pictures of groups to stereotypes?

Three gated tabs (specification → images and model → results), one module per part:

* :mod:`~biastest.ui.vqa.session` — the per-session image store (what ``gr.State`` holds): step 1's spec,
  adding, removing and uploading pictures, the shared store;
* :mod:`~biastest.ui.vqa.images` — step 2's picture sections (shared store, upload, generate, gallery): their
  controls and handlers;
* :mod:`~biastest.ui.vqa.results` — the model to test, the run, and step 3 (summary, bars, grid, picked image,
  table, downloads);
* :mod:`biastest.ui.compare` — step 3's “Compare with another model” (more models on the same images).

This module lays out the tabs and step 1, and re-exports the names the tests, the benchmarks and
``app_vqa.py`` use (``from biastest.ui import vqa as app; app.add_uploads(...)``). Each handler is wrapped
with :func:`~biastest.ui.common.user_errors`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.runner.services import GENERATION_MAX_SECONDS
from biastest.ui import compare
from biastest.ui.common import (
    end_session_files_on_unload,
    escape,
    gated_tabs_reset,
    gradio_cache_policy,
    user_errors,
)
from biastest.ui.common import index_link as show_index_link
from biastest.ui.spec_step import CUSTOM, build_spec_inputs, fill_from_library, wire_validation
from biastest.ui.vqa.images import (
    GEN_COMPATIBLE,
    GEN_LOCAL,
    GEN_OPENAI,
    MAX_PER_TERM_GENERATE,
    MSG_BAD_SIZE,
    MSG_GENERATED,
    MSG_GENERATED_UNUSABLE,
    MSG_NO_API_KEY_TYPED,
    MSG_NO_BASE_URL,
    MSG_NO_GENERATOR_MODEL,
    MSG_PANEL_COMMIT,
    MSG_PANEL_ITEM,
    MSG_PANEL_MORE,
    MSG_PANEL_NONE_SAVED,
    MSG_PANEL_SAVED_HEAD,
    MSG_SAVE_HINT,
    PANEL_MAX_ITEMS,
    VQAApp,
    add_generated,
    build_images_section,
    dataset_panel,
    gallery_select_handler,
    generate_core,
    make_generator,
    on_generator,
)
from biastest.ui.vqa.results import (
    MODEL_SUGGESTIONS,
    MSG_NO_MODEL,
    MSG_NO_TEMPLATE,
    MSG_RUN_FIRST,
    RunInputs,
    build_model_section,
    build_results_tab,
    detail_handler,
    image_detail,
    results_view,
    run_core,
    run_handler,
    run_inputs,
    table_select_handler,
    wire_run,
)
from biastest.ui.vqa.session import (
    MAX_SESSION_IMAGES,
    MSG_BAD_INT,
    MSG_CHOOSE_TERM,
    MSG_DROPPED_IMAGES,
    MSG_DUPLICATE,
    MSG_GENERATED_NOT_SAVED,
    MSG_GENERATED_SAVED,
    MSG_NO_FILES,
    MSG_NO_IMAGES_YET,
    MSG_NONE_ADDED,
    MSG_NOTHING_SELECTED,
    MSG_NOTHING_TO_SAVE,
    MSG_REMOVED,
    MSG_RETRIEVED,
    MSG_SAVED,
    MSG_SPEC_FIRST,
    MSG_STORE_EMPTY_FOR_SPEC,
    MSG_TERM_NOT_IN_SPEC,
    MSG_TOO_MANY_IMAGES,
    MSG_UPLOAD_ADDED,
    MSG_UPLOAD_PROBLEMS,
    SESSION_PREFIX,
    add_image,
    add_uploads,
    confirm_spec,
    coverage_frame,
    coverage_view,
    discard_session,
    gallery_items,
    image_counts,
    new_session,
    remove_image,
    retrieve_from_store,
    save_generated,
    save_to_store,
    session_root,
)

__all__ = [
    "GEN_COMPATIBLE",
    "GEN_LOCAL",
    "GEN_OPENAI",
    "MAX_PER_TERM_GENERATE",
    "MAX_SESSION_IMAGES",
    "MODEL_SUGGESTIONS",
    "MSG_BAD_INT",
    "MSG_BAD_SIZE",
    "MSG_CHOOSE_TERM",
    "MSG_DROPPED_IMAGES",
    "MSG_DUPLICATE",
    "MSG_GENERATED",
    "MSG_GENERATED_NOT_SAVED",
    "MSG_GENERATED_SAVED",
    "MSG_GENERATED_UNUSABLE",
    "MSG_NONE_ADDED",
    "MSG_NOTHING_SELECTED",
    "MSG_NOTHING_TO_SAVE",
    "MSG_NO_API_KEY_TYPED",
    "MSG_NO_BASE_URL",
    "MSG_NO_FILES",
    "MSG_NO_GENERATOR_MODEL",
    "MSG_NO_IMAGES_YET",
    "MSG_NO_MODEL",
    "MSG_NO_TEMPLATE",
    "MSG_PANEL_COMMIT",
    "MSG_PANEL_ITEM",
    "MSG_PANEL_MORE",
    "MSG_PANEL_NONE_SAVED",
    "MSG_PANEL_SAVED_HEAD",
    "MSG_REMOVED",
    "MSG_RETRIEVED",
    "MSG_RUN_FIRST",
    "RunInputs",
    "MSG_SAVED",
    "MSG_SAVE_HINT",
    "MSG_SPEC_FIRST",
    "MSG_STORE_EMPTY_FOR_SPEC",
    "MSG_TERM_NOT_IN_SPEC",
    "MSG_TOO_MANY_IMAGES",
    "MSG_UPLOAD_ADDED",
    "MSG_UPLOAD_PROBLEMS",
    "PANEL_MAX_ITEMS",
    "SESSION_PREFIX",
    "VQAApp",
    "add_generated",
    "add_image",
    "add_uploads",
    "build_demo",
    "confirm_spec",
    "coverage_frame",
    "coverage_view",
    "dataset_panel",
    "detail_handler",
    "discard_session",
    "escape",
    "gallery_items",
    "gallery_select_handler",
    "generate_core",
    "image_counts",
    "image_detail",
    "make_generator",
    "new_session",
    "on_generator",
    "remove_image",
    "results_view",
    "retrieve_from_store",
    "run_core",
    "run_handler",
    "run_inputs",
    "save_generated",
    "save_to_store",
    "session_root",
    "table_select_handler",
]

HEADER = """
# Vision-language models: do pictures of groups get stereotyped answers?

Test whether an AI model that looks at pictures (CLIP, ViLT, BLIP, GIT …) links pictures of one social group
to a stereotype more than pictures of another. You name the **image terms** (what the pictures show, e.g.
*man* / *woman*) and two lists of **target terms** (e.g. *doctor* / *nurse*). For every picture the model gives
the probability of each list; the **bias score** is the average probability of the picture's stereotypical list
(50% = no preference). Pictures come from the shared store, from an image generator, or from your own uploads —
your uploads stay private to your session until you choose to share them.
"""

SPEC_HELP = (
    "**Social group 1** and **Social group 2** hold the *image terms*: what the pictures show (e.g. *man, father* / "
    "*woman, mother*). The two lists of *target terms* are what every picture is classified into: **Stereotype for "
    "group 1** (e.g. *doctor*) and **Anti-stereotype for group 1**, which is the stereotype of group 2 (e.g. "
    "*nurse*). The results name each list by its terms."
)

#: Step 1's boxes, named as the specification (and its messages) names the four lists.
SPEC_LABELS = {
    "group1": "Social group 1: image terms (what its pictures show)",
    "group2": "Social group 2: image terms",
    "stereotype1": "Stereotype for group 1: target terms",
    "antistereotype1": "Anti-stereotype for group 1: target terms (the stereotype of group 2)",
}



def build_demo(*, store=None, use_store: bool = True, dataset=None,
               generation_seconds: float = GENERATION_MAX_SECONDS, index_link: bool = False) -> gr.Blocks:
    """The app's Blocks (no queue, no launch: :func:`biastest.ui.serve.configure_queue` does that).

    Parameters
    ----------
    store : DatasetStore, optional
        The shared store to retrieve pictures from and save them to (default:
        the store at ``$BIASTEST_DATA_DIR``, opened on first use).
    use_store : bool
        False hides retrieval and saving (no shared store at all).
    dataset : SharedDataset, optional
        The link to the shared dataset (step 2's "Shared dataset" panel). Default: with no ``store`` given, the
        process's (:func:`biastest.runner.services.shared_dataset`); with a ``store`` given, none.
    generation_seconds : float
        Time limit of one image-generation run (the Stop button ends a run sooner; both keep what was made).
    index_link : bool
        Show the link back to the suite's index page (:data:`~biastest.ui.common.INDEX_LINK`; the suite's server
        sets it).
    """
    handlers = VQAApp(store, use_store=use_store, dataset=dataset, generation_seconds=generation_seconds)
    with gr.Blocks(title="biastest · vision-language models", delete_cache=gradio_cache_policy()) as demo:
        session = gr.State(new_session(), delete_callback=discard_session)
        show_index_link(index_link)
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs(selected="spec", elem_id="steps") as tabs:
            with gr.Tab("1 · Bias specification", id="spec", elem_id="tab-spec"):
                gr.Markdown(SPEC_HELP, elem_classes=["bt-hint"])
                spec_in = build_spec_inputs(kinds=("image", "bias"), labels=SPEC_LABELS)
                with gr.Row():
                    next1 = gr.Button("Next: test data →", variant="primary", elem_id="spec-next")
                    new1 = gr.Button("New bias test", elem_id="new-test-1")
            with gr.Tab("2 · Test data", id="data", interactive=False, elem_id="tab-data") as tab2:
                images = build_images_section(demo, handlers, session)
                model = build_model_section()
            with gr.Tab("3 · Results", id="results", interactive=False, elem_id="tab-results") as tab3:
                results = build_results_tab(session)
                vqa_compare = compare.build_vlm_compare()

        # step 1: the library fills the boxes; each box is checked as the user leaves it
        spec_boxes = [spec_in.library, *spec_in.term_boxes]
        # .input: only the user's pick fills the boxes (a reset to Custom must not empty them again later)
        spec_in.library.input(user_errors(fill_from_library), spec_in.library,
                               [*spec_in.term_boxes, spec_in.message], queue=False)
        # one queued listener for every box, one event at a time: answers cannot overtake each other
        wire_validation(spec_in, concurrency_id="vqa-spec-validate")
        images.show_panel(next1.click(handlers.confirm_handler, [session, *spec_boxes],
                                      [session, spec_in.message, tabs, tab2, tab3, images.upload_term,
                                       *images.views]))
        wire_run(session, model, results, tabs, tab3)
        compare.wire_vlm_compare(vqa_compare, session, clear_on=[model.run_btn])

        # New bias test: back to step 1, every input and output cleared, a fresh session (old images deleted)
        resets: list[tuple[Any, Any]] = [
            (spec_in.library, CUSTOM), *((b, "") for b in spec_in.term_boxes), (spec_in.message, ""),
            *images.resets, *model.resets, *results.resets, *vqa_compare.resets(),
        ]
        reset_outputs = [session, tabs, tab2, tab3, *(c for c, _ in resets)]

        def reset(old):
            discard_session(old)
            return (new_session(), *gated_tabs_reset(), *(v for _, v in resets))

        for btn in (new1, model.new_btn, results.new_btn):
            btn.click(user_errors(reset), session, reset_outputs, queue=False)
        end_session_files_on_unload(demo)
    return demo
