"""Downloads a spreadsheet reads right (issue 28, item 7): UTF-8 byte-order mark, numbers rounded to what they mean
(the JSON keeps every digit), names ``biastest-<app>-<model>-<date>.csv``, and counts in words ("1 cluster")."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from biastest.report import export
from biastest.report.export import column_kind, download_name, round_cell, safe_name, write_csv, write_json
from biastest.words import plural, plural_word

BOM = b"\xef\xbb\xbf"


def test_a_csv_for_people_starts_with_the_bom_and_reads_back_with_its_signs(tmp_path) -> None:
    rows = [{"measure": "magnitude: mean Δ log-prob (stereotyped − anti)", "estimate": 1.23456789, "unit": "nats"},
            {"measure": "√ stereotype score", "estimate": 56.4321, "unit": "%", "p_value": 0.0004261, "n_pairs": 35}]
    path = write_csv(rows, tmp_path / "a.csv")
    raw = path.read_bytes()
    assert raw.startswith(BOM) and raw.count(BOM) == 1
    got = list(csv.DictReader(path.open(encoding="utf-8-sig")))
    assert list(got[0]) == ["measure", "estimate", "unit", "p_value", "n_pairs"]  # no BOM in the first header
    assert got[0]["measure"] == rows[0]["measure"] and got[1]["measure"] == "√ stereotype score"
    assert (got[0]["estimate"], got[1]["estimate"], got[1]["p_value"], got[1]["n_pairs"]) == (
        "1.235", "56.43", "0.00043", "35")


def test_a_csv_for_programs_and_the_json_keep_every_digit(tmp_path) -> None:
    rows = [{"estimate": 1.23456789, "p_value": 0.0004261234}]
    raw = write_csv(rows, tmp_path / "b.csv", for_people=False).read_bytes()
    assert not raw.startswith(BOM)
    assert next(iter(csv.DictReader(raw.decode("utf-8").splitlines()))) == {"estimate": "1.23456789",
                                                                           "p_value": "0.0004261234"}
    assert json.loads(write_json(rows, tmp_path / "b.json").read_text(encoding="utf-8")) == rows


@pytest.mark.parametrize(("column", "row", "value", "want"), [
    # p-values: as the reports print them (two significant digits below 0.001, else three decimals)
    ("p_value", None, 0.000123456, 0.00012), ("p_value", None, 0.04261, 0.043), ("p_holm", None, 0.5, 0.5),
    ("q_bh", None, 1.0, 1.0), ("p_two_sided", None, 0.12345, 0.123), ("p_value", None, 0.0, 0.0),
    # percentages: two decimals (a row's estimate and interval when its unit is %, or a *_percent column)
    ("estimate", {"unit": "%"}, 56.4321, 56.43), ("ci_high", {"unit": "%"}, 99.999, 100.0),
    ("female_percent", None, 12.3456, 12.35), ("p_stereotyped", None, 0.518234, 0.5182),
    # every other number: four significant digits, the whole part kept
    ("estimate", {"unit": "nats"}, 56.4321, 56.43), ("difference", None, -0.000123456, -0.0001235),
    ("difference", None, -12.34567, -12.35), ("design_effect", None, 0.79321, 0.7932),
    ("seconds", None, 123456.789, 123457.0), ("confidence", None, 0.95, 0.95), ("difference", None, -0.00001, -1e-05),
    # whole numbers, text, booleans and missing values are not touched
    ("n_pairs", None, 123456, 123456), ("seed", None, 42, 42), ("model_id", None, "gpt2", "gpt2"),
    ("verdict", None, None, None), ("flag", None, True, True),
])
def test_rounding_by_column_kind(column, row, value, want) -> None:
    got = round_cell(column, value, row)
    assert got == want and type(got) is type(want)


def test_column_kinds_and_the_documented_rule() -> None:
    assert [column_kind(c) for c in ("p_value", "p_holm", "q_bh", "p_exact", "weat_p_value")] == ["p-value"] * 5
    assert column_kind("ci_low", {"unit": "%"}) == "percent" and column_kind("ci_low", {"unit": "nats"}) == "number"
    assert set(export.CSV_ROUNDING) == {"p-value", "percent", "number"}
    assert round_cell("difference", -0.0) == 0.0 and str(round_cell("difference", -1e-20 * 0)) == "0.0"


def test_the_stereotype_download_is_named_and_rounded(tmp_path) -> None:
    from biastest.measures.stereotype.report import export_files
    from biastest.measures.stereotype.result import StereotypeResult
    from tests.test_measure_stereotype import RESULTS

    result = StereotypeResult.load_json(RESULTS / "stereotype-0.1.0-template.json")
    csv_path, json_path = export_files(result, directory=tmp_path)
    day = str(result.provenance["created_at"])[:10]
    assert csv_path.name == f"biastest-gpt-{safe_name(result.model_id)}-{day}.csv"
    assert json_path.name == csv_path.name[:-4] + ".json"
    assert csv_path.read_bytes().startswith(BOM)
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8-sig")))
    summary = [r for r in rows if r["row_type"] == "summary" and r["unit"] == "%"]
    assert summary and all(len(r["estimate"].split(".")[-1]) <= 2 for r in summary)
    # the JSON keeps the full precision of the result
    assert json.loads(json_path.read_text(encoding="utf-8"))["overall"]["score"] == result.overall.score


@pytest.mark.parametrize(("model", "want"), [
    ("openai-community/gpt2", "openai-community-gpt2"),
    ("../../etc/passwd", "etc-passwd"),
    ("C:\\Users\\me\\model", "C-Users-me-model"),
    ("", "model"),
    ("   ", "model"),
    ("...", "model"),
    ("模型", "model"),
    ("Café ☕ v2", "Cafe-v2"),
    ("a" * 100 + "/tail", ("a" * 100 + "-tail")[-60:]),
    ("name\nwith\r\nlines\t<>|?*\"", "name-with-lines-"),
    ("http://127.0.0.1:8000/v1 model", "http-127.0.0.1-8000-v1-model"),
])
def test_download_names_survive_hostile_model_names(model, want) -> None:
    name = download_name("gpt", model, when="2026-11-27T22:00:00+00:00")
    assert name == f"biastest-gpt-{want.strip('.-')}-2026-11-27.csv"
    assert re.fullmatch(r"biastest-gpt-[A-Za-z0-9._-]+-2026-11-27\.csv", name)
    assert ".." not in name and "/" not in name and "\\" not in name and len(name) < 120


def test_download_name_parts_and_dates() -> None:
    import datetime as dt

    assert download_name("psychophysics", "glove", when=dt.date(2026, 1, 2), part="weat", ext="json") == (
        "biastest-psychophysics-glove-2026-01-02-weat.json")
    assert download_name("vqa", "m", when="not a date").startswith("biastest-vqa-m-20")
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert download_name("gpt", "m") in (f"biastest-gpt-m-{today}.csv",
                                          f"biastest-gpt-m-{(dt.date.fromisoformat(today)).isoformat()}.csv")


# ------------------------------------------------------------------- plurals
def test_plural_helper() -> None:
    assert [plural(n, "cluster") for n in (0, 1, 2)] == ["0 clusters", "1 cluster", "2 clusters"]
    assert plural(1, "independent cluster") == "1 independent cluster"
    assert plural(2, "sentence pair") == "2 sentence pairs" and plural(1500, "pair") == "1,500 pairs"
    assert [plural_word(2, w) for w in ("analysis", "category", "box", "day", "match")] == [
        "analyses", "categories", "boxes", "days", "matches"]
    assert plural(2, "person", "people") == "2 people"


def _one_plural(text: str) -> list[str]:
    """Places where a count of one is followed by a plural noun ("1 clusters")."""
    return re.findall(r"(?<![\d.,])1 (?:independent )?(?:clusters|items|pairs|images|cells|combinations|rows|"
                      r"sentences|sentence pairs)\b", text)


def test_messages_say_one_in_the_singular() -> None:
    from biastest.audit.run import MSG_SUMMARY, AuditSummary
    from biastest.measures.stereotype.run import MSG_PROGRESS_DONE
    from biastest.stats.clusters import MSG_TOO_FEW_CLUSTERS
    from biastest.store.importers import ImportResult

    too_few = MSG_TOO_FEW_CLUSTERS.format(items=plural(1, "item"), clusters=plural(1, "independent cluster"),
                                          cluster_by="template", minimum=5)
    assert _one_plural(too_few) == [] and "1 independent cluster (" in too_few
    assert _one_plural(MSG_PROGRESS_DONE.format(n_scored=1, pairs=plural(1, "pair"))) == []
    imported = ImportResult("crows-pairs", "x.csv", (), (object(),), 1, 0, {}).message  # type: ignore[arg-type]
    assert imported.startswith("Imported 1 sentence pair from x.csv (1 row read") and _one_plural(imported) == []
    audit = AuditSummary(name="g", out=Path("o"), cells=1, reused=0, computed=1, failed=0, skipped=1,
                         table=Path("t")).message()
    assert "1 cell (" in audit and "1 combination left out" in audit and _one_plural(audit) == []
    assert MSG_SUMMARY.count("{cells}") == 1


def test_the_cluster_summary_says_one_cluster() -> None:
    import numpy as np

    from biastest.stats.clusters import summarize_clusters

    s = summarize_clusters(np.array([1.0, 0.0, 1.0]), ["a", "a", "a"], cluster_by="template", n_resamples=100,
                           seed=1)
    assert s.reason is not None and "only 1 independent cluster (template)" in s.reason
    assert _one_plural(s.reason) == []
