"""Importers on the real reference data, and the public BiasTestGPT pull (offline and via the stub Hub)."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import huggingface_hub.constants
import pytest

from biastest.errors import DataError
from biastest.store import importers as imp
from biastest.store.hub import HubSync
from biastest.store.local import DatasetStore
from tests.hub_stub import StubHub

PAIR_FILES = {f"gpt-3.5-shots-5-{k}_pairs.csv": n for k, n in zip(range(1, 6), (802, 797, 803, 804, 805), strict=True)}


def _rows(path):
    """Rows as dicts, values stripped of surrounding white space (as the importers do)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


# ------------------------------------------------------------- BiasTestGPT
@pytest.mark.parametrize("fname", sorted(PAIR_FILES))
def test_biastestgpt_pairs_real_files(shared_data, fname):
    path = shared_data / "biastestgpt" / fname
    res = imp.read_biastestgpt_pairs(path)
    rows = _rows(path)
    assert res.rows_read == len(rows) == PAIR_FILES[fname]
    assert res.discarded == 0 and len(res.pairs) == len(rows)
    for pair, row in zip(res.pairs, rows, strict=True):
        # naive: the sentence labelled 'stereotype' is the stereotyped side
        k = "1" if row["label_1"] == "stereotype" else "2"
        o = "2" if k == "1" else "1"
        assert row[f"label_{o}"] == "anti-stereotype"
        assert pair.stereotyped == row[f"sent_att_{k}"] and pair.anti_stereotyped == row[f"sent_att_{o}"]
        assert pair.group_term_stereotyped == row[f"att_term_{k}"] and pair.group_term_anti == row[f"att_term_{o}"]
        assert pair.attribute_term == row["group_term"]  # the original's column naming is swapped
        assert pair.spec_name == row["group"] and pair.template == row["template"]
    assert res.message == imp.MSG_IMPORTED.format(n_items=len(rows), kind="sentence pairs", name=fname,
                                                  n_rows=f"{len(rows)} rows", details="")


