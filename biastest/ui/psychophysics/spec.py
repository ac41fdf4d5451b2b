"""Step 1 of the word-embedding app: the specification (2AFC or WEAT/MAC) and the embedding source.

“Next: test data” checks the specification, loads the embedding (once
per process, through the shared model cache), looks every word up and unlocks
step 2, where the found/missing words are shown. A mistake the user can fix is
shown inline next to the inputs (and as a yellow toast); step 2 stays locked.

A 2AFC specification whose words the embedding lacks (multi-word occupations, names …) is not refused here: step 2
can still ask a chat model or a text classifier, which read the words as text. The embedding's refusal becomes a
warning in step 2 (:data:`MSG_EMBEDDING_CANNOT`) and is kept in the session (``embedding_refused``); only the
embedding's run meets it (:data:`MSG_EMBEDDING_REFUSED`). A WEAT/MAC specification, tested by the embedding only,
is still refused in step 1.
"""

from __future__ import annotations

import re
from typing import Any

import gradio as gr
import pandas as pd

from biastest import public
from biastest.errors import EmbeddingError
from biastest.measures import MEASURES
from biastest.measures.weat.score import check_target_words
from biastest.models import catalog
from biastest.models.embeddings import (
    SAFE_EMBEDDING_SUFFIXES,
    LookupReport,
    WordEmbeddings,
    check_coverage,
    check_upload_file,
    load_embeddings,
)
from biastest.spec import BiasSpec, TwoAFCSpec, parse_terms
from biastest.specs import get_spec, get_twoafc_spec, list_specs
from biastest.ui.common import (
    USER_MISTAKES,
    escape,
    inline_failures,
    measure_label,
    progress_callback,
    unlock_step,
    user_errors,
    warn_inline,
)
from biastest.ui.psychophysics.state import ACTION_CONFIRM, Section, file_path, new_session

KIND_TWOAFC = measure_label("twoafc")
KIND_WEAT = measure_label("weat")


def _test_kinds() -> tuple[str, ...]:
    """Step 1's "Which test?": per kind of specification, the label of the first embedding measure testing it.

    In :data:`biastest.measures.MEASURES`' order: 2AFC (targets and cue pairs), then WEAT / MAC (groups and
    attributes, which step 3's Bayesian estimate and posterior sampler reuse).
    """
    first: dict[str, str] = {}
    for m in MEASURES.values():
        if m.kind == "embeddings":
            first.setdefault(m.spec_type, m.label)
    return tuple(first.values())


TEST_KINDS = _test_kinds()
CUSTOM = "Custom (type your own words)"
SOURCE_UPLOAD = "upload"
SOURCE_PATH = "path"
DEFAULT_SOURCE = "glove-6b-50d"

MSG_SPEC_OK_TWOAFC = (
    "✅ Specification is valid: {n_targets} target words judged on {n_pairs} cue pairs ({cue1} vs {cue2})."
)
MSG_SPEC_OK_WEAT = (
    "✅ Specification is valid: target lists of {nx} and {ny} words, attribute lists of {na} and {nb} words."
)
MSG_SPEC_OK_GROUPS = (
    "✅ Specification is valid: {n} groups ({groups}), each with its own stereotype list ({attributes}). The boxes "
    "show the first two; the others ({rest}) are part of the test, and editing a box keeps only the two shown. WEAT "
    "compares two groups, so step 3 gives MAC per group, and the Bayesian estimate takes every group."
)
MSG_NO_UPLOAD = (
    "Upload an embedding file (word2vec, GloVe or fastText, text or binary; .npz or .safetensors), or choose the "
    "embedded GloVe 6B 50d."
)
MSG_NO_PATH = "Type the path of an embedding file on this server, or choose another embedding source."
MSG_PATHS_DISABLED = (
    "Reading files by their path on the server is switched off here. Upload the embedding file instead."
)
MSG_CUE_PAIRS_DROPPED = "Cue pairs left out because a word is not in the embedding: {pairs}."
MSG_NO_CUE_PAIR_LEFT = (
    "None of the cue pairs can be used: every pair has a word that is not in the embedding '{source}' "
    "({missing}). Use other cue words or another embedding source."
)

MSG_EMBEDDING_CANNOT = (
    "The embedding cannot test this specification: {why} A chat model or a text classifier reads the words as "
    "text: choose one under “Which model?”."
)

