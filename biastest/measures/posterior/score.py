"""Posterior of embeddings conditioned on a classifier (Liang & Acuna 2020, §2.3, §3.2, §4.3, §5.2).

A classifier ``p(+ | s)`` is trained on word embeddings ``s``; the posterior
of an embedding given a label is

``p(s | +) ∝ p(+ | s) · N(s; 0, 10² I)``  and  ``p(s | −) ∝ (1 − p(+ | s)) · N(s; 0, 10² I)``

sampled with NUTS. The wide prior N(0, 10² I) is this package's choice: the
paper (seed ``000``) does not state its prior. The paper trained an MLP on
averaged word vectors of IMDB reviews (AUC 0.953) and sampled with Pyro's NUTS,
10,000 warm-up samples and 10,000 steps after them (§4.3); it states no run
time. Offline here, the classifier learns **word-level sentiment from the
VADER lexicon** (Hutto & Gilbert 2014, ``vaderSentiment`` package,
``vader_lexicon.txt``: mean human rating in [−4, 4]; positive when > 0, negative
when < 0) on the embedding's vectors; its weights are exported to JAX and both
posteriors are sampled with NumPyro's NUTS.

Read-outs: held-out AUC of the classifier; R-hat, bulk/tail ESS and ESS per
second (ArviZ); the autocorrelation function (paper Fig. 5); a PCA projection
of the samples (Fig. 6); the words nearest to and farthest from each
posterior mean by cosine (Table 1); and the mean cosine distance of two word
groups (e.g. female vs male names) to each posterior, **with a significance
test** (two-sided permutation test on the difference of group means, plus
Welch's t-test), which the original did not report.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import combinations
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from biastest.errors import DataError, MethodError
from biastest.measures.bayes.sampler import SamplerRun, configure_parallel_chains
from biastest.models.classifier import fit_binary_mlp

__all__ = [
    "PRIOR_SD",
    "Classifier",
    "GroupTest",
    "auc_score",
    "autocorrelation",
    "group_distance_test",
    "lexicon_training_data",
    "load_default_groups",
    "load_vader_lexicon",
    "nearest_words",
    "pca_projection",
    "sample_embedding_posterior",
    "train_classifier",
]

PRIOR_SD = 10.0
"""Standard deviation of the isotropic Normal prior on embeddings, N(0, 10² I): this package's choice of a wide
prior (the paper, seed ``000``, does not state the prior it used)."""

MSG_TOO_FEW_LABELS = (
    "Only {n_pos} positive and {n_neg} negative training words have vectors; the classifier needs at "
    "least {minimum} of each. Use an embedding that covers common English words."
)
MSG_GROUP_TOO_SMALL = (
    "The word group '{name}' has {count} word(s) with a vector; the significance test needs at least 2 "
    "per group. Add words the embedding knows."
)
MSG_BAD_POSTERIOR_SETTINGS = (
    "The sampler settings are out of range: draws={draws}, tune={tune}, chains={chains}. "
    "Use at least 100 draws, 100 tuning steps and 1 to 8 chains."
)
MSG_NOT_FINITE = "The sampler produced non-finite embeddings. Try another seed or more tuning steps."
MSG_POSTERIOR_NOT_CONVERGED = (
    "NOT CONVERGED — do not rely on the tables and tests below: {problems}. Run more draws and tuning steps."
)
MSG_LEXICON_UNAVAILABLE = (
    "The VADER sentiment lexicon is not installed (package vaderSentiment). Install the project's "
    "requirements, then try again."
)

_DEFAULT_GROUPS_FILE = "name_groups.json"


# ---------------------------------------------------------------------------
# Training data and classifier


def load_vader_lexicon() -> dict[str, float]:
    """Return word → mean sentiment rating (−4 … 4) from ``vaderSentiment``'s ``vader_lexicon.txt``."""
    try:
        text = (resources.files("vaderSentiment") / "vader_lexicon.txt").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise DataError(MSG_LEXICON_UNAVAILABLE) from exc
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            out[parts[0]] = float(parts[1])
    return out


