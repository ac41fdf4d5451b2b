"""The posterior sampler's report: reading, autocorrelation and PCA figures, word and group tables, CSV and JSON.

Turns a :class:`~biastest.measures.posterior.result.PosteriorResult` into Markdown, plotly figures,
pandas tables and CSV/JSON files in a private per-request folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.measures.verdict import Claim, Standing, verdict
from biastest.report.export import created_date, download_name, private_dir, write_csv, write_json
from biastest.report.figures import FONT
from biastest.report.text import esc as _esc

__all__ = [
    "POSTERIOR_COLORS",
    "POSTERIOR_CSV_NAMES",
    "POSTERIOR_NAMES",
    "csv_rows",
    "posterior_acf_figure",
    "posterior_exports",
    "posterior_group_frame",
    "posterior_markdown",
    "posterior_pca_figure",
    "posterior_reading_markdown",
    "posterior_verdict",
    "posterior_words_frame",
]

POSTERIOR_NAMES = {"+": "positive posterior p(s | +)", "-": "negative posterior p(s | −)"}
POSTERIOR_COLORS = {"+": "#16a34a", "-": "#dc2626"}
#: The posterior column of the CSV, in words: a bare "+" or "-" is a formula start to a spreadsheet, and the
#: CSV writer's neutraliser would turn it into "'+" / "'-" (no longer a value).
POSTERIOR_CSV_NAMES = {"+": "positive", "-": "negative"}


def posterior_verdict(result) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`): which word group is closer to the
    positive posterior, by the permutation test (the result carries no interval); none when not converged."""
    test = next((t for t in result.group_tests if t["posterior"] == "+"), None)
    a, b = (test["group_a"], test["group_b"]) if test else ("group 1", "group 2")
    claim = Claim(what=f"difference in mean cosine distance to the positive posterior ({a} − {b})",
                  estimate=test["difference"] if test else None, low=None, high=None, null=0,
                  above=f"towards '{b}' (its words sit closer to the positive posterior)",
                  below=f"towards '{a}' (its words sit closer to the positive posterior)", digits=4,
                  p_value=test["p_permutation"] if test else None,
                  no_interval="the sampler's group test gives a permutation p-value, not an interval")
    converged = bool(result.diagnostics.get("converged"))
    return verdict(claim, standing=Standing.OK if converged else Standing.NOT_CONVERGED)


def posterior_reading_markdown(result) -> str:
    """The verdict sentence, then the plain-language reading (classifier, sampling, each posterior's group test)."""
    return "\n".join([_esc(posterior_verdict(result)), "", *[f"- {_esc(r)}" for r in result.reading]])


def posterior_markdown(result) -> str:
    """Classifier quality and sampler diagnostics of the posterior sampler (the reading is
    :func:`posterior_reading_markdown`)."""
    c, d = result.classifier, result.diagnostics
    lines = [
        f"**Classifier p(+ | word vector):** {_esc(c.get('description', ''))}; held-out AUC "
        f"{c.get('test_auc', float('nan')):.3f} on {c.get('n_test')} words (trained on the VADER sentiment lexicon).",
        f"**Sampler:** NUTS, {result.chains} chains × {result.draws} draws (+{result.tune} tuning) per posterior, "
        f"prior N(0, 10²·I), seed {result.seed}; {d.get('seconds', float('nan')):.1f} s, "
        f"{d.get('ess_per_second')} effective samples per second, **{d.get('divergences')} divergent transitions** "
        f"(per chain: {d.get('divergences_per_chain')}), mean acceptance probability {d.get('mean_accept_prob')} "
        f"(target {d.get('target_accept')}). "
        + ("✅ converged." if d.get("converged") else "⚠️ **NOT converged**: " + _esc("; ".join(d.get("problems", ())))
           + "."),
    ]
    for p in ("+", "-"):
        if p in d:
            q = d[p]
            lines.append(f"- {POSTERIOR_NAMES[p]}: largest R-hat {q['max_rhat']}, smallest bulk ESS "
                         f"{q['min_ess_bulk']}, smallest tail ESS {q['min_ess_tail']}")
    return "\n".join(lines)


def posterior_acf_figure(result) -> go.Figure:
    """Autocorrelation of the samples by lag (the paper's Fig. 5): mean and largest |ACF| over dimensions."""
    fig = go.Figure()
    for p in ("+", "-"):
        rows = [r for r in result.autocorrelation if r["posterior"] == p]
        fig.add_trace(go.Scatter(x=[r["lag"] for r in rows], y=[r["mean_acf"] for r in rows], mode="lines+markers",
                                 name=f"{POSTERIOR_NAMES[p]}: mean ACF", line={"color": POSTERIOR_COLORS[p]},
                                 hovertemplate="lag %{x}: mean ACF %{y:.3f}<extra></extra>"))
        fig.add_trace(go.Scatter(x=[r["lag"] for r in rows], y=[r["max_abs_acf"] for r in rows], mode="lines",
                                 name=f"{POSTERIOR_NAMES[p]}: largest |ACF|",
                                 line={"color": POSTERIOR_COLORS[p], "dash": "dot"},
                                 hovertemplate="lag %{x}: largest |ACF| %{y:.3f}<extra></extra>"))
    fig.add_hline(y=0, line_color="#94a3b8")
    fig.update_layout(title="Autocorrelation of the samples (lower = more independent draws)", xaxis_title="lag",
                      yaxis_title="autocorrelation", font_family=FONT, height=360,
                      margin={"l": 10, "r": 10, "t": 50, "b": 40}, legend={"font": {"size": 10}})
    return fig