TWOAFC_HELP = (
    "Target words are judged one at a time; each cue pair is one forced choice. A PSE above 0.5 means the "
    "target sits closer to the first cue word (e.g. *woman*), below 0.5 closer to the second (e.g. *man*)."
)
WEAT_HELP = (
    "WEAT asks whether target list X is more similar to attribute list A (and Y to B) than the other way round. "
    "MAC is the mean cosine distance (1 − similarity) of each target word to each attribute list."
)

_PAIR_SPLIT = re.compile(r"[\n,;]")


# --------------------------------------------------------------------------- the embedding source
def paths_allowed() -> bool:
    """Server paths follow the process's one public-mode decision (:mod:`biastest.public`)."""
    return public.current().server_paths


def source_choices(*, allow_paths: bool) -> list[tuple[str, str]]:
    """(label, value) choices of the embedding source radio, labelled by where each comes from.

    The embeddings on this machine first (word-vector files in ``$BIASTEST_MODELS_DIR``, sentence encoders in it
    and in the Hugging Face cache), only where server paths are allowed; then the embedded defaults, which work
    offline (:func:`biastest.models.catalog.suggestions`); then an upload and, where allowed, a typed path. This
    app loads nothing from the Hub.
    """
    out = [(s.label, s.value) for s in catalog.suggestions("embeddings", public=not allow_paths)]
    out.append(("Upload an embedding file (word2vec, GloVe, fastText)", SOURCE_UPLOAD))
    if allow_paths:
        out.append(("A file on this server (type its path)", SOURCE_PATH))
    return out


def embedding_source_id(choice: str, upload: Any, path: str | None, *, allow_paths: bool) -> str:
    """The source string for :func:`~biastest.models.embeddings.load_embeddings`.

    Raises
    ------
    EmbeddingError
        No file uploaded, no path typed, or paths switched off.
    """
    choice = choice or DEFAULT_SOURCE
    if choice == SOURCE_UPLOAD:
        p = file_path(upload)
        if not p:
            raise EmbeddingError(MSG_NO_UPLOAD)
        check_upload_file(p)  # the widget's file types are only a hint to the browser: never open a pickle
        return f"file:{p}"
    if choice == SOURCE_PATH:
        if not allow_paths or not paths_allowed():
            raise EmbeddingError(MSG_PATHS_DISABLED)
        if not (path or "").strip():
            raise EmbeddingError(MSG_NO_PATH)
        return f"file:{path.strip()}"
    if choice.startswith(("file:", "sentence-transformers:")) and (not allow_paths or not paths_allowed()):
        raise EmbeddingError(MSG_PATHS_DISABLED)  # an embedding on this machine, listed by its path
    return choice


# --------------------------------------------------------------------------- the specification
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
    """Lists and their names for a WEAT library entry (empty for Custom); of a group spec, its first two groups."""
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
            return base if base.n_groups > 2 else base.check_testable()  # 3+ groups: MAC per group and Bayes
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
    if spec.n_groups > 2:
        return MSG_SPEC_OK_GROUPS.format(
            n=spec.n_groups, groups=escape(", ".join(f"{g}: {len(t)} words" for g, t in spec.social_groups)),
            attributes=escape(", ".join(f"{a}: {len(t)}" for a, t in spec.attributes)),
            rest=escape(", ".join(f"{g} → {a}" for (g, _), (a, _) in
                                  zip(spec.social_groups[2:], spec.attributes[2:], strict=False))))
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
    except USER_MISTAKES as exc:  # no toast: this runs as the user types (on leaving a box)
        return f"⚠️ {escape(exc.message)}"


# --------------------------------------------------------------------------- looking every word up
def lookup_reports(spec: TwoAFCSpec | BiasSpec, emb: WordEmbeddings) -> dict[str, LookupReport]:
    """Per-role lookup reports of every word of the spec in ``emb``."""
    if isinstance(spec, TwoAFCSpec):
        cues = tuple(dict.fromkeys(c for p in spec.cue_pairs for c in p))
        return {"target word": emb.lookup_report(spec.targets), "cue word": emb.lookup_report(cues)}
    return {name: emb.lookup_report(terms) for name, terms in (*spec.social_groups, *spec.attributes)}


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
    x, y = reports[spec.group1_name], reports[spec.group2_name]  # the run's own rule, before the run (issue 28)
    check_target_words(len(x.terms) - len(x.missing), len(y.terms) - len(y.missing), x=spec.group1_name,
                       y=spec.group2_name)
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
            line += f"; <span class='bt-warn'>missing: {escape(', '.join(miss))}</span> (left out of the embedding's "
            line += "test)"
        lines.append(line)
    for n in notes:
        lines.append(f"<span class='bt-warn'>{escape(n)}</span>")
    return "\n".join(lines)


