"""“Compare with another model”: step 3 of each app tests more models on the same items and compares them.

After a test, step 3 can add models (or embeddings) to the **same items** — the run's sentence pairs, images or
words — one at a time. Each added model is scored exactly as the first one was (the same runner, seed and
settings), and the models are compared item by item (:mod:`biastest.stats.compare`): a forest plot of every
model's score with its paired interval, the pairwise table (difference, interval, discordant items, p and
Holm-adjusted p) and a plain-language reading (:mod:`biastest.report.compare`). The downloads hold every model:
each model's per-item rows in one CSV (a ``model`` column says whose), every result and the comparison in one JSON,
and the comparison itself as a CSV.

The added results live in the session's state under ``"compare"``, keyed by the identity of the first run (its
model, method, seed and items): a new run makes them stale, so they are dropped from view when the run button is
pressed and ignored if the items changed. A mistake the user can fix (no run yet, no model typed, a method that
does not fit the model, the same model twice) is shown under the button (``⚠️``) with a yellow toast; what
editing cannot fix (a model that cannot be loaded) is a red error.

This module builds the three apps' sections (:func:`build_lm_compare`, :func:`build_vlm_compare`,
:func:`build_embedding_compare`) and wires them (the matching ``wire_*``); the handlers' cores
(``*_add_core``, ``*_view``) take and return plain values, so tests call them without a browser.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from biastest import public
from biastest.errors import DataError
from biastest.measures import twoafc as twoafc_measure
from biastest.measures import weat as weat_measure
from biastest.measures.stereotype import run as lm_run
from biastest.measures.stereotype.comparability import MSG_COMPARE_NOT_COMPARABLE, comparable, server_split_text
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.stereotype.score import get_method
from biastest.measures.twoafc.compare import compare_twoafc
from biastest.measures.vlm import VLMItems, VLMOptions, compare_vlm
from biastest.measures.vlm import run as vlm_run
from biastest.measures.vlm.options import DEFAULT_PROMPT_TEMPLATE, DEFAULT_QUESTION
from biastest.measures.weat.compare import compare_weat
from biastest.models.embeddings import SAFE_EMBEDDING_SUFFIXES, debiased_source
from biastest.records import SentencePair
from biastest.report import compare as rep
from biastest.report.text import md_escape
from biastest.spec import BiasSpec, TwoAFCSpec
from biastest.stats.compare import model_labels
from biastest.ui.common import USER_MISTAKES, offered, progress_callback, session_export_dir, user_errors
from biastest.ui.model_picker import build_model_picker

__all__ = [
    "MAX_MODELS",
    "CompareSection",
    "build_embedding_compare",
    "build_lm_compare",
    "build_vlm_compare",
    "clear_handler",
    "inline",
    "embedding_add_core",
    "embedding_add_handler",
    "embedding_view",
    "lm_add_core",
    "lm_add_handler",
    "lm_pairs",
    "lm_view",
    "lm_view_handler",
    "vlm_add_core",
    "vlm_add_handler",
    "vlm_view",
    "wire_embedding_compare",
    "wire_lm_compare",
    "wire_vlm_compare",
]

#: Most models in one comparison (the first one included): the forest plot and the pairwise table stay readable.
MAX_MODELS = 6

MSG_RUN_FIRST = "Run the test first: the comparison adds models to the items of that run."
MSG_NO_MODEL = "Type or choose the model to add."
MSG_ALREADY = "{label} is already in the comparison."
MSG_TOO_MANY = "A comparison holds at most {n} models. Remove the added ones to start again."
MSG_ADDED = "✅ Added {model}: {n} models compared on the same {items}."
MSG_CLEARED = "The added models were removed; the first model's results are unchanged."
MSG_NOTHING_ADDED = "No model has been added yet."

LM_HELP = (
    "Test more language models on the **same sentence pairs** and compare them pair by pair: the difference in "
    "stereotype score with a paired interval, and an exact McNemar test on the pairs where the two models disagree. "
    "Each model is scored with the method you choose (it must fit the model: causal-… for GPT-style models, the "
    "masked ones for BERT-style models) and the seed of the first run."
)
VLM_HELP = (
    "Test more vision-language models on the **same images** with the same prompts, question and seed, and compare "
    "them image by image: the difference in bias score with a paired interval and a test (a sign test on the "
    "probabilities, or McNemar's test on the answers)."
)
#: The choice "this embedding, hard-debiased" (:mod:`biastest.models.embeddings.debias`).
SOURCE_DEBIASED = "__this-embedding-hard-debiased__"
DEBIASED_LABEL = "This embedding, hard-debiased (Bolukbasi et al. 2016)"
EMBEDDING_HELP = (
    "Run the same test on **other embeddings** and compare them word by word: for WEAT the difference of the effect "
    "sizes, for 2AFC of how far the target words sit from no preference, each with a paired bootstrap interval over "
    "the words the embeddings share. \"This embedding, hard-debiased\" adds the same embedding after hard debiasing "
    "(Bolukbasi et al. 2016)."
)

VLM_SCORES = [("Soft: the probability of the stereotypical answer", "soft"),
              ("Hard: the model's answers", "hard")]
VLM_CLUSTERS = [("None: every image independent", ""),
                ("Each image term as one cluster (terms are fixed conditions: rarely right)", "image_term"),
                ("Images made from the same prompt", "image_prompt")]
TWOAFC_STATS = [("How far the words sit from no preference, either side: mean |PSE − 0.5|", "mean-abs-deviation"),
                ("Their average lean towards the first cue: mean (PSE − 0.5)", "mean-deviation")]


# --------------------------------------------------------------------------- shared view
def _hidden_downloads() -> tuple[Any, Any, Any]:
    return (gr.update(value=None, visible=False),) * 3


def empty_view() -> tuple:
    """The section's outputs (summary, forest, reading, table, three downloads) with nothing compared."""
    return ("", None, "", None, *_hidden_downloads())


