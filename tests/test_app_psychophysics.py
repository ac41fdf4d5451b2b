"""The word-embedding app's handlers, called directly (the browser walk is in ``test_app_psychophysics_browser.py``).

Every number the app shows is checked against a deliberately naive
re-implementation on the raw GloVe vectors written here (cosines by hand, the
closed-form PSE, scipy's Pearson r), not against the library's own code.
"""

from __future__ import annotations

import csv
import json
import math
import re
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
from scipy import stats

from biastest.errors import DataError, EmbeddingError, SpecError
from biastest.measures.twoafc import load_occupations_bls
from biastest.measures.twoafc import report as rep
from biastest.measures.weat import report as weat_rep
from biastest.models.embeddings import MSG_MOSTLY_MISSING, load_embeddings
from biastest.report.export import round_cell
from biastest.spec import MSG_CUE_PAIR_SHAPE, MSG_EMPTY_LIST
from biastest.specs import get_twoafc_spec, list_specs
from biastest.ui import psychophysics as app
from biastest.ui.common import escape

SEED = 0
PAPER = "Occupations vs gender (Liang & Acuna 2020)"
LOVE_HATE = "Occupations vs love/hate (Liang & Acuna 2020)"
WEAT_NAMES = "WEAT 1: Flowers vs insects, pleasant vs unpleasant"


def step1(kind=app.KIND_TWOAFC, twoafc=("", "", "", "", ""), weat=("",) * 9, source=("glove-6b-50d", None, "")):
    """The 18 step-1 values in the order the app passes them."""
    lib2 = twoafc[0] or app.CUSTOM
    libw = weat[0] or app.CUSTOM
    return [kind, lib2, *twoafc[1:], libw, *weat[1:], *source]


def library_step1(name: str = PAPER) -> list:
    return step1(twoafc=(name, *app.fill_twoafc(name)))


def custom_step1(targets: str, cues: str, c1: str = "female", c2: str = "male") -> list:
    return step1(twoafc=(app.CUSTOM, targets, cues, c1, c2))


@pytest.fixture(scope="module")
def glove():
    return load_embeddings("glove-6b-50d")


def naive_cos(glove, a: str, b: str) -> float:
    va, vb = (glove.vectors([w])[0][0].astype(np.float64) for w in (a, b))
    return float(va @ vb / math.sqrt((va @ va) * (vb @ vb)))


def naive_target_pse(glove, target: str, pairs) -> float:
    """Mean over cue pairs of 1/2 + (cos(c1,w) − cos(c2,w)) / (2(1 − cos(c1,c2))) (Liang & Acuna eq. 8)."""
    out = []
    for c1, c2 in pairs:
        out.append(
            0.5 + (naive_cos(glove, c1, target) - naive_cos(glove, c2, target)) / (2 * (1 - naive_cos(glove, c1, c2)))
        )
    return float(np.mean(out))


@pytest.fixture(scope="module")
def paper_run():
    session, message, _reports, notes = app.confirm_spec_core(app.new_session(), *library_step1(), allow_paths=False)
    assert message.startswith("✅") and notes == []
    run = app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, SEED)
    return run, app.results_view(run)


# --------------------------------------------------------------------------- step 1
def test_library_specs_fill_the_boxes_and_are_kept_when_unedited():
    assert PAPER in list_specs("twoafc") and WEAT_NAMES in list_specs("weat")
    targets, cues, c1, c2 = app.fill_twoafc(PAPER)
    spec = app.twoafc_spec_from_inputs(PAPER, targets, cues, c1, c2)
    assert spec == get_twoafc_spec(PAPER)
    edited = app.twoafc_spec_from_inputs(PAPER, targets + ", astronaut", cues, c1, c2)
    assert edited.name == f"{PAPER} (edited)" and edited.targets[-1] == "astronaut"
    assert edited.cue_pairs == spec.cue_pairs
    assert app.fill_twoafc(app.CUSTOM) == ("", "", "", "")
    x, y, a, b, *names = app.fill_weat(WEAT_NAMES)
    weat = app.weat_spec_from_inputs(WEAT_NAMES, x, y, a, b, *names)
    assert weat.name == WEAT_NAMES and weat.group1_name == "Flowers"


def test_custom_spec_with_a_bad_cue_pair_gets_the_exact_message():
    values = step1(twoafc=(app.CUSTOM, "nurse, engineer", "woman/woman", "", ""))
    with pytest.raises(SpecError) as err:
        app.twoafc_spec_from_inputs(*values[1:6])
    assert err.value.message == MSG_CUE_PAIR_SHAPE.format(value=("woman", "woman"))
    assert app.validate_step1(*values[:15]) == "⚠️ " + escape(err.value.message)
    empty = app.validate_step1(*step1(twoafc=(app.CUSTOM, "nurse", "", "", ""))[:15])
    assert empty == "⚠️ " + MSG_EMPTY_LIST.format(list_name="Cue pairs")
    ok = app.validate_step1(*step1(twoafc=(app.CUSTOM, "nurse, engineer", "she/he, girl/boy", "f", "m"))[:15])
    assert ok == app.MSG_SPEC_OK_TWOAFC.format(n_targets=2, n_pairs=2, cue1="f", cue2="m")
    assert app.validate_step1(*step1()[:15]) == ""  # nothing typed yet: no message


def test_embedding_source_choices_and_refusals():
    assert app.embedding_source_id("glove-6b-50d", None, "", allow_paths=False) == "glove-6b-50d"
    with pytest.raises(EmbeddingError) as err:
        app.embedding_source_id(app.SOURCE_UPLOAD, None, "", allow_paths=True)
    assert err.value.message == app.MSG_NO_UPLOAD
    with pytest.raises(EmbeddingError) as err:
        app.embedding_source_id(app.SOURCE_PATH, None, "/etc/passwd", allow_paths=False)
    assert err.value.message == app.MSG_PATHS_DISABLED
    assert app.embedding_source_id(app.SOURCE_PATH, None, " /x/v.txt ", allow_paths=True) == "file:/x/v.txt"
    values = [c[1] for c in app.source_choices(allow_paths=False)]
    assert values[0] == "glove-6b-50d" and app.SOURCE_PATH not in values


# --------------------------------------------------------------------------- New bias test
def _reset_value(update):
    return update.get("value") if isinstance(update, dict) else update


def test_new_bias_test_resets_every_control_to_its_initial_value():
    """It left step 2's bootstrap samples, permutations, psychometric function, lapse and training sliders as set."""
    demo = app.build_demo(allow_server_paths=False)
    by_elem = {b.elem_id: k for k, b in demo.blocks.items() if getattr(b, "elem_id", None)}
    buttons = {by_elem[f"new-test-{i}"] for i in (1, 2, 3)}
    resets = [f for f in demo.fns.values() if {t[0] for t in f.targets} & buttons]
    assert len(resets) == 3 and len({tuple(c._id for c in f.outputs) for f in resets}) == 1  # the same for each
    reset = resets[0]
    values = dict(zip((c._id for c in reset.outputs), reset.fn(), strict=True))

    editable = (gr.Textbox, gr.Number, gr.Slider, gr.Dropdown, gr.Radio, gr.Checkbox, gr.CheckboxGroup, gr.File)
    changed_by_events = {c._id for f in demo.fns.values() if f not in resets for c in f.outputs}
    must_reset = [b for k, b in demo.blocks.items()
                  if (isinstance(b, editable) and b.interactive is not False) or k in changed_by_events]
    missing = [getattr(b, "elem_id", None) or type(b).__name__ for b in must_reset if b._id not in values]
    assert missing == []
    wrong = []
    for b in must_reset:
        got = values[b._id]
        if isinstance(b, (gr.State, gr.Tabs, gr.Tab)):
            continue
        if isinstance(got, dict) and "visible" in got and got["visible"] != b.visible:
            wrong.append((b.elem_id or type(b).__name__, "visible", got["visible"]))
        if isinstance(b, (gr.Column, gr.Row)) or (isinstance(got, dict) and "value" not in got):
            continue
        initial, value = b.value, _reset_value(got)
        if isinstance(b, gr.Textbox):
            initial = initial or ""
        if isinstance(b, gr.Dataframe) and value is None:
            value = initial if not initial["data"] else value  # None clears the table, as it started
        if value != initial:
            wrong.append((b.elem_id, initial, value))
    assert wrong == []
    assert values[demo.blocks[by_elem["n-bootstrap"]]._id] == 1000  # one of those that were left as set
    assert values[next(c._id for c in reset.outputs if isinstance(c, gr.State))] == app.new_session()

