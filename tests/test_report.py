"""Safe exports and figure helpers."""

from __future__ import annotations

import csv
import json

from biastest.report.export import neutralise_cell, private_dir, write_csv, write_json
from biastest.report.figures import hover_safe, item_grid, score_bars


def test_formula_cells_are_neutralised_and_numbers_kept(tmp_path):
    rows = [
        {
            "a": '=HYPERLINK("http://x")',
            "b": -3.5,
            "c": "+1",
            "d": "@SUM(A1)",
            "e": "-x",
            "f": "<script>alert(1)</script>",
        },
        {"a": "plain", "b": 2, "c": None, "d": "\tTAB", "e": float("nan"), "f": {"k": [1, 2]}},
    ]
    path = write_csv(rows, tmp_path / "x.csv")
    got = list(csv.DictReader(path.open()))
    assert got[0]["a"] == '\'=HYPERLINK("http://x")'
    assert got[0]["b"] == "-3.5"
    assert got[0]["c"] == "'+1" and got[0]["d"] == "'@SUM(A1)" and got[0]["e"] == "'-x"
    assert got[0]["f"] == "<script>alert(1)</script>"
    assert got[1]["d"] == "'\tTAB" and got[1]["e"] == "" and json.loads(got[1]["f"]) == {"k": [1, 2]}
    assert neutralise_cell(-1) == -1


def test_json_export_has_no_nan(tmp_path):
    import numpy as np

    path = write_json({"x": float("nan"), "y": np.float32(1.5), "z": [np.int64(2)]}, tmp_path / "r.json")
    assert json.loads(path.read_text()) == {"x": None, "y": 1.5, "z": [2]}


def test_private_dirs_are_distinct():
    assert private_dir() != private_dir()


def test_hover_text_is_escaped():
    assert hover_safe("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    fig = item_grid(
        x=["<b>nurse</b>"],
        y=["1"],
        color=[0.3],
        hover=[{"Stereotyped": "<script>x</script>", "Δ log-prob": 0.3}],
        title="t",
        x_title="x",
        y_title="y",
        color_title="c",
    )
    tr = fig.data[0]
    assert "&lt;script&gt;" in tr.customdata[0][0]
    assert tr.x[0] == "&lt;b&gt;nurse&lt;/b&gt;"


def test_score_bars_keep_missing_scores_missing():
    fig = score_bars(
        [
            {"label": "a", "score": 60.0, "ci_low": 50.0, "ci_high": 70.0, "n": 10},
            {"label": "b", "score": None, "n": 0},
        ],
        title="t",
    )
    assert list(fig.data[0].x) == [60.0, None]
