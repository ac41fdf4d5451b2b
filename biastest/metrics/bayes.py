"""Bayesian estimate of cosine-distance bias with control groups.

Reference: A. Dobrzeniecka and R. Urbaniak, *A Bayesian approach to
uncertainty in word embedding bias estimation* (seed ``002``: "A bayesian
method of cosine-based word2vec bias estimation"); companion code
github.com/efemeryds/Bayesian-analysis-for-NLP-bias (MIT).

Instead of means of means (WEAT, MAC), every (protected word, attribute word)
pair is one data row carrying its cosine **distance** ``d = 1 − cos(t, a)``
and its *connection* to the protected word:

``associated``
    the attribute is a stereotype of this word's own group (group 1 ↔
    attribute list 1, group 2 ↔ attribute list 2);
``different``
    the attribute is a stereotype of the other group;
``human``
    a neutral human attribute (control);
``none``
    a neutral word (control).

Two models are offered (:data:`BAYES_MODELS`):

``additive`` (the seed's model)
    ``d_i ~ Normal(m[word_i] + co[connection_i], σ)``, ``m ~ N(1, 0.5)``,
    ``co ~ N(0, 1)``, ``σ ~ HalfCauchy(1)``.
``hierarchical`` (the authors' final model)
    ``d_i ~ Normal(μ[word_i, connection_i], σ[connection_i])``,
    ``μ[w, c] ~ N(M[c], τ[c])`` (per-word means per connection, partially
    pooled toward connection-level means), ``M[c] ~ N(1, 0.3)``,
    ``τ[c] ~ Exponential(2)``, ``σ[c] ~ Exponential(2)``; sampled in the
    variably centred form (:func:`centering_weights`), which leaves the
    posterior unchanged.

Both likelihoods are evaluated through the exact per-cell sufficient
statistics (count, mean, sum of squared deviations of the rows of each
(word, connection) cell), which equals the row-wise Normal log-likelihood
(tests check this) and makes the cost independent of the number of rows.

The read-outs are posterior means with **highest posterior density**
intervals (ArviZ ``hdi``; 89% by default, the seed's level, option
``hdi_prob``; the original plots drew percentile intervals and called them
HPDI), the contrasts ``associated − none`` and ``associated − human`` (and
``associated − different``) per protected word and overall, R-hat, bulk and
tail effective sample sizes (ArviZ), the number of divergent transitions and
the mean acceptance probability. A smaller distance means "closer", so a bias
in the stereotyped direction shows as a **negative** contrast; it is called
credible only where the whole interval lies below 0.

Convergence is checked, not assumed: :func:`fit_bayes` samples again with
more tuning and draws (and a higher target acceptance after divergences)
while R-hat > 1.01, an ESS < 100 per chain or any divergence says the run is
not trustworthy, within a time limit and a number of attempts; every attempt
is recorded, and a result that never converged says so.

Sampler: NumPyro's NUTS on JAX. STACK.md measured the three candidates on the
same hierarchical model (2 chains, 2 cores): NumPyro 3.6 s incl. JIT, PyMC 17.8 s
first run (5.0 s warm), Pyro 173 s (chains run one after the other); PyMC was not
installed again here. ``benchmarks/bench_bayes.py`` confirms the NumPyro choice on
5,216 GloVe rows (R-hat ≤ 1.01 in ~5–13 s wall on a shared 2-core machine, mostly
XLA compilation). Measured here as well: the variably centred parametrisation
(vs non-centred: bulk ESS ~3,000 vs ~250 at 1,000 draws), a dense mass matrix for
the additive model (R-hat 1.00 vs 1.11), ``target_accept=0.95`` (no divergences
where 0.9 gave some on data with no between-word spread), and one compiled run
(splitting sampling into chunks recompiles each chunk).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from itertools import pairwise
from typing import Any

import numpy as np

from biastest.errors import DataError, EmbeddingError, MethodError
from biastest.provenance import provenance

__all__ = [
    "BAYES_MODELS",
    "CONNECTIONS",
    "CONTRASTS",
    "DEFAULT_CHAINS",
    "DEFAULT_DRAWS",
    "DEFAULT_TARGET_ACCEPT",
    "DEFAULT_TIME_LIMIT",
    "DEFAULT_TUNE",
    "HDI_PROB",
    "MAX_ATTEMPTS",
    "MIN_ESS_PER_CHAIN",
    "RHAT_MAX",
    "STOP_REASONS",
    "TARGET_ACCEPT_MAX",
    "BayesModelInfo",
    "BayesResult",
    "ControlLists",
    "DistanceData",
    "SamplerRun",
    "build_distance_data",
    "cell_statistics",
    "centering_weights",
    "configure_parallel_chains",
    "convergence_problems",
    "cosine_distance",
    "fit_bayes",
    "level_percent",
    "load_controls",
    "next_attempt_settings",
    "row_log_likelihood",
    "run_cell_sampler",
    "sample_cell_posterior",
    "sampler_lines",
    "sufficient_log_likelihood",
]

CONNECTIONS: tuple[str, ...] = ("associated", "different", "human", "none")
"""Connection types, in the order used for every array axis."""

CONTRASTS: tuple[tuple[str, str], ...] = (
    ("associated", "none"),
    ("associated", "human"),
    ("associated", "different"),
)
"""Contrasts reported (first minus second); the first two are the seed's."""