def _writes_a_value(update) -> bool:
    if update is None or update == gr.skip():
        return False
    if isinstance(update, gr.components.Component):
        return "value" in update.constructor_args
    return not isinstance(update, dict) or "value" in update


def test_new_bias_test_sets_off_no_listener_that_writes_what_the_user_types():
    """The library dropdowns' fill ran on .change: "New bias test" set them back to Custom, which ran fill + validate
    after the reset: its timer showed in the spec message (the browser walk read "0.6s" there) and, on a slow
    server, the lists the user had started typing were emptied. A listener that the reset's values set off may
    show or hide boxes, never write a value into a box the user types in."""
    demo = app.build_demo(allow_server_paths=False)
    by_elem = {b.elem_id: k for k, b in demo.blocks.items() if getattr(b, "elem_id", None)}
    buttons = {by_elem[f"new-test-{i}"] for i in (1, 2, 3)}
    reset = next(f for f in demo.fns.values() if {t[0] for t in f.targets} & buttons)
    values = dict(zip((c._id for c in reset.outputs), reset.fn(), strict=True))
    assert {by_elem["twoafc-library"], by_elem["weat-library"]} <= set(values)

    typed = (gr.Textbox, gr.Number, gr.Slider, gr.Dropdown, gr.Radio, gr.Checkbox, gr.CheckboxGroup, gr.File)
    set_off = [f for f in demo.fns.values() if any(t[0] in values and t[1] == "change" for t in f.targets)]
    assert set_off  # the kind and source radios show their boxes this way
    writes = []
    for f in set_off:
        args = [_reset_value(values[b._id]) if b._id in values else b.value for b in f.inputs]
        out = f.fn(*args)
        out = out if len(f.outputs) != 1 else (out,)
        writes += [(f.fn.__name__, c.elem_id) for c, u in zip(f.outputs, out, strict=True)
                   if isinstance(c, typed) and _writes_a_value(u)]
    assert writes == []
    # the lists are filled by the user's pick of a library entry
    fills = {f.fn.__name__: f.targets for f in demo.fns.values()
             if f.fn and f.fn.__name__ in {"fill_twoafc", "fill_weat"}}
    assert fills == {"fill_twoafc": [(by_elem["twoafc-library"], "input")],
                     "fill_weat": [(by_elem["weat-library"], "input")]}



# --------------------------------------------------------------------------- step 2
def test_found_and_missing_words_are_reported_per_word():
    values = custom_step1("nurse, engineer, qzxqvbnonword", "woman/man, qzxfemme/he")
    session, _, reports, notes = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    frame = app.lookup_frame(reports)
    status = dict(zip(frame["word"], frame["found"], strict=True))
    assert status == {
        "qzxqvbnonword": "MISSING",
        "qzxfemme": "MISSING",
        "nurse": "found",
        "engineer": "found",
        "woman": "found",
        "man": "found",
        "he": "found",
    }
    assert list(frame["found"])[:2] == ["MISSING", "MISSING"]  # missing words listed first
    assert notes == [app.MSG_CUE_PAIRS_DROPPED.format(pairs="qzxfemme/he")]
    summary = app.lookup_markdown(session["source"], reports, notes)
    assert "2 of 3 found" in summary and "qzxqvbnonword" in summary
    assert session["kind"] == "twoafc" and session["result"] is None


def test_a_2afc_spec_with_mostly_missing_words_goes_on_and_only_the_embeddings_run_refuses_it():
    """Step 1 lets the spec through (a chat model or a classifier reads the words as text) with the embedding's
    refusal as a warning; the embedding's run refuses it with that message; a WEAT/MAC spec is still refused."""
    values = custom_step1("qzxaa, qzxbb, nurse", "woman/man")
    session, message, reports, notes = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    why = MSG_MOSTLY_MISSING.format(
        n_missing=2, n_terms=3, role="target words", source="glove-6b-50d", limit=0.5, missing="qzxaa, qzxbb"
    )
    assert message.startswith("✅") and session["embedding_refused"] == why
    assert notes == [app.MSG_EMBEDDING_CANNOT.format(why=why)]
    assert escape(app.MSG_EMBEDDING_CANNOT.format(why=why)) in app.lookup_markdown(session["source"], reports, notes)
    with pytest.raises(EmbeddingError) as err:
        app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, SEED)
    assert err.value.message == app.MSG_EMBEDDING_REFUSED.format(why=why)
    run = app.make_run_handler((), 16)
    with pytest.warns(UserWarning, match="cannot test"):
        out = run(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, SEED)
    assert out[1] == "⚠️ " + escape(app.MSG_EMBEDDING_REFUSED.format(why=why))
    # every cue pair missing: the same, with the cue message
    session, _, _, notes = app.confirm_spec_core(app.new_session(), *custom_step1("nurse", "qzxf/qzxm"),
                                                 allow_paths=False)
    why = app.MSG_NO_CUE_PAIR_LEFT.format(source="glove-6b-50d", missing="qzxf, qzxm")
    assert session["embedding_refused"] == why and notes == [app.MSG_EMBEDDING_CANNOT.format(why=why)]
    # a spec the embedding can test has no refusal
    ok, _, _, _ = app.confirm_spec_core(app.new_session(), *custom_step1("nurse, engineer", "woman/man"),
                                        allow_paths=False)
    assert ok["embedding_refused"] is None
    weat = step1(kind=app.KIND_WEAT, weat=(app.CUSTOM, "qzxaa, qzxbb, math", "poetry, art, dance",
                                           "male, man, boy", "female, woman, girl", "", "", "", ""))
    with pytest.raises(EmbeddingError) as err:
        app.confirm_spec_core(app.new_session(), *weat, allow_paths=False)
    assert err.value.message.startswith("2 of 3 words of 'Targets X' are not in the embedding")


def test_sigma_must_be_zero_or_positive(paper_run):
    session = paper_run[0]
    with pytest.raises(DataError) as err:
        app.run_core(session, app.REPLICATES_NONE, -1, None, "norm", False, 200, 10_000, SEED)
    assert err.value.message == app.MSG_BAD_SIGMA.format(value=-1)
    single = app.run_core(session, app.REPLICATES_NONE, 0, None, "norm", False, 200, 10_000, SEED)
    assert single["result"].mode == "single" and single["result"].noise_sigma is None
    with pytest.raises(DataError) as err:
        app.run_core(session, app.REPLICATES_UPLOAD, 0.05, [], "norm", False, 200, 10_000, SEED)
    assert err.value.message == app.MSG_NO_REPLICATE_FILES
    with pytest.raises(DataError) as err:
        app.run_core(session, app.REPLICATES_TRAIN, 0.05, None, "norm", False, 200, 10_000, SEED)
    assert err.value.message == app.MSG_TRAIN_FIRST
    with pytest.raises(DataError) as err:
        app.run_core(app.new_session(), app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, SEED)
    assert err.value.message == app.MSG_SPEC_FIRST


def _seed_message(value) -> str:
    from biastest.options import BOUNDS, MSG_BAD_WHOLE

    b = BOUNDS["seed"]
    return MSG_BAD_WHOLE.format(label=b.label, low=int(b.low), high=int(b.high), value=value)


