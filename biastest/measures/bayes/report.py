"""The Bayesian estimate's report: priors, interval and contrast figures, tables, diagnostics, CSV and JSON.

Turns a :class:`~biastest.measures.bayes.result.BayesResult` into Markdown, plotly figures with per-item
hover, a pandas table and CSV/JSON files in a private per-request folder. The figures and readings name
the spec's own lists; every user-typed word that reaches a hover label is HTML-escaped
(:func:`biastest.report.figures.hover_safe`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from biastest.measures.verdict import Claim, Standing, verdict
from biastest.report.export import ROW_TYPE, created_date, download_name, private_dir, write_csv, write_json
from biastest.report.figures import FONT, NEUTRAL, hover_safe
from biastest.report.text import esc as _esc
from biastest.report.text import level_percent

__all__ = [
    "BAYES_ATTEMPT_COLUMNS",
    "BAYES_CONTRAST_COLUMNS",
    "CONNECTION_COLORS",
    "bayes_contrast_figure",
    "bayes_contrast_frame",
    "bayes_diagnostics_markdown",
    "bayes_exports",
    "bayes_interval_figure",
    "bayes_priors_markdown",
    "bayes_reading_markdown",
    "bayes_verdict",
    "bayes_summary_rows",
    "contrast_records",
    "csv_rows",
    "group_label",
]

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


def _bayes_lists(result) -> tuple[list[str], list[str]]:
    """The spec's own names of the target lists and of their attribute lists (two or more), escaped for a figure."""
    groups = list(result.data.get("group_names") or ("target list 1", "target list 2"))
    attrs = list(result.data.get("attribute_names") or ("attribute list 1", "attribute list 2"))
    return [hover_safe(g) for g in groups], [hover_safe(a) for a in attrs]


