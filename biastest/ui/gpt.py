"""The language-model app (``app_gpt.py``): BiasTestGPT rebuilt so its numbers can be trusted.

Step 1 — a bias specification (library or four term boxes). Step 2 — test
sentence pairs: found in the dataset, imported from a file (BiasTestGPT,
CrowS-Pairs, StereoSet) or generated (OpenAI key, an OpenAI-compatible
endpoint, or a local model); an editable table; the model to test — on this
server (a list that says where each model comes from: this machine, or the
Hub when online; :mod:`biastest.ui.model_picker`) or behind an endpoint
(address, served name, a key for this session only) — and the scoring
method. Step 3 — results: the score with its interval, per-term bars,
a per-pair grid with hover, a plain-language reading, CSV and JSON downloads, and “Compare with another model”
(:mod:`biastest.ui.compare`: more models on the same pairs, compared pair by pair).

All per-user data lives in ``gr.State``; the model cache and the store are
process-wide services.

Messages: a mistake the user fixes by editing an input (:data:`USER_MISTAKES`) is shown next to the button that
met it (``⚠️`` + the escaped message) with a yellow toast; what editing cannot fix (a model that cannot be
loaded, an unexpected error) is a red error, and the button's message box then says so (:data:`MSG_FAILED`). Each
action of step 2 clears the messages of the others, which described an earlier table. Every pair in the table is
checked as generated pairs are (:func:`report.row_problems`): pairs added that fail are left unticked,
and a run with a kept row that fails is refused, naming the rows. The run checks all its inputs at once and only
then waits for the model, which one test uses at a time (a run that waited for a Gradio concurrency slot first
left a mistake unanswered, and silent, for as long as another user's test took).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import BiastestError, DataError, EndpointError, GenerationError, SpecError
from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as lm_run
from biastest.measures.stereotype.clusters import check_clusters
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.stereotype.score import METHODS, get_method
from biastest.measures.stereotype.summary import with_clusters
from biastest.models.catalog import CATALOGS
from biastest.records import SentencePair
from biastest.report.text import md_escape
from biastest.runner import services
from biastest.spec import BiasSpec
from biastest.ui import compare
from biastest.ui.common import USER_MISTAKES as COMMON_USER_MISTAKES
from biastest.ui.common import (
    end_session_files_on_unload,
    gated_tabs_reset,
    gradio_cache_policy,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.dataset_panel import build_dataset_panel, panel_markdown
from biastest.ui.model_picker import build_model_picker
from biastest.ui.spec_step import (
    CUSTOM,
    build_spec_inputs,
    fill_from_library,
    spec_from_inputs,
    spec_summary,
    wire_validation,
)
from biastest.ui.stop import StopControl, time_limit_hint

__all__ = ["SUGGESTED_MODELS", "build_demo", "dataset_panel"]

log = logging.getLogger("biastest.ui.gpt")

#: Suggested Hub ids (the model list also offers the models on this machine first: :mod:`biastest.ui.model_picker`;
#: any Hub id or local folder may be typed instead).
SUGGESTED_MODELS = list(CATALOGS["lm"].hub_ids)
#: Where the model to test runs (step 2's choice): loaded in this process, or served elsewhere.
MODEL_HERE = "here"
MODEL_ENDPOINT = "endpoint"
MODEL_WHERE_CHOICES = [("A model on this server", MODEL_HERE), ("A model behind an endpoint", MODEL_ENDPOINT)]
MSG_ENDPOINT_HINT = (
    "The model is scored where it is served, through the OpenAI completions protocol with prompt "
    "log-probabilities (vLLM, llama.cpp's server). **causal-sum** and **causal-diff-span** work; the masked-LM "
    "methods need the model in this process. Hosted chat models such as GPT-4o give no prompt log-probabilities "
    "and cannot be scored. The key is used for this session's requests only: it is never stored, logged or "
    "written to the results."
)
MSG_RUN_PARTIAL = (
    "⚠️ Tested {n_scored} of {n} sentence pairs with {model}: the results in step 3 are partial. {why}"
)
MSG_TOAST_PARTIAL = "The endpoint stopped early: the results are partial (step 2 says why)."
#: Step 3's choice of the pairs that lean together (the cluster-aware interval and test), in plain words.
CLUSTER_CHOICES = [
    ("Automatic: pairs from one template, else pairs sharing an attribute term", "auto"),
    ("Pairs made from the same template sentence", "template"),
    ("Pairs that share an attribute term", "attribute-term"),
    ("None: treat every pair as independent", "pair"),
]
CLUSTER_INFO = (
    "Pairs of one family lean together, so they count as one piece of evidence: the interval and the test "
    "resample and count whole families. Changing this recomputes the results without running the model again."
)

INTRO = """# Language models: stereotype score
Does a language model find stereotyped sentences more likely than their counterparts? Describe the bias
(two social groups and two attribute lists), get test sentence pairs that differ only in the group term,
and see in what share of the pairs the model prefers the stereotyped sentence (50 % = no preference),
with an uncertainty interval and every pair inspectable."""

METHOD_HELP = "\n".join(f"- **{m.name}** ({', '.join(m.kinds)} models): {m.summary}" for m in METHODS.values())

MSG_NO_SPEC = "Complete step 1 first: the bias specification is missing."
MSG_FOUND = "{where} Found {n_pairs} sentence pairs for this specification."
MSG_NOTHING_FOUND = "No stored sentences match this specification yet. Generate some below or import a file."
MSG_IMPORTED = "Imported {n} sentence pairs from {name}."
MSG_NO_FILE = "Choose a file to import first."
MSG_NO_MODEL = "Type or choose the model to test (a Hub id such as gpt2, or a local folder)."
MSG_BAD_SEED = "The seed must be a whole number, got {value!r}."
MSG_LEFT_UNTICKED = (
    "{count} of the new pairs are left unticked and will not be tested, for the reasons below. Fix them and tick "
    "'Keep', or leave them out:"
)
MSG_FAILED = "⛔ That did not work: the message at the top right of the page says why. Your inputs are kept."
MSG_WAITING_FOR_MODEL = "Waiting for another test to finish (one test runs at a time on this server)…"
MSG_RUN_DONE = "✅ Tested {n} sentence pairs with {model}: the results are in step 3."
MSG_TESTING = "**Testing:** {what}"
MSG_TESTING_TERMS = "{g1} vs {g2}, with {a1} vs {a2}"
MSG_PANEL_NONE_SAVED = (
    "You have not generated sentences in this session yet. Sentences you generate are saved to this server's store "
    "as soon as they are made, and shared on the dataset when sharing is on (see above)."
)
MSG_PANEL_SAVED_HEAD = "Sentences you generated ({n} run(s)): {counts}."
MSG_PANEL_ITEM = "{sentences} sentence(s) and {pairs} pair(s) from {model}: {state}"

#: Mistakes the user fixes by changing an input: shown inline next to the control, with a yellow toast (never red).
#: The apps' list, and a generation's own setup mistakes (no key, no address, a count out of bounds).
USER_MISTAKES = (*COMMON_USER_MISTAKES, GenerationError)
#: Terms of each list that the "Testing:" line of step 2 names before "…".
TESTING_TERMS_SHOWN = 3


def _fresh_state() -> dict[str, Any]:
    # "shared": one entry per generation run whose sentences were stored (the store files written), for the panel
    return {"spec": None, "result": None, "shared": []}


def _dataset(dataset=None):
    """``dataset``, or the process's shared dataset (:func:`biastest.runner.services.shared_dataset`)."""
    return dataset if dataset is not None else services.shared_dataset()


