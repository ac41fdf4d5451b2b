"""Tables, figures, exports and plain-language readings of the Bayesian estimate and the posterior sampler.

Turns typed results (:class:`~biastest.metrics.bayes.BayesResult`, the posterior
sampler's result) into pandas DataFrames, plotly figures with per-item hover,
CSV/JSON files in a private per-request folder, and short readings for a social
scientist. The 2AFC and WEAT/MAC reports live with their measures
(:mod:`biastest.measures.twoafc.report`, :mod:`biastest.measures.weat.report`).
Every user-typed word that reaches a hover label is HTML-escaped
(:func:`biastest.report.figures.hover_safe`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.metrics.bayes import level_percent
from biastest.report.export import ROW_TYPE, private_dir, write_csv, write_json
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import esc as _esc

__all__ = [
    "bayes_contrast_figure",
    "bayes_contrast_frame",
    "bayes_diagnostics_markdown",
    "bayes_exports",
    "bayes_summary_rows",
    "bayes_interval_figure",
    "bayes_priors_markdown",
]

# --------------------------------------------------------------------------- Bayesian estimate
CONNECTION_COLORS = {"associated": "#dc2626", "different": "#2563eb", "human": "#16a34a", "none": "#64748b"}


def bayes_priors_markdown(info: Mapping[str, Any]) -> str:
    """The model's likelihood and priors, as the app shows them before and after sampling."""
    lines = [f"**{_esc(info['title'])}**", "", f"`{_esc(info['likelihood'])}`", ""]
    lines += [f"- `{_esc(p)} ~ {_esc(prior)}`" for p, prior in info["priors"]]
    lines += ["", f"<span class='bt-hint'>{_esc(info['notes'])} Reference: {_esc(info['reference'])}.</span>"]
    return "\n".join(lines)


def _interval_trace(rows: Sequence[Mapping[str, Any]], *, name: str, color: str, offset: float,
                    labels: Sequence[str], interval: str) -> go.Scatter:
    index = {lab: i for i, lab in enumerate(labels)}
    return go.Scatter(
        x=[r["mean"] for r in rows],
        y=[index[r["label"]] + offset for r in rows],
        mode="markers",
        name=hover_safe(name),
        marker={"color": color, "size": 8},
        error_x={"type": "data", "symmetric": False,
                 "array": [r["hdi_high"] - r["mean"] for r in rows],
                 "arrayminus": [r["mean"] - r["hdi_low"] for r in rows], "color": color},
        customdata=[[hover_safe(r["label"]), hover_safe(name), f"{r['mean']:.4f}", f"{r['hdi_low']:.4f}",
                     f"{r['hdi_high']:.4f}", hover_safe(r.get("extra", ""))] for r in rows],
        hovertemplate=(
            "<b>%{customdata[0]}</b> · %{customdata[1]}<br>posterior mean: %{customdata[2]}<br>"
            f"{hover_safe(interval)}: " "%{customdata[3]} – %{customdata[4]}<br>%{customdata[5]}<extra></extra>"
        ),
    )


def _bayes_lists(result) -> tuple[str, str, str, str]:
    """The spec's own names of the two target lists and their two attribute lists, escaped for a figure."""
    g1, g2 = (result.data.get("group_names") or ("target list 1", "target list 2"))[:2]
    a1, a2 = (result.data.get("attribute_names") or ("attribute list 1", "attribute list 2"))[:2]
    return hover_safe(g1), hover_safe(g2), hover_safe(a1), hover_safe(a2)


def bayes_interval_figure(result) -> go.Figure:
    """Expected cosine distance per target word and connection with HPDI (the seed's per-word figure).

    The title names the target lists and the legend's connections by the spec's own list names; the interval's
    mass is the result's (``hdi_prob``).
    """
    pct = level_percent(result.hdi_prob).removesuffix("%")
    g1, g2, a1, a2 = _bayes_lists(result)
    words = list(dict.fromkeys(r["protected_word"] for r in result.cells))
    labels = [hover_safe(w) for w in words]
    fig = go.Figure()
    conns = list(dict.fromkeys(r["connection"] for r in result.cells))
    for k, conn in enumerate(conns):
        rows = [
            {**r, "label": hover_safe(r["protected_word"]),
             "extra": f"target list: {r['group']}; {r['n_rows']} word pairs, observed mean {r['observed_mean']:.4f}; "
                      f"R-hat {r['rhat']:.3f}"}
            for r in result.cells if r["connection"] == conn
        ]
        offset = (k - (len(conns) - 1) / 2) * 0.18
        fig.add_trace(_interval_trace(rows, name=conn, color=CONNECTION_COLORS.get(conn, NEUTRAL), offset=offset,
                                      labels=labels, interval=result.level_label))
    fig.update_layout(
        title=(f"Expected cosine distance of each word of {g1} and {g2} to each kind of attribute ({pct}% highest "
               f"posterior density)<br><sup>associated: {g1} ↔ {a1}, {g2} ↔ {a2} · different: {g1} ↔ {a2}, "
               f"{g2} ↔ {a1} · human, none: neutral control words</sup>"),
        xaxis_title="cosine distance (lower = closer)",
        yaxis={"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": labels, "autorange": "reversed"},
        font_family=FONT,
        height=max(340, 80 + 34 * len(labels)),
        margin={"l": 10, "r": 10, "t": 80, "b": 40},
        legend={"orientation": "h", "y": -0.12},
        hoverlabel={"align": "left"},
    )
    return fig