HDI_PROB = 0.89
"""Default probability mass of the highest posterior density intervals (the seed's 89%; option ``hdi_prob``)."""

DEFAULT_DRAWS = 2000
"""Draws kept per chain in the first attempt (the app, the command line and the runner use this)."""
DEFAULT_TUNE = 1000
"""Tuning (warm-up) steps per chain in the first attempt."""
DEFAULT_CHAINS = 2
"""Chains (at least 2, so that R-hat compares chains)."""
DEFAULT_TARGET_ACCEPT = 0.95
"""NUTS target acceptance probability of the first attempt."""
TARGET_ACCEPT_MAX = 0.99
"""Largest target acceptance probability an attempt uses."""
DEFAULT_TIME_LIMIT = 120.0
"""Seconds within which further attempts must be expected to end (option ``time_limit``)."""
MAX_ATTEMPTS = 4
"""Most sampler runs of one fit (the first and up to three with more tuning and draws)."""
RHAT_MAX = 1.01
"""Largest rank-normalised split R-hat of a converged run (Vehtari et al. 2021)."""
MIN_ESS_PER_CHAIN = 100
"""Smallest bulk and tail effective sample size per chain of a converged run (Vehtari et al. 2021)."""
STOP_REASONS = ("converged", "time_limit", "max_attempts", "settings_limit", "one_chain")
"""Why a fit stopped sampling (``diagnostics["stop_reason"]``)."""

MSG_UNKNOWN_MODEL = "There is no Bayesian model called '{name}'. Choose one of: {choices}."
MSG_NO_VECTOR_LIST = (
    "None of the words in {list_name} has a vector in this embedding ({missing}). "
    "Use words the embedding knows (for GloVe: lower-case single words)."
)
MSG_EMPTY_CONTROL = "The control list '{list_name}' is empty. The Bayesian estimate needs both control lists."
MSG_ZERO_VECTOR = "The word '{word}' has an all-zero vector, so its cosine distance is undefined. Remove it."
MSG_WORD_IN_TWO_ROLES = (
    "The word '{word}' is both a protected word and an attribute. Use each word in one role only."
)
MSG_BAD_VECTOR_SHAPE = (
    "The vector of '{word}' has shape {shape}, but the others have {expected} numbers. "
    "All words must come from the same embedding."
)
MSG_BAD_SAMPLER_SETTINGS = (
    "The sampler settings are out of range: draws={draws}, tune={tune}, chains={chains}. "
    "Use at least 100 draws, 100 tuning steps and 1 chain (at most 8 chains)."
)
MSG_NOT_FINITE = (
    "The sampler produced non-finite values for {name}. The data may be degenerate "
    "(for example all distances identical); check the word lists."
)
MSG_BAD_TARGET_ACCEPT = "The target acceptance probability must be a number from 0.5 to {high}, got {value!r}."
MSG_BAD_ATTEMPTS = "The number of sampler attempts must be a whole number from 1 to {high}, got {value!r}."
MSG_PROBLEM_RHAT = "largest R-hat {value} > {limit}"
MSG_PROBLEM_RHAT_UNDEFINED = "R-hat undefined for {count} quantities (their draws do not vary)"
MSG_PROBLEM_DIVERGENCES = "{count} divergent transitions"
MSG_PROBLEM_ONE_CHAIN = "R-hat cannot be computed from 1 chain (it compares 2 or more)"
MSG_PROBLEM_ESS_BULK = "smallest bulk ESS {value:.0f} < {limit}"
MSG_PROBLEM_ESS_TAIL = "smallest tail ESS {value:.0f} < {limit}"
MSG_CONVERGED = (
    "The sampler converged (attempt {attempt}): largest R-hat {max_rhat} (≤ {rhat_max} wanted), smallest bulk ESS "
    "{ess_bulk:.0f} and tail ESS {ess_tail:.0f} (≥ {min_ess} wanted), {divergences} divergent transitions."
)
MSG_RETRIED = (
    "Attempt {attempt} was not converged ({problems}), so the sampler ran again with more tuning: {draws} draws, "
    "{tune} tuning steps per chain, target acceptance {target_accept}."
)
MSG_NOT_CONVERGED = (
    "NOT CONVERGED after {attempts} attempt(s) — do not rely on these intervals: {problems}. {stop}"
)
MSG_STOP_TIME_LIMIT = (
    "Sampling stopped at the time limit of {limit:g} s: {attempts} attempt(s) took {elapsed:.1f} s, and the next "
    "({draws} draws, {tune} tuning steps per chain) was expected to take about {predicted:.0f} s more. Allow more "
    "time, or start with more draws and tuning steps."
)
MSG_STOP_MAX_ATTEMPTS = (
    "Sampling stopped after {attempts} attempt(s), the most allowed (the last had {draws} draws and {tune} tuning "
    "steps per chain). Start with more draws and tuning steps."
)
MSG_STOP_ONE_CHAIN = (
    "Sampling stopped: with 1 chain convergence cannot be checked (R-hat compares chains), so running again would "
    "not help. Run 2 or more chains."
)
MSG_STOP_SETTINGS_LIMIT = (
    "Sampling stopped: the draws ({draws}), tuning steps ({tune}) and target acceptance ({target_accept}) are at the "
    "largest values allowed."
)

