"""The language-model app (``app_gpt.py``): BiasTestGPT rebuilt so its numbers can be trusted.

Step 1 — a bias specification (library or four term boxes). Step 2 — test
sentence pairs: found in the dataset, imported from a file (BiasTestGPT,
CrowS-Pairs, StereoSet) or generated (OpenAI key, an OpenAI-compatible
endpoint, or a local model); an editable table; the model to test — on this
server (a list that says where each model comes from: this machine, or the
Hub when online; :mod:`biastest.ui.model_picker`) or behind an endpoint
(address, served name, a key for this session only) — and the scoring
method; or a chat model that is asked which sentence of each pair is more plausible, in both orders
(:mod:`.chat`: the forced-choice measure, its prompt template and its cost before the run). Step 3 — results:
the score with its interval, per-term bars,
a per-pair grid with hover, a plain-language reading, CSV and JSON downloads, and “Compare with another model”
(:mod:`biastest.ui.compare`: more models on the same pairs, compared pair by pair); for a chat model's result, the
forced-choice figures (:mod:`.chat`). A last tab, "BBQ benchmark" (:mod:`.bbq`), asks a chat model BBQ questions
(no specification needed).

All per-user data lives in ``gr.State``; the model cache and the store are
process-wide services.

Messages: a mistake the user fixes by editing an input (:data:`USER_MISTAKES`) is shown next to the button that
met it (``⚠️`` + the escaped message) with a yellow toast; what editing cannot fix (a model that cannot be
loaded, an unexpected error) is shown in the message box of the button that started it, with what failed and that
the inputs are kept (:func:`inline_failures`, :data:`MSG_ACTION_FAILED`), and a toast; only an error outside the
handlers leaves :data:`MSG_FAILED` there. Each
action of step 2 clears the messages of the others, which described an earlier table. Every pair in the table is
checked as generated pairs are (:func:`report.row_problems`): pairs added that fail are left unticked,
and a run with a kept row that fails is refused, naming the rows. The run checks all its inputs at once and only
then waits for the model, which one test uses at a time (a run that waited for a Gradio concurrency slot first
left a mistake unanswered, and silent, for as long as another user's test took).

The app is a package: :mod:`.handlers` holds its constants, session state and event handlers (plain values in and
out, for tests), :mod:`.layout` its three steps' builders and their wiring; this module re-exports both, so
``from biastest.ui.gpt import build_demo`` (``app_gpt.py``) and the tests' ``gpt.run_test`` read as before.
"""

from __future__ import annotations

from biastest.report.text import md_escape
from biastest.ui.gpt import bbq, chat
from biastest.ui.gpt.handlers import (
    CLUSTER_CHOICES,
    CLUSTER_INFO,
    DEFAULT_METHOD,
    INTRO,
    METHOD_HELP,
    MODEL_CHAT,
    MODEL_ENDPOINT,
    MODEL_HERE,
    MODEL_WHERE_CHOICES,
    MSG_ACTION_FAILED,
    MSG_BAD_SEED,
    MSG_ENDPOINT_HINT,
    MSG_FAILED,
    MSG_FOUND,
    MSG_IMPORTED,
    MSG_LEFT_UNTICKED,
    MSG_NO_FILE,
    MSG_NO_MODEL,
    MSG_NO_SPEC,
    MSG_NOTHING_FOUND,
    MSG_PANEL_ITEM,
    MSG_PANEL_NONE_SAVED,
    MSG_PANEL_SAVED_HEAD,
    MSG_RUN_DONE,
    MSG_RUN_PARTIAL,
    MSG_TESTING,
    MSG_TESTING_TERMS,
    MSG_TOAST_PARTIAL,
    MSG_UNEXPECTED_REASON,
    MSG_WAITING_FOR_MODEL,
    RECLUSTER_OUTPUTS,
    RUN_OUTPUTS,
    SUGGESTED_MODELS,
    TESTING_TERMS_SHOWN,
    USER_MISTAKES,
    _dataset,
    _few,
    _fresh_state,
    _merge,
    _model_info,
    _model_slot,
    _seed,
    _spec,
    confirm_spec,
    dataset_panel,
    failure_message,
    find_sentences,
    generate,
    import_file,
    inline,
    inline_failures,
    method_choices,
    method_info,
    model_where_visibility,
    panel_handler,
    prompt_info,
    recluster,
    refresh_handler,
    restart,
    run_test,
    scoring_methods,
    testing_line,
)
from biastest.ui.gpt.layout import TABLE_COLUMN_WIDTHS, build_demo, build_step1, build_step2, build_step3, wire_steps
from biastest.ui.spec_step import CUSTOM, fill_from_library, spec_from_inputs

__all__ = [
    "CLUSTER_CHOICES",
    "CLUSTER_INFO",
    "CUSTOM",
    "DEFAULT_METHOD",
    "INTRO",
    "METHOD_HELP",
    "MODEL_CHAT",
    "MODEL_ENDPOINT",
    "MODEL_HERE",
    "MODEL_WHERE_CHOICES",
    "MSG_BAD_SEED",
    "MSG_ENDPOINT_HINT",
    "MSG_ACTION_FAILED",
    "MSG_FAILED",
    "MSG_UNEXPECTED_REASON",
    "MSG_FOUND",
    "MSG_IMPORTED",
    "MSG_LEFT_UNTICKED",
    "MSG_NOTHING_FOUND",
    "MSG_NO_FILE",
    "MSG_NO_MODEL",
    "MSG_NO_SPEC",
    "MSG_PANEL_ITEM",
    "MSG_PANEL_NONE_SAVED",
    "MSG_PANEL_SAVED_HEAD",
    "MSG_RUN_DONE",
    "MSG_RUN_PARTIAL",
    "MSG_TESTING",
    "MSG_TESTING_TERMS",
    "MSG_TOAST_PARTIAL",
    "MSG_WAITING_FOR_MODEL",
    "RECLUSTER_OUTPUTS",
    "RUN_OUTPUTS",
    "SUGGESTED_MODELS",
    "TABLE_COLUMN_WIDTHS",
    "TESTING_TERMS_SHOWN",
    "USER_MISTAKES",
    "_dataset",
    "_few",
    "_fresh_state",
    "_merge",
    "_model_info",
    "_model_slot",
    "_seed",
    "_spec",
    "build_demo",
    "build_step1",
    "build_step2",
    "bbq",
    "build_step3",
    "chat",
    "confirm_spec",
    "dataset_panel",
    "fill_from_library",
    "find_sentences",
    "generate",
    "import_file",
    "failure_message",
    "inline",
    "inline_failures",
    "md_escape",
    "method_choices",
    "method_info",
    "model_where_visibility",
    "panel_handler",
    "prompt_info",
    "recluster",
    "refresh_handler",
    "restart",
    "run_test",
    "scoring_methods",
    "spec_from_inputs",
    "testing_line",
    "wire_steps",
]
