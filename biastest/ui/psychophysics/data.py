"""Step 2 of the word-embedding app: the words found, the replicate set, the run options, “Run the test”.

The found/missing words come from step 1's lookup. For 2AFC the user chooses
where the variability of the answers comes from (a perceptual noise σ,
uploaded replicate embeddings, or replicates trained here on a corpus) and the
psychometric fit; for WEAT/MAC the number of permutations. “Run the test”
runs the runner and fills step 3 (:mod:`.results`). A mistake the user can fix
(:data:`~biastest.ui.common.USER_MISTAKES`: a bad number, a missing or unsafe
file) is shown inline next to the button that met it and as a yellow toast;
every other output is left as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from biastest import public
from biastest.errors import BiastestError, DataError, EmbeddingError
from biastest.measures import twoafc as twoafc_measure
from biastest.measures import weat as weat_measure
from biastest.measures.presets import PAPER_PRESETS, estimate_line, preset_markdown
from biastest.measures.twoafc import labor_statistics_correlation, load_occupations_bls
from biastest.models.embeddings import (
    SAFE_EMBEDDING_SUFFIXES,
    KeyedVectorsEmbeddings,
    WordEmbeddings,
    check_upload_file,
    train_bootstrap_replicates,
)
from biastest.options import BOUNDS, DEFAULT_SEED, DEFAULT_TWOAFC_BOOTSTRAP, DEFAULT_WEAT_BOOTSTRAP
from biastest.spec import BiasSpec, TwoAFCSpec
from biastest.ui.common import (
    USER_MISTAKES,
    escape,
    inline_failures,
    option_value,
    progress_callback,
    unlock_step,
    user_errors,
    warn_inline,
)
from biastest.ui.psychophysics.results import results_view
from biastest.ui.psychophysics.state import (
    ACTION_RUN,
    ACTION_TRAIN,
    MSG_SPEC_FIRST,
    Section,
    file_path,
    need_session,
)

REPLICATES_NONE = "none"
REPLICATES_UPLOAD = "upload"
REPLICATES_TRAIN = "train"

MSG_NO_REPLICATE_FILES = (
    "Upload at least two embedding files as replicates, or choose “one model with perceptual noise”."
)
MSG_NO_CORPUS = "Upload a plain-text corpus (one sentence or document a line) to train replicates on."
MSG_TRAIN_FIRST = "Press “Train replicates” first, or choose another replicate set."
MSG_PRESET_OTHER_SPEC = (
    "The paper ran these settings on “{paper}”; this test's specification is “{spec}” (choose the paper's in step 1 "
    "to reproduce it)."
)
#: The corpus is read for its token count (the run-time estimate) up to this many bytes; a larger file is scaled.
ESTIMATE_READ_BYTES = 20_000_000
MSG_BAD_SIGMA = (
    "The perceptual noise σ must be 0 (no noise: a deterministic step) or a positive number (e.g. 0.05); got {value!r}."
)
MSG_BAD_INT = "{name} must be a whole number between {low} and {high}; got {value!r}."
MSG_EMBEDDING_REFUSED = (
    "The embedding cannot test this specification: {why} Choose a chat model or a text classifier under “Which "
    "model?”, or go back to step 1."
)

NOISE_HELP = (
    "### Where the noise comes from\n"
    "One embedding gives one fixed answer per mix, so a psychometric curve needs a source of "
    "variability. Either **several embedding models** trained on resamples of the same text "
    "(the paper trains 32), or one model with a **perceptual noise σ that you choose** — an "
    "assumption about the observer, not data."
)

FEMALE_WORDS = frozenset(
    "woman women female she her hers daughter girl sister mother wife aunt niece lady queen feminine".split()
)
MALE_WORDS = frozenset("man men male he him his son boy brother father husband uncle nephew gentleman king".split())


# --------------------------------------------------------------------------- checks of the inputs
def _int_in(value: Any, *, name: str, low: int, high: int) -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value)) from None
    if not math.isfinite(v) or v != int(v) or not low <= v <= high:
        raise DataError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value))
    return int(v)


def _sigma(value: Any) -> float | None:
    """The user's perceptual noise: 0 means none (a deterministic step), negative or text is refused."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(MSG_BAD_SIGMA.format(value=value)) from None
    if not math.isfinite(v) or v < 0:
        raise DataError(MSG_BAD_SIGMA.format(value=value))
    return None if v == 0 else option_value("noise_sigma", v)