def dataset_panel(state: dict[str, Any] | None, dataset) -> str:
    """The "Shared dataset" panel: the dataset's summary and the sync state of the sentences this session generated.

    Reads local state only (the last pull, the push journal), so it never waits for the network
    (:func:`biastest.ui.dataset_panel.panel_markdown`). ``dataset`` None: no panel ("").
    """
    items = [(run["files"], {"sentences": run["sentences"], "pairs": run["pairs"], "model": run["model"]})
             for run in (state or {}).get("shared") or []]
    return panel_markdown(dataset, items, none_saved=MSG_PANEL_NONE_SAVED, head=MSG_PANEL_SAVED_HEAD,
                          item=MSG_PANEL_ITEM)


def panel_handler(state, *, dataset=None) -> str:
    """Redraw the panel (a timer calls this every few seconds); never raises, never waits for the network."""
    try:
        return dataset_panel(state, _dataset(dataset))
    except Exception:  # the panel must never break step 2
        log.exception("the shared-dataset panel could not be drawn")
        return ""


def refresh_handler(state, *, dataset=None) -> str:
    """"Refresh from the dataset": ask for a pull now and redraw the panel; returns at once (the pull runs aside)."""
    try:
        _dataset(dataset).refresh()
    except Exception:
        log.exception("the shared dataset could not be refreshed")
    return panel_handler(state, dataset=dataset)


