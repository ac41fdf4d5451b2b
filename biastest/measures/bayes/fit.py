"""Fitting the Bayesian cosine model: attempts until converged (or a bound), then the summary and its reading.

:func:`fit_bayes` runs :func:`~biastest.measures.bayes.sampler.run_cell_sampler` again with more tuning
and draws while :func:`~biastest.measures.bayes.sampler.convergence_problems` finds a problem, within a time
limit and a number of attempts, and summarises the last attempt into a
:class:`~biastest.measures.bayes.result.BayesResult`: posterior means with highest posterior density
intervals per word and connection, the contrasts with the controls, every attempt's diagnostics and a
plain-language reading.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from biastest.errors import MethodError
from biastest.measures.bayes.compare import kept_draws
from biastest.measures.bayes.result import BayesResult
from biastest.measures.bayes.sampler import (
    _MODEL_FNS,
    _attempt_diagnostics,
    _check_settings,
    _row,
    _summaries,
    convergence_problems,
    next_attempt_settings,
    run_cell_sampler,
)
from biastest.measures.bayes.score import (
    BAYES_MODELS,
    CONNECTIONS,
    CONTRASTS,
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_TARGET_ACCEPT,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TUNE,
    HDI_PROB,
    MAX_ATTEMPTS,
    MIN_ESS_PER_CHAIN,
    MSG_BAD_ATTEMPTS,
    MSG_BAD_TARGET_ACCEPT,
    MSG_CONVERGED,
    MSG_NOT_CONVERGED,
    MSG_RETRIED,
    MSG_STOP_MAX_ATTEMPTS,
    MSG_STOP_ONE_CHAIN,
    MSG_STOP_SETTINGS_LIMIT,
    MSG_STOP_TIME_LIMIT,
    MSG_UNKNOWN_MODEL,
    RHAT_MAX,
    TARGET_ACCEPT_MAX,
    DistanceData,
    cell_statistics,
)
from biastest.options import check_option
from biastest.provenance import provenance
from biastest.report.text import level_percent

__all__ = ["COMPARED_WITH", "fit_bayes", "group_contrasts", "group_reading", "sampler_lines"]


def _derived(model: str, samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Cell means ``mu[w, c]``, connection means and contrasts, shape (chain, draw, ...)."""
    ci = {c: k for k, c in enumerate(CONNECTIONS)}
    if model == "additive":
        mu = samples["m"][..., :, None] + samples["co"][..., None, :]
        level = samples["co"]
    else:
        mu = samples["mu"]
        level = samples["M"]
    out = {"mu": mu, "level": level}
    for a, b in CONTRASTS:
        out[f"{a}-{b}"] = mu[..., ci[a]] - mu[..., ci[b]]
        out[f"overall:{a}-{b}"] = level[..., ci[a]] - level[..., ci[b]]
    return out


#: What each contrast compares a group's own stereotype with, in words (the group contrasts name it).
COMPARED_WITH = {"none": "the neutral words (control)", "human": "the neutral human attributes (control)",
                 "different": "the other groups' stereotypes"}


def group_contrasts(data: DistanceData, model: str, samples: Mapping[str, np.ndarray],
                    hdi_prob: float) -> list[dict[str, Any]]:
    """The contrasts per group: for group g and contrast (a, b), the draws of ``mean_{w∈g} (μ[w, a] − μ[w, b])``.

    ``associated − different`` compares the group's words' distance to their own group's stereotypes with
    their distance to the other groups' stereotypes ("vs the others"); ``associated − none`` and
    ``associated − human`` compare it with the control lists ("vs the control"); ``compared_with`` says
    which. Posterior mean, HDI at ``hdi_prob``, R-hat and ESS of each (:func:`biastest.stats.mcmc.summarise_draws`),
    and the verdict as for the other contrasts.
    """
    mu = _derived(model, dict(samples))["mu"]  # (chain, draw, words, connections)
    ci = {c: k for k, c in enumerate(CONNECTIONS)}
    groups = np.asarray(data.word_groups)
    arrays = {}
    for g, name in enumerate(data.group_names, start=1):
        members = np.flatnonzero(groups == g)
        for a, b in CONTRASTS:
            arrays[(name, a, b)] = (mu[..., members, ci[a]] - mu[..., members, ci[b]]).mean(axis=-1)
    stats = _summaries({f"{k}": v for k, v in zip(range(len(arrays)), arrays.values(), strict=True)}, hdi_prob)
    rows = []
    for k, ((name, a, b), _) in enumerate(arrays.items()):
        r = _row(stats[str(k)])
        rows.append({"group": name, "contrast": f"{a} − {b}", "compared_with": COMPARED_WITH[b],
                     "n_words": int(np.sum(groups == data.group_names.index(name) + 1)), **r,
                     "verdict": _interval_verdict(r["hdi_low"], r["hdi_high"])})
    return rows