def _spec_words(spec: TwoAFCSpec | BiasSpec) -> list[str]:
    if isinstance(spec, TwoAFCSpec):
        return list(dict.fromkeys([*spec.targets, *(c for p in spec.cue_pairs for c in p)]))
    return list(dict.fromkeys([*spec.group_terms, *spec.attribute_terms]))


# --------------------------------------------------------------------------- replicates
@user_errors
def on_replicate_mode(mode: str) -> tuple[Any, Any, Any]:
    """Show σ, the replicate upload or the corpus training for the chosen replicate set."""
    return (
        gr.update(visible=mode == REPLICATES_NONE),
        gr.update(visible=mode == REPLICATES_UPLOAD),
        gr.update(visible=mode == REPLICATES_TRAIN),
    )


def train_replicates_core(
    session: dict[str, Any],
    corpus: Any,
    n_replicates: Any,
    vector_size: Any,
    epochs: Any,
    min_count: Any,
    seed: Any,
    *,
    progress=None,
) -> tuple[dict[str, Any], str]:
    """Train word2vec replicates on the uploaded corpus; keep only the spec's words in the session."""
    session = need_session(session)
    if not isinstance(session["spec"], TwoAFCSpec):
        raise DataError(MSG_SPEC_FIRST)
    path = file_path(corpus)
    if not path:
        raise DataError(MSG_NO_CORPUS)
    n = option_value("n_replicates", n_replicates)
    seed_i = option_value("seed", seed)
    models = train_bootstrap_replicates(
        Path(path),
        n_replicates=n,
        seed=seed_i,
        vector_size=_int_in(vector_size, name="The vector size", low=2, high=1000),
        epochs=_int_in(epochs, name="The number of epochs", low=1, high=100),
        min_count=_int_in(min_count, name="The minimum word count", low=1, high=1000),
        progress=progress,
        name=Path(path).name,
    )
    words = _spec_words(session["spec"])
    report = models[0].lookup_report(words)
    small = [m.restrict(words, name=m.name) for m in models]
    new = dict(session)
    new.update(replicates=small, replicate_seed=seed_i, result=None, bayes=None)
    missing = report.missing
    note = (
        f"✅ Trained {n} replicate models on `{escape(Path(path).name)}` (Poisson(1) stream bootstrap, seed {seed_i}). "
        f"{len(words) - len(missing)} of {len(words)} words of the specification are in their vocabulary"
    )
    note += f"; missing: {escape(', '.join(missing))}." if missing else "."
    new["replicate_note"] = note
    return new, note


def corpus_tokens(path: str | None) -> int | None:
    """Whitespace tokens of the corpus at ``path`` (read up to :data:`ESTIMATE_READ_BYTES`, the rest scaled by
    size); None without a readable file."""
    if not path:
        return None
    try:
        size = Path(path).stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(ESTIMATE_READ_BYTES)
    except OSError:
        return None
    tokens = len(head.split())
    return tokens if size <= len(head) or not head else round(tokens * size / len(head))


@user_errors
def twoafc_estimate(corpus, n_replicates) -> str:
    """Before training: the estimated time of training ``n_replicates`` on the uploaded corpus (per million tokens
    until one is uploaded); "" for a replicate count out of bounds (the training says why)."""
    try:
        n = option_value("n_replicates", n_replicates)
    except BiastestError:
        return ""
    return estimate_line("twoafc", {"n_replicates": n}, tokens=corpus_tokens(file_path(corpus)))


@user_errors
def twoafc_preset_handler(session, corpus) -> tuple[str, int, str, str]:
    """Fill in the paper's 2AFC settings (replicates trained on a corpus, 32 of them) with what the paper states and
    leaves open, and the estimated training time."""
    values = PAPER_PRESETS["twoafc"].values
    note = preset_markdown("twoafc")
    spec = (session or {}).get("spec")
    if spec is not None and getattr(spec, "name", None) != values["spec"]:
        note += "\n\n" + escape(MSG_PRESET_OTHER_SPEC.format(paper=values["spec"], spec=spec.name))
    return REPLICATES_TRAIN, values["n_replicates"], note, twoafc_estimate(corpus, values["n_replicates"])


@user_errors
@inline_failures(ACTION_TRAIN, 2, 1)
def train_handler(session, corpus, n_replicates, vector_size, epochs, min_count, seed, progress=gr.Progress()):
    """Train replicates (progress bar) and report the vocabulary coverage; a mistake inline under the button."""
    try:
        return train_replicates_core(
            session, corpus, n_replicates, vector_size, epochs, min_count, seed, progress=progress_callback(progress)
        )
    except USER_MISTAKES as exc:
        return gr.skip(), warn_inline(exc)


