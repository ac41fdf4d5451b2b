"""WEAT (Caliskan et al. 2017) and MAC (Manzini et al. 2019) on word vectors.

WEAT, for target sets X, Y and attribute sets A, B, with cosine ``cos``:

    s(w, A, B)    = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
    s(X, Y, A, B) = Σ_{x∈X} s(x, A, B) − Σ_{y∈Y} s(y, A, B)          (test statistic)
    d             = (mean_{x∈X} s(x, A, B) − mean_{y∈Y} s(y, A, B))
                    / std_{w∈X∪Y} s(w, A, B)                          (effect size, std with ddof=1)

The p-value is a permutation test over re-partitions of X ∪ Y into groups of
sizes |X| and |Y| (:func:`biastest.stats.permutation.partition_permutation_test`):
one-sided ``P(s(X_i, Y_i, A, B) ≥ s(X, Y, A, B))`` and two-sided. The test
statistic and the effect size are reported separately (WEFE's default
returns the statistic, which is often mistaken for d).

The permutation test holds the words fixed and asks only whether the split
into X and Y matters; it says nothing about how much d depends on *which*
words were chosen — and WEAT results move with the word lists (Antoniak &
Mimno 2021). The interval of d therefore treats the words of all four lists
as sampled. Since issue 28 it is the **jackknife interval**
(:func:`weat_jackknife_interval`): d is recomputed with each word of X, Y, A
and B left out in turn, the multi-sample jackknife standard error is
``SE = √(Σ_k (n_k − 1)/n_k · Σ_j (d_(kj) − mean_j d_(kj))²)`` (Efron & Stein
1981; Efron & Tibshirani 1993 §11 for one sample, summed over the four
independent lists as for a crossed design), and the interval is
``d ± z_{1−α/2}·SE``, clipped to d's range [−2, 2]. It was chosen over the
percentile word bootstrap (Lowe's ``cbn::weat_boot``; the method before issue
28, still computed for results that ask for it) and its BCa form because it
alone covers ≥ 93 % over d = 0–1.8 with 8–25 words per list
(``benchmarks/bench_intervals.py``; docs/testing.md has the table): near d's
ceiling the sample d is biased low and the bootstrap distribution is squeezed
under the bound, so both bootstrap intervals fall to 80–90 %, while the
jackknife standard error errs on the wide side (Efron & Stein 1981) and needs
no resampling and no seed.

MAC, for protected words T and attribute classes A_1 … A_K:

    MAC = 1/(|T|·K) Σ_{t∈T} Σ_j mean_{a∈A_j} (1 − cos(t, a))

reported with the full per-word × per-class table (and the raw distances
per word × attribute word), not only the mean of means.

MAC per group (several protected groups, each with its own stereotype class,
as Manzini et al.'s religion, race and gender vocabularies): with
``S(t, A_j) = mean_{a∈A_j} (1 − cos(t, a))``, for group g with words T_g and
stereotype class A_g,

    MAC(g, A_j)   = mean_{t∈T_g} S(t, A_j)                       (per group and class)
    own(g)        = MAC(g, A_g)
    others(g)     = mean_{j≠g} MAC(g, A_j)                        (the other groups' stereotypes)
    contrast(g)   = own(g) − others(g)

A negative contrast means the group's words sit closer to their own group's
stereotype than to the other groups' stereotypes (the direction of bias). The
same contrast per word is ``S(t, A_g) − mean_{j≠g} S(t, A_j)``. These are still
means of means with no interval (the Bayesian estimate gives the intervals).

References
----------
Caliskan, Bryson & Narayanan (2017), Semantics derived automatically from
language corpora contain human-like biases. Science 356(6334).
Manzini, Lim, Tsvetkov & Black (2019), Black is to criminal as Caucasian is
to police: detecting and removing multiclass bias in word embeddings. NAACL.
Antoniak & Mimno (2021), Bad seeds: evaluating lexical methods for bias
measurement. ACL.
Lowe, W., cbn: data and code for Caliskan, Bryson & Narayanan (2017),
``weat_boot`` (https://conjugateprior.github.io/cbn/reference/weat_boot.html).
Owen (2007), The pigeonhole bootstrap. Annals of Applied Statistics 1(2).
Efron & Stein (1981), The jackknife estimate of variance. Annals of Statistics 9(3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from biastest.errors import DataError, MethodError
from biastest.measures.weat.result import MACResult, WEATResult
from biastest.models.embeddings import cosine_matrix
from biastest.stats.permutation import partition_permutation_test

__all__ = [
    "weat",
    "weat_association",
    "weat_statistic",
    "weat_effect_size",
    "weat_effect_size_bootstrap",
    "weat_jackknife",
    "weat_jackknife_interval",
    "bca_interval",
    "INTERVAL_METHODS",
    "WEATBootstrap",
    "WEATSettings",
    "mac",
    "MSG_WEAT_TOO_FEW",
    "MSG_WEAT_TOO_FEW_TARGETS",
    "MIN_TARGET_WORDS",
    "check_target_words",
    "MSG_WEAT_NO_SPREAD",
    "MSG_MAC_EMPTY",
    "MSG_MAC_GROUPS",
    "MSG_WEAT_BOOTSTRAP_SEED",
]

MSG_WEAT_TOO_FEW = (
    "WEAT needs at least {need} word(s) in '{role}' with vectors; it has {n}. Add words or choose another embedding."
)
#: Target words (X and Y together, with vectors) the effect size needs: it divides by their standard deviation.
MIN_TARGET_WORDS = 3
#: The one rule on the number of target words, said the same way where a spec is checked (the app's step 1, with
#: the embedding) and where WEAT runs (:func:`check_target_words`).
MSG_WEAT_TOO_FEW_TARGETS = (
    "WEAT needs at least {need} target words with vectors in '{x}' and '{y}' together (its effect size divides by "
    "their spread); they have {n}. Add target words or choose another embedding."
)
MSG_WEAT_NO_SPREAD = (
    "All target words have exactly the same association score, so the WEAT effect size is undefined "
    "(division by a zero standard deviation). Use more varied target words."
)
MSG_WEAT_BOOTSTRAP_SEED = (
    "The interval of the WEAT effect size resamples the words at random; give a seed so that it can be repeated."
)
MSG_MAC_EMPTY = (
    "MAC needs at least one protected word and one attribute class with words; got {n_words} and {n_classes}."
)

MSG_MAC_GROUPS = (
    "MAC per group needs every group's stereotype attribute list among the attribute lists and every group word "
    "among the protected words; '{problem}' is not."
)


def check_target_words(n_x: int, n_y: int, *, x: str = "X", y: str = "Y") -> None:
    """Refuse fewer than :data:`MIN_TARGET_WORDS` target words with vectors (``n_x`` of list ``x``, ``n_y`` of
    ``y``) with :data:`MSG_WEAT_TOO_FEW_TARGETS` — the rule :func:`weat` applies, for a check made before it runs."""
    if n_x + n_y < MIN_TARGET_WORDS:
        raise DataError(MSG_WEAT_TOO_FEW_TARGETS.format(need=MIN_TARGET_WORDS, x=x, y=y, n=n_x + n_y), role="X")


def weat_association(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """s(w, A, B) = mean_a cos(w, a) − mean_b cos(w, b) for each row w."""
    return cosine_matrix(w, a).mean(axis=1) - cosine_matrix(w, b).mean(axis=1)


def weat_statistic(s_x: np.ndarray, s_y: np.ndarray) -> float:
    """s(X, Y, A, B) = Σ_x s(x, A, B) − Σ_y s(y, A, B)."""
    return float(np.sum(s_x) - np.sum(s_y))


def weat_effect_size(s_x: np.ndarray, s_y: np.ndarray) -> float:
    """d = (mean s_X − mean s_Y) / std(s over X ∪ Y, ddof=1)."""
    pooled = np.concatenate([s_x, s_y])
    sd = float(np.std(pooled, ddof=1))
    if not np.isfinite(sd) or sd == 0.0:
        raise DataError(MSG_WEAT_NO_SPREAD)
    return float((np.mean(s_x) - np.mean(s_y)) / sd)


@dataclass(frozen=True)
class WEATBootstrap:
    """Bootstrap of the WEAT effect size over the words (see :func:`weat_effect_size_bootstrap`).

    Attributes
    ----------
    ci : (float, float) or None
        Percentile interval of d at ``ci_level``; None when fewer than two
        resamples had a defined d.
    draws : numpy array
        d of every resample with a defined d (resamples whose associations
        are all equal have none and are left out).
    n_bootstrap, n_valid : int
        Resamples drawn, and those with a defined d.
    """

    ci: tuple[float, float] | None
    ci_level: float
    n_bootstrap: int
    n_valid: int
    seed: int
    draws: np.ndarray
    method: str = "percentile"


_BOOT_CHUNK = 4096
#: Interval methods of d: ``"bca"`` (the default since issue 28) and ``"percentile"`` (results before it).
INTERVAL_METHODS = ("bca", "percentile")


def weat_jackknife(cos_xa: np.ndarray, cos_xb: np.ndarray, cos_ya: np.ndarray,
                   cos_yb: np.ndarray) -> list[np.ndarray]:
    """d with one word left out, for each word of X, Y, A and B in turn: four arrays (NaN where d is undefined).

    ``out[k][j]`` is d of the lists with word j of list k (X, Y, A, B) removed; the other lists whole.
    """
    def d_of(xa, xb, ya, yb) -> float:
        if min(xa.shape[1], xb.shape[1]) == 0 or xa.shape[0] + ya.shape[0] < 3:
            return float("nan")
        sx, sy = xa.mean(axis=1) - xb.mean(axis=1), ya.mean(axis=1) - yb.mean(axis=1)
        if sx.size == 0 or sy.size == 0:
            return float("nan")
        sd = float(np.concatenate([sx, sy]).std(ddof=1))
        return float((sx.mean() - sy.mean()) / sd) if sd > 1e-12 * (1 + float(np.abs(sx).max())) else float("nan")

    nx, na = cos_xa.shape
    ny, nb = cos_yb.shape
    keep = [np.delete(np.arange(n), j) for n in (nx, ny, na, nb) for j in range(n)]
    out, pos = [], 0
    for k, n in enumerate((nx, ny, na, nb)):
        vals = []
        for _ in range(n):
            ix = keep[pos]
            pos += 1
            if k == 0:
                vals.append(d_of(cos_xa[ix], cos_xb[ix], cos_ya, cos_yb))
            elif k == 1:
                vals.append(d_of(cos_xa, cos_xb, cos_ya[ix], cos_yb[ix]))
            elif k == 2:
                vals.append(d_of(cos_xa[:, ix], cos_xb, cos_ya[:, ix], cos_yb))
            else:
                vals.append(d_of(cos_xa, cos_xb[:, ix], cos_ya, cos_yb[:, ix]))
        out.append(np.array(vals, dtype=np.float64))
    return out


def weat_jackknife_interval(cos_xa: np.ndarray, cos_xb: np.ndarray, cos_ya: np.ndarray, cos_yb: np.ndarray, *,
                            ci_level: float = 0.95) -> tuple[float, float] | None:
    """Jackknife interval of d: ``d ± z·SE``, SE from leaving each word of X, Y, A and B out in turn.

    ``SE² = Σ_k (n_k − 1)/n_k · Σ_j (d_(kj) − mean_j d_(kj))²`` over the four lists (:func:`weat_jackknife`;
    leave-one-out values where d is undefined are left out), ``z = Φ⁻¹(1 − α/2)``; the limits are clipped to
    [−2, 2] (d cannot pass them). None when a list has fewer than two words (a list of one has no
    leave-one-out value, so its share of the variance is unknown) or d is undefined.
    """
    from scipy.stats import norm  # late: scipy.stats is slow to import

    if min(cos_xa.shape[0], cos_ya.shape[0], cos_xa.shape[1], cos_xb.shape[1]) < 2:
        return None
    s_x = cos_xa.mean(axis=1) - cos_xb.mean(axis=1)
    s_y = cos_ya.mean(axis=1) - cos_yb.mean(axis=1)
    try:
        d = weat_effect_size(s_x, s_y)
    except DataError:
        return None
    var = 0.0
    for jk in weat_jackknife(cos_xa, cos_xb, cos_ya, cos_yb):
        jk = jk[np.isfinite(jk)]
        if jk.size < 2:
            return None
        var += (jk.size - 1) / jk.size * float(np.sum((jk - jk.mean()) ** 2))
    half = float(norm.ppf(1 - (1 - float(ci_level)) / 2)) * float(np.sqrt(var))
    return max(-2.0, d - half), min(2.0, d + half)


def bca_interval(draws: np.ndarray, estimate: float, jackknife: Sequence[np.ndarray],
                 ci_level: float) -> tuple[float, float] | None:
    """Bias-corrected and accelerated (BCa) interval from bootstrap draws and leave-one-out values per sample.

    Efron (1987, JASA 82:171); Efron & Tibshirani (1993) §14.3; Davison & Hinkley (1997) §5.3.2 for several
    samples. ``z0 = Φ⁻¹((#{θ* < θ̂} + ½·#{θ* = θ̂}) / B)`` (the share clipped to [1/(B+1), B/(B+1)]); with, for
    each sample k of size n_k and its leave-one-out values ``θ_(kj)``, ``D_kj = mean_j θ_(kj) − θ_(kj)``,
    the acceleration ``a = Σ_k Σ_j D_kj³ / (6 · (Σ_k Σ_j D_kj²)^{3/2})`` (the jackknife estimate of the
    empirical influence values ``l_kj = (n_k − 1)·D_kj`` in DH's multi-sample formula, whose ``n_k``
    factors cancel); the limits are the ``Φ(z0 + (z0 + z_q)/(1 − a·(z0 + z_q)))`` quantiles of the draws for
    ``z_q = Φ⁻¹(α/2)`` and ``Φ⁻¹(1 − α/2)``. None when fewer than two draws; undefined leave-one-out values are
    left out of ``a`` (a = 0 when none is left).
    """
    from scipy.stats import norm  # late: scipy.stats is slow to import

    draws = np.asarray(draws, dtype=np.float64)
    if draws.size < 2:
        return None
    b = draws.size
    share = (np.count_nonzero(draws < estimate) + 0.5 * np.count_nonzero(draws == estimate)) / b
    z0 = float(norm.ppf(min(max(share, 1 / (b + 1)), b / (b + 1))))
    num = den = 0.0
    for jk in jackknife:
        jk = jk[np.isfinite(jk)]
        if jk.size < 2:
            continue
        dev = jk.mean() - jk
        num += float(np.sum(dev ** 3))
        den += float(np.sum(dev ** 2))
    acc = num / (6.0 * den ** 1.5) if den > 0 else 0.0
    alpha = 1.0 - float(ci_level)
    qs = []
    for z in (norm.ppf(alpha / 2), norm.ppf(1 - alpha / 2)):
        w = z0 + z
        qs.append(float(norm.cdf(z0 + w / (1 - acc * w))) if 1 - acc * w > 0 else (0.0 if z < 0 else 1.0))
    lo_q, hi_q = np.quantile(draws, qs)
    return float(lo_q), float(hi_q)


def weat_effect_size_bootstrap(
    cos_xa: np.ndarray,
    cos_xb: np.ndarray,
    cos_ya: np.ndarray,
    cos_yb: np.ndarray,
    *,
    n_bootstrap: int,
    seed: int,
    ci_level: float = 0.95,
    method: str = "percentile",
) -> WEATBootstrap:
    """Bootstrap interval of the WEAT effect size d, resampling every word list (BCa or percentile).

    Resample b draws, from ``numpy.random.default_rng(seed)`` in this order,
    ``ix = integers(0, |X|, (B, |X|))``, then ``iy`` (|Y|), ``ia`` (|A|) and
    ``ib`` (|B|): each list is drawn with replacement from itself, the four
    independently. With those words
    ``s*(w) = mean_{a∈A*} cos(w, a) − mean_{b∈B*} cos(w, b)`` and
    ``d* = (mean_{x∈X*} s* − mean_{y∈Y*} s*) / std_{X*∪Y*}(s*)`` (ddof=1),
    exactly d of the resampled lists (a word drawn twice counts twice). The
    interval is ``[q(a/2), q(1 − a/2)]`` of the d*, ``a = 1 − ci_level``
    (Efron's percentile method, ``numpy.quantile``) with ``method="percentile"``,
    and the BCa interval of the same draws (:func:`bca_interval`, acceleration from
    :func:`weat_jackknife`) with ``method="bca"``. A resample whose
    associations are all equal has no d and is left out (``n_valid``).

    References: Lowe's ``cbn::weat_boot`` (each of the four word sets
    resampled separately with replacement); Owen (2007), the pigeonhole
    bootstrap for crossed designs; Caliskan et al. (2017) for d.

    Parameters
    ----------
    cos_xa, cos_xb, cos_ya, cos_yb : arrays
        Cosine similarities, rows targets, columns attributes.
    n_bootstrap : int
    seed : int
    ci_level : float
    method : {"percentile", "bca"}

    Returns
    -------
    WEATBootstrap

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> xa, xb, ya, yb = (rng.normal(m, 0.1, (6, 5)) for m in (0.4, 0.1, 0.1, 0.4))
    >>> bs = weat_effect_size_bootstrap(xa, xb, ya, yb, n_bootstrap=500, seed=0)
    >>> bs.ci[0] > 1.0, bs.n_valid
    (True, 500)
    """
    if seed is None:
        raise MethodError(MSG_WEAT_BOOTSTRAP_SEED)
    rng = np.random.default_rng(seed)
    nx, na = cos_xa.shape
    ny, nb = cos_yb.shape
    n = int(n_bootstrap)
    ix = rng.integers(0, nx, size=(n, nx))
    iy = rng.integers(0, ny, size=(n, ny))
    ia = rng.integers(0, na, size=(n, na))
    ib = rng.integers(0, nb, size=(n, nb))
    out = np.empty(n)
    for lo in range(0, n, _BOOT_CHUNK):
        sl = slice(lo, min(n, lo + _BOOT_CHUNK))
        rows = np.arange(sl.stop - sl.start)[:, None]
        wa = np.zeros((len(rows), na))
        wb = np.zeros((len(rows), nb))
        np.add.at(wa, (rows, ia[sl]), 1.0 / na)
        np.add.at(wb, (rows, ib[sl]), 1.0 / nb)
        s_x = np.take_along_axis(wa @ cos_xa.T - wb @ cos_xb.T, ix[sl], axis=1)  # [b, |X|]
        s_y = np.take_along_axis(wa @ cos_ya.T - wb @ cos_yb.T, iy[sl], axis=1)  # [b, |Y|]
        sd = np.concatenate([s_x, s_y], axis=1).std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (s_x.mean(axis=1) - s_y.mean(axis=1)) / sd
        out[sl] = np.where(sd > 1e-12 * (1 + np.abs(s_x).max(axis=1)), d, np.nan)
    draws = out[np.isfinite(out)]
    ci = None
    if method == "bca":
        s_x = cos_xa.mean(axis=1) - cos_xb.mean(axis=1)
        s_y = cos_ya.mean(axis=1) - cos_yb.mean(axis=1)
        ci = bca_interval(draws, weat_effect_size(s_x, s_y), weat_jackknife(cos_xa, cos_xb, cos_ya, cos_yb),
                          ci_level)
    elif draws.size >= 2:
        a = 1.0 - float(ci_level)
        lo_q, hi_q = np.quantile(draws, [a / 2, 1 - a / 2])
        ci = (float(lo_q), float(hi_q))
    return WEATBootstrap(ci=ci, ci_level=float(ci_level), n_bootstrap=n, n_valid=int(draws.size), seed=int(seed),
                         draws=draws, method=method)


@dataclass(frozen=True)
class WEATSettings:
    """How :func:`weat` tests and bounds its effect size.

    Attributes
    ----------
    seed : int or None
        Seed of the permutation sampling (needed when partitions are sampled) and of the bootstrap.
    alternative : {"greater", "less", "two-sided"}
    n_permutations : int
        Distinct partitions sampled without replacement when there are more
        than ``exact_limit``.
    exact_limit : int
        Enumerate all partitions when there are at most this many.
    n_bootstrap : int
        0: no interval of d; otherwise the interval is given (the jackknife
        interval, :func:`weat_jackknife_interval`, which draws nothing) and
        this number is recorded as the resamples of the target words a
        comparison's interval of Δd draws (:mod:`biastest.measures.weat.compare`).
    ci_level : float
        Level of that interval.
    """

    seed: int | None
    alternative: Literal["greater", "less", "two-sided"] = "greater"
    n_permutations: int = 10_000
    exact_limit: int = 100_000
    n_bootstrap: int = 0
    ci_level: float = 0.95


def weat(
    x_vectors: np.ndarray,
    y_vectors: np.ndarray,
    a_vectors: np.ndarray,
    b_vectors: np.ndarray,
    *,
    x_words: Sequence[str],
    y_words: Sequence[str],
    a_words: Sequence[str],
    b_words: Sequence[str],
    settings: WEATSettings,
    names: Mapping[str, str] | None = None,
    missing: Mapping[str, Sequence[str]] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> WEATResult:
    """The Word Embedding Association Test on given vectors.

    ``s(w,A,B) = mean_a cos(w,a) − mean_b cos(w,b)``;
    ``s(X,Y,A,B) = Σ_x s(x,A,B) − Σ_y s(y,A,B)``;
    ``d = (mean_x s − mean_y s) / std_{X∪Y}(s)`` (ddof=1). Reference:
    Caliskan et al. (2017), Science 356(6334):183–186.

    Parameters
    ----------
    x_vectors, y_vectors, a_vectors, b_vectors : arrays [n, dim]
    x_words, y_words, a_words, b_words : sequence of str
        The words of the rows (for the per-word table).
    settings : WEATSettings
        The seed, the alternative, the permutations and the bootstrap.
    names : mapping, optional
        Display names of X, Y, A, B (default: the letters).
    missing : mapping, optional
        Per role, the words the embedding did not have (recorded).
    provenance : mapping, optional
        Recorded in the result.

    Returns
    -------
    WEATResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.1], [0.9, 0.2]]); Y = np.array([[0.1, 1.0], [0.2, 0.9]])
    >>> A = np.array([[1.0, 0.0]]); B = np.array([[0.0, 1.0]])
    >>> r = weat(X, Y, A, B, x_words=["x1", "x2"], y_words=["y1", "y2"], a_words=["a"], b_words=["b"],
    ...          settings=WEATSettings(seed=0))
    >>> r.p_one_sided
    0.16666666666666666
    """
    for role, arr, need in (("X", x_vectors, 1), ("Y", y_vectors, 1), ("A", a_vectors, 1), ("B", b_vectors, 1)):
        if len(arr) < need:
            label = (names or {}).get(role, role)
            raise DataError(MSG_WEAT_TOO_FEW.format(need=need, role=label, n=len(arr)), role=role)
    check_target_words(len(x_vectors), len(y_vectors), x=(names or {}).get("X", "X"), y=(names or {}).get("Y", "Y"))
    cos_xa, cos_xb = cosine_matrix(x_vectors, a_vectors), cosine_matrix(x_vectors, b_vectors)
    cos_ya, cos_yb = cosine_matrix(y_vectors, a_vectors), cosine_matrix(y_vectors, b_vectors)
    s_x = cos_xa.mean(axis=1) - cos_xb.mean(axis=1)
    s_y = cos_ya.mean(axis=1) - cos_yb.mean(axis=1)
    d = weat_effect_size(s_x, s_y)
    stat = weat_statistic(s_x, s_y)
    perm = partition_permutation_test(
        np.concatenate([s_x, s_y]),
        n_first=len(s_x),
        statistic="difference_of_sums",
        alternative=settings.alternative,
        exact_limit=settings.exact_limit,
        n_samples=settings.n_permutations,
        seed=settings.seed,
    )
    ci = None
    if settings.n_bootstrap:
        ci = weat_jackknife_interval(cos_xa, cos_xb, cos_ya, cos_yb, ci_level=settings.ci_level)
    rows = []
    for label, words, s, ca, cb in (("X", x_words, s_x, cos_xa, cos_xb), ("Y", y_words, s_y, cos_ya, cos_yb)):
        for i, w in enumerate(words):
            rows.append(
                {
                    "word": w,
                    "set": label,
                    "s": float(s[i]),
                    "mean_cos_A": float(ca[i].mean()),
                    "mean_cos_B": float(cb[i].mean()),
                }
            )
    return WEATResult(
        effect_size=d,
        test_statistic=stat,
        p_value=perm.p_value,
        p_one_sided=perm.p_greater,
        p_two_sided=perm.p_two_sided,
        alternative=settings.alternative,
        permutation=perm,
        word_scores=tuple(rows),
        x=tuple(x_words),
        y=tuple(y_words),
        a=tuple(a_words),
        b=tuple(b_words),
        missing={k: tuple(v) for k, v in (missing or {}).items()},
        names=dict(names or {"X": "X", "Y": "Y", "A": "A", "B": "B"}),
        seed=settings.seed,
        provenance=dict(provenance or {}),
        effect_size_ci=ci,
        ci_level=float(settings.ci_level),
        n_bootstrap=int(settings.n_bootstrap),
        n_bootstrap_valid=0,
        interval_kind="jackknife",
    )


def mac(
    word_vectors: np.ndarray,
    class_vectors: Mapping[str, np.ndarray],
    *,
    words: Sequence[str],
    class_words: Mapping[str, Sequence[str]],
    missing: Mapping[str, Sequence[str]] | None = None,
    provenance: Mapping[str, Any] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    stereotypes: Mapping[str, str] | None = None,
) -> MACResult:
    """Mean Average Cosine distance with per-word × per-class breakdowns (and per group, when groups are given).

    ``MAC = 1/(|T|·K) Σ_t Σ_j mean_{a∈A_j} (1 − cos(t, a))``. Reference:
    Manzini et al. (2019), NAACL, §3. With ``groups`` and ``stereotypes``, also
    ``MAC(g, A_j)`` per group and class and the contrast per group
    ``MAC(g, A_g) − mean_{j≠g} MAC(g, A_j)`` (see the module docstring).

    Parameters
    ----------
    word_vectors : array [|T|, dim]
        Protected words.
    class_vectors : mapping class name → array [|A_j|, dim]
    words : sequence of str
    class_words : mapping class name → sequence of str
    groups : mapping group name → its protected words, optional
        Words without a vector may be listed; they are skipped (a group needs one word with a vector).
    stereotypes : mapping group name → class name, optional
        The stereotype class of each group (needed with ``groups``).

    Returns
    -------
    MACResult

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> r = mac(W, {"a": np.array([[1.0, 0.0]]), "b": np.array([[0.0, 1.0]])}, words=["x", "y"],
    ...         class_words={"a": ["a1"], "b": ["b1"]}, groups={"X": ["x"], "Y": ["y"]},
    ...         stereotypes={"X": "a", "Y": "b"})
    >>> [c["contrast"] for c in r.group_contrasts]
    [-1.0, -1.0]
    """
    classes = [c for c in class_vectors if len(class_vectors[c])]
    if len(word_vectors) == 0 or not classes:
        raise DataError(MSG_MAC_EMPTY.format(n_words=len(word_vectors), n_classes=len(classes)))
    table = np.zeros((len(word_vectors), len(classes)))
    per_wc, dist_rows = [], []
    for j, c in enumerate(classes):
        dist = 1.0 - cosine_matrix(word_vectors, class_vectors[c])
        table[:, j] = dist.mean(axis=1)
        for i, w in enumerate(words):
            per_wc.append(
                {
                    "word": w,
                    "class": c,
                    "mean_distance": float(table[i, j]),
                    "sd_distance": float(dist[i].std(ddof=1)) if dist.shape[1] > 1 else None,
                    "n_attributes": int(dist.shape[1]),
                }
            )
            for q, aw in enumerate(class_words[c]):
                dist_rows.append({"word": w, "class": c, "attribute": aw, "distance": float(dist[i, q])})
    per_word = [{"word": w, "mean_distance": float(table[i].mean())} for i, w in enumerate(words)]
    per_class = tuple({"class": c, "mean_distance": float(table[:, j].mean())} for j, c in enumerate(classes))
    per_group, contrasts, kept_groups = (), (), {}
    if groups:
        per_group, contrasts, kept_groups = _mac_groups(table, list(words), classes, groups, stereotypes or {},
                                                        per_word)
    return MACResult(
        mac=float(table.mean()),
        per_word_class=tuple(per_wc),
        per_word=tuple(per_word),
        per_class=per_class,
        distances=tuple(dist_rows),
        words=tuple(words),
        classes={c: tuple(class_words[c]) for c in classes},
        missing={k: tuple(v) for k, v in (missing or {}).items()},
        provenance=dict(provenance or {}),
        groups=kept_groups,
        stereotypes={g: stereotypes[g] for g in kept_groups} if kept_groups else {},
        per_group=per_group,
        group_contrasts=contrasts,
    )


def _mac_groups(
    table: np.ndarray,
    words: list[str],
    classes: list[str],
    groups: Mapping[str, Sequence[str]],
    stereotypes: Mapping[str, str],
    per_word: list[dict[str, Any]],
) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...], dict[str, tuple[str, ...]]]:
    """MAC per group and class, the contrast per group (own − others), and per word (written into ``per_word``)."""
    index = {w: i for i, w in enumerate(words)}
    col = {c: j for j, c in enumerate(classes)}
    per_group, contrasts, kept = [], [], {}
    for g, members in groups.items():
        own = stereotypes.get(g)
        if own not in col:
            raise DataError(MSG_MAC_GROUPS.format(problem=f"{g} → {own}"), group=g)
        rows = [index[w] for w in members if w in index]
        if not rows:
            raise DataError(MSG_MAC_GROUPS.format(problem=g), group=g)
        kept[g] = tuple(words[i] for i in rows)
        others = [c for c in classes if c != own]
        means = table[rows].mean(axis=0)
        for j, c in enumerate(classes):
            per_group.append({"group": g, "class": c, "connection": "associated" if c == own else "different",
                              "mean_distance": float(means[j]), "n_words": len(rows)})
        other_mean = float(np.mean([means[col[c]] for c in others])) if others else None
        contrasts.append({"group": g, "own_class": own, "own_distance": float(means[col[own]]),
                          "other_classes": others, "others_distance": other_mean,
                          "contrast": None if other_mean is None else float(means[col[own]]) - other_mean,
                          "group_mac": float(means.mean()), "n_words": len(rows)})
        for i in rows:
            o = float(np.mean([table[i, col[c]] for c in others])) if others else None
            per_word[i].update({"group": g, "own_distance": float(table[i, col[own]]), "others_distance": o,
                                "contrast": None if o is None else float(table[i, col[own]]) - o})
    return tuple(per_group), tuple(contrasts), kept