def group_reading(rows: Sequence[Mapping[str, Any]], hdi_prob: float) -> list[str]:
    """One line per group: against which comparisons its own stereotypes are credibly closer."""
    pct = level_percent(hdi_prob)
    lines = []
    for name in dict.fromkeys(r["group"] for r in rows):
        mine = [r for r in rows if r["group"] == name]
        closer = [r["compared_with"] for r in mine if r["verdict"] == "closer"]
        shown = "; ".join(f"{r['contrast']} {r['mean']:+.3f} [{r['hdi_low']:+.3f}, {r['hdi_high']:+.3f}]" for r in mine)
        verdict = ("credibly closer to its own stereotypes than to " + ", ".join(closer) if closer
                   else "no credible difference in the stereotyped direction")
        lines.append(f"Group {name} (mean over its words, {pct} intervals): {verdict} ({shown}).")
    return lines


def _interval_verdict(low: float, high: float) -> str:
    if high < 0:
        return "closer"
    if low > 0:
        return "farther"
    return "uncertain"


def _check_fit_options(*, chains: int, target_accept: float, hdi_prob: float, time_limit: float,
                       max_attempts: int) -> tuple[float, float]:
    hdi_prob = check_option("hdi_prob", hdi_prob)
    time_limit = check_option("time_limit", time_limit)
    ok_ta = isinstance(target_accept, (int, float)) and not isinstance(target_accept, bool)
    if not (ok_ta and 0.5 <= target_accept <= TARGET_ACCEPT_MAX):
        raise MethodError(MSG_BAD_TARGET_ACCEPT.format(value=target_accept, high=TARGET_ACCEPT_MAX),
                          target_accept=target_accept)
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise MethodError(MSG_BAD_ATTEMPTS.format(value=max_attempts, high=MAX_ATTEMPTS), max_attempts=max_attempts)
    return hdi_prob, time_limit


