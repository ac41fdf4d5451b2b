"""The JND of the 2AFC test on embeddings: both definitions against naive code, planted truths, the validation
against labour statistics, the paper's figures and the named findings on GloVe 6B 50d."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from biastest.errors import DataError
from biastest.measures.twoafc import jnd_labor_correlation, labor_statistics_correlation, load_occupations_bls
from biastest.measures.twoafc import report as rep
from biastest.measures.twoafc import report_figures as figs
from biastest.measures.twoafc.jnd import (
    JND_CURVE_DEFINITION,
    JND_REPLICATE_DEFINITION,
    MSG_JND_NO_INTERVAL_LAPSE,
    binomial_sd,
    curve_jnd_interval,
    replicate_sd_interval,
)
from biastest.measures.twoafc.labor import MSG_TOO_FEW_JNDS
from biastest.measures.twoafc.reproduce import reproduction_numbers
from biastest.measures.twoafc.score import PAPER_CUE_PAIRS
from biastest.measures.twoafc.summary import twoafc
from biastest.models.embeddings import InMemoryEmbeddings
from biastest.specs import get_twoafc_spec
from tests.embedding_runs import run_twoafc
from tests.embeddings_helpers import mean, naive_pearson, ranks, sd
from tests.test_twoafc import OCCUPATIONS_SAMPLE, _perturbed_replicates

SEED = 20240
GENDER = "Occupations vs gender (Liang & Acuna 2020)"


# --------------------------------------------------------------------------- naive references
def naive_fit_scale(x, p, sigmoid):
    """Maximise Σ p log F + (1 − p) log(1 − F) over (μ, log s) by Nelder–Mead: the fitted curve's μ and s."""
    cdf = stats.norm.cdf if sigmoid == "norm" else stats.logistic.cdf
    x, p = np.asarray(x, float), np.asarray(p, float)

    def nll(theta):
        f = np.clip(cdf((x - theta[0]) / math.exp(theta[1])), 1e-12, 1 - 1e-12)
        return -float(np.sum(p * np.log(f) + (1 - p) * np.log(1 - f)))

    best = optimize.minimize(nll, [0.5, math.log(0.2)], method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20_000})
    return best.x[0], math.exp(best.x[1])


def _naive_bca(values, level, n_resamples, seed):
    """BCa interval of the SD (ddof=1), written out: bias from the share below, acceleration from the jackknife."""
    v = list(values)
    n = len(v)
    rng = np.random.default_rng(seed)
    theta = sd(v)
    boot = [sd([v[i] for i in rng.integers(0, n, n)]) for _ in range(n_resamples)]
    z0 = stats.norm.ppf(sum(b < theta for b in boot) / n_resamples)
    jack = [sd(v[:i] + v[i + 1:]) for i in range(n)]
    jm = mean(jack)
    a = sum((jm - j) ** 3 for j in jack) / (6 * sum((jm - j) ** 2 for j in jack) ** 1.5)
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = stats.norm.ppf(q)
        out.append(float(np.quantile(boot, stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))))
    return tuple(out)


def test_replicate_jnd_is_the_sd_across_replicates_with_a_bca_interval_equal_to_naive():
    words = OCCUPATIONS_SAMPLE + [c for p in PAPER_CUE_PAIRS[:3] for c in p]
    reps = _perturbed_replicates(words, 12, 0.15, SEED)
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS[:3], replicates=reps, seed=SEED,
                     n_bootstrap=2000)
    assert res.jnd_definition == JND_REPLICATE_DEFINITION and res.provenance["jnd_definition"] == res.jnd_definition
    for t in res.targets:
        per_rep = [mean(p.pse_replicates[r] for p in res.pairs_of(t.target)) for r in range(12)]
        jnd, ci, kind = t.jnd()
        assert kind == "replicate" and jnd == pytest.approx(sd(per_rep), abs=1e-9)
        naive = _naive_bca(per_rep, 0.95, 4000, SEED + 1)
        # different draws: agree within the Monte Carlo error of the quantiles, a small share of the SD
        assert ci[0] == pytest.approx(naive[0], abs=0.15 * jnd) and ci[1] == pytest.approx(naive[1], abs=0.15 * jnd)
        assert ci[0] < jnd < ci[1]
    again = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS[:3], replicates=reps, seed=SEED,
                       n_bootstrap=2000)
    assert [t.jnd_sd_ci for t in again.targets] == [t.jnd_sd_ci for t in res.targets]  # seeded
    rec = res.target_records()[0]
    assert {"jnd_sd", "jnd_sd_ci_low", "jnd_sd_ci_high", "jnd_curve", "jnd_curve_ci_low", "jnd_note"} <= set(rec)


