"""The Bayesian estimate's result: posterior summaries per connection, word and contrast, with every attempt.

:class:`BayesResult` is a :class:`~biastest.measures.base.ResultBase`: ``to_dict()`` gives the keys the
result JSON has always had (with ``interval``, the level's label, computed from ``hdi_prob``), and
``load_json`` reads files written by earlier versions. The records inside (one per connection level,
cell, contrast, sampler attempt, and the diagnostics) are typed dictionaries: their documented keys are
checked when a file loads, and the app, the report and the tests read them as dictionaries.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, computed_field, model_serializer, with_config
from typing_extensions import TypedDict

from biastest.measures.base import ResultBase
from biastest.report.text import level_percent

__all__ = ["AttemptRecord", "BayesResult", "CellRecord", "ContrastRecord", "Diagnostics", "GroupContrastRecord",
           "LevelRecord"]

#: A posterior summary's number; ``None`` where the value was not finite (JSON has no NaN).
Number = float | None


@with_config(ConfigDict(extra="allow"))
class _Summary(TypedDict):
    """Posterior mean, sd, highest posterior density interval, R-hat and effective sample sizes of one quantity."""

    mean: Number
    hdi_low: Number
    hdi_high: Number
    rhat: Number


@with_config(ConfigDict(extra="allow"))
class LevelRecord(_Summary):
    """A connection-level parameter (``M[c]`` of the hierarchical model, ``co[c]`` of the additive one)."""

    connection: str
    parameter: str


@with_config(ConfigDict(extra="allow"))
class CellRecord(_Summary):
    """Expected distance ``mu`` of one target word and one connection, with the observed mean and count."""

    protected_word: str
    group: str
    connection: str
    n_rows: int
    observed_mean: Number


@with_config(ConfigDict(extra="allow"))
class ContrastRecord(_Summary):
    """One contrast (e.g. ``associated − none``) of one target word or ``"(overall)"``, with its verdict."""

    protected_word: str
    group: str
    contrast: str
    verdict: str


@with_config(ConfigDict(extra="allow"))
class GroupContrastRecord(_Summary):
    """One contrast of one group: the mean over its words, and what the group's stereotypes are compared with."""

    group: str
    contrast: str
    compared_with: str
    verdict: str


@with_config(ConfigDict(extra="allow"))
class AttemptRecord(TypedDict):
    """One sampler run: its settings, diagnostics and whether it converged (and why not)."""

    attempt: int
    seed: int
    draws: int
    tune: int
    target_accept: float
    max_rhat: Number
    divergences: int
    converged: bool
    problems: list[str]


@with_config(ConfigDict(extra="allow"))
class Diagnostics(TypedDict, total=False):
    """Diagnostics of the summarised attempt and of the whole fit (see :class:`BayesResult`)."""

    max_rhat: Number
    min_ess_bulk: Number
    min_ess_tail: Number
    divergences: int
    converged: bool
    problems: list[str]
    attempts: int
    stop_reason: str
    stop_message: str


