"""Hostile data (issue 27): names, grids, audit folders and imported files a user or a Hub hands us.

Every case here failed on the commit before the fix (a file read outside its folder, "Unexpected error", a
crash, memory or output without bound, a silent wrong answer). Everything runs on loopback (the stub Hub of
tests/hub_stub.py) and in temp folders; the audits are tiny WEAT audits on GloVe 6B 50d.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from biastest.audit import grid as g
from biastest.audit import parse_grid, run_audit
from biastest.audit import report as rep_audit
from biastest.audit.run import MSG_CELL_DAMAGED, CellStore
from biastest.audit.safe_yaml import MSG_YAML_ALIAS, MSG_YAML_DUPLICATE_KEY
from biastest.cli import MSG_UNEXPECTED, main
from biastest.paths import MSG_UNSAFE_NAME, UnsafeNameError, resolve_under
from biastest.store import importers as imp

SPEC = "WEAT 7: Math vs arts, male vs female terms"
MODELS = "models: [{name: glove, kind: embeddings, id: glove-6b-50d}]\nspecs: ['" + SPEC + "']\n"
UNSAFE_HEAD = MSG_UNSAFE_NAME.split("'{name}'")[0]


def _cli(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err


# --------------------------------------------------------------------------- one helper for names from data
@pytest.mark.parametrize("name", ["../x", "a/../../x", "..", "a/..", "/etc/passwd", "C:\\x", "\\\\srv\\share",
                                  "..\\x", "", "a\x00b", None, 5])
def test_a_name_from_data_that_leaves_its_folder_is_refused_with_the_one_message(name, tmp_path) -> None:
    with pytest.raises(UnsafeNameError) as exc:
        resolve_under(tmp_path, name, source="a test")
    assert exc.value.message.startswith(UNSAFE_HEAD) and len(exc.value.message) < 400


def test_a_link_out_of_the_folder_is_refused_and_a_plain_name_is_kept(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "secret.json").write_text("{}")
    (tmp_path / "in" / "link.json").symlink_to(tmp_path / "secret.json")
    with pytest.raises(UnsafeNameError):
        resolve_under(tmp_path / "in", "link.json", source="a test")
    assert resolve_under(tmp_path / "in", "sub/ok.json", source="a test") == tmp_path / "in" / "sub" / "ok.json"
    long = "../" + "x" * 5000
    with pytest.raises(UnsafeNameError) as exc:
        resolve_under(tmp_path, long, source="a test")
    assert len(exc.value.message) < 400  # at most ~80 characters of the name are quoted


# --------------------------------------------------------------------------- the audit grid
def _grid(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _grid_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(g.GridError) as exc:
        g.load_grid(_grid(tmp_path, text))
    return exc.value.message


BOMB = ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nmodels: [{name: m, kind: *e}]\nspecs: [x]\n")


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path) -> None:
    started = time.monotonic()
    message = _grid_error(tmp_path, BOMB)
    assert message.startswith(MSG_YAML_ALIAS.split("(")[0].format(path=tmp_path / "grid.yaml"))
    assert len(message) < 400 and time.monotonic() - started < 5


def test_a_single_anchor_and_alias_are_refused(tmp_path) -> None:
    text = "models: &m [{name: glove, kind: embeddings, id: glove-6b-50d}]\nspecs: ['" + SPEC + "']\nx: *m\n"
    assert "anchor or alias" in _grid_error(tmp_path, text)


@pytest.mark.parametrize(("text", "key"), [
    (MODELS + "models: [{name: other, kind: embeddings, id: glove-6b-50d}]\n", "models"),
    ("models: [{name: a, kind: embeddings, id: glove-6b-50d, name: b}]\nspecs: ['" + SPEC + "']\n", "name"),
    (MODELS + "options: {n_permutations: 200, n_permutations: 300}\n", "n_permutations"),
])
def test_a_key_given_twice_is_refused_not_the_last_one_kept(text, key, tmp_path) -> None:
    message = _grid_error(tmp_path, text)
    assert message.startswith(MSG_YAML_DUPLICATE_KEY.split("'{key}'")[0].format(path=tmp_path / "grid.yaml"))
    assert f"'{key}'" in message


@pytest.mark.parametrize("value", ["9" * 5000, "1" + "0" * 400, "-" + "9" * 30])
@pytest.mark.parametrize("where", ["seeds: [{v}]", "options: {{n_permutations: {v}}}", "resources: {{memory: {v}}}"])
def test_an_over_long_integer_is_a_grid_mistake_not_an_unexpected_error(value, where, tmp_path, capsys) -> None:
    path = _grid(tmp_path, MODELS + where.format(v=value) + "\n")
    code, err = _cli(["audit", path, "--out", tmp_path / "out", "--no-progress"], capsys)
    assert code == 2 and "too long to use" in err and len(err) < 600
    assert MSG_UNEXPECTED.split("(")[0] not in err


def test_a_grid_over_the_size_limit_is_refused_before_it_is_read(tmp_path) -> None:
    text = MODELS + "name: '" + "n" * (g.MAX_GRID_BYTES + 10) + "'\n"
    message = _grid_error(tmp_path, text)
    assert message.startswith(MSG_UNEXPECTED[:0] + f"The grid file '{tmp_path / 'grid.yaml'}' is ")
    assert len(message) < 300


@pytest.mark.parametrize("text", [
    "models: [{name: glove, kind: '" + "x" * 500_000 + "'}]\nspecs: [a]\n",
    MODELS + "methods: ['" + "m" * 500_000 + "']\n",
    MODELS + "seeds: ['" + "9" * 500_000 + "']\n",
    MODELS + "resources: {memory: '" + "4" * 500_000 + "GB'}\n",
])
def test_a_huge_value_is_quoted_by_its_start_only(text, tmp_path, capsys) -> None:
    code, err = _cli(["audit", _grid(tmp_path, text), "--out", tmp_path / "out", "--no-progress"], capsys)
    assert code == 2 and 0 < len(err) < 1000


# --------------------------------------------------------------------------- audit folders: reruns and report
@pytest.fixture(scope="module")
def audit_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-audit")
    doc = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC],
           "seeds": [7, 8], "options": {"n_permutations": 200}}
    (root / "grid.yaml").write_text(json.dumps(doc), encoding="utf-8")
    summary = run_audit(root / "grid.yaml", root / "base", progress=False)
    assert summary.computed == 2
    return root


def _copy(audit_folder: Path, tmp_path: Path) -> Path:
    out = tmp_path / "audit"
    shutil.copytree(audit_folder / "base", out, symlinks=True)
    return out


def _cells(out: Path) -> list[Path]:
    return sorted((out / "cells").glob("*.json"))


def _rerun(audit_folder: Path, out: Path, capsys) -> tuple[int, str]:
    return _cli(["audit", audit_folder / "grid.yaml", "--out", out, "--no-progress"], capsys)


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", '{"status": "done"}', "KEY_ONLY", "", "LINK"])
def test_a_damaged_cell_is_computed_again_and_said_so(damage, audit_folder, tmp_path, capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    cell = _cells(out)[0]
    key = cell.stem
    good = json.loads(cell.read_text())
    if damage == "LINK":  # a link to a valid document elsewhere: never followed
        outside = tmp_path / "outside.json"
        outside.write_text(cell.read_text())
        cell.unlink()
        cell.symlink_to(outside)
    elif damage == "KEY_ONLY":
        cell.write_text(json.dumps({"key": key, "status": "done", "cell": good["cell"]}))
    else:
        cell.write_text(damage)
    code, err = _rerun(audit_folder, out, capsys)
    assert code == 0, err
    assert MSG_CELL_DAMAGED.split("'{path}'")[0] in err and key in err
    assert not cell.is_symlink()
    again = json.loads(cell.read_text())
    assert again["status"] == "done" and again["result"]["effect_size"] == good["result"]["effect_size"]
    table = pd.read_parquet(out / "results.parquet")
    assert list(table["status"]) == ["done", "done"]
    assert CellStore(out).problem(key) is None


def test_a_tampered_table_is_rebuilt_from_the_cell_files(audit_folder, tmp_path, capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    before = pd.read_parquet(out / "results.parquet")
    (out / "results.parquet").write_bytes(b"garbage")
    (out / "results.csv").write_text("key\n../../x\n")
    code, err = _rerun(audit_folder, out, capsys)
    assert code == 0, err
    after = pd.read_parquet(out / "results.parquet")
    assert list(after["key"]) == list(before["key"]) and list(after["score"]) == list(before["score"])


def test_a_folder_in_the_place_of_the_table_is_a_message_not_an_unexpected_error(audit_folder, tmp_path,
                                                                                  capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    (out / "results.parquet").unlink()
    (out / "results.parquet").mkdir()
    code, err = _rerun(audit_folder, out, capsys)
    assert code != 0 and "results.parquet" in err and MSG_UNEXPECTED.split("(")[0] not in err


def _report(out: Path, capsys) -> tuple[int, str]:
    return _cli(["report", out], capsys)


def test_report_never_follows_a_row_key_out_of_the_folder(audit_folder, tmp_path, capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    _first, second = _cells(out)
    secret = json.loads(second.read_text())
    secret["result"]["x"] = ["OUTSIDE-SECRET-WORD"]
    (tmp_path / "outside_secret.json").write_text(json.dumps(secret))
    frame = pd.read_parquet(out / "results.parquet")
    frame.loc[frame["key"] == second.stem, "key"] = "../../outside_secret"
    frame["seed"] = frame["seed"].iloc[0]  # both rows in one comparison group: the report reads both cells
    frame.to_parquet(out / "results.parquet", index=False)
    code, err = _report(out, capsys)
    assert code == 2 and err.strip().startswith(UNSAFE_HEAD.split("'")[0])
    assert "outside_secret" in err and not (out / "report.html").exists()


def _csv_with(out: Path, column: str, value: str) -> None:
    (out / "results.parquet").unlink()
    with (out / "results.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[0][column] = value
    with (out / "results.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _parquet_with(out: Path, column: str, value) -> None:
    frame = pd.read_parquet(out / "results.parquet")
    frame[column] = frame[column].astype("object" if isinstance(value, str) else "float64")
    if isinstance(value, str):
        frame[column] = frame[column].astype(str)
    frame.loc[0, column] = value
    frame.to_parquet(out / "results.parquet", index=False)


@pytest.mark.parametrize(("tamper", "names"), [
    (lambda out: _csv_with(out, "seed", "nan"), "results.csv"),
    (lambda out: _csv_with(out, "seed", "inf"), "results.csv"),
    (lambda out: _csv_with(out, "n_scored", "-inf"), "results.csv"),
    (lambda out: _parquet_with(out, "score", "abc"), "results.parquet"),
    (lambda out: _parquet_with(out, "seed", float("inf")), "results.parquet"),
    (lambda out: _parquet_with(out, "seed", 7.5), "results.parquet"),
    (lambda out: ((out / "results.parquet").write_bytes(b"garbage"), (out / "results.csv").unlink()),
     "results.parquet"),
    (lambda out: (out / "audit.json").write_text("[1, 2]"), "audit.json"),
    (lambda out: (out / "audit.json").write_text('"text"'), "audit.json"),
    (lambda out: _cells(out)[0].write_text("{not json"), ".json"),
    (lambda out: _cells(out)[0].write_text('{"status": "done", "result": [1]}'), ".json"),
])
def test_report_validates_rows_and_cells_and_names_the_bad_file(tamper, names, audit_folder, tmp_path,
                                                                capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    if names == ".json":  # both cells in one comparison group, so the report reads the cell files
        frame = pd.read_parquet(out / "results.parquet")
        frame["seed"] = frame["seed"].iloc[0]
        frame.to_parquet(out / "results.parquet", index=False)
    tamper(out)
    code, err = _report(out, capsys)
    assert code == 2, err
    assert names in err and MSG_UNEXPECTED.split("(")[0] not in err and len(err) < 1000


def test_report_of_an_untouched_folder_still_works(audit_folder, tmp_path, capsys) -> None:
    out = _copy(audit_folder, tmp_path)
    code, err = _report(out, capsys)
    assert code == 0 and (out / "report.html").is_file(), err
    assert rep_audit.MSG_BAD_ROW  # the message exists for the cases above


# --------------------------------------------------------------------------- the shared dataset on the Hub
@pytest.fixture
def stub(online):
    from tests.hub_stub import StubHub

    with StubHub(page_size=3) as hub:
        yield hub


def _push_one(tmp_path: Path, stub) -> tuple[object, str]:
    from biastest.records import TestSentence
    from biastest.store.hub import HubSync
    from biastest.store.local import DatasetStore

    store = DatasetStore(tmp_path / "a")
    store.add([TestSentence("The man likes math.", "man", "math", source="test")])
    sync = HubSync(store, repo_id="stub-user/bias-data", token="hf_stub_token", endpoint=stub.url, backoff_s=0.01)
    assert sync.push_now().ok
    shard = next(p for p in stub.repo("stub-user/bias-data").files if p.startswith("data/sentences/"))
    return stub.repo("stub-user/bias-data").files[shard], shard


@pytest.mark.parametrize("bad", ["data/sentences/../../evil.parquet", "data/sentences/../../../evil.parquet"])
def test_a_hub_file_named_with_dots_is_skipped_and_named_and_the_pull_goes_on(bad, tmp_path, stub) -> None:
    from biastest.store.hub import HubSync
    from biastest.store.local import DatasetStore

    data, shard = _push_one(tmp_path, stub)
    stub.add_file("stub-user/bias-data", bad, data)
    fresh = DatasetStore(tmp_path / "b" / "store")
    report = HubSync(fresh, repo_id="stub-user/bias-data", endpoint=stub.url).pull()
    assert report.ok, report.message
    assert shard in report.downloaded and len(fresh.sentences()) == 1
    assert len(report.skipped) == 1 and "evil.parquet" in report.message and UNSAFE_HEAD in report.skipped[0]
    assert not list(tmp_path.rglob("evil.parquet"))


def test_an_image_path_with_dots_in_a_hub_shard_is_skipped(tmp_path, stub) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from biastest.store.hub import HubSync
    from biastest.store.local import DatasetStore

    _data, shard = _push_one(tmp_path, stub)
    buf = io.BytesIO()
    pq.write_table(pa.table({"path": ["images/../../evil.png"]}), buf)
    stub.add_file("stub-user/bias-data", "data/images/evil-shard.parquet", buf.getvalue())
    stub.add_file("stub-user/bias-data", "images/../../evil.png", b"png")
    fresh = DatasetStore(tmp_path / "b" / "store")
    report = HubSync(fresh, repo_id="stub-user/bias-data", endpoint=stub.url).pull()
    assert report.ok, report.message
    assert shard in report.downloaded and "evil.png" in report.message
    assert not list(tmp_path.rglob("evil.png"))


def test_a_public_csv_named_with_dots_is_skipped_and_the_rest_is_pulled(tmp_path, stub) -> None:
    from biastest.store.local import DatasetStore

    good = b"Test sentence,Group term,Attribute term\nThe man likes math.,man,math\n"
    stub.add_file("pub/sents", "../../evil.csv", good)
    stub.add_file("pub/sents", "good.csv", good)
    store = DatasetStore(tmp_path / "store")
    got = imp.pull_public_biastestgpt(store, repo_id="pub/sents", endpoint=stub.url, configured_dataset="")
    assert got.ok and got.files_new == 1 and len(store.sentences()) == 1
    assert not list(tmp_path.rglob("evil.csv"))


# --------------------------------------------------------------------------- importers
GOOD = {"id": "x", "target": "chess player", "bias_type": "profession", "context": "The chess player was BLANK.",
        "sentences": [{"sentence": "The chess player was hispanic.", "gold_label": "anti-stereotype"},
                      {"sentence": "The chess player was asian.", "gold_label": "stereotype"},
                      {"sentence": "The chess player was fox.", "gold_label": "unrelated"}]}


def _stereoset(*examples) -> bytes:
    return json.dumps({"version": "1", "data": {"intrasentence": list(examples)}}).encode()


@pytest.mark.parametrize("bad", [
    {**GOOD, "sentences": None},
    {**GOOD, "sentences": [1, 2]},
    {**GOOD, "sentences": [{"sentence": 5, "gold_label": "stereotype"},
                           {"sentence": "a b", "gold_label": "anti-stereotype"}]},
    {**GOOD, "sentences": [{"sentence": "x", "gold_label": ["stereotype"]}]},
    [1],
    None,
    "text",
])
def test_a_malformed_stereoset_example_is_skipped_with_a_count(bad, tmp_path) -> None:
    result = imp.read_stereoset_intrasentence(_stereoset(GOOD, bad, {**GOOD, "target": None}), name="dev.json")
    assert len(result.pairs) == 2 and result.rows_read == 3
    assert sum(result.skipped.values()) == 1 and "1 skipped:" in result.message


def test_stereoset_target_null_imports_through_the_cli_reader_and_the_store(tmp_path) -> None:
    from biastest.runner.services import import_pairs
    from biastest.store.local import DatasetStore

    path = tmp_path / "dev.json"
    path.write_bytes(_stereoset({**GOOD, "target": None, "context": None, "id": None}, GOOD))
    assert len(import_pairs(path, fmt="auto", spec=None)) == 2
    assert len(imp.import_file(DatasetStore(tmp_path / "s"), path).pairs) == 2


@pytest.mark.parametrize("text", [
    ",sent_more,sent_less,stereo_antistereo,bias_type\n0,A man.\n1,A man.,A woman.,stereo,gender\n",
    ",sent_more,sent_less,stereo_antistereo,bias_type\n0,A man.,A woman.,sideways,gender\n"
    "1,A man.,A woman.,stereo,gender\n",
    ",sent_more,sent_less,stereo_antistereo,bias_type\n0,,A woman.,stereo,gender\n1,A man.,A woman.,stereo,gender\n",
])
def test_a_malformed_crows_pairs_row_is_skipped_with_a_count(text) -> None:
    result = imp.read_crows_pairs(text.encode(), name="crows.csv")
    assert len(result.pairs) == 1 and sum(result.skipped.values()) == 1 and "1 skipped:" in result.message


def test_parse_grid_keeps_working_on_plain_documents(tmp_path) -> None:
    grid = parse_grid({"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC]},
                      base=tmp_path)
    assert [m.name for m in grid.models] == ["glove"]
