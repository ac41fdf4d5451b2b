"""2AFC psychophysics against naive re-implementations: eq. 8, the PSE, saturation, JND, noise, labour statistics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from biastest.errors import DataError, EmbeddingError, MethodError, OptionError
from biastest.measures.twoafc import labor_statistics_correlation, load_occupations_bls, twoafc
from biastest.measures.twoafc.score import (
    MIN_UNITS_FOR_INTERVAL,
    MSG_CI_NO_BOOTSTRAP,
    MSG_CI_TOO_FEW_UNITS,
    MSG_FIT_NO_VARIATION,
    MSG_IDENTICAL_CUES,
    MSG_LAPSE_REPLICATES_ONLY,
    MSG_MODES,
    MSG_NO_PAIRS,
    MSG_TOO_FEW_OCCUPATIONS,
    PAPER_CUE_PAIRS,
    pse_closed_form,
    thurstonian_curve,
    twoafc_decide,
)
from biastest.models.embeddings import MSG_MOSTLY_MISSING, InMemoryEmbeddings, load_embeddings
from biastest.options import BOUNDS, MSG_BAD_POSITIVE
from biastest.specs import get_twoafc_spec
from tests.embedding_runs import run_twoafc
from tests.embeddings_helpers import cos, glove_vec, mean, naive_pearson, naive_pse_by_sweep, ranks, sd

SEED = 8080
OCCUPATIONS_SAMPLE = ["nurse", "engineer", "teacher", "carpenter", "librarian", "electrician", "secretary", "chef"]


def _perturbed_replicates(words, n, sigma, seed):
    glove = load_embeddings("glove-6b-50d")
    base = glove.restrict(words)
    rng = np.random.default_rng(seed)
    return [
        InMemoryEmbeddings(
            f"glove+noise#{i}", list(base.vocabulary()), base.matrix() + rng.normal(0, sigma, (len(words), 50))
        )
        for i in range(n)
    ]


def test_closed_form_pse_equals_a_brute_force_alpha_sweep_on_glove():
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS, seed=SEED)
    assert res.mode == "single" and res.n_replicates == 1
    checked = 0
    for p in res.pairs:
        want = naive_pse_by_sweep(glove_vec(p.cue1), glove_vec(p.cue2), glove_vec(p.target))
        assert want is not None
        assert p.pse == pytest.approx(want, abs=1e-6), (p.target, p.cue_pair)
        checked += 1
    assert checked == len(OCCUPATIONS_SAMPLE) * 8
    # the per-target PSE is the mean over cue pairs
    nurse = res.target("nurse")
    assert nurse.pse == pytest.approx(mean(p.pse for p in res.pairs_of("nurse")))
    assert nurse.jnd_sd is None and nurse.pse_sd_over_pairs == pytest.approx(sd([p.pse for p in res.pairs_of("nurse")]))


def test_vectorised_decision_rule_equals_naive_loops():
    rng = np.random.default_rng(SEED)
    R, T, P = 3, 4, 2
    vec = rng.normal(size=(R, T + 2 * P, 6))
    alphas = np.linspace(0, 1, 11)
    s1w = np.zeros((R, T, P))
    s2w = np.zeros((R, T, P))
    s12 = np.zeros((R, P))
    for r in range(R):
        for p in range(P):
            c1, c2 = vec[r, T + 2 * p], vec[r, T + 2 * p + 1]
            s12[r, p] = cos(c1, c2)
            for t in range(T):
                s1w[r, t, p], s2w[r, t, p] = cos(c1, vec[r, t]), cos(c2, vec[r, t])
    got = twoafc_decide(s1w[..., None], s2w[..., None], s12[:, None, :, None], alphas)
    for r in range(R):
        for t in range(T):
            for p in range(P):
                c1, c2, w = vec[r, T + 2 * p], vec[r, T + 2 * p + 1], vec[r, t]
                for a_i, a in enumerate(alphas):
                    score1 = (1 - a) * cos(c1, c1) + a * cos(c2, c1) + cos(w, c1)
                    score2 = (1 - a) * cos(c1, c2) + a * cos(c2, c2) + cos(w, c2)
                    assert bool(got[r, t, p, a_i]) == (score2 > score1)


def _toy(words_vectors):
    words = list(words_vectors)
    return InMemoryEmbeddings("toy", words, np.array([words_vectors[w] for w in words], dtype=float))


def test_saturated_pse_is_flagged_and_never_reported_as_neutral():
    # c1 = (1, 0), c2 = (0.8, 0.6): sim(c1,c2) = 0.8. w along c1 → PSE = 1/2 + (1 − 0.8)/(2·0.2) = 1.0;
    # w beyond c1 (rotated away from c2) → PSE > 1; w beyond c2 → PSE < 0.
    ang = math.atan2(0.6, 0.8)
    emb = _toy(
        {
            "c1": [1.0, 0.0],
            "c2": [0.8, 0.6],
            "beyond1": [math.cos(-0.5), math.sin(-0.5)],
            "beyond2": [math.cos(ang + 0.5), math.sin(ang + 0.5)],
            "middle": [math.cos(ang / 2), math.sin(ang / 2)],
        }
    )
    res = twoafc([emb], targets=["beyond1", "beyond2", "middle"], cue_pairs=[("c1", "c2")], seed=SEED)
    by = {p.target: p for p in res.pairs}
    want1 = 0.5 + (math.cos(0.5) - math.cos(ang + 0.5)) / (2 * (1 - 0.8))
    assert by["beyond1"].pse == pytest.approx(want1) and want1 > 1
    assert by["beyond1"].saturated == "above" and by["beyond1"].n_saturated_replicates == 1
    assert by["beyond2"].saturated == "below" and by["beyond2"].pse < 0
    assert by["middle"].saturated is None and by["middle"].pse == pytest.approx(0.5)
    assert res.target("beyond1").saturated == "above"
    spec = res.spectrum()
    assert [r["target"] for r in spec.rows] == ["beyond2", "middle", "beyond1"]
    assert spec.rows[0]["position"] == 0.0 and spec.rows[0]["pse"] < 0 and spec.rows[2]["position"] == 1.0


def test_identical_cues_are_a_clear_error():
    emb = _toy({"c1": [1.0, 0.0], "c2": [2.0, 0.0], "w": [0.3, 0.7]})
    with pytest.raises(DataError) as e:
        twoafc([emb], targets=["w"], cue_pairs=[("c1", "c2")], seed=SEED)
    assert e.value.message == MSG_IDENTICAL_CUES.format(cue1="c1", cue2="c2", source="toy", similarity=1.0)
    with pytest.raises(DataError):
        pse_closed_form(0.2, 0.3, 1.0)


def test_replicates_jnd_is_the_sd_across_replicates():
    words = OCCUPATIONS_SAMPLE + [c for p in PAPER_CUE_PAIRS[:3] for c in p]
    reps = _perturbed_replicates(words, 6, 0.15, SEED)
    res = run_twoafc(
        targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS[:3], replicates=reps, seed=SEED, n_bootstrap=50
    )
    assert res.mode == "replicates" and res.n_replicates == 6
    # naive per-replicate PSEs from the raw vectors
    naive = {}
    for r, m in enumerate(reps):
        for t in OCCUPATIONS_SAMPLE:
            for c1, c2 in PAPER_CUE_PAIRS[:3]:
                w, a, b = (m.vectors([x])[0][0].astype(float).tolist() for x in (t, c1, c2))
                naive[(r, t, c1)] = 0.5 + (cos(a, w) - cos(b, w)) / (2 * (1 - cos(a, b)))
    for p in res.pairs:
        vals = [naive[(r, p.target, p.cue1)] for r in range(6)]
        assert p.pse_replicates == pytest.approx(vals, abs=1e-9)
        assert p.pse == pytest.approx(mean(vals), abs=1e-9)
        assert p.jnd_sd == pytest.approx(sd(vals, ddof=1), abs=1e-9)
        assert p.pse_variance == pytest.approx(sd(vals, ddof=1) ** 2, abs=1e-9)
    for t in res.targets:
        per_rep = [mean(naive[(r, t.target, c1)] for c1, _ in PAPER_CUE_PAIRS[:3]) for r in range(6)]
        assert t.jnd_sd == pytest.approx(sd(per_rep, ddof=1), abs=1e-9)
        assert t.fit is not None and t.fit.n_bootstrap == 50
    # the Fig. 2 curve: share of (replicate, pair) answers c2 at each α, counted naively
    curve = res.psychometric_curve("nurse", alpha=[0.0, 0.3, 0.6, 0.9, 1.0])
    for a, prop in zip(curve.alpha, curve.proportion, strict=True):
        count = sum(1 for r in range(6) for c1, _ in PAPER_CUE_PAIRS[:3] if a > naive[(r, "nurse", c1)])
        assert prop == pytest.approx(count / 18)
    # pooled responses given to the fit are the decision rule's counts
    nurse = res.target("nurse")
    for a, k in zip(nurse.fit.x, nurse.fit.k, strict=True):
        assert k == sum(1 for r in range(6) for c1, _ in PAPER_CUE_PAIRS[:3] if a > naive[(r, "nurse", c1)])
    d = res.to_dict()
    json.dumps(d)
    assert d["jnd_definition"].startswith("standard deviation") and d["seed"] == SEED
    assert res.provenance["mode"] == "replicates" and res.provenance["seed"] == SEED
    rows = res.target_records()
    assert {"target", "pse", "jnd_sd", "pse_variance_psycho_ai", "fit_pse_ci_low"} <= set(rows[0])
    assert len(res.pair_records()) == 8 * 3


def test_thurstonian_noise_gives_the_analytic_curve():
    res = run_twoafc(targets=["nurse", "engineer"], cue_pairs=PAPER_CUE_PAIRS[:2], noise_sigma=0.2, seed=SEED)
    assert res.mode == "thurstonian" and res.noise_sigma == 0.2
    p = res.pairs_of("nurse")[0]
    assert p.curve_sd == pytest.approx(0.2 / (2 * (1 - p.sim_c1_c2)))
    alphas = np.array([0.1, 0.4, 0.7])
    analytic = thurstonian_curve(alphas, pse=p.pse, sim_c1_c2=p.sim_c1_c2, noise_sigma=0.2)
    # Monte Carlo with the noisy decision rule (seeded)
    rng = np.random.default_rng(SEED)
    n = 40_000
    sims = twoafc_decide(
        np.full((n, 3), p.sim_c1_w), np.full((n, 3), p.sim_c2_w), p.sim_c1_c2, alphas, noise_sigma=0.2, rng=rng
    ).mean(axis=0)
    assert sims == pytest.approx(analytic, abs=0.01)
    # Φ written out
    for a, v in zip(alphas, analytic, strict=True):
        z = 2 * (1 - p.sim_c1_c2) * (a - p.pse) / 0.2
        assert v == pytest.approx(0.5 * (1 + math.erf(z / math.sqrt(2))))
    assert float(thurstonian_curve(p.pse, pse=p.pse, sim_c1_c2=p.sim_c1_c2, noise_sigma=0.2)) == pytest.approx(0.5)
    curve = res.psychometric_curve("nurse", alpha=list(alphas))
    pairs = res.pairs_of("nurse")
    want = np.mean(
        [thurstonian_curve(alphas, pse=q.pse, sim_c1_c2=q.sim_c1_c2, noise_sigma=0.2) for q in pairs], axis=0
    )
    assert curve.proportion == pytest.approx(list(want))
    with pytest.raises(OptionError) as e:  # checked before the embedding loads
        run_twoafc(targets=["nurse"], cue_pairs=PAPER_CUE_PAIRS[:1], noise_sigma=-1.0, seed=SEED)
    assert e.value.message == MSG_BAD_POSITIVE.format(label=BOUNDS["noise_sigma"].label, low=0, high=1, value=-1.0)
    with pytest.raises(MethodError) as e:
        run_twoafc(
            targets=["nurse"],
            cue_pairs=PAPER_CUE_PAIRS[:1],
            noise_sigma=0.1,
            replicates=_perturbed_replicates(["nurse", "woman", "man"], 2, 0.1, SEED),
            seed=SEED,
        )
    assert e.value.message == MSG_MODES


def test_labor_statistics_correlation_on_glove_equals_naive():
    table = load_occupations_bls()
    assert len(table) == 60 and {"occupation", "pct_female", "year", "source"} <= set(table[0])
    occupations = [r["occupation"] for r in table]
    res = run_twoafc(targets=[*occupations, "qqzzjob"], cue_pairs=PAPER_CUE_PAIRS, seed=SEED)
    assert res.dropped_targets == {"qqzzjob": "not in 'glove-6b-50d'"}
    extra = [*table, {"occupation": "qqzzjob", "pct_female": 50.0}]
    corr = labor_statistics_correlation(res, table=extra)
    x = [res.target(o).pse for o in occupations]
    y = [r["pct_female"] for r in table]
    r = naive_pearson(x, y)
    rho = naive_pearson(ranks(x), ranks(y))
    n = len(x)
    t_stat = r * math.sqrt((n - 2) / (1 - r * r))
    print(
        f"GloVe 6B 50d, 60 BLS occupations, 8 cue pairs: Pearson r={corr.pearson_r:.3f} p={corr.pearson_p:.2g}, "
        f"Spearman rho={corr.spearman_rho:.3f} p={corr.spearman_p:.2g} (paper, word2vec: r=0.368)"
    )
    assert corr.n == 60 and corr.pearson_r == pytest.approx(r, abs=1e-12)
    assert corr.spearman_rho == pytest.approx(rho, abs=1e-12)
    assert corr.pearson_p == pytest.approx(2 * stats.t.sf(abs(t_stat), n - 2), rel=1e-6)
    assert corr.dropped == {"qqzzjob": "not in 'glove-6b-50d'"}
    assert corr.pearson_r > 0  # more women in the occupation → PSE further toward the female cue
    dropped = labor_statistics_correlation(res, saturated="drop")
    n_sat = sum(1 for o in occupations if res.target(o).saturated)
    assert dropped.n == 60 - n_sat and all("saturated" in v for v in dropped.dropped.values())
    with pytest.raises(DataError) as e:
        labor_statistics_correlation(res, table=table[:2])
    assert e.value.message == MSG_TOO_FEW_OCCUPATIONS.format(n=2)


def test_runner_reports_missing_words_and_refuses_mostly_missing():
    res = run_twoafc(targets=["nurse", "qqzz1"], cue_pairs=[("woman", "man"), ("qqzzcue", "he")], seed=SEED)
    assert res.dropped_targets == {"qqzz1": "not in 'glove-6b-50d'"}
    assert res.dropped_pairs == {"qqzzcue/he": "'qqzzcue' not in 'glove-6b-50d'"}
    assert [t.target for t in res.targets] == ["nurse"] and res.cue_pairs == (("woman", "man"),)
    assert res.lookup["targets"]["missing"] == ["qqzz1"]
    with pytest.raises(EmbeddingError) as e:
        run_twoafc(targets=["nurse", "qqzz1", "qqzz2"], cue_pairs=[("woman", "man")], seed=SEED)
    assert e.value.message == MSG_MOSTLY_MISSING.format(
        n_missing=2, n_terms=3, role="target words", source="glove-6b-50d", limit=0.5, missing="qqzz1, qqzz2"
    )
    with pytest.raises(EmbeddingError) as e:
        run_twoafc(
            targets=["nurse"], cue_pairs=[("woman", "qqzz3"), ("qqzz4", "man")], seed=SEED, max_missing_fraction=0.9
        )
    assert e.value.message == MSG_NO_PAIRS.format(source="glove-6b-50d", missing="qqzz3, qqzz4")


def test_runner_trains_replicates_on_a_corpus_with_progress():
    corpus = [
        "the nurse said she would help her patient",
        "the engineer said he fixed his engine",
        "the woman is a nurse and the man is an engineer",
        "she and he work at the hospital",
        "her brother is a engineer and his sister a nurse",
    ] * 8
    calls = []
    res = run_twoafc(
        targets=["nurse", "engineer"],
        cue_pairs=[("she", "he"), ("her", "his")],
        corpus=corpus,
        n_replicates=3,
        train_options={"vector_size": 12, "min_count": 1, "epochs": 3},
        seed=SEED,
        n_bootstrap=20,
        progress=lambda d, t, m: calls.append((d, t, m)),
    )
    assert res.mode == "replicates" and res.n_replicates == 3
    assert res.provenance["replicates_trained_on_corpus"] is True
    assert calls[-1][0] == calls[-1][1] and [c[0] for c in calls] == sorted(c[0] for c in calls)
    again = run_twoafc(
        targets=["nurse", "engineer"],
        cue_pairs=[("she", "he"), ("her", "his")],
        corpus=corpus,
        n_replicates=3,
        train_options={"vector_size": 12, "min_count": 1, "epochs": 3},
        seed=SEED,
        n_bootstrap=20,
    )
    assert [p.pse_replicates for p in again.pairs] == [p.pse_replicates for p in res.pairs]


# --------------------------------------------------------------------------- intervals from data (issue 17)
PAPER = "Occupations vs gender (Liang & Acuna 2020)"


def _naive_interval(values, level, n_units):
    """Hesterberg's expanded percentile interval, from the formula: a' = 2Φ(−sqrt(n/(n−1))·t_{n−1}(1 − a/2))."""
    z = math.sqrt(n_units / (n_units - 1)) * stats.t.ppf(1 - (1 - level) / 2, n_units - 1)
    tail = stats.norm.sf(z)
    return tuple(np.quantile(values, [tail, 1 - tail]))


@pytest.mark.parametrize("sigma", [0.05, None])
def test_paper_spec_on_glove_fills_every_fitted_column_and_a_data_interval(sigma):
    """Issue 17: fit_status, fit_pse and its interval were empty for all 60 occupations (one model)."""
    spec = get_twoafc_spec(PAPER)
    res = run_twoafc(spec=spec, noise_sigma=sigma, seed=SEED, n_bootstrap=200)
    rows = res.target_records()
    assert len(rows) == 60 and res.interval_units == "cue pairs" and res.n_bootstrap == 200
    for r in rows:
        assert r["fit_status"] == "ok", r
        assert all(isinstance(r[k], float) and math.isfinite(r[k])
                   for k in ("fit_pse", "fit_pse_ci_low", "fit_pse_ci_high", "fit_slope", "pse_ci_low", "pse_ci_high"))
        assert r["fit_pse_ci_low"] < r["fit_pse"] < r["fit_pse_ci_high"] and r["fit_interval_from"] == "cue pairs"
        assert r["pse_ci_low"] < r["pse"] < r["pse_ci_high"] and r["fit_note"] == "" and r["pse_ci_note"] == ""
    # the intervals come from the data: they differ from word to word (the σ band is one number for all)
    widths = {round(r["pse_ci_high"] - r["pse_ci_low"], 6) for r in rows}
    assert len(widths) > 50
    if sigma is not None:
        assert len({round(r["sigma_implied_sd_assumption"], 12) for r in rows}) == 1
    else:
        assert all(r["sigma_implied_sd_assumption"] is None for r in rows)


def test_pse_interval_is_a_bootstrap_over_cue_pairs_equal_to_a_naive_loop():
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE, cue_pairs=PAPER_CUE_PAIRS, noise_sigma=0.1, seed=SEED,
                     n_bootstrap=300, confidence=0.9)
    assert res.ci_level == 0.9 and res.to_dict()["ci_level"] == 0.9
    draws = np.random.default_rng(SEED).integers(0, 8, size=(300, 8))  # the documented draws
    for t in res.targets:
        pair = [p.pse for p in res.pairs_of(t.target)]
        boot = [mean(pair[i] for i in row) for row in draws]
        assert t.pse_ci == pytest.approx(_naive_interval(boot, 0.9, 8), abs=1e-12)
        assert t.fit.ci_level == 0.9
    # the fitted function is fitted to the Thurstonian curve pooled over the cue pairs (a naive Φ average)
    nurse = res.target("nurse")
    want = [mean(0.5 * (1 + math.erf(2 * (1 - p.sim_c1_c2) * (a - p.pse) / 0.1 / math.sqrt(2)))
                 for p in res.pairs_of("nurse")) for a in nurse.fit.x]
    assert [k / 8 for k in nurse.fit.k] == pytest.approx(want, abs=1e-12)


def test_replicate_mode_interval_resamples_the_replicate_models():
    words = OCCUPATIONS_SAMPLE[:3] + [c for p in PAPER_CUE_PAIRS[:2] for c in p]
    reps = _perturbed_replicates(words, 6, 0.15, SEED)
    res = run_twoafc(targets=OCCUPATIONS_SAMPLE[:3], cue_pairs=PAPER_CUE_PAIRS[:2], replicates=reps, seed=SEED,
                     n_bootstrap=100)
    assert res.interval_units == "replicate models"
    draws = np.random.default_rng(SEED).integers(0, 6, size=(100, 6))
    for t in res.targets:
        per_rep = [mean(p.pse_replicates[r] for p in res.pairs_of(t.target)) for r in range(6)]
        boot = [mean(per_rep[i] for i in row) for row in draws]
        assert t.pse_ci == pytest.approx(_naive_interval(boot, 0.95, 6), abs=1e-12)
        assert t.fit.bootstrap == "parametric" and t.fit.pse_ci is not None  # binomial answers of the replicates


def test_no_interval_without_enough_units_says_why_per_row():
    one_pair = run_twoafc(targets=["nurse", "engineer"], cue_pairs=PAPER_CUE_PAIRS[:1], noise_sigma=0.1, seed=SEED)
    reason = MSG_CI_TOO_FEW_UNITS.format(n=1, units="cue pairs", minimum=MIN_UNITS_FOR_INTERVAL)
    for r in one_pair.target_records():
        assert r["pse_ci_low"] is None and r["pse_ci_note"] == reason
        assert r["fit_status"] == "ok" and r["fit_pse_ci_low"] is None and r["fit_note"] == reason
    none = run_twoafc(targets=["nurse"], cue_pairs=PAPER_CUE_PAIRS, seed=SEED, n_bootstrap=0, lapse=True)
    t = none.target_records()[0]
    assert t["pse_ci_note"] == MSG_CI_NO_BOOTSTRAP
    assert t["fit_note"] == f"{MSG_CI_NO_BOOTSTRAP} {MSG_LAPSE_REPLICATES_ONLY}"
    # every cue pair answers the same side over the whole range: the fit's reason is given, not a number
    emb = InMemoryEmbeddings("toy", ["c1", "c2", "d1", "d2", "w"],
                             np.array([[1, 0, 0], [0, 1, 0], [1, 0, .1], [0, 1, .1], [1, -.9, 0]], dtype=float))
    sat = twoafc([emb], targets=["w"], cue_pairs=[("c1", "c2"), ("d1", "d2")], seed=SEED)
    row = sat.target_records()[0]
    assert row["saturated"] == "above" and row["fit_status"] == "no_variation" and row["fit_pse"] is None
    assert row["fit_note"] == MSG_FIT_NO_VARIATION
