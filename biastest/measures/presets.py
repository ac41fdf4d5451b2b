"""The papers' settings as presets ("as in the paper"), each with what its seed states and an estimated run time.

Three presets, one per measure the two embedding papers ran:

``twoafc``
    Liang & Acuna (2020, seed ``000``): the eight female/male cue pairs on occupations (the library specification
    "Occupations vs gender (Liang & Acuna 2020)"), and 32 replicate embeddings trained on Poisson(1)
    stream-bootstrap resamples of a corpus (§4.2).
``posterior``
    The same paper's sampler: NUTS with 10,000 warm-up samples and 10,000 steps after them (§4.3, §5.2).
``bayes``
    The Bayesian paper (seed ``002``): the model of its equations (1)–(5) (``additive`` here) and 89 % highest
    posterior density intervals. The seed states no sampler settings; the preset takes Stan's defaults (4 chains,
    1,000 warm-up and 1,000 draws each), as the seed's models were fitted "using STAN", and says so.

Each preset lists what the seed states and what it leaves open (:attr:`Preset.stated`, :attr:`Preset.open`).

**Run time before running.** :func:`estimate_seconds` scales a measurement made once on the development machine
(2 shared CPU cores; ``biastest/data/preset_timings.json``, written by ``python -m benchmarks.bench_presets``), as the
CPU time of the process, so that other work on the machine does not inflate it:

* posterior: ``fixed + per_step · (tune + draws) · chains · dim / 50`` (the classifier's training and compilation
  are ``fixed``; each NUTS step costs in proportion to the embedding's dimension; chains counted one after
  another, so an upper bound where they run in parallel);
* Bayesian model: ``fixed + per_step_row · (tune + draws) · chains · rows`` with ``rows`` = target words ×
  (attribute words + control words), the rows of the model's data;
* 2AFC with trained replicates: ``fixed + per_token · tokens · replicates`` (gensim's skip-gram, one worker);
  scoring the words is negligible beside it.

Measured on two samples of each size and fitted as a straight line; NUTS adapts its step size and tree depth to
the posterior, so an estimate is good to a factor of about two, and a faster machine is faster.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from biastest.errors import MethodError

__all__ = [
    "MSG_ESTIMATE",
    "MSG_ESTIMATE_NUMBER",
    "MSG_UNKNOWN_PRESET",
    "PAPER_PRESETS",
    "Estimate",
    "Preset",
    "bayes_rows",
    "embedding_dim",
    "estimate_line",
    "estimate_seconds",
    "is_preset",
    "format_duration",
    "load_timings",
    "preset_markdown",
]

MSG_ESTIMATE = "⏱️ Estimated run time: **{when}** ({how})."
MSG_HIERARCHICAL_SLOWER = " (the hierarchical model has more parameters and takes longer)"
MSG_ESTIMATE_NUMBER = "The run-time estimate needs a whole number for '{key}'."
MSG_UNKNOWN_PRESET = "There is no paper preset for '{measure}'; there are presets for: {known}."


@dataclass(frozen=True)
class Preset:
    """A paper's settings for one measure.

    Attributes
    ----------
    measure : str
    label : str
        The button's and the record's name of the preset.
    values : dict
        Option name → value.
    stated : tuple of str
        What the seed states (with its section).
    open : tuple of str
        What the seed leaves open, and what the preset uses instead.
    """

    measure: str
    label: str
    values: dict[str, Any]
    stated: tuple[str, ...]
    open: tuple[str, ...] = field(default=())


PAPER_PRESETS: dict[str, Preset] = {
    "twoafc": Preset(
        "twoafc",
        "As in the paper (Liang & Acuna 2020): eight cue pairs, 32 bootstrapped replicate embeddings",
        {"spec": "Occupations vs gender (Liang & Acuna 2020)", "n_replicates": 32},
        (
            "the cue pairs female/male, woman/man, girl/boy, sister/brother, she/he, her/him, hers/his, "
            "daughter/son (§5.1)",
            "32 GloVe embeddings trained on a streaming bootstrap of the corpus, each line repeated Poisson(1) "
            "times (§4.2)",
            "PSE correlated with the labour statistics (BLS) share of the occupation (§5.1)",
        ),
        (
            "the corpus: the paper used the English Wikipedia of March 2019; here the corpus you upload",
            "the form of the psychometric function: a cumulative normal here",
            "the embedding trainer: the paper's replicates are GloVe; here gensim's skip-gram (§3.1 names "
            "skip-gram for its 100-dimensional embedding)",
        ),
    ),
    "posterior": Preset(
        "posterior",
        "As in the paper (Liang & Acuna 2020): 10,000 warm-up steps and 10,000 draws",
        {"tune": 10_000, "draws": 10_000, "chains": 1},
        (
            "NUTS (Pyro) with 10,000 warm-up samples and 10,000 steps after them (§4.3, §5.2)",
            "an MLP classifier on averaged word vectors of IMDB reviews, AUC 0.953 (§4.3)",
        ),
        (
            "the number of chains: one here (Pyro's default)",
            "the prior on embeddings: N(0, 10² I) here",
            "the classifier's size and training data: the VADER lexicon's words here, or your labelled texts",
            "its run time",
        ),
    ),
    "bayes": Preset(
        "bayes",
        "As in the paper (the Bayesian paper, seed 002): its model and 89 % HPDI",
        {"model": "additive", "hdi_prob": 0.89, "chains": 4, "tune": 1_000, "draws": 1_000},
        (
            "cosine distance ~ Normal(m[protected word] + co[connection], σ), m ~ Normal(1, 0.5), "
            "co ~ Normal(0, 1), σ ~ Cauchy(0, 1) (equations 1–5)",
            "89 % highest posterior density intervals",
            "fitted with Stan",
        ),
        (
            "the sampler's chains, warm-up and draws: Stan's defaults here (4 chains, 1,000 warm-up and 1,000 draws "
            "each)",
        ),
    ),
}


@lru_cache(maxsize=1)
def load_timings() -> dict[str, Any]:
    """The run-time measurement the estimates scale (``biastest/data/preset_timings.json``)."""
    text = (resources.files("biastest") / "data" / "preset_timings.json").read_text(encoding="utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class Estimate:
    """An estimated run time: ``seconds`` and how it was made (``how``, in words)."""

    seconds: float
    how: str


def format_duration(seconds: float) -> str:
    """About how long, in words: ``"about 40 s"``, ``"about 12 min"``, ``"about 2.5 h"``."""
    s = float(seconds)
    if s < 90:
        return f"about {max(1, round(s))} s"
    if s < 90 * 60:
        return f"about {round(s / 60)} min"
    return f"about {s / 3600:.1f} h"


def _int(values: dict[str, Any], key: str) -> int:
    try:
        return int(values[key])
    except (KeyError, TypeError, ValueError) as exc:
        raise MethodError(MSG_ESTIMATE_NUMBER.format(key=key)) from exc


def estimate_seconds(measure: str, values: dict[str, Any], *, dim: int = 50, rows: int | None = None,
                     tokens: int | None = None) -> Estimate:
    """The estimated run time of ``measure`` with the options ``values`` (see the module docstring).

    Parameters
    ----------
    measure : {"posterior", "bayes", "twoafc"}
    values : dict
        ``tune``, ``draws`` and ``chains`` (posterior, bayes); ``n_replicates`` (twoafc).
    dim : int
        The embedding's dimension (posterior).
    rows : int
        Rows of the Bayesian model's data (bayes).
    tokens : int
        Tokens of the corpus the replicates are trained on (twoafc).

    Returns
    -------
    Estimate
    """
    t = load_timings()
    where = t["machine"]
    if measure == "posterior":
        m = t["posterior"]
        steps = (_int(values, "tune") + _int(values, "draws")) * _int(values, "chains")
        sec = m["fixed_seconds"] + m["seconds_per_step"] * steps * dim / m["dim"]
        how = (f"{steps:,} NUTS steps × {m['seconds_per_step'] * 1e3:.2f} ms per step at dimension {m['dim']} "
               f"(scaled to {dim}) + {m['fixed_seconds']:.0f} s to train the classifier and compile; measured on "
               f"{where}")
    elif measure == "bayes":
        m = t["bayes"]
        n_rows = int(rows or m["rows"])
        steps = (_int(values, "tune") + _int(values, "draws")) * _int(values, "chains")
        sec = m["fixed_seconds"] + m["seconds_per_step_row"] * steps * n_rows
        slower = "" if values.get("model", "additive") == "additive" else MSG_HIERARCHICAL_SLOWER
        how = (f"{steps:,} NUTS steps × {n_rows:,} rows × {m['seconds_per_step_row'] * 1e6:.2f} µs + "
               f"{m['fixed_seconds']:.0f} s to compile and summarise, measured with the additive model{slower}"
               f"; one attempt (an unconverged run may run again within its time limit); measured on {where}")
    elif measure == "twoafc":
        m = t["twoafc"]
        reps = _int(values, "n_replicates")
        if tokens is None:
            per_million = m["seconds_per_token"] * 1e6 * reps
            return Estimate(math.nan, f"{format_duration(per_million)} per million tokens of your corpus for "
                                      f"{reps} replicates (gensim skip-gram, one worker); measured on {where}")
        sec = m["fixed_seconds"] + m["seconds_per_token"] * tokens * reps
        how = (f"{reps} replicates × {tokens:,} tokens × {m['seconds_per_token'] * 1e6:.2f} µs per token "
               f"(gensim skip-gram, one worker); measured on {where}")
    else:
        raise MethodError(MSG_UNKNOWN_PRESET.format(measure=measure, known=", ".join(PAPER_PRESETS)))
    return Estimate(float(sec), how)


def embedding_dim(source: Any) -> int:
    """The dimension of the embedding ``source`` (loaded once per process); 50 when it cannot be loaded."""
    from biastest.models.factory import word_vectors

    try:
        return int(getattr(source, "dim", None) or word_vectors(source).dim)
    except Exception:  # an estimate only: the run itself reports a source that does not load
        return 50


def bayes_rows(spec: Any) -> int:
    """Rows of the Bayesian model's data for a WEAT/MAC specification: target words × (attribute + control words)."""
    from biastest.measures.bayes.score import load_controls

    controls = load_controls()
    targets = len(spec.group1) + len(spec.group2)
    return targets * (len(spec.attributes1) + len(spec.attributes2) + len(controls.human) + len(controls.none))


