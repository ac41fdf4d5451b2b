"""Psychometric fits with a symmetric guess/lapse rate recover planted curves; a plain fit does not (issue 25)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from biastest.errors import DataError, MethodError
from biastest.models.dummy import DummyChatLM
from biastest.stats.psychometric import fit_psychometric, fit_psychometric_proportions
from biastest.stats.psychometric.guess_lapse import (
    MSG_GL_BAD_BOOTSTRAP,
    MSG_GL_BAD_Q,
    MSG_GL_BAD_SHARE,
    MSG_GL_FLAT,
    MSG_GL_NO_VARIATION,
    MSG_GL_SEPARATED,
    MSG_GL_TOO_FEW_LEVELS,
    fit_guess_lapse,
    guess_lapse_from_position_share,
    guess_lapse_function,
    jnd_from_scale,
)
from biastest.stats.psychometric.model import MSG_SEED_REQUIRED
from biastest.stats.psychometric.shift import MSG_SHIFT_NO_FIT, pse_shift
from tests.psychometric_helpers import (
    NEUTRAL_CONTEXT,
    REFUSAL,
    PlantedPsychometricResponder,
    balanced_requests,
    count_answers,
    simulate_counts,
)

SEED = 252525
LEVELS = np.linspace(0, 1, 11)


def _naive_psi(x, mu, s, q, sigmoid="logistic"):
    out = []
    for v in x:
        z = (v - mu) / s
        f = 1 / (1 + math.exp(-z)) if sigmoid == "logistic" else 0.5 * (1 + math.erf(z / math.sqrt(2)))
        out.append(q / 2 + (1 - q) * f)
    return out


def _expected_counts(pse, rate, q, n=10**7, sigmoid="logistic"):
    p = guess_lapse_function(LEVELS, pse=pse, scale=1 / rate, guess_lapse=q, sigmoid=sigmoid)
    return np.round(n * p), np.full(LEVELS.size, n)


def test_observed_curve_and_jnd_are_the_formulas():
    for sig in ("logistic", "norm"):
        got = guess_lapse_function(LEVELS, pse=0.42, scale=0.09, guess_lapse=0.3, sigmoid=sig)
        assert got == pytest.approx(_naive_psi(LEVELS, 0.42, 0.09, 0.3, sig), abs=1e-12)
    # the JND is the SD of the distribution whose CDF is the curve: check it against scipy's distributions
    assert jnd_from_scale(0.1, "norm") == pytest.approx(stats.norm(scale=0.1).std())
    assert jnd_from_scale(0.1, "logistic") == pytest.approx(stats.logistic(scale=0.1).std())


@pytest.mark.parametrize("sigmoid", ["logistic", "norm"])
def test_mle_equals_a_naive_maximiser(sigmoid):
    rng = np.random.default_rng(SEED)
    k, n = simulate_counts(LEVELS, pse=0.45, rate=10.0, q=0.25, n_per_order=30, rng=rng, sigmoid=sigmoid)
    f = fit_guess_lapse(LEVELS, k, n, sigmoid=sigmoid)
    assert f.ok and f.message is None

    def nll(theta):
        mu, s, q = theta[0], math.exp(theta[1]), theta[2]
        if not 0 <= q < 1:
            return 1e300
        return -sum(ki * math.log(p) + (ni - ki) * math.log(1 - p)
                    for ki, ni, p in zip(k, n, _naive_psi(LEVELS, mu, s, q, sigmoid), strict=True))

    best = None
    for q0 in (0.05, 0.3):
        r = optimize.minimize(nll, [0.5, math.log(0.1), q0], method="Nelder-Mead",
                              options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 40_000})
        best = r if best is None or r.fun < best.fun else best
    assert f.pse == pytest.approx(best.x[0], abs=1e-5)
    assert f.scale == pytest.approx(math.exp(best.x[1]), rel=1e-4)
    assert f.guess_lapse == pytest.approx(best.x[2], abs=1e-5)
    assert f.log_likelihood == pytest.approx(
        sum(stats.binom.logpmf(ki, ni, p)
            for ki, ni, p in zip(k, n, _naive_psi(LEVELS, f.pse, f.scale, f.guess_lapse, sigmoid), strict=True)),
        abs=1e-6)
    f0 = 0.25 if sigmoid == "logistic" else 1 / math.sqrt(2 * math.pi)
    assert f.slope == pytest.approx(f0 / f.scale) and f.rate == pytest.approx(1 / f.scale)
    assert f.jnd == pytest.approx(jnd_from_scale(f.scale, sigmoid))


def test_plain_fit_is_biased_and_the_guess_lapse_fit_is_not_on_expected_answers():
    """The issue's claim, on the expected shares of a balanced design (q = 0.2, rate 12, α = 0, 0.1, …, 1)."""
    k, n = _expected_counts(0.5, 12.0, 0.2)
    plain = fit_psychometric(LEVELS, k, n, sigmoid="logistic")
    gl = fit_guess_lapse(LEVELS, k, n)
    print(f"plain rate {1 / plain.scale:.3f}, guess/lapse rate {gl.rate:.4f}, q {gl.guess_lapse:.4f}")
    assert 1 / plain.scale == pytest.approx(5.77, abs=0.05)  # the "≈ 5.7"
    assert gl.rate == pytest.approx(12.0, rel=1e-3) and gl.guess_lapse == pytest.approx(0.2, abs=1e-3)
    # two contexts at 0.35 and 0.65: the plain fit pulls each 0.015–0.017 toward the middle; this fit does not
    for pse, toward in ((0.35, 1), (0.65, -1)):
        k, n = _expected_counts(pse, 12.0, 0.2)
        plain = fit_psychometric(LEVELS, k, n, sigmoid="logistic")
        gl = fit_guess_lapse(LEVELS, k, n)
        assert 0.012 < toward * (plain.pse - pse) < 0.02
        assert gl.pse == pytest.approx(pse, abs=1e-4)
        # an exact plain fit to the same shares agrees (the bias is the model's, not the optimiser's)
        prop = fit_psychometric_proportions(LEVELS, (k / n)[None], sigmoid="logistic")[0]
        assert prop.pse == pytest.approx(plain.pse, abs=1e-4)


