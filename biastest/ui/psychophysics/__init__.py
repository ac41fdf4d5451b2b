"""The word-embedding app: psychophysics 2AFC, WEAT/MAC, a Bayesian estimate and the posterior sampler.

Three gated tabs (specification → data → results). All per-user data lives
in one ``gr.State`` dictionary (the *session*); embeddings load once per
process through the shared model cache; each handler is wrapped with
:func:`~biastest.ui.common.user_errors` so a typed error reaches the user as
its message and nothing else ever shows a traceback. The report layer
(:mod:`biastest.report.psychophysics`) turns typed results into tables and
figures; this module only wires components.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from biastest import public
from biastest.errors import DataError, EmbeddingError, SpecError
from biastest.metrics.posterior import load_default_groups
from biastest.metrics.twoafc import labor_statistics_correlation, load_occupations_bls
from biastest.models.embeddings import (
    EMBEDDING_SOURCES,
    SAFE_EMBEDDING_SUFFIXES,
    KeyedVectorsEmbeddings,
    LookupReport,
    WordEmbeddings,
    check_coverage,
    check_upload_file,
    load_embeddings,
    train_bootstrap_replicates,
)
from biastest.options import BOUNDS
from biastest.report import psychophysics as rep
from biastest.runner.bayes import available_models, run_bayes, run_posterior
from biastest.runner.embeddings import run_mac, run_twoafc, run_weat
from biastest.spec import BiasSpec, TwoAFCSpec, parse_terms
from biastest.specs import get_spec, get_twoafc_spec, list_specs
from biastest.ui.common import (
    end_session_files_on_unload,
    escape,
    gated_tabs_reset,
    gradio_cache_policy,
    option_value,
    progress_callback,
    session_export_dir,
    unlock_step,
    user_errors,
)

__all__ = [
    "CUSTOM",
    "KIND_TWOAFC",
    "KIND_WEAT",
    "build_demo",
    "embedding_source_id",
    "new_session",
    "twoafc_spec_from_inputs",
    "weat_spec_from_inputs",
]

KIND_TWOAFC = "2AFC psychophysics"
KIND_WEAT = "WEAT / MAC"
CUSTOM = "Custom (type your own words)"
SOURCE_UPLOAD = "upload"
SOURCE_PATH = "path"
DEFAULT_SOURCE = "glove-6b-50d"

REPLICATES_NONE = "none"
REPLICATES_UPLOAD = "upload"
REPLICATES_TRAIN = "train"

MSG_SPEC_OK_TWOAFC = (
    "✅ Specification is valid: {n_targets} target words judged on {n_pairs} cue pairs ({cue1} vs {cue2})."
)
MSG_SPEC_OK_WEAT = (
    "✅ Specification is valid: target lists of {nx} and {ny} words, attribute lists of {na} and {nb} words."
)
MSG_NO_UPLOAD = (
    "Upload an embedding file (word2vec, GloVe or fastText, text or binary; .npz or .safetensors), or choose the "
    "embedded GloVe 6B 50d."
)
MSG_NO_PATH = "Type the path of an embedding file on this server, or choose another embedding source."
MSG_PATHS_DISABLED = (
    "Reading files by their path on the server is switched off here. Upload the embedding file instead."
)
MSG_SPEC_FIRST = "Complete step 1 first: check the specification and press “Continue to the data”."
MSG_RUN_FIRST = "Run the test in step 2 first."
MSG_CUE_PAIRS_DROPPED = "Cue pairs left out because a word is not in the embedding: {pairs}."
MSG_NO_CUE_PAIR_LEFT = (
    "None of the cue pairs can be used: every pair has a word that is not in the embedding '{source}' "
    "({missing}). Use other cue words or another embedding source."
)
MSG_NO_REPLICATE_FILES = (
    "Upload at least two embedding files as replicates, or choose “one model with perceptual noise”."
)
MSG_NO_CORPUS = "Upload a plain-text corpus (one sentence or document a line) to train replicates on."
MSG_TRAIN_FIRST = "Press “Train replicates” first, or choose another replicate set."
MSG_BAD_SIGMA = (
    "The perceptual noise σ must be 0 (no noise: a deterministic step) or a positive number (e.g. 0.05); got {value!r}."
)
MSG_BAD_INT = "{name} must be a whole number between {low} and {high}; got {value!r}."

_PAIR_SPLIT = re.compile(r"[\n,;]")


# --------------------------------------------------------------------------- session
def new_session() -> dict[str, Any]:
    """A fresh per-user session (what ``gr.State`` holds)."""
    return {
        "kind": None,  # "twoafc" | "weat"
        "spec": None,  # TwoAFCSpec | BiasSpec
        "source": None,  # embedding source id
        "lookup": None,  # {role: LookupReport}
        "replicates": None,  # list[WordEmbeddings] trained on a corpus (restricted to the spec's words)
        "replicate_note": "",
        "result": None,
        "bayes": None,
        "posterior": None,
    }


# --------------------------------------------------------------------------- step 1: specification
def _paths_allowed() -> bool:
    """Server paths follow the process's one public-mode decision (:mod:`biastest.public`)."""
    from biastest import public

    return public.current().server_paths


def source_choices(*, allow_paths: bool) -> list[tuple[str, str]]:
    """(label, value) choices of the embedding source radio."""
    out = [(s.label, s.name) for s in EMBEDDING_SOURCES.values()]
    out.append(("Upload an embedding file (word2vec, GloVe, fastText)", SOURCE_UPLOAD))
    if allow_paths:
        out.append(("A file on this server (type its path)", SOURCE_PATH))
    return out