def _joined(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def bayes_interval_figure(result) -> go.Figure:
    """Expected cosine distance per target word and connection with HPDI (the seed's per-word figure).

    The title names the target lists and the legend's connections by the spec's own list names; the interval's
    mass is the result's (``hdi_prob``).
    """
    pct = level_percent(result.hdi_prob).removesuffix("%")
    groups, attrs = _bayes_lists(result)
    pairs = ", ".join(f"{g} ↔ {a}" for g, a in zip(groups, attrs, strict=False))
    different = (f"{groups[0]} ↔ {attrs[1]}, {groups[1]} ↔ {attrs[0]}" if len(groups) == 2
                 else "a word ↔ another group's list")
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
        title=(f"Expected cosine distance of each word of {_joined(groups)} to each kind of attribute ({pct}% "
               f"highest posterior density)<br><sup>associated: {pairs} · different: {different} · human, none: "
               "neutral control words</sup>"),
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
    """Contrasts (associated − control) overall, per group (with several groups) and per target word.

    An interval wholly below 0 = credible bias. A group's row is the mean over its words ("all words of …").
    """
    pct = level_percent(result.hdi_prob).removesuffix("%")
    every = contrast_records(result)
    words = list(dict.fromkeys(r["protected_word"] for r in every))
    labels = [hover_safe(w) for w in words]
    fig = go.Figure()
    names = list(dict.fromkeys(r["contrast"] for r in every))
    palette = ["#dc2626", "#16a34a", "#2563eb", "#9333ea"]
    for k, name in enumerate(names):
        rows = [{**r, "label": hover_safe(r["protected_word"]), "extra": f"verdict: {r['verdict']}"}
                for r in every if r["contrast"] == name]
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


def group_label(group: str) -> str:
    """How a group's contrast is labelled beside the words' (the mean over its words)."""
    return f"(all words of {group})"


def contrast_records(result) -> list[dict[str, Any]]:
    """The contrasts in the result's order, each overall row followed by the groups' rows of that contrast.

    A group's row is labelled :func:`group_label` in ``protected_word`` and its verdict names what the group's
    stereotypes are compared with.
    """
    out = []
    for r in result.contrasts:
        out.append(dict(r))
        if r["protected_word"] == "(overall)":
            out += [{**g, "protected_word": group_label(g["group"]),
                     "verdict": f"{g['verdict']} (vs {g['compared_with']})"}
                    for g in getattr(result, "group_contrasts", ()) if g["contrast"] == r["contrast"]]
    return out


#: Columns of the contrast table; ``{interval}`` is the result's own label (e.g. "89% HPDI", from ``hdi_prob``).
BAYES_CONTRAST_COLUMNS = {"protected_word": "word", "group": "target list", "contrast": "contrast", "mean": "mean",
                          "hdi_low": "{interval} low", "hdi_high": "{interval} high", "rhat": "R-hat",
                          "ess_bulk": "bulk ESS", "verdict": "verdict"}


def bayes_contrast_frame(result) -> pd.DataFrame:
    """Contrasts per target word (its list named as in the spec) with the interval, R-hat, ESS and verdict."""
    columns = {key: label.format(interval=result.level_label) for key, label in BAYES_CONTRAST_COLUMNS.items()}
    rows = [{label: r.get(key) for key, label in columns.items()} for r in contrast_records(result)]
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
    return "\n".join(lines)


def bayes_verdict(result) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`): the overall contrast of the
    stereotype attributes with the neutral words, its highest-density interval; none when not converged."""
    name = " − ".join(("associated", "none"))
    row = next((r for r in result.contrasts if r["protected_word"] == "(overall)" and r["contrast"] == name), None)
    claim = Claim(what="overall difference in cosine distance (stereotype attributes − neutral words)",
                  estimate=None if row is None else row["mean"], low=None if row is None else row["hdi_low"],
                  high=None if row is None else row["hdi_high"], null=0,
                  above="away from the stereotype (the stereotype attributes sit farther from the target words)",
                  below="towards the stereotype (the stereotype attributes sit closer to the target words)",
                  level=result.hdi_prob, interval_name="highest-density interval", digits=3,
                  no_interval="this model has no overall contrast with neutral words")
    converged = bool(result.diagnostics.get("converged"))
    return verdict(claim, standing=Standing.OK if converged else Standing.NOT_CONVERGED)


def bayes_reading_markdown(result) -> str:
    """The verdict sentence, then the plain-language reading (the sampler's retries and convergence, the contrasts)."""
    return "\n".join([_esc(bayes_verdict(result)), "", *[f"- {_esc(line)}" for line in result.reading]])


def bayes_summary_rows(result, *, source: str) -> list[dict[str, Any]]:
    """The rows a Bayesian CSV starts with: the run, its convergence and the overall contrasts, then every attempt.

    The :data:`~biastest.report.export.ROW_TYPE` column says ``"summary"`` (one row per overall contrast, each
    carrying the whole run: spec, embedding, model, interval and its mass, converged, problems, why sampling
    stopped, R-hat, ESS, divergences, acceptance, attempts, settings, seed, rows, versions, date), ``"group"``
    (one row per group and contrast: the mean over the group's words, and what it is compared with) or
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
    rows += [{ROW_TYPE: "group", "group": r["group"], "contrast": r["contrast"], "compared_with": r["compared_with"],
              "n_words": r.get("n_words"), "mean": r["mean"], "hdi_low": r["hdi_low"], "hdi_high": r["hdi_high"],
              "verdict": r["verdict"], "interval": result.level_label, "seed": result.seed}
             for r in getattr(result, "group_contrasts", ())]
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
    name = download_name("psychophysics", source, when=created_date(result), part="bayes")
    csv_path = write_csv(csv_rows(result, source=source), folder / name)
    json_path = write_json({"test": "bayes", "embedding": source, "result": result.to_dict()},
                           folder / download_name("psychophysics", source, when=created_date(result), ext="json",
                                                  part="bayes"))
    return csv_path, json_path


def csv_rows(result, *, source: str) -> list[dict[str, Any]]:
    """Every row of the Bayesian CSV (:func:`bayes_exports` writes them): summary, sampler attempts, intervals."""
    rows = bayes_summary_rows(result, source=source)
    rows += [{ROW_TYPE: "interval", **r, "interval": result.level_label, "embedding": source,
              "model": result.model["name"], "seed": result.seed} for r in result.interval_records()]
    return rows