def test_replicate_jnd_interval_covers_a_planted_sd():
    """32 replicate PSEs drawn from N(0.4, 0.08²): the 95 % BCa interval of their SD covers 0.08 (about 93 %)."""
    rng = np.random.default_rng(SEED)
    n_sims = 300
    hits = sum(
        (ci := replicate_sd_interval(rng.normal(0.4, 0.08, 32), n_bootstrap=500, seed=i, ci_level=0.95)) is not None
        and ci[0] <= 0.08 <= ci[1]
        for i in range(n_sims)
    )
    print(f"coverage of the replicate JND's 95 % BCa interval, 32 replicates: {hits / n_sims:.3f}")
    assert hits / n_sims >= 0.87
    assert replicate_sd_interval([0.4] * 10, n_bootstrap=100, seed=0, ci_level=0.95) is None  # no spread
    assert replicate_sd_interval([0.3, 0.4, 0.5], n_bootstrap=100, seed=0, ci_level=0.95) is None  # too few


@pytest.mark.parametrize("sigmoid", ["norm", "logistic"])
def test_curve_jnd_equals_a_naive_fit_of_the_pooled_curve(sigmoid):
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS, seed=SEED, n_bootstrap=300,
                     sigmoid=sigmoid)
    assert res.mode == "single" and res.jnd_definition == JND_CURVE_DEFINITION
    factor = 1.0 if sigmoid == "norm" else math.pi / math.sqrt(3)
    f0 = 1 / math.sqrt(2 * math.pi) if sigmoid == "norm" else 0.25
    for t in res.targets:
        pair_pse = [p.pse for p in res.pairs_of(t.target)]
        prop = [mean(1.0 if a > v else 0.0 for v in pair_pse) for a in res.alpha_grid]
        mu, s = naive_fit_scale(res.alpha_grid, prop, sigmoid)
        jnd, ci, kind = t.jnd()
        assert kind == "curve" and jnd == pytest.approx(factor * s, rel=2e-3), t.target
        assert t.fit.pse == pytest.approx(mu, abs=2e-3)
        # the interval: each bootstrap slope f(0)/s_b read as the JND factor·s_b
        lo, hi = t.fit.slope_ci
        assert ci == pytest.approx((factor * f0 / hi, factor * f0 / lo), rel=1e-9)


def _planted_replicates(pses, seed):
    """One embedding per PSE: cues e1, e2 orthonormal, the target cos(e1, w) = 2(PSE − 0.5), so its PSE is planted."""
    rng = np.random.default_rng(seed)
    models = []
    for i, p in enumerate(pses):
        a = 2.0 * (p - 0.5)
        basis = np.linalg.qr(rng.normal(size=(8, 3)))[0].T  # a random orthonormal frame in 8 dimensions
        w = a * basis[0] + math.sqrt(1 - a * a) * basis[2]
        models.append(InMemoryEmbeddings(f"planted#{i}", ["job", "c1", "c2"], np.stack([w, basis[0], basis[1]])))
    return models


@pytest.mark.parametrize("sigmoid", ["logistic", "norm"])
def test_planted_spread_is_recovered_by_both_jnds(sigmoid):
    """Replicate PSEs from a logistic (scale 0.04: slope 1/(4·0.04) = 6.25, JND π·0.04/√3) or a normal (SD 0.08)."""
    rng = np.random.default_rng(SEED)
    if sigmoid == "logistic":
        s, truth = 0.04, math.pi * 0.04 / math.sqrt(3)
        pses = rng.logistic(0.5, s, 400)
    else:
        s, truth = 0.08, 0.08
        pses = rng.normal(0.45, s, 400)
    assert np.all((pses > 0.01) & (pses < 0.99))
    models = _planted_replicates(pses, SEED)
    res = twoafc(models, targets=["job"], cue_pairs=[("c1", "c2")], seed=SEED, sigmoid=sigmoid, n_bootstrap=200)
    t = res.target("job")
    assert t.pse == pytest.approx(float(np.mean(pses)), abs=1e-9)
    assert t.jnd_sd == pytest.approx(float(np.std(pses, ddof=1)), abs=1e-9)
    assert t.jnd_sd == pytest.approx(truth, rel=0.12)
    assert t.jnd_curve == pytest.approx(truth, rel=0.12)
    assert t.jnd_sd_ci[0] <= truth <= t.jnd_sd_ci[1]
    if sigmoid == "logistic":
        assert t.fit.slope == pytest.approx(1 / (4 * s), rel=0.12)
    lapse = twoafc(models[:40], targets=["job"], cue_pairs=[("c1", "c2")], seed=SEED, sigmoid=sigmoid, lapse=True,
                   n_bootstrap=20).target("job")
    assert lapse.jnd_curve_ci is None and MSG_JND_NO_INTERVAL_LAPSE in lapse.jnd_note
    assert curve_jnd_interval(None)[0] is None