def fit_bayes(
    data: DistanceData,
    *,
    model: str = "hierarchical",
    seed: int,
    draws: int = DEFAULT_DRAWS,
    tune: int = DEFAULT_TUNE,
    chains: int = DEFAULT_CHAINS,
    target_accept: float = DEFAULT_TARGET_ACCEPT,
    hdi_prob: float = HDI_PROB,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_attempts: int = MAX_ATTEMPTS,
    progress: Callable[[float, str], None] | None = None,
    provenance_fields: Mapping[str, Any] | None = None,
) -> BayesResult:
    """Fit a Bayesian cosine model, adaptively until it converges or a bound is reached, and summarise it.

    **Adaptive sampling.** The first attempt uses the settings given. After
    each attempt, :func:`convergence_problems` checks R-hat ≤ 1.01, bulk and
    tail ESS ≥ 100 per chain and no divergent transition over every
    quantity summarised. If one fails, the sampler runs again from scratch with
    :func:`next_attempt_settings` (draws and tuning doubled; target acceptance
    raised after divergences) and the next seed, until an attempt converges,
    ``max_attempts`` attempts have run, or the next attempt is not expected to
    end within ``time_limit``. The limit is checked before each further
    attempt (the first always runs, and a started attempt runs to its end):
    the next attempt's time is predicted as the last one's, scaled by the
    ratio of iterations (× 1.5 when the target acceptance rises). The result
    summarises the last attempt; every attempt is recorded (``attempts``,
    ``provenance["attempts"]``), and a result that did not converge says so,
    with the numbers and why sampling stopped, in ``diagnostics`` and the
    first line of ``reading``.

    Parameters
    ----------
    data : DistanceData
        From :func:`build_distance_data`.
    model : {"hierarchical", "additive"}
        See :data:`BAYES_MODELS`.
    seed : int
        Seed of the sampler (JAX PRNG key); attempt ``k`` (0-based) uses
        ``(seed + k) mod 2³²``.
    draws, tune, chains : int
        Draws kept per chain, tuning (warm-up) steps per chain, chains, of the
        first attempt (defaults :data:`DEFAULT_DRAWS`, :data:`DEFAULT_TUNE`,
        :data:`DEFAULT_CHAINS`).
    target_accept : float
        NUTS target acceptance probability of the first attempt (0.5 to
        :data:`TARGET_ACCEPT_MAX`).
    hdi_prob : float
        Mass of the highest posterior density intervals (default 0.89; option
        ``hdi_prob``, 0.5–0.999).
    time_limit : float
        Seconds within which further attempts must be expected to end
        (option ``time_limit``; default :data:`DEFAULT_TIME_LIMIT`).
    max_attempts : int
        Most attempts (1 = no retry; at most :data:`MAX_ATTEMPTS`).
    progress : callable(fraction, message), optional
        Called as sampling proceeds.
    provenance_fields : mapping, optional
        Extra provenance (model id of the embedding, spec ...).

    Returns
    -------
    BayesResult

    Raises
    ------
    MethodError
        Unknown model, sampler settings out of range.
    OptionError
        ``hdi_prob`` or ``time_limit`` out of range.
    """
    if model not in _MODEL_FNS:
        raise MethodError(MSG_UNKNOWN_MODEL.format(name=model, choices=", ".join(BAYES_MODELS)), name=model)
    _check_settings(draws, tune, chains)
    hdi_prob, time_limit = _check_fit_options(chains=chains, target_accept=target_accept, hdi_prob=hdi_prob,
                                              time_limit=time_limit, max_attempts=max_attempts)
    t0 = time.perf_counter()
    n, mean, ss = cell_statistics(
        data.word_index, data.connection_index, data.distance, n_words=len(data.protected_words)
    )
    bounds = _Bounds(model=model, seed=seed, chains=chains, hdi_prob=hdi_prob, time_limit=time_limit,
                     max_attempts=max_attempts)
    sampled = _sample_until_converged((n, mean, ss), (int(draws), int(tune), float(target_accept)), bounds,
                                      progress=progress, t0=t0)
    attempts, run, stats = sampled.attempts, sampled.run, sampled.stats
    last = attempts[-1]
    a_draws, a_tune, a_ta = last["draws"], last["tune"], last["target_accept"]
    if progress:
        progress(0.95, "Summarising")
    levels, cells, contrasts, parameters = _tables(data, model, stats, run.samples)
    group_rows = group_contrasts(data, model, run.samples, hdi_prob)
    seconds = round(time.perf_counter() - t0, 3)
    diagnostics = _diagnostics(sampled, bounds, seconds=seconds)
    info = BAYES_MODELS[model]
    reading = _reading(contrasts, diagnostics, attempts, hdi_prob, model, groups=data.group_names)
    reading += group_reading(group_rows, hdi_prob)
    prov = provenance(
        method=f"bayes-{model}", seed=seed, draws=a_draws, tune=a_tune, chains=chains, target_accept=a_ta,
        hdi_prob=hdi_prob, sampler="numpyro NUTS", time_limit=time_limit, max_attempts=max_attempts,
        requested={"draws": int(draws), "tune": int(tune), "target_accept": float(target_accept)},
        attempts=[dict(a) for a in attempts], **dict(provenance_fields or {}),
    )
    if progress:
        progress(1.0, "Done")
    return BayesResult(
        model=info.to_dict(), hdi_prob=hdi_prob, connection_levels=levels, cells=cells, contrasts=tuple(contrasts),
        parameters=tuple(parameters), diagnostics=diagnostics, reading=tuple(reading), data=data.summary(),
        seed=seed, draws=a_draws, tune=a_tune, chains=chains, chain_method=run.chain_method, seconds=seconds,
        provenance=prov, rows=tuple(data.records()), target_accept=a_ta, attempts=tuple(attempts),
        group_contrasts=tuple(group_rows),
        contrast_draws=kept_draws(_derived(model, run.samples), contrasts, data.protected_words),
    )