_CONTROL_FILES = {"human": "human_neutral.json", "none": "neutral_words.json"}


# ---------------------------------------------------------------------------
# Models


@dataclass(frozen=True)
class BayesModelInfo:
    """A named Bayesian model with a printable statement of its priors.

    Attributes
    ----------
    name : str
        Identifier passed to :func:`fit_bayes` (``"additive"``, ``"hierarchical"``).
    title : str
        Short human title.
    likelihood : str
        The data model, one line.
    priors : tuple of (str, str)
        ``(parameter, prior)`` pairs.
    notes : str
        What the parameters mean, in plain words.
    reference : str
        Where the model comes from.
    """

    name: str
    title: str
    likelihood: str
    priors: tuple[tuple[str, str], ...]
    notes: str
    reference: str

    def describe(self) -> str:
        """Return a multi-line plain-text description (what the app shows)."""
        lines = [f"{self.title} ({self.name})", f"  {self.likelihood}"]
        lines += [f"  {p} ~ {prior}" for p, prior in self.priors]
        lines += [f"  {self.notes}", f"  Reference: {self.reference}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "name": self.name,
            "title": self.title,
            "likelihood": self.likelihood,
            "priors": [list(p) for p in self.priors],
            "notes": self.notes,
            "reference": self.reference,
            "description": self.describe(),
        }


BAYES_MODELS: dict[str, BayesModelInfo] = {
    "additive": BayesModelInfo(
        name="additive",
        title="Seed model: target-word baseline plus connection effect",
        likelihood="distance_i ~ Normal(m[word_i] + co[connection_i], sigma)",
        priors=(("m[word]", "Normal(1, 0.5)"), ("co[connection]", "Normal(0, 1)"), ("sigma", "HalfCauchy(0, 1)")),
        notes=(
            "m is each target word's baseline distance, co shifts it by connection type; a connection "
            "effect is shared by all target words, so per-word contrasts equal the overall contrast."
        ),
        reference="seed 002 (A bayesian method of cosine-based word2vec bias estimation), eqs. (1)-(5)",
    ),
    "hierarchical": BayesModelInfo(
        name="hierarchical",
        title="Authors' hierarchical model: per-word means per connection, partially pooled",
        likelihood="distance_i ~ Normal(mu[word_i, connection_i], sigma[connection_i])",
        priors=(
            ("mu[word, connection]", "Normal(M[connection], tau[connection])"),
            ("M[connection]", "Normal(1, 0.3)"),
            ("tau[connection]", "Exponential(2)"),
            ("sigma[connection]", "Exponential(2)"),
        ),
        notes=(
            "mu is the expected distance between one target word and one kind of attribute; words of "
            "the same connection share strength through M (the connection-level mean) and tau (its spread)."
        ),
        reference="Dobrzeniecka & Urbaniak, A Bayesian approach to uncertainty in word embedding bias estimation",
    ),
}


# ---------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class ControlLists:
    """The shipped control lists: neutral human attributes and neutral words."""

    human: tuple[str, ...]
    none: tuple[str, ...]
    source: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {"human": list(self.human), "none": list(self.none), "source": self.source}


def load_controls() -> ControlLists:
    """Load the shipped control lists (``biastest/data/controls``).

    Returns
    -------
    ControlLists
        85 neutral human attributes and 226 neutral words, as used by
        Dobrzeniecka & Urbaniak (see ``biastest/data/controls/README.md``).
    """
    folder = resources.files("biastest") / "data" / "controls"
    loaded = {}
    source = ""
    for key, name in _CONTROL_FILES.items():
        doc = json.loads((folder / name).read_text(encoding="utf-8"))
        loaded[key] = tuple(doc["words"])
        source = doc["source"]
    return ControlLists(human=loaded["human"], none=loaded["none"], source=source)


