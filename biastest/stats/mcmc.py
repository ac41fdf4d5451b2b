"""MCMC convergence diagnostics for many quantities at once: R-hat, bulk/tail ESS and HDI.

The same estimators as ArviZ (``arviz.rhat`` with ``method="rank"``,
``arviz.ess`` with ``method="bulk"`` and ``"tail"``, ``arviz.hdi``), written
over a ``(chain, draw, quantity)`` array so that one call handles every
quantity of a fit. ArviZ evaluates them one quantity at a time in Python
(measured: ~3 s for the ~1,000 quantities of a WEAT fit on two cores); here
they are array operations (tests check every value against ArviZ).

Definitions (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021, *Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC*,
Bayesian Analysis 16(2)):

* **split chains**: each chain's first and last ``⌊n/2⌋`` draws become two chains;
* **rank normalisation**: ``z = Φ⁻¹((r − 3/8) / (S + 1/4))`` with ``r`` the average rank of a draw among
  all ``S`` draws of that quantity (Blom 1958);
* **R-hat** ``= sqrt(((n−1)/n · W + B/n) / W)`` with ``W`` the mean within-chain variance and ``B/n`` the
  variance of the chain means, on the rank-normalised split chains (bulk) and on the rank-normalised
  split chains of ``|x − median(x)|`` (tail); the larger of the two is reported;
* **ESS** ``= M·n / τ``, ``τ = −1 + 2 Σ ρ̂_t`` with autocorrelations ``ρ̂_t = 1 − (W − mean acov_t) / var⁺``
  summed by Geyer's initial positive and monotone sequences (pairs of lags until a pair sum turns
  negative; each pair sum at most the previous); bulk ESS on rank-normalised split chains, tail ESS the
  smaller of the ESS of the indicators ``x ≤ q₀.₀₅`` and ``x ≤ q₀.₉₅`` (type-7 quantiles);
* **HDI**: the shortest interval holding ``⌊p·S⌋ + 1`` of the sorted draws.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ess_bulk", "ess_tail", "hdi", "rhat", "summarise_draws"]

_BLOM = 3 / 8


def _as_3d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2:
        x = x[..., None]
    if x.ndim != 3:
        raise ValueError("draws must have shape (chain, draw) or (chain, draw, quantity)")
    return x


# Internally every array is laid out (quantity, chain, draw), contiguous along the draws.


def _layout(draws: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(_as_3d(draws).transpose(2, 0, 1))


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half:]], axis=1)


def _z_scale(x: np.ndarray) -> np.ndarray:
    from scipy.special import ndtri
    from scipy.stats import rankdata

    v, c, n = x.shape
    size = c * n
    ranks = rankdata(x.reshape(v, size), method="average", axis=1)
    return ndtri((ranks - _BLOM) / (size - 2 * _BLOM + 1)).reshape(v, c, n)


def _basic_rhat(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    between = n * x.mean(axis=2).var(axis=1, ddof=1)
    within = x.var(axis=2, ddof=1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _rhat(x: np.ndarray, z_split: np.ndarray) -> np.ndarray:
    if x.shape[1] < 2 or x.shape[2] < 4:
        return np.full(x.shape[0], np.nan)
    s = _split(x)
    bulk = _basic_rhat(z_split)
    folded = np.abs(s - np.median(s.reshape(s.shape[0], -1), axis=1)[:, None, None])
    tail = _basic_rhat(_z_scale(folded))
    # ArviZ takes Python's max(bulk, tail): NaN when bulk is NaN, otherwise the larger of the comparable values
    return np.where(np.isnan(bulk) | ~(tail > bulk), bulk, tail)


def rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (bulk and tail, the larger) per quantity; NaN with fewer than 2 chains.

    Parameters
    ----------
    draws : ndarray, (chain, draw) or (chain, draw, quantity)

    Returns
    -------
    ndarray, (quantity,)
    """
    x = _layout(draws)
    return _rhat(x, _z_scale(_split(x)))