class BayesResult(ResultBase):
    """Posterior summary of a Bayesian bias estimate.

    Attributes
    ----------
    model : dict
        :meth:`~biastest.measures.bayes.score.BayesModelInfo.to_dict` of the model used.
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
        ``mean_accept_prob``, ``converged`` (:func:`~biastest.measures.bayes.sampler.convergence_problems`
        finds nothing: R-hat ≤ 1.01, no divergent transition, bulk and tail
        ESS ≥ 100 per chain); and over the whole fit: ``attempts``,
        ``divergences_all_attempts``, ``stop_reason`` (:data:`~biastest.measures.bayes.score.STOP_REASONS`),
        ``stop_message`` (why sampling stopped unconverged, in words),
        ``stop_details`` (at the time limit: ``elapsed`` and ``predicted``
        seconds, the next attempt's settings), ``time_limit``,
        ``max_attempts``, ``seconds``, ``problems`` (why it is not converged,
        in words; empty when converged).
    reading : tuple of str
        Plain-language reading of the result.
    data : dict
        :meth:`~biastest.measures.bayes.score.DistanceData.summary`.
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
        The data rows (:meth:`~biastest.measures.bayes.score.DistanceData.records`), for CSV download.
    target_accept : float
        NUTS target acceptance probability of the summarised attempt.
    group_contrasts : tuple of dict
        Per group and contrast: the mean over the group's words of the contrast (``group``, ``contrast``,
        ``compared_with``: the other groups' stereotypes or a control list, ``n_words``, mean, HDI, R-hat,
        ESS, ``verdict``); empty in results written before groups were summarised.
    contrast_draws : tuple of dict
        Posterior draws of every contrast (``protected_word``, ``group``, ``contrast``, ``draws``: at most
        :data:`~biastest.measures.bayes.compare.KEPT_DRAWS`, evenly spaced over the chains), for comparing
        two embeddings (:func:`~biastest.measures.bayes.compare.compare_bayes`); empty in files written
        before they were kept.
    attempts : tuple of dict
        Every sampler run, in order: ``attempt``, ``seed``, ``draws``,
        ``tune``, ``chains``, ``target_accept``, ``max_rhat``,
        ``min_ess_bulk``, ``min_ess_tail``, ``divergences``,
        ``divergences_per_chain``, ``mean_accept_prob``, ``step_size``
        (per chain), ``seconds``, ``converged``, ``problems``.
    """

    result_name = "Bayesian estimate"

    model: dict[str, Any]
    hdi_prob: float
    connection_levels: tuple[LevelRecord, ...]
    cells: tuple[CellRecord, ...]
    contrasts: tuple[ContrastRecord, ...]
    parameters: tuple[dict[str, Any], ...]
    diagnostics: Diagnostics
    reading: tuple[str, ...]
    data: dict[str, Any]
    seed: int
    draws: int
    tune: int
    chains: int
    chain_method: str
    seconds: float
    provenance: dict[str, Any] = Field(default_factory=dict)
    rows: tuple[dict[str, Any], ...] = ()
    target_accept: float = 0.95
    attempts: tuple[AttemptRecord, ...] = ()
    group_contrasts: tuple[GroupContrastRecord, ...] = ()
    contrast_draws: tuple[dict[str, Any], ...] = ()

    def __setattr__(self, name: str, value: object) -> None:
        """A result is a record of what was measured: it does not change once made (as the dataclass before it)."""
        raise AttributeError(f"{type(self).__name__}.{name} cannot be changed")

    @model_serializer(mode="wrap")
    def _without_empty_groups(self, handler: Any) -> dict[str, Any]:
        """Today's keys; ``group_contrasts`` and ``contrast_draws`` only where there are some (files of earlier
        versions round-trip)."""
        out = handler(self)
        for key in ("group_contrasts", "contrast_draws"):
            if not out.get(key):
                out.pop(key, None)
        return out

    @computed_field
    @property
    def interval(self) -> str:
        """The interval's label as the JSON records it (:attr:`level_label`)."""
        return self.level_label

    @property
    def level_label(self) -> str:
        """The interval's name with its mass, e.g. ``"89% HPDI"`` (from :attr:`hdi_prob`, never a fixed level)."""
        return f"{level_percent(self.hdi_prob)} HPDI"

    def interval_records(self) -> list[dict[str, Any]]:
        """Tidy records for the interval plots (one row per point with its interval).

        ``panel`` is ``"cells"`` (expected distance per protected word and
        connection, like the seed's per-word figure), ``"levels"`` (connection
        level), ``"contrasts"``, or ``"group contrasts"`` (per group).
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
        for r in self.group_contrasts:
            out.append({"panel": "group contrasts", "protected_word": f"(all words of {r['group']})",
                        "group": r["group"], "series": r["contrast"], "mean": r["mean"], "hdi_low": r["hdi_low"],
                        "hdi_high": r["hdi_high"]})
        return out