@pytest.mark.parametrize("q", [0.0, 0.2, 0.5])
def test_position_bias_does_not_move_the_pse(q):
    k, n = _expected_counts(0.38, 12.0, q)
    f = fit_guess_lapse(LEVELS, k, n)
    assert f.pse == pytest.approx(0.38, abs=1e-4) and f.rate == pytest.approx(12.0, rel=2e-3)
    # answered by a planted chat subject through real requests, both orders: the interval holds the planted PSE
    names = [f"N{i}" for i in range(LEVELS.size)]
    responder = PlantedPsychometricResponder(dict(zip(names, LEVELS, strict=True)), {NEUTRAL_CONTEXT: (0.38, 12.0)},
                                             q=q, seed=SEED)
    rows = balanced_requests(names, NEUTRAL_CONTEXT, responder.cues, samples=40, seed=SEED)
    replies = DummyChatLM(responder).chat([r for _, _, r in rows])
    c = count_answers(rows, [r.text for r in replies], names, responder.cues)
    f = fit_guess_lapse(LEVELS, c["k"], c["n"], n_bootstrap=300, seed=SEED)
    first = c["first"].sum() / c["n"].sum()
    print(f"q={q}: PSE {f.pse:.3f} {f.pse_ci}, fitted q {f.guess_lapse:.3f}, first-shown share {first:.3f}")
    assert f.pse_ci[0] <= 0.38 <= f.pse_ci[1]
    assert first == pytest.approx(0.5 + q / 2, abs=0.05)  # the habit shows as a share
    q_measured = guess_lapse_from_position_share(first)
    assert q_measured == pytest.approx(q, abs=0.1)
    fixed = fit_guess_lapse(LEVELS, c["k"], c["n"], guess_lapse=q_measured, n_bootstrap=300, seed=SEED)
    assert fixed.guess_lapse_fixed and fixed.pse_ci[0] <= 0.38 <= fixed.pse_ci[1]