def _replicate_models(session: dict[str, Any], mode: str, files: Any) -> list[WordEmbeddings] | None:
    if mode == REPLICATES_UPLOAD:
        paths = [p for p in (file_path(f) for f in (files or [])) if p]
        if len(paths) < 2:
            raise DataError(MSG_NO_REPLICATE_FILES)
        public.check_upload(paths, limit=int(BOUNDS["n_replicates"].high))  # at most 64 replicate files
        for p in paths:
            check_upload_file(p)
        words = _spec_words(session["spec"])
        return [KeyedVectorsEmbeddings(p, name=Path(p).name).restrict(words, name=Path(p).name) for p in paths]
    if mode == REPLICATES_TRAIN:
        if not session.get("replicates"):
            raise DataError(MSG_TRAIN_FIRST)
        return list(session["replicates"])
    return None


# --------------------------------------------------------------------------- the run
def female_cue_side(spec: TwoAFCSpec) -> int | None:
    """1 or 2 when one cue side is recognisably female (for the labour-statistics comparison), else None."""
    names = (spec.cue1_name.casefold(), spec.cue2_name.casefold())
    for side, name in ((1, names[0]), (2, names[1])):
        if name in ("female", "women", "woman", "feminine"):
            return side
    first = {p[0].casefold() for p in spec.cue_pairs}
    second = {p[1].casefold() for p in spec.cue_pairs}
    if first <= FEMALE_WORDS and second <= MALE_WORDS:
        return 1
    if second <= FEMALE_WORDS and first <= MALE_WORDS:
        return 2
    return None


def _labour(result, spec: TwoAFCSpec):
    side = female_cue_side(spec)
    if side is None:
        return None
    bls = {r["occupation"].casefold() for r in load_occupations_bls()}
    if sum(1 for t in result.targets if t.target.casefold() in bls) < 3:
        return None
    return labor_statistics_correlation(result, female_cue=side)


def run_core(
    session: dict[str, Any],
    rep_mode: str,
    sigma: Any,
    files: Any,
    sigmoid: str,
    lapse: bool,
    n_boot: Any,
    n_perm: Any,
    seed: Any,
    n_boot_d: Any = DEFAULT_WEAT_BOOTSTRAP,
    *,
    progress=None,
) -> dict[str, Any]:
    """Run the test of the session's spec; return the session with ``result`` (and ``labour``) set.

    ``n_boot`` sets the 2AFC resamples (PSE intervals and psychometric fits), ``n_boot_d`` the resamples of
    the words behind the interval of the WEAT effect size d.
    """
    session = need_session(session)
    spec = session["spec"]
    seed_i = option_value("seed", seed)
    new = dict(session)
    new.update(bayes=None, posterior=None, labour=None)
    if isinstance(spec, TwoAFCSpec):
        if session.get("embedding_refused"):  # step 1 let the spec through for the chat model and the classifier
            raise EmbeddingError(MSG_EMBEDDING_REFUSED.format(why=session["embedding_refused"]))
        n_bootstrap = option_value("n_bootstrap", n_boot)  # every option checked before any file is loaded
        noise = _sigma(sigma) if rep_mode not in (REPLICATES_UPLOAD, REPLICATES_TRAIN) else None
        replicates = _replicate_models(session, rep_mode, files)
        options = twoafc_measure.TwoAFCOptions.parse(
            source=session["source"],
            replicates=tuple(replicates) if replicates else None,
            noise_sigma=noise if replicates is None else None,
            seed=seed_i,
            sigmoid=sigmoid or "norm",
            lapse=bool(lapse),
            n_bootstrap=n_bootstrap,
        )
        result = twoafc_measure.run(options, twoafc_measure.TwoAFCItems(spec=spec), progress=progress)
        new.update(result=result, labour=_labour(result, spec), weat=None, mac=None)
        return new
    if spec.n_groups > 2:  # WEAT compares two groups: three or more get MAC per group (and the Bayesian estimate)
        mac = weat_measure.run_mac(weat_measure.MACOptions(source=session["source"]), weat_measure.MACItems(spec=spec))
        new.update(result=mac, weat=None, mac=mac)
        return new
    n_permutations = option_value("n_permutations", n_perm)
    n_resamples = option_value("n_resamples", n_boot_d)
    options = weat_measure.WEATOptions.parse(source=session["source"], seed=seed_i, n_permutations=n_permutations,
                                             n_resamples=n_resamples)
    weat = weat_measure.run(options, weat_measure.WEATItems(spec=spec), progress=progress)
    mac = weat_measure.run_mac(weat_measure.MACOptions(source=session["source"]), weat_measure.MACItems(spec=spec))
    new.update(result=weat, weat=weat, mac=mac)
    return new


