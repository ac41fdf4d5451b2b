"""“Compare with another model” in the three apps: the handlers, called directly (the browser walk is in
``test_app_compare_browser.py``).

Each added model must be scored exactly as the runner scores it on the first run's items, the comparison must be
the library's (:mod:`biastest.stats.compare`) on those results, the downloads must hold every model, and a mistake
the user can fix must come back inline before any model loads.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as stereotype_run
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.twoafc.compare import compare_twoafc
from biastest.measures.vlm import compare_vlm
from biastest.measures.weat.compare import compare_weat
from biastest.records import SentencePair
from biastest.report.text import md_escape
from biastest.spec import BiasSpec
from biastest.stats import compare as C
from biastest.ui import compare
from biastest.ui import gpt as gpt_app
from biastest.ui import psychophysics as emb_app
from biastest.ui import vqa as vqa_app
from biastest.ui.spec_step import CUSTOM
from tests.embedding_runs import run_twoafc, run_weat
from tests.embeddings_helpers import write_noisy_glove
from tests.lm_helpers import build_tiny_gpt2, run_pairs
from tests.vlm_helpers import run_vlm

SEED = 7
SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
WEAT7 = "WEAT 7: Math vs arts, male vs female terms"
PAPER = "Occupations vs gender (Liang & Acuna 2020)"


def _read_csv(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def _path(update) -> str:
    return update["value"]


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


# --------------------------------------------------------------------------- language models
def lm_pairs_for(spec: BiasSpec) -> list[SentencePair]:
    """24 minimal pairs: 4 group-term swaps × 3 attribute terms of each list, one template each."""
    pairs = []
    for g1, g2 in zip(spec.group1[:4], spec.group2[:4], strict=True):
        for att, (st, anti) in [*((a, (g1, g2)) for a in spec.attributes1[:3]),
                                *((a, (g2, g1)) for a in spec.attributes2[:3])]:
            pairs.append(SentencePair(stereotyped=f"The {st} likes {att}.", anti_stereotyped=f"The {anti} likes {att}.",
                                      attribute_term=att, group_term_stereotyped=st, group_term_anti=anti,
                                      template=f"The [T] likes {att}.", spec_name=spec.name))
    return pairs


@pytest.fixture(scope="module")
def tiny_lms(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-lms")
    # seeds 3 and 2 disagree on a few of these pairs (random tiny models mostly prefer one gender everywhere)
    return str(build_tiny_gpt2(root / "tiny-a", seed=3)), str(build_tiny_gpt2(root / "tiny-b", seed=2))


@pytest.fixture(scope="module")
def lm_run(tiny_lms):
    state, msg, *_ = gpt_app.confirm_spec(SPEC_NAME, *gpt_app.fill_from_library(SPEC_NAME)[:4],
                                          gpt_app._fresh_state())
    assert msg.startswith("✅")
    table = report.pairs_to_table(lm_pairs_for(BiasSpec.from_dict(state["spec"])))
    out = gpt_app.run_test(tiny_lms[0], "causal-sum", SEED, state, table)
    assert out[0].startswith("✅")
    return out[1]


@pytest.fixture
def no_model(monkeypatch):
    def refuse(**_):
        raise AssertionError("a model was run")

    monkeypatch.setattr(stereotype_run, "run_lm_test", refuse)


def test_lm_added_model_is_scored_on_the_same_pairs_and_compared(tiny_lms, lm_run):
    a, b = tiny_lms
    out = compare.lm_add_handler(n_options=1)(b, "causal-sum", "pair", lm_run)
    assert len(out) == 9
    new, message, summary, forest, reading, table, dl_items, dl_json, dl_cmp = out
    assert message == md_escape(compare.MSG_ADDED.format(model=b, n=2, items="sentence pairs"))
    base = StereotypeResult.from_dict(lm_run["result"])
    pairs = lm_pairs_for(BiasSpec.from_dict(lm_run["spec"]))
    assert [p.id for p in compare.lm_pairs(base)] == [p.id for p in pairs]  # rebuilt with the same ids
    direct = run_pairs(pairs=pairs, model_id=b, method="causal-sum", seed=SEED, spec=BiasSpec.from_dict(
        lm_run["spec"]))
    added = StereotypeResult.from_dict(new["compare"]["results"][0])
    assert [p.verdict for p in added.pairs] == [p.verdict for p in direct.pairs]
    assert [p.difference for p in added.pairs] == pytest.approx([p.difference for p in direct.pairs], abs=1e-9)
    expected = compare_stereotype([base, direct], seed=SEED, clusters="pair")
    pair = expected.pairs[0]
    assert pair.discordant["a_only"] + pair.discordant["b_only"] > 0  # the two tiny models do disagree somewhere
    # what the section shows is that comparison
    assert list(table.iloc[0][["Model A", "Model B"]]) in ([a, b], [b, a])
    shown = pair if table.iloc[0]["Model A"] == a else pair.flipped()
    assert table.iloc[0]["A − B (points)"] == f"{shown.difference:+.1f}"
    assert table.iloc[0]["p"] == (f"{shown.p_value:.3g}" if shown.p_value >= 0.001 else "< 0.001")
    assert f"{abs(pair.difference):.1f} points" in reading and "McNemar p" in reading
    assert "24 sentence pairs" in summary
    trace = forest.data[0]
    assert list(trace.x) == sorted([m.estimate for m in expected.models], reverse=True)  # sorted, largest on top
    assert all("compared items: 24" in cd[2] for cd in trace.customdata)
    # the downloads hold every model
    items = _read_csv(_path(dl_items))
    assert {r["model"] for r in items} == {a, b} and len(items) == 48
    doc = json.loads(Path(_path(dl_json)).read_text(encoding="utf-8"))
    assert [r["model_id"] for r in doc["results"]] == [a, b]
    assert doc["comparison"]["pairs"][0]["p_value"] == pytest.approx(pair.p_value)
    rows = _read_csv(_path(dl_cmp))
    assert [r["row"] for r in rows] == ["model", "model", "pair"]
    # named as every download: the app, the models compared, the date (issue 28 item 7)
    day = doc["results"][0]["provenance"]["created_at"][:10]
    names = [Path(_path(d)).name for d in (dl_items, dl_json, dl_cmp)]
    assert all(n.startswith("biastest-gpt-compare-") and "-vs-" in n for n in names), names
    assert [n[n.index(day):] for n in names] == [f"{day}-items.csv", f"{day}.json", f"{day}-comparison.csv"]


def test_lm_clustering_choice_recomputes_without_running_a_model(lm_run, tiny_lms, no_model):
    base = StereotypeResult.from_dict(lm_run["result"])
    other = StereotypeResult.from_dict({**lm_run["result"], "model_id": "another"})
    state = {**lm_run, "compare": {"base": compare._lm_key(base), "results": [other.to_dict()]}}
    by_attr = compare.lm_view_handler("attribute-term", state)
    assert "in 6 clusters (attribute term)" in by_attr[0]
    by_template = compare.lm_view_handler("template", state)
    assert "in 6 clusters (template)" in by_template[0]
    independent = compare.lm_view_handler("pair", state)
    assert "24 sentence pairs**." in independent[0]


def test_lm_mistakes_are_inline_before_any_model_runs(lm_run, tiny_lms, no_model):
    add = compare.lm_add_handler(n_options=1)
    fresh = gpt_app._fresh_state()
    assert add(tiny_lms[1], "causal-sum", "auto", fresh)[1] == _inline(compare.MSG_RUN_FIRST)
    assert add("  ", "causal-sum", "auto", lm_run)[1] == _inline(compare.MSG_NO_MODEL)
    out = add(tiny_lms[0], "causal-sum", "auto", lm_run)
    assert out[1] == _inline(compare.MSG_ALREADY.format(label=f"{tiny_lms[0]} (causal-sum)"))
    assert all(v == {"__type__": "update"} for v in (out[0], *out[2:]))  # nothing else changes
    assert add(tiny_lms[1], "no-such-method", "auto", lm_run)[1].startswith("⚠️ Unknown scoring method")
    full = {**lm_run, "compare": {"base": compare._lm_key(StereotypeResult.from_dict(lm_run["result"])),
                                  "results": [lm_run["result"]] * (compare.MAX_MODELS - 1)}}
    assert add(tiny_lms[1], "causal-sum", "auto", full)[1] == _inline(compare.MSG_TOO_MANY.format(
        n=compare.MAX_MODELS))


def test_lm_remove_and_a_new_run_leave_nothing_stale(lm_run, tiny_lms):
    add = compare.lm_add_handler(n_options=1)
    new = add(tiny_lms[1], "causal-sum", "pair", lm_run)[0]
    cleared = compare.clear_handler(new)
    assert cleared[0]["compare"] is None and cleared[1] == compare.MSG_CLEARED
    assert cleared[2:] == compare.empty_view()
    # a new run on other pairs: the added result described the old ones, so nothing is shown
    table = report.pairs_to_table(lm_pairs_for(BiasSpec.from_dict(new["spec"]))[:12])
    rerun = gpt_app.run_test(tiny_lms[0], "causal-sum", SEED, new, table)[1]
    assert rerun["compare"] == new["compare"]  # kept in the state, but keyed by the old run
    assert compare.lm_view(rerun, "pair") == compare.empty_view()


def test_lm_section_is_wired_in_the_app():
    demo = gpt_app.build_demo()
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert {"compare-section", "compare-model", "compare-method", "compare-add", "compare-clear", "compare-forest",
            "compare-table", "compare-download-items", "compare-download-json", "compare-download-comparison"} <= ids
    by_elem = {b.elem_id: k for k, b in demo.blocks.items() if getattr(b, "elem_id", None)}
    add = [f for f in demo.fns.values() if any(t[0] == by_elem["compare-add"] for t in f.targets)]
    assert len(add) == 1
    assert [c.elem_id for c in add[0].inputs][:3] == ["compare-model", "compare-method", "clusters"]


# --------------------------------------------------------------------------- vision-language models
@pytest.fixture(scope="module")
def tiny_clips(tmp_path_factory):
    from tests.vlm_helpers import save_tiny_clip

    root = tmp_path_factory.mktemp("compare-clips")
    return str(save_tiny_clip(root / "clip-a", seed=11)), str(save_tiny_clip(root / "clip-b", seed=12))


@pytest.fixture(scope="module")
def vqa_run(tiny_clips, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare-vqa")
    session, msg = vqa_app.confirm_spec(vqa_app.new_session(), CUSTOM, "man", "woman", "doctor", "nurse")
    assert msg.startswith("✅")
    rng = np.random.default_rng(SEED)
    for term, base in (("man", (220, 30, 30)), ("woman", (30, 60, 220))):
        files = []
        for k in range(4):
            arr = np.clip(np.array(base) + rng.normal(0, 40, size=(32, 32, 3)), 0, 255).astype(np.uint8)
            path = tmp / f"{term}{k}.png"
            Image.fromarray(arr, "RGB").save(path)
            files.append(path)
        session, _ = vqa_app.add_uploads(session, files, term)
    run = vqa_app.run_core(session, tiny_clips[0], ["a photo of a {term}"], "", "sum-prob", "", SEED, 4, 500)
    yield run
    vqa_app.discard_session(run)


def test_vqa_added_model_is_scored_on_the_same_images_and_compared(tiny_clips, vqa_run):
    a, b = tiny_clips
    out = compare.vlm_add_handler()(b, "soft", "", vqa_run)
    new, message, summary, _forest, reading, table, dl_items, dl_json, _dl_cmp = out
    assert message == md_escape(compare.MSG_ADDED.format(model=b, n=2, items="images"))
    direct = run_vlm(images=list(vqa_run["images"]), image_root=vqa_run["dir"], spec=vqa_run["spec"], model_id=b,
                          prompt_template=["a photo of a {term}"], seed=SEED, batch_size=4, n_resamples=500)
    added = new["compare"]["results"][0]
    assert [i.p_stereotyped for i in added.images] == pytest.approx([i.p_stereotyped for i in direct.images],
                                                                    abs=1e-6)
    expected = compare_vlm([vqa_run["result"], direct], seed=SEED, score="soft")
    assert table.iloc[0]["A − B (points)"] == f"{abs(expected.pairs[0].difference):+.1f}"
    assert "sign test p" in reading and "8 images" in summary
    items = _read_csv(_path(dl_items))
    assert {r["model"] for r in items} == {a, b} and len(items) == 16
    doc = json.loads(Path(_path(dl_json)).read_text(encoding="utf-8"))
    assert [r["model_id"] for r in doc["results"]] == [a, b] and doc["comparison"]["kind"] == C.KIND_VLM_SOFT
    # the hard score and clusters: recomputed from the same results
    hard = compare.vlm_view("hard", "image_term", new)
    assert "cluster sign test p" in hard[2] or "no difference to test" in hard[2]
    assert "in 2 clusters (image term)" in hard[0]
    assert compare.vlm_add_handler()(b, "soft", "", new)[1] == _inline(compare.MSG_ALREADY.format(label=b))


# --------------------------------------------------------------------------- word embeddings
def _step1(kind, name):
    if kind == emb_app.KIND_WEAT:
        weat = (name, *emb_app.fill_weat(name))
        twoafc = ("", "", "", "", "")
    else:
        twoafc = (name, *emb_app.fill_twoafc(name))
        weat = ("",) * 9
    lib2, libw = twoafc[0] or emb_app.CUSTOM, weat[0] or emb_app.CUSTOM
    return [kind, lib2, *twoafc[1:], libw, *weat[1:], "glove-6b-50d", None, ""]


def _embedding_run(kind, name):
    session, message, *_ = emb_app.confirm_spec_core(emb_app.new_session(), *_step1(kind, name), allow_paths=False)
    assert message.startswith("✅")
    return emb_app.run_core(session, emb_app.REPLICATES_NONE, 0.05, None, "norm", False, 200, 2000, 0)


def test_weat_on_another_embedding_is_compared_word_by_word(tmp_path):
    run = _embedding_run(emb_app.KIND_WEAT, WEAT7)
    spec = run["spec"]
    upload = write_noisy_glove([*spec.group_terms, *spec.attribute_terms], tmp_path / "noisy-glove.txt", sigma=0.35,
                          seed=1)
    out = compare.embedding_add_handler(allow_paths=False)(emb_app.SOURCE_UPLOAD, str(upload), "",
                                                          "mean-abs-deviation", run)
    _new, message, summary, _forest, reading, table, dl_items, dl_json, _dl_cmp = out
    assert message == md_escape(compare.MSG_ADDED.format(model="noisy-glove.txt", n=2, items="words"))
    assert str(tmp_path) not in message + summary + reading  # a file is named by its name, never its folder
    direct = run_weat(spec=spec, source=f"file:{upload}", seed=0)
    expected = compare_weat([run["weat"], direct], seed=0, labels=["glove-6b-50d", "noisy-glove.txt"])
    assert [m.estimate for m in expected.models] == pytest.approx([run["weat"].effect_size, direct.effect_size])
    row = table.iloc[0]
    assert {row["Model A"], row["Model B"]} == {"glove-6b-50d", "noisy-glove.txt"}
    assert row["A − B"] == f"{abs(expected.pairs[0].difference):+.3f}"
    assert "WEAT effect size" in reading and "bootstrap p" in reading
    words = _read_csv(_path(dl_items))
    assert {r["model"] for r in words} == {"glove-6b-50d", "noisy-glove.txt"}
    doc = json.loads(Path(_path(dl_json)).read_text(encoding="utf-8"))
    assert [d["embedding"] for d in doc["results"]] == ["glove-6b-50d", "noisy-glove.txt"]
    # the same embedding twice, or no file: inline
    add = compare.embedding_add_handler(allow_paths=False)
    assert add("glove-6b-50d", None, "", "mean-abs-deviation", run)[1] == _inline(
        compare.MSG_ALREADY.format(label="glove-6b-50d"))
    assert add(emb_app.SOURCE_UPLOAD, None, "", "mean-abs-deviation", run)[1] == _inline(emb_app.MSG_NO_UPLOAD)
    assert add(emb_app.SOURCE_PATH, None, "/etc/passwd", "mean-abs-deviation", run)[1] == _inline(
        emb_app.MSG_PATHS_DISABLED)


def test_twoafc_on_another_embedding_compares_the_pses(tmp_path):
    run = _embedding_run(emb_app.KIND_TWOAFC, PAPER)
    spec = run["spec"]
    words = [*spec.targets, *(c for p in spec.cue_pairs for c in p)]
    upload = write_noisy_glove(words, tmp_path / "other.txt", sigma=0.2, seed=2)
    add = compare.embedding_add_handler(allow_paths=False)
    new, message, _summary, forest, _reading, _table, *_ = add(emb_app.SOURCE_UPLOAD, str(upload), "",
                                                              "mean-abs-deviation", run)
    assert message.startswith("✅")
    direct = run_twoafc(spec=spec, source=f"file:{upload}", seed=0)
    expected = compare_twoafc([run["result"], direct], seed=0, labels=["glove-6b-50d", "other.txt"])
    est = {m.label: m.estimate for m in expected.models}
    glove_pse = {t.target: t.pse for t in run["result"].targets}
    assert est["glove-6b-50d"] == pytest.approx(np.mean([abs(v - 0.5) for v in glove_pse.values()]))
    assert list(forest.data[0].x) == sorted(est.values(), reverse=True)
    signed = compare.embedding_view("mean-deviation", new)
    assert "lean further towards the first cue" in signed[2]