def inline(exc: BiastestError) -> str:
    """A user's mistake as the inline Markdown of the control that caused it (⚠️, escaped), and a warning toast.

    As :func:`biastest.ui.common.warn_inline`, for this app's Markdown message boxes: a message of several lines (a
    headline, then ``- `` lines, as :func:`report.problems_message` writes them) becomes a list, and
    the toast gives the headline.
    """
    head, *rest = exc.message.split("\n")
    gr.Warning(head)
    lines = [f"⚠️ {md_escape(head)}"]
    lines += [f"- {md_escape(line[2:])}" if line.startswith("- ") else md_escape(line) for line in rest]
    return "\n".join(lines)


def _few(terms: Sequence[str]) -> str:
    shown = ", ".join(terms[:TESTING_TERMS_SHOWN])
    return shown + ("…" if len(terms) > TESTING_TERMS_SHOWN else "")


def testing_line(spec: BiasSpec) -> str:
    """Step 2's "Testing:" line: the spec's name and its terms (a custom spec is named by its terms only)."""
    terms = MSG_TESTING_TERMS.format(g1=_few(spec.group1), g2=_few(spec.group2), a1=_few(spec.attributes1),
                                     a2=_few(spec.attributes2))
    custom = inspect.signature(BiasSpec.from_terms).parameters["name"].default
    what = md_escape(terms) if spec.name == custom else f"{md_escape(spec.name)} — {md_escape(terms)}"
    return MSG_TESTING.format(what=what)


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


def _merge(table: pd.DataFrame | None, pairs: Sequence[SentencePair]) -> tuple[pd.DataFrame, str]:
    """The table with ``pairs`` added (duplicates dropped) and a note on the new rows that fail the pair check.

    New rows that are not minimal pairs about their group terms (:func:`report.row_problems`) are added
    unticked, so they are not tested, and the note (Markdown, with a warning toast) says which and why.
    """
    st, anti = report.PAIR_HEADERS["stereotyped"], report.PAIR_HEADERS["anti_stereotyped"]
    new = report.pairs_to_table(pairs)
    old = report.as_display_table(table)
    merged = pd.concat([old, new], ignore_index=True) if len(old) else new
    merged = merged.drop_duplicates(subset=[st, anti], keep="first")
    added = [i for i, index in enumerate(merged.index) if index >= len(old)]
    merged = merged.reset_index(drop=True)
    problems = report.row_problems(merged, added)
    if not problems:
        return merged, ""
    merged.loc[list(problems), report.PAIR_HEADERS["keep"]] = False
    head = MSG_LEFT_UNTICKED.format(count=len(problems))
    gr.Warning(head)
    listed = [f"- {md_escape(m)}" for m in list(problems.values())[: report.MAX_LISTED]]
    if len(problems) > report.MAX_LISTED:
        listed.append(md_escape(report.MSG_ROWS_MORE.format(count=len(problems) - report.MAX_LISTED)))
    return merged, "\n\n" + "\n".join([f"⚠️ {md_escape(head)}", *listed])


