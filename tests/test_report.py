"""Safe exports and figure helpers."""

from __future__ import annotations

import csv
import json

import pytest

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
    got = list(csv.DictReader(path.open(encoding="utf-8-sig")))
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


def _lm_result(verdicts: list[str], attributes: list[str], *, clusters: str = "pair", confidence: float = 0.95):
    """A small result from verdicts; pairs independent unless ``clusters`` says otherwise."""
    from biastest.measures.stereotype.result import PairScore
    from biastest.measures.stereotype.summary import summarize_stereotype

    diff = {"stereotyped": 1.0, "anti-stereotyped": -1.0, "tie": 0.0}
    scores = [
        PairScore(index=i, pair_id=f"p{i}", stereotyped=f"He likes {a}.", anti_stereotyped=f"She likes {a}.",
                  attribute_term=a, group_term_stereotyped="he", group_term_anti="she", category="c", source="test",
                  score_stereotyped=diff[v], score_anti=0.0, difference=diff[v], verdict=v)
        for i, (v, a) in enumerate(zip(verdicts, attributes, strict=True))
    ]
    return summarize_stereotype(scores, model={"model_id": "m", "model_kind": "causal"}, method="causal-sum",
                                seed=0, n_resamples=1000, clusters=clusters, confidence=confidence)


def test_few_pairs_are_not_read_as_evidence_when_the_bootstrap_degenerates():
    from biastest.measures.stereotype import report as rep

    few = _lm_result(["stereotyped"] * 4, ["math", "algebra", "poetry", "dance"])
    assert (few.overall.ci_low, few.overall.ci_high) == (100.0, 100.0)  # resampling alike verdicts
    text = rep.interpretation(few)
    assert "cannot tell" in text and "exact sign test" in text and "evidence" not in text
    summary = rep.summary_markdown(few)
    assert "exact (Clopper–Pearson) 95 % interval 39.8–100.0 %" in summary
    assert rep.MSG_MACRO_SINGLE_PAIR_TERMS.format(count=4, total=4) in summary
    many = _lm_result(["stereotyped"] * 38 + ["anti-stereotyped"] * 2, ["math", "poetry"] * 20)
    assert "evidence of a strong preference for stereotypes" in rep.interpretation(many)
    assert "single pair" not in rep.summary_markdown(many)


def test_per_term_bars_show_exact_intervals():
    from biastest.measures.stereotype import report as rep
    from biastest.stats.proportion import exact_interval

    verdicts = ["stereotyped", "stereotyped", "anti-stereotyped", "stereotyped"]
    result = _lm_result(verdicts, ["math", "math", "math", "art"])
    bar = rep.attribute_figure(result).data[0]
    lows = {"math": exact_interval(2, 3)[0], "art": exact_interval(1, 1)[0]}
    for label, score, minus, plus in zip(bar.y, bar.x, bar.error_x.arrayminus, bar.error_x.array, strict=True):
        assert score - minus == pytest.approx(100 * lows[label])
        assert score + plus == pytest.approx(100.0 if label == "art" else 100 * exact_interval(2, 3)[1])
    assert rep.TERM_INTERVAL_LABEL.format(level="95%") in bar.hovertemplate


def test_md_escape_shows_quotes_as_typed_and_no_markup():
    """Markdown shows the escaped text as typed: an HTML entity for a quote would have its '#' escaped too."""
    import markdown_it

    from biastest.report.text import md_escape

    text = "Row 1: the sentence 'It's <b>*bold*</b> #1' & \"more\"."
    html = markdown_it.MarkdownIt().render(md_escape(text))
    assert html.strip() == "<p>Row 1: the sentence 'It's &lt;b&gt;*bold*&lt;/b&gt; #1' &amp; &quot;more&quot;.</p>"