def _file_path(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
        if value is None:
            return None
    if isinstance(value, dict):
        value = value.get("path") or value.get("name")
    return str(getattr(value, "name", value)) if value else None


def embedding_source_id(choice: str, upload: Any, path: str | None, *, allow_paths: bool) -> str:
    """The source string for :func:`~biastest.models.embeddings.load_embeddings`.

    Raises
    ------
    EmbeddingError
        No file uploaded, no path typed, or paths switched off.
    """
    choice = choice or DEFAULT_SOURCE
    if choice == SOURCE_UPLOAD:
        p = _file_path(upload)
        if not p:
            raise EmbeddingError(MSG_NO_UPLOAD)
        check_upload_file(p)  # the widget's file types are only a hint to the browser: never open a pickle
        return f"file:{p}"
    if choice == SOURCE_PATH:
        if not allow_paths or not _paths_allowed():
            raise EmbeddingError(MSG_PATHS_DISABLED)
        if not (path or "").strip():
            raise EmbeddingError(MSG_NO_PATH)
        return f"file:{path.strip()}"
    return choice


def _cue_pairs(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    parts = [p.strip() for p in _PAIR_SPLIT.split(text)]
    while parts and not parts[-1]:
        parts.pop()
    return tuple(parts)


def _format_pairs(pairs) -> str:
    return ", ".join(f"{a}/{b}" for a, b in pairs)


def fill_twoafc(name: str) -> tuple[str, str, str, str]:
    """Targets, cue pairs, cue-side names for a library entry (empty for Custom)."""
    if not name or name == CUSTOM:
        return "", "", "", ""
    spec = get_twoafc_spec(name)
    return ", ".join(spec.targets), _format_pairs(spec.cue_pairs), spec.cue1_name, spec.cue2_name


def twoafc_spec_from_inputs(library: str, targets: str, cue_pairs: str, cue1_name: str, cue2_name: str) -> TwoAFCSpec:
    """Build the 2AFC spec of step 1 (a library entry is kept when unedited)."""
    c1 = (cue1_name or "").strip() or "cue 1"
    c2 = (cue2_name or "").strip() or "cue 2"
    if library and library != CUSTOM:
        base = get_twoafc_spec(library)
        if fill_twoafc(library) == ((targets or "").strip(), (cue_pairs or "").strip(), c1, c2):
            return base
        return TwoAFCSpec(
            name=f"{base.name} (edited)",
            targets=parse_terms(targets),
            cue_pairs=_cue_pairs(cue_pairs),
            cue1_name=c1,
            cue2_name=c2,
            source=f"edited from {base.name}",
            url=base.url,
        )
    return TwoAFCSpec(
        name="Custom 2AFC test",
        targets=parse_terms(targets),
        cue_pairs=_cue_pairs(cue_pairs),
        cue1_name=c1,
        cue2_name=c2,
        source="user",
    )


def fill_weat(name: str) -> tuple[str, str, str, str, str, str, str, str]:
    """Lists and their names for a WEAT library entry (empty for Custom)."""
    if not name or name == CUSTOM:
        return "", "", "", "", "", "", "", ""
    spec = get_spec(name)
    return (
        ", ".join(spec.group1),
        ", ".join(spec.group2),
        ", ".join(spec.attributes1),
        ", ".join(spec.attributes2),
        spec.group1_name,
        spec.group2_name,
        spec.attribute1_name,
        spec.attribute2_name,
    )


def weat_spec_from_inputs(
    library: str,
    x: str,
    y: str,
    a: str,
    b: str,
    x_name: str = "",
    y_name: str = "",
    a_name: str = "",
    b_name: str = "",
) -> BiasSpec:
    """Build the WEAT/MAC spec of step 1: targets X, Y and attributes A, B (a library entry kept when unedited)."""
    names = (
        (x_name or "").strip() or "Targets X",
        (y_name or "").strip() or "Targets Y",
        (a_name or "").strip() or "Attributes A",
        (b_name or "").strip() or "Attributes B",
    )
    if library and library != CUSTOM:
        base = get_spec(library)
        typed = tuple((v or "").strip() for v in (x, y, a, b)) + names
        if fill_weat(library) == typed:
            return base
        name, source = f"{base.name} (edited)", f"edited from {base.name}"
    else:
        name, source = "Custom WEAT test", "user"
    return BiasSpec.from_terms(
        group1=x,
        group2=y,
        stereotype1=a,
        antistereotype1=b,
        name=name,
        group1_name=names[0],
        group2_name=names[1],
        stereotype1_name=names[2],
        antistereotype1_name=names[3],
        source=source,
    ).check_testable()


def spec_message(spec: TwoAFCSpec | BiasSpec) -> str:
    """The ✅ line for a valid spec."""
    if isinstance(spec, TwoAFCSpec):
        return MSG_SPEC_OK_TWOAFC.format(
            n_targets=len(spec.targets),
            n_pairs=len(spec.cue_pairs),
            cue1=escape(spec.cue1_name),
            cue2=escape(spec.cue2_name),
        )
    return MSG_SPEC_OK_WEAT.format(
        nx=len(spec.group1), ny=len(spec.group2), na=len(spec.attributes1), nb=len(spec.attributes2)
    )


def _spec_from_step1(kind: str, twoafc_inputs: tuple, weat_inputs: tuple) -> TwoAFCSpec | BiasSpec:
    if kind == KIND_WEAT:
        return weat_spec_from_inputs(*weat_inputs)
    return twoafc_spec_from_inputs(*twoafc_inputs)


def validate_step1(kind: str, *values: str) -> str:
    """Inline validation text (✅ or ⚠️ the problem), never an exception."""
    twoafc, weat = values[:5], values[5:]
    typed = twoafc[1:3] if kind != KIND_WEAT else weat[1:5]
    if not any((v or "").strip() for v in typed):
        return ""
    try:
        return spec_message(_spec_from_step1(kind, twoafc, weat))
    except SpecError as exc:
        return f"⚠️ {escape(exc.message)}"


# --------------------------------------------------------------------------- step 2: data
def lookup_reports(spec: TwoAFCSpec | BiasSpec, emb: WordEmbeddings) -> dict[str, LookupReport]:
    """Per-role lookup reports of every word of the spec in ``emb``."""
    if isinstance(spec, TwoAFCSpec):
        cues = tuple(dict.fromkeys(c for p in spec.cue_pairs for c in p))
        return {"target word": emb.lookup_report(spec.targets), "cue word": emb.lookup_report(cues)}
    return {
        spec.group1_name: emb.lookup_report(spec.group1),
        spec.group2_name: emb.lookup_report(spec.group2),
        spec.attribute1_name: emb.lookup_report(spec.attributes1),
        spec.attribute2_name: emb.lookup_report(spec.attributes2),
    }


def check_lookup(spec: TwoAFCSpec | BiasSpec, reports: dict[str, LookupReport]) -> list[str]:
    """Refuse a spec whose words are mostly missing; return notes on what is left out."""
    notes: list[str] = []
    if isinstance(spec, TwoAFCSpec):
        check_coverage(reports["target word"], role="target words")
        missing = set(reports["cue word"].missing)
        dropped = [p for p in spec.cue_pairs if p[0] in missing or p[1] in missing]
        if len(dropped) == len(spec.cue_pairs):
            raise EmbeddingError(
                MSG_NO_CUE_PAIR_LEFT.format(source=reports["cue word"].source, missing=", ".join(sorted(missing))),
                missing=sorted(missing),
            )
        if dropped:
            notes.append(MSG_CUE_PAIRS_DROPPED.format(pairs=_format_pairs(dropped)))
        return notes
    for role, report in reports.items():
        check_coverage(report, role=f"words of '{role}'")
    return notes


def lookup_frame(reports: dict[str, LookupReport]) -> pd.DataFrame:
    """One row per word: role, word, found, how it was looked up."""
    rows = []
    for role, report in reports.items():
        for r in report.records():
            rows.append(
                {
                    "role": role,
                    "word": r["term"],
                    "found": "found" if r["found"] else "MISSING",
                    "looked up as": r["looked_up_as"],
                    "how": r["how"],
                    "missing words": r["missing_words"],
                }
            )
    rows.sort(key=lambda r: r["found"] != "MISSING")  # missing words first, order kept otherwise
    return pd.DataFrame(rows, columns=["role", "word", "found", "looked up as", "how", "missing words"])


def lookup_markdown(source: str, reports: dict[str, LookupReport], notes: list[str]) -> str:
    """A short summary: found/missing per role, the case note, what is left out."""
    lines = [f"**Embedding:** `{escape(source)}`"]
    note = next((r.note for r in reports.values() if r.note), "")
    if note:
        lines.append(f"<span class='bt-hint'>{escape(note)}</span>")
    for role, report in reports.items():
        n, miss = len(report.terms), report.missing
        line = f"- **{escape(role)}**: {n - len(miss)} of {n} found"
        if miss:
            line += f"; <span class='bt-warn'>missing: {escape(', '.join(miss))}</span> (left out of the test)"
        lines.append(line)
    for n in notes:
        lines.append(f"<span class='bt-warn'>{escape(n)}</span>")
    return "\n".join(lines)


def _int_in(value: Any, *, name: str, low: int, high: int) -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value)) from None
    if not math.isfinite(v) or v != int(v) or not low <= v <= high:
        raise DataError(MSG_BAD_INT.format(name=name, low=low, high=high, value=value))
    return int(v)