@dataclass(frozen=True)
class _Bounds:
    """The fixed settings of one :func:`fit_bayes` call that every attempt shares (already checked)."""

    model: str
    seed: int
    chains: int
    hdi_prob: float
    time_limit: float
    max_attempts: int


@dataclass(frozen=True)
class _Sampled:
    """What the attempts left: the last run and its summaries, every attempt's record, and why sampling stopped."""

    run: Any
    stats: dict[str, Any]
    attempts: list[dict[str, Any]]
    stop_reason: str
    stop_message: str
    stop_details: dict[str, Any]


def _sample_until_converged(
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    settings: tuple[int, int, float],
    bounds: _Bounds,
    *,
    progress: Callable[[float, str], None] | None,
    t0: float,
) -> _Sampled:
    """Run the sampler on the cell statistics ``(n, mean, ss)`` from ``settings`` (draws, tune, target_accept).

    Again with :func:`next_attempt_settings` and the next seed while :func:`convergence_problems` finds a
    problem, until an attempt converges, one chain makes a retry useless, ``max_attempts`` have run, the
    settings cannot grow, or the next attempt is not expected to end within ``time_limit`` of ``t0``.
    """
    n, mean, ss = cells
    chains = bounds.chains
    attempts: list[dict[str, Any]] = []
    stop_reason, stop_message, stop_details = "", "", {}
    for k in range(bounds.max_attempts):
        a_draws, a_tune, a_ta = settings
        a_seed = (bounds.seed + k) % 2**32
        a0 = time.perf_counter()
        lo = 0.9 * (1 - 0.5**k)  # attempt k's share of the bar: 0–0.45, 0.45–0.68, … (the total is not known)
        tick = None
        if progress:
            def tick(fraction: float, message: str, lo=lo, k=k) -> None:
                head = f"Attempt {k + 1} (the last was not converged): " if k else ""
                progress(lo + 0.45 * 0.5**k * fraction, head + message)
        run = run_cell_sampler(n, mean, ss, model=bounds.model, seed=a_seed, draws=a_draws, tune=a_tune,
                               chains=chains, target_accept=a_ta, progress=tick)
        if tick:
            tick(0.9, "Summarising (highest posterior density intervals, R-hat, ESS)")
        derived = _derived(bounds.model, run.samples)
        stats = _summaries({**run.samples, **derived}, bounds.hdi_prob)
        diag = _attempt_diagnostics(stats, run)
        problems = convergence_problems(diag, chains=chains)
        attempts.append({
            "attempt": k + 1, "seed": a_seed, "draws": a_draws, "tune": a_tune, "chains": chains,
            "target_accept": a_ta, **diag, "seconds": round(time.perf_counter() - a0, 3),
            "converged": not problems, "problems": problems,
        })
        if not problems:
            stop_reason, stop_message = "converged", ""
            break
        if chains < 2:
            stop_reason, stop_message = "one_chain", MSG_STOP_ONE_CHAIN
            break
        if k + 1 == bounds.max_attempts:
            stop_reason = "max_attempts"
            stop_message = MSG_STOP_MAX_ATTEMPTS.format(attempts=k + 1, draws=a_draws, tune=a_tune)
            break
        nxt = next_attempt_settings(a_draws, a_tune, a_ta, diverged=diag["divergences"] > 0)
        if nxt == settings:
            stop_reason = "settings_limit"
            stop_message = MSG_STOP_SETTINGS_LIMIT.format(draws=a_draws, tune=a_tune, target_accept=a_ta)
            break
        elapsed = round(time.perf_counter() - t0, 3)
        scale = (nxt[0] + nxt[1]) / (a_draws + a_tune) * (1.5 if nxt[2] > a_ta else 1.0)
        predicted = round(attempts[-1]["seconds"] * scale, 3)
        if elapsed + predicted > bounds.time_limit:
            stop_reason = "time_limit"
            stop_details = {"elapsed": elapsed, "predicted": predicted, "next_draws": nxt[0], "next_tune": nxt[1],
                            "next_target_accept": nxt[2]}
            stop_message = MSG_STOP_TIME_LIMIT.format(limit=bounds.time_limit, attempts=k + 1, elapsed=elapsed,
                                                      draws=nxt[0], tune=nxt[1], predicted=predicted)
            break
        settings = nxt
    return _Sampled(run, stats, attempts, stop_reason, stop_message, stop_details)


