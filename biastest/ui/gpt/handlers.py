"""The language-model app's constants, session state and event handlers (the layout is :mod:`.layout`).

Every handler takes and returns plain values (and Gradio updates), so tests call them without a browser; the
app's own module, :mod:`biastest.ui.gpt`, re-exports them. The scoring methods offered are the stereotype
measure's, as :data:`biastest.measures.MEASURES` lists them (:func:`method_choices`).
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

from biastest import public
from biastest.errors import BiastestError, DataError, EndpointError, GenerationError, SpecError
from biastest.generate.prompts import SENTENCE_PROMPTS
from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as lm_run
from biastest.measures.stereotype.clusters import check_clusters
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.stereotype.score import get_method
from biastest.measures.stereotype.summary import with_clusters
from biastest.models.catalog import CATALOGS
from biastest.options import check_option
from biastest.records import SentencePair
from biastest.report.text import md_escape
from biastest.runner import services
from biastest.spec import BiasSpec
from biastest.ui.common import (  # noqa: F401
    MSG_ACTION_FAILED,
    MSG_UNEXPECTED_REASON,
    failure_message,
    gated_tabs_reset,
    inline_failures,
    offered,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)
from biastest.ui.common import USER_MISTAKES as COMMON_USER_MISTAKES
from biastest.ui.dataset_panel import panel_markdown
from biastest.ui.spec_step import spec_from_inputs, spec_summary
from biastest.words import plural

log = logging.getLogger("biastest.ui.gpt")

#: Suggested Hub ids (the model list also offers the models on this machine first: :mod:`biastest.ui.model_picker`;
#: any Hub id or local folder may be typed instead).
SUGGESTED_MODELS = list(CATALOGS["lm"].hub_ids)
#: Where the model to test runs (step 2's choice): loaded in this process, or served elsewhere.
MODEL_HERE = "here"
MODEL_ENDPOINT = "endpoint"
#: A chat model asked which sentence is more plausible (the forced-choice measure; :mod:`.chat`).
MODEL_CHAT = "chat"
MODEL_WHERE_CHOICES = [("A model on this server", MODEL_HERE), ("A model behind an endpoint", MODEL_ENDPOINT),
                       ("A chat model (asks questions)", MODEL_CHAT)]
MSG_ENDPOINT_HINT = (
    "The model is scored where it is served, through the OpenAI completions protocol with prompt "
    "log-probabilities (vLLM, llama.cpp's server). **causal-sum** and **causal-diff-span** work; the masked-LM "
    "methods need the model in this process. Hosted chat models such as GPT-4o give no prompt log-probabilities "
    "and cannot be scored. The key is used for this session's requests only: it is never stored, logged or "
    "written to the results."
)
MSG_TOKENIZER_INFO = (
    "Empty: the served model name's tokenizer is loaded here and token ids are sent, so the scores equal those of "
    "the same model on this server; if none loads, or you type none, the server splits the text itself and the "
    "scores are not comparable with in-process ones."
)
MSG_RUN_PARTIAL = (
    "⚠️ Tested {n_scored} of {n} sentence pairs with {model}: the results in step 3 are partial. {why}"
)
MSG_TOAST_PARTIAL = "The endpoint stopped early: the results are partial (step 2 says why)."
#: Step 3's choice of the pairs that lean together (the cluster-aware interval and test), in plain words.
CLUSTER_CHOICES = [
    ("Automatic: pairs from one template, else each pair on its own — within each attribute term", "auto"),
    ("Pairs made from the same template sentence", "template"),
    ("Each attribute term as one cluster (the former automatic choice; terms are fixed conditions)",
     "attribute-term"),
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

#: The scoring method step 2 starts with (GPT-style models; the list also offers the masked-LM ones).
DEFAULT_METHOD = "causal-sum"


def scoring_methods() -> list[Any]:
    """The stereotype measure's scoring methods, in the order :data:`biastest.measures.MEASURES` offers them."""
    return [get_method(name) for name in offered("stereotype", "method")]


METHOD_HELP = "\n".join(f"- **{m.name}** ({', '.join(m.kinds)} models): {m.summary}" for m in scoring_methods())

MSG_NO_SPEC = "Complete step 1 first: the bias specification is missing."
MSG_FOUND = "{where} Found {n_pairs} sentence pairs for this specification."
MSG_NOTHING_FOUND = "No stored sentences match this specification yet. Generate some below or import a file."
MSG_IMPORTED = "Imported {pairs} from {name}."  # pairs: plural(n, "sentence pair")
MSG_NO_FILE = "Choose a file to import first."
MSG_NO_MODEL = "Type or choose the model to test (a Hub id such as gpt2, or a local folder)."
MSG_BAD_SEED = "The seed must be a whole number, got {value!r}."
MSG_LEFT_UNTICKED = (
    "{count} of the new pairs {verb} left unticked and will not be tested, for the reasons below. Fix them and tick "
    "'Keep', or leave them out:"
)
MSG_FAILED = ("⛔ That did not work, and your inputs are kept. Please try again; if it happens again, report the steps "
              "you took.")