def test_biastestgpt_pairs_discarded_and_broken_rows_are_counted(shared_data, tmp_path):
    rows = _rows(shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_pairs.csv")
    for r in rows[:3]:
        r["discarded"] = "True"
    rows[3]["sent_att_2"] = ""
    rows[4]["label_2"] = "stereotype"
    path = tmp_path / "edited_pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = imp.read_biastestgpt_pairs(path)
    assert res.discarded == 3
    assert res.skipped == {imp.SKIP_DISCARDED: 3, imp.SKIP_EMPTY: 1, imp.SKIP_LABELS: 1}
    assert len(res.pairs) == len(rows) - 5
    assert res.message.endswith(f"; 3 skipped: {imp.SKIP_DISCARDED}; 1 skipped: {imp.SKIP_EMPTY}; "
                                f"1 skipped: {imp.SKIP_LABELS}).")


def test_biastestgpt_sentences_real_file(shared_data, tmp_path):
    path = shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_sentences.csv"
    res = imp.read_biastestgpt_sentences(path)
    rows = _rows(path)
    assert res.rows_read == len(rows) == 806 and res.discarded == 0 and len(res.sentences) == 806
    for s, row in zip(res.sentences, rows, strict=True):
        assert (s.text, s.group_term, s.attribute_term, s.template, s.spec_name) == (
            row["Generated sentence"], row["Group Term"], row["Attribute word"], row["Template version"],
            row["Bias Name"])
    # auto-detection from bytes, into a store; retrieval of a core spec finds them
    store = DatasetStore(tmp_path)
    res2 = imp.import_file(store, path.read_bytes(), name=path.name)
    assert res2.kind == "biastestgpt-sentences"
    assert store.count("sentences") == len({s.id for s in res.sentences})


def test_discarded_sentences_are_skipped(shared_data):
    rows = _rows(shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_sentences.csv")
    rows[0]["Discarded"] = "1"
    rows[1]["Discarded"] = "wrong term"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    res = imp.read_biastestgpt_csv(buf.getvalue().encode(), name="s.csv")
    assert res.discarded == 2 and len(res.sentences) == 804


def test_unknown_csv_is_refused():
    with pytest.raises(DataError) as exc:
        imp.read_biastestgpt_csv(b"a,b\n1,2\n", name="x.csv")
    assert exc.value.message == imp.MSG_UNKNOWN_CSV.format(
        name="x.csv", pairs=", ".join(imp.PAIRS_COLUMNS), sentences=", ".join(imp.SENTENCES_COLUMNS))
    with pytest.raises(DataError) as exc:
        imp.read_crows_pairs(b"sent_more,sent_less\nx,y\n", name="c.csv")
    assert exc.value.message == imp.MSG_MISSING_COLUMNS.format(
        name="c.csv", kind="CrowS-Pairs", missing="stereo_antistereo, bias_type", expected=", ".join(imp.CROWS_COLUMNS))


# --------------------------------------------------------------- CrowS-Pairs
def test_crows_pairs_direction_as_the_metric(shared_data):
    path = shared_data / "crows_pairs" / "crows_pairs_anonymized.csv"
    res = imp.read_crows_pairs(path)
    rows = _rows(path)
    assert res.rows_read == len(rows) == 1508 and len(res.pairs) == 1508
    directions = Counter()
    for pair, row in zip(res.pairs, rows, strict=True):
        # nyu-mll/crows-pairs metric.py, re-implemented naively: read_data() ...
        if row["stereo_antistereo"] == "stereo":
            sent1, sent2 = row["sent_more"], row["sent_less"]
        else:
            sent1, sent2 = row["sent_less"], row["sent_more"]
        # ... and the scoring: a 'stereo' pair counts as biased when sent1 wins, an 'antistereo' pair when sent2 wins
        biased_choice = sent1 if row["stereo_antistereo"] == "stereo" else sent2
        other = sent2 if biased_choice == sent1 else sent1
        assert pair.stereotyped == biased_choice and pair.anti_stereotyped == other
        assert pair.category == row["bias_type"]
        assert pair.provenance["crows_direction"] == row["stereo_antistereo"]
        directions[row["stereo_antistereo"]] += 1
    assert directions == {"stereo": 1290, "antistereo": 218}
    anti = [p for p in res.pairs if p.provenance["crows_direction"] == "antistereo"]
    example = next(p for p in anti if p.anti_stereotyped.startswith("The woman was highly skilled in CAD"))
    assert example.stereotyped.startswith("The man was highly skilled in CAD")
    assert Counter(p.category for p in res.pairs)["race-color"] == 516


# ----------------------------------------------------------------- StereoSet
def test_stereoset_intrasentence_gold_labels(shared_data):
    path = shared_data / "stereoset" / "dev.json"
    res = imp.read_stereoset_intrasentence(path)
    items = json.loads(path.read_text())["data"]["intrasentence"]
    assert res.rows_read == len(items) == 2106
    assert len(res.pairs) + res.skipped[imp.SKIP_GOLD] == 2106
    by_id = {p.provenance["stereoset_id"]: p for p in res.pairs}
    for ex in items:
        gold = {s["gold_label"]: s["sentence"] for s in ex["sentences"]}
        if "stereotype" not in gold or "anti-stereotype" not in gold:
            continue
        p = by_id[ex["id"]]
        assert (p.stereotyped, p.anti_stereotyped) == (gold["stereotype"], gold["anti-stereotype"])
        assert p.provenance["unrelated"] == gold.get("unrelated", "")
        assert p.category == ex["bias_type"] and p.group_term_stereotyped == ex["target"]
    first = by_id["fdc01ba6042b41f0c894cdccc149f5b4"]  # "The chess player was BLANK."
    assert first.provenance["stereotype_word"] == "asian" and first.provenance["anti_stereotype_word"] == "hispanic"


def test_import_file_auto_detects_each_kind(shared_data, tmp_path):
    store = DatasetStore(tmp_path)
    r1 = imp.import_file(store, shared_data / "crows_pairs" / "crows_pairs_anonymized.csv")
    r2 = imp.import_file(store, shared_data / "biastestgpt" / "gpt-3.5-shots-5-2_pairs.csv")
    assert (r1.kind, r2.kind) == ("crows-pairs", "biastestgpt-pairs")
    assert store.count("pairs") == len({p.id for p in r1.pairs} | {p.id for p in r2.pairs})
    with pytest.raises(DataError) as exc:
        imp.import_file(store, b"x", kind="nope")
    assert exc.value.message == imp.MSG_UNKNOWN_KIND.format(
        kind="nope", choices="auto, biastestgpt, biastestgpt-pairs, biastestgpt-sentences, crows-pairs, stereoset")


# ------------------------------------------------------ public dataset pull
def _public_csv(group_term: str, n: int) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["Group term", "Attribute term", "Test sentence", "type", "gen_model"])
    for i in range(n):
        w.writerow([group_term, "math", f"The {group_term} solved math problem {i}.", "paper", "gpt-3.5"])
    return buf.getvalue().encode()


def test_public_pull_offline_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASTEST_HF_DATASET", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    store = DatasetStore(tmp_path)
    st = imp.pull_public_biastestgpt(store)
    assert (st.status, st.message, st.ok) == (imp.PULL_OFFLINE, imp.MSG_PULL_OFFLINE, False)
    # no connection at all (offline mode off, nothing listening)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    st = imp.pull_public_biastestgpt(store, endpoint="http://127.0.0.1:9")
    assert (st.status, st.message) == (imp.PULL_OFFLINE, imp.MSG_PULL_OFFLINE)
    assert store.count("sentences") == 0


def test_public_pull_skipped_when_own_dataset_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASTEST_HF_DATASET", "me/my-data")
    st = imp.pull_public_biastestgpt(DatasetStore(tmp_path))
    assert st.status == imp.PULL_CONFIGURED
    assert st.message == imp.MSG_PULL_CONFIGURED.format(dataset="me/my-data")


def test_public_pull_through_the_stub_hub(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASTEST_HF_DATASET", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    store = DatasetStore(tmp_path / "store")
    with StubHub() as hub:
        repo = imp.PUBLIC_BIASTESTGPT_REPO
        hub.add_file(repo, "data/man.csv", _public_csv("man", 5))
        hub.add_file(repo, "data/woman.csv", _public_csv("woman", 7))
        hub.add_file(repo, "README.md", b"# public")
        st = imp.pull_public_biastestgpt(store, endpoint=hub.url)
        assert (st.status, st.files_new, st.rows_added) == (imp.PULL_DONE, 2, 12)
        assert st.message == imp.MSG_PULL_DONE.format(rows=12, files=2, repo=repo)
        assert store.count("sentences") == 12
        assert {s.source for s in store.sentences()} == {f"imported:{repo}"}
        # read-only: the public shards are never pushed to the user's own dataset
        assert HubSync(store, repo_id="me/mine", token="t", endpoint=hub.url).pending() == []
        # a second pull downloads nothing; a changed file is pulled again (dedup keeps rows once)
        assert imp.pull_public_biastestgpt(store, endpoint=hub.url).status == imp.PULL_UP_TO_DATE
        hub.add_file(repo, "data/man.csv", _public_csv("man", 6))
        st = imp.pull_public_biastestgpt(store, endpoint=hub.url)
        assert (st.status, st.files_new, st.rows_added) == (imp.PULL_DONE, 1, 1)
        assert store.count("sentences") == 13