def _view(cmp, *, item_rows: list[dict[str, Any]], results: list[dict[str, Any]], app: str) -> tuple:
    items_csv, json_path, cmp_csv = rep.comparison_exports(
        cmp, item_rows=item_rows, results=results, directory=session_export_dir(f"biastest-{app}-compare-"), app=app)
    return (
        rep.summary_markdown(cmp),
        rep.forest_figure(cmp),
        rep.reading_markdown(cmp),
        rep.pairwise_frame(cmp),
        gr.update(value=str(items_csv), visible=True),
        gr.update(value=str(json_path), visible=True),
        gr.update(value=str(cmp_csv), visible=True),
    )


def _rows(records: Sequence[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    return [{"model": label, **r} for r in records]


@dataclass
class CompareSection:
    """The components of a comparison section; ``outputs`` are what the handlers fill, in order.

    ``initial`` holds ``(component, value)`` for every input and option as laid out; :meth:`resets` adds the
    message and the outputs, for an app's "New bias test" (a fresh state has nothing to compare).
    """

    inputs: list[Any]
    add_btn: Any
    clear_btn: Any
    message: Any
    outputs: list[Any]
    options: list[Any] = field(default_factory=list)
    initial: list[tuple[Any, Any]] = field(default_factory=list)

    def resets(self) -> list[tuple[Any, Any]]:
        """``(component, value)`` pairs that put the section back as it was laid out."""
        return [*self.initial, (self.message, ""), *zip(self.outputs, empty_view(), strict=True)]


def _layout(help_text: str, inputs_fn: Callable[[], list[Any]], options_fn: Callable[[], list[Any]] | None = None,
            *, what: str) -> CompareSection:
    with gr.Accordion(f"Compare with another {what}", open=False, elem_id="compare-section"):
        gr.Markdown(help_text, elem_classes=["bt-hint"])
        inputs = inputs_fn()
        options = options_fn() if options_fn is not None else []
        initial = [(c, _initial(c)) for c in (*inputs, *options)]
        with gr.Row():
            add_btn = gr.Button(f"Add this {what} to the comparison", variant="primary", elem_id="compare-add")
            clear_btn = gr.Button(f"Remove the added {what}s", elem_id="compare-clear")
        message = gr.Markdown("", elem_id="compare-message")
        summary = gr.Markdown("", elem_id="compare-summary")
        forest = gr.Plot(label="Every model on the same items (sorted; hover for details)", elem_id="compare-forest")
        reading = gr.Markdown("", elem_id="compare-reading")
        table = gr.Dataframe(label="Every pair of models", interactive=False, wrap=True, elem_id="compare-table")
        with gr.Row():
            dl_items = gr.DownloadButton("Download every model's items (CSV)", visible=False,
                                         elem_id="compare-download-items")
            dl_json = gr.DownloadButton("Download every result and the comparison (JSON)", visible=False,
                                        elem_id="compare-download-json")
            dl_cmp = gr.DownloadButton("Download the comparison (CSV)", visible=False,
                                       elem_id="compare-download-comparison")
    return CompareSection(inputs=inputs, add_btn=add_btn, clear_btn=clear_btn, message=message,
                          outputs=[summary, forest, reading, table, dl_items, dl_json, dl_cmp], options=options,
                          initial=initial)


def _initial(component: Any) -> Any:
    """What "New bias test" puts a control back to: its value as laid out, and its visibility."""
    value = component.value
    if isinstance(component, gr.File):
        return gr.update(value=None, visible=component.visible)
    if not component.visible:
        return gr.update(value=value, visible=False)
    return value


def _wire_common(sec: CompareSection, state: Any, *, add_fn, view_fn, clear_fn, concurrency_id: str,
                 clear_on: Sequence[Any]) -> None:
    sec.add_btn.click(add_fn, [*sec.inputs, *sec.options, state], [state, sec.message, *sec.outputs],
                      concurrency_id=concurrency_id, concurrency_limit=1, show_progress_on=[sec.message])
    sec.clear_btn.click(clear_fn, state, [state, sec.message, *sec.outputs], queue=False)
    for option in sec.options:  # another score, clustering or statistic: recompute, no model runs
        option.input(view_fn, [*sec.options, state], sec.outputs, show_progress="hidden")
    # a new run or a new test: what was compared described the old items (the state's key says so too)
    for btn in clear_on:
        btn.click(lambda: ("", *empty_view()), None, [sec.message, *sec.outputs], queue=False,
                  show_progress="hidden")


def inline(exc) -> str:
    """A mistake the user can fix: a yellow toast, and ``⚠️`` + the message (escaped for Markdown) under the button."""
    gr.Warning(exc.message)
    return f"⚠️ {md_escape(exc.message)}"


def _add_handler(core: Callable[..., Any], view: Callable[..., tuple], n_options: int, *, items: str,
                 slot: threading.Lock | None = None):
    """A Gradio handler: run ``core`` (a mistake inline), then the view with the section's options."""

    @user_errors
    def handler(*args, progress=gr.Progress()):
        *values, state = args
        inputs, options = values[: len(values) - n_options], values[len(values) - n_options:]
        try:
            new, label, n = core(state, *inputs, *options, progress=progress_callback(progress), slot=slot)
        except USER_MISTAKES as exc:
            return (gr.skip(), inline(exc), *(gr.skip(),) * 7)
        return (new, md_escape(MSG_ADDED.format(model=label, n=n, items=items)), *view(*options, new))

    return handler


@user_errors
def clear_handler(state: Any) -> tuple:
    """"Remove the added models": the state without them, a message, and an empty section."""
    if not isinstance(state, dict) or not (state.get("compare") or {}).get("results"):
        return (gr.skip(), MSG_NOTHING_ADDED, *(gr.skip(),) * 7)
    return ({**state, "compare": None}, MSG_CLEARED, *empty_view())


def _slot(slot: threading.Lock | None):
    """Hold ``slot`` (one test scores at a time on this server) while a model runs; nothing without one."""
    import contextlib

    return slot if slot is not None else contextlib.nullcontext()


def _check_room(n_now: int) -> None:
    if n_now >= MAX_MODELS:
        raise DataError(MSG_TOO_MANY.format(n=MAX_MODELS))


# --------------------------------------------------------------------------- language models
def lm_pairs(result) -> list:
    """The sentence pairs of a result (every one, scored or not), rebuilt with their ids, to test another model on."""

    spec_name = (result.spec or {}).get("name", "") if isinstance(result.spec, dict) else ""
    return [
        SentencePair(
            stereotyped=p.stereotyped, anti_stereotyped=p.anti_stereotyped, attribute_term=p.attribute_term,
            group_term_stereotyped=p.group_term_stereotyped, group_term_anti=p.group_term_anti,
            template=getattr(p, "template", "") or "", category=p.category, source=p.source, spec_name=spec_name,
        )
        for p in result.pairs
    ]


def _lm_key(result) -> list[Any]:
    return [result.model_id, result.method, result.seed, [p.pair_id for p in result.pairs]]


def _lm_models(state: Any):
    """The first result and the added ones (dicts) that were tested on its items."""

    if not isinstance(state, dict) or not state.get("result"):
        raise DataError(MSG_RUN_FIRST)
    base = StereotypeResult.from_dict(state["result"])
    saved = state.get("compare") or {}
    added = list(saved.get("results") or []) if saved.get("base") == _lm_key(base) else []
    return base, added


def lm_add_core(state: Any, model_id: Any, method: Any, *, progress=None, slot: threading.Lock | None = None):
    """Score another language model on the first run's pairs; returns (new state, model, number of models).

    Raises
    ------
    DataError, MethodError, PolicyError
        No run yet, no model, a method that does not exist, the same model and method twice, too many models, a
        model a public server may not load.
    """

    base, added = _lm_models(state)
    model = str(model_id or "").strip()
    if not model:
        raise DataError(MSG_NO_MODEL)
    method = get_method(str(method or "")).name
    model = public.check_model_reference(model)
    _check_room(1 + len(added))
    present = [(base.model_id, base.method), *((r["model_id"], r["method"]) for r in added)]
    if (model, method) in present:
        raise DataError(MSG_ALREADY.format(label=f"{model} ({method})"))
    spec = BiasSpec.from_dict(base.spec) if base.spec else None
    with _slot(slot):
        result = lm_run.run_lm_test(pairs=lm_pairs(base), model_id=model, method=method, seed=base.seed, spec=spec,
                                    progress=progress)
    new = {**state, "compare": {"base": _lm_key(base), "results": [*added, result.to_dict()]}}
    return new, model, 2 + len(added)


def lm_view(state: Any, clusters: Any = None) -> tuple:
    """Summary, forest plot, reading, pairwise table and downloads of the first run and the added models.

    ``clusters`` is step 3's choice of the pairs that lean together (default: the first result's own).
    """

    try:
        base, added = _lm_models(state)
    except DataError:
        return empty_view()
    if not added:
        return empty_view()
    results = [base, *(StereotypeResult.from_dict(r) for r in added)]
    chosen = clusters or getattr(base, "clusters", None)
    # at the first result's level, so that each model's row shows its own result's interval (issue 28)
    cmp = compare_stereotype(results, seed=base.seed, clusters=chosen or None, confidence=base.overall.confidence)
    rows = [row for r, m in zip(results, cmp.models, strict=True) for row in _rows(r.pairs_records(), m.label)]
    view = _view(cmp, item_rows=rows, results=[r.to_dict() for r in results], app="gpt")
    if comparable(results):
        return view
    # scores from text an endpoint split are not those of the model's own tokens: the comparison says so first
    split = ", ".join(md_escape(m.label) for r, m in zip(results, cmp.models, strict=True) if server_split_text(r))
    label = MSG_COMPARE_NOT_COMPARABLE.format(models=split)
    summary, forest, reading, *rest = view
    return (f"{label}\n\n{summary}", forest, f"{label}\n\n{reading}", *rest)


def build_lm_compare(*, method_choices: Sequence[tuple[str, str]], default_method: str = "causal-sum"
                     ) -> CompareSection:
    """Lay out the language-model app's comparison (inside step 3)."""

    def inputs() -> list[Any]:
        with gr.Row():
            picker = build_model_picker("lm", label="Model to add", info="Any Hugging Face Hub id or a local folder.",
                                        elem_id="compare-model", note_id="compare-model-note")
            method = gr.Dropdown(choices=list(method_choices), value=default_method, label="Its scoring method",
                                 elem_id="compare-method")
        picker.wire()
        return [picker.dropdown, method]

    return _layout(LM_HELP, inputs, what="model")


def lm_add_handler(*, n_options: int = 1, slot: threading.Lock | None = None):
    """The "Add this model" handler: (model, method, [clusters,] state) → state, message, the section's outputs."""

    def core(state, model_id, method, *options, progress=None, slot=None):
        return lm_add_core(state, model_id, method, progress=progress, slot=slot)

    return _add_handler(core, lm_view_handler, n_options, items="sentence pairs", slot=slot)


@user_errors
def lm_view_handler(*args) -> tuple:
    """([clusters,] state) → the section's outputs (another clustering: recomputed, no model runs)."""
    *options, state = args
    return lm_view(state, *options)


def wire_lm_compare(sec: CompareSection, state: Any, *, slot: threading.Lock | None = None, clusters: Any = None,
                    clear_on: Sequence[Any] = ()) -> None:
    """Wire the language-model comparison; ``clusters`` is step 3's clustering dropdown, if the app has one."""
    if clusters is not None:
        sec.options = [clusters]
    _wire_common(sec, state, add_fn=lm_add_handler(n_options=len(sec.options), slot=slot), view_fn=lm_view_handler,
                 clear_fn=clear_handler, concurrency_id="gpt-compare", clear_on=clear_on)


# --------------------------------------------------------------------------- vision-language models
def _vlm_key(result) -> list[Any]:
    return [result.model_id, result.method, result.seed, [img.image_id for img in result.images]]


def _vlm_models(session: Any):
    if not isinstance(session, dict) or session.get("result") is None:
        raise DataError(MSG_RUN_FIRST)
    base = session["result"]
    saved = session.get("compare") or {}
    added = list(saved.get("results") or []) if saved.get("base") == _vlm_key(base) else []
    return base, added


def vlm_add_core(session: Any, model_id: Any, *options: Any, progress=None, slot: threading.Lock | None = None):
    """Score another vision-language model on the first run's images with its settings; (session, model, n)."""
    # late: biastest.ui.vqa's __init__ imports this module (a real import cycle through the package)
    from biastest.ui.vqa.session import _copy, _spec, session_root

    base, added = _vlm_models(session)
    model = str(model_id or "").strip()
    if not model:
        raise DataError(MSG_NO_MODEL)
    model = public.check_model_reference(model)
    _check_room(1 + len(added))
    if model in [base.model_id, *(r.model_id for r in added)]:
        raise DataError(MSG_ALREADY.format(label=model))
    new = _copy(session)
    settings = dict(new.get("settings") or {})
    ids = {img.image_id for img in base.images}
    images = [img for img in new["images"] if img.id in ids]  # the first run's images, even if more were added since
    with _slot(slot):
        options = VLMOptions.parse(
            model_id=model, prompt_template=settings.get("prompt_template") or DEFAULT_PROMPT_TEMPLATE,
            question=settings.get("question") or DEFAULT_QUESTION,
            combine=settings.get("combine") or offered("vlm", "combine")[0],
            seed=base.seed, batch_size=settings.get("batch_size") or 16,
            n_resamples=settings.get("n_resamples") or 10_000,
        )
        result = vlm_run(options, VLMItems(images, session_root(new), _spec(new)), progress=progress)
    new["compare"] = {"base": _vlm_key(base), "results": [*added, result]}
    return new, model, 2 + len(added)


def vlm_view(score: Any, cluster_by: Any, session: Any) -> tuple:
    """The comparison of the first run and the added models on the ``score`` ("soft"/"hard") and clusters."""

    try:
        base, added = _vlm_models(session)
    except DataError:
        return empty_view()
    if not added:
        return empty_view()
    results = [base, *added]
    level = (base.soft or base.hard).confidence  # each model's row shows its own result's interval (issue 28)
    cmp = compare_vlm(results, seed=base.seed, score=score or "soft", cluster_by=cluster_by or None,
                      confidence=level)
    rows = [row for r, m in zip(results, cmp.models, strict=True) for row in _rows(r.images_records(), m.label)]
    return _view(cmp, item_rows=rows, results=[r.to_dict() for r in results], app="vqa")


def build_vlm_compare() -> CompareSection:
    """Lay out the vision-language app's comparison (inside step 3)."""

    def inputs() -> list[Any]:
        picker = build_model_picker("vlm", label="Model to add (Hugging Face Hub id or local folder)",
                                    info="Tested with the first run's prompts, question and seed.",
                                    elem_id="compare-model", note_id="compare-model-note")
        picker.wire()
        return [picker.dropdown]

    def options() -> list[Any]:
        with gr.Row():
            score = gr.Radio(VLM_SCORES, value="soft", label="Score compared", elem_id="compare-score")
            clusters = gr.Radio(VLM_CLUSTERS, value="", label="Images that lean together", elem_id="compare-clusters")
        return [score, clusters]

    return _layout(VLM_HELP, inputs, options, what="model")


def vlm_add_handler():
    """The "Add this model" handler: (model, score, clusters, session) → session, message, the section's outputs."""

    def core(session, model_id, *options, progress=None, slot=None):
        return vlm_add_core(session, model_id, progress=progress, slot=slot)

    return _add_handler(core, vlm_view, 2, items="images")


def wire_vlm_compare(sec: CompareSection, session: Any, *, clear_on: Sequence[Any] = ()) -> None:
    """Wire the vision-language comparison (one model runs at a time: the run's concurrency group)."""
    _wire_common(sec, session, add_fn=vlm_add_handler(), view_fn=user_errors(vlm_view), clear_fn=clear_handler,
                 concurrency_id="vqa-model", clear_on=clear_on)


# --------------------------------------------------------------------------- word embeddings
def source_label(source: str) -> str:
    """A short name for an embedding source: a file by its name (never its folder), else the source id."""
    for prefix in ("file:", "sentence-transformers:"):
        if source.startswith(prefix):
            return Path(source[len(prefix):]).name or source
    return source


def _embedding_key(session: dict[str, Any]) -> list[Any]:
    """The first run's identity: the test, the embedding, the seed, when it ran and its target words."""

    twoafc = isinstance(session.get("spec"), TwoAFCSpec)
    result = session.get("result") if twoafc else session.get("weat") or session.get("result")
    words = [t.target for t in result.targets] if twoafc else [*result.x, *result.y]
    return ["2afc" if twoafc else "weat", session.get("source"), getattr(result, "seed", None),
            dict(result.provenance).get("created_at"), words]


def _embedding_models(session: Any):
    if not isinstance(session, dict) or session.get("result") is None or session.get("spec") is None:
        raise DataError(MSG_RUN_FIRST)
    twoafc = isinstance(session["spec"], TwoAFCSpec)
    base = session["result"] if twoafc else session.get("weat") or session["result"]
    saved = session.get("compare") or {}
    added = list(saved.get("results") or []) if saved.get("base") == _embedding_key(session) else []
    return twoafc, base, added


def embedding_add_core(session: Any, choice: Any, upload: Any, path: Any, *options: Any, allow_paths: bool = False,
                       progress=None, slot: threading.Lock | None = None):
    """Run the session's test on another embedding; returns (session, its label, number of embeddings)."""
    # late: biastest.ui.psychophysics's __init__ imports this module (a real import cycle through the package)
    from biastest.ui.psychophysics.spec import embedding_source_id

    twoafc, base, added = _embedding_models(session)
    if choice == SOURCE_DEBIASED:  # this embedding after hard debiasing (Bolukbasi et al. 2016)
        source = debiased_source(str(session["source"]))
    else:
        source = embedding_source_id(str(choice or ""), upload, path, allow_paths=allow_paths)
    _check_room(1 + len(added))
    label = source_label(source)
    if source in [session["source"], *(a["source"] for a in added)]:
        raise DataError(MSG_ALREADY.format(label=label))
    seed = int(getattr(base, "seed", 0) or 0)
    with _slot(slot):
        if twoafc:
            result = twoafc_measure.run(twoafc_measure.TwoAFCOptions.parse(source=source, seed=seed),
                                        twoafc_measure.TwoAFCItems(spec=session["spec"]), progress=progress)
        else:
            result = weat_measure.run(weat_measure.WEATOptions.parse(source=source, seed=seed),
                                      weat_measure.WEATItems(spec=session["spec"]), progress=progress)
    new = dict(session)
    new["compare"] = {"base": _embedding_key(session), "results": [*added, {"source": source, "label": label,
                                                                             "result": result}]}
    return new, label, 2 + len(added)


def _unique(labels: list[str]) -> list[str]:
    return model_labels(labels)


def embedding_view(statistic: Any, session: Any) -> tuple:
    """The comparison of the session's embedding and the added ones (WEAT d, or the 2AFC ``statistic``)."""

    try:
        twoafc, base, added = _embedding_models(session)
    except DataError:
        return empty_view()
    if not added:
        return empty_view()
    results = [base, *(a["result"] for a in added)]
    labels = _unique([source_label(session["source"]), *(a["label"] for a in added)])
    seed = int(getattr(base, "seed", 0) or 0)
    if twoafc:
        cmp = compare_twoafc(results, seed=seed, labels=labels, statistic=statistic or "mean-abs-deviation")
        rows = [row for r, lab in zip(results, labels, strict=True) for row in _rows(r.target_records(), lab)]
    else:
        # at the first result's level: each embedding's row shows its own result's interval of d (issue 28)
        cmp = compare_weat(results, seed=seed, labels=labels, confidence=float(getattr(base, "ci_level", 0.95)))
        rows = [row for r, lab in zip(results, labels, strict=True) for row in _rows(r.records(), lab)]
    docs = [{"embedding": lab, **r.to_dict()} for r, lab in zip(results, labels, strict=True)]
    return _view(cmp, item_rows=rows, results=docs, app="psychophysics")


def build_embedding_compare(*, allow_paths: bool) -> CompareSection:
    """Lay out the word-embedding app's comparison (inside step 3)."""
    # late: biastest.ui.psychophysics's __init__ imports this module (a real import cycle through the package)
    from biastest.ui.psychophysics.spec import SOURCE_PATH, SOURCE_UPLOAD, source_choices

    def inputs() -> list[Any]:
        choices = [(DEBIASED_LABEL, SOURCE_DEBIASED), *source_choices(allow_paths=allow_paths)]
        source = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="Embedding to add",
                             elem_id="compare-source")
        upload = gr.File(label="Embedding file", file_types=list(SAFE_EMBEDDING_SUFFIXES), visible=False,
                         elem_id="compare-upload")
        path = gr.Textbox("", label="Path of the embedding file on this server", visible=False,
                          elem_id="compare-path")
        source.change(lambda c: (gr.update(visible=c == SOURCE_UPLOAD), gr.update(visible=c == SOURCE_PATH)),
                      source, [upload, path], queue=False, show_progress="hidden")
        return [source, upload, path]

    def options() -> list[Any]:
        return [gr.Radio(TWOAFC_STATS, value="mean-abs-deviation", label="2AFC: what is compared",
                         elem_id="compare-statistic")]

    return _layout(EMBEDDING_HELP, inputs, options, what="embedding")


def embedding_add_handler(*, allow_paths: bool):
    """The "Add this embedding" handler: (source, upload, path, statistic, session) → session, message, outputs."""

    def core(session, choice, upload, path, *options, progress=None, slot=None):
        return embedding_add_core(session, choice, upload, path, allow_paths=allow_paths, progress=progress,
                                  slot=slot)

    return _add_handler(core, embedding_view, 1, items="words")


def wire_embedding_compare(sec: CompareSection, session: Any, *, allow_paths: bool,
                           clear_on: Sequence[Any] = ()) -> None:
    """Wire the word-embedding comparison."""
    _wire_common(sec, session, add_fn=embedding_add_handler(allow_paths=allow_paths),
                 view_fn=user_errors(embedding_view), clear_fn=clear_handler, concurrency_id="embedding-compare",
                 clear_on=clear_on)