def test_run_and_training_mistakes_are_inline_warnings_and_change_nothing_else(paper_run, tmp_path):
    """A seed of -1 raised a red error ("Error" pill on every output); now: ⚠️ inline, a warning, the rest kept."""
    session = paper_run[0]
    skip = gr.skip()
    stale = ("cleared", gr.update(value=None, visible=False))
    run = app.make_run_handler(stale, 19)
    with pytest.warns(UserWarning, match="seed"):  # gr.Warning outside a request: Python's warning
        out = run(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, -1)
    assert out[1] == "⚠️ " + escape(_seed_message(-1))
    assert len(out) == 4 + len(stale) + 19 and [o for i, o in enumerate(out) if i != 1] == [skip] * (len(out) - 1)
    with pytest.warns(UserWarning):
        out = run(session, app.REPLICATES_UPLOAD, 0.05, [], "norm", False, 200, 10_000, SEED)
    assert out[1] == "⚠️ " + escape(app.MSG_NO_REPLICATE_FILES)
    # a run that goes through clears the stale sections and fills the results
    out = run(session, app.REPLICATES_NONE, 0, None, "norm", False, 0, 10_000, SEED)
    assert out[0]["result"].mode == "single" and out[1] == "" and out[4:6] == stale and len(out) == 4 + 2 + 21
    # training replicates: the message goes under "Train replicates"
    with pytest.warns(UserWarning):
        out = app.train_handler(session, None, 2, 10, 1, 1, SEED)
    assert out == (skip, "⚠️ " + escape(app.MSG_NO_CORPUS))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the nurse said she\n" * 20, encoding="utf-8")
    with pytest.warns(UserWarning):
        out = app.train_handler(session, str(corpus), 2, 10, 1, 1, -7)
    assert out == (skip, "⚠️ " + escape(_seed_message(-7)))
    with pytest.warns(UserWarning):  # step 1 not done
        out = run(app.new_session(), app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 10_000, SEED)
    assert out[1] == "⚠️ " + escape(app.MSG_SPEC_FIRST)


def test_an_unexpected_failure_is_said_beside_the_button_never_its_text(paper_run, monkeypatch):
    """It was a red error toast that vanished (issue 28 item 6): now the reason stays in the Run button's box."""
    from biastest.ui.common import failure_message
    from biastest.ui.psychophysics import data, state

    def broken(*_args, **_kw):
        raise RuntimeError("/secret/path")

    monkeypatch.setattr(data.twoafc_measure, "run", broken)
    with pytest.warns(UserWarning):
        out = app.make_run_handler((), 16)(paper_run[0], app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 10_000,
                                           SEED)
    assert out[1] == failure_message(state.ACTION_RUN, RuntimeError()) and "/secret/path" not in out[1]
    assert all(isinstance(v, type(gr.skip())) for i, v in enumerate(out) if i != 1)


GARBAGE = "this is not a word-vector file\n"
GARBAGE_PROBLEM = "a value is not a number"


def test_a_broken_upload_is_named_by_its_file_name_never_by_the_upload_folder(paper_run, tmp_path):
    """The message showed the server's temp path (/tmp/gradio/<hash>/garbage.txt)."""
    from biastest.models.embeddings import MSG_FILE_UNREADABLE
    from biastest.ui.psychophysics import spec

    folder = tmp_path / "gradio" / "5d41402abc4b2a76b9719d911017c592"  # where Gradio keeps an upload
    folder.mkdir(parents=True)
    garbage = folder / "garbage.txt"
    garbage.write_text(GARBAGE, encoding="utf-8")
    values = [*custom_step1("nurse, engineer", "woman/man")[:-3], app.SOURCE_UPLOAD, str(garbage), ""]
    with pytest.warns(UserWarning):
        out = spec._make_confirm(False)(app.new_session(), *values)
    assert "garbage.txt" in out[1] and "gradio" not in out[1] and str(tmp_path) not in out[1], out[1]
    expected = "⚠️ " + escape(MSG_FILE_UNREADABLE.format(name="garbage.txt", problem=GARBAGE_PROBLEM))
    assert out[1] == expected
    # the replicate files of step 2 too
    other = folder / "rep2.txt"
    other.write_text("2 3\nnurse 1 2 3\nwoman 1 2 3\n", encoding="utf-8")
    with pytest.warns(UserWarning):
        out = app.make_run_handler((), 16)(paper_run[0], app.REPLICATES_UPLOAD, 0.05, [str(other), str(garbage)],
                                           "norm", False, 0, 10_000, SEED)
    assert out[1] == expected


# --------------------------------------------------------------------------- results
def test_paper_experiment_pse_table_and_csv_equal_a_naive_computation(paper_run, glove):
    session, view = paper_run
    spec = get_twoafc_spec(PAPER)
    result = session["result"]
    assert result.mode == "thurstonian" and result.noise_sigma == 0.05 and result.seed == SEED
    naive = {t: naive_target_pse(glove, t, spec.cue_pairs) for t in spec.targets}
    table = view[9]
    assert set(table["target"]) == set(spec.targets)
    for target, pse in zip(table["target"], table["PSE"], strict=True):
        assert pse == pytest.approx(naive[target], abs=1e-4)
    csv_path = view[-2]["value"]
    every = list(csv.DictReader(open(csv_path, encoding="utf-8-sig")))
    rows = [r for r in every if r["row_type"] == "target"]
    assert [r["target"] for r in rows] == list(spec.targets)
    full = {t.target: t.pse for t in result.targets}  # every digit (the JSON's); the CSV writes 4 significant
    for r in rows:
        assert full[r["target"]] == pytest.approx(naive[r["target"]], abs=1e-5)
        assert float(r["pse"]) == round_cell("pse", full[r["target"]])
        assert r["embedding"] == "glove-6b-50d" and r["mode"] == "thurstonian" and r["seed"] == str(SEED)
        # issue 17: these were empty for all 60 rows; now filled, or the reason given in the row
        assert r["fit_status"] and (all(r[k] for k in ("fit_pse", "fit_pse_ci_low", "fit_pse_ci_high"))
                                    or r["fit_note"]), r
        assert (r["pse_ci_low"] and r["pse_ci_high"]) or r["pse_ci_note"], r
    assert sum(1 for r in rows if r["fit_pse_ci_low"]) == 60
    payload = json.loads(open(view[-1]["value"], encoding="utf-8").read())
    assert payload["result"]["provenance"]["seed"] == SEED and payload["spec"]["name"] == PAPER


def test_saturated_pse_is_flagged_and_drawn_at_its_raw_value_never_half(paper_run, glove):
    session, view = paper_run
    result = session["result"]
    saturated = [t for t in result.targets if t.saturated]
    assert saturated, "GloVe 6B 50d has at least one saturated occupation (dietitian)"
    for t in saturated:
        naive = naive_target_pse(glove, t.target, result.cue_pairs)
        assert (naive > 1 or naive < 0) and t.pse == pytest.approx(naive, abs=1e-6)
    table = view[9].set_index("target")
    for t in saturated:
        assert table.loc[t.target, "saturated"].startswith("saturated")
    fig = view[3]
    sat_trace = next(tr for tr in fig.data if tr.name.startswith("saturated"))
    assert list(sat_trace.y) == pytest.approx([t.pse for t in sorted(saturated, key=lambda t: t.pse)])
    assert all(abs(y - 0.5) > 0.5 for y in sat_trace.y)
    assert "saturated" in view[0]  # the reading names them


def test_pse_hover_lists_every_cue_pair_value(paper_run):
    session, view = paper_run
    result = session["result"]
    fig = view[3]
    trace = fig.data[0]
    row = trace.customdata[0]
    target = row[0]
    for p in result.pairs_of(target):
        assert f"{p.cue_pair}: {p.pse:.3f}" in row[4]
    assert "customdata[4]" in trace.hovertemplate


