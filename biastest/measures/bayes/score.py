"""Bayesian estimate of cosine-distance bias with control groups.

Reference: A. Dobrzeniecka and R. Urbaniak, *A Bayesian approach to
uncertainty in word embedding bias estimation* (seed ``002``: "A bayesian
method of cosine-based word2vec bias estimation"); companion code
github.com/efemeryds/Bayesian-analysis-for-NLP-bias (MIT).

Instead of means of means (WEAT, MAC), every (protected word, attribute word)
pair is one data row carrying its cosine **distance** ``d = 1 − cos(t, a)``
and its *connection* to the protected word:

``associated``
    the attribute is a stereotype of this word's own group (group k ↔
    attribute list k, for two groups or more: Manzini et al.'s religion
    example has three, Jewish, Christian and Muslim terms);
``different``
    the attribute is a stereotype of another group;
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

Convergence is checked, not assumed: :func:`~biastest.measures.bayes.fit.fit_bayes` samples again with
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from biastest.errors import DataError, EmbeddingError

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
    "MSG_GROUP_COUNTS",
    "RHAT_MAX",
    "STOP_REASONS",
    "TARGET_ACCEPT_MAX",
    "BayesModelInfo",
    "ControlLists",
    "DistanceData",
    "build_distance_data",
    "cell_statistics",
    "centering_weights",
    "cosine_distance",
    "load_controls",
    "row_log_likelihood",
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
"""Draws kept per chain in the first attempt (the app, the command line and the measure's run use this)."""
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
MSG_GROUP_COUNTS = (
    "The Bayesian estimate needs two or more social groups, each with its own stereotype attribute list in the "
    "same order; got {n_groups} groups and {n_attributes} attribute lists."
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
        1, 2, … the group of each protected word (1-based index into ``group_names``).
    group_names, attribute_names : tuple of str
        Names of the groups (two or more) and of their stereotype attribute lists (one per group, same order).
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
    group_names: tuple[str, ...]
    attribute_names: tuple[str, ...]
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
    group1: Sequence[str] = (),
    group2: Sequence[str] = (),
    attributes1: Sequence[str] = (),
    attributes2: Sequence[str] = (),
    vectors: Mapping[str, np.ndarray],
    human: Sequence[str] | None = None,
    none: Sequence[str] | None = None,
    group_names: Sequence[str] | None = None,
    attribute_names: Sequence[str] | None = None,
    control_source: str | None = None,
    groups: Sequence[Sequence[str]] | None = None,
    attributes: Sequence[Sequence[str]] | None = None,
) -> DistanceData:
    """Build one row per (protected word, attribute word) with its connection.

    ``d(t, a) = 1 − cos(t, a)``; the connection of ``a`` to a protected word
    ``t`` of group ``g`` is ``associated`` if ``a`` is in attribute list ``g``,
    ``different`` if in another group's attribute list, ``human`` / ``none``
    for the control lists (Dobrzeniecka & Urbaniak).

    Parameters
    ----------
    group1, group2 : sequence of str
        Protected words of two groups (or give ``groups``).
    attributes1, attributes2 : sequence of str
        Stereotype attributes of group 1 and of group 2 (or give ``attributes``).
    vectors : mapping str -> ndarray
        Word → vector. Words absent from it are recorded in ``missing``.
    human, none : sequence of str, optional
        Control lists; default: the shipped lists (:func:`load_controls`).
        Control words that also occur in the spec are left out (recorded).
    group_names, attribute_names : sequence of str, optional
        Names shown in results (default ``group 1``, … and ``attributes 1``, …).
    control_source : str, optional
        Provenance of custom control lists.
    groups, attributes : sequence of sequences of str, optional
        Two or more groups and as many attribute lists, in the same order (list k is the stereotype of
        group k); they replace ``group1`` … ``attributes2``.

    Returns
    -------
    DistanceData

    Raises
    ------
    EmbeddingError
        A list has no word with a vector, a vector is all zeros, or vectors
        have different lengths.
    DataError
        A control list is empty, a word is both protected word and attribute, or the numbers of groups and
        attribute lists differ.
    """
    if human is None or none is None:
        shipped = load_controls()
        human = shipped.human if human is None else human
        none = shipped.none if none is None else none
        control_source = control_source or shipped.source
    control_source = control_source or "user-supplied control lists"
    glists = [_dedupe(x) for x in (groups if groups is not None else (group1, group2))]
    alists = [_dedupe(x) for x in (attributes if attributes is not None else (attributes1, attributes2))]
    gnames = [str(n) for n in (group_names or [f"group {k + 1}" for k in range(len(glists))])]
    anames = [str(n) for n in (attribute_names or [f"attributes {k + 1}" for k in range(len(alists))])]
    if not (len(glists) == len(alists) == len(gnames) == len(anames)) or len(glists) < 2:
        raise DataError(MSG_GROUP_COUNTS.format(n_groups=len(glists), n_attributes=len(alists)))
    attrs = {w for a in alists for w in a}
    for w in (w for g in glists for w in g):
        if w in attrs:
            raise DataError(MSG_WORD_IN_TWO_ROLES.format(word=w), word=w)
    controls, excluded = _controls(human, none, spec_words={w for g in glists for w in g} | attrs)

    check = _VectorCheck(vectors)
    glists = [check.present(g, name) for g, name in zip(glists, gnames, strict=True)]
    alists = [check.present(a, name) for a, name in zip(alists, anames, strict=True)]
    hu = check.present(controls["human"], "neutral human attributes")
    no = check.present(controls["none"], "neutral words")

    pw = [w for g in glists for w in g]
    word_groups = [k + 1 for k, g in enumerate(glists) for _ in g]
    targets = [w for a in alists for w in a] + hu + no
    kind: list[int | str] = [k + 1 for k, a in enumerate(alists) for _ in a] + ["human"] * len(hu) + ["none"] * len(no)
    w_idx, c_idx, att, d = _rows(vectors, pw, word_groups, targets, kind)
    return DistanceData(
        protected_words=tuple(pw),
        word_groups=tuple(word_groups),
        group_names=tuple(gnames),
        attribute_names=tuple(anames),
        word_index=np.asarray(w_idx, dtype=np.int64),
        connection_index=np.asarray(c_idx, dtype=np.int64),
        attributes=tuple(att),
        distance=np.asarray(d, dtype=np.float64),
        missing=tuple(_dedupe(check.missing)),
        excluded_controls=tuple(_dedupe(excluded)),
        control_source=control_source,
    )


def _controls(
    human: Sequence[str], none: Sequence[str], *, spec_words: set[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """The control lists without words of the spec (and ``none`` without ``human`` words), and those left out."""
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
    return controls, excluded


class _VectorCheck:
    """Keeps the words of each list that have a vector; records the missing ones; all vectors one length, none zero."""

    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.missing: list[str] = []
        self.dim: list[int] = []

    def present(self, words: list[str], list_name: str, *, required: bool = True) -> list[str]:
        dim = self.dim
        kept = []
        for w in words:
            v = self.vectors.get(w)
            if v is None:
                self.missing.append(w)
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


def _rows(
    vectors: Mapping[str, np.ndarray], pw: list[str], groups: list[int], targets: list[str], kind: list[int | str]
) -> tuple[list[int], list[int], list[str], list[float]]:
    """One row per (protected word, target word): word index, connection index, target, cosine distance.

    ``kind`` is the attribute list (1-based) of a stereotype word, or ``"human"`` / ``"none"`` for a control.
    """
    pw_vec = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in pw])
    t_vec = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in targets])
    dist = cosine_distance(pw_vec, t_vec)  # (P, T)
    w_idx, c_idx, att, d = [], [], [], []
    for i, g in enumerate(groups):
        for j, k in enumerate(kind):
            if isinstance(k, str):
                conn = k
            else:
                conn = "associated" if k == g else "different"
            w_idx.append(i)
            c_idx.append(CONNECTIONS.index(conn))
            att.append(targets[j])
            d.append(dist[i, j])
    return w_idx, c_idx, att, d


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