#: The actions :func:`inline_failures` names.
ACTION_FIND = "Finding stored sentences"
ACTION_IMPORT = "The import"
ACTION_GENERATE = "Generating sentences"
ACTION_RUN = "The test"
ACTION_CHAT = "Asking the chat model"
ACTION_BBQ = "The BBQ run"
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
    head = MSG_LEFT_UNTICKED.format(count=len(problems), verb="is" if len(problems) == 1 else "are")
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
@inline_failures(ACTION_FIND, 6, 1)
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
@inline_failures(ACTION_IMPORT, 5, 2)
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
    name = md_escape(str(path).rsplit("/", 1)[-1])
    message = MSG_IMPORTED.format(pairs=plural(len(pairs), "sentence pair"), name=name) + note
    return merged, "", message, "", ""


@user_errors
@inline_failures(ACTION_GENERATE, 7, 4)
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


#: Step 2's "keep anyway" choice for pairs that break the minimal-pair rule.
KEEP_NON_MINIMAL_LABEL = "Keep pairs that are not minimal (to reproduce published results)"
KEEP_NON_MINIMAL_INFO = ("Off: pairs whose sentences differ in more than the group term (and the words that agree "
                         "with it) are left out of the test and counted in the results. On: they are tested; the "
                         "result records it.")


@user_errors
@inline_failures(ACTION_RUN, RUN_OUTPUTS, 0)
def run_test(model_id, method, seed, state, table, progress=gr.Progress(), *, slot: threading.Lock | None = None,
             endpoint: lm_run.LMEndpoint | None = None, clusters: str = "auto", keep_non_minimal: bool = False):
    """Check everything the user typed, then score (holding ``slot``, if given, while the model runs).

    The inputs are checked before the test waits for the model, so a mistake (an empty table, a row that is not a
    minimal pair, a bad seed) is answered at once, whatever else the server is running.

    With ``endpoint`` (step 2's "A model behind an endpoint") the model served there is tested instead of
    ``model_id``: its address (public mode: a public one), served name and the method (not a masked-LM one) are
    checked first (:func:`lm_run.check_lm_endpoint`). What the endpoint answers unusably (no prompt
    log-probabilities, another model, a refused key, a server that keeps failing) is shown next to the button; a run
    that a limit stopped keeps what was scored and says it is partial. The key is used for the requests only.

    ``clusters`` is step 3's choice of the pairs that lean together (:data:`CLUSTER_CHOICES`);
    ``keep_non_minimal`` (step 2's "keep pairs that are not minimal") keeps pairs that break the minimal-pair rule in
    the test instead of leaving them out and counting them (recorded in the result, for reproducing published data).

    Outputs: run message, state, tabs, results tab, summary, reading, attribute bars, group bars, pair grid, CSV and
    JSON downloads.
    """
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
                                        progress=progress_callback(progress), endpoint=endpoint, clusters=clusters,
                                        keep_non_minimal=keep_non_minimal)
    except (*USER_MISTAKES, EndpointError) as exc:  # an endpoint's answer: what to check is in the message
        return (inline(exc), *skip)
    state = {**state, "result": result.to_dict(), "shown": "lm"}  # step 3 shows this result (not a chat model's)
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


def model_where_visibility(where: str) -> tuple[Any, ...]:
    """Show the model list for a model on this server, the endpoint's fields for one behind an endpoint, the chat
    model's fields (and its own button) for a chat model; the scoring method and the Run button for the first two.

    Outputs: the list's column, the endpoint's column, the scoring method's column, the Run button, the chat column.
    """
    chat = where == MODEL_CHAT
    return (gr.Column(visible=where == MODEL_HERE or where not in (MODEL_ENDPOINT, MODEL_CHAT)),
            gr.Column(visible=where == MODEL_ENDPOINT), gr.Column(visible=not chat), gr.Button(visible=not chat),
            gr.Column(visible=chat))


def _model_info() -> str:
    if public.current().server_paths:
        return "Pick one, or type a Hugging Face Hub id or the folder of a saved model."
    return "Pick one, or type a Hugging Face Hub id."


def method_info(method: str) -> str:
    """The chosen method's title, summary, formula and reference ("" for a name the measure does not offer)."""
    if method not in offered("stereotype", "method"):
        return ""
    m = get_method(method)
    return f"**{m.title}** — {m.summary} *Formula:* `{m.formula}`. *Reference:* {m.reference}."


def prompt_info(name: str) -> str:
    """The description shown beside the prompt dropdown."""
    prompt = SENTENCE_PROMPTS.get(name)
    return "" if prompt is None else md_escape(prompt.description)


def method_choices() -> list[tuple[str, str]]:
    """(short label, name) of every scoring method: the name and the kind of model it applies to."""
    return [(f"{m.name} ({'/'.join(m.kinds)} models)", m.name) for m in scoring_methods()]