def _label_boxes(fig, width_px=rep.SPECTRUM_MIN_WIDTH_PX):
    """Estimated text boxes (x0, x1, row) of the spectrum's labels in axis units, as plotly anchors them."""
    per_px = (fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]) / width_px
    boxes = []
    for tr in fig.data:
        where = tr.textposition if isinstance(tr.textposition, (list, tuple)) else [tr.textposition] * len(tr.x)
        for x, y, text, pos in zip(tr.x, tr.y, tr.text, where, strict=True):
            w = rep._label_width_px(text) * per_px
            x0 = {"top center": x - w / 2, "top right": x, "top left": x - w}[pos]
            boxes.append((x0, x0 + w, y, text))
    return boxes


def test_spectrum_labels_of_close_targets_never_share_a_row(paper_run):
    """'secretary' (PSE 0.361) and 'practitioner' (0.396) were drawn on one row, their labels overlapping."""
    session, view = paper_run
    fig = view[6]
    boxes = _label_boxes(fig)
    assert len(boxes) == len(session["result"].targets)
    clashes = [(a[3], b[3]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if a[2] == b[2] and a[0] < b[1] and b[0] < a[1]]
    assert clashes == []
    rows = {text: y for _x0, _x1, y, text in boxes}
    assert rows["secretary"] != rows["practitioner"]
    n_rows = len(set(rows.values()))
    assert fig.layout.height >= 100 + 60 + n_rows * rep.SPECTRUM_ROW_PX  # every row gets its height
    assert "height means nothing" in fig.layout.title.text


def test_first_curve_is_the_unsaturated_target_closest_to_no_preference(paper_run, glove):
    session, view = paper_run
    result = session["result"]
    naive = {t.target: naive_target_pse(glove, t.target, result.cue_pairs) for t in result.targets}
    unsaturated = {t: v for t, v in naive.items() if 0 <= v <= 1}
    expected = min(unsaturated, key=lambda t: abs(unsaturated[t] - 0.5))
    update = view[4]
    assert update["value"] == expected and expected != "dietitian"  # dietitian (saturated) was shown first
    assert not next(t for t in result.targets if t.target == expected).saturated
    assert update["info"] == rep.MSG_CURVE_FIRST.format(target=expected, pse=f"{naive[expected]:.3f}")
    assert f"'{expected}'" in view[5].layout.title.text
    # every target saturated: the one nearest the range, said so
    fake = SimpleNamespace(targets=[SimpleNamespace(target="a&b", pse=1.4, saturated="above"),
                                    SimpleNamespace(target="c", pse=-0.2, saturated="below")])
    assert rep.first_curve_target(fake) == ("c", rep.MSG_CURVE_FIRST_ALL_SATURATED.format(target="c", pse="-0.200"))
    fake.targets[1].pse = -0.6
    assert rep.first_curve_target(fake)[1] == rep.MSG_CURVE_FIRST_ALL_SATURATED.format(target="a&amp;b",
                                                                                       pse="1.400")
    assert rep.first_curve_target(SimpleNamespace(targets=[])) == (None, "")


def test_labour_statistics_match_scipy_on_naive_pses(paper_run, glove):
    session, view = paper_run
    corr = session["labour"]
    spec = get_twoafc_spec(PAPER)
    table = {r["occupation"]: r["pct_female"] for r in load_occupations_bls()}
    occ = [t for t in spec.targets if t in table]
    x = [naive_target_pse(glove, t, spec.cue_pairs) for t in occ]
    y = [table[t] for t in occ]
    r, p = stats.pearsonr(x, y)
    rho, p_rho = stats.spearmanr(x, y)
    assert corr.n == len(occ) and corr.pearson_r == pytest.approx(r, abs=1e-6)
    assert corr.pearson_p == pytest.approx(p, rel=1e-4) and corr.spearman_rho == pytest.approx(rho, abs=1e-6)
    assert view[8]["visible"] is True and f"r = {r:.3f}" in view[7]
    assert p_rho < 0.05


def test_no_labour_scatter_for_love_hate_and_curves_per_target():
    session, *_ = app.confirm_spec_core(app.new_session(), *library_step1(LOVE_HATE), allow_paths=False)
    run = app.run_core(session, app.REPLICATES_NONE, 0, None, "norm", False, 0, 10_000, SEED)
    view = app.results_view(run)
    assert run["labour"] is None and view[8]["visible"] is False and view[7] == ""
    target = view[4]["value"]
    fig = app.curve_handler(run, "nurse")
    assert "nurse" in fig.layout.title.text and target in view[4]["choices"]


def write_w2v(path, words, vectors):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{len(words)} {vectors.shape[1]}\n")
        for w, v in zip(words, vectors, strict=True):
            fh.write(w + " " + " ".join(f"{x:.6f}" for x in v) + "\n")


def test_uploaded_replicates_give_the_jnd_as_sd_across_files(tmp_path, glove):
    targets, pairs = ["nurse", "engineer", "teacher"], [("woman", "man"), ("she", "he")]
    words = targets + [c for p in pairs for c in p]
    base = glove.vectors(words)[0].astype(np.float64)
    rng = np.random.default_rng(7)
    files = []
    for r in range(3):
        path = tmp_path / f"rep{r}.txt"
        write_w2v(path, words, base + rng.normal(0, 0.3, base.shape))
        files.append(str(path))
    session, *_ = app.confirm_spec_core(
        app.new_session(), *custom_step1(", ".join(targets), "woman/man, she/he"), allow_paths=False
    )
    run = app.run_core(session, app.REPLICATES_UPLOAD, 0.05, files, "norm", False, 50, 10_000, SEED)
    result = run["result"]
    assert result.mode == "replicates" and result.n_replicates == 3

    def pse_in(vecs, t):
        def cos(a, b):
            va, vb = vecs[words.index(a)], vecs[words.index(b)]
            return va @ vb / math.sqrt((va @ va) * (vb @ vb))

        return np.mean([0.5 + (cos(c1, t) - cos(c2, t)) / (2 * (1 - cos(c1, c2))) for c1, c2 in pairs])

    reps = [np.loadtxt(f, skiprows=1, usecols=range(1, 51)) for f in files]
    for t in result.targets:
        per_file = [pse_in(v, t.target) for v in reps]
        assert t.pse == pytest.approx(np.mean(per_file), abs=1e-5)
        assert t.jnd_sd == pytest.approx(np.std(per_file, ddof=1), abs=1e-5)
    view = app.results_view(run)
    assert "3 replicate embedding models" in view[0]


SENTENCES = ["the nurse said she", "the engineer said he", "she met the nurse", "he met the engineer",
             "a nurse and she", "an engineer and he"]


def test_training_replicates_on_a_corpus_then_running(tmp_path):
    rng = np.random.default_rng(3)
    lines = []
    for _ in range(300):
        lines.append(str(rng.choice(SENTENCES)))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    session, *_ = app.confirm_spec_core(
        app.new_session(), *custom_step1("nurse, engineer", "she/he"), allow_paths=False
    )
    with pytest.raises(DataError) as err:
        app.train_replicates_core(session, None, 2, 10, 1, 1, SEED)
    assert err.value.message == app.MSG_NO_CORPUS
    ticks = []
    trained, note = app.train_replicates_core(
        session, str(corpus), 2, 10, 2, 1, SEED, progress=lambda d, t, m: ticks.append((d, t))
    )
    assert ticks[0] == (0, 2) and ticks[-1] == (2, 2)
    assert len(trained["replicates"]) == 2 and note.startswith("✅ Trained 2 replicate models")
    assert set(trained["replicates"][0].vocabulary()) == {"nurse", "engineer", "she", "he"}
    run = app.run_core(trained, app.REPLICATES_TRAIN, 0.05, None, "norm", False, 20, 10_000, SEED)
    assert run["result"].mode == "replicates" and run["result"].n_replicates == 2


def test_weat_and_mac_tables_name_statistic_and_effect_size_separately(glove):
    x, y, a, b, *names = app.fill_weat(WEAT_NAMES)
    values = step1(kind=app.KIND_WEAT, weat=(WEAT_NAMES, x, y, a, b, *names))
    session, _message, reports, _ = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert session["kind"] == "weat" and set(reports) == {"Flowers", "Insects", "Pleasant", "Unpleasant"}
    run = app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 1000, SEED)
    view = app.results_view(run)
    weat = run["weat"]
    table = view[10].set_index("quantity")["value"]
    assert table["WEAT effect size d"] == pytest.approx(weat.effect_size, abs=1e-6)
    assert table["WEAT test statistic s(X, Y, A, B)"] == pytest.approx(weat.test_statistic, abs=1e-6)
    assert table["WEAT effect size d"] != table["WEAT test statistic s(X, Y, A, B)"]
    # naive s(w, A, B) for the first word of the per-word breakdown
    words = view[12]
    w = words["word"].iloc[0]
    a_used = [t for t in a.split(", ") if glove.has(t)]
    b_used = [t for t in b.split(", ") if glove.has(t)]
    s = np.mean([naive_cos(glove, w, t) for t in a_used]) - np.mean([naive_cos(glove, w, t) for t in b_used])
    assert words["s(w, A, B)"].iloc[0] == pytest.approx(s, abs=1e-5)
    every = list(csv.DictReader(open(view[-2]["value"], encoding="utf-8-sig")))
    rows = [r for r in every if r["row_type"] == "word"]
    assert {r["word"] for r in rows} == set(weat.x) | set(weat.y)
    assert "effect size d" in view[0]