def test_binomial_sd_and_the_jnd_validation_equal_naive():
    assert binomial_sd(50.0) == 0.5 and binomial_sd(100.0) == 0.0
    table = load_occupations_bls()
    res = run_twoafc(spec=get_twoafc_spec(GENDER), seed=SEED, n_bootstrap=100)
    val = jnd_labor_correlation(res)
    x = [res.target(r["occupation"]).jnd_curve for r in table]
    y = [math.sqrt(r["pct_female"] / 100 * (1 - r["pct_female"] / 100)) for r in table]
    r = naive_pearson(x, y)
    n = len(x)
    t_stat = r * math.sqrt((n - 2) / (1 - r * r))
    assert val.n == 60 and val.jnd_kind == "curve" and val.pearson_r == pytest.approx(r, abs=1e-12)
    assert val.pearson_p == pytest.approx(2 * stats.t.sf(abs(t_stat), n - 2), rel=1e-6)
    assert val.spearman_rho == pytest.approx(naive_pearson(ranks(x), ranks(y)), abs=1e-12)
    assert [u["binomial_sd"] for u in val.used] == pytest.approx(y, abs=1e-15)
    print(f"GloVe 6B 50d: curve JND vs sqrt(p(1-p)): r = {val.pearson_r:.3f} (p = {val.pearson_p:.2g}); "
          "the paper, 32 bootstrapped GloVe models: |r| = 0.401 (p = 0.031)")
    with pytest.raises(DataError) as e:
        jnd_labor_correlation(res, table=table[:2])
    assert e.value.message == MSG_TOO_FEW_JNDS.format(n=2)