def test_simulated_balanced_design_plain_slope_biased_guess_lapse_recovers_it():
    rng = np.random.default_rng(SEED)
    k, n = simulate_counts(LEVELS, pse=0.5, rate=12.0, q=0.2, n_per_order=100, rng=rng)
    plain = fit_psychometric(LEVELS, k, n, sigmoid="logistic", n_bootstrap=300, seed=SEED)
    gl = fit_guess_lapse(LEVELS, k, n, n_bootstrap=300, seed=SEED)
    plain_rate_ci = (4 * plain.slope_ci[0], 4 * plain.slope_ci[1])  # logistic: slope = rate/4
    print(f"seed={SEED} plain rate {1 / plain.scale:.2f} {plain_rate_ci}; guess/lapse rate {gl.rate:.2f} "
          f"{gl.rate_ci}, q {gl.guess_lapse:.3f} {gl.guess_lapse_ci}, JND {gl.jnd:.4f} {gl.jnd_ci}")
    assert plain_rate_ci[1] < 12.0 and 1 / plain.scale == pytest.approx(5.8, abs=0.8)
    assert gl.rate_ci[0] <= 12.0 <= gl.rate_ci[1]
    assert gl.guess_lapse_ci[0] <= 0.2 <= gl.guess_lapse_ci[1]
    assert gl.jnd_ci[0] <= jnd_from_scale(1 / 12, "logistic") <= gl.jnd_ci[1]
    assert gl.n_bootstrap_valid == 300 and gl.seed == SEED and gl.provenance["seed"] == SEED
    again = fit_guess_lapse(LEVELS, k, n, n_bootstrap=300, seed=SEED)
    other = fit_guess_lapse(LEVELS, k, n, n_bootstrap=300, seed=SEED + 1)
    assert again.pse_ci == gl.pse_ci and other.pse_ci != gl.pse_ci
    fixed = fit_guess_lapse(LEVELS, k, n, guess_lapse=0.2, n_bootstrap=300, seed=SEED)
    assert fixed.guess_lapse == 0.2 and fixed.guess_lapse_fixed and fixed.guess_lapse_ci is None
    assert fixed.rate_ci[1] - fixed.rate_ci[0] < gl.rate_ci[1] - gl.rate_ci[0]  # knowing q narrows the interval


def _lower_acceptable(sims, level, alpha=0.001):
    """The smallest hit count not rejected (one-sided, at ``alpha``) for a nominal coverage ``level``."""
    return int(stats.binom.ppf(alpha, sims, level))


@pytest.mark.parametrize("bootstrap", ["parametric", "nonparametric"])
def test_pse_and_jnd_intervals_cover_at_about_the_nominal_rate(bootstrap):
    sims, level = 50, 0.9
    rng = np.random.default_rng(SEED)
    jnd_true = jnd_from_scale(1 / 12, "logistic")
    hits = {"pse": 0, "jnd": 0}
    for i in range(sims):
        k, n = simulate_counts(LEVELS, pse=0.4, rate=12.0, q=0.2, n_per_order=25, rng=rng)
        f = fit_guess_lapse(LEVELS, k, n, n_bootstrap=200, bootstrap=bootstrap, ci_level=level, seed=SEED + i)
        hits["pse"] += f.pse_ci is not None and f.pse_ci[0] <= 0.4 <= f.pse_ci[1]
        hits["jnd"] += f.jnd_ci is not None and f.jnd_ci[0] <= jnd_true <= f.jnd_ci[1]
    print(f"seed={SEED} {bootstrap} coverage at {level}: PSE {hits['pse']}/{sims}, JND {hits['jnd']}/{sims}")
    # one-sided at 0.001: 50 runs cannot tell over-coverage from chance at 0.9 (0.9**50 = 0.005)
    low = _lower_acceptable(sims, level)
    assert hits["pse"] >= low and hits["jnd"] >= low


def test_pse_shift_recovers_a_planted_shift_and_covers_zero():
    rng = np.random.default_rng(SEED)
    ka, n = simulate_counts(LEVELS, pse=0.35, rate=12.0, q=0.2, n_per_order=40, rng=rng)
    kb, _ = simulate_counts(LEVELS, pse=0.55, rate=12.0, q=0.2, n_per_order=40, rng=rng)
    r = pse_shift((LEVELS, ka, n), (LEVELS, kb, n), n_bootstrap=400, seed=SEED)
    print(f"seed={SEED} planted shift 0.2: {r.shift:.3f} {r.shift_ci}")
    assert r.shift_ci[0] <= 0.2 <= r.shift_ci[1] and r.shift_ci[0] > 0
    assert r.fit_a.pse_ci is not None and r.fit_b.n_bootstrap == 400 and r.n_bootstrap_valid == 400
    assert r.to_dict()["shift"] == r.shift
    # a planted zero shift: the interval holds 0 at about the nominal rate
    sims, level, hits = 40, 0.9, 0
    for i in range(sims):
        ka, n = simulate_counts(LEVELS, pse=0.45, rate=12.0, q=0.2, n_per_order=20, rng=rng)
        kb, _ = simulate_counts(LEVELS, pse=0.45, rate=12.0, q=0.2, n_per_order=20, rng=rng)
        z = pse_shift((LEVELS, ka, n), (LEVELS, kb, n), n_bootstrap=200, ci_level=level, seed=SEED + i)
        hits += z.shift_ci is not None and z.shift_ci[0] <= 0.0 <= z.shift_ci[1]
    print(f"zero shift: interval holds 0 in {hits}/{sims} (nominal {level})")
    assert _lower_acceptable(sims, level) <= hits