def _spec_words(spec: TwoAFCSpec | BiasSpec) -> list[str]:
    if isinstance(spec, TwoAFCSpec):
        return list(dict.fromkeys([*spec.targets, *(c for p in spec.cue_pairs for c in p)]))
    return list(dict.fromkeys([*spec.group_terms, *spec.attribute_terms]))


# --------------------------------------------------------------------------- handlers: step 1
def _step1_inputs(values: tuple) -> tuple[str, tuple, tuple, tuple]:
    kind = values[0]
    twoafc = tuple(values[1:6])
    weat = tuple(values[6:15])
    source = tuple(values[15:18])
    return kind, twoafc, weat, source


@user_errors
def on_kind(kind: str) -> tuple[Any, Any]:
    """Show the inputs of the chosen test."""
    return gr.Column(visible=kind != KIND_WEAT), gr.Column(visible=kind == KIND_WEAT)


@user_errors
def on_source(choice: str) -> tuple[Any, Any]:
    """Show the upload box or the path box for the chosen embedding source."""
    return gr.File(visible=choice == SOURCE_UPLOAD), gr.Textbox(visible=choice == SOURCE_PATH)


def confirm_spec_core(
    session: dict[str, Any], *values: Any, allow_paths: bool, progress=None
) -> tuple[dict[str, Any], str, dict[str, LookupReport] | None, list[str]]:
    """Validate step 1, load the embedding and look every word up.

    Returns the new session (``spec``/``source``/``lookup`` set, later steps
    cleared), the inline message, the lookup reports and notes. Typed errors
    propagate (the handler shows them inline).
    """
    kind, twoafc, weat, (choice, upload, path) = _step1_inputs(values)
    spec = _spec_from_step1(kind, twoafc, weat)
    source = embedding_source_id(choice, upload, path, allow_paths=allow_paths)
    if progress is not None:
        progress(0, 1, "Loading the embedding")
    emb = load_embeddings(source)
    reports = lookup_reports(spec, emb)
    notes = check_lookup(spec, reports)
    if progress is not None:
        progress(1, 1, "Embedding loaded")
    new = new_session()
    new.update(kind="twoafc" if isinstance(spec, TwoAFCSpec) else "weat", spec=spec, source=emb.name, lookup=reports)
    return new, spec_message(spec), reports, notes


def _make_confirm(allow_paths: bool):
    @user_errors
    def confirm_spec(session, *values, progress=gr.Progress()):
        """Step 1 → step 2: inline ⚠️ message (and a toast) on a problem; unlock the data tab otherwise."""
        try:
            new, message, reports, notes = confirm_spec_core(
                session, *values, allow_paths=allow_paths, progress=progress_callback(progress)
            )
        except (SpecError, EmbeddingError, DataError) as exc:
            gr.Warning(exc.message)
            skip = gr.skip()
            return (session, f"⚠️ {escape(exc.message)}", skip, skip, skip, skip, skip, skip, skip)
        tabs, tab2 = unlock_step("data")
        twoafc = new["kind"] == "twoafc"
        return (
            new,
            message,
            tabs,
            tab2,
            gr.Tab(interactive=False),
            lookup_markdown(new["source"], reports, notes),
            lookup_frame(reports),
            gr.Column(visible=twoafc),
            gr.Column(visible=not twoafc),
        )

    return confirm_spec


# --------------------------------------------------------------------------- handlers: step 2 → results
FEMALE_WORDS = frozenset(
    "woman women female she her hers daughter girl sister mother wife aunt niece lady queen feminine".split()
)
MALE_WORDS = frozenset("man men male he him his son boy brother father husband uncle nephew gentleman king".split())


@user_errors
def on_replicate_mode(mode: str) -> tuple[Any, Any, Any]:
    """Show σ, the replicate upload or the corpus training for the chosen replicate set."""
    return (
        gr.update(visible=mode == REPLICATES_NONE),
        gr.update(visible=mode == REPLICATES_UPLOAD),
        gr.update(visible=mode == REPLICATES_TRAIN),
    )


