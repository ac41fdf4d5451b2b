"""Psychophysics on embeddings: the two-alternative forced choice (2AFC) task.

A target word ``w`` (e.g. an occupation) is judged against a cue pair
``(c1, c2)`` (e.g. woman/man). The stimulus is the mixture ``α ∈ [0, 1]``
(0 = all c1) and each answer gets the score of eq. 8 of Liang & Acuna (2020):

    score(c_i) = (1 − α)·sim(c1, c_i) + α·sim(c2, c_i) + sim(w, c_i)

with cosine ``sim``; the answer is the higher score (c2 on a tie is never
reached in practice; ties go to c1). The psychometric curve is
``Ψ(α) = P(answer = c2)``. Since ``score(c2) − score(c1) =
(2α − 1)(1 − sim(c1,c2)) + sim(c2,w) − sim(c1,w)`` the crossing has a closed
form (no bisection):

    PSE = 1/2 + (sim(c1, w) − sim(c2, w)) / (2·(1 − sim(c1, c2)))

PSE > 0.5: ``w`` sits closer to c1 (it takes more than half c2 to answer c2).
A PSE outside [0, 1] means the curve never crosses inside the stimulus range:
it is **flagged saturated** (``"below"``/``"above"``) and its raw value kept —
never reported as 0.5 (the original bisection's trap).

Noise, three modes (named in every result):

* ``"single"``: one model; a deterministic step; PSE only.
* ``"replicates"``: a set of embedding models (given, or trained on
  Poisson(1) stream-bootstrap resamples of a corpus). PSE = mean over
  replicates; **JND = standard deviation of the PSE across replicates**
  (ddof=1, ``jnd_sd``, the paper's definition); ``pse_variance`` is the
  variance, the definition of the later ``psycho_ai`` package, offered only
  under that label. Psychometric functions are fitted to the pooled responses.
* ``"thurstonian"``: one model with explicit, user-set perceptual noise σ:
  the answer is c2 when ``score(c2) − score(c1) + ε > 0``, ``ε ~ N(0, σ²)``, so
  ``Ψ(α) = Φ(2(1 − sim(c1,c2))(α − PSE) / σ)`` exactly (no simulated data);
  its spread in α units is ``curve_sd = σ / (2(1 − sim(c1,c2)))``.

Reference: Liang & Acuna (2020), Artificial mental phenomena: psychophysics
as a framework to detect perception biases in AI models. FAT* '20, §3.1, §4.2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import special

from biastest.errors import DataError, EmbeddingError, MethodError
from biastest.models.embeddings import WordEmbeddings

__all__ = [
    "PAPER_CUE_PAIRS",
    "DEFAULT_ALPHA_GRID",
    "twoafc_scores",
    "twoafc_decide",
    "pse_closed_form",
    "saturation",
    "thurstonian_curve",
    "cue_target_similarities",
    "MSG_IDENTICAL_CUES",
    "MSG_MODES",
    "MSG_BAD_SIGMA",
    "MSG_UNKNOWN_TARGET",
    "MSG_NO_PAIRS",
    "MSG_TOO_FEW_OCCUPATIONS",
    "MSG_BAD_SATURATED_POLICY",
    "MSG_CI_NO_BOOTSTRAP",
    "MSG_CI_TOO_FEW_UNITS",
    "MSG_FIT_SEPARATED",
    "MSG_FIT_NO_VARIATION",
    "MSG_FIT_FAILED",
    "MSG_FIT_NO_INTERVAL",
    "MSG_LAPSE_REPLICATES_ONLY",
    "MIN_UNITS_FOR_INTERVAL",
]

PAPER_CUE_PAIRS: tuple[tuple[str, str], ...] = (
    ("woman", "man"),
    ("female", "male"),
    ("she", "he"),
    ("her", "him"),
    ("hers", "his"),
    ("daughter", "son"),
    ("girl", "boy"),
    ("sister", "brother"),
)
"""The eight female/male cue pairs of the paper (after Bolukbasi et al. 2016)."""

DEFAULT_ALPHA_GRID = np.linspace(0.0, 1.0, 101)

MSG_IDENTICAL_CUES = (
    "The cues '{cue1}' and '{cue2}' have the same direction in '{source}' (cosine similarity {similarity:.6f}), so "
    "no mixture of them can tell them apart and the PSE is undefined. Choose two different cue words."
)
MSG_MODES = (
    "Choose one source of perceptual noise: a set of replicate models, or a noise level for one model, not both."
)
MSG_BAD_SIGMA = "The perceptual noise level must be a positive number; got {value!r}."
MSG_UNKNOWN_TARGET = "'{target}' is not a target of this result; choose one of: {choices}."
MSG_NO_PAIRS = (
    "No cue pair can be used: every pair has a cue missing from '{source}' ({missing}). Use cue words the "
    "embedding knows."
)
MSG_TOO_FEW_OCCUPATIONS = (
    "Only {n} occupation(s) have both a PSE and labour statistics; a correlation needs at least 3. "
    "Add occupations from the labour-statistics table."
)
MSG_BAD_SATURATED_POLICY = "The saturated-PSE handling '{value}' is not known; choose 'keep', 'drop' or 'clip'."
MSG_CI_NO_BOOTSTRAP = "No interval: the number of bootstrap samples is 0."
MSG_CI_TOO_FEW_UNITS = (
    "No interval: only {n} {units}, and an interval from resampling needs at least {minimum} (with fewer, the "
    "resamples cannot show how much the PSE would move)."
)
MSG_FIT_SEPARATED = (
    "No finite fit: the answers switch sides in one step between α = {low:.2f} and α = {high:.2f}, so the "
    "function's slope is unbounded; the crossing lies in that step."
)
MSG_FIT_NO_VARIATION = (
    "No fit: the answer is the same at every α from 0 to 1, so the curve never crosses inside the range "
    "(the PSE is saturated)."
)
MSG_FIT_FAILED = "No fit: the optimiser did not converge."
MSG_FIT_NO_INTERVAL = "No interval for the fit: fewer than two resampled curves could be fitted."
MSG_LAPSE_REPLICATES_ONLY = (
    "The lapse rate was not fitted: one model's curve has no lapses by construction; a lapse rate is fitted to "
    "the answers of replicate models only."
)

MIN_UNITS_FOR_INTERVAL = 5
"""Fewest resampled units (cue pairs or replicate models) for a bootstrap interval of the PSE.