def preset_markdown(measure: str, estimate: Estimate | None = None) -> str:
    """The preset's label, what the seed states and leaves open, and the estimated run time (Markdown)."""
    if measure not in PAPER_PRESETS:
        raise MethodError(MSG_UNKNOWN_PRESET.format(measure=measure, known=", ".join(PAPER_PRESETS)))
    p = PAPER_PRESETS[measure]
    lines = [f"**{p.label}.** The paper states: " + "; ".join(p.stated) + "."]
    if p.open:
        lines.append("It leaves open: " + "; ".join(p.open) + ".")
    if estimate is not None:
        when = "" if math.isnan(estimate.seconds) else f"{format_duration(estimate.seconds)} "
        lines.append(f"Estimated run time: {when}({estimate.how}).")
    return "\n\n".join(lines)


def is_preset(measure: str, values: dict[str, Any]) -> bool:
    """Whether ``values`` hold the paper preset's value for each option the preset sets (and ``values`` names)."""
    preset = PAPER_PRESETS[measure].values
    try:
        return all(type(v)(values[k]) == v for k, v in preset.items() if k in values)
    except (TypeError, ValueError):
        return False


def estimate_line(measure: str, values: dict[str, Any], **sizes: Any) -> str:
    """One line for the apps: the estimated run time and how it was made (:data:`MSG_ESTIMATE`); "" when unknown."""
    est = estimate_seconds(measure, values, **sizes)
    if math.isnan(est.seconds):
        return f"⏱️ Estimated run time: {est.how}."
    return MSG_ESTIMATE.format(when=format_duration(est.seconds), how=est.how)
