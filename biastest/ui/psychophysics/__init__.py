"""The word-embedding app: psychophysics 2AFC, WEAT/MAC, a Bayesian estimate and the posterior sampler.

Three gated tabs (specification → data → results). All per-user data lives
in one ``gr.State`` dictionary (the *session*, :mod:`.state`); embeddings load
once per process through the shared model cache. A mistake the user can fix
(:data:`~biastest.ui.common.USER_MISTAKES`) is shown inline next to the control
that met it and as a yellow toast, and the handler leaves its other outputs as
they were; every handler is wrapped with :func:`~biastest.ui.common.user_errors`
so anything else is a red error with a plain message, never a traceback. The report layer
(the measures' own reports, e.g. :mod:`biastest.measures.twoafc.report`) turns typed results into tables and
figures.

One module per section, each holding its controls (``build``) and their
handlers (``wire``):

* :mod:`.spec` — step 1: the specification and the embedding source;
* :mod:`.data` — step 2: the words found, the replicate set, the run options and the run;
* :mod:`.chat` — step 2's "Which model?" for a 2AFC test: a chat model asked questions (the ``twoafc-chat``
  measure), its cost and run, and its results in step 3;
* :mod:`.classifier` — step 2's text classifier (the ``classifier-2afc`` measure) and its results in step 3;
* :mod:`.curves` — under the chat model, its psychometric curves along a continuum of names per context
  (the ``psychometric-chat`` measure) and their results in step 3;
* :mod:`.model_compare` — step 3's “Compare with another chat model” under the chat model's answers and curves;
* :mod:`.results` — step 3: the 2AFC and WEAT/MAC results;
* :mod:`biastest.ui.compare` — step 3's “Compare with another embedding” (shared with the other apps);
* :mod:`.bayes` — the Bayesian estimate with control groups; :mod:`.bayes_compare` — the same estimate on a second
  embedding (this one hard-debiased, or another) and the HDI of each contrast's difference;
* :mod:`.posterior` — the posterior of embeddings given a sentiment classifier.

This module wires the sections into one Blocks and re-exports the names the
app file, the tests and the benchmarks use (``from biastest.ui import
psychophysics as app; app.run_core``).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.ui import compare
from biastest.ui.common import (
    end_session_files_on_unload,
    gated_tabs_reset,
    gradio_cache_policy,
    measure_label,
    user_errors,
)
from biastest.ui.common import (
    index_link as common_index_link,
)
from biastest.ui.psychophysics import bayes, bayes_compare, chat, classifier, curves, data, posterior, results, spec
from biastest.ui.psychophysics.bayes import (
    BAYES_DEFAULTS,
    MSG_BAYES_DONE,
    MSG_BAYES_NEEDS_WEAT,
    bayes_core,
    bayes_handler,
    bayes_view,
    priors_handler,
)
from biastest.ui.psychophysics.data import (
    MSG_BAD_INT,
    MSG_BAD_SIGMA,
    MSG_EMBEDDING_REFUSED,
    MSG_NO_CORPUS,
    MSG_NO_REPLICATE_FILES,
    MSG_TRAIN_FIRST,
    REPLICATES_NONE,
    REPLICATES_TRAIN,
    REPLICATES_UPLOAD,
    female_cue_side,
    make_run_handler,
    run_core,
    train_handler,
    train_replicates_core,
)
from biastest.ui.psychophysics.posterior import (
    MSG_POSTERIOR_DONE,
    POSTERIOR_DEFAULTS,
    posterior_core,
    posterior_handler,
    posterior_view,
)
from biastest.ui.psychophysics.results import curve_handler, results_view
from biastest.ui.psychophysics.spec import (
    CUSTOM,
    DEFAULT_SOURCE,
    KIND_TWOAFC,
    KIND_WEAT,
    MSG_CUE_PAIRS_DROPPED,
    MSG_EMBEDDING_CANNOT,
    MSG_NO_CUE_PAIR_LEFT,
    MSG_NO_PATH,
    MSG_NO_UPLOAD,
    MSG_PATHS_DISABLED,
    MSG_SPEC_OK_TWOAFC,
    MSG_SPEC_OK_WEAT,
    SOURCE_PATH,
    SOURCE_UPLOAD,
    confirm_spec_core,
    embedding_source_id,
    fill_twoafc,
    fill_weat,
    lookup_frame,
    lookup_markdown,
    source_choices,
    spec_message,
    twoafc_spec_from_inputs,
    validate_step1,
    weat_spec_from_inputs,
)
from biastest.ui.psychophysics.state import MSG_RUN_FIRST, MSG_SPEC_FIRST, new_session

__all__ = [
    "BAYES_DEFAULTS",
    "CUSTOM",
    "DEFAULT_SOURCE",
    "KIND_TWOAFC",
    "KIND_WEAT",
    "MSG_BAD_INT",
    "MSG_BAD_SIGMA",
    "MSG_BAYES_DONE",
    "MSG_BAYES_NEEDS_WEAT",
    "MSG_CUE_PAIRS_DROPPED",
    "MSG_EMBEDDING_CANNOT",
    "MSG_EMBEDDING_REFUSED",
    "MSG_NO_CORPUS",
    "MSG_NO_CUE_PAIR_LEFT",
    "MSG_NO_PATH",
    "MSG_NO_REPLICATE_FILES",
    "MSG_NO_UPLOAD",
    "MSG_PATHS_DISABLED",
    "MSG_POSTERIOR_DONE",
    "MSG_RUN_FIRST",
    "MSG_SPEC_FIRST",
    "MSG_SPEC_OK_TWOAFC",
    "MSG_SPEC_OK_WEAT",
    "MSG_TRAIN_FIRST",
    "POSTERIOR_DEFAULTS",
    "REPLICATES_NONE",
    "REPLICATES_TRAIN",
    "REPLICATES_UPLOAD",
    "SOURCE_PATH",
    "SOURCE_UPLOAD",
    "bayes_core",
    "bayes_handler",
    "bayes_view",
    "build_demo",
    "confirm_spec_core",
    "curve_handler",
    "embedding_source_id",
    "female_cue_side",
    "fill_twoafc",
    "fill_weat",
    "lookup_frame",
    "lookup_markdown",
    "make_run_handler",
    "new_session",
    "posterior_core",
    "posterior_handler",
    "posterior_view",
    "priors_handler",
    "results_view",
    "run_core",
    "source_choices",
    "spec_message",
    "train_handler",
    "train_replicates_core",
    "twoafc_spec_from_inputs",
    "validate_step1",
    "weat_spec_from_inputs",
]

HEADER = """
# Word embeddings: psychophysics, WEAT/MAC and Bayesian bias estimates