# --------------------------------------------------------------------------- Bayesian estimate, posterior sampler
SMALL_WEAT = ("he, him, man", "she, her, woman", "engineer, scientist, mechanic", "nurse, teacher, librarian")


@pytest.fixture(scope="module")
def weat_session():
    values = step1(kind=app.KIND_WEAT, weat=(app.CUSTOM, *SMALL_WEAT, "male", "female", "male jobs", "female jobs"))
    session, *_ = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    return session


def test_bayes_needs_a_weat_spec(paper_run):
    with pytest.raises(DataError) as err:
        app.bayes_core(paper_run[0], "hierarchical", 200, 200, 1, SEED)
    assert err.value.message == app.MSG_BAYES_NEEDS_WEAT
    with pytest.warns(UserWarning):  # in the app: under the section's button, a warning; nothing else changes
        out = app.bayes_handler(paper_run[0], "hierarchical", 200, 200, 1, SEED)
    assert out == (gr.skip(), "⚠️ " + escape(app.MSG_BAYES_NEEDS_WEAT), *(gr.skip(),) * 8)


def test_sampler_mistakes_are_inline_warnings(weat_session):
    with pytest.warns(UserWarning):
        out = app.bayes_handler(weat_session, "hierarchical", 200, 200, 2, -1)
    assert out == (gr.skip(), "⚠️ " + escape(_seed_message(-1)), *(gr.skip(),) * 8)
    with pytest.warns(UserWarning):
        out = app.posterior_handler(weat_session, "a", "amy, joan", "b", "john, paul", 200, 200, 2, -1)
    assert out == (gr.skip(), "⚠️ " + escape(_seed_message(-1)), *(gr.skip(),) * 8)
    with pytest.warns(UserWarning):  # step 1 not done
        out = app.posterior_handler(app.new_session(), "a", "amy", "b", "john", 200, 200, 2, SEED)
    assert out[1] == "⚠️ " + escape(app.MSG_SPEC_FIRST)


def test_bayes_interval_mass_and_time_limit_are_checked_inline(weat_session):
    from biastest.options import BOUNDS, MSG_BAD_NUMBER, MSG_BAD_POSITIVE

    b, t = BOUNDS["hdi_prob"], BOUNDS["time_limit"]
    with pytest.warns(UserWarning):
        out = app.bayes_handler(weat_session, "hierarchical", 200, 200, 2, SEED, 1.5, 60)
    assert out == (gr.skip(), "⚠️ " + escape(MSG_BAD_NUMBER.format(label=b.label, low=b.low, high=b.high, value=1.5)),
                   *(gr.skip(),) * 8)
    with pytest.warns(UserWarning):
        out = app.bayes_handler(weat_session, "hierarchical", 200, 200, 2, SEED, 0.9, 0)
    assert out[1] == "⚠️ " + escape(MSG_BAD_POSITIVE.format(label=t.label, low=t.low, high=t.high, value=0))


def test_bayes_status_says_not_converged_with_why_and_divergences():
    from biastest.ui.psychophysics.bayes import MSG_BAYES_NOT_CONVERGED, bayes_status

    d = {"converged": False, "attempts": 2, "max_rhat": 1.03, "divergences": 4,
         "stop_message": "Sampling stopped at the time limit of 60 s: <b>"}
    result = SimpleNamespace(model={"title": "Hierarchical"}, seconds=61.0, diagnostics=d, hdi_prob=0.89)
    assert bayes_status(result) == MSG_BAYES_NOT_CONVERGED.format(
        model="Hierarchical", seconds=61.0, attempts=2, max_rhat=1.03, divergences=4,
        stop="Sampling stopped at the time limit of 60 s: &lt;b&gt;")
    assert "NOT converged" in bayes_status(result) and "4 divergent transitions" in bayes_status(result)


def test_bayes_estimate_shows_the_data_it_was_given(weat_session, glove):
    ticks = []
    # settings that usually converge at once on these 6 words (300 + 300 took 3 runs: each run compiles anew)
    run = app.bayes_core(weat_session, "hierarchical", 1000, 1000, 2, SEED, progress=lambda d, t, m: ticks.append(d))
    result = run["bayes"]
    assert ticks and ticks[-1] == 100 and result.seed == SEED
    # the first attempt ran with the settings given; later ones (if any) with more, each recorded
    assert result.attempts[0]["draws"] == 1000 and result.draws == result.attempts[-1]["draws"]
    status, reading, priors, fig, contrast_fig, diag, table, csv_u, json_u = app.bayes_view(run)
    assert "Normal(M[connection], tau[connection])" in priors and "R-hat" in diag
    # issue 28 item 4: the reading opens with the verdict; an unconverged fit gives none and reads no contrast
    assert reading.startswith("Verdict: ")
    if not result.diagnostics["converged"]:
        assert reading.startswith("Verdict: no verdict — the sampler did not converge"), reading
        assert "credibl" not in reading.replace("A bias is called credible", "") and "significant" not in reading
    assert f"{result.diagnostics['divergences']} divergent transitions" in status
    assert f"divergent transitions {result.diagnostics['divergences']}" in diag
    # observed mean distance of 'he' to its own stereotype list, by hand
    cell = next(r for r in result.cells if r["protected_word"] == "he" and r["connection"] == "associated")
    naive = np.mean([1 - naive_cos(glove, "he", a) for a in SMALL_WEAT[2].split(", ")])
    assert cell["observed_mean"] == pytest.approx(naive, abs=1e-5) and cell["n_rows"] == 3
    # the plotted points and intervals are the result's
    assoc = next(tr for tr in fig.data if tr.name == "associated")
    rows = [r for r in result.cells if r["connection"] == "associated"]
    assert list(assoc.x) == pytest.approx([r["mean"] for r in rows])
    assert list(assoc.error_x.array) == pytest.approx([r["hdi_high"] - r["mean"] for r in rows])
    # the contrasts of every word and overall, and of each group (the mean over its words)
    assert len(table) == len(result.contrasts) + len(result.group_contrasts) and len(contrast_fig.data) == 3
    assert len(result.group_contrasts) == 2 * 3
    rows_csv = list(csv.DictReader(open(csv_u["value"], encoding="utf-8-sig")))
    assert [r for r in rows_csv if r["row_type"] == "interval"] and rows_csv[0]["row_type"] == "summary"
    assert len([r for r in rows_csv if r["row_type"] == "interval"]) == len(result.interval_records())
    assert len([r for r in rows_csv if r["row_type"] == "sampler attempt"]) == len(result.attempts)
    assert {r["divergences"] for r in rows_csv if r["row_type"] == "summary"} == {
        str(result.diagnostics["divergences"])}
    assert json.loads(open(json_u["value"], encoding="utf-8").read())["result"]["seed"] == SEED