def cosine_distance(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine distance ``1 − u·v / (‖u‖ ‖v‖)`` between rows of ``u`` and rows of ``v``.

    Parameters
    ----------
    u : ndarray, shape (n, d)
    v : ndarray, shape (m, d)

    Returns
    -------
    ndarray, shape (n, m)
        Distances in ``[0, 2]``. Zero-norm rows must be rejected by the caller.
    """
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    un = u / np.linalg.norm(u, axis=1, keepdims=True)
    vn = v / np.linalg.norm(v, axis=1, keepdims=True)
    return 1.0 - un @ vn.T


@dataclass(frozen=True, eq=False)
class DistanceData:
    """Rows ``(protected word, attribute word, connection, cosine distance)``.

    Attributes
    ----------
    protected_words : tuple of str
        Protected words kept (with a vector), group 1 first.
    word_groups : tuple of int
        1 or 2, the group of each protected word.
    group_names, attribute_names : tuple of str
        Names of the two groups and of their stereotype attribute lists.
    word_index, connection_index : ndarray of int
        Per row: index into ``protected_words`` and into :data:`CONNECTIONS`.
    attributes : tuple of str
        Per row: the attribute (or control) word.
    distance : ndarray of float
        Per row: cosine distance ``1 − cos``.
    missing : tuple of str
        Words (of any list) without a vector; they were left out.
    excluded_controls : tuple of str
        Control words left out because they also occur in the spec.
    control_source : str
        Provenance of the control lists.
    """

    protected_words: tuple[str, ...]
    word_groups: tuple[int, ...]
    group_names: tuple[str, str]
    attribute_names: tuple[str, str]
    word_index: np.ndarray
    connection_index: np.ndarray
    attributes: tuple[str, ...]
    distance: np.ndarray
    missing: tuple[str, ...]
    excluded_controls: tuple[str, ...]
    control_source: str

    @property
    def n_rows(self) -> int:
        """Number of data rows."""
        return int(self.distance.shape[0])

    def counts(self) -> dict[str, int]:
        """Rows per connection type."""
        return {c: int(np.sum(self.connection_index == k)) for k, c in enumerate(CONNECTIONS)}

    def records(self) -> list[dict[str, Any]]:
        """Tidy rows (for CSV export and plotting)."""
        return [
            {
                "protected_word": self.protected_words[w],
                "group": self.group_names[self.word_groups[w] - 1],
                "attribute": a,
                "connection": CONNECTIONS[c],
                "distance": float(d),
            }
            for w, c, a, d in zip(
                self.word_index.tolist(), self.connection_index.tolist(), self.attributes, self.distance.tolist(),
                strict=True,
            )
        ]

    def summary(self) -> dict[str, Any]:
        """Small JSON-able description (no rows)."""
        return {
            "n_rows": self.n_rows,
            "rows_per_connection": self.counts(),
            "protected_words": list(self.protected_words),
            "word_groups": list(self.word_groups),
            "group_names": list(self.group_names),
            "attribute_names": list(self.attribute_names),
            "missing": list(self.missing),
            "excluded_controls": list(self.excluded_controls),
            "control_source": self.control_source,
        }


def _dedupe(words: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for w in words:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def build_distance_data(
    *,
    group1: Sequence[str],
    group2: Sequence[str],
    attributes1: Sequence[str],
    attributes2: Sequence[str],
    vectors: Mapping[str, np.ndarray],
    human: Sequence[str] | None = None,
    none: Sequence[str] | None = None,
    group_names: tuple[str, str] = ("group 1", "group 2"),
    attribute_names: tuple[str, str] = ("attributes 1", "attributes 2"),
    control_source: str | None = None,
) -> DistanceData:
    """Build one row per (protected word, attribute word) with its connection.

    ``d(t, a) = 1 − cos(t, a)``; the connection of ``a`` to a protected word
    ``t`` of group ``g`` is ``associated`` if ``a`` is in attribute list ``g``,
    ``different`` if in the other attribute list, ``human`` / ``none`` for the
    control lists (Dobrzeniecka & Urbaniak).

    Parameters
    ----------
    group1, group2 : sequence of str
        Protected words of the two groups.
    attributes1, attributes2 : sequence of str
        Stereotype attributes of group 1 and of group 2.
    vectors : mapping str -> ndarray
        Word → vector. Words absent from it are recorded in ``missing``.
    human, none : sequence of str, optional
        Control lists; default: the shipped lists (:func:`load_controls`).
        Control words that also occur in the spec are left out (recorded).
    group_names, attribute_names : tuple of str
        Names shown in results.
    control_source : str, optional
        Provenance of custom control lists.

    Returns
    -------
    DistanceData

    Raises
    ------
    EmbeddingError
        A list has no word with a vector, a vector is all zeros, or vectors
        have different lengths.
    DataError
        A control list is empty, or a word is both protected word and attribute.
    """
    if human is None or none is None:
        shipped = load_controls()
        human = shipped.human if human is None else human
        none = shipped.none if none is None else none
        control_source = control_source or shipped.source
    control_source = control_source or "user-supplied control lists"

    g1, g2, a1, a2 = (_dedupe(x) for x in (group1, group2, attributes1, attributes2))
    protected = set(g1) | set(g2)
    attrs = set(a1) | set(a2)
    for w in g1 + g2:
        if w in attrs:
            raise DataError(MSG_WORD_IN_TWO_ROLES.format(word=w), word=w)
    spec_words = protected | attrs
    excluded: list[str] = []
    controls: dict[str, list[str]] = {}
    for key, words, label in (("human", human, "neutral human attributes"), ("none", none, "neutral words")):
        kept = []
        for w in _dedupe(words):
            if w in spec_words or (key == "none" and w in set(human)):
                excluded.append(w)
            else:
                kept.append(w)
        if not list(words):
            raise DataError(MSG_EMPTY_CONTROL.format(list_name=label), list_name=label)
        controls[key] = kept

    missing: list[str] = []
    dim: list[int] = []

    def present(words: list[str], list_name: str, *, required: bool = True) -> list[str]:
        kept = []
        for w in words:
            v = vectors.get(w)
            if v is None:
                missing.append(w)
                continue
            arr = np.asarray(v)
            if arr.ndim != 1 or (dim and arr.shape[0] != dim[0]):
                raise EmbeddingError(
                    MSG_BAD_VECTOR_SHAPE.format(word=w, shape=arr.shape, expected=dim[0] if dim else "?"), word=w
                )
            if not dim:
                dim.append(arr.shape[0])
            if not np.any(arr):
                raise EmbeddingError(MSG_ZERO_VECTOR.format(word=w), word=w)
            kept.append(w)
        if required and not kept:
            shown = ", ".join(words[:8]) + (" …" if len(words) > 8 else "")
            raise EmbeddingError(MSG_NO_VECTOR_LIST.format(list_name=list_name, missing=shown), list_name=list_name)
        return kept

    g1 = present(g1, group_names[0])
    g2 = present(g2, group_names[1])
    a1 = present(a1, attribute_names[0])
    a2 = present(a2, attribute_names[1])
    hu = present(controls["human"], "neutral human attributes")
    no = present(controls["none"], "neutral words")

    pw = g1 + g2
    groups = [1] * len(g1) + [2] * len(g2)
    pw_vec = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in pw])
    targets = a1 + a2 + hu + no
    t_vec = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in targets])
    dist = cosine_distance(pw_vec, t_vec)  # (P, T)
    kind = ["a1"] * len(a1) + ["a2"] * len(a2) + ["human"] * len(hu) + ["none"] * len(no)

    w_idx, c_idx, att, d = [], [], [], []
    for i, g in enumerate(groups):
        for j, k in enumerate(kind):
            if k in ("a1", "a2"):
                conn = "associated" if (k == "a1") == (g == 1) else "different"
            else:
                conn = k
            w_idx.append(i)
            c_idx.append(CONNECTIONS.index(conn))
            att.append(targets[j])
            d.append(dist[i, j])
    return DistanceData(
        protected_words=tuple(pw),
        word_groups=tuple(groups),
        group_names=(str(group_names[0]), str(group_names[1])),
        attribute_names=(str(attribute_names[0]), str(attribute_names[1])),
        word_index=np.asarray(w_idx, dtype=np.int64),
        connection_index=np.asarray(c_idx, dtype=np.int64),
        attributes=tuple(att),
        distance=np.asarray(d, dtype=np.float64),
        missing=tuple(_dedupe(missing)),
        excluded_controls=tuple(_dedupe(excluded)),
        control_source=control_source,
    )


# ---------------------------------------------------------------------------
# Likelihood via sufficient statistics


def cell_statistics(
    word_index: np.ndarray, connection_index: np.ndarray, distance: np.ndarray, *, n_words: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (word, connection) cell: count ``n``, mean ``ȳ`` and ``SS = Σ (y − ȳ)²``.

    Returns
    -------
    n, mean, ss : ndarray, shape (n_words, 4)
        Empty cells have ``n = 0``, ``mean = 0``, ``ss = 0`` (they add nothing
        to the likelihood).
    """
    shape = (n_words, len(CONNECTIONS))
    flat = np.ravel_multi_index((word_index, connection_index), shape)
    size = shape[0] * shape[1]
    n = np.bincount(flat, minlength=size).astype(np.float64)
    s = np.bincount(flat, weights=distance, minlength=size)
    mean = np.divide(s, n, out=np.zeros_like(s), where=n > 0)
    ss = np.bincount(flat, weights=(distance - mean[flat]) ** 2, minlength=size)
    return n.reshape(shape), mean.reshape(shape), ss.reshape(shape)


def sufficient_log_likelihood(n, mean, ss, mu, sigma, xp=np):
    """Normal log-likelihood of all rows from cell statistics (exact).

    ``Σ_i log N(y_i | μ, σ) = −n log σ − (n/2) log 2π − (SS + n (ȳ − μ)²) / (2σ²)``
    summed over cells; ``xp`` is ``numpy`` or ``jax.numpy``.
    """
    return xp.sum(-n * xp.log(sigma) - 0.5 * n * math.log(2 * math.pi) - (ss + n * (mean - mu) ** 2) / (2 * sigma**2))


def row_log_likelihood(distance, mu_rows, sigma_rows) -> float:
    """Row-by-row Normal log-likelihood (the naive form, for checking)."""
    z = (np.asarray(distance) - mu_rows) / sigma_rows
    return float(np.sum(-np.log(sigma_rows) - 0.5 * math.log(2 * math.pi) - 0.5 * z**2))


# ---------------------------------------------------------------------------
# JAX / NumPyro plumbing


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


def centering_weights(n: np.ndarray, mean: np.ndarray, ss: np.ndarray) -> np.ndarray:
    """Per-cell centring weights ``κ ∈ [0, 1]`` for the hierarchical model.

    The hierarchical model is sampled in the *variably centred* form
    (Gorinova, Moore & Hoffman 2019): ``x ~ N(κ·M, τ^κ)``,
    ``μ = M + τ^(1−κ)·(x − κ·M)``. Every κ gives exactly the same posterior of
    ``μ``; κ only changes how easy it is for NUTS to explore. The efficient
    choice is ``κ = τ² / (τ² + σ²/n)`` (1 = centred for cells with much data, 0 =
    non-centred for cells with little); ``τ²`` and ``σ²`` are plugged in from
    the data by a method-of-moments estimate per connection.
    """
    if n.ndim > 2:
        return np.stack([centering_weights(n[i], mean[i], ss[i]) for i in range(n.shape[0])])
    kappa = np.zeros_like(n)
    for c in range(n.shape[1]):
        has = n[:, c] > 0
        if not np.any(has):
            continue
        dof = max(float(n[has, c].sum() - has.sum()), 1.0)
        sigma2 = max(float(ss[has, c].sum()) / dof, 1e-8)
        means = mean[has, c]
        between = float(np.var(means, ddof=1)) if means.size > 1 else 0.0
        tau2 = max(between - float(np.mean(sigma2 / n[has, c])), 1e-4)
        kappa[has, c] = tau2 / (tau2 + sigma2 / n[has, c])
    return kappa


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


# ---------------------------------------------------------------------------
# Result


def _interval_verdict(low: float, high: float) -> str:
    if high < 0:
        return "closer"
    if low > 0:
        return "farther"
    return "uncertain"


@dataclass(frozen=True)
class BayesResult:
    """Posterior summary of a Bayesian bias estimate.

    Attributes
    ----------
    model : dict
        :meth:`BayesModelInfo.to_dict` of the model used.
    hdi_prob : float
        Mass of the intervals (0.89).
    connection_levels : tuple of dict
        Per connection: the connection-level parameter (``M[c]`` for the
        hierarchical model, ``co[c]`` for the additive one) with mean, HDI,
        R-hat and ESS.
    cells : tuple of dict
        Per (protected word, connection): expected distance ``mu`` with mean,
        HDI, R-hat, ESS, and the observed row mean and count.
    contrasts : tuple of dict
        Per protected word and ``"(overall)"``, per contrast: mean, HDI,
        verdict (``closer`` = interval below 0, i.e. credible bias in the
        stereotyped direction; ``farther``; ``uncertain``).
    parameters : tuple of dict
        ArviZ summary of every sampled parameter (mean, sd, HDI, R-hat, ESS).
    diagnostics : dict
        Of the attempt whose samples are summarised (the last one):
        ``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences``,
        ``mean_accept_prob``, ``converged`` (:func:`convergence_problems`
        finds nothing: R-hat ≤ 1.01, no divergent transition, bulk and tail
        ESS ≥ 100 per chain); and over the whole fit: ``attempts``,
        ``divergences_all_attempts``, ``stop_reason`` (:data:`STOP_REASONS`),
        ``stop_message`` (why sampling stopped unconverged, in words),
        ``stop_details`` (at the time limit: ``elapsed`` and ``predicted``
        seconds, the next attempt's settings), ``time_limit``,
        ``max_attempts``, ``seconds``, ``problems`` (why it is not converged,
        in words; empty when converged).
    reading : tuple of str
        Plain-language reading of the result.
    data : dict
        :meth:`DistanceData.summary`.
    seed : int
        The seed asked for; attempt ``k`` (0-based) samples with seed
        ``(seed + k) mod 2³²`` (each attempt's seed is in ``attempts``).
    draws, tune, chains : int
        Settings of the attempt whose samples are summarised.
    chain_method : str
    seconds : float
        Wall time of all attempts, sampling and summarising.
    provenance : dict
        Includes ``attempts`` (as below) and the settings asked for.
    rows : tuple of dict
        The data rows (:meth:`DistanceData.records`), for CSV download.
    target_accept : float
        NUTS target acceptance probability of the summarised attempt.
    attempts : tuple of dict
        Every sampler run, in order: ``attempt``, ``seed``, ``draws``,
        ``tune``, ``chains``, ``target_accept``, ``max_rhat``,
        ``min_ess_bulk``, ``min_ess_tail``, ``divergences``,
        ``divergences_per_chain``, ``mean_accept_prob``, ``step_size``
        (per chain), ``seconds``, ``converged``, ``problems``.
    """

    model: dict[str, Any]
    hdi_prob: float
    connection_levels: tuple[dict[str, Any], ...]
    cells: tuple[dict[str, Any], ...]
    contrasts: tuple[dict[str, Any], ...]
    parameters: tuple[dict[str, Any], ...]
    diagnostics: dict[str, Any]
    reading: tuple[str, ...]
    data: dict[str, Any]
    seed: int
    draws: int
    tune: int
    chains: int
    chain_method: str
    seconds: float
    provenance: dict[str, Any] = field(default_factory=dict)
    rows: tuple[dict[str, Any], ...] = ()
    target_accept: float = 0.95
    attempts: tuple[dict[str, Any], ...] = ()

    @property
    def level_label(self) -> str:
        """The interval's name with its mass, e.g. ``"89% HPDI"`` (from :attr:`hdi_prob`, never a fixed level)."""
        return f"{level_percent(self.hdi_prob)} HPDI"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (with the data rows, for download)."""
        return {
            "model": self.model,
            "hdi_prob": self.hdi_prob,
            "interval": self.level_label,
            "connection_levels": [dict(r) for r in self.connection_levels],
            "cells": [dict(r) for r in self.cells],
            "contrasts": [dict(r) for r in self.contrasts],
            "parameters": [dict(r) for r in self.parameters],
            "diagnostics": dict(self.diagnostics),
            "reading": list(self.reading),
            "data": self.data,
            "seed": self.seed,
            "draws": self.draws,
            "tune": self.tune,
            "chains": self.chains,
            "chain_method": self.chain_method,
            "seconds": self.seconds,
            "provenance": self.provenance,
            "target_accept": self.target_accept,
            "attempts": [dict(r) for r in self.attempts],
            "rows": [dict(r) for r in self.rows],
        }

    def interval_records(self) -> list[dict[str, Any]]:
        """Tidy records for the interval plots (one row per point with its interval).

        ``panel`` is ``"cells"`` (expected distance per protected word and
        connection, like the seed's per-word figure), ``"levels"`` (connection
        level), or ``"contrasts"``.
        """
        out = []
        for r in self.cells:
            out.append({"panel": "cells", "protected_word": r["protected_word"], "group": r["group"],
                        "series": r["connection"], "mean": r["mean"], "hdi_low": r["hdi_low"],
                        "hdi_high": r["hdi_high"]})
        for r in self.connection_levels:
            out.append({"panel": "levels", "protected_word": "(overall)", "group": "", "series": r["connection"],
                        "mean": r["mean"], "hdi_low": r["hdi_low"], "hdi_high": r["hdi_high"]})
        for r in self.contrasts:
            out.append({"panel": "contrasts", "protected_word": r["protected_word"], "group": r["group"],
                        "series": r["contrast"], "mean": r["mean"], "hdi_low": r["hdi_low"],
                        "hdi_high": r["hdi_high"]})
        return out


# ---------------------------------------------------------------------------
# Fitting


def _check_settings(draws: int, tune: int, chains: int) -> None:
    if not (draws >= 100 and tune >= 100 and 1 <= chains <= 8):
        raise MethodError(MSG_BAD_SAMPLER_SETTINGS.format(draws=draws, tune=tune, chains=chains),
                          draws=draws, tune=tune, chains=chains)


def level_percent(prob: float) -> str:
    """The mass of an interval as its labels print it: ``0.89 → "89%"``, ``0.975 → "97.5%"``."""
    return f"{round(float(prob) * 100, 1):g}%"


def _summaries(arrays: dict[str, np.ndarray], hdi_prob: float) -> dict[str, dict[str, np.ndarray]]:
    """Mean, sd, HDI, R-hat, bulk/tail ESS for arrays of shape (chain, draw, ...), each stat shaped like one draw.

    All arrays go through :func:`biastest.stats.mcmc.summarise_draws` in one call (the estimators of
    ArviZ's ``hdi``, ``rhat`` and ``ess``, which the tests compare value by value, without ArviZ's
    per-quantity loop).
    """
    from biastest.stats.mcmc import summarise_draws

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
    from biastest.options import BOUNDS

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


def _check_fit_options(*, chains: int, target_accept: float, hdi_prob: float, time_limit: float,
                       max_attempts: int) -> tuple[float, float]:
    from biastest.options import check_option

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
    attempts: list[dict[str, Any]] = []
    settings = (int(draws), int(tune), float(target_accept))
    stop_reason, stop_message, stop_details = "", "", {}
    for k in range(max_attempts):
        a_draws, a_tune, a_ta = settings
        a_seed = (seed + k) % 2**32
        a0 = time.perf_counter()
        lo = 0.9 * (1 - 0.5**k)  # attempt k's share of the bar: 0–0.45, 0.45–0.68, … (the total is not known)
        tick = None
        if progress:
            def tick(fraction: float, message: str, lo=lo, k=k) -> None:
                head = f"Attempt {k + 1} (the last was not converged): " if k else ""
                progress(lo + 0.45 * 0.5**k * fraction, head + message)
        run = run_cell_sampler(n, mean, ss, model=model, seed=a_seed, draws=a_draws, tune=a_tune, chains=chains,
                               target_accept=a_ta, progress=tick)
        if tick:
            tick(0.9, "Summarising (highest posterior density intervals, R-hat, ESS)")
        derived = _derived(model, run.samples)
        stats = _summaries({**run.samples, **derived}, hdi_prob)
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
        if k + 1 == max_attempts:
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
        if elapsed + predicted > time_limit:
            stop_reason = "time_limit"
            stop_details = {"elapsed": elapsed, "predicted": predicted, "next_draws": nxt[0], "next_tune": nxt[1],
                            "next_target_accept": nxt[2]}
            stop_message = MSG_STOP_TIME_LIMIT.format(limit=time_limit, attempts=k + 1, elapsed=elapsed,
                                                      draws=nxt[0], tune=nxt[1], predicted=predicted)
            break
        settings = nxt
    last = attempts[-1]
    a_draws, a_tune, a_ta = last["draws"], last["tune"], last["target_accept"]
    if progress:
        progress(0.95, "Summarising")

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
    for k in (k for k in run.samples if k != "mu_raw"):
        st = stats[k]
        shape = np.shape(st["mean"])
        for idx in np.ndindex(*shape) if shape else [()]:
            label = k + ("[" + ",".join(map(str, idx)) + "]" if idx else "")
            parameters.append({"parameter": label, **_row(st, idx)})

    seconds = round(time.perf_counter() - t0, 3)
    diagnostics = {
        **{key: last[key] for key in ("max_rhat", "rhat_undefined", "min_ess_bulk", "min_ess_tail", "divergences",
                                      "divergences_per_chain", "mean_accept_prob", "mean_accept_prob_per_chain",
                                      "step_size", "mean_tree_size")},
        "draws_total": int(a_draws * chains),
        "converged": last["converged"],
        "problems": list(last["problems"]),
        "rhat_max_allowed": RHAT_MAX,
        "min_ess_wanted": MIN_ESS_PER_CHAIN * chains,
        "attempts": len(attempts),
        "divergences_all_attempts": int(sum(a["divergences"] for a in attempts)),
        "stop_reason": stop_reason,
        "stop_message": stop_message,
        "stop_details": stop_details,
        "time_limit": time_limit,
        "max_attempts": max_attempts,
        "seconds": seconds,
    }
    info = BAYES_MODELS[model]
    reading = _reading(contrasts, diagnostics, attempts, hdi_prob, model, groups=data.group_names)
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
    )


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


def _reading(contrasts: list[dict[str, Any]], diag: dict[str, Any], attempts: Sequence[Mapping[str, Any]],
             hdi_prob: float, model: str, *, groups: tuple[str, str]) -> list[str]:
    """Plain-language lines; the target words are named by their lists (``groups``, e.g. Math and Arts)."""
    pct = level_percent(hdi_prob)
    words_of = f"the words of {groups[0]} and {groups[1]}"
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
                "different": "the other group's stereotypes"}[other]
        iv = f"{r['mean']:+.3f}, {pct} interval [{r['hdi_low']:+.3f}, {r['hdi_high']:+.3f}]"
        if r["verdict"] == "closer":
            lines.append(f"Overall, stereotype attributes are credibly closer than {what} ({iv}).")
        elif r["verdict"] == "farther":
            lines.append(f"Overall, stereotype attributes are credibly farther than {what} ({iv}): "
                         "no bias in the stereotyped direction.")
        else:
            lines.append(f"Overall, no credible difference between stereotype attributes and {what} ({iv}): "
                         "the interval includes 0.")
    if model == "hierarchical":
        for a, b in CONTRASTS[:2]:
            name = f"{a} − {b}"
            words = [r["protected_word"] for r in contrasts
                     if r["contrast"] == name and r["protected_word"] != "(overall)" and r["verdict"] == "closer"]
            total = sum(1 for r in contrasts if r["contrast"] == name and r["protected_word"] != "(overall)")
            shown = ", ".join(words) if words else "none"
            lines.append(f"Words of {groups[0]} and {groups[1]} with a credible bias ({name}): {len(words)} of "
                         f"{total} ({shown}).")
    else:
        lines.append(f"In this model the connection effect is shared by all {words_of}, so per-word "
                     "contrasts equal the overall one; use the hierarchical model for per-word estimates.")
    return lines