# ------------------------------------------------------------------ handlers
# Step 2's messages: every action sets its own and clears the others, which described an earlier table.
@user_errors
def confirm_spec(library, g1, g2, s1, a1, state):
    """Step 1 → step 2. A new spec starts a clean step 2 (empty table, no messages); the same spec keeps it.

    Outputs: state, spec message, tabs, data tab, "Testing:" line, table, find message, coverage, import message,
    generation message, run message.
    """
    try:
        spec = spec_from_inputs(library, g1, g2, s1, a1)
    except SpecError as exc:
        return (state, inline(exc), *(gr.skip(),) * 9)
    tabs, tab = unlock_step("data")
    if state and state.get("spec") == spec.to_dict():
        return (state, spec_summary(spec), tabs, tab, testing_line(spec), *(gr.skip(),) * 6)
    state = {**_fresh_state(), "shared": list((state or {}).get("shared") or []), "spec": spec.to_dict()}
    return (state, spec_summary(spec), tabs, tab, testing_line(spec), report.pairs_to_table([]), "", "", "", "", "")


@user_errors
def find_sentences(state, table, *, dataset=None):
    """Outputs: table, find message, coverage, import message, generation message, run message.

    Reads the store of ``dataset`` (default: the process's shared dataset) without waiting for the network; the
    message says where the found sentences come from
    (:meth:`~biastest.store.shared.SharedDataset.found_line`).
    """
    try:
        spec = _spec(state)
    except SpecError as exc:
        return (gr.skip(), inline(exc), *(gr.skip(),) * 4)
    dataset = _dataset(dataset)
    found = services.retrieve_pairs(spec, dataset=dataset)
    if not found.pairs:
        return table, MSG_NOTHING_FOUND, found.coverage_markdown, "", "", ""
    merged, note = _merge(table, found.pairs)
    where = dataset.found_line("sentences", found.sentence_ids, what="sentences")
    message = md_escape(MSG_FOUND.format(where=where, n_pairs=len(found.pairs))) + note
    return merged, message, found.coverage_markdown, "", "", ""


@user_errors
def import_file(file, fmt, state, table):
    """Outputs: table, find message, import message, generation message, run message."""
    try:
        if file is None:
            raise DataError(MSG_NO_FILE)
        spec = _spec(state)
        path = file if isinstance(file, str) else getattr(file, "name", file)
        pairs = services.import_pairs(path, fmt=fmt, spec=spec)
    except USER_MISTAKES as exc:
        return (gr.skip(), gr.skip(), inline(exc), gr.skip(), gr.skip())
    merged, note = _merge(table, pairs)
    message = MSG_IMPORTED.format(n=len(pairs), name=md_escape(str(path).rsplit("/", 1)[-1])) + note
    return merged, "", message, "", ""


@user_errors
def generate(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table, progress=gr.Progress(), *,
             cancel=None, max_seconds=services.GENERATION_MAX_SECONDS, dataset=None):
    """Generate the missing sentences; a run stopped (``cancel`` set, or ``max_seconds`` passed) keeps its pairs.

    The pairs made before a stop are stored and added to the table like those of a finished run; the message says
    why the run stopped and how many were kept, and the coverage table is brought up to date. They are stored in
    ``dataset``'s store (default: the process's shared dataset), which shares them when sharing is on; the session
    remembers the files written, whose sync state the "Shared dataset" panel shows.

    Outputs: table, find message, coverage, import message, generation message, run message, state.
    """
    try:
        spec = _spec(state)
        dataset = _dataset(dataset)
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
            dataset=dataset,
        )
    except USER_MISTAKES as exc:
        return (gr.skip(), gr.skip(), gr.skip(), gr.skip(), inline(exc), gr.skip(), gr.skip())
    if run.shards:
        stored = {"files": list(run.shards), "sentences": len(run.sentences), "pairs": len(run.pairs),
                  "model": str(model or "").strip()}
        state = {**state, "shared": [*(state.get("shared") or []), stored]}
    merged, note = _merge(table, run.pairs) if run.pairs else (table, "")
    coverage = services.retrieve_pairs(spec, dataset=dataset).coverage_markdown
    return merged, "", coverage, "", md_escape(run.report.message) + note, "", state


@contextlib.contextmanager
def _model_slot(slot: threading.Lock | None, progress) -> Iterator[None]:
    """Hold ``slot`` (one test at a time) while scoring, saying so while another test holds it."""
    if slot is None:
        yield
        return
    report_progress = progress_callback(progress)
    while not slot.acquire(timeout=0.5):
        report_progress(0, 1, MSG_WAITING_FOR_MODEL)  # a known total: Gradio shows the text only with a bar
    try:
        yield
    finally:
        slot.release()


