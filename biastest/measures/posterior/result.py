"""The posterior sampler's result: classifier quality, diagnostics, autocorrelation, PCA, word tables, group tests.

:class:`PosteriorResult` is a :class:`~biastest.measures.base.ResultBase`: ``to_dict()`` gives the keys
the result JSON has always had, and ``load_json`` reads files written by earlier versions.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from biastest.measures.base import ResultBase

__all__ = ["PosteriorResult"]


class PosteriorResult(ResultBase):
    """Everything the app shows about the two embedding posteriors.

    Attributes
    ----------
    classifier : dict
        :meth:`~biastest.measures.posterior.score.Classifier.to_dict` (incl. held-out AUC).
    diagnostics : dict
        Per posterior (``"+"``, ``"-"``): ``max_rhat``, ``min_ess_bulk``,
        ``median_ess_bulk``, ``min_ess_tail``; plus the sampler's statistics
        (``divergences``, ``divergences_per_chain``, ``mean_accept_prob``,
        ``mean_accept_prob_per_chain``, ``step_size``, ``mean_tree_size``,
        ``target_accept``), ``seconds``, ``ess_per_second`` (smallest bulk ESS
        over all dimensions of both posteriors / wall seconds of sampling incl.
        compilation), ``converged`` and ``problems`` (the criteria of
        :func:`biastest.measures.bayes.sampler.convergence_problems`, over both posteriors).
    autocorrelation : tuple of dict
        Per posterior and lag: mean and max |ACF| over dimensions (Fig. 5).
    pca : dict
        ``explained_ratio`` and ``points`` (posterior, pc1, pc2) of thinned samples (Fig. 6).
    words : dict
        Per posterior: ``nearest`` and ``farthest`` (word, cosine) to its mean (Table 1).
    group_tests : tuple of dict
        A :class:`~biastest.measures.posterior.score.GroupTest` per posterior, as a dictionary.
    seed, draws, tune, chains : int
    provenance : dict
    """

    result_name = "embedding posterior"

    classifier: dict[str, Any]
    diagnostics: dict[str, Any]
    autocorrelation: tuple[dict[str, Any], ...]
    pca: dict[str, Any]
    words: dict[str, Any]
    group_tests: tuple[dict[str, Any], ...]
    reading: tuple[str, ...]
    seed: int
    draws: int
    tune: int
    chains: int
    provenance: dict[str, Any] = Field(default_factory=dict)

    def __setattr__(self, name: str, value: object) -> None:
        """A result is a record of what was measured: it does not change once made (as the dataclass before it)."""
        raise AttributeError(f"{type(self).__name__}.{name} cannot be changed")

    def word_records(self) -> list[dict[str, Any]]:
        """Tidy rows of the nearest/farthest word tables."""
        out = []
        for post, d in self.words.items():
            for kind in ("nearest", "farthest"):
                for rank, (w, c) in enumerate(d[kind], start=1):
                    out.append({"posterior": post, "kind": kind, "rank": rank, "word": w, "cosine": c})
        return out
