"""The comparison's figures and words (biastest/report/compare.py): sorted forest plot with escaped hover, the
pairwise table, and a reading whose verdict follows the p-value and the interval as documented."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from biastest.report import compare as R
from biastest.stats import compare as C


def _cmp(columns, labels, **kw):
    return C.compare_arrays(np.column_stack(columns), labels=labels, binary=True, seed=0, n_resamples=500,
                            kind=C.KIND_STEREOTYPE, **kw)


def test_forest_is_sorted_escaped_and_says_when_there_is_no_interval():
    rng = np.random.default_rng(1)
    x = [rng.random(60) < p for p in (0.3, 0.8, 0.55)]
    labels = ["low <b>one</b>", "high & mighty", "middle"]
    fig = R.forest_figure(_cmp(x, labels))
    trace = fig.data[0]
    assert list(trace.y) == ["high &amp; mighty", "middle", "low &lt;b&gt;one&lt;/b&gt;"]  # largest on top
    assert list(trace.x) == sorted(trace.x, reverse=True)
    assert all("compared items: 60" in cd[2] for cd in trace.customdata)
    assert "<b>one</b>" not in fig.to_json()
    clustered = _cmp(x, labels, clusters=[i % 3 for i in range(60)])  # 3 clusters: no interval
    custom = R.forest_figure(clustered).data[0].customdata
    assert all(cd[1] == R.MSG_NO_INTERVAL for cd in custom)


def test_reading_names_the_model_that_leans_further_and_formats_p():
    a = np.array([1] * 40 + [0] * 10, dtype=bool)
    b = np.array([0] * 40 + [0] * 10, dtype=bool)
    cmp = _cmp([b, a], ["B_model", "A*model"])  # B listed first, A leans further
    text = R.pair_reading(cmp, cmp.pairs[0])
    assert text.startswith(
        "**A\\*model** prefers the stereotyped sentence more often than **B\\_model** by 80.0 points")
    assert "McNemar p < 0.001" in text and text.endswith("— a difference.")
    same = _cmp([a, a], ["x", "y"])
    assert R.pair_reading(same, same.pairs[0]) == R.SAME[C.KIND_STEREOTYPE].format(a="**x**", b="**y**", n=50)
    assert R.pair_verdict(same, same.pairs[0]) == R.VERDICT_NOTHING
    frame = R.pairwise_frame(same)
    assert frame.iloc[0]["A − B (points)"] == "+0.0" and frame.iloc[0]["95 % interval of A − B"] == "+0.0 to +0.0"


def test_verdicts_follow_p_and_interval():
    rng = np.random.default_rng(2)
    x = [rng.random(80) < 0.5 for _ in range(3)]
    two = _cmp(x[:2], ["a", "b"])
    p = two.pairs[0]
    assert R.pair_verdict(two, replace(p, p_value=0.5, ci_low=-3.0, ci_high=4.0)) == R.VERDICT_NONE
    assert R.pair_verdict(two, replace(p, p_value=0.01, ci_low=1.0, ci_high=9.0)) == R.VERDICT_DIFFERENCE
    assert R.pair_verdict(two, replace(p, p_value=0.01, ci_low=-1.0, ci_high=9.0)) == R.VERDICT_UNCLEAR
    assert R.pair_verdict(two, replace(p, p_value=0.2, ci_low=1.0, ci_high=9.0)) == R.VERDICT_UNCLEAR
    assert R.pair_verdict(two, replace(p, p_value=0.01, ci_low=None, ci_high=None)) == R.VERDICT_DIFFERENCE
    three = _cmp(x, ["a", "b", "c"])
    q = three.pairs[0]
    # three models: the adjusted p decides; an unadjusted interval that excludes 0 is not enough
    adjusted_away = replace(q, p_value=0.02, p_adjusted=0.06, ci_low=1.0, ci_high=9.0)
    assert R.pair_verdict(three, adjusted_away) == R.VERDICT_NOT_AFTER_ADJUSTMENT.format(m=3)
    assert R.pair_verdict(three, replace(q, p_value=0.001, p_adjusted=0.003, ci_low=1.0, ci_high=9.0)) == \
        R.VERDICT_DIFFERENCE
    reading = R.reading_markdown(three)
    assert reading.count("\n- ") == 2 and "Holm" in reading


def test_pairwise_frame_columns_and_units():
    rng = np.random.default_rng(3)
    binary = _cmp([rng.random(30) < 0.6, rng.random(30) < 0.4], ["a", "b"])
    assert list(R.pairwise_frame(binary).columns) == [
        "Model A", "Model B", "A", "B", "A − B (points)", "95 % interval of A − B", "A only / B only", "p",
        "p (Holm)", "reading"]
    soft = C.compare_arrays(np.column_stack([rng.random(30), rng.random(30)]), labels=["a", "b"], binary=False,
                            seed=0, n_resamples=300, confidence=0.9)
    frame = R.pairwise_frame(soft)
    assert "A higher / B higher" in frame.columns and "90 % interval of A − B" in frame.columns
    assert R.level(0.9) == "90 %" and R.level(0.95) == "95 %"
