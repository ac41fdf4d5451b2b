"""The NUTS runs of the Bayesian cosine model: the two models, one sampler run, its summaries and convergence.

:func:`run_cell_sampler` samples one model (:data:`~biastest.measures.bayes.score.BAYES_MODELS`) on the
cell statistics of :func:`~biastest.measures.bayes.score.cell_statistics` with NumPyro's NUTS;
:func:`convergence_problems` says, in words, what keeps a run from counting as converged, and
:func:`next_attempt_settings` what the next attempt uses. The posterior sampler
(:mod:`biastest.measures.posterior`) uses the same chain set-up and convergence criteria.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from biastest.errors import MethodError
from biastest.measures.bayes.score import (
    BAYES_MODELS,
    MIN_ESS_PER_CHAIN,
    MSG_BAD_SAMPLER_SETTINGS,
    MSG_NOT_FINITE,
    MSG_PROBLEM_DIVERGENCES,
    MSG_PROBLEM_ESS_BULK,
    MSG_PROBLEM_ESS_TAIL,
    MSG_PROBLEM_ONE_CHAIN,
    MSG_PROBLEM_RHAT,
    MSG_PROBLEM_RHAT_UNDEFINED,
    MSG_UNKNOWN_MODEL,
    RHAT_MAX,
    TARGET_ACCEPT_MAX,
    centering_weights,
    sufficient_log_likelihood,
)
from biastest.options import BOUNDS
from biastest.stats.mcmc import summarise_draws

__all__ = [
    "SamplerRun",
    "configure_parallel_chains",
    "convergence_problems",
    "next_attempt_settings",
    "run_cell_sampler",
    "sample_cell_posterior",
]


def configure_parallel_chains(chains: int) -> str:
    """Give JAX one CPU device per chain when still possible; return the chain method.

    ``numpyro.set_host_device_count`` only works **before** the JAX backend is
    initialised (it sets ``XLA_FLAGS``). This is called lazily, right before
    sampling, never at import: if the backend is still uninitialised it asks
    for ``max(chains, cpu count)`` host devices; if JAX was already
    initialised elsewhere in the process (e.g. by another library) it leaves
    it alone. Importing torch in the same process does not initialise JAX.

    Returns
    -------
    str
        ``"parallel"`` when there are at least ``chains`` devices, otherwise
        ``"sequential"`` (same draws, one chain after the other).
    """
    import jax
    import numpyro
    from jax._src import xla_bridge

    if chains > 1 and not xla_bridge.backends_are_initialized():
        numpyro.set_host_device_count(max(chains, os.cpu_count() or 1))
    return "parallel" if chains > 1 and jax.local_device_count() >= chains else "sequential"


def _additive_model(n, mean, ss, kappa):
    """Seed model. Arrays have shape (..., words, connections); leading axes are independent datasets."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    *batch, n_words, n_conn = n.shape
    nb = len(batch)
    m = numpyro.sample("m", dist.Normal(1.0, 0.5).expand([*batch, n_words]).to_event(nb + 1))
    co = numpyro.sample("co", dist.Normal(0.0, 1.0).expand([*batch, n_conn]).to_event(nb + 1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0).expand(batch).to_event(nb))
    mu = m[..., :, None] + co[..., None, :]
    numpyro.factor("distance", sufficient_log_likelihood(n, mean, ss, mu, jnp.asarray(sigma)[..., None, None], xp=jnp))