def _need(session: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    if not session or session.get("spec") is None:
        raise DataError(MSG_SPEC_FIRST)
    for k in keys:
        if session.get(k) is None:
            raise DataError(MSG_RUN_FIRST)
    return session


def _sigma(value: Any) -> float | None:
    """The user's perceptual noise: 0 means none (a deterministic step), negative or text is refused."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(MSG_BAD_SIGMA.format(value=value)) from None
    if not math.isfinite(v) or v < 0:
        raise DataError(MSG_BAD_SIGMA.format(value=value))
    return None if v == 0 else option_value("noise_sigma", v)


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
    session = _need(session)
    if not isinstance(session["spec"], TwoAFCSpec):
        raise DataError(MSG_SPEC_FIRST)
    path = _file_path(corpus)
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


@user_errors
def train_handler(session, corpus, n_replicates, vector_size, epochs, min_count, seed, progress=gr.Progress()):
    """Train replicates (progress bar) and report the vocabulary coverage."""
    return train_replicates_core(
        session, corpus, n_replicates, vector_size, epochs, min_count, seed, progress=progress_callback(progress)
    )


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


def _replicate_models(session: dict[str, Any], mode: str, files: Any) -> list[WordEmbeddings] | None:
    if mode == REPLICATES_UPLOAD:
        paths = [p for p in (_file_path(f) for f in (files or [])) if p]
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
    *,
    progress=None,
) -> dict[str, Any]:
    """Run the test of the session's spec; return the session with ``result`` (and ``labour``) set."""
    session = _need(session)
    spec = session["spec"]
    seed_i = option_value("seed", seed)
    new = dict(session)
    new.update(bayes=None, posterior=None, labour=None)
    if isinstance(spec, TwoAFCSpec):
        n_bootstrap = option_value("n_bootstrap", n_boot)  # every option checked before any file is loaded
        noise = _sigma(sigma) if rep_mode not in (REPLICATES_UPLOAD, REPLICATES_TRAIN) else None
        replicates = _replicate_models(session, rep_mode, files)
        result = run_twoafc(
            spec=spec,
            source=session["source"],
            replicates=replicates,
            noise_sigma=noise if replicates is None else None,
            seed=seed_i,
            sigmoid=sigmoid or "norm",
            lapse=bool(lapse),
            n_bootstrap=n_bootstrap,
            progress=progress,
        )
        new.update(result=result, labour=_labour(result, spec), weat=None, mac=None)
        return new
    n_permutations = option_value("n_permutations", n_perm)
    weat = run_weat(spec=spec, source=session["source"], seed=seed_i, n_permutations=n_permutations, progress=progress)
    mac = run_mac(spec=spec, source=session["source"])
    new.update(result=weat, weat=weat, mac=mac)
    return new


def results_view(session: dict[str, Any]) -> tuple:
    """Values of the result components for the session's result (see ``result_outputs`` in :func:`build_demo`)."""
    spec, source = session["spec"], session["source"]
    hide = gr.update(visible=False)
    if isinstance(spec, TwoAFCSpec):
        result, corr = session["result"], session.get("labour")
        csv_path, json_path = rep.twoafc_exports(result, source=source, corr=corr, spec=spec.to_dict(),
                                                   directory=session_export_dir("biastest-2afc-"))
        names = [t.target for t in sorted(result.targets, key=lambda t: -t.pse)]
        first = names[0] if names else None
        return (
            rep.twoafc_interpretation(result, source=source),
            gr.update(visible=True),
            gr.update(visible=False),
            rep.pse_figure(result),
            gr.update(choices=names, value=first),
            rep.curve_figure(result.psychometric_curve(first)) if first else None,
            rep.spectrum_figure(result.spectrum()),
            rep.labour_markdown(corr) if corr is not None else "",
            gr.update(value=rep.labour_figure(corr, cue1_label=result.cue1_label), visible=True)
            if corr is not None
            else gr.update(value=None, visible=False),
            rep.twoafc_frame(result),
            None,
            None,
            None,
            None,
            gr.update(value=str(csv_path), visible=True),
            gr.update(value=str(json_path), visible=True),
        )
    weat, mac = session["weat"], session["mac"]
    csv_path, json_path = rep.weat_exports(weat, mac, source=source, spec=spec.to_dict(),
                                               directory=session_export_dir("biastest-weat-"))
    return (
        rep.weat_interpretation(weat, mac, source=source),
        gr.update(visible=False),
        gr.update(visible=True),
        None,
        gr.update(choices=[], value=None),
        None,
        None,
        "",
        hide,
        None,
        rep.weat_frame(weat, mac),
        rep.weat_figure(weat),
        rep.weat_words_frame(weat),
        rep.mac_frame(mac),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


@user_errors
def run_handler(session, rep_mode, sigma, files, sigmoid, lapse, n_boot, n_perm, seed, progress=gr.Progress()):
    """Step 2 → results: run, render, unlock the results tab."""
    new = run_core(
        session, rep_mode, sigma, files, sigmoid, lapse, n_boot, n_perm, seed, progress=progress_callback(progress)
    )
    tabs, tab3 = unlock_step("results")
    return (new, "", tabs, tab3, *results_view(new))


@user_errors
def curve_handler(session, target):
    """Psychometric curve of the selected target."""
    if not session or not isinstance(session.get("spec"), TwoAFCSpec) or session.get("result") is None or not target:
        return None
    return rep.curve_figure(session["result"].psychometric_curve(target))


# --------------------------------------------------------------------------- layout
HEADER = """
# Word embeddings: psychophysics, WEAT/MAC and Bayesian bias estimates

Test whether a word embedding (a table that turns each word into a list of numbers, as used inside many AI
systems) links words such as occupations to one social group more than to another. **2AFC psychophysics**
asks the embedding, for each target word, to choose between two cue words (e.g. *woman* or *man*) while the
cue is mixed gradually from one to the other; the mix at which it switches sides is the *point of subjective
equality* (PSE: 0.5 = no preference). **WEAT / MAC** compare the average similarity of two target lists to two
attribute lists. The embedded GloVe 6B 50d runs offline; you can upload your own word vectors.
"""

TWOAFC_HELP = (
    "Target words are judged one at a time; each cue pair is one forced choice. A PSE above 0.5 means the "
    "target sits closer to the first cue word (e.g. *woman*), below 0.5 closer to the second (e.g. *man*)."
)
WEAT_HELP = (
    "WEAT asks whether target list X is more similar to attribute list A (and Y to B) than the other way round. "
    "MAC is the mean cosine distance (1 − similarity) of each target word to each attribute list."
)


def build_demo(*, allow_server_paths: bool | None = None) -> gr.Blocks:
    """The app's Blocks (no queue, no launch: :func:`biastest.ui.serve.configure_queue` does that).

    Parameters
    ----------
    allow_server_paths : bool, optional
        Offer "a file on this server (path)" as an embedding source. Default: the
        process's public-mode decision (:mod:`biastest.public`: off when public). A
        public server never offers it, whatever this says.
    """
    allow_paths = _paths_allowed() and (allow_server_paths is None or bool(allow_server_paths))
    with gr.Blocks(title="biastest · word embeddings", delete_cache=gradio_cache_policy()) as demo:
        session = gr.State(new_session())
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs(selected="spec", elem_id="steps") as tabs:
            # ------------------------------------------------------------- step 1
            with gr.Tab("1 · Specification", id="spec", elem_id="tab-spec") as tab1:
                kind = gr.Radio(
                    [KIND_TWOAFC, KIND_WEAT],
                    value=KIND_TWOAFC,
                    label="Which test?",
                    info="2AFC: target words judged between cue pairs. WEAT/MAC: two target and two attribute lists.",
                    elem_id="test-kind",
                )
                with gr.Column(visible=True) as twoafc_box:
                    gr.Markdown(TWOAFC_HELP, elem_classes=["bt-hint"])
                    lib2 = gr.Dropdown(
                        [CUSTOM, *list_specs("twoafc")],
                        value=CUSTOM,
                        label="Predefined 2AFC specification",
                        info="Pick one from the library, or type your own words below.",
                        elem_id="twoafc-library",
                    )
                    targets = gr.Textbox(
                        label="Target words (comma-separated)",
                        placeholder="e.g. nurse, engineer, teacher, carpenter",
                        lines=2,
                        elem_id="twoafc-targets",
                    )
                    cues = gr.Textbox(
                        label="Cue pairs (first/second, comma-separated)",
                        placeholder="e.g. woman/man, she/he, girl/boy",
                        elem_id="twoafc-cues",
                    )
                    with gr.Row():
                        cue1_name = gr.Textbox(
                            label="Name of the first cue side", placeholder="e.g. female", elem_id="twoafc-cue1-name"
                        )
                        cue2_name = gr.Textbox(
                            label="Name of the second cue side", placeholder="e.g. male", elem_id="twoafc-cue2-name"
                        )
                with gr.Column(visible=False) as weat_box:
                    gr.Markdown(WEAT_HELP, elem_classes=["bt-hint"])
                    libw = gr.Dropdown(
                        [CUSTOM, *list_specs("weat")],
                        value=CUSTOM,
                        label="Predefined WEAT specification",
                        info="WEAT 1–10 of Caliskan et al. (2017), or type your own lists below.",
                        elem_id="weat-library",
                    )
                    with gr.Row():
                        wx = gr.Textbox(
                            label="Target list X", placeholder="e.g. math, algebra, geometry", elem_id="weat-x"
                        )
                        wy = gr.Textbox(label="Target list Y", placeholder="e.g. poetry, art, dance", elem_id="weat-y")
                    with gr.Row():
                        wa = gr.Textbox(label="Attribute list A", placeholder="e.g. male, man, boy", elem_id="weat-a")
                        wb = gr.Textbox(
                            label="Attribute list B", placeholder="e.g. female, woman, girl", elem_id="weat-b"
                        )
                    with gr.Accordion("Names of the four lists (optional)", open=False):
                        with gr.Row():
                            wxn = gr.Textbox(label="Name of X", placeholder="Targets X", elem_id="weat-x-name")
                            wyn = gr.Textbox(label="Name of Y", placeholder="Targets Y", elem_id="weat-y-name")
                            wan = gr.Textbox(label="Name of A", placeholder="Attributes A", elem_id="weat-a-name")
                            wbn = gr.Textbox(label="Name of B", placeholder="Attributes B", elem_id="weat-b-name")
                source = gr.Radio(
                    source_choices(allow_paths=allow_paths),
                    value=DEFAULT_SOURCE,
                    label="Embedding",
                    info="The embedded GloVe 6B 50d works offline. Uploads: word2vec/GloVe/fastText (text or "
                    "binary), .npz or .safetensors.",
                    elem_id="embedding-source",
                )
                upload = gr.File(
                    label="Embedding file",
                    file_types=list(SAFE_EMBEDDING_SUFFIXES),
                    visible=False,
                    elem_id="embedding-upload",
                )
                path = gr.Textbox(
                    label="Path of the embedding file on this server", visible=False, elem_id="embedding-path"
                )
                spec_msg = gr.Markdown("", elem_id="spec-message")
                with gr.Row():
                    next1 = gr.Button("Continue to the data →", variant="primary", elem_id="spec-next")
                    new1 = gr.Button("New bias test", elem_id="new-test-1")

            # ------------------------------------------------------------- step 2
            with gr.Tab("2 · Data", id="data", interactive=False, elem_id="tab-data") as tab2:
                data_md = gr.Markdown("", elem_id="data-summary")
                lookup_df = gr.Dataframe(
                    label="Every word of the specification: found in the embedding or missing",
                    interactive=False,
                    elem_id="lookup-table",
                )
                with gr.Column(visible=True) as twoafc_data:
                    gr.Markdown(
                        "### Where the noise comes from\n"
                        "One embedding gives one fixed answer per mix, so a psychometric curve needs a source of "
                        "variability. Either **several embedding models** trained on resamples of the same text "
                        "(the paper trains 32), or one model with a **perceptual noise σ that you choose** — an "
                        "assumption about the observer, not data.",
                    )
                    rep_mode = gr.Radio(
                        [
                            (
                                "One model, with a perceptual noise σ that you set (an assumption, not data)",
                                REPLICATES_NONE,
                            ),
                            ("Several embedding files that you upload (replicates)", REPLICATES_UPLOAD),
                            ("Train replicates on a text corpus that you upload", REPLICATES_TRAIN),
                        ],
                        value=REPLICATES_NONE,
                        label="Replicate set",
                        elem_id="replicate-mode",
                    )
                    sigma = gr.Number(
                        value=0.05,
                        label="Perceptual noise σ (your assumption, in cosine-similarity units)",
                        info="SD of Gaussian noise on the score difference of the answers (Thurstonian); 0 = no noise.",
                        elem_id="noise-sigma",
                    )
                    rep_files = gr.File(
                        label="Replicate embedding files (two or more)",
                        file_count="multiple",
                        file_types=list(SAFE_EMBEDDING_SUFFIXES),
                        visible=False,
                        elem_id="replicate-files",
                    )
                    with gr.Column(visible=False) as train_box:
                        corpus = gr.File(
                            label="Text corpus (.txt, one sentence or document a line)",
                            file_types=[".txt"],
                            elem_id="corpus-file",
                        )
                        with gr.Row():
                            n_rep = gr.Slider(2, 32, value=8, step=1, label="Replicates", elem_id="n-replicates")
                            dim = gr.Slider(10, 300, value=50, step=10, label="Vector size", elem_id="vector-size")
                            epochs = gr.Slider(1, 20, value=5, step=1, label="Epochs", elem_id="epochs")
                            min_count = gr.Slider(
                                1, 20, value=2, step=1, label="Minimum word count", elem_id="min-count"
                            )
                        train_btn = gr.Button("Train replicates", elem_id="train-replicates")
                        train_md = gr.Markdown("", elem_id="train-status")
                    with gr.Accordion("Psychometric fit", open=False):
                        with gr.Row():
                            sigmoid = gr.Dropdown(
                                [("cumulative normal", "norm"), ("logistic", "logistic")],
                                value="norm",
                                label="Psychometric function",
                                elem_id="sigmoid",
                            )
                            lapse = gr.Checkbox(False, label="Fit a lapse rate", elem_id="lapse")
                            n_boot = gr.Number(
                                200, label="Bootstrap samples for the intervals", precision=0, elem_id="n-bootstrap"
                            )
                with gr.Column(visible=False) as weat_data:
                    n_perm = gr.Number(
                        10_000,
                        precision=0,
                        label="Permutations for the p-value",
                        info="Exact enumeration when there are fewer partitions than this.",
                        elem_id="n-permutations",
                    )
                seed = gr.Number(0, precision=0, label="Seed (repeat it to get the same numbers)", elem_id="seed")
                run_md = gr.Markdown("", elem_id="run-message")
                with gr.Row():
                    run_btn = gr.Button("Run the test →", variant="primary", elem_id="run-test")
                    new2 = gr.Button("New bias test", elem_id="new-test-2")

            # ------------------------------------------------------------- step 3
            with gr.Tab("3 · Results", id="results", interactive=False, elem_id="tab-results") as tab3:
                summary_md = gr.Markdown("", elem_id="result-summary")
                with gr.Column(visible=True) as twoafc_res:
                    pse_plot = gr.Plot(label="PSE per target word (paper Fig. 3)", elem_id="pse-plot")
                    with gr.Row():
                        curve_target = gr.Dropdown(
                            [], label="Psychometric curve of the target word", elem_id="curve-target"
                        )
                    curve_plot = gr.Plot(label="Psychometric curve (paper Fig. 2)", elem_id="curve-plot")
                    spectrum_plot = gr.Plot(label="Spectrum of target words (paper Fig. 4)", elem_id="spectrum-plot")
                    labour_md = gr.Markdown("", elem_id="labour-summary")
                    labour_plot = gr.Plot(label="PSE vs labour statistics", visible=False, elem_id="labour-plot")
                    twoafc_df = gr.Dataframe(label="Per target word", interactive=False, elem_id="twoafc-table")
                with gr.Column(visible=False) as weat_res:
                    weat_df = gr.Dataframe(label="WEAT and MAC", interactive=False, elem_id="weat-table")
                    weat_plot = gr.Plot(label="Association of each target word", elem_id="weat-plot")
                    weat_words_df = gr.Dataframe(label="Per target word", interactive=False, elem_id="weat-words-table")
                    mac_df = gr.Dataframe(
                        label="MAC per target word and attribute list", interactive=False, elem_id="mac-table"
                    )
                with gr.Row():
                    csv_btn = gr.DownloadButton("Download CSV", visible=False, elem_id="download-csv")
                    json_btn = gr.DownloadButton("Download JSON", visible=False, elem_id="download-json")
                with gr.Accordion("Bayesian estimate with control groups", open=False, elem_id="bayes-section"):
                    bayes_ui = _bayes_section()
                with gr.Accordion(
                    "Posterior of embeddings given a sentiment classifier", open=False, elem_id="posterior-section"
                ):
                    post_ui = _posterior_section()
                new3 = gr.Button("New bias test", variant="secondary", elem_id="new-test-3")

        # ----------------------------------------------------------------- wiring
        twoafc_inputs = [lib2, targets, cues, cue1_name, cue2_name]
        weat_inputs = [libw, wx, wy, wa, wb, wxn, wyn, wan, wbn]
        step1 = [kind, *twoafc_inputs, *weat_inputs, source, upload, path]

        kind.change(on_kind, kind, [twoafc_box, weat_box], queue=False)
        source.change(on_source, source, [upload, path], queue=False)
        lib2.change(user_errors(fill_twoafc), lib2, [targets, cues, cue1_name, cue2_name], queue=False).then(
            user_errors(validate_step1), [kind, *twoafc_inputs, *weat_inputs], spec_msg, queue=False
        )
        libw.change(user_errors(fill_weat), libw, [wx, wy, wa, wb, wxn, wyn, wan, wbn], queue=False).then(
            user_errors(validate_step1), [kind, *twoafc_inputs, *weat_inputs], spec_msg, queue=False
        )
        # one queued listener, one event at a time, last wins: answers cannot overtake each other
        gr.on(
            [box.blur for box in (targets, cues, cue1_name, cue2_name, wx, wy, wa, wb, wxn, wyn, wan, wbn)],
            user_errors(validate_step1),
            [kind, *twoafc_inputs, *weat_inputs],
            spec_msg,
            concurrency_limit=1,
            concurrency_id="psy-spec-validate",
            show_progress="hidden",
            trigger_mode="always_last",
        )
        next1.click(
            _make_confirm(allow_paths),
            [session, *step1],
            [session, spec_msg, tabs, tab2, tab3, data_md, lookup_df, twoafc_data, weat_data],
        )

        rep_mode.change(on_replicate_mode, rep_mode, [sigma, rep_files, train_box], queue=False)
        train_btn.click(
            train_handler,
            [session, corpus, n_rep, dim, epochs, min_count, seed],
            [session, train_md],
            concurrency_id="embedding-train",
            concurrency_limit=1,
        )
        result_outputs = [
            summary_md,
            twoafc_res,
            weat_res,
            pse_plot,
            curve_target,
            curve_plot,
            spectrum_plot,
            labour_md,
            labour_plot,
            twoafc_df,
            weat_df,
            weat_plot,
            weat_words_df,
            mac_df,
            csv_btn,
            json_btn,
        ]
        run_event = run_btn.click(
            run_handler,
            [session, rep_mode, sigma, rep_files, sigmoid, lapse, n_boot, n_perm, seed],
            [session, run_md, tabs, tab3, *result_outputs],
        )
        # a new run makes earlier Bayesian/posterior outputs stale: clear them with the run
        section_resets = [*bayes_ui.resets(), *post_ui.resets()]
        run_event.success(
            lambda: tuple(v for _, v in section_resets), None, [c for c, _ in section_resets], queue=False
        )
        curve_target.change(curve_handler, [session, curve_target], curve_plot, queue=False)
        _wire_bayes(bayes_ui, session)
        _wire_posterior(post_ui, session)

        # New bias test: back to step 1, every input and output cleared, a fresh session
        resets: list[tuple[Any, Any]] = [
            (kind, KIND_TWOAFC),
            (twoafc_box, gr.update(visible=True)),
            (weat_box, gr.update(visible=False)),
            (lib2, CUSTOM),
            (targets, ""),
            (cues, ""),
            (cue1_name, ""),
            (cue2_name, ""),
            (libw, CUSTOM),
            (wx, ""),
            (wy, ""),
            (wa, ""),
            (wb, ""),
            (wxn, ""),
            (wyn, ""),
            (wan, ""),
            (wbn, ""),
            (source, DEFAULT_SOURCE),
            (upload, gr.update(value=None, visible=False)),
            (path, gr.update(value="", visible=False)),
            (spec_msg, ""),
            (data_md, ""),
            (lookup_df, None),
            (twoafc_data, gr.update(visible=True)),
            (weat_data, gr.update(visible=False)),
            (rep_mode, REPLICATES_NONE),
            (sigma, gr.update(value=0.05, visible=True)),
            (rep_files, gr.update(value=None, visible=False)),
            (train_box, gr.update(visible=False)),
            (corpus, None),
            (train_md, ""),
            (run_md, ""),
            (seed, 0),
            (summary_md, ""),
            (twoafc_res, gr.update(visible=True)),
            (weat_res, gr.update(visible=False)),
            (pse_plot, None),
            (curve_target, gr.update(choices=[], value=None)),
            (curve_plot, None),
            (spectrum_plot, None),
            (labour_md, ""),
            (labour_plot, gr.update(value=None, visible=False)),
            (twoafc_df, None),
            (weat_df, None),
            (weat_plot, None),
            (weat_words_df, None),
            (mac_df, None),
            (csv_btn, gr.update(value=None, visible=False)),
            (json_btn, gr.update(value=None, visible=False)),
            *bayes_ui.resets(),
            *post_ui.resets(),
        ]
        reset_outputs = [session, tabs, tab2, tab3, *(c for c, _ in resets)]

        def reset():
            return (new_session(), *gated_tabs_reset(), *(v for _, v in resets))

        for btn in (new1, new2, new3):
            btn.click(user_errors(reset), None, reset_outputs, queue=False)
        end_session_files_on_unload(demo)
        del tab1
    return demo


# --------------------------------------------------------------------------- sections: Bayes, posterior
MSG_BAYES_NEEDS_WEAT = (
    "The Bayesian estimate needs two social groups and two attribute lists: choose “WEAT / MAC” in step 1 "
    "(a 2AFC specification has target words and cue pairs, but no stereotype attribute lists)."
)
MSG_BAYES_DONE = "✅ Bayesian estimate done ({model}, {seconds:.1f} s)."
MSG_POSTERIOR_DONE = "✅ Posteriors sampled ({seconds:.1f} s of sampling)."
BAYES_DEFAULTS = {"model": "hierarchical", "draws": 1000, "tune": 1000, "chains": 2, "seed": 0}
POSTERIOR_DEFAULTS = {"draws": 1000, "tune": 500, "chains": 2, "seed": 0}


class _Section:
    """Components of a results section and the values that reset them."""

    def __init__(self) -> None:
        self._resets: list[tuple[Any, Any]] = []

    def add(self, name: str, component: Any, reset: Any) -> Any:
        setattr(self, name, component)
        self._resets.append((component, reset))
        return component

    def resets(self) -> list[tuple[Any, Any]]:
        return list(self._resets)


def bayes_core(session, model, draws, tune, chains, seed, *, progress=None) -> dict[str, Any]:
    """Bayesian estimate with control groups for the session's (WEAT/MAC) spec."""
    session = _need(session)
    spec = session["spec"]
    if not isinstance(spec, BiasSpec):
        raise DataError(MSG_BAYES_NEEDS_WEAT)
    result = run_bayes(
        spec_groups=dict(spec.social_groups[:2]),
        spec_attributes=dict(spec.attributes[:2]),
        source=session["source"],
        model=model or BAYES_DEFAULTS["model"],
        seed=option_value("seed", seed),
        draws=option_value("draws", draws),
        tune=option_value("tune", tune),
        chains=option_value("chains", chains),
        spec_name=spec.name,
        progress=progress,
    )
    new = dict(session)
    new["bayes"] = result
    return new


def bayes_view(session: dict[str, Any]) -> tuple:
    """Outputs of the Bayes section: status, priors, two plots, diagnostics, table, CSV, JSON."""
    result = session["bayes"]
    csv_path, json_path = rep.bayes_exports(result, source=session["source"],
                                                directory=session_export_dir("biastest-bayes-"))
    return (
        MSG_BAYES_DONE.format(model=escape(result.model["title"]), seconds=result.seconds),
        rep.bayes_priors_markdown(result.model),
        rep.bayes_interval_figure(result),
        rep.bayes_contrast_figure(result),
        rep.bayes_diagnostics_markdown(result),
        rep.bayes_contrast_frame(result),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


@user_errors
def bayes_handler(session, model, draws, tune, chains, seed, progress=gr.Progress()):
    """Run the Bayesian estimate (progress bar) and render it."""
    new = bayes_core(session, model, draws, tune, chains, seed, progress=progress_callback(progress))
    return (new, *bayes_view(new))


@user_errors
def priors_handler(model: str) -> str:
    """Show the priors of the chosen model before anything is sampled."""
    info = {m["name"]: m for m in available_models()}.get(model)
    return rep.bayes_priors_markdown(info) if info else ""


def _bayes_section() -> _Section:
    sec = _Section()
    models = available_models()
    default = {m["name"]: m for m in models}[BAYES_DEFAULTS["model"]]
    gr.Markdown(
        "Instead of one average, this model uses every (protected word, attribute word) distance and compares the "
        "stereotype attributes with **neutral control words** (neutral human attributes and neutral words, shipped "
        "with biastest). It reports 89% highest-posterior-density intervals (HPDI): a bias is credible only where "
        "the whole interval of *associated − control* lies below 0. Needs a WEAT / MAC specification.",
        elem_classes=["bt-hint"],
    )
    sec.add("model", gr.Radio([(m["title"], m["name"]) for m in models], value=default["name"], label="Model",
                              elem_id="bayes-model"), BAYES_DEFAULTS["model"])
    sec.add("priors", gr.Markdown(rep.bayes_priors_markdown(default), elem_id="bayes-priors"),
            rep.bayes_priors_markdown(default))
    with gr.Row():
        for key, label in (("draws", "Draws per chain"), ("tune", "Tuning steps per chain"), ("chains", "Chains"),
                           ("seed", "Seed")):
            sec.add(key, gr.Number(BAYES_DEFAULTS[key], precision=0, label=label, elem_id=f"bayes-{key}"),
                    BAYES_DEFAULTS[key])
    sec.run = gr.Button("Run the Bayesian estimate", variant="primary", elem_id="bayes-run")
    sec.add("status", gr.Markdown("", elem_id="bayes-status"), "")
    sec.add("plot", gr.Plot(label="Expected distance per protected word and connection", elem_id="bayes-plot"), None)
    sec.add("contrast_plot", gr.Plot(label="Contrasts with the controls", elem_id="bayes-contrast-plot"), None)
    sec.add("diagnostics", gr.Markdown("", elem_id="bayes-diagnostics"), "")
    sec.add("table", gr.Dataframe(label="Contrasts per protected word", interactive=False, elem_id="bayes-table"),
            None)
    with gr.Row():
        sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="bayes-download-csv"),
                gr.update(value=None, visible=False))
        sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="bayes-download-json"),
                gr.update(value=None, visible=False))
    return sec


