"""Vectorised MCMC diagnostics (biastest.stats.mcmc) equal ArviZ's, value by value, on chains of every kind."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from biastest.stats import mcmc

RNG = np.random.default_rng(20240607)


def _ar1(chains, draws, quantities, phi, rng):
    x = np.zeros((chains, draws, quantities))
    e = rng.normal(size=(chains, draws, quantities))
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


CASES = {
    "independent": RNG.normal(size=(2, 1000, 6)),
    "autocorrelated (AR 0.9)": _ar1(2, 1000, 4, 0.9, RNG),
    # so slow that Geyer's sequence is cut by the number of lags, not by a negative pair (odd draws: 501)
    "very slow (AR 0.99), odd draws": _ar1(4, 501, 4, 0.99, RNG),
    "antithetic (AR −0.6): ESS above the draws": _ar1(2, 1000, 4, -0.6, RNG),
    "chains that disagree": RNG.normal(size=(2, 300, 4)) + np.array([0.0, 1.0])[:, None, None],
    "skewed": RNG.gamma(1.5, size=(3, 777, 4)),
    "ties": RNG.integers(0, 3, size=(2, 400, 4)).astype(float),
    "constant": np.ones((2, 200, 2)),
    "one chain": RNG.normal(size=(1, 500, 3)),
    "few draws": RNG.normal(size=(2, 7, 3)),
}


def _arviz(x, prob):
    import arviz as az

    ds = az.convert_to_dataset({"x": x})
    h = np.asarray(az.hdi(ds, hdi_prob=prob)["x"].values)
    return {
        "rhat": np.asarray(az.rhat(ds)["x"].values),
        "ess_bulk": np.asarray(az.ess(ds, method="bulk")["x"].values),
        "ess_tail": np.asarray(az.ess(ds, method="tail")["x"].values),
        "hdi_low": h[:, 0],
        "hdi_high": h[:, 1],
        "mean": x.mean(axis=(0, 1)),
        "sd": x.reshape(-1, x.shape[2]).std(axis=0, ddof=1),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_every_statistic_equals_arviz(name, caplog):
    x = CASES[name]
    with caplog.at_level(logging.ERROR, logger="arviz"), np.errstate(all="ignore"):
        want = _arviz(x, 0.89)
    got = mcmc.summarise_draws(x, 0.89)
    for stat, ref in want.items():
        np.testing.assert_allclose(got[stat], ref, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=f"{name}: {stat}")
    # the single-statistic functions give the same values
    np.testing.assert_allclose(mcmc.rhat(x), want["rhat"], rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(mcmc.ess_bulk(x), want["ess_bulk"], rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(mcmc.ess_tail(x), want["ess_tail"], rtol=1e-10, equal_nan=True)


def test_cases_reach_every_branch():
    """The cases above are not all alike: they cover what each estimator does at its edges."""
    with np.errstate(all="ignore"):
        s = {k: mcmc.summarise_draws(v, 0.89) for k, v in CASES.items()}
    assert np.all(s["antithetic (AR −0.6): ESS above the draws"]["ess_bulk"] > 2000)  # more than the 2 × 1000 draws
    assert np.all(s["very slow (AR 0.99), odd draws"]["ess_bulk"] < 60)
    assert np.all(s["chains that disagree"]["rhat"] > 1.05)
    assert np.all(np.abs(s["independent"]["rhat"] - 1) < 0.01)
    assert np.all(np.isnan(s["one chain"]["rhat"])) and np.all(np.isfinite(s["one chain"]["ess_bulk"]))
    assert np.all(np.isnan(s["constant"]["rhat"])) and np.all(s["constant"]["ess_bulk"] == 400)


def test_hdi_is_the_shortest_interval_by_a_loop():
    x = RNG.gamma(2.0, size=(2, 500, 2))
    low, high = mcmc.hdi(x, 0.8)
    for q in range(2):
        v = sorted(x[:, :, q].ravel())
        k = math.floor(0.8 * len(v))
        widths = [v[i + k] - v[i] for i in range(len(v) - k)]
        i = int(np.argmin(widths))
        assert (low[q], high[q]) == (v[i], v[i + k])


def test_split_rhat_by_hand_on_chains_without_ties():
    """R-hat of rank-normalised split chains, written out as in Vehtari et al. (2021) for one quantity."""
    from scipy.stats import norm, rankdata

    x = RNG.normal(size=(2, 100)) + np.array([[0.0], [0.4]])
    halves = [x[0, :50], x[0, 50:], x[1, :50], x[1, 50:]]

    def rhat_of(chains):
        values = np.concatenate(chains)
        z = norm.ppf((rankdata(values) - 0.375) / (len(values) + 0.25))
        parts = [z[i * 50:(i + 1) * 50] for i in range(4)]
        n = 50
        means = [sum(p) / n for p in parts]
        grand = sum(means) / 4
        b = n * sum((m - grand) ** 2 for m in means) / 3
        w = sum(sum((v - m) ** 2 for v in p) / (n - 1) for p, m in zip(parts, means, strict=True)) / 4
        return math.sqrt(((n - 1) / n * w + b / n) / w)

    med = np.median(np.concatenate(halves))
    want = max(rhat_of(halves), rhat_of([np.abs(h - med) for h in halves]))
    assert mcmc.rhat(x)[0] == pytest.approx(want, rel=1e-12)