# --------------------------------------------------------------------------- handlers
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
    cleared; ``embedding_refused`` the embedding's refusal of a 2AFC spec, or
    None), the inline message, the lookup reports and notes. Typed errors
    propagate (the handler shows them inline).
    """
    kind, twoafc, weat, (choice, upload, path) = _step1_inputs(values)
    spec = _spec_from_step1(kind, twoafc, weat)
    source = embedding_source_id(choice, upload, path, allow_paths=allow_paths)
    if progress is not None:
        progress(0, 1, "Loading the embedding")
    emb = load_embeddings(source)
    reports = lookup_reports(spec, emb)
    refused = None
    try:
        notes = check_lookup(spec, reports)
    except EmbeddingError as exc:
        if not isinstance(spec, TwoAFCSpec):
            raise  # WEAT/MAC: only the embedding tests it
        refused, notes = exc.message, [MSG_EMBEDDING_CANNOT.format(why=exc.message)]
    if progress is not None:
        progress(1, 1, "Embedding loaded")
    new = new_session()
    new.update(kind="twoafc" if isinstance(spec, TwoAFCSpec) else "weat", spec=spec, source=emb.name, lookup=reports,
               embedding_refused=refused)
    return new, spec_message(spec), reports, notes


def _make_confirm(allow_paths: bool):
    @user_errors
    @inline_failures(ACTION_CONFIRM, 9, 1)
    def confirm_spec(session, *values, progress=gr.Progress()):
        """Step 1 → step 2: inline ⚠️ message (and a toast) on a problem; unlock the data tab otherwise."""
        try:
            new, message, reports, notes = confirm_spec_core(
                session, *values, allow_paths=allow_paths, progress=progress_callback(progress)
            )
        except USER_MISTAKES as exc:
            return (gr.skip(), warn_inline(exc), *(gr.skip(),) * 7)
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


# --------------------------------------------------------------------------- controls and wiring
def build(*, allow_paths: bool) -> Section:
    """Step 1's controls (call inside its tab); “New bias test” resets each to its value here."""
    sec = Section()
    sec.add("kind", gr.Radio(
        list(TEST_KINDS),
        value=KIND_TWOAFC,
        label="Which test?",
        info="2AFC: target words judged between cue pairs. WEAT/MAC: two target and two attribute lists.",
        elem_id="test-kind",
    ), KIND_TWOAFC)
    with sec.add("twoafc_box", gr.Column(visible=True), gr.update(visible=True)):
        gr.Markdown(TWOAFC_HELP, elem_classes=["bt-hint"])
        sec.add("lib2", gr.Dropdown(
            [CUSTOM, *list_specs("twoafc")],
            value=CUSTOM,
            label="Predefined 2AFC specification",
            info="Pick one from the library, or type your own words below.",
            elem_id="twoafc-library",
        ), CUSTOM)
        sec.add("targets", gr.Textbox(
            label="Target words (comma-separated)",
            placeholder="e.g. nurse, engineer, teacher, carpenter",
            lines=2,
            elem_id="twoafc-targets",
        ), "")
        sec.add("cues", gr.Textbox(
            label="Cue pairs (first/second, comma-separated)",
            placeholder="e.g. woman/man, she/he, girl/boy",
            elem_id="twoafc-cues",
        ), "")
        with gr.Row():
            sec.add("cue1_name", gr.Textbox(
                label="Name of the first cue side", placeholder="e.g. female", elem_id="twoafc-cue1-name"
            ), "")
            sec.add("cue2_name", gr.Textbox(
                label="Name of the second cue side", placeholder="e.g. male", elem_id="twoafc-cue2-name"
            ), "")
    with sec.add("weat_box", gr.Column(visible=False), gr.update(visible=False)):
        gr.Markdown(WEAT_HELP, elem_classes=["bt-hint"])
        sec.add("libw", gr.Dropdown(
            [CUSTOM, *list_specs("weat"), *list_specs("groups")],
            value=CUSTOM,
            label="Predefined WEAT specification",
            info="WEAT 1–10 of Caliskan et al. (2017), Manzini et al. (2019)'s religion, race and gender lists (three "
            "groups: MAC per group and the Bayesian estimate), or type your own lists below.",
            elem_id="weat-library",
        ), CUSTOM)
        with gr.Row():
            sec.add("wx", gr.Textbox(label="Target list X", placeholder="e.g. math, algebra, geometry",
                                     elem_id="weat-x"), "")
            sec.add("wy", gr.Textbox(label="Target list Y", placeholder="e.g. poetry, art, dance", elem_id="weat-y"),
                    "")
        with gr.Row():
            sec.add("wa", gr.Textbox(label="Attribute list A", placeholder="e.g. male, man, boy", elem_id="weat-a"), "")
            sec.add("wb", gr.Textbox(label="Attribute list B", placeholder="e.g. female, woman, girl",
                                     elem_id="weat-b"), "")
        with gr.Accordion("Names of the four lists (optional)", open=False):
            with gr.Row():
                sec.add("wxn", gr.Textbox(label="Name of X", placeholder="Targets X", elem_id="weat-x-name"), "")
                sec.add("wyn", gr.Textbox(label="Name of Y", placeholder="Targets Y", elem_id="weat-y-name"), "")
                sec.add("wan", gr.Textbox(label="Name of A", placeholder="Attributes A", elem_id="weat-a-name"), "")
                sec.add("wbn", gr.Textbox(label="Name of B", placeholder="Attributes B", elem_id="weat-b-name"), "")
    sec.add("source", gr.Radio(
        source_choices(allow_paths=allow_paths),
        value=DEFAULT_SOURCE,
        label="Embedding",
        info="Embeddings on this machine are listed first; the embedded defaults work offline; this app loads "
        "nothing from the Hub. Uploads: word2vec/GloVe/fastText (text or binary), .npz or .safetensors.",
        elem_id="embedding-source",
    ), DEFAULT_SOURCE)
    sec.add("upload", gr.File(
        label="Embedding file",
        file_types=list(SAFE_EMBEDDING_SUFFIXES),
        visible=False,
        elem_id="embedding-upload",
    ), gr.update(value=None, visible=False))
    sec.add("path", gr.Textbox(
        label="Path of the embedding file on this server", visible=False, elem_id="embedding-path"
    ), gr.update(value="", visible=False))
    sec.add("message", gr.Markdown("", elem_id="spec-message"), "")
    with gr.Row():
        sec.next = gr.Button("Next: test data →", variant="primary", elem_id="spec-next")
        sec.new = gr.Button("New bias test", elem_id="new-test-1")
    return sec


