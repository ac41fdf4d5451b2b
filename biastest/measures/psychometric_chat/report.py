"""What a psychometric test of a chat model shows: the plain readings, the curves figure, the tables, the files.

* :func:`reading` — one paragraph per context: where the model's answers cross from cue 1 to cue 2 (the PSE, with
  its interval, in α and in words), how sharply (the JND), how far the context moved the PSE from the reference
  context, and the refusal, unparseable and position figures; a fit the data cannot identify says why (its
  status message), with no number.
* :func:`curves_figure` — the curves of all contexts in one plotly figure (the paper's Fig. 1B/3 for a chat
  model): per stimulus the observed share of cue-2 answers (hover: the stimulus, its α, k of n), the fitted
  ψ_obs(α) = q/2 + (1 − q)·Ψ(α), and the PSE with its interval as a mark at 50 %.
* :func:`summary_records` (one row per context), :func:`csv_rows` (one row per question: the exact request and the
  raw reply), :func:`export_files`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from biastest.measures.psychometric_chat.result import PsychometricChatResult
from biastest.measures.verdict import Claim, Standing, count_verdict, run_standing, verdict
from biastest.report.export import private_dir, summary_first, write_csv, write_json
from biastest.report.figures import FONT, hover_safe
from biastest.stats.psychometric.guess_lapse import guess_lapse_function

__all__ = ["COLORS", "csv_rows", "curves_figure", "export_files", "reading", "readings", "summary_records"]

#: One colour per context (cycled).
COLORS = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#be185d", "#4b5563")
NAMES_NOTE = " (on the built-in name continuum: a name borne by women in {pct:.0f} % of births)"


def _ci(ci: Sequence[float] | None, digits: int = 2) -> str:
    return f"{ci[0]:.{digits}f} to {ci[1]:.{digits}f}" if ci else "no interval"


def _pct(rate: Any) -> str:
    est = rate["estimate"] if isinstance(rate, Mapping) else getattr(rate, "estimate", None)
    return "—" if est is None else f"{est:.1f} %"


def reading(fields: Mapping[str, Any], reference_context: str, *, cues: tuple[str, str], names: bool) -> str:
    """The plain reading of one context's figures (the fields of a :class:`~.result.ContextSummary`)."""
    fit, shift, context = fields["fit"], fields["shift"], fields["context"]
    level = round(100 * float(fit.get("ci_level") or 0.95))
    rates = (f" Refused {_pct(fields['refusal_rate'])}, unparseable {_pct(fields['unparseable_rate'])}, failed "
             f"{_pct(fields['failed_rate'])} of the questions asked; of the answers that named a cue, "
             f"{_pct(fields['position_bias'])} named the cue shown first (50 % is no position habit), and "
             f"{_pct(fields['order_consistency'])} of stimuli were answered alike in both orders.")
    if fit.get("status") != "ok":
        bracket = fit.get("pse_bracket")
        where = f" (the crossing lies between α = {bracket[0]:g} and {bracket[1]:g})" if bracket else ""
        return f"In the context '{context}' there is no full psychometric fit{where}: {fit.get('message')}" + rates
    pse, jnd = fit["pse"], fit["jnd"]
    note = NAMES_NOTE.format(pct=100 * pse) if names and 0 <= pse <= 1 else ""
    q = fit.get("guess_lapse")
    q_text = (f" About {100 * q:.0f} % of answers went by position rather than content (q, "
              f"{'fixed at the measured position share' if fit.get('guess_lapse_fixed') else 'fitted'}).")
    text = (f"In the context '{context}' the model needs a stimulus at α = {pse:.2f} ({level} % interval "
            f"{_ci(fit.get('pse_ci'))}){note} before it answers '{cues[1]}' rather than '{cues[0]}' half the time "
            f"(the PSE). Its answers turn from '{cues[0]}' to '{cues[1]}' over about ±{jnd:.2f} in α around it "
            f"(JND {jnd:.2f}, {_ci(fit.get('jnd_ci'))}).{q_text if q is not None else ''}")
    if shift is not None:
        if shift.get("shift") is None:
            text += f" No PSE shift from the reference context '{reference_context}': {shift.get('message')}"
        else:
            s = shift["shift"]
            text += (f" That is {s:+.2f} in α ({_ci(shift.get('shift_ci'))}) from the reference context "
                     f"'{reference_context}'" + (f" ({shift['message']})" if shift.get("message") else "") + ".")
    return text + rates


