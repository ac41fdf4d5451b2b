"""The Bayesian estimate on two embeddings: the posterior of the difference of each contrast, with its HDI.

Two fits on two embeddings (an embedding and its hard-debiased version, or any two) are independent
posteriors, so a draw of the difference ``second − first`` of a contrast (``associated − none`` of a word, or
overall) is a draw of the second's contrast minus an independent draw of the first's. With ``K`` draws kept per
contrast in each result (:data:`KEPT_DRAWS`, evenly spaced over the chains), both sets are put in a seeded random
order and subtracted draw by draw (``min(K₁, K₂)`` differences); the difference's mean and highest posterior
density interval (:func:`biastest.stats.mcmc.hdi`, the results' mass, 89 % by default) are reported per word
and contrast. The words compared are those both fits kept.

Reading: a contrast is negative where the stereotype sits closer than the control, so a difference
``second − first`` above zero means the second embedding's contrast is nearer zero or above it (less of the
stereotyped closeness) — what debiasing should do; an interval that holds 0 means no credible change.
Dobrzeniecka & Urbaniak compare Reddit embeddings with their hard-debiased version this way and find the
changes small (seed 002, §"We build analogous models").

Examples
--------
>>> import numpy as np
>>> rows = lambda shift: ({"protected_word": "(overall)", "group": "", "contrast": "associated − none",
...                        "draws": list(np.linspace(-0.3, 0.1, 201) + shift)},)
>>> from biastest.measures.bayes.compare import compare_draws
>>> out = compare_draws(rows(0.0), rows(0.2), hdi_prob=0.89, seed=0)
>>> round(out[0]["difference"], 6)
0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
from pydantic import Field

from biastest.errors import DataError
from biastest.measures.base import ResultBase
from biastest.measures.bayes.result import BayesResult
from biastest.provenance import provenance
from biastest.report.export import download_name, private_dir, write_csv, write_json
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import level_percent
from biastest.stats.mcmc import hdi

__all__ = [
    "KEPT_DRAWS",
    "MSG_DIFFERENT_MODELS",
    "MSG_NO_DRAWS",
    "MSG_NO_SHARED",
    "BayesComparison",
    "compare_bayes",
    "compare_draws",
    "comparison_exports",
    "comparison_figure",
    "kept_draws",
]

#: Draws of each contrast a result keeps (evenly spaced over the chains' draws).
KEPT_DRAWS = 1000

MSG_NO_DRAWS = (
    "The Bayesian estimate on '{label}' holds no posterior draws of its contrasts (it was saved by an earlier "
    "version), so it cannot be compared. Run it again."
)
MSG_DIFFERENT_MODELS = (
    "The two Bayesian estimates used different models ({first} and {second}); compare estimates of the same model."
)
MSG_NO_SHARED = "The two Bayesian estimates share no protected word, so there is nothing to compare."


def kept_draws(derived: Mapping[str, np.ndarray], contrasts: Sequence[Mapping[str, Any]],
               words: Sequence[str], *, kept: int = KEPT_DRAWS) -> tuple[dict[str, Any], ...]:
    """The draws a result keeps of each contrast record: at most ``kept``, evenly spaced, rounded to 1e-6.

    Parameters
    ----------
    derived : mapping
        ``"a-b"`` → draws (chain, draw, word) and ``"overall:a-b"`` → draws (chain, draw) of each contrast.
    contrasts : sequence of mapping
        The result's contrast records (``protected_word``, ``group``, ``contrast`` as ``"a − b"``).
    words : sequence of str
        The protected words, in the order of the derived arrays' last axis.
    kept : int

    Returns
    -------
    tuple of dict
        ``protected_word``, ``group``, ``contrast``, ``draws`` (list of float).
    """
    out = []
    for r in contrasts:
        a, _, b = str(r["contrast"]).partition(" − ")
        overall = r["protected_word"] == "(overall)"
        key = f"overall:{a}-{b}" if overall else f"{a}-{b}"
        if key not in derived or (not overall and r["protected_word"] not in words):
            continue
        arr = np.asarray(derived[key], dtype=np.float64)
        flat = (arr if overall else arr[..., list(words).index(r["protected_word"])]).reshape(-1)
        idx = np.unique(np.linspace(0, flat.size - 1, min(kept, flat.size)).round().astype(np.int64))
        out.append({"protected_word": r["protected_word"], "group": r.get("group", ""), "contrast": r["contrast"],
                    "draws": np.round(flat[idx], 6).tolist()})
    return tuple(out)


def _verdict(low: float, high: float) -> str:
    if low > 0:
        return "higher"
    if high < 0:
        return "lower"
    return "no credible change"


def compare_draws(first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]], *, hdi_prob: float,
                  seed: int) -> list[dict[str, Any]]:
    """The difference ``second − first`` of every contrast both sets of draws hold.

    Parameters
    ----------
    first, second : sequence of mapping
        ``contrast_draws`` records (``protected_word``, ``group``, ``contrast``, ``draws``).
    hdi_prob : float
        Mass of the intervals.
    seed : int
        Seed of the random order in which draws are paired.

    Returns
    -------
    list of dict
        Per (protected word, contrast), in the first's order: ``first_mean``, ``second_mean``, ``difference``
        (mean of the differences), ``hdi_low``, ``hdi_high``, ``p_higher`` (share of differences above 0),
        ``n_draws`` and ``verdict`` (``higher``/``lower`` when the interval excludes 0).
    """
    rng = np.random.default_rng(seed)
    theirs = {(r["protected_word"], r["contrast"]): r for r in second}
    rows = []
    for r in first:
        other = theirs.get((r["protected_word"], r["contrast"]))
        if other is None:
            continue
        d1, d2 = np.asarray(r["draws"], dtype=np.float64), np.asarray(other["draws"], dtype=np.float64)
        n = min(d1.size, d2.size)
        diff = d2[rng.permutation(d2.size)[:n]] - d1[rng.permutation(d1.size)[:n]]
        low, high = (float(x[0]) for x in hdi(diff[None, :], hdi_prob))
        rows.append({"protected_word": r["protected_word"], "group": r.get("group", ""), "contrast": r["contrast"],
                     "first_mean": float(d1.mean()), "second_mean": float(d2.mean()),
                     "difference": float(diff.mean()), "hdi_low": low, "hdi_high": high,
                     "p_higher": float(np.mean(diff > 0)), "n_draws": int(n), "verdict": _verdict(low, high)})
    return rows


class BayesComparison(ResultBase):
    """Two Bayesian estimates on two embeddings: the difference of each contrast (second − first) with its HDI.

    Attributes
    ----------
    labels : tuple of str
        The two embeddings' names (first, second).
    hdi_prob : float
    seed : int
        Seed of the pairing of draws.
    rows : tuple of dict
        :func:`compare_draws`'s rows.
    only_in_one : tuple of str
        Protected words one fit kept and the other did not (left out).
    reading : tuple of str
    provenance : dict
    """

    result_name = "Bayesian comparison"

    labels: tuple[str, str]
    hdi_prob: float
    seed: int
    rows: tuple[dict[str, Any], ...]
    only_in_one: tuple[str, ...] = ()
    reading: tuple[str, ...] = ()
    provenance: dict[str, Any] = Field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """One CSV row per word and contrast, with the embeddings named."""
        return [{"first": self.labels[0], "second": self.labels[1], **r} for r in self.rows]


def _reading(rows: Sequence[Mapping[str, Any]], labels: tuple[str, str], level: str) -> list[str]:
    out = [f"Differences are {labels[1]} minus {labels[0]}, with {level} highest posterior density intervals. "
           "A contrast below 0 means the stereotype sits closer than the control; a difference above 0 means "
           f"{labels[1]} shows less of that closeness."]
    for name in dict.fromkeys(r["contrast"] for r in rows):
        overall = next((r for r in rows if r["contrast"] == name and r["protected_word"] == "(overall)"), None)
        per_word = [r for r in rows if r["contrast"] == name and r["protected_word"] != "(overall)"]
        moved = [r["protected_word"] for r in per_word if r["verdict"] != "no credible change"]
        head = (f"Overall {name}: difference {overall['difference']:+.3f} [{overall['hdi_low']:+.3f}, "
                f"{overall['hdi_high']:+.3f}] ({overall['verdict']}). " if overall else f"{name}: ")
        out.append(head + f"{len(moved)} of {len(per_word)} words changed credibly"
                   + (f" ({', '.join(moved)})." if moved else "."))
    return out


def compare_bayes(first: BayesResult, second: BayesResult, *, labels: tuple[str, str] | None = None,
                  seed: int | None = None, hdi_prob: float | None = None) -> BayesComparison:
    """Compare two Bayesian estimates (on two embeddings) contrast by contrast.

    Parameters
    ----------
    first, second : BayesResult
        Fits of the same model on the same specification (e.g. an embedding and its hard-debiased version).
    labels : (str, str), optional
        Their names (default: each result's embedding, its provenance ``model_id``).
    seed : int, optional
        Seed of the pairing of draws (default the first fit's seed); recorded.
    hdi_prob : float, optional
        Mass of the intervals (default the first fit's).

    Returns
    -------
    BayesComparison

    Raises
    ------
    DataError
        :data:`MSG_NO_DRAWS`, :data:`MSG_DIFFERENT_MODELS`, :data:`MSG_NO_SHARED`.
    """
    names = labels or tuple(str(r.provenance.get("model_id") or "embedding") for r in (first, second))
    for r, label in zip((first, second), names, strict=True):
        if not r.contrast_draws:
            raise DataError(MSG_NO_DRAWS.format(label=label), label=label)
    m1, m2 = first.model.get("name"), second.model.get("name")
    if m1 != m2:
        raise DataError(MSG_DIFFERENT_MODELS.format(first=m1, second=m2))
    seed = int(first.seed if seed is None else seed)
    prob = float(first.hdi_prob if hdi_prob is None else hdi_prob)
    rows = compare_draws(first.contrast_draws, second.contrast_draws, hdi_prob=prob, seed=seed)
    if not any(r["protected_word"] != "(overall)" for r in rows):
        raise DataError(MSG_NO_SHARED)
    w1 = {r["protected_word"] for r in first.contrast_draws} - {"(overall)"}
    w2 = {r["protected_word"] for r in second.contrast_draws} - {"(overall)"}
    level = f"{level_percent(prob)}"
    return BayesComparison(
        labels=(names[0], names[1]), hdi_prob=prob, seed=seed, rows=tuple(rows),
        only_in_one=tuple(sorted(w1 ^ w2)), reading=tuple(_reading(rows, (names[0], names[1]), level)),
        provenance=provenance(method="bayes-compare", seed=seed, hdi_prob=prob, embeddings=list(names),
                              model=m1, first_seed=first.seed, second_seed=second.seed),
    )


def comparison_figure(cmp: BayesComparison) -> go.Figure:
    """The difference of each contrast per word with its interval (a forest plot, one panel row per contrast)."""
    fig = go.Figure()
    names = list(dict.fromkeys(r["contrast"] for r in cmp.rows))
    for k, name in enumerate(names):
        rows = [r for r in cmp.rows if r["contrast"] == name]
        fig.add_trace(go.Scatter(
            x=[r["difference"] for r in rows], y=[hover_safe(r["protected_word"]) for r in rows], mode="markers",
            name=name, marker={"symbol": ["diamond" if r["protected_word"] == "(overall)" else "circle"
                                          for r in rows], "size": 9},
            error_x={"type": "data", "symmetric": False,
                     "array": [r["hdi_high"] - r["difference"] for r in rows],
                     "arrayminus": [r["difference"] - r["hdi_low"] for r in rows]},
            customdata=[[r["hdi_low"], r["hdi_high"], r["verdict"]] for r in rows],
            hovertemplate="%{y}<br>difference %{x:+.3f}<br>interval [%{customdata[0]:+.3f}, "
                          "%{customdata[1]:+.3f}]<br>%{customdata[2]}<extra>" + hover_safe(name) + "</extra>",
            offsetgroup=str(k),
        ))
    fig.add_vline(x=0, line={"color": NEUTRAL, "dash": "dot"})
    fig.update_layout(
        title=f"{hover_safe(cmp.labels[1])} − {hover_safe(cmp.labels[0])}: contrasts' difference "
              f"({level_percent(cmp.hdi_prob)} HPDI)",
        xaxis_title="difference of the contrast (second − first)", font={"family": FONT}, template="plotly_white",
        height=max(320, 24 * len(cmp.rows) // max(1, len(names)) + 160), legend={"orientation": "h"},
    )
    return fig


def comparison_exports(cmp: BayesComparison, *, directory: Path | None = None) -> tuple[Path, Path]:
    """CSV (one row per word and contrast, the embeddings named) and JSON of the comparison, in ``directory``."""
    folder = Path(directory) if directory is not None else private_dir("biastest-bayes-compare-")
    name = f"{cmp.labels[0]}-vs-{cmp.labels[1]}"
    when = str(cmp.provenance.get("created_at", ""))[:10] or None
    csv_path = write_csv(cmp.records(), folder / download_name("psychophysics", name, when=when,
                                                               part="bayes-compare"))
    json_path = write_json({"test": "bayes-compare", "result": cmp.to_dict()},
                           folder / download_name("psychophysics", name, when=when, ext="json", part="bayes-compare"))
    return csv_path, json_path