def test_bayes_section_names_the_lists_of_the_spec_never_protected_words(weat_session):
    """The section called every target word a 'protected word' (math and arts words too)."""
    run = app.bayes_core(weat_session, "additive", 1000, 1000, 2, SEED)
    status, reading, priors, fig, contrast_fig, diag, table, _, _ = app.bayes_view(run)
    texts = [status, reading, priors, diag, fig.layout.title.text, contrast_fig.layout.title.text,
             " ".join(table.columns), *(tr.name for tr in (*fig.data, *contrast_fig.data))]
    texts += [str(row) for tr in (*fig.data, *contrast_fig.data) for row in tr.customdata]
    assert not [t for t in texts if "protected" in t.lower()]
    # the lists by their names in this spec: targets "male" and "female", attributes "male jobs" and "female jobs"
    assert "each word of male and female" in fig.layout.title.text
    assert "male ↔ male jobs, female ↔ female jobs" in fig.layout.title.text
    assert "the words of male and female" in reading and list(table.columns[:2]) == ["word", "target list"]
    assert set(table["target list"]) == {"", "male", "female"}
    # the controls of the section, before anything is run
    demo = app.build_demo(allow_server_paths=False)
    labels = [str(getattr(b, "label", "") or "") + " " + str(getattr(b, "value", "") or "")
              for b in demo.blocks.values()]
    assert [lab for lab in labels if "protected" in lab.lower()] == []
    assert any(lab.startswith("Contrasts per target word") for lab in labels)


def test_posterior_sampler_section_renders_its_result(weat_session):
    run = app.posterior_core(weat_session, "women", "amy, joan, lisa, sarah", "=1+1 men", "john, paul, mike, kevin",
                             200, 200, 2, SEED)
    result = run["posterior"]
    status, reading, details, acf, pca, words, groups, csv_u, _ = app.posterior_view(run)
    assert len(acf.data) == 4
    assert "AUC" in details and status.startswith("✅" if result.diagnostics["converged"] else "⚠️")
    # divergences and acceptance in the details, whatever the outcome
    assert f"{result.diagnostics['divergences']} divergent transitions" in details and "mean acceptance" in details
    # issue 28 item 4: the reading opens with the verdict; unconverged (as this short run often is): no verdict and
    # no claim of significance anywhere in the reading
    assert reading.startswith("Verdict: ")
    if not result.diagnostics["converged"]:
        assert reading.startswith("Verdict: no verdict — the sampler did not converge"), reading
        assert "significant" not in reading
    assert list(words["nearest to +"]) == [w for w, _ in result.words["+"]["nearest"]]
    t = result.group_tests[0]
    assert groups["p (permutation)"].iloc[0] == t["p_permutation"]
    assert list(t["words_a"]) == ["amy", "joan", "lisa", "sarah"]
    assert sum(len(tr.x) for tr in pca.data) == len(result.pca["points"])
    rows = list(csv.DictReader(open(csv_u["value"], encoding="utf-8-sig")))
    assert {r["word"] for r in rows if r["table"] == "group distance"} == {
        "amy", "joan", "lisa", "sarah", "john", "paul", "mike", "kevin"}
    # the posterior column holds a value ('+' and '-' came out as the neutralised "'+" and "'-")
    assert {r["posterior"] for r in rows} == {"positive", "negative"}
    assert {r["table"] for r in rows if r["posterior"] == "positive"} >= {"group distance", "nearest", "farthest"}
    # a formula typed as a group name is still neutralised
    assert {r["group"] for r in rows if r["table"] == "group distance"} == {"women", "'=1+1 men"}


# --------------------------------------------------------------------------- issue 17: 2AFC and WEAT results
def _untitled(text: str) -> str:
    return text.replace("<br>", " ")


def test_pse_error_bars_come_from_the_data_and_the_sigma_band_is_drawn_apart(paper_run, glove):
    """Every word's error bar was ±0.29: the spread the σ assumption implies, the same for all 60 words."""
    session, view = paper_run
    result = session["result"]
    fig = view[3]
    by_target = {t.target: t for t in result.targets}
    data_traces = [tr for tr in fig.data if tr.name in ("PSE", "saturated PSE (curve never crosses inside 0–1)")]
    halfwidths = set()
    for tr in data_traces:
        assert tr.error_y.symmetric is False
        for name, y, up, down in zip(tr.x, tr.y, tr.error_y.array, tr.error_y.arrayminus, strict=True):
            t = by_target[name]
            # the bootstrap over cue pairs, by hand from the naive pair PSEs and the documented draws
            pair = [naive_target_pse(glove, t.target, [p]) for p in result.cue_pairs]
            draws = np.random.default_rng(SEED).integers(0, 8, size=(200, 8))
            boot = np.array([np.mean([pair[i] for i in row]) for row in draws])
            z = math.sqrt(8 / 7) * stats.t.ppf(0.975, 7)
            lo, hi = np.quantile(boot, [stats.norm.sf(z), stats.norm.cdf(z)])
            assert y + up == pytest.approx(hi, abs=1e-6) and y - down == pytest.approx(lo, abs=1e-6)
            halfwidths.add(round(up + down, 6))
    assert len(halfwidths) > 50  # from the data: each word its own
    band = next(tr for tr in fig.data if "assumption" in tr.name)
    s12 = [naive_cos(glove, c1, c2) for c1, c2 in result.cue_pairs]
    implied = np.mean([0.05 / (2 * (1 - s)) for s in s12])
    assert band.hoverinfo == "skip" and band.error_y.array == pytest.approx([implied] * 60)
    title = _untitled(fig.layout.title.text)
    assert "95 % interval of the PSE from the data: bootstrap over the cue pairs" in title
    assert _untitled(rep.MSG_SIGMA_BAND.format(sd=implied, sigma=0.05)) in title
    hover = data_traces[0].customdata[0][3]
    assert hover.startswith("95 % interval: ") and "σ-implied spread (assumption)" in hover


def test_interval_labels_follow_the_results_level():
    """Labels come from the result's level, never a fixed '95 %'."""
    from tests.embedding_runs import run_twoafc, run_weat

    res = run_twoafc(targets=["nurse", "engineer", "teacher"], cue_pairs=get_twoafc_spec(PAPER).cue_pairs,
                     noise_sigma=0.05, seed=SEED, n_bootstrap=100, confidence=0.9)
    frame = rep.twoafc_frame(res)
    assert {"PSE 90 % low", "PSE 90 % high", "fitted PSE 90 % low"} <= set(frame.columns)
    assert not any("95" in c for c in frame.columns)
    fig = rep.pse_figure(res)
    assert "90 % interval of the PSE" in _untitled(fig.layout.title.text) and "95" not in fig.layout.title.text
    assert fig.data[0].customdata[0][3].startswith("90 % interval: ")
    reading = rep.twoafc_interpretation(res, source="glove-6b-50d")
    assert "90 % interval" in reading and "95 %" not in reading
    summary = rep.twoafc_summary_records(res, source="glove-6b-50d")
    assert {r["confidence"] for r in summary} == {0.9}
    weat = run_weat(X=["he", "man", "boy"], Y=["she", "woman", "girl"], A=["office", "salary"],
                    B=["home", "children"], seed=SEED, n_bootstrap=300, confidence=0.8)
    from tests.embedding_runs import run_mac

    mac = run_mac(words=["he", "man", "boy", "she", "woman", "girl"],
                  attribute_classes={"career": ["office", "salary"], "family": ["home", "children"]})
    table = weat_rep.weat_frame(weat, mac).set_index("quantity")["value"]
    assert table["d, 80 % interval low"] == pytest.approx(weat.effect_size_ci[0], abs=1e-6)
    assert "80 % interval" in weat_rep.weat_interpretation(weat, mac, source="glove-6b-50d")


