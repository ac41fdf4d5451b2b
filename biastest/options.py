"""One validation of every run option, used by the command line, the runners and the apps.

Every option a user can set (seed, resample and permutation counts, confidence
level, batch size, sampler draws and chains …) is checked here, at the
boundary, **before any model or embedding is loaded**: a bad value costs the
user no waiting and gets one message in their words that names the option,
the value and what is allowed. The bounds are sane for a public server (a
bootstrap of 10¹² resamples is refused before it can exhaust memory) and
generous for research use.

The checks raise :class:`~biastest.errors.OptionError` (exit status 2 on the
command line) with the ``MSG_*`` constants below, which tests assert.

Examples
--------
>>> check_option("seed", 42)
42
>>> check_option("confidence", 0.9)
0.9
>>> check_option("seed", -1)
Traceback (most recent call last):
...
biastest.errors.OptionError: The seed must be a whole number from 0 to 4,294,967,295, got -1.
>>> validate_options({"n_resamples": 1000, "batch_size": 8})
{'n_resamples': 1000, 'batch_size': 8}
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from biastest.errors import OptionError

__all__ = [
    "BOUNDS",
    "Bound",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_NOISE_SIGMA",
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_SEED",
    "DEFAULT_SEEDS",
    "DEFAULT_TWOAFC_BOOTSTRAP",
    "DEFAULT_WEAT_BOOTSTRAP",
    "DEFAULT_WEAT_NULL_DRAWS",
    "MSG_BAD_CONFIDENCE",
    "MSG_BAD_NUMBER",
    "MSG_BAD_POSITIVE",
    "MSG_BAD_WHOLE",
    "MSG_NOT_A_NUMBER",
    "MSG_UNKNOWN_OPTION",
    "check_option",
    "validate_options",
]

MSG_BAD_WHOLE = "{label} must be a whole number from {low:,} to {high:,}, got {value!r}."
MSG_BAD_NUMBER = "{label} must be a number from {low:g} to {high:g}, got {value!r}."
MSG_BAD_POSITIVE = "{label} must be a number greater than {low:g} and at most {high:g}, got {value!r}."
MSG_BAD_CONFIDENCE = "The confidence level must be a number between 0 and 1 (for example 0.95), got {value!r}."
MSG_NOT_A_NUMBER = "{label} must be a number, got {value!r}."
MSG_UNKNOWN_OPTION = "Unknown option '{name}'."

#: Largest seed: every random generator the suite uses (numpy, torch, jax, gensim) accepts 0 … 2³² − 1.
MAX_SEED = 2**32 - 1

#: Defaults that the apps, the command line, the audits and the runners share (defined once, so they cannot drift).
#: 2AFC: bootstrap resamples behind the PSE intervals (of the cue pairs or the replicate models) and refits of the
#: psychometric functions.
DEFAULT_TWOAFC_BOOTSTRAP = 1_000
#: WEAT: bootstrap resamples of the target words behind a comparison's interval of Δd (d's own is the jackknife).
DEFAULT_WEAT_BOOTSTRAP = 2_000
#: WEAT: random word lists of the same sizes behind "How much can d vary by chance?" (0 = none).
DEFAULT_WEAT_NULL_DRAWS = 1_000
#: The level of the 2AFC and WEAT intervals (and of the language and vision-language scores' on the command line).
DEFAULT_CONFIDENCE = 0.95
#: The one default seed of every seed box in the three apps and of every headless run (command line, audit).
DEFAULT_SEED = 0
#: Default seeds of a headless run by kind of model (all :data:`DEFAULT_SEED`; kept for the audit's grid).
DEFAULT_SEEDS = dict.fromkeys(("lm", "vlm", "embeddings", "chat", "classifier"), DEFAULT_SEED)
#: Bootstrap resamples per run, by kind or embedding test, as in the apps.
DEFAULT_BOOTSTRAP = {"lm": 10_000, "vlm": 10_000, "2afc": DEFAULT_TWOAFC_BOOTSTRAP, "weat": DEFAULT_WEAT_BOOTSTRAP}
#: 2AFC: the perceptual noise σ of a headless run.
DEFAULT_NOISE_SIGMA = 0.05
#: WEAT: the permutations behind the p-value of a headless run.
DEFAULT_PERMUTATIONS = 10_000


@dataclass(frozen=True)
class Bound:
    """Allowed values of one option.

    Parameters
    ----------
    label : str
        How the message names the option ("The seed", "The number of …").
    low, high : float
        Inclusive bounds.
    whole : bool
        Whole numbers only (``True``) or any finite real number.
    low_open : bool
        ``low`` itself is not allowed (real numbers only).
    """

    label: str
    low: float
    high: float
    whole: bool = True
    low_open: bool = False


#: Every option the runners take from a user, with its bounds.
BOUNDS: dict[str, Bound] = {
    "seed": Bound("The seed", 0, MAX_SEED),
    # bootstrap resamples of the stereotype and VLM scores (percentile intervals need at least 100)
    "n_resamples": Bound("The number of bootstrap resamples", 100, 100_000),
    # bootstrap fits of the 2AFC psychometric functions (0 = no interval for the fits)
    "n_bootstrap": Bound("The number of bootstrap fits of the psychometric functions", 0, 2_000),
    "n_permutations": Bound("The number of permutations", 100, 1_000_000),
    # random word lists of WEAT's "How much can d vary by chance?" (0 = none)
    "null_draws": Bound("The number of random word lists", 0, 100_000),
    "batch_size": Bound("The batch size", 1, 1024),
    "draws": Bound("The number of posterior draws per chain", 100, 20_000),
    "tune": Bound("The number of warm-up (tuning) steps per chain", 100, 20_000),
    "chains": Bound("The number of chains", 1, 8),
    "max_new_tokens": Bound("The number of new tokens", 1, 64),
    "n_replicates": Bound("The number of replicate models", 2, 64),
    "per_attribute": Bound("The number of sentences per attribute term", 1, 50),
    "per_term": Bound("The number of pictures per image term", 1, 20),
    "tie_tolerance": Bound("The tie tolerance (in nats)", 0.0, 10.0, whole=False),
    # Thurstonian noise of one model (None = no noise; the command line's 0 means None)
    "noise_sigma": Bound("The perceptual noise σ", 0.0, 1.0, whole=False, low_open=True),
    "confidence": Bound("The confidence level", 0.0, 1.0, whole=False),  # open interval, checked apart
    # mass of the Bayesian highest-posterior-density intervals (the seed's 0.89)
    "hdi_prob": Bound("The probability mass of the intervals", 0.5, 0.999, whole=False),
    # a model behind an endpoint: requests sent at once, the request budget (retries included), time limits
    "concurrency": Bound("The number of requests sent at once", 1, 64),
    "max_requests": Bound("The request budget", 1, 1_000_000),
    "time_limit": Bound("The time limit (in seconds)", 0.0, 86_400.0, whole=False, low_open=True),
    "request_timeout": Bound("The time-out of one request (in seconds)", 0.0, 3_600.0, whole=False, low_open=True),
    "temperature": Bound("The sampling temperature", 0.0, 2.0, whole=False),
    "samples": Bound("The number of answers asked per question and order", 1, 50),
    "max_answer_tokens": Bound("The length of an answer (in tokens)", 1, 512),
    "top_logprobs": Bound("The number of alternatives asked per answer token", 0, 20),
}


def _whole(name: str, bound: Bound, value: Any) -> int:
    if isinstance(value, bool):
        raise OptionError(MSG_BAD_WHOLE.format(label=bound.label, low=int(bound.low), high=int(bound.high),
                                               value=value), option=name, value=value)
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        v = int(value)  # 42.0 from a number box is 42
    else:
        raise OptionError(MSG_BAD_WHOLE.format(label=bound.label, low=int(bound.low), high=int(bound.high),
                                               value=value), option=name, value=value)
    if not bound.low <= v <= bound.high:
        raise OptionError(MSG_BAD_WHOLE.format(label=bound.label, low=int(bound.low), high=int(bound.high),
                                               value=value), option=name, value=value)
    return v


def _real(name: str, bound: Bound, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise OptionError(MSG_NOT_A_NUMBER.format(label=bound.label, value=value), option=name, value=value)
    v = float(value)
    if name == "confidence":
        if not (math.isfinite(v) and 0.0 < v < 1.0):
            raise OptionError(MSG_BAD_CONFIDENCE.format(value=value), option=name, value=value)
        return v
    if bound.low_open and not (math.isfinite(v) and bound.low < v <= bound.high):
        raise OptionError(MSG_BAD_POSITIVE.format(label=bound.label, low=bound.low, high=bound.high, value=value),
                          option=name, value=value)
    if not (math.isfinite(v) and bound.low <= v <= bound.high):
        raise OptionError(MSG_BAD_NUMBER.format(label=bound.label, low=bound.low, high=bound.high, value=value),
                          option=name, value=value)
    return v


def check_option(name: str, value: Any) -> Any:
    """Validate one option and return it in its canonical type.

    Parameters
    ----------
    name : str
        A key of :data:`BOUNDS`.
    value : Any
        The value as the user gave it (a whole-valued float from a number box is accepted as an int).

    Returns
    -------
    int or float

    Raises
    ------
    OptionError
        With :data:`MSG_BAD_WHOLE`, :data:`MSG_BAD_NUMBER`, :data:`MSG_BAD_CONFIDENCE` or
        :data:`MSG_NOT_A_NUMBER`.
    KeyError
        ``name`` is not an option (a programming error, not a user's).
    """
    bound = BOUNDS[name]
    return _whole(name, bound, value) if bound.whole else _real(name, bound, value)


def validate_options(options: Mapping[str, Any], *, optional: Collection[str] = ()) -> dict[str, Any]:
    """Validate every known option in ``options``; return them canonical, others unchanged.

    Parameters
    ----------
    options : mapping
        Option name → value as given.
    optional : collection of str
        Options that may be ``None`` (left out; kept as ``None``). Any other ``None`` is refused.

    Keys that are not in :data:`BOUNDS` (a model id, a method name) are passed through: their own
    registries check them.
    """
    out: dict[str, Any] = {}
    for name, value in options.items():
        skip = name not in BOUNDS or (value is None and name in optional)
        out[name] = value if skip else check_option(name, value)
    return out