def wire(sec: Section, session: Any, *, allow_paths: bool, tabs: Any, tab2: Any, tab3: Any, data: Section) -> None:
    """Step 1's handlers: show the chosen test's inputs, fill from the library, validate, confirm → step 2."""
    twoafc_inputs = [sec.lib2, sec.targets, sec.cues, sec.cue1_name, sec.cue2_name]
    weat_inputs = [sec.libw, sec.wx, sec.wy, sec.wa, sec.wb, sec.wxn, sec.wyn, sec.wan, sec.wbn]
    step1 = [sec.kind, *twoafc_inputs, *weat_inputs, sec.source, sec.upload, sec.path]

    sec.kind.change(on_kind, sec.kind, [sec.twoafc_box, sec.weat_box], queue=False)
    sec.source.change(on_source, sec.source, [sec.upload, sec.path], queue=False)
    # .input, not .change: only the user's pick fills the lists. "New bias test" sets the dropdowns back to Custom;
    # a .change would then run fill + validate after the reset, show its timer in the message and, on a slow server,
    # empty the lists the user had started typing.
    sec.lib2.input(user_errors(fill_twoafc), sec.lib2, twoafc_inputs[1:], queue=False).then(
        user_errors(validate_step1), [sec.kind, *twoafc_inputs, *weat_inputs], sec.message, queue=False
    )
    sec.libw.input(user_errors(fill_weat), sec.libw, weat_inputs[1:], queue=False).then(
        user_errors(validate_step1), [sec.kind, *twoafc_inputs, *weat_inputs], sec.message, queue=False
    )
    # one queued listener, one event at a time, last wins: answers cannot overtake each other
    gr.on(
        [box.blur for box in (*twoafc_inputs[1:], *weat_inputs[1:])],
        user_errors(validate_step1),
        [sec.kind, *twoafc_inputs, *weat_inputs],
        sec.message,
        concurrency_limit=1,
        concurrency_id="psy-spec-validate",
        show_progress="hidden",
        trigger_mode="always_last",
    )
    sec.next.click(
        _make_confirm(allow_paths),
        [session, *step1],
        [session, sec.message, tabs, tab2, tab3, data.summary, data.lookup, data.twoafc_box, data.weat_box],
    )