def test_jnd_is_explained_when_there_are_no_replicates(paper_run):
    """One model: the paper's JND (across replicates) is explained as missing; the curve JND is shown instead."""
    session, view = paper_run
    result = session["result"]
    assert rep.MSG_NO_JND in view[0]
    columns = set(view[9].columns)
    assert "JND (SD across replicates)" not in columns  # no column of dashes
    assert {"curve JND (fitted SD)", "curve JND 95 % low", "curve JND 95 % high"} <= columns
    spectrum = view[6]
    by_target = {t.target: t for t in result.targets}
    for tr in spectrum.data:
        for row in tr.customdata:
            t = by_target[row[0]]
            assert row[3] == (rep.MSG_NO_JND_SHORT if t.jnd_curve is None else f"{t.jnd_curve:.3f} (curve JND)")
    summary = rep.twoafc_summary_records(result, source="glove-6b-50d")
    assert next(r for r in summary if r["measure"] == "JND")["interval"] == rep.MSG_NO_JND
    jnd_plot, jnd_md, jnd_labour = view[14], view[15], view[16]
    assert jnd_plot.data[0].name.startswith("JND = SD of the fitted psychometric function")
    assert len(jnd_plot.data[0].x) == sum(t.jnd_curve is not None for t in result.targets)
    assert "sqrt(p(1 − p))" in jnd_md and "0.401" in jnd_md
    assert jnd_labour["visible"] is True and jnd_labour["value"].data[0].customdata is not None


def test_uploaded_replicates_show_the_jnd_column_and_no_empty_state(tmp_path, glove):
    targets, pairs = ["nurse", "engineer", "teacher"], [("woman", "man"), ("she", "he")]
    words = targets + [c for p in pairs for c in p]
    base = glove.vectors(words)[0].astype(np.float64)
    rng = np.random.default_rng(11)
    files = []
    for r in range(5):
        path = tmp_path / f"rep{r}.txt"
        write_w2v(path, words, base + rng.normal(0, 0.3, base.shape))
        files.append(str(path))
    session, *_ = app.confirm_spec_core(
        app.new_session(), *custom_step1(", ".join(targets), "woman/man, she/he"), allow_paths=False
    )
    run = app.run_core(session, app.REPLICATES_UPLOAD, 0.05, files, "norm", False, 100, 10_000, SEED)
    result = run["result"]
    view = app.results_view(run)
    assert rep.MSG_NO_JND not in view[0]
    table = view[9].set_index("target")
    for t in result.targets:
        assert table.loc[t.target, "JND (SD across replicates)"] == pytest.approx(t.jnd_sd, abs=1e-4)
        assert t.pse_ci is not None  # 5 replicate models: resampled for the interval
    assert result.interval_units == "replicate models" and "bootstrap over the replicate models" in view[0]


def _reading_lists(reading: str, side: str) -> list[str]:
    found = re.search(rf"Leaning most to {side}: ([^.]*)\.", reading)
    assert found, reading
    return [] if found.group(1) == rep.MSG_NO_LEAN else found.group(1).split(", ")


def test_a_reading_never_names_a_word_on_both_sides(glove):
    """A 4-word reading named the same four words as leaning most to female and most to male."""
    targets = ["nurse", "engineer", "teacher", "carpenter"]
    session, *_ = app.confirm_spec_core(
        app.new_session(), *custom_step1(", ".join(targets), "woman/man, she/he, girl/boy"), allow_paths=False
    )
    run = app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 100, 10_000, SEED)
    reading = app.results_view(run)[0]
    female, male = _reading_lists(reading, "female"), _reading_lists(reading, "male")
    pairs = [("woman", "man"), ("she", "he"), ("girl", "boy")]
    naive = {t: naive_target_pse(glove, t, pairs) for t in targets}
    assert not set(female) & set(male)
    assert female == sorted((t for t in targets if naive[t] > 0.5), key=lambda t: -naive[t])
    assert male == sorted((t for t in targets if naive[t] < 0.5), key=lambda t: naive[t])
    assert female and male  # GloVe: nurse and teacher lean female, engineer and carpenter male
    # every word on one side: the other side says so
    one_side = app.run_core(dict(session, spec=app.twoafc_spec_from_inputs(app.CUSTOM, "engineer, carpenter",
                                                                         "woman/man, she/he", "female", "male")),
                            app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 10_000, SEED)
    text = app.results_view(one_side)[0]
    two = {t: naive_target_pse(glove, t, pairs[:2]) for t in ("engineer", "carpenter")}
    assert all(v < 0.5 for v in two.values())
    assert _reading_lists(text, "female") == []
    assert _reading_lists(text, "male") == sorted(two, key=two.get)
    assert f"Leaning most to female: {rep.MSG_NO_LEAN}." in text


def test_weat_shows_the_interval_of_d_in_the_summary_table_csv_and_json(glove):
    x, y, a, b, *names = app.fill_weat(WEAT_NAMES)
    values = step1(kind=app.KIND_WEAT, weat=(WEAT_NAMES, x, y, a, b, *names))
    session, *_ = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    run = app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 1000, SEED, 500)
    weat = run["weat"]
    lo, hi = weat.effect_size_ci
    assert weat.n_bootstrap == 500 and lo < weat.effect_size < hi
    view = app.results_view(run)
    assert f"d = {weat.effect_size:.2f} (95 % interval {lo:.2f} to {hi:.2f}, over the words)" in view[0]
    assert weat_rep.MSG_WEAT_TWO_QUESTIONS in view[0]  # how the interval's question differs from the p-value's
    assert (weat_rep.MSG_WEAT_INTERVAL_HAS_ZERO if lo <= 0 else weat_rep.MSG_WEAT_INTERVAL_READING) in view[0]
    table = view[10].set_index("quantity")["value"]
    assert table["d, 95 % interval low"] == pytest.approx(lo, abs=1e-6)
    assert table["d, 95 % interval high"] == pytest.approx(hi, abs=1e-6)
    every = list(csv.DictReader(open(view[-2]["value"], encoding="utf-8-sig")))
    summary = [r for r in every if r["row_type"] == "summary"]
    assert every[: len(summary)] == summary and len(summary) >= 5  # the CSV starts with them
    d_row = summary[0]
    assert d_row["measure"] == "WEAT effect size d"  # the CSV as it writes numbers (round_cell); the JSON every digit
    assert float(d_row["estimate"]) == round_cell("estimate", weat.effect_size, d_row)
    assert float(d_row["ci_low"]) == round_cell("ci_low", lo, d_row)
    assert float(d_row["ci_high"]) == round_cell("ci_high", hi, d_row)
    for key, want in (("confidence", "0.95"), ("seed", str(SEED)), ("embedding", "glove-6b-50d"),
                      ("spec", WEAT_NAMES), ("n_resamples", "500")):
        assert d_row[key] == want, key
    assert d_row["method"].startswith("WEAT") and d_row["date"] == weat.provenance["created_at"]
    assert json.loads(d_row["versions"])["numpy"] == np.__version__
    p_row = next(r for r in summary if r["measure"].startswith("p-value, one-sided"))
    assert float(p_row["p_value"]) == round_cell("p_value", weat.p_one_sided, p_row)
    payload = json.loads(open(view[-1]["value"], encoding="utf-8").read())
    assert payload["weat"]["effect_size_ci"] == pytest.approx([lo, hi])
    # a resample count out of bounds is the user's mistake: inline, before anything runs
    from biastest.options import BOUNDS, MSG_BAD_WHOLE

    b = BOUNDS["n_resamples"]
    with pytest.warns(UserWarning):
        out = app.make_run_handler((), 16)(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 1000, SEED, 50)
    assert out[1] == "⚠️ " + escape(MSG_BAD_WHOLE.format(label=b.label, low=int(b.low), high=int(b.high), value=50))