Test whether a word embedding (a table that turns each word into a list of numbers, as used inside many AI
systems) links words such as occupations to one social group more than to another. **2AFC psychophysics**
asks the embedding, for each target word, to choose between two cue words (e.g. *woman* or *man*) while the
cue is mixed gradually from one to the other; the mix at which it switches sides is the *point of subjective
equality* (PSE: 0.5 = no preference). **WEAT / MAC** compare the average similarity of two target lists to two
attribute lists. The embedded GloVe 6B 50d runs offline; you can upload your own word vectors.
"""


def build_demo(*, allow_server_paths: bool | None = None, index_link: bool = False) -> gr.Blocks:
    """The app's Blocks (no queue, no launch: :func:`biastest.ui.serve.configure_queue` does that).

    Parameters
    ----------
    allow_server_paths : bool, optional
        Offer "a file on this server (path)" as an embedding source. Default: the
        process's public-mode decision (:mod:`biastest.public`: off when public). A
        public server never offers it, whatever this says.
    index_link : bool
        Show the link back to the suite's index page (:data:`~biastest.ui.common.INDEX_LINK`; the suite's server
        sets it).
    """
    allow_paths = spec.paths_allowed() and (allow_server_paths is None or bool(allow_server_paths))
    with gr.Blocks(title="biastest · word embeddings", delete_cache=gradio_cache_policy()) as demo:
        session = gr.State(new_session())
        common_index_link(index_link)
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs(selected="spec", elem_id="steps") as tabs:
            with gr.Tab("1 · Bias specification", id="spec", elem_id="tab-spec"):
                step1 = spec.build(allow_paths=allow_paths)
            with gr.Tab("2 · Test data", id="data", interactive=False, elem_id="tab-data") as tab2:
                step2 = data.build(model_choice=chat.build_step2)
            with gr.Tab("3 · Results", id="results", interactive=False, elem_id="tab-results") as tab3:
                step3 = results.build()
                chat_res = chat.build_results()
                curve_res = curves.build_results()
                clf_res = classifier.build_results()
                compare_ui = compare.build_embedding_compare(allow_paths=allow_paths)
                with gr.Accordion(measure_label("bayes"), open=False, elem_id="bayes-section"):
                    bayes_ui = bayes.build()
                    bayes_cmp = bayes_compare.build(allow_paths=allow_paths)
                with gr.Accordion(measure_label("posterior"), open=False, elem_id="posterior-section"):
                    post_ui = posterior.build()
                new3 = gr.Button("New bias test", variant="secondary", elem_id="new-test-3")

        spec.wire(step1, session, allow_paths=allow_paths, tabs=tabs, tab2=tab2, tab3=tab3, data=step2)
        data.wire(step2, session, tabs=tabs, tab3=tab3, results=step3,
                  stale=[*bayes_ui.resets(), *post_ui.resets(), *chat_res.resets(), *curve_res.resets(),
                         *clf_res.resets()])
        chat.wire(step2.chat, session, data=step2, results=step3, chat_results=chat_res, tabs=tabs, tab3=tab3,
                  stale=[*bayes_ui.resets(), *post_ui.resets()])
        curves.wire(step2.chat.curves, session, chat=step2.chat, seed=step2.seed, curve_results=curve_res,
                    tabs=tabs, tab3=tab3)
        classifier.wire(step2.chat.classifier, session, seed=step2.seed, results=clf_res, tabs=tabs, tab3=tab3)
        results.wire(step3, session)
        compare.wire_embedding_compare(compare_ui, session, allow_paths=allow_paths,
                                       clear_on=[step2.run])
        bayes.wire(bayes_ui, session)
        bayes_compare.wire(bayes_cmp, session, allow_paths=allow_paths, clear_on=(bayes_ui.run,))
        posterior.wire(post_ui, session)

        # New bias test: back to step 1, every input and output cleared, a fresh session
        resets: list[tuple[Any, Any]] = [
            *(pair for sec in (step1, step2, step2.chat, step2.chat.curves, step2.chat.classifier, step3, chat_res,
                               curve_res, clf_res, compare_ui, bayes_ui, bayes_cmp, post_ui)
              for pair in sec.resets())
        ]
        reset_outputs = [session, tabs, tab2, tab3, *(c for c, _ in resets)]

        def reset():
            return (new_session(), *gated_tabs_reset(), *(v for _, v in resets))

        for btn in (step1.new, step2.new, new3):
            btn.click(user_errors(reset), None, reset_outputs, queue=False)
        end_session_files_on_unload(demo)
    return demo