def verdict_sentence(result: PsychometricChatResult) -> str:
    """The readings' first sentence (:func:`biastest.measures.verdict.count_verdict`): how many contexts shift the
    PSE from the reference context beyond their interval; none for a run that stopped early."""
    if result.stop_message or run_standing(result.provenance) is not Standing.OK:
        return verdict(Claim(what="", estimate=None, low=None, high=None, null=0, above="", below=""),
                       standing=Standing.PARTIAL)
    ref = result.contexts[result.reference] if 0 <= result.reference < len(result.contexts) else "the reference"
    shifts = [s.shift for s in result.summaries if not s.reference and s.shift is not None]
    estimates = [(x["shift"], *(x.get("shift_ci") or (None, None))) for x in shifts if x.get("shift") is not None]
    return count_verdict(estimates, null=0, units="contexts", above=f"to a higher PSE than '{ref}'",
                         below="to a lower one", level=result.confidence,
                         no_interval="no context's PSE shift from the reference has an interval")


def readings(result: PsychometricChatResult) -> list[str]:
    """The verdict sentence, then the headline paragraph of every context."""
    return [verdict_sentence(result), *(s.reading for s in result.summaries)]


def curves_figure(result: PsychometricChatResult) -> go.Figure:
    """All contexts' curves in one figure (see the module docstring)."""
    fig = go.Figure()
    cue1, cue2 = result.cues
    grid = np.linspace(0.0, 1.0, 201)
    for s in result.summaries:
        color, name = COLORS[s.index % len(COLORS)], hover_safe(s.context, width=40)
        lv = [v for v in s.levels if v.n > 0]
        fig.add_trace(go.Scatter(
            x=[v.alpha for v in lv], y=[v.k / v.n for v in lv], mode="markers", name=f"{name}: answers",
            legendgroup=str(s.index), marker={"color": color, "size": 6, "opacity": 0.7},
            customdata=[[hover_safe(v.stimulus), v.k, v.n] for v in lv],
            hovertemplate=(f"{name}<br>%{{customdata[0]}} (α = %{{x:.3f}})<br>'{hover_safe(cue2)}' "
                           f"%{{customdata[1]}} of %{{customdata[2]}} (%{{y:.2f}})<extra></extra>")))
        fit = s.fit
        if fit.get("status") != "ok":
            continue
        y = guess_lapse_function(grid, pse=fit["pse"], scale=fit["scale"], guess_lapse=fit["guess_lapse"],
                                 sigmoid=fit["sigmoid"])
        fig.add_trace(go.Scatter(
            x=grid, y=y, mode="lines", name=f"{name}: fit", legendgroup=str(s.index), line={"color": color},
            hovertemplate=f"{name}<br>fit: α = %{{x:.2f}}, P = %{{y:.3f}}<extra></extra>"))
        ci = fit.get("pse_ci")
        err = {"type": "data", "symmetric": False, "array": [ci[1] - fit["pse"]],
               "arrayminus": [fit["pse"] - ci[0]], "color": color} if ci else None
        fig.add_trace(go.Scatter(
            x=[fit["pse"]], y=[0.5], mode="markers", name=f"{name}: PSE", legendgroup=str(s.index),
            marker={"color": color, "size": 12, "symbol": "diamond"}, error_x=err,
            hovertemplate=(f"{name}<br>PSE %{{x:.3f}} ({_ci(ci, 3)})<br>JND {fit['jnd']:.3f}"
                           f"<extra></extra>")))
    fig.add_hline(y=0.5, line_dash="dot", line_color="#94a3b8")
    fig.update_layout(
        title=f"Psychometric curves of {hover_safe(result.model_id)} by context",
        xaxis_title=f"α (0 = {hover_safe(cue1)}, 1 = {hover_safe(cue2)})",
        yaxis_title=f"share of answers '{hover_safe(cue2)}'", yaxis={"range": [-0.03, 1.03]},
        xaxis={"range": [-0.02, 1.02]}, font_family=FONT, height=460,
        margin={"l": 10, "r": 10, "t": 60, "b": 50}, legend={"font": {"size": 10}})
    return fig