def test_2afc_csv_alone_is_a_complete_record(paper_run):
    session, view = paper_run
    result, corr = session["result"], session["labour"]
    every = list(csv.DictReader(open(view[-2]["value"], encoding="utf-8-sig")))
    # summary rows, then the targets, then what the figures show beyond them: each cue pair, each occupation
    assert [r["row_type"] for r in every] == ["summary"] * 11 + ["target"] * 60 + ["pair"] * 480 + ["occupation"] * 60
    summary = {r["measure"]: r for r in every[:11]}
    jnd_r = summary["Pearson r: JND vs sqrt(p(1 − p)), p = share of women (U.S. BLS)"]
    assert int(jnd_r["n"]) == 60 and jnd_r["interval"].startswith("standard deviation of the fitted")
    lean = summary["targets leaning to female (PSE > 0.5)"]
    assert int(lean["estimate"]) == sum(1 for t in result.targets if t.pse > 0.5) and lean["n"] == "60"
    above = summary["targets whose interval is wholly above 0.5 (female side)"]
    assert int(above["estimate"]) == sum(1 for t in result.targets if t.pse_ci[0] > 0.5)
    assert above["interval"] == rep.pse_interval_label(result)
    r = summary["Pearson r: PSE vs % women (U.S. BLS)"]
    assert float(r["estimate"]) == round_cell("estimate", corr.pearson_r, r) and int(r["n"]) == corr.n
    assert float(r["p_value"]) == round_cell("p_value", corr.pearson_p, r)
    for row in every[:11]:
        assert row["spec"] == PAPER and row["embedding"] == "glove-6b-50d" and row["seed"] == str(SEED)
        assert row["mode"] == "thurstonian" and row["noise_sigma"] == "0.05" and row["n_resamples"] == "200"
        assert row["method"].startswith("2AFC") and row["date"] == result.provenance["created_at"]
        assert row["confidence"] == "0.95" and json.loads(row["versions"])["scipy"]


# --------------------------------------------------------------------------- issue 28 item 6: errors that stay
def test_each_failure_stays_next_to_its_button_and_the_next_action_replaces_it(paper_run, weat_session, monkeypatch):
    """A failure a handler did not expect raised a red error toast that vanished: every step-1/2 and section
    handler now answers it in its own message box (what failed, inputs kept, never the exception's text), the
    other outputs untouched; the next action's message replaces it."""
    import warnings

    from biastest.ui.common import MSG_UNEXPECTED_REASON, failure_message
    from biastest.ui.psychophysics import bayes, chat, classifier, curves, data, posterior, spec, state

    secret = "RuntimeError: /srv/private/path"
    session = paper_run[0]
    stale = ("cleared", gr.update(value=None, visible=False))
    n_view = 21  # results_view: the 2AFC and WEAT outputs (JND and null-simulation ones included)
    run = app.make_run_handler(stale, n_view)
    confirm = spec._make_confirm(False)
    twoafc = (session, app.REPLICATES_NONE, 0, None, "norm", False, 0, 10_000, SEED)
    cases = [  # module, the name the handler calls, the handler's call, its action, outputs, the message's index
        (spec, "confirm_spec_core", lambda: confirm(app.new_session(), *library_step1()), state.ACTION_CONFIRM, 9,
         1),
        (data, "train_replicates_core", lambda: app.train_handler(session, None, 2, 10, 1, 1, SEED),
         state.ACTION_TRAIN, 2, 1),
        (data, "run_core", lambda: run(*twoafc), state.ACTION_RUN, 4 + len(stale) + n_view, 1),
        (bayes, "bayes_core", lambda: app.bayes_handler(weat_session, "hierarchical", 200, 200, 2, -1),
         state.ACTION_BAYES, 10, 1),
        (posterior, "posterior_core",
         lambda: app.posterior_handler(weat_session, "a", "amy, joan", "b", "john, paul", 200, 200, 2, -1),
         state.ACTION_POSTERIOR, 10, 1),
        (chat, "run_chat_inputs", lambda: chat.make_chat_run_handler((), 9)(session, *(None,) * 11),
         state.ACTION_CHAT, 4 + len(chat.EMBEDDING_HIDDEN) + 9, 0),
        (classifier, "run_classifier_core",
         lambda: classifier.make_classifier_run_handler(5)(session, "here", "m", "", "", "", SEED),
         state.ACTION_CLASSIFIER, 9, 0),
        (curves, "run_curves_inputs", lambda: curves.make_curves_run_handler(6)(session, *(None,) * 14),
         state.ACTION_CURVES, 10, 0),
    ]

    def boom(*args, **kwargs):
        raise RuntimeError(secret)

    for module, name, call, action, n, at in cases:
        with monkeypatch.context() as m:
            m.setattr(module, name, boom)
            with pytest.warns(UserWarning):  # the toast repeats it; the box keeps it
                out = call()
        assert len(out) == n and out[at] == failure_message(action, RuntimeError()), (name, out)
        assert out[at].startswith("⛔ ") and MSG_UNEXPECTED_REASON[:40] in out[at] and secret not in out[at]
        assert all(isinstance(v, type(gr.skip())) for i, v in enumerate(out) if i != at), name
        if name in ("run_chat_inputs", "run_classifier_core", "run_curves_inputs"):
            continue  # their next action needs a model; the wrapper is the same as above
        if name == "run_core":
            monkeypatch.setattr(data, "run_core", lambda *a, **k: session)
        with warnings.catch_warnings():  # a mistake's own toast (a bad seed) is its answer here
            warnings.simplefilter("ignore")
            again = call()
        assert len(again) == n and isinstance(again[at], str) and not again[at].startswith("⛔"), (name, again[at])
        if name == "run_core":  # the run that succeeded cleared the message and opens with the verdict
            assert again[1] == "" and again[4 + len(stale)].startswith("Verdict: ")


def test_too_few_target_words_are_refused_in_step_1_with_the_run_s_own_message():
    """One word in each WEAT target list was "✅ valid" in step 1 and refused at Run with "at least 2 word(s) in
    'X and Y together (3 in all)' … it has 1": one rule and one message now, applied in both places."""
    from biastest.measures.weat.score import MSG_WEAT_TOO_FEW_TARGETS, WEATSettings, weat
    from biastest.ui.psychophysics import spec as spec_module

    values = step1(kind=app.KIND_WEAT, weat=(app.CUSTOM, "he", "she", "engineer, scientist", "nurse, teacher",
                                             "male", "female", "male jobs", "female jobs"))
    want = MSG_WEAT_TOO_FEW_TARGETS.format(need=3, x="male", y="female", n=2)
    with pytest.raises(DataError) as err:
        app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert err.value.message == want
    with pytest.warns(UserWarning):  # through the handler: inline under the button, never "✅ valid"
        out = spec_module._make_confirm(False)(app.new_session(), *values)
    assert out[1] == "⚠️ " + escape(want)
    rng = np.random.default_rng(SEED)
    vec = [rng.normal(size=(k, 5)) for k in (1, 1, 2, 2)]
    with pytest.raises(DataError) as at_run:  # the run's own check says the same
        weat(*vec, x_words=["he"], y_words=["she"], a_words=["e", "s"], b_words=["n", "t"],
             settings=WEATSettings(seed=SEED), names={"X": "male", "Y": "female"})
    assert at_run.value.message == want
    three = [rng.normal(size=(k, 5)) for k in (2, 1, 2, 2)]  # three target words: the rule lets it run
    assert weat(*three, x_words=["he", "him"], y_words=["she"], a_words=["e", "s"], b_words=["n", "t"],
                settings=WEATSettings(seed=SEED), names={"X": "male", "Y": "female"}).effect_size is not None