def posterior_pca_figure(result) -> go.Figure:
    """Thinned posterior samples on their first two principal components (the paper's Fig. 6)."""
    ratio = result.pca.get("explained_ratio", [float("nan"), float("nan")])
    fig = go.Figure()
    for p in ("+", "-"):
        pts = [r for r in result.pca["points"] if r["posterior"] == p]
        fig.add_trace(go.Scatter(x=[r["pc1"] for r in pts], y=[r["pc2"] for r in pts], mode="markers",
                                 name=POSTERIOR_NAMES[p], marker={"size": 5, "color": POSTERIOR_COLORS[p],
                                                                  "opacity": 0.6},
                                 hovertemplate=POSTERIOR_NAMES[p] + "<br>PC1 %{x:.2f}, PC2 %{y:.2f}<extra></extra>"))
    fig.update_layout(title="Posterior samples, first two principal components",
                      xaxis_title=f"PC1 ({ratio[0]:.1%} of variance)", yaxis_title=f"PC2 ({ratio[1]:.1%} of variance)",
                      font_family=FONT, height=420, margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def posterior_words_frame(result) -> pd.DataFrame:
    """Nearest and farthest vocabulary words to each posterior mean (the paper's Table 1), side by side."""
    cols: dict[str, list[Any]] = {}
    for p in ("+", "-"):
        for kind in ("nearest", "farthest"):
            pairs = result.words[p][kind]
            cols[f"{kind} to {p}"] = [w for w, _ in pairs]
            cols[f"cos ({kind} {p})"] = [round(float(c), 4) for _, c in pairs]
    n = max((len(v) for v in cols.values()), default=0)
    return pd.DataFrame({k: v + [None] * (n - len(v)) for k, v in cols.items()})


def posterior_group_frame(result) -> pd.DataFrame:
    """Mean cosine distance of each word group to each posterior, with the permutation and Welch tests."""
    rows = []
    for t in result.group_tests:
        rows.append({
            "posterior": POSTERIOR_NAMES.get(t["posterior"], t["posterior"]),
            f"mean distance: {t['group_a']}": t["mean_a"],
            f"mean distance: {t['group_b']}": t["mean_b"],
            "difference (first − second)": t["difference"],
            "p (permutation)": t["p_permutation"],
            "exact": t["permutation_exact"],
            "Welch t": t["t_welch"],
            "p (Welch)": t["p_welch"],
        })
    return pd.DataFrame(rows)


def posterior_exports(result, *, source: str, directory: Path | None = None) -> tuple[Path, Path]:
    """CSV (per-word distances to each posterior, word tables) and JSON in ``directory`` (default: a fresh folder).

    The CSV's ``posterior`` column says ``positive`` or ``negative`` (:data:`POSTERIOR_CSV_NAMES`); the JSON
    keeps the result's own ``+`` / ``-``. Every text cell still goes through the formula neutraliser.
    """
    folder = Path(directory) if directory is not None else private_dir("biastest-posterior-")
    name = download_name("psychophysics", source, when=created_date(result), part="posterior")
    csv_path = write_csv(csv_rows(result, source=source), folder / name)
    json_path = write_json({"test": "embedding_posterior", "embedding": source, "result": result.to_dict()},
                           folder / download_name("psychophysics", source, when=created_date(result), ext="json",
                                                  part="posterior"))
    return csv_path, json_path


def csv_rows(result, *, source: str) -> list[dict[str, Any]]:
    """The posterior CSV's rows: per-word distances to each posterior, then the nearest/farthest word tables."""
    rows: list[dict[str, Any]] = []
    for t in result.group_tests:
        for group, words, scores in ((t["group_a"], t["words_a"], t["scores_a"]),
                                     (t["group_b"], t["words_b"], t["scores_b"])):
            for w, s in zip(words, scores, strict=True):
                rows.append({"table": "group distance", "posterior": POSTERIOR_CSV_NAMES[t["posterior"]],
                             "group": group, "word": w,
                             "value": s, "rank": None, "embedding": source, "seed": result.seed})
    for r in result.word_records():
        rows.append({"table": r["kind"], "posterior": POSTERIOR_CSV_NAMES[r["posterior"]], "group": "",
                     "word": r["word"],
                     "value": r["cosine"], "rank": r["rank"], "embedding": source, "seed": result.seed})
    return rows