def lexicon_training_data(
    *, vectors: Mapping[str, np.ndarray], lexicon: Mapping[str, float] | None = None, min_per_class: int = 20
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Build (X, y, words): words of the lexicon that are alphabetic and have a vector.

    ``y = 1`` when the rating is > 0, ``0`` when < 0 (ratings of exactly 0 are dropped).

    Parameters
    ----------
    vectors : mapping str -> ndarray
        Word → vector (only the lexicon's words are looked up).
    lexicon : mapping str -> float, optional
        Default: :func:`load_vader_lexicon`.
    min_per_class : int
        Minimum words per class.
    """
    lexicon = load_vader_lexicon() if lexicon is None else lexicon
    words, xs, ys = [], [], []
    for w in sorted(lexicon):
        r = lexicon[w]
        if r == 0 or not w.isalpha():
            continue
        v = vectors.get(w)
        if v is None:
            continue
        words.append(w)
        xs.append(np.asarray(v, dtype=np.float32))
        ys.append(1 if r > 0 else 0)
    y = np.asarray(ys, dtype=np.int64)
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    if n_pos < min_per_class or n_neg < min_per_class:
        raise DataError(MSG_TOO_FEW_LABELS.format(n_pos=n_pos, n_neg=n_neg, minimum=min_per_class),
                        n_pos=n_pos, n_neg=n_neg)
    return np.stack(xs), y, tuple(words)


def auc_score(y_true: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve by the Mann–Whitney rank statistic (ties count one half).

    ``AUC = (R₊ − n₊(n₊+1)/2) / (n₊ n₋)`` with ``R₊`` the sum of the average ranks of the positives.
    """
    from scipy.stats import rankdata

    y = np.asarray(y_true).astype(bool)
    ranks = rankdata(np.asarray(score, dtype=np.float64))
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True, eq=False)
class Classifier:
    """A feed-forward classifier ``logit(s) = W_L(… tanh(W_1 s + b_1) …) + b_L`` (weights in numpy).

    Attributes
    ----------
    layers : tuple of (ndarray, ndarray)
        ``(W, b)`` per layer, ``W`` of shape (in, out); the last layer has one output.
        One layer = logistic regression.
    train_auc, test_auc : float
        AUC on the training and held-out words (NaN-free; ``-1`` when not trained here).
    n_train, n_test : int
    seed : int
    description : str
    """

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    train_auc: float = -1.0
    test_auc: float = -1.0
    n_train: int = 0
    n_test: int = 0
    seed: int = -1
    description: str = ""

    @property
    def dim(self) -> int:
        """Input dimension."""
        return int(self.layers[0][0].shape[0])

    def logit(self, s: np.ndarray) -> np.ndarray:
        """Logit of p(+ | s) in numpy, for rows of ``s``."""
        h = np.asarray(s, dtype=np.float64)
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.tanh(h)
        return h[..., 0]

    def logit_jax(self):
        """Return a JAX function ``s -> logit`` with the weights as constants."""
        import jax.numpy as jnp

        layers = [(jnp.asarray(w, dtype=jnp.float32), jnp.asarray(b, dtype=jnp.float32)) for w, b in self.layers]

        def f(s):
            h = s
            for i, (w, b) in enumerate(layers):
                h = h @ w + b
                if i < len(layers) - 1:
                    h = jnp.tanh(h)
            return h[..., 0]

        return f

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (layer shapes, not weights)."""
        return {
            "layer_shapes": [list(w.shape) for w, _ in self.layers],
            "train_auc": self.train_auc,
            "test_auc": self.test_auc,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "seed": self.seed,
            "description": self.description,
        }


def train_classifier(
    x: np.ndarray,
    y: np.ndarray,
    *,
    seed: int,
    hidden: int = 8,
    epochs: int = 200,
    lr: float = 0.01,
    weight_decay: float = 1e-3,
    test_fraction: float = 0.2,
) -> Classifier:
    """Train ``p(+ | s)`` with PyTorch (full-batch Adam, binary cross-entropy), seeded.

    The training itself is :func:`biastest.models.classifier.fit_binary_mlp`;
    this function splits the data and measures the AUC.

    Parameters
    ----------
    x : ndarray (n, d)
    y : ndarray (n,) of 0/1
    seed : int
        Seeds the stratified train/test split and the weight initialisation
        (torch's global RNG is left untouched).
    hidden : int
        Units of the single tanh hidden layer; ``0`` gives logistic regression.
    epochs, lr, weight_decay : training settings.
    test_fraction : float
        Share of each class held out for the AUC.

    Returns
    -------
    Classifier
        With held-out AUC (Mann–Whitney, :func:`auc_score`).
    """
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.int64)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        k = max(1, round(test_fraction * idx.size))
        test[rng.choice(idx, size=k, replace=False)] = True
    layers = fit_binary_mlp(x[~test], y[~test].astype(np.float32), seed=seed, hidden=hidden, epochs=epochs, lr=lr,
                            weight_decay=weight_decay)
    clf = Classifier(layers=layers)
    desc = f"MLP {x.shape[1]}-{hidden}-1 (tanh)" if hidden > 0 else f"logistic regression on {x.shape[1]} dimensions"
    return Classifier(
        layers=layers,
        train_auc=round(auc_score(y[~test], clf.logit(x[~test])), 4),
        test_auc=round(auc_score(y[test], clf.logit(x[test])), 4),
        n_train=int((~test).sum()),
        n_test=int(test.sum()),
        seed=seed,
        description=desc + f", Adam lr={lr}, {epochs} full-batch epochs, weight decay {weight_decay}",
    )


# ---------------------------------------------------------------------------
# Sampling


def _posterior_model(sign):
    """Two independent blocks: row 0 ~ p(s | +), row 1 ~ p(s | −)."""

    def model(logit_fn, dim):
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist

        s = numpyro.sample("s", dist.Normal(0.0, PRIOR_SD).expand([2, dim]).to_event(2))
        numpyro.factor("classifier", jnp.sum(jax.nn.log_sigmoid(sign * logit_fn(s))))

    return model


def sample_embedding_posterior(
    classifier: Classifier,
    *,
    seed: int,
    draws: int = 2000,
    tune: int = 1000,
    chains: int = 2,
    target_accept: float = 0.8,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Sample ``p(s | +)`` and ``p(s | −)`` ∝ ``p(±|s) · N(s; 0, 10² I)`` with NUTS.

    Both posteriors are sampled in **one** NUTS run as two independent blocks of
    a joint target (their product), which compiles the sampler once; each block's
    marginal is exactly its posterior.

    Returns
    -------
    samples : dict
        ``{"+": (chain, draw, d), "-": (chain, draw, d)}``.
    info : dict
        ``seconds`` (wall time incl. compilation), ``chain_method``, ``target_accept``, and the sampler's own
        statistics of the kept draws (:meth:`biastest.measures.bayes.sampler.SamplerRun.statistics`):
        ``divergences`` (total), ``divergences_per_chain``, ``mean_accept_prob`` (overall and
        ``mean_accept_prob_per_chain``), ``step_size`` and ``mean_tree_size`` per chain.
    """
    if not (draws >= 100 and tune >= 100 and 1 <= chains <= 8):
        raise MethodError(MSG_BAD_POSTERIOR_SETTINGS.format(draws=draws, tune=tune, chains=chains))
    chain_method = configure_parallel_chains(chains)
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    sign = jnp.asarray([1.0, -1.0])
    logit = classifier.logit_jax()
    t0 = time.perf_counter()
    kernel = NUTS(_posterior_model(sign), target_accept_prob=target_accept)
    mcmc = MCMC(kernel, num_warmup=tune, num_samples=draws, num_chains=chains, chain_method=chain_method,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), logit, classifier.dim,
             extra_fields=("diverging", "accept_prob", "num_steps", "adapt_state.step_size"))
    s = np.asarray(mcmc.get_samples(group_by_chain=True)["s"], dtype=np.float64)
    seconds = time.perf_counter() - t0
    if not np.all(np.isfinite(s)):
        raise MethodError(MSG_NOT_FINITE)
    extra = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    run = SamplerRun(samples={}, diverging=extra["diverging"].astype(bool), accept_prob=extra["accept_prob"],
                     num_steps=extra["num_steps"], step_size=extra["adapt_state.step_size"][:, -1],
                     chain_method=chain_method, seconds=round(seconds, 3))
    return {"+": s[:, :, 0, :], "-": s[:, :, 1, :]}, {
        "seconds": round(seconds, 3), "chain_method": chain_method, "target_accept": target_accept,
        **run.statistics(),
    }


# ---------------------------------------------------------------------------
# Read-outs


def autocorrelation(samples: np.ndarray, *, max_lag: int = 50) -> np.ndarray:
    """Autocorrelation per lag, averaged over chains, per dimension (ArviZ ``autocorr``).

    Parameters
    ----------
    samples : ndarray (chain, draw, d)

    Returns
    -------
    ndarray (max_lag + 1, d)
    """
    import arviz as az

    acf = az.autocorr(np.asarray(samples), axis=1)  # (chain, draw, d)
    return acf[:, : max_lag + 1, :].mean(axis=0)


def pca_projection(points: np.ndarray, *, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PCA by SVD of the centred points.

    Returns
    -------
    scores : ndarray (n, k)
    components : ndarray (k, d)
    explained_ratio : ndarray (k,)
    """
    x = np.asarray(points, dtype=np.float64)
    centre = x.mean(axis=0)
    _, sv, vt = np.linalg.svd(x - centre, full_matrices=False)
    comps = vt[:n_components]
    # fix the sign so that the largest loading of each component is positive (deterministic output)
    signs = np.sign(comps[np.arange(comps.shape[0]), np.argmax(np.abs(comps), axis=1)])
    comps = comps * signs[:, None]
    var = sv**2
    return (x - centre) @ comps.T, comps, var[:n_components] / var.sum()


def nearest_words(
    vector: np.ndarray, matrix: np.ndarray, words: Sequence[str], *, k: int = 10
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The ``k`` words with the highest and with the lowest cosine similarity to ``vector``.

    Vectorised over the whole vocabulary ``matrix`` (n, d). Returns
    ``(nearest, farthest)`` as lists of ``(word, cosine)``; zero rows are skipped.
    """
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1)
    v = np.asarray(vector, dtype=np.float64)
    cos = (m @ v.astype(np.float32)).astype(np.float64) / (np.where(norms > 0, norms, 1.0) * np.linalg.norm(v))
    cos = np.where(norms > 0, cos, np.nan)
    valid = np.flatnonzero(~np.isnan(cos))
    order = valid[np.argsort(-cos[valid], kind="stable")]
    near = [(words[i], round(float(cos[i]), 6)) for i in order[:k]]
    far = [(words[i], round(float(cos[i]), 6)) for i in order[::-1][:k]]
    return near, far


class GroupTest(BaseModel):
    """Mean cosine distance of two word groups to one posterior, with significance tests.

    ``score(w) = mean over posterior draws of (1 − cos(w, s))``; the statistic is
    ``mean(score | group A) − mean(score | group B)``. ``p_permutation`` is the
    two-sided permutation p-value over re-partitions of the words (exact when
    there are at most ``max_exact`` partitions, otherwise ``n_resamples``
    seeded random ones, with the +1 correction); ``p_welch`` is Welch's t-test.
    """

    posterior: str
    group_a: str
    group_b: str
    words_a: tuple[str, ...]
    words_b: tuple[str, ...]
    scores_a: tuple[float, ...]
    scores_b: tuple[float, ...]
    mean_a: float
    mean_b: float
    difference: float
    p_permutation: float
    permutation_exact: bool
    t_welch: float
    p_welch: float
    seed: int

    model_config = ConfigDict(frozen=True)


def group_distance_test(
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    *,
    seed: int,
    n_resamples: int = 10000,
    max_exact: int = 20000,
) -> tuple[float, bool, float, float]:
    """Two-sided permutation test and Welch's t-test on the difference of group means.

    Returns
    -------
    p_permutation, exact, t_welch, p_welch
    """
    from scipy.stats import ttest_ind

    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    pooled = np.concatenate([a, b])
    na, n = a.size, pooled.size
    observed = abs(a.mean() - b.mean())
    tol = 1e-12 * max(1.0, observed)
    total = math.comb(n, na)
    if total <= max_exact:
        diffs = []
        for idx in combinations(range(n), na):
            mask = np.zeros(n, dtype=bool)
            mask[list(idx)] = True
            diffs.append(abs(pooled[mask].mean() - pooled[~mask].mean()))
        p = float(np.mean(np.asarray(diffs) >= observed - tol))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        perm = np.argsort(rng.random((n_resamples, n)), axis=1)
        sa = pooled[perm[:, :na]].mean(axis=1)
        sb = pooled[perm[:, na:]].mean(axis=1)
        hits = int(np.sum(np.abs(sa - sb) >= observed - tol))
        p = (hits + 1) / (n_resamples + 1)
        exact = False
    t = ttest_ind(a, b, equal_var=False)
    return p, exact, float(t.statistic), float(t.pvalue)


def load_default_groups() -> dict[str, list[str]]:
    """The shipped default word groups (female vs male first names of WEAT 6, Caliskan et al. 2017)."""
    doc = json.loads((resources.files("biastest") / "data" / "controls" / _DEFAULT_GROUPS_FILE).read_text("utf-8"))
    return {k: list(v) for k, v in doc["groups"].items()}