def _tables(
    data: DistanceData, model: str, stats: dict[str, Any], samples: Mapping[str, np.ndarray]
) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...], list[dict[str, Any]], list[dict[str, Any]]]:
    """The result's tables from the last attempt's summaries: connection levels, cells, contrasts, parameters."""
    pw = data.protected_words
    gname = [data.group_names[g - 1] for g in data.word_groups]
    n_cell, mean_cell, _ = cell_statistics(data.word_index, data.connection_index, data.distance, n_words=len(pw))

    levels = tuple(
        {"connection": c, "parameter": f"{'M' if model == 'hierarchical' else 'co'}[{c}]", **_row(stats["level"], k)}
        for k, c in enumerate(CONNECTIONS)
    )
    cells = tuple(
        {"protected_word": w, "group": gname[i], "connection": c, "n_rows": int(n_cell[i, k]),
         "observed_mean": round(float(mean_cell[i, k]), 6), **_row(stats["mu"], (i, k))}
        for i, w in enumerate(pw)
        for k, c in enumerate(CONNECTIONS)
    )
    contrasts = []
    for a, b in CONTRASTS:
        name = f"{a}-{b}"
        r = _row(stats[f"overall:{name}"])
        contrasts.append({"protected_word": "(overall)", "group": "", "contrast": f"{a} − {b}", **r,
                          "verdict": _interval_verdict(r["hdi_low"], r["hdi_high"])})
        for i, w in enumerate(pw):
            r = _row(stats[name], i)
            contrasts.append({"protected_word": w, "group": gname[i], "contrast": f"{a} − {b}", **r,
                              "verdict": _interval_verdict(r["hdi_low"], r["hdi_high"])})

    parameters = []
    for k in (k for k in samples if k != "mu_raw"):
        st = stats[k]
        shape = np.shape(st["mean"])
        for idx in np.ndindex(*shape) if shape else [()]:
            label = k + ("[" + ",".join(map(str, idx)) + "]" if idx else "")
            parameters.append({"parameter": label, **_row(st, idx)})
    return levels, cells, contrasts, parameters


def _diagnostics(sampled: _Sampled, bounds: _Bounds, *, seconds: float) -> dict[str, Any]:
    """The result's ``diagnostics``: the last attempt's numbers, the thresholds, and why sampling stopped."""
    attempts, chains = sampled.attempts, bounds.chains
    last = attempts[-1]
    return {
        **{key: last[key] for key in ("max_rhat", "rhat_undefined", "min_ess_bulk", "min_ess_tail", "divergences",
                                      "divergences_per_chain", "mean_accept_prob", "mean_accept_prob_per_chain",
                                      "step_size", "mean_tree_size")},
        "draws_total": int(last["draws"] * chains),
        "converged": last["converged"],
        "problems": list(last["problems"]),
        "rhat_max_allowed": RHAT_MAX,
        "min_ess_wanted": MIN_ESS_PER_CHAIN * chains,
        "attempts": len(attempts),
        "divergences_all_attempts": int(sum(a["divergences"] for a in attempts)),
        "stop_reason": sampled.stop_reason,
        "stop_message": sampled.stop_message,
        "stop_details": sampled.stop_details,
        "time_limit": bounds.time_limit,
        "max_attempts": bounds.max_attempts,
        "seconds": seconds,
    }