def bayes_contrast_figure(result) -> go.Figure:
    """Contrasts (associated − control) per target word and overall; an interval wholly below 0 = credible bias."""
    pct = level_percent(result.hdi_prob).removesuffix("%")
    words = list(dict.fromkeys(r["protected_word"] for r in result.contrasts))
    labels = [hover_safe(w) for w in words]
    fig = go.Figure()
    names = list(dict.fromkeys(r["contrast"] for r in result.contrasts))
    palette = ["#dc2626", "#16a34a", "#2563eb", "#9333ea"]
    for k, name in enumerate(names):
        rows = [{**r, "label": hover_safe(r["protected_word"]), "extra": f"verdict: {r['verdict']}"}
                for r in result.contrasts if r["contrast"] == name]
        offset = (k - (len(names) - 1) / 2) * 0.2
        fig.add_trace(_interval_trace(rows, name=name, color=palette[k % len(palette)], offset=offset, labels=labels,
                                      interval=result.level_label))
    fig.add_vline(x=0, line_dash="dash", line_color="#64748b")
    fig.update_layout(
        title=f"Contrasts with {pct}% HPDI: wholly below 0 = stereotype attributes credibly closer than controls",
        xaxis_title="difference in cosine distance",
        yaxis={"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": labels, "autorange": "reversed"},
        font_family=FONT,
        height=max(340, 80 + 34 * len(labels)),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        legend={"orientation": "h", "y": -0.12},
        hoverlabel={"align": "left"},
    )
    return fig


#: Columns of the contrast table; ``{interval}`` is the result's own label (e.g. "89% HPDI", from ``hdi_prob``).
BAYES_CONTRAST_COLUMNS = {"protected_word": "word", "group": "target list", "contrast": "contrast", "mean": "mean",
                          "hdi_low": "{interval} low", "hdi_high": "{interval} high", "rhat": "R-hat",
                          "ess_bulk": "bulk ESS", "verdict": "verdict"}


def bayes_contrast_frame(result) -> pd.DataFrame:
    """Contrasts per target word (its list named as in the spec) with the interval, R-hat, ESS and verdict."""
    columns = {key: label.format(interval=result.level_label) for key, label in BAYES_CONTRAST_COLUMNS.items()}
    rows = [{label: r.get(key) for key, label in columns.items()} for r in result.contrasts]
    return pd.DataFrame(rows, columns=list(columns.values()))


#: Columns of the table of sampler attempts (key in ``BayesResult.attempts`` → header).
BAYES_ATTEMPT_COLUMNS = {"attempt": "attempt", "seed": "seed", "draws": "draws", "tune": "tuning",
                         "target_accept": "target acceptance", "max_rhat": "largest R-hat",
                         "min_ess_bulk": "smallest bulk ESS", "min_ess_tail": "smallest tail ESS",
                         "divergences": "divergences", "mean_accept_prob": "mean acceptance",
                         "seconds": "seconds", "converged": "converged"}


def bayes_diagnostics_markdown(result) -> str:
    """Sampler diagnostics of every attempt (R-hat, ESS, divergences, acceptance) and the plain-language reading."""
    d = result.diagnostics
    n_attempts = d.get("attempts", len(result.attempts) or 1)
    if d.get("converged"):
        ok = "✅ converged" + (f" on attempt {n_attempts}" if n_attempts > 1 else "")
    else:
        ok = "⚠️ **NOT converged** — do not rely on these intervals"
    lines = [
        f"**Sampler:** NUTS, {result.chains} chains × {result.draws} draws (+{result.tune} tuning), target "
        f"acceptance {result.target_accept}, seed {result.seed}; {n_attempts} attempt(s), {result.seconds:.1f} s. "
        f"{ok}.",
        f"Largest R-hat {d.get('max_rhat')} (≤ {d.get('rhat_max_allowed', 1.01)} wanted), smallest bulk ESS "
        f"{d.get('min_ess_bulk')}, smallest tail ESS {d.get('min_ess_tail')} (≥ {d.get('min_ess_wanted')} wanted), "
        f"**divergent transitions {d.get('divergences')}** (0 wanted; {d.get('divergences_all_attempts')} over all "
        f"attempts), mean acceptance probability {d.get('mean_accept_prob')}.",
    ]
    if not d.get("converged") and d.get("stop_message"):
        lines += ["", f"**{_esc(d['stop_message'])}**"]
    if result.attempts:
        lines += ["", "| " + " | ".join(BAYES_ATTEMPT_COLUMNS.values()) + " |",
                  "|" + "---|" * len(BAYES_ATTEMPT_COLUMNS)]
        for a in result.attempts:
            cells = [("yes" if a[k] else "no") if k == "converged" else _esc(str(a[k])) for k in BAYES_ATTEMPT_COLUMNS]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "### Reading", *[f"- {_esc(line)}" for line in result.reading]]
    return "\n".join(lines)