With n units there are ``binom(2n − 1, n)`` distinct resamples (10 for n = 3,
126 for n = 5); on means of n normal values the expanded percentile interval
(:func:`biastest.stats.psychometric.percentile_interval`) of a nominal 95 %
covers about 75 % at n = 3, 92 % at n = 5 and 94 % at n = 8 (1,000 draws;
``tests/test_twoafc.py`` checks n = 8)."""

SAT_TOL = 1e-12
"""How far outside [0, 1] a PSE must lie to be flagged saturated."""
IDENTICAL_TOL = 1e-7
"""How close to 1 the cosine of two cues may come before they count as the same direction."""


# --------------------------------------------------------------------------- the decision rule
def twoafc_scores(
    sim_c1_w: np.ndarray, sim_c2_w: np.ndarray, sim_c1_c2: np.ndarray, alpha: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the two answers, eq. 8 (broadcasting over all arguments).

    ``score(c1) = (1−α)·1 + α·sim(c2,c1) + sim(w,c1)``;
    ``score(c2) = (1−α)·sim(c1,c2) + α·1 + sim(w,c2)``.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    s12 = np.asarray(sim_c1_c2, dtype=np.float64)
    score1 = (1.0 - alpha) * 1.0 + alpha * s12 + np.asarray(sim_c1_w, dtype=np.float64)
    score2 = (1.0 - alpha) * s12 + alpha * 1.0 + np.asarray(sim_c2_w, dtype=np.float64)
    return score1, score2


def twoafc_decide(
    sim_c1_w: np.ndarray,
    sim_c2_w: np.ndarray,
    sim_c1_c2: np.ndarray,
    alpha: np.ndarray,
    *,
    noise_sigma: float | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The answer of eq. 8: True where c2 wins (broadcast over all arguments).

    With ``noise_sigma`` (Thurstonian), ``ε ~ N(0, σ²)`` is added to
    ``score(c2) − score(c1)`` before comparing; ``rng`` is then required.
    """
    s1, s2 = twoafc_scores(sim_c1_w, sim_c2_w, sim_c1_c2, alpha)
    diff = s2 - s1
    if noise_sigma is not None:
        if rng is None:
            raise MethodError("Noisy decisions need a random generator (rng) so that they can be repeated.")
        diff = diff + rng.normal(0.0, float(noise_sigma), size=diff.shape)
    return diff > 0


def pse_closed_form(sim_c1_w: np.ndarray, sim_c2_w: np.ndarray, sim_c1_c2: np.ndarray) -> np.ndarray:
    """PSE = 1/2 + (sim(c1,w) − sim(c2,w)) / (2(1 − sim(c1,c2))).

    Raises :class:`DataError` where ``sim(c1,c2)`` is 1 (identical cues).
    """
    s12 = np.asarray(sim_c1_c2, dtype=np.float64)
    if np.any(s12 >= 1.0 - IDENTICAL_TOL):
        raise DataError(
            MSG_IDENTICAL_CUES.format(cue1="cue 1", cue2="cue 2", source="the embedding", similarity=float(s12.max()))
        )
    return 0.5 + (np.asarray(sim_c1_w, dtype=np.float64) - np.asarray(sim_c2_w, dtype=np.float64)) / (2.0 * (1.0 - s12))


def saturation(pse: float) -> str | None:
    """``"below"`` when PSE < 0, ``"above"`` when PSE > 1, else None."""
    if pse < -SAT_TOL:
        return "below"
    if pse > 1.0 + SAT_TOL:
        return "above"
    return None


def thurstonian_curve(alpha: np.ndarray, *, pse: np.ndarray, sim_c1_c2: np.ndarray, noise_sigma: float) -> np.ndarray:
    """Ψ(α) = Φ(2(1 − sim(c1,c2))(α − PSE) / σ) under Thurstonian noise σ."""
    return special.ndtr(2.0 * (1.0 - np.asarray(sim_c1_c2)) * (np.asarray(alpha) - np.asarray(pse)) / noise_sigma)


def cue_target_similarities(
    model: WordEmbeddings, targets: Sequence[str], cue_pairs: Sequence[tuple[str, str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sim(c1,w), sim(c2,w) [T, P] and sim(c1,c2) [P] in one model.

    Every term must have a vector (check with ``lookup_report`` first).
    """
    cues = list(dict.fromkeys(c for p in cue_pairs for c in p))
    vecs, missing = model.vectors(list(targets) + cues)
    if missing:
        raise EmbeddingError(
            f"These words are not in '{model.name}': {', '.join(missing)}.", missing=list(missing), source=model.name
        )
    v = vecs.astype(np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise EmbeddingError("A word vector is all zeros, so its cosine similarity is undefined.")
    v /= norms
    t = v[: len(targets)]
    c = v[len(targets) :]
    pos = {w: i for i, w in enumerate(cues)}
    i1 = np.array([pos[a] for a, _ in cue_pairs])
    i2 = np.array([pos[b] for _, b in cue_pairs])
    tc = t @ c.T
    s12 = np.einsum("pd,pd->p", c[i1], c[i2])
    return tc[:, i1], tc[:, i2], s12