def _autocov(x: np.ndarray) -> np.ndarray:
    from scipy.fft import irfft, next_fast_len, rfft

    n = x.shape[2]
    m = next_fast_len(2 * n)
    f = rfft(x - x.mean(axis=2, keepdims=True), n=m, axis=2)
    f *= np.conjugate(f)
    return irfft(f, n=m, axis=2)[:, :, :n] / n


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of split (and transformed) chains ``x`` (quantity, chain, draw), Geyer's truncation per quantity."""
    v, c, n = x.shape
    total = c * n
    constant = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    acov = _autocov(x)
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if c > 1:
        var_plus = var_plus + x.mean(axis=2).var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]  # (quantity, lag)
    rho[:, 0] = 1.0
    # Geyer's initial positive sequence: pair sums P_j = ρ_2j + ρ_2j+1; iteration j (lags 2j, 2j+1) runs while
    # 2j − 1 < n − 3 and P_(j−1) > 0, so J (the iterations run) is the number of leading positive pair sums
    j_max = max((n - 1) // 2 - 1, 0)  # iterations allowed by the lag bound: 2j − 1 < n − 3
    pairs = rho[:, 0: 2 * j_max + 1: 2] + rho[:, 1: 2 * j_max + 2: 2]  # P_0 … P_jmax
    rows = np.arange(v)
    if j_max == 0:
        stop = np.zeros(v, dtype=np.int64)
    else:
        positive = pairs[:, :j_max] > 0
        stop = np.where(positive.all(axis=1), j_max, np.argmin(positive, axis=1))  # J per quantity
    # Geyer's initial monotone sequence over the pairs kept (j < J): each pair sum at most the previous one
    monotone = np.minimum.accumulate(pairs, axis=1)
    kept_sum = np.concatenate([np.zeros((v, 1)), np.cumsum(monotone, axis=1)], axis=1)[rows, stop]
    last_even = rho[rows, 2 * stop]
    last = np.where((pairs[rows, stop] >= 0) | (last_even > 0), last_even, 0.0)
    tau = np.maximum(-1.0 + 2.0 * kept_sum + last, 1.0 / np.log10(total))
    # ArviZ's NaN check on the kept autocorrelations can only fire through ρ_1 (later NaN pairs stop the sum)
    ess = np.where(np.isnan(rho[:, 1]), np.nan, total / tau)
    return np.where(constant, float(total), ess)


def _ess_tail(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(x.shape[0], -1)
    out = []
    for prob in (0.05, 0.95):
        q = np.quantile(flat, prob, axis=1, method="linear")  # type 7, as ArviZ (R's default)
        out.append(_ess(_split((x <= q[:, None, None]).astype(np.float64))))
    low, high = out
    return np.where(np.isnan(low) | ~(high < low), low, high)  # Python's min(low, high), as ArviZ


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk effective sample size per quantity (rank-normalised split chains)."""
    x = _layout(draws)
    if x.shape[2] < 4:
        return np.full(x.shape[0], np.nan)
    return _ess(_z_scale(_split(x)))


def ess_tail(draws: np.ndarray) -> np.ndarray:
    """Tail effective sample size per quantity: the smaller ESS of the 5% and 95% quantile indicators."""
    x = _layout(draws)
    if x.shape[2] < 4:
        return np.full(x.shape[0], np.nan)
    return _ess_tail(x)


def hdi(draws: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Highest-density interval per quantity: the shortest interval of ``⌊prob·S⌋ + 1`` sorted draws.

    Returns
    -------
    low, high : ndarray, (quantity,)
    """
    x = _layout(draws)
    return _hdi(np.sort(x.reshape(x.shape[0], -1), axis=1), prob)


def _hdi(ordered: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    size = ordered.shape[1]
    inc = int(np.floor(prob * size))
    if inc >= size:
        raise ValueError("Too few draws for an interval of this mass.")
    start = np.argmin(ordered[:, inc:] - ordered[:, : size - inc], axis=1)
    rows = np.arange(ordered.shape[0])
    return ordered[rows, start], ordered[rows, start + inc]


def summarise_draws(draws: np.ndarray, hdi_prob: float) -> dict[str, np.ndarray]:
    """Mean, sd, HDI, R-hat, bulk and tail ESS per quantity of ``draws`` (chain, draw, quantity)."""
    x = _layout(draws)
    flat = x.reshape(x.shape[0], -1)
    low, high = _hdi(np.sort(flat, axis=1), hdi_prob)
    short = x.shape[2] < 4
    z_split = None if short else _z_scale(_split(x))
    nan = np.full(x.shape[0], np.nan)
    return {
        "mean": flat.mean(axis=1),
        "sd": flat.std(axis=1, ddof=1),
        "hdi_low": low,
        "hdi_high": high,
        "rhat": nan if short else _rhat(x, z_split),
        "ess_bulk": nan if short else _ess(z_split),
        "ess_tail": nan if short else _ess_tail(x),
    }
