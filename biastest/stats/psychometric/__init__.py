"""Psychometric functions fitted by binomial maximum likelihood.

The model for the proportion of "yes" (here: "answer c2") responses at
stimulus level ``x`` is

    Ψ(x) = γ + (1 − γ − λ) · F((x − μ) / s)

with ``F`` the standard cumulative normal (``sigmoid="norm"``) or the
logistic ``1 / (1 + exp(−z))`` (``sigmoid="logistic"``), ``γ`` a fixed guess
rate (0 for yes/no data such as P(c2) in a 2AFC mixture task, 0.5 for
percent-correct 2AFC data), and ``λ`` an optional lapse rate fitted in
``[0, max_lapse]``. The **PSE** is ``μ``: the stimulus at which ``F`` is at its
midpoint (Ψ = 0.5 when γ = λ = 0); the **slope** is ``dΨ/dx`` at the PSE,
``(1 − γ − λ) f(0) / s``.

Fits maximise ``Σ_i k_i log Ψ(x_i) + (n_i − k_i) log(1 − Ψ(x_i))``. Without
lapse (and γ = 0) the model is a binomial GLM with probit/logit link, fitted
for many data sets at once by vectorised Fisher scoring
(:func:`fit_psychometric_batch`); with a lapse rate or a guess rate it is
fitted by ``scipy.optimize.minimize`` (TNC, bounded). Data whose responses are
perfectly separated along ``x`` have no finite maximum-likelihood estimate:
they are reported with ``status="separated"`` (the PSE lies between the
bracketing levels), never with an invented value.

Confidence intervals come from a seeded parametric (simulate ``k* ~
Binomial(n, Ψ̂(x))``) or nonparametric (``k* ~ Binomial(n, k/n)``, i.e.
resampling the responses within each level) bootstrap, percentile method, as
in psignifit 2 / quickpsy.

References
----------
Wichmann & Hill (2001), The psychometric function: I. Fitting, sampling, and
goodness of fit. Perception & Psychophysics 63(8).
Schütt, Harmeling, Macke & Wichmann (2016), Painfree and accurate Bayesian
estimation of psychometric functions for (potentially) overdispersed data
(psignifit 4). Vision Research 122.

The package: :mod:`~biastest.stats.psychometric.model` (Ψ, the fit records,
the data checks, separation), :mod:`~biastest.stats.psychometric.batch`
(many GLM fits at once by Fisher scoring) and
:mod:`~biastest.stats.psychometric.fit` (single and many fits with bootstrap
intervals, fits to proportions, percentile intervals) and
:mod:`~biastest.stats.psychometric.guess_lapse` (fits with a symmetric
guess/lapse rate q, ψ = q/2 + (1 − q)·Ψ, for subjects with a position habit;
PSE, JND) and :mod:`~biastest.stats.psychometric.shift` (the PSE shift
between contexts with its bootstrap interval).
"""

from __future__ import annotations

from biastest.stats.psychometric.batch import fit_psychometric_batch
from biastest.stats.psychometric.fit import (
    fit_psychometric,
    fit_psychometric_many,
    fit_psychometric_proportions,
    percentile_interval,
)
from biastest.stats.psychometric.guess_lapse import (
    GuessLapseFit,
    fit_guess_lapse,
    guess_lapse_from_position_share,
    guess_lapse_function,
    jnd_from_scale,
)
from biastest.stats.psychometric.model import (
    MSG_BAD_BOOTSTRAP,
    MSG_BAD_COUNTS,
    MSG_BAD_DATA_SHAPE,
    MSG_BAD_RATES,
    MSG_BAD_SIGMOID,
    MSG_SEED_REQUIRED,
    SIGMOIDS,
    BatchFit,
    PsychometricFit,
    psychometric_function,
    separation_status,
)
from biastest.stats.psychometric.shift import JointPSEDraws, PSEShift, joint_pse_draws, pse_shift

__all__ = [
    "PsychometricFit",
    "BatchFit",
    "psychometric_function",
    "fit_psychometric",
    "fit_psychometric_batch",
    "fit_psychometric_many",
    "fit_psychometric_proportions",
    "percentile_interval",
    "separation_status",
    "GuessLapseFit",
    "JointPSEDraws",
    "PSEShift",
    "fit_guess_lapse",
    "guess_lapse_function",
    "guess_lapse_from_position_share",
    "jnd_from_scale",
    "joint_pse_draws",
    "pse_shift",
    "SIGMOIDS",
    "MSG_BAD_SIGMOID",
    "MSG_BAD_DATA_SHAPE",
    "MSG_BAD_COUNTS",
    "MSG_BAD_BOOTSTRAP",
    "MSG_SEED_REQUIRED",
    "MSG_BAD_RATES",
]