RUN_OUTPUTS = 11  # run message, state, tabs, results tab, summary, reading, 3 figures, 2 downloads


@user_errors
def run_test(model_id, method, seed, state, table, progress=gr.Progress(), *, slot: threading.Lock | None = None,
             endpoint: lm_run.LMEndpoint | None = None, clusters: str = "auto"):
    """Check everything the user typed, then score (holding ``slot``, if given, while the model runs).

    The inputs are checked before the test waits for the model, so a mistake (an empty table, a row that is not a
    minimal pair, a bad seed) is answered at once, whatever else the server is running.

    With ``endpoint`` (step 2's "A model behind an endpoint") the model served there is tested instead of
    ``model_id``: its address (public mode: a public one), served name and the method (not a masked-LM one) are
    checked first (:func:`lm_run.check_lm_endpoint`). What the endpoint answers unusably (no prompt
    log-probabilities, another model, a refused key, a server that keeps failing) is shown next to the button; a run
    that a limit stopped keeps what was scored and says it is partial. The key is used for the requests only.

    ``clusters`` is step 3's choice of the pairs that lean together (:data:`CLUSTER_CHOICES`).

    Outputs: run message, state, tabs, results tab, summary, reading, attribute bars, group bars, pair grid, CSV and
    JSON downloads.
    """
    from biastest import public

    skip = (gr.skip(),) * (RUN_OUTPUTS - 1)
    try:
        spec = _spec(state)
        seed = _seed(seed)
        clusters = check_clusters(clusters or "auto")
        method = get_method(method).name
        if endpoint is None:
            model = str(model_id or "").strip()
            if not model:
                raise DataError(MSG_NO_MODEL)
            model = public.check_model_reference(model)
        else:
            endpoint = lm_run.check_lm_endpoint(endpoint, method)
            model = endpoint.model
        pairs = report.pairs_from_table(table, spec_name=spec.name)
    except USER_MISTAKES as exc:
        return (inline(exc), *skip)
    try:
        with _model_slot(slot, progress):
            result = lm_run.run_lm_test(pairs=pairs, model_id=model, method=method, seed=seed, spec=spec,
                                        progress=progress_callback(progress), endpoint=endpoint, clusters=clusters)
    except (*USER_MISTAKES, EndpointError) as exc:  # an endpoint's answer: what to check is in the message
        return (inline(exc), *skip)
    state = {**state, "result": result.to_dict()}
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-lm-"))
    tabs, tab = unlock_step("results")
    served = result.provenance.get("model") if isinstance(result.provenance.get("model"), dict) else {}
    if served.get("complete") is False:
        gr.Warning(MSG_TOAST_PARTIAL)
        done = MSG_RUN_PARTIAL.format(n_scored=result.n_scored, n=len(pairs), model=md_escape(model),
                                      why=md_escape(str(served.get("stop_message") or "")))
    else:
        done = MSG_RUN_DONE.format(n=len(pairs), model=md_escape(model))
    return (
        done,
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


RECLUSTER_OUTPUTS = 7  # state, summary, reading, attribute bars, group bars, CSV and JSON downloads


@user_errors
def recluster(clusters, state):
    """Step 3's clusters changed: the last result summarised again with them (no model runs), files rewritten.

    Outputs: state, summary, reading, attribute bars, group bars, CSV and JSON downloads (all unchanged when there
    is no result yet).
    """

    if not isinstance(state, dict) or not state.get("result"):
        return (gr.skip(),) * RECLUSTER_OUTPUTS
    try:
        clusters = check_clusters(clusters or "auto")
    except USER_MISTAKES as exc:  # only through the API: the dropdown offers valid choices
        gr.Warning(exc.message)
        return (gr.skip(),) * RECLUSTER_OUTPUTS
    result = with_clusters(StereotypeResult.from_dict(state["result"]), clusters)
    csv_path, json_path = report.export_files(result, directory=session_export_dir("biastest-lm-"))
    return (
        {**state, "result": result.to_dict()},
        report.summary_markdown(result),
        report.interpretation(result),
        report.attribute_figure(result),
        report.group_figure(result),
        gr.DownloadButton(value=str(csv_path), visible=True),
        gr.DownloadButton(value=str(json_path), visible=True),
    )


def restart():
    """Back to step 1, everything cleared (the order of ``reset_outputs`` in :func:`build_demo`)."""
    tabs, t2, t3 = gated_tabs_reset()
    return (
        _fresh_state(),
        tabs,
        t2,
        t3,
        report.pairs_to_table([]),
        "",  # testing line
        "",  # find message
        "",  # coverage
        "",  # import message
        "",  # generation message
        "",  # run message
        "",  # summary
        "",  # reading
        None,
        None,
        None,
        gr.DownloadButton(visible=False),
        gr.DownloadButton(visible=False),
    )


def model_where_visibility(where: str) -> tuple[Any, Any]:
    """Show the model list for a model on this server, the endpoint's fields for one behind an endpoint."""
    return gr.Column(visible=where != MODEL_ENDPOINT), gr.Column(visible=where == MODEL_ENDPOINT)


def _model_info() -> str:
    from biastest import public

    if public.current().server_paths:
        return "Pick one, or type a Hugging Face Hub id or the folder of a saved model."
    return "Pick one, or type a Hugging Face Hub id."


def method_info(method: str) -> str:
    m = METHODS.get(method)
    if m is None:
        return ""
    return f"**{m.title}** — {m.summary} *Formula:* `{m.formula}`. *Reference:* {m.reference}."


# ------------------------------------------------------------------ layout
def prompt_info(name: str) -> str:
    """The description shown beside the prompt dropdown."""
    from biastest.generate.prompts import SENTENCE_PROMPTS

    prompt = SENTENCE_PROMPTS.get(name)
    return "" if prompt is None else md_escape(prompt.description)


def method_choices() -> list[tuple[str, str]]:
    """(short label, name) of every scoring method: the name and the kind of model it applies to."""
    return [(f"{m.name} ({'/'.join(m.kinds)} models)", m.name) for m in METHODS.values()]


#: Widths of the pairs table's columns (in the order of :data:`report.PAIR_HEADERS`): wide enough for
#: each header's longest word, so headers wrap between words; sentences wrap within their columns.
TABLE_COLUMN_WIDTHS = ["80px", "130px", "130px", "300px", "150px", "300px", "120px", "130px", "260px"]


def build_demo(*, generation_seconds: float = services.GENERATION_MAX_SECONDS, dataset=None) -> gr.Blocks:
    """Build the language-model app (no queue, no launch).

    Parameters
    ----------
    generation_seconds : float
        Time limit of one sentence-generation run (the Stop button ends a run sooner; both keep what was made).
    dataset : SharedDataset, optional
        The store and shared dataset that step 2 reads, writes and shows. Default: the process's
        (:func:`biastest.runner.services.shared_dataset`, started on first use).
    """
    stops = StopControl()
    model_slot = threading.Lock()  # one test scores at a time; its inputs are checked before it waits here

    def generate_handler(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                         request: gr.Request, progress=gr.Progress()):
        with stops.running(request) as cancel:
            return generate(kind, api_key, base_url, model, per_attribute, prompt, seed, state, table,
                            progress=progress, cancel=cancel, max_seconds=generation_seconds, dataset=dataset)

    def find_handler(state, table):
        return find_sentences(state, table, dataset=dataset)

    def show_panel_handler(state):
        return panel_handler(state, dataset=dataset)

    def refresh_panel_handler(state):
        return refresh_handler(state, dataset=dataset)

    def run_handler(model_id, method, seed, state, table, model_where, endpoint_url, endpoint_model, endpoint_key,
                    clusters="auto", progress=gr.Progress()):
        # the key lives in this call only: it is passed to the runner, never put in the session's state
        endpoint = (lm_run.LMEndpoint(endpoint_url, endpoint_model, endpoint_key) if model_where == MODEL_ENDPOINT
                    else None)
        # a model behind an endpoint does not use this server's model slot: it does not wait for a local test
        return run_test(model_id, method, seed, state, table, progress=progress,
                        slot=model_slot if endpoint is None else None, endpoint=endpoint, clusters=clusters)

    with gr.Blocks(title="biastest · language models", delete_cache=gradio_cache_policy()) as demo:
        state = gr.State(_fresh_state())
        gr.Markdown(INTRO)
        with gr.Tabs(selected="spec") as tabs:
            with gr.Tab("1 · Bias specification", id="spec"):
                inputs = build_spec_inputs()
                next_btn = gr.Button("Next: test sentences ▶", variant="primary", elem_id="spec-next")
            with gr.Tab("2 · Test sentences", id="data", interactive=False) as tab_data:
                testing = gr.Markdown("", elem_id="data-testing")
                show_panel, _, wire_panel = build_dataset_panel(
                    visible=True, session=state, panel_fn=show_panel_handler, refresh_fn=refresh_panel_handler)
                with gr.Row():
                    find_btn = gr.Button("Find sentences in the dataset", elem_id="data-find")
                find_msg = gr.Markdown("", elem_id="data-find-message")
                coverage = gr.Markdown("", elem_id="data-coverage")
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
                        gen_seed = gr.Number(label="Seed", value=42, precision=0)
                    with gr.Row():
                        gen_btn = gr.Button("Generate", elem_id="gen-run")
                        gen_stop = StopControl.button("gen-stop")
                    gen_msg = gr.Markdown("", elem_id="gen-message")
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
                model_where = gr.Radio(MODEL_WHERE_CHOICES, value=MODEL_HERE, label="Where the model to test runs",
                                       elem_id="model-where")
                with gr.Row():
                    with gr.Column() as model_here_box:
                        picker = build_model_picker("lm", label="Model to test", info=_model_info(),
                                                    elem_id="model-id", note_id="model-note")
                        model = picker.dropdown
                    with gr.Column(visible=False) as model_endpoint_box:
                        endpoint_url = gr.Textbox("", label="Endpoint address", placeholder="http://localhost:8000/v1",
                                                  elem_id="endpoint-url")
                        endpoint_model = gr.Textbox(
                            "", label="Served model name", placeholder="meta-llama/Llama-3.1-8B",
                            info="As the server lists it (vLLM: the model or --served-model-name; llama.cpp: --alias).",
                            elem_id="endpoint-model")
                        endpoint_key = gr.Textbox("", label="API key (optional; this session only, never stored)",
                                                  type="password", elem_id="endpoint-key")
                        gr.Markdown(MSG_ENDPOINT_HINT, elem_id="endpoint-hint", elem_classes=["bt-hint"])
                    with gr.Column():
                        method = gr.Dropdown(
                            choices=method_choices(),
                            value="causal-sum",
                            label="Scoring method",
                            elem_id="method",
                        )
                        method_md = gr.Markdown(method_info("causal-sum"), elem_id="method-info",
                                                elem_classes=["bt-hint"])
                    seed = gr.Number(label="Seed (intervals)", value=42, precision=0, elem_id="seed")
                with gr.Accordion("What the scoring methods do", open=False):
                    gr.Markdown(METHOD_HELP)
                run_btn = gr.Button("Run the test ▶", variant="primary", elem_id="data-run")
                run_msg = gr.Markdown("", elem_id="run-message", min_height=40)
                restart2 = gr.Button("New bias test", elem_id="restart-data")
            with gr.Tab("3 · Results", id="results", interactive=False) as tab_results:
                clusters = gr.Dropdown(choices=CLUSTER_CHOICES, value="auto", label="Pairs that lean together",
                                       info=CLUSTER_INFO, elem_id="clusters")
                summary = gr.Markdown("", elem_id="results-summary", elem_classes=["bt-score"])
                reading = gr.Markdown("", elem_id="results-reading")
                grid = gr.Plot(label="Every pair", elem_id="pair-grid")
                with gr.Row():
                    attr_plot = gr.Plot(label="Per attribute term", elem_id="attribute-bars")
                    group_plot = gr.Plot(label="Per group term", elem_id="group-bars")
                with gr.Row():
                    dl_csv = gr.DownloadButton("Download pairs (CSV)", visible=False, elem_id="download-csv")
                    dl_json = gr.DownloadButton("Download result (JSON)", visible=False, elem_id="download-json")
                compare_ui = compare.build_lm_compare(method_choices=method_choices())
                restart3 = gr.Button("New bias test", variant="secondary", elem_id="restart")

        spec_boxes = [inputs.library, *inputs.term_boxes]
        # .input, not .change: only the user's pick fills the boxes. 'New bias test' sets the dropdown back to Custom;
        # a .change would then empty the boxes again after the reset, wiping what a user typed meanwhile.
        inputs.library.input(user_errors(fill_from_library), inputs.library, [*inputs.term_boxes, inputs.message])
        wire_validation(inputs, concurrency_id="gpt-spec-validate")
        next_btn.click(
            confirm_spec,
            [*spec_boxes, state],
            [state, inputs.message, tabs, tab_data, testing, table, find_msg, coverage, import_msg, gen_msg, run_msg],
        )
        failed = []  # (event, its message box): a red error also ends in a message next to the button
        failed.append((find_btn.click(find_handler, [state, table],
                                      [table, find_msg, coverage, import_msg, gen_msg, run_msg]), find_msg))
        failed.append((import_btn.click(import_file, [upload, fmt, state, table],
                                        [table, find_msg, import_msg, gen_msg, run_msg]), import_msg))
        generation = stops.wire(
            demo,
            generate_btn=gen_btn,
            stop_btn=gen_stop,
            fn=generate_handler,
            inputs=[gen_kind, api_key, base_url, gen_model, per_attr, prompt, gen_seed, state, table],
            outputs=[table, find_msg, coverage, import_msg, gen_msg, run_msg, state],
            api_name="generate_sentences",
            concurrency_id="generation",
        )
        failed.append((generation, gen_msg))
        show_panel(generation)
        wire_panel()
        method.change(method_info, method, method_md, show_progress="hidden")
        prompt.change(prompt_info, prompt, prompt_md, show_progress="hidden")
        # an edit of the table makes the last run message (e.g. a row to fix) stale
        table.input(lambda: "", None, run_msg, queue=False, show_progress="hidden")
        # The run checks its inputs at once and only then waits for the model (``model_slot``), saying so in step 2:
        # waiting for a Gradio concurrency slot first left a zero-pair run silent behind other users' tests.
        model_where.change(model_where_visibility, model_where, [model_here_box, model_endpoint_box], queue=False,
                           show_progress="hidden")
        running = run_btn.click(
            run_handler,
            # the endpoint's fields come last: a call through the API that names a model on this server (model,
            # method, seed, table) keeps working, the rest taking their defaults
            [model, method, seed, state, table, model_where, endpoint_url, endpoint_model, endpoint_key, clusters],
            [run_msg, state, tabs, tab_results, summary, reading, attr_plot, group_plot, grid, dl_csv, dl_json],
            api_name="run_test",
            concurrency_id="gpt-run",
            concurrency_limit=4,
            show_progress_on=[run_msg],
        )
        failed.append((running, run_msg))
        compare.wire_lm_compare(compare_ui, state, slot=model_slot, clusters=clusters,
                                clear_on=[run_btn, restart2, restart3])
        clusters.input(recluster, [clusters, state], [state, summary, reading, attr_plot, group_plot, dl_csv, dl_json],
                       concurrency_id="gpt-recluster", show_progress_on=[summary])
        for event, box in failed:  # Gradio 6.31 runs ``.failure`` listeners (not ``.then``) after an error
            event.failure(lambda: MSG_FAILED, None, box, queue=False, show_progress="hidden")
        reset_outputs = [
            state,
            tabs,
            tab_data,
            tab_results,
            table,
            testing,
            find_msg,
            coverage,
            import_msg,
            gen_msg,
            run_msg,
            summary,
            reading,
            attr_plot,
            group_plot,
            grid,
            dl_csv,
            dl_json,
        ]
        for btn in (restart2, restart3):
            restarted = btn.click(restart, None, reset_outputs)
            show_panel(restarted)
            restarted.then(
                lambda: ("", "", "", "", "", CUSTOM), None, [*inputs.term_boxes, inputs.message, inputs.library]
            )
        end_session_files_on_unload(demo)
    return demo