def _hierarchical_model(n, mean, ss, kappa):
    """Authors' model. Arrays have shape (..., words, connections); leading axes are independent datasets."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    *batch, _, n_conn = n.shape
    nb = len(batch)
    big_m = numpyro.sample("M", dist.Normal(1.0, 0.3).expand([*batch, n_conn]).to_event(nb + 1))
    tau = numpyro.sample("tau", dist.Exponential(2.0).expand([*batch, n_conn]).to_event(nb + 1))
    sigma = numpyro.sample("sigma", dist.Exponential(2.0).expand([*batch, n_conn]).to_event(nb + 1))
    loc = kappa * big_m[..., None, :]
    raw = numpyro.sample("mu_raw", dist.Normal(loc, tau[..., None, :] ** kappa).to_event(nb + 2))
    mu = numpyro.deterministic("mu", big_m[..., None, :] + tau[..., None, :] ** (1.0 - kappa) * (raw - loc))
    numpyro.factor("distance", sufficient_log_likelihood(n, mean, ss, mu, sigma[..., None, :], xp=jnp))


_MODEL_FNS: dict[str, Callable[..., None]] = {"additive": _additive_model, "hierarchical": _hierarchical_model}

def _check_settings(draws: int, tune: int, chains: int) -> None:
    if not (draws >= 100 and tune >= 100 and 1 <= chains <= 8):
        raise MethodError(MSG_BAD_SAMPLER_SETTINGS.format(draws=draws, tune=tune, chains=chains),
                          draws=draws, tune=tune, chains=chains)



def _summaries(arrays: dict[str, np.ndarray], hdi_prob: float) -> dict[str, dict[str, np.ndarray]]:
    """Mean, sd, HDI, R-hat, bulk/tail ESS for arrays of shape (chain, draw, ...), each stat shaped like one draw.

    All arrays go through :func:`biastest.stats.mcmc.summarise_draws` in one call (the estimators of
    ArviZ's ``hdi``, ``rhat`` and ``ess``, which the tests compare value by value, without ArviZ's
    per-quantity loop).
    """
    chains, draws = next(iter(arrays.values())).shape[:2]
    shapes = {k: v.shape[2:] for k, v in arrays.items()}
    stacked = np.concatenate([v.reshape(chains, draws, -1) for v in arrays.values()], axis=2)
    flat = summarise_draws(stacked, hdi_prob)
    out, at = {}, 0
    for k, shape in shapes.items():
        size = int(np.prod(shape, dtype=np.int64))
        out[k] = {stat: values[at: at + size].reshape(shape) for stat, values in flat.items()}
        at += size
    return out


def _row(stats: dict[str, np.ndarray], idx: tuple[int, ...] | int = ()) -> dict[str, float]:
    return {k: round(float(np.asarray(v)[idx]), 6) for k, v in stats.items()}


@dataclass(frozen=True, eq=False)
class SamplerRun:
    """One NUTS run on cell statistics, with the sampler's own statistics.

    Attributes
    ----------
    samples : dict of ndarray
        Each (chain, draw, ...).
    diverging : ndarray of bool, (chain, draw)
        Divergent transitions among the kept draws.
    accept_prob : ndarray, (chain, draw)
        Acceptance probability of each kept draw's trajectory.
    num_steps : ndarray, (chain, draw)
        Leapfrog steps of each kept draw's trajectory (the tree size).
    step_size : ndarray, (chain,)
        Step size each chain adapted to during warm-up.
    chain_method : str
    seconds : float
        Wall time of compiling and sampling.
    """

    samples: dict[str, np.ndarray]
    diverging: np.ndarray
    accept_prob: np.ndarray
    num_steps: np.ndarray
    step_size: np.ndarray
    chain_method: str
    seconds: float

    def statistics(self) -> dict[str, Any]:
        """Per-chain and total divergences, mean acceptance probability, step size and tree size (JSON-able)."""
        per_chain = [int(v) for v in self.diverging.sum(axis=1)]
        return {
            "divergences": int(sum(per_chain)),
            "divergences_per_chain": per_chain,
            "mean_accept_prob": round(float(self.accept_prob.mean()), 4),
            "mean_accept_prob_per_chain": [round(float(v), 4) for v in self.accept_prob.mean(axis=1)],
            "step_size": [round(float(v), 6) for v in self.step_size],
            "mean_tree_size": [round(float(v), 1) for v in self.num_steps.mean(axis=1)],
        }


def run_cell_sampler(
    n: np.ndarray,
    mean: np.ndarray,
    ss: np.ndarray,
    *,
    model: str,
    seed: int,
    draws: int,
    tune: int,
    chains: int,
    target_accept: float = 0.95,
    progress: Callable[[float, str], None] | None = None,
) -> SamplerRun:
    """Run NUTS on cell statistics (see :func:`cell_statistics`) once.

    Arrays have shape (words, 4), or (datasets, words, 4) to sample several
    independent datasets in one run (their joint posterior factorises, so each
    block's marginal is exactly its own posterior; used for calibration runs).
    """
    if model not in _MODEL_FNS:
        raise MethodError(MSG_UNKNOWN_MODEL.format(name=model, choices=", ".join(BAYES_MODELS)), name=model)
    _check_settings(draws, tune, chains)
    chain_method = configure_parallel_chains(chains)
    import jax
    from numpyro.infer import MCMC, NUTS

    t0 = time.perf_counter()
    kappa = centering_weights(n, mean, ss)
    # dense mass matrix for the additive model: m and co are only jointly identified (m + co), a ridge
    # that a diagonal mass matrix explores very slowly (measured: R-hat 1.11 vs 1.00 at 1000 draws)
    kernel = NUTS(_MODEL_FNS[model], target_accept_prob=target_accept, dense_mass=model == "additive")
    # One compiled run: warm-up and sampling in one call. Splitting it (to report progress between
    # chunks) recompiles the sampler each time (measured ~4 s per chunk on 2 cores), so progress is
    # reported per stage only.
    mcmc = MCMC(kernel, num_warmup=tune, num_samples=draws, num_chains=chains, chain_method=chain_method,
                progress_bar=False)
    if progress:
        progress(0.0, f"Compiling the model and sampling {chains} chains × ({tune} tuning + {draws}) steps")
    mcmc.run(jax.random.PRNGKey(seed), n, mean, ss, kappa,
             extra_fields=("diverging", "accept_prob", "num_steps", "adapt_state.step_size"))
    joined = {k: np.asarray(v, dtype=np.float64) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    for k, v in joined.items():
        if not np.all(np.isfinite(v)):
            raise MethodError(MSG_NOT_FINITE.format(name=k), name=k)
    return SamplerRun(
        samples=joined, diverging=extra["diverging"].astype(bool), accept_prob=extra["accept_prob"].astype(np.float64),
        num_steps=extra["num_steps"].astype(np.float64), step_size=extra["adapt_state.step_size"][:, -1],
        chain_method=chain_method, seconds=round(time.perf_counter() - t0, 3),
    )


def sample_cell_posterior(
    n: np.ndarray,
    mean: np.ndarray,
    ss: np.ndarray,
    *,
    model: str,
    seed: int,
    draws: int,
    tune: int,
    chains: int,
    target_accept: float = 0.95,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray, str]:
    """Run NUTS on cell statistics once (:func:`run_cell_sampler`, without its statistics).

    Returns
    -------
    samples : dict of ndarray, each (chain, draw, ...)
    diverging : ndarray of bool, (chain, draw)
    chain_method : str
    """
    run = run_cell_sampler(n, mean, ss, model=model, seed=seed, draws=draws, tune=tune, chains=chains,
                           target_accept=target_accept, progress=progress)
    return run.samples, run.diverging, run.chain_method


def convergence_problems(diag: Mapping[str, Any], *, chains: int) -> list[str]:
    """What keeps a run from counting as converged, in words (empty list: converged).

    The criteria (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021, *Rank-normalization, folding,
    and localization: an improved R-hat*): rank-normalised split R-hat ≤ :data:`RHAT_MAX` for every
    quantity summarised, bulk and tail effective sample sizes ≥ :data:`MIN_ESS_PER_CHAIN` per chain,
    and no divergent transition (Betancourt 2017: a divergence means the sampler could not follow
    the posterior's geometry there, so the draws may be biased).

    Parameters
    ----------
    diag : mapping
        ``max_rhat``, ``rhat_undefined`` (count of quantities whose R-hat is NaN),
        ``min_ess_bulk``, ``min_ess_tail``, ``divergences``.
    chains : int
    """
    min_ess = MIN_ESS_PER_CHAIN * chains
    out = []
    if chains < 2:
        out.append(MSG_PROBLEM_ONE_CHAIN)
    else:
        if not diag["max_rhat"] <= RHAT_MAX:
            out.append(MSG_PROBLEM_RHAT.format(value=diag["max_rhat"], limit=RHAT_MAX))
        if diag.get("rhat_undefined", 0):
            out.append(MSG_PROBLEM_RHAT_UNDEFINED.format(count=diag["rhat_undefined"]))
    if diag["divergences"] > 0:
        out.append(MSG_PROBLEM_DIVERGENCES.format(count=diag["divergences"]))
    if not diag["min_ess_bulk"] >= min_ess:
        out.append(MSG_PROBLEM_ESS_BULK.format(value=diag["min_ess_bulk"], limit=min_ess))
    if not diag["min_ess_tail"] >= min_ess:
        out.append(MSG_PROBLEM_ESS_TAIL.format(value=diag["min_ess_tail"], limit=min_ess))
    return out


def next_attempt_settings(draws: int, tune: int, target_accept: float, *, diverged: bool) -> tuple[int, int, float]:
    """Settings of the next attempt after one that was not converged.

    Draws and tuning steps double (at most the largest allowed, ``BOUNDS["draws"]``, ``BOUNDS["tune"]``):
    longer warm-up adapts the step size and mass matrix better, more draws lower the Monte Carlo
    error of R-hat and raise ESS. After divergent transitions the target acceptance probability
    moves half-way to 1 (0.95 → 0.975 → 0.9875), at most :data:`TARGET_ACCEPT_MAX`: smaller steps
    follow sharp curvature without diverging.
    """
    new_draws = int(min(2 * draws, BOUNDS["draws"].high))
    new_tune = int(min(2 * tune, BOUNDS["tune"].high))
    new_ta = round(min(TARGET_ACCEPT_MAX, 1.0 - (1.0 - target_accept) / 2), 6) if diverged else target_accept
    return new_draws, new_tune, new_ta


def _attempt_diagnostics(stats: dict[str, dict[str, np.ndarray]], run: SamplerRun) -> dict[str, Any]:
    all_rhat = np.concatenate([np.ravel(stats[k]["rhat"]) for k in stats])
    all_bulk = np.concatenate([np.ravel(stats[k]["ess_bulk"]) for k in stats])
    all_tail = np.concatenate([np.ravel(stats[k]["ess_tail"]) for k in stats])
    return {
        "max_rhat": round(float(np.nanmax(all_rhat)), 4) if np.any(np.isfinite(all_rhat)) else math.nan,
        "rhat_undefined": int(np.sum(~np.isfinite(all_rhat))),
        "min_ess_bulk": round(float(np.nanmin(all_bulk)), 1) if np.any(np.isfinite(all_bulk)) else math.nan,
        "min_ess_tail": round(float(np.nanmin(all_tail)), 1) if np.any(np.isfinite(all_tail)) else math.nan,
        **run.statistics(),
    }