def test_levels_bootstrap_and_paired_shift():
    rng = np.random.default_rng(SEED)
    x = np.linspace(0, 1, 41)
    ka, n = simulate_counts(x, pse=0.4, rate=12.0, q=0.1, n_per_order=5, rng=rng)
    kb, _ = simulate_counts(x, pse=0.6, rate=12.0, q=0.1, n_per_order=5, rng=rng)
    f = fit_guess_lapse(x, ka, n, bootstrap="levels", n_bootstrap=300, seed=SEED)
    assert f.bootstrap == "levels" and f.pse_ci[0] <= 0.4 <= f.pse_ci[1]
    r = pse_shift((x, ka, n), (x, kb, n), bootstrap="levels", n_bootstrap=300, seed=SEED)
    assert r.paired and r.shift_ci[0] <= 0.2 <= r.shift_ci[1]
    unpaired = pse_shift((x, ka, n), (x[::-1], kb[::-1], n), bootstrap="levels", n_bootstrap=50, seed=SEED)
    assert not unpaired.paired


def test_data_that_identify_no_curve_get_a_status_and_a_message():
    x = [0.0, 0.25, 0.5, 0.75, 1.0]
    flat = fit_guess_lapse(x, [0, 0, 0, 0, 0], 10, n_bootstrap=20, seed=SEED)
    assert flat.status == "no_variation" and flat.pse is None and flat.pse_ci is None
    assert flat.message == MSG_GL_NO_VARIATION.format(side=1)
    assert fit_guess_lapse(x, [10] * 5, 10).message == MSG_GL_NO_VARIATION.format(side=2)
    sep = fit_guess_lapse(x, [0, 0, 0, 10, 10], 10)
    assert sep.status == "separated" and sep.pse_bracket == (0.5, 0.75) and sep.scale is None and sep.jnd is None
    assert sep.message == MSG_GL_SEPARATED.format(low=0.5, high=0.75)
    step = fit_guess_lapse([0, 0.1, 0.2, 0.3, 0.7, 0.8, 0.9, 1.0], [1, 0, 1, 0, 40, 39, 40, 39], 40)
    assert step.status == "step" and step.pse_bracket == (0.3, 0.7) and step.jnd is None
    assert 0.3 <= step.pse <= 0.7 and step.message.startswith("The best fit is a step between α = 0.3 and α = 0.7")
    # a rise at one level (its share free as the scale goes to 0): also no finite steepness, bracket = neighbours
    rise = fit_guess_lapse([0, 0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 1.0], [1, 0, 1, 0, 15, 40, 39, 40, 39], 40)
    assert rise.status == "step" and rise.pse == 0.6 and rise.pse_bracket == (0.3, 0.7) and rise.scale is None
    none = fit_guess_lapse(x, [20, 20, 20, 20, 20], 40)  # no dependence on α
    assert none.status == "flat" and none.pse is None and none.jnd is None
    assert none.message.startswith(MSG_GL_FLAT.split("{")[0])
    with pytest.raises(DataError) as e:
        fit_guess_lapse([0.2, 0.8, 0.8], [1, 5, 6], 10)
    assert e.value.message == MSG_GL_TOO_FEW_LEVELS.format(need=3, count=2)
    with pytest.raises(DataError) as e:  # a level without a parseable answer does not count
        fit_guess_lapse([0.2, 0.5, 0.8], [1, 0, 6], [10, 0, 10])
    assert e.value.message == MSG_GL_TOO_FEW_LEVELS.format(need=3, count=2)
    with pytest.raises(DataError):
        fit_guess_lapse(x, [0, 1, 2, 3, 11], 10)
    with pytest.raises(MethodError) as e:
        fit_guess_lapse(x, [0, 1, 2, 3, 4], 10, guess_lapse=1.0)
    assert e.value.message == MSG_GL_BAD_Q.format(value=1.0)
    with pytest.raises(MethodError) as e:
        guess_lapse_from_position_share(1.5)
    assert e.value.message == MSG_GL_BAD_SHARE.format(value=1.5)
    with pytest.raises(MethodError) as e:
        fit_guess_lapse(x, [0, 1, 2, 3, 4], 10, bootstrap="jackknife")
    assert e.value.message == MSG_GL_BAD_BOOTSTRAP.format(value="jackknife")
    with pytest.raises(MethodError) as e:
        fit_guess_lapse(x, [0, 1, 2, 3, 4], 10, n_bootstrap=5)
    assert e.value.message == MSG_SEED_REQUIRED
    r = pse_shift((x, [0, 2, 5, 8, 10], 10), (x, [0] * 5, 10), n_bootstrap=10, seed=SEED)
    assert r.shift is None and r.message == MSG_SHIFT_NO_FIT.format(which="context b", status="no_variation")