# --------------------------------------------------------------------------- figures and the CSV
def test_figures_show_each_cue_pair_and_the_jnd_with_intervals_and_the_csv_holds_their_rows(tmp_path):
    words = OCCUPATIONS_SAMPLE + [c for p in PAPER_CUE_PAIRS[:3] for c in p]
    reps = _perturbed_replicates(words, 6, 0.15, SEED)
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS[:3], replicates=reps, seed=SEED,
                     n_bootstrap=200)
    pse_fig = rep.pse_figure(res)
    dots = next(tr for tr in pse_fig.data if tr.name.startswith("PSE of each cue pair"))
    assert sorted(zip(dots.x, dots.y, strict=True)) == sorted((p.target, p.pse) for p in res.pairs)
    assert dots.hoverinfo == "skip" and pse_fig.layout.hovermode == "x"  # the target's hover lists them
    jnd_fig = figs.jnd_figure(res)
    main, pair_dots = jnd_fig.data[0], jnd_fig.data[1]
    assert list(main.y) == sorted(main.y)  # lowest JND first
    for name, y, up, down, row in zip(main.x, main.y, main.error_y.array, main.error_y.arrayminus, main.customdata,
                                      strict=True):
        t = res.target(name)
        assert y == t.jnd_sd and (y - down, y + up) == pytest.approx(t.jnd_sd_ci) and row[1] == f"{t.jnd_sd:.3f}"
        for p in res.pairs_of(name):
            assert f"{p.cue_pair}: {p.jnd_sd:.3f}" in row[6]
    assert sorted(zip(pair_dots.x, pair_dots.y, strict=True)) == sorted((p.target, p.jnd_sd) for p in res.pairs)
    assert "customdata[2]" in main.hovertemplate and "customdata[6]" in main.hovertemplate
    assert "BCa bootstrap over the replicate models" in jnd_fig.layout.title.text

    glove = run_twoafc(spec=get_twoafc_spec(GENDER), seed=SEED, n_bootstrap=100)
    corr, val = labor_statistics_correlation(glove), jnd_labor_correlation(glove)
    scatter = figs.jnd_labour_figure(val)
    pts, line = scatter.data
    assert list(pts.x) == [u["binomial_sd"] for u in val.used] and list(pts.y) == [u["jnd"] for u in val.used]
    slope = naive_pearson(pts.x, pts.y) * sd(pts.y) / sd(pts.x)
    assert (line.y[1] - line.y[0]) / (line.x[1] - line.x[0]) == pytest.approx(slope, rel=1e-9)
    assert f"r = {val.pearson_r:.3f}" in scatter.layout.title.text
    assert "0.401" in figs.jnd_labour_markdown(val)

    csv_path, json_path = rep.twoafc_exports(glove, source="glove-6b-50d", corr=corr, jnd_corr=val,
                                             directory=tmp_path)
    with open(csv_path, encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    kinds = [r["row_type"] for r in rows]
    assert kinds.count("target") == 60 and kinds.count("pair") == 60 * 8 and kinds.count("occupation") == 60
    occ = {r["occupation"]: r for r in rows if r["row_type"] == "occupation"}
    for u in val.used:
        # the download rounds numbers for people (biastest.report.export.round_cell)
        assert float(occ[u["occupation"]]["jnd"]) == pytest.approx(u["jnd"], abs=1e-3)
        assert float(occ[u["occupation"]]["binomial_sd"]) == pytest.approx(u["binomial_sd"], abs=1e-3)
        assert float(occ[u["occupation"]]["pse_for_labour"]) == pytest.approx(glove.target(u["occupation"]).pse,
                                                                               abs=1e-3)
    summary = {r["measure"]: r for r in rows if r["row_type"] == "summary"}
    jrow = summary["Pearson r: JND vs sqrt(p(1 − p)), p = share of women (U.S. BLS)"]
    assert float(jrow["estimate"]) == pytest.approx(val.pearson_r, abs=1e-3)
    assert float(jrow["p_value"]) == pytest.approx(val.pearson_p, rel=1e-2)
    payload = json.loads(json_path.read_text(encoding="utf-8"))
    assert payload["jnd_labour_statistics"]["pearson_r"] == pytest.approx(val.pearson_r)


# --------------------------------------------------------------------------- the paper's findings on GloVe 6B 50d
def test_reproduction_numbers_on_glove_record_which_named_findings_hold():
    d = reproduction_numbers(seed=SEED, n_bootstrap=200)
    json.dumps(d)  # plain values
    holds = {f["finding"]: f["holds"] for f in d["findings"]}
    print(json.dumps(d["findings"], indent=1, ensure_ascii=False))
    # what GloVe 6B 50d gives (one model: the curve JND); docs/measures/twoafc.md records the same
    assert holds == {
        "electrician leans male": True,
        "hairdresser leans against men (toward women)": True,
        "lawyer leans against women (toward men)": True,
        "hairdresser's JND is larger than lawyer's": False,
        "PSE correlates positively with % women": True,
        "JND correlates with sqrt(p(1 − p)) of % women": False,
        "teacher is the occupation most toward love": False,
        "examiner is the occupation most toward hate": True,
    }
    occ = d["occupations"]
    assert occ["electrician"]["pse"] < 0.5 < occ["hairdresser"]["pse"] and occ["lawyer"]["pse"] < 0.5
    assert occ["hairdresser"]["pse_ci"][0] > 0.5  # hairdresser's lean is clear; electrician's interval spans 0.5
    assert occ["electrician"]["pse_ci"][0] < 0.5 < occ["electrician"]["pse_ci"][1]
    assert d["pse_bls"]["pearson_r"] > 0.4 and d["pse_bls"]["pearson_p"] < 0.001 and d["pse_bls"]["n"] == 60
    assert abs(d["jnd_sd"]["pearson_r"]) < 0.2 and d["jnd_sd"]["pearson_p"] > 0.1 and d["jnd_sd"]["jnd_kind"] == "curve"
    lh = d["love_hate"]
    assert lh["most_hate"] == "examiner" and lh["most_hate_of_paper_fig4"] == "examiner"
    assert lh["pse"]["teacher"] > 0.5 and lh["teacher_rank_love"] > 1
    assert d["paper"]["jnd_sd_abs_r"] == 0.401 and d["seed"] == SEED