def sampler_lines(diag: Mapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reading's lines on the sampler: each retry and why, then converged or not (with the numbers)."""
    lines = []
    for prev, nxt in pairwise(attempts):
        lines.append(MSG_RETRIED.format(attempt=prev["attempt"], problems="; ".join(prev["problems"]),
                                        draws=nxt["draws"], tune=nxt["tune"], target_accept=nxt["target_accept"]))
    if diag["converged"]:
        lines.append(MSG_CONVERGED.format(attempt=len(attempts), max_rhat=diag["max_rhat"], rhat_max=RHAT_MAX,
                                          ess_bulk=diag["min_ess_bulk"], ess_tail=diag["min_ess_tail"],
                                          min_ess=diag["min_ess_wanted"], divergences=diag["divergences"]))
    else:
        lines.insert(0, MSG_NOT_CONVERGED.format(problems="; ".join(diag["problems"]),
                                                 attempts=len(attempts), stop=diag["stop_message"]))
    return lines


#: A contrast of an unconverged fit: its numbers, not read as credible or not.
MSG_UNREAD_CONTRAST = ("Overall, stereotype attributes vs {what}: {interval} — not read, because the sampler did not "
                       "converge.")


def _reading(contrasts: list[dict[str, Any]], diag: dict[str, Any], attempts: Sequence[Mapping[str, Any]],
             hdi_prob: float, model: str, *, groups: Sequence[str]) -> list[str]:
    """Plain-language lines; the target words are named by their lists (``groups``, e.g. Math and Arts)."""
    pct = level_percent(hdi_prob)
    words_of = f"the words of {_names(groups)}"
    lines = sampler_lines(diag, attempts)
    lines.append(
        "Distances are cosine distances (0 = same direction). A negative contrast means the stereotype "
        f"attributes sit closer to {words_of} than the control words do. A bias is called credible "
        f"only where the whole {pct} highest posterior density interval lies below 0."
    )
    for r in contrasts:
        if r["protected_word"] != "(overall)":
            continue
        other = r["contrast"].split(" − ")[1]
        what = {"none": "neutral words", "human": "neutral human attributes",
                "different": "the other group's stereotypes" if len(groups) == 2
                else "the other groups' stereotypes"}[other]
        iv = f"{r['mean']:+.3f}, {pct} interval [{r['hdi_low']:+.3f}, {r['hdi_high']:+.3f}]"
        if not diag["converged"]:  # an unconverged sampler claims nothing: the numbers are given, not read
            lines.append(MSG_UNREAD_CONTRAST.format(what=what, interval=iv))
        elif r["verdict"] == "closer":
            lines.append(f"Overall, stereotype attributes are credibly closer than {what} ({iv}).")
        elif r["verdict"] == "farther":
            lines.append(f"Overall, stereotype attributes are credibly farther than {what} ({iv}): "
                         "no bias in the stereotyped direction.")
        else:
            lines.append(f"Overall, no credible difference between stereotype attributes and {what} ({iv}): "
                         "the interval includes 0.")
    if model == "hierarchical" and diag["converged"]:
        for a, b in CONTRASTS[:2]:
            name = f"{a} − {b}"
            words = [r["protected_word"] for r in contrasts
                     if r["contrast"] == name and r["protected_word"] != "(overall)" and r["verdict"] == "closer"]
            total = sum(1 for r in contrasts if r["contrast"] == name and r["protected_word"] != "(overall)")
            shown = ", ".join(words) if words else "none"
            lines.append(f"Words of {_names(groups)} with a credible bias ({name}): {len(words)} of "
                         f"{total} ({shown}).")
    elif model != "hierarchical":
        lines.append(f"In this model the connection effect is shared by all {words_of}, so per-word "
                     "contrasts equal the overall one; use the hierarchical model for per-word estimates.")
    return lines



def _names(groups: Sequence[str]) -> str:
    """``A and B``, ``A, B and C``."""
    groups = list(groups)
    return groups[0] if len(groups) == 1 else ", ".join(groups[:-1]) + " and " + groups[-1]