def _wire_bayes(sec: _Section, session: Any) -> None:
    sec.model.change(priors_handler, sec.model, sec.priors, queue=False)
    sec.run.click(
        bayes_handler,
        [session, sec.model, sec.draws, sec.tune, sec.chains, sec.seed],
        [session, sec.status, sec.priors, sec.plot, sec.contrast_plot, sec.diagnostics, sec.table, sec.csv, sec.json],
        concurrency_id="mcmc",
        concurrency_limit=1,
    )


def _default_groups() -> tuple[str, str, str, str]:
    (na, wa), (nb, wb) = list(load_default_groups().items())[:2]
    return na, ", ".join(wa), nb, ", ".join(wb)


def posterior_core(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed, *,
                   progress=None) -> dict[str, Any]:
    """Sample the embedding posteriors given the sentiment classifier, for the session's embedding."""
    session = _need(session)
    groups = {
        (name_a or "").strip() or "group 1": list(parse_terms(words_a)),
        (name_b or "").strip() or "group 2": list(parse_terms(words_b)),
    }
    result = run_posterior(
        source=session["source"],
        seed=option_value("seed", seed),
        draws=option_value("draws", draws),
        tune=option_value("tune", tune),
        chains=option_value("chains", chains),
        groups=groups,
        progress=progress,
    )
    new = dict(session)
    new["posterior"] = result
    return new