def _context_row(s: Any, pair: str) -> dict[str, Any]:
    fit, shift = s.fit, s.shift or {}
    pse_ci, jnd_ci, sh_ci = fit.get("pse_ci"), fit.get("jnd_ci"), shift.get("shift_ci")
    return {
        "cue_pair": pair, "context": s.context, "reference": s.reference, "fit_status": fit.get("status"),
        "fit_message": fit.get("message"), "pse": fit.get("pse"),
        "pse_low": pse_ci[0] if pse_ci else None, "pse_high": pse_ci[1] if pse_ci else None,
        "jnd": fit.get("jnd"), "jnd_low": jnd_ci[0] if jnd_ci else None, "jnd_high": jnd_ci[1] if jnd_ci else None,
        "guess_lapse": fit.get("guess_lapse"), "pse_shift": shift.get("shift"),
        "shift_low": sh_ci[0] if sh_ci else None, "shift_high": sh_ci[1] if sh_ci else None,
        "refusal_pct": s.refusal_rate.estimate, "unparseable_pct": s.unparseable_rate.estimate,
        "failed_pct": s.failed_rate.estimate, "first_position_pct": s.position_bias.estimate,
        "order_consistency_pct": s.order_consistency.estimate, **s.counts,
    }


def summary_records(result: PsychometricChatResult) -> list[dict[str, Any]]:
    """One row per context: the fit, the shift, the rates (``cue_pair``: ``pooled`` when the run had several pairs,
    then one row per pair and context)."""
    pooled = "pooled" if result.per_pair else "/".join(result.cues)
    rows = [_context_row(s, pooled) for s in result.summaries]
    rows += [_context_row(s, "/".join(p.cues)) for p in result.per_pair for s in p.summaries]
    common = {"model": result.model_id, "template": result.template["name"], "seed": result.seed,
              "confidence": result.confidence, "bootstrap": result.bootstrap, "n_bootstrap": result.n_bootstrap}
    return [{**r, **common} for r in rows]


def csv_rows(result: PsychometricChatResult) -> list[dict[str, Any]]:
    """One row per question: context, stimulus, α, order, sample, the exact messages, the raw answer, the outcome."""
    rows = []
    for a in result.asks:
        messages = {m["role"]: m["content"] for m in a.request["messages"]}
        reply = a.reply or {}
        rows.append({
            "context": result.contexts[a.context_index],
            "cue_pair": "/".join((result.cue_pairs or (result.cues,))[a.pair_index]), "stimulus": a.stimulus,
            "alpha": a.alpha, "group": a.group,
            "order": a.order, "sample": a.sample, "seed": a.request.get("seed"), "system": messages.get("system", ""),
            "question": messages.get("user", ""), "answer": reply.get("text"), "reply_status": reply.get("status"),
            "error": reply.get("error"), "outcome": a.outcome, "position": a.position, "rule": a.rule,
        })
    return rows


def export_files(result: PsychometricChatResult, *, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the CSV (one row per context, then one per question) and the full JSON; their paths."""
    directory = directory or private_dir()
    safe_model = "".join(c if c.isalnum() else "-" for c in result.model_id)[-40:] or "model"
    rows = summary_first(summary_records(result), csv_rows(result), item_type="answer")
    csv_path = write_csv(rows, directory / f"biastest-psychometric-chat-{safe_model}-answers.csv")
    json_path = write_json(result.to_dict(), directory / f"biastest-psychometric-chat-{safe_model}-result.json")
    return csv_path, json_path