def make_run_handler(stale: tuple, n_results: int):
    """The “Run the test” handler; its outputs: session, message, tabs, tab 3, ``stale``'s, then the results.

    A run clears what earlier runs left in the Bayesian and posterior sections
    (``stale``: their reset values) and fills the ``n_results`` components of
    step 3. A mistake the user can fix changes nothing but the message under
    the button (⚠️, and a yellow toast): the earlier results stay, still valid.
    """

    @user_errors
    @inline_failures(ACTION_RUN, 4 + len(stale) + n_results, 1)
    def run_handler(session, rep_mode, sigma, files, sigmoid, lapse, n_boot, n_perm, seed,
                    n_boot_d=DEFAULT_WEAT_BOOTSTRAP, progress=gr.Progress()):
        """Step 2 → results: run, render, unlock the results tab."""
        try:
            new = run_core(
                session, rep_mode, sigma, files, sigmoid, lapse, n_boot, n_perm, seed, n_boot_d,
                progress=progress_callback(progress),
            )
        except USER_MISTAKES as exc:
            return (gr.skip(), warn_inline(exc), *(gr.skip(),) * (2 + len(stale) + n_results))
        tabs, tab3 = unlock_step("results")
        return (new, "", tabs, tab3, *stale, *results_view(new))

    return run_handler