def test_planted_responder_reads_its_template_and_refuses_at_its_rate():
    names = ["Ann", "Bo", "Cy"]
    contexts = {"{name} is a nurse.": (0.3, 400.0), "{name} is an engineer.": (0.7, 400.0)}
    responder = PlantedPsychometricResponder({"Ann": 1.0, "Bo": 0.5, "Cy": 0.0}, contexts, q=0.0, seed=SEED,
                                             refusal_rate=0.2)
    rows = balanced_requests(names, "{name} is a nurse.", responder.cues, samples=50, seed=SEED)
    texts = [r.text for r in DummyChatLM(responder).chat([r for _, _, r in rows])]
    assert texts == [r.text for r in DummyChatLM(responder).chat([r for _, _, r in rows])]  # same request, same answer
    c = count_answers(rows, texts, names, responder.cues)
    assert set(texts) <= {"man", "woman", REFUSAL}
    assert c["other"].sum() / len(texts) == pytest.approx(0.2, abs=0.05)
    # rate 400: Ann (α 1) and Bo (α 0.5 > PSE 0.3) are "woman" in the nurse context, Cy is "man"
    assert list(c["k"]) == [c["n"][0], c["n"][1], 0]
    rows = balanced_requests(["Bo"], "{name} is an engineer.", responder.cues, samples=20, seed=SEED)
    eng = count_answers(rows, [r.text for r in DummyChatLM(responder).chat([r for _, _, r in rows])], ["Bo"],
                        responder.cues)
    assert eng["k"][0] == 0 and eng["n"][0] > 0  # α 0.5 < PSE 0.7 → "man"
    assert DummyChatLM(responder).chat([rows[0][2].__class__.ask("hello")])[0].text != "woman"
    assert special.expit(0.0) == 0.5


def test_name_continuum_end_to_end_with_a_planted_chat_subject():
    """The built-in names, asked in two contexts by a planted subject with a position habit: the shift is found."""
    from biastest.continuum import name_continuum

    names = name_continuum()
    alphas = {s.text: s.alpha for s in names.stimuli}
    nurse, engineer = "{name} is a nurse.", "{name} is an engineer."
    responder = PlantedPsychometricResponder(alphas, {nurse: (0.35, 12.0), engineer: (0.65, 12.0)}, q=0.2,
                                             seed=SEED, refusal_rate=0.05)
    model = DummyChatLM(responder)
    stimuli = [s.text for s in names.stimuli]
    x = np.array(names.alphas)
    data = []
    for context in (nurse, engineer):
        rows = balanced_requests(stimuli, context, responder.cues, samples=4, seed=SEED)
        c = count_answers(rows, [r.text for r in model.chat([r for _, _, r in rows])], stimuli, responder.cues)
        assert c["other"].sum() > 0  # refusals are counted apart, not folded into a side
        data.append((x, c["k"], c["n"]))
    r = pse_shift(data[0], data[1], bootstrap="levels", n_bootstrap=300, seed=SEED)
    print(f"seed={SEED} names: PSE nurse {r.fit_a.pse:.3f} {r.fit_a.pse_ci}, engineer {r.fit_b.pse:.3f} "
          f"{r.fit_b.pse_ci}, shift {r.shift:.3f} {r.shift_ci}")
    assert r.paired and r.fit_a.pse_ci[0] <= 0.35 <= r.fit_a.pse_ci[1]
    assert r.fit_b.pse_ci[0] <= 0.65 <= r.fit_b.pse_ci[1]
    assert r.shift_ci[0] <= 0.3 <= r.shift_ci[1] and r.shift_ci[0] > 0