def bayes_summary_rows(result, *, source: str) -> list[dict[str, Any]]:
    """The rows a Bayesian CSV starts with: the run, its convergence and the overall contrasts, then every attempt.

    The :data:`~biastest.report.export.ROW_TYPE` column says ``"summary"`` (one row per overall contrast, each
    carrying the whole run: spec, embedding, model, interval and its mass, converged, problems, why sampling
    stopped, R-hat, ESS, divergences, acceptance, attempts, settings, seed, rows, versions, date) or
    ``"sampler attempt"`` (one row per sampler run).
    """
    d, prov = result.diagnostics, result.provenance or {}
    run = {
        "spec": (prov.get("spec") or {}).get("name"), "embedding": source, "model": result.model["name"],
        "method": prov.get("method"), "interval": result.level_label, "hdi_prob": result.hdi_prob,
        "converged": d.get("converged"), "problems": "; ".join(d.get("problems", ())),
        "stop_reason": d.get("stop_reason"), "stop_message": d.get("stop_message"), "max_rhat": d.get("max_rhat"),
        "min_ess_bulk": d.get("min_ess_bulk"), "min_ess_tail": d.get("min_ess_tail"),
        "divergences": d.get("divergences"), "divergences_all_attempts": d.get("divergences_all_attempts"),
        "mean_accept_prob": d.get("mean_accept_prob"), "attempts": d.get("attempts"), "draws": result.draws,
        "tune": result.tune, "chains": result.chains, "target_accept": result.target_accept, "seed": result.seed,
        "n_rows": result.data.get("n_rows"), "seconds": result.seconds,
        "biastest_version": (prov.get("versions") or {}).get("biastest"), "versions": prov.get("versions"),
        "created_at": prov.get("created_at"),
    }
    rows = [{ROW_TYPE: "summary", "contrast": r["contrast"], "mean": r["mean"], "hdi_low": r["hdi_low"],
             "hdi_high": r["hdi_high"], "verdict": r["verdict"], **run}
            for r in result.contrasts if r["protected_word"] == "(overall)"]
    rows += [{ROW_TYPE: "sampler attempt", **{k: v for k, v in a.items() if k != "problems"},
              "problems": "; ".join(a.get("problems", ()))} for a in result.attempts]
    return rows


def bayes_exports(result, *, source: str, directory: Path | None = None) -> tuple[Path, Path]:
    """CSV and JSON in ``directory`` (default: a fresh folder).

    The CSV starts with :func:`bayes_summary_rows` (the run, its convergence, divergences and overall
    contrasts, then every sampler attempt), then one ``interval`` row per word, connection and contrast, so
    the CSV alone is a complete record; its first column ``row_type`` says which is which.
    """
    folder = Path(directory) if directory is not None else private_dir("biastest-bayes-")
    rows = bayes_summary_rows(result, source=source)
    rows += [{ROW_TYPE: "interval", **r, "interval": result.level_label, "embedding": source,
              "model": result.model["name"], "seed": result.seed} for r in result.interval_records()]
    csv_path = write_csv(rows, folder / "bayes_estimate.csv")
    json_path = write_json({"test": "bayes", "embedding": source, "result": result.to_dict()},
                           folder / "bayes_estimate.json")
    return csv_path, json_path


# --------------------------------------------------------------------------- posterior of embeddings
POSTERIOR_NAMES = {"+": "positive posterior p(s | +)", "-": "negative posterior p(s | −)"}
POSTERIOR_COLORS = {"+": "#16a34a", "-": "#dc2626"}
#: The posterior column of the CSV, in words: a bare "+" or "-" is a formula start to a spreadsheet, and the
#: CSV writer's neutraliser would turn it into "'+" / "'-" (no longer a value).
POSTERIOR_CSV_NAMES = {"+": "positive", "-": "negative"}


def posterior_markdown(result) -> str:
    """Classifier quality, sampler diagnostics and the plain-language reading of the posterior sampler."""
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
    lines += ["", "### Reading", *[f"- {_esc(r)}" for r in result.reading]]
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
    csv_path = write_csv(rows, folder / "embedding_posterior.csv")
    json_path = write_json({"test": "embedding_posterior", "embedding": source, "result": result.to_dict()},
                           folder / "embedding_posterior.json")
    return csv_path, json_path