# --------------------------------------------------------------------------- controls and wiring
def build(model_choice: Callable[[], Any] | None = None) -> Section:
    """Step 2's controls (call inside its tab); “New bias test” resets each to its value here.

    ``model_choice`` builds the 2AFC part's "Which model?" and its other models' fields (:mod:`.chat`), above the
    embedding's options (``sec.embedding_box``); ``sec.chat`` is what it returns.
    """
    sec = Section()
    sec.add("summary", gr.Markdown("", elem_id="data-summary"), "")
    sec.add("lookup", gr.Dataframe(
        label="Every word of the specification: found in the embedding or missing",
        interactive=False,
        elem_id="lookup-table",
    ), None)
    with sec.add("twoafc_box", gr.Column(visible=True), gr.update(visible=True)):
        sec.chat = model_choice() if model_choice is not None else None
        with sec.add("embedding_box", gr.Column(visible=True), gr.update(visible=True)):
            gr.Markdown(NOISE_HELP)
            sec.paper = gr.Button(PAPER_PRESETS["twoafc"].label, size="sm", elem_id="twoafc-paper-preset")
            sec.add("preset_note", gr.Markdown("", elem_id="twoafc-preset-note"), "")
            sec.add("rep_mode", gr.Radio(
                [
                    ("One model, with a perceptual noise σ that you set (an assumption, not data)", REPLICATES_NONE),
                    ("Several embedding files that you upload (replicates)", REPLICATES_UPLOAD),
                    ("Train replicates on a text corpus that you upload", REPLICATES_TRAIN),
                ],
                value=REPLICATES_NONE,
                label="Replicate set",
                elem_id="replicate-mode",
            ), REPLICATES_NONE)
            sec.add("sigma", gr.Number(
                value=0.05,
                label="Perceptual noise σ (your assumption, in cosine-similarity units)",
                info="SD of Gaussian noise on the score difference of the answers (Thurstonian); 0 = no noise.",
                elem_id="noise-sigma",
            ), gr.update(value=0.05, visible=True))
            sec.add("rep_files", gr.File(
                label="Replicate embedding files (two or more)",
                file_count="multiple",
                file_types=list(SAFE_EMBEDDING_SUFFIXES),
                visible=False,
                elem_id="replicate-files",
            ), gr.update(value=None, visible=False))
            with sec.add("train_box", gr.Column(visible=False), gr.update(visible=False)):
                sec.add("corpus", gr.File(
                    label="Text corpus (.txt, one sentence or document a line)",
                    file_types=[".txt"],
                    elem_id="corpus-file",
                ), None)
                with gr.Row():
                    sec.add("n_rep", gr.Slider(2, 32, value=8, step=1, label="Replicates", elem_id="n-replicates"), 8)
                    sec.add("dim", gr.Slider(10, 300, value=50, step=10, label="Vector size",
                                             elem_id="vector-size"), 50)
                    sec.add("epochs", gr.Slider(1, 20, value=5, step=1, label="Epochs", elem_id="epochs"), 5)
                    sec.add("min_count", gr.Slider(1, 20, value=2, step=1, label="Minimum word count",
                                                   elem_id="min-count"), 2)
                sec.add("train_estimate", gr.Markdown(twoafc_estimate(None, 8), elem_id="train-estimate"),
                        twoafc_estimate(None, 8))
                sec.train = gr.Button("Train replicates", elem_id="train-replicates")
                sec.add("train_status", gr.Markdown("", elem_id="train-status"), "")
            with gr.Accordion("Psychometric fit", open=False):
                with gr.Row():
                    sec.add("sigmoid", gr.Dropdown(
                        [("cumulative normal", "norm"), ("logistic", "logistic")],
                        value="norm",
                        label="Psychometric function",
                        elem_id="sigmoid",
                    ), "norm")
                    sec.add("lapse", gr.Checkbox(False, label="Fit a lapse rate", elem_id="lapse"), False)
                    sec.add("n_boot", gr.Number(
                        DEFAULT_TWOAFC_BOOTSTRAP, label="Bootstrap samples for the intervals", precision=0,
                        elem_id="n-bootstrap",
                        info="Resamples of the cue pairs (one model) or of the replicate models behind the PSE "
                             "intervals, and refits of the psychometric function; more give steadier interval ends.",
                    ), DEFAULT_TWOAFC_BOOTSTRAP)
    with sec.add("weat_box", gr.Column(visible=False), gr.update(visible=False)):
        sec.add("n_perm", gr.Number(
            10_000,
            precision=0,
            label="Permutations for the p-value",
            info="Exact enumeration when there are fewer partitions than this.",
            elem_id="n-permutations",
        ), 10_000)
        sec.add("n_boot_d", gr.Number(
            DEFAULT_WEAT_BOOTSTRAP,
            precision=0,
            label="Bootstrap resamples of the words (a comparison's interval of the difference in d)",
            info="d's own interval leaves each word out in turn (no resampling); comparing embeddings resamples "
                 "the target words this many times for the interval of their difference.",
            elem_id="n-bootstrap-d",
        ), DEFAULT_WEAT_BOOTSTRAP)
    sec.add("seed", gr.Number(DEFAULT_SEED, precision=0, label="Seed (repeat it to get the same numbers)",
                              elem_id="seed"), DEFAULT_SEED)
    sec.add("message", gr.Markdown("", elem_id="run-message"), "")
    with gr.Row():
        sec.add("run", gr.Button("Run the test →", variant="primary", elem_id="run-test"), gr.update(visible=True))
        sec.new = gr.Button("New bias test", elem_id="new-test-2")
    return sec


def wire(sec: Section, session: Any, *, tabs: Any, tab3: Any, results: Section,
         stale: list[tuple[Any, Any]]) -> None:
    """Step 2's handlers: the replicate set, training, and the run that fills step 3 and clears ``stale``."""
    sec.rep_mode.change(on_replicate_mode, sec.rep_mode, [sec.sigma, sec.rep_files, sec.train_box], queue=False)
    sec.paper.click(twoafc_preset_handler, [session, sec.corpus],
                    [sec.rep_mode, sec.n_rep, sec.preset_note, sec.train_estimate], queue=False)
    for box in (sec.corpus, sec.n_rep):
        box.change(twoafc_estimate, [sec.corpus, sec.n_rep], sec.train_estimate, queue=False)
    sec.train.click(
        train_handler,
        [session, sec.corpus, sec.n_rep, sec.dim, sec.epochs, sec.min_count, sec.seed],
        [session, sec.train_status],
        concurrency_id="embedding-train",
        concurrency_limit=1,
    )
    # a new run makes earlier Bayesian/posterior outputs stale: the run clears them (a refused run does not)
    sec.run.click(
        make_run_handler(tuple(v for _, v in stale), len(results.outputs)),
        [session, sec.rep_mode, sec.sigma, sec.rep_files, sec.sigmoid, sec.lapse, sec.n_boot, sec.n_perm, sec.seed,
         sec.n_boot_d],
        [session, sec.message, tabs, tab3, *(c for c, _ in stale), *results.outputs],
    )