def posterior_view(session: dict[str, Any]) -> tuple:
    """Outputs of the posterior section: status, reading, ACF, PCA, word table, group table, CSV, JSON."""
    result = session["posterior"]
    csv_path, json_path = rep.posterior_exports(result, source=session["source"],
                                                    directory=session_export_dir("biastest-posterior-"))
    return (
        MSG_POSTERIOR_DONE.format(seconds=float(result.diagnostics.get("seconds", 0.0))),
        rep.posterior_markdown(result),
        rep.posterior_acf_figure(result),
        rep.posterior_pca_figure(result),
        rep.posterior_words_frame(result),
        rep.posterior_group_frame(result),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


@user_errors
def posterior_handler(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed, progress=gr.Progress()):
    """Train the classifier, sample both posteriors (progress bar) and render them."""
    new = posterior_core(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed,
                         progress=progress_callback(progress))
    return (new, *posterior_view(new))


def _posterior_section() -> _Section:
    sec = _Section()
    na, wa, nb, wb = _default_groups()
    gr.Markdown(
        "A small neural network learns, from the VADER sentiment lexicon, to tell positive from negative words by "
        "their vectors. The sampler (NUTS) then draws word vectors that the network finds positive (p(s | +)) or "
        "negative (p(s | −)), from a wide prior N(0, 10²·I) (Liang & Acuna 2020, §3.2). Are the words of one "
        "group (by default female vs male first names) closer to a posterior than the other's? A permutation test "
        "answers.",
        elem_classes=["bt-hint"],
    )
    with gr.Row():
        sec.add("name_a", gr.Textbox(na, label="Name of word group 1", elem_id="posterior-name-a"), na)
        sec.add("words_a", gr.Textbox(wa, label="Words of group 1", elem_id="posterior-words-a"), wa)
    with gr.Row():
        sec.add("name_b", gr.Textbox(nb, label="Name of word group 2", elem_id="posterior-name-b"), nb)
        sec.add("words_b", gr.Textbox(wb, label="Words of group 2", elem_id="posterior-words-b"), wb)
    with gr.Row():
        for key, label in (("draws", "Draws per chain"), ("tune", "Tuning steps per chain"), ("chains", "Chains"),
                           ("seed", "Seed")):
            sec.add(key, gr.Number(POSTERIOR_DEFAULTS[key], precision=0, label=label, elem_id=f"posterior-{key}"),
                    POSTERIOR_DEFAULTS[key])
    sec.run = gr.Button("Sample the posteriors", variant="primary", elem_id="posterior-run")
    sec.add("status", gr.Markdown("", elem_id="posterior-status"), "")
    sec.add("reading", gr.Markdown("", elem_id="posterior-reading"), "")
    with gr.Row():
        sec.add("acf", gr.Plot(label="Autocorrelation (paper Fig. 5)", elem_id="posterior-acf"), None)
        sec.add("pca", gr.Plot(label="PCA of the samples (paper Fig. 6)", elem_id="posterior-pca"), None)
    sec.add("words", gr.Dataframe(label="Words nearest to and farthest from each posterior mean (paper Table 1)",
                                  interactive=False, elem_id="posterior-words"), None)
    sec.add("groups", gr.Dataframe(label="Distance of each word group to each posterior, with tests",
                                   interactive=False, elem_id="posterior-groups"), None)
    with gr.Row():
        sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="posterior-download-csv"),
                gr.update(value=None, visible=False))
        sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="posterior-download-json"),
                gr.update(value=None, visible=False))
    return sec


def _wire_posterior(sec: _Section, session: Any) -> None:
    sec.run.click(
        posterior_handler,
        [session, sec.name_a, sec.words_a, sec.name_b, sec.words_b, sec.draws, sec.tune, sec.chains, sec.seed],
        [session, sec.status, sec.reading, sec.acf, sec.pca, sec.words, sec.groups, sec.csv, sec.json],
        concurrency_id="mcmc",
        concurrency_limit=1,
    )
