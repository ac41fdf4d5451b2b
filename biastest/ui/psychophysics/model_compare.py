"""“Compare with another chat model” for step 3's chat results in the word-embedding app.

Under the 2AFC answers of a chat model (:mod:`.chat`, the ``twoafc-chat`` measure) and under its psychometric curves
(:mod:`.curves`, ``psychometric-chat``), step 3 can ask **another chat model the same questions** — the same
specification or continuum and contexts, template, samples, temperature and seed as the first run (kept in the
session as its options); only the model, its address and its key change — and compare them:

* 2AFC answers: P(cue 1 | target) target by target
  (:func:`biastest.measures.chat_twoafc.compare.compare_twoafc_chat`: paired bootstrap over targets, the cue pairs and
  orders nested in them; exact sign test; Holm over pairs), shown as the house's comparison (forest plot with
  hover, reading, pairwise table, the three downloads of :func:`biastest.report.compare.comparison_exports`);
* psychometric curves: per context each model's PSE and PSE shift, and each added model against the first:
  ΔPSE and the difference of shifts with intervals from one joint bootstrap
  (:func:`biastest.measures.psychometric_chat.compare.compare_psychometric_chat`); a forest plot of every model's
  PSE per context (hover), the table, a CSV (BOM, every model's contexts and the differences) and a JSON (the
  comparison and every result).

The added results live in the session (``chat_compare`` / ``curves_compare``) keyed by the first run: a new run
clears them. A mistake the user can fix is shown under the button (⚠️, a yellow toast). The key is used for the
added model's requests only. Handlers take and return plain values (tests call them directly).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import BiastestError, DataError, OptionError
from biastest.measures.chat_twoafc import TwoAFCChatItems, run_twoafc_chat
from biastest.measures.chat_twoafc import estimate_cost as chat_cost
from biastest.measures.chat_twoafc import report as chat_report
from biastest.measures.chat_twoafc.compare import compare_twoafc_chat
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.psychometric_chat import PsychometricItems, run_psychometric_chat
from biastest.measures.psychometric_chat import estimate_cost as curves_cost
from biastest.measures.psychometric_chat import report as curves_report
from biastest.measures.psychometric_chat.compare import PsychometricComparison, compare_psychometric_chat
from biastest.models.protocols import ChatLM
from biastest.report import compare as rep
from biastest.report.export import ROW_TYPE, write_csv, write_json
from biastest.report.text import md_escape
from biastest.stats.compare import model_labels
from biastest.ui.chat_choice import (
    CHAT_HERE,
    CHAT_WHERE_CHOICES,
    MSG_CONFIRM_NEEDED,
    chat_where_visibility,
    confirmation_needed,
    model_and_endpoint,
)
from biastest.ui.common import progress_callback, session_export_dir, user_errors
from biastest.ui.psychophysics.state import Section

__all__ = [
    "CHAT",
    "CURVES",
    "MAX_MODELS",
    "MSG_ADDED",
    "MSG_ALREADY",
    "MSG_CLEARED",
    "MSG_RUN_FIRST",
    "MSG_TOO_MANY",
    "add_core",
    "build",
    "clear_core",
    "curves_compare_view",
    "chat_compare_view",
    "make_add_handler",
    "wire",
]

CHAT, CURVES = "chat", "curves"
#: Most models in one comparison (the first included).
MAX_MODELS = 4

MSG_RUN_FIRST = {CHAT: "Ask a chat model in step 2 first: the comparison asks another model the same questions.",
                 CURVES: "Fit a chat model's curves in step 2 first: the comparison asks another model the same "
                         "questions."}
MSG_ALREADY = "{label} is already in the comparison."
MSG_TOO_MANY = "A comparison holds at most {n} models. Remove the added ones to start again."
MSG_ADDED = "✅ Asked {model} the same {requests:,} questions: {n} models compared."
MSG_CLEARED = "The added models were removed; the first model's results are unchanged."
MSG_NOTHING_ADDED = "No model has been added yet."
MSG_PARTIAL = "{model}'s run stopped early ({why}): it is not added. Try again."
HELP = {
    CHAT: "Ask **another chat model the same questions** (the same targets, cue pairs, template, samples, "
          "temperature and seed) and compare P(cue 1 | target) target by target: the difference with a paired "
          "interval over the targets (the cue pairs and orders are nested in them) and a sign test.",
    CURVES: "Ask **another chat model the same questions** (the same continuum, contexts, cues, samples, "
            "temperature and seed) and compare the curves per context: each model's PSE, and the difference of "
            "the PSE shifts from the reference context, with intervals from one bootstrap of the stimuli.",
}
SESSION_KEY = {CHAT: "chat_compare", CURVES: "curves_compare"}
PAIR_COLUMNS = ["model_a", "model_b", "context", "pse_a", "pse_b", "pse_diff", "pse_diff_low", "pse_diff_high",
                "shift_a", "shift_b", "shift_diff", "shift_diff_low", "shift_diff_high", "message"]


# ------------------------------------------------------------------ the first run and the added ones
def _first(session: Any, what: str) -> tuple[Any, Any]:
    """The first run's result and options, or :data:`MSG_RUN_FIRST`."""
    if not isinstance(session, dict) or session.get(what) is None or session.get(f"{what}_options") is None:
        raise DataError(MSG_RUN_FIRST[what])
    return session[what], session[f"{what}_options"]


def _key(result: Any) -> list[Any]:
    return [result.model_id, result.seed, dict(result.provenance).get("created_at")]


def _added(session: dict[str, Any], what: str) -> list[Any]:
    saved = session.get(SESSION_KEY[what]) or {}
    return list(saved.get("results") or []) if saved.get("base") == _key(session[what]) else []


def _name(result: Any) -> str:
    return result.served_model or result.model_id


def add_core(session: Any, what: str, where: Any, model_id: Any, url: Any, api_key: Any, confirmed: Any, *,
             progress=None, model: ChatLM | None = None, cache_dir=None) -> tuple[dict[str, Any], str, int]:
    """Ask another chat model the first run's questions; returns (session, its name, the questions asked).

    Raises
    ------
    BiastestError
        No first run, the model's own checks, the same model twice, too many models, an unconfirmed cost.
    """
    base, options = _first(session, what)
    added = _added(session, what)
    new_id, endpoint = model_and_endpoint(where, model_id, url)
    if (new_id, endpoint) in [(options.model_id, options.endpoint), *((a.model_id, a.endpoint) for a in added)]:
        raise DataError(MSG_ALREADY.format(label=new_id))
    if 1 + len(added) >= MAX_MODELS:
        raise DataError(MSG_TOO_MANY.format(n=MAX_MODELS))
    other = options.model_copy(update={"model_id": new_id, "endpoint": endpoint})
    if what == CHAT:
        cost = chat_cost(other, session["spec"])
    else:
        cost = curves_cost(other, session["curves_continuum"])
    if confirmation_needed(cost, confirmed):
        raise OptionError(MSG_CONFIRM_NEEDED.format(requests=cost.requests, limit=CONFIRM_ABOVE_REQUESTS))
    key = (str(api_key or "").strip() or None) if endpoint else None
    if what == CHAT:
        result = run_twoafc_chat(other, TwoAFCChatItems(session["spec"]), progress=progress, model=model,
                                 api_key=key, cache_dir=cache_dir)
    else:
        result = run_psychometric_chat(other, PsychometricItems(session["curves_continuum"], session["spec"]),
                                       progress=progress, model=model, api_key=key, cache_dir=cache_dir)
    if result.stop_message:
        raise DataError(MSG_PARTIAL.format(model=_name(result), why=result.stop_message))
    new = {**session, SESSION_KEY[what]: {"base": _key(base), "results": [*added, result]}}
    return new, _name(result), int(result.n_requests)


def clear_core(session: Any, what: str) -> tuple[Any, str]:
    """The session without the added models (and the message), or :data:`MSG_NOTHING_ADDED`."""
    if not isinstance(session, dict) or not (session.get(SESSION_KEY[what]) or {}).get("results"):
        return None, MSG_NOTHING_ADDED
    return {**session, SESSION_KEY[what]: None}, MSG_CLEARED


# ------------------------------------------------------------------ the views
def empty_view() -> tuple:
    """Summary, figure, reading, table and the three downloads, with nothing compared."""
    return ("", None, "", None, *(gr.update(value=None, visible=False),) * 3)


def _results(session: Any, what: str) -> tuple[list[Any], list[str]] | None:
    try:
        base, _ = _first(session, what)
    except DataError:
        return None
    added = _added(session, what)
    if not added:
        return None
    results = [base, *added]
    return results, model_labels([_name(r) for r in results])


def chat_compare_view(session: Any) -> tuple:
    """The comparison of the session's chat models' 2AFC answers (the house's comparison outputs)."""
    found = _results(session, CHAT)
    if found is None:
        return empty_view()
    results, labels = found
    cmp = compare_twoafc_chat(results, seed=results[0].seed, labels=labels)
    rows = [{"model": lab, **row} for r, lab in zip(results, labels, strict=True) for row in chat_report.target_rows(r)]
    docs = [{"model": lab, **r.to_dict()} for r, lab in zip(results, labels, strict=True)]
    items_csv, json_path, cmp_csv = rep.comparison_exports(
        cmp, item_rows=rows, results=docs, directory=session_export_dir("biastest-twoafc-chat-compare-"),
        app="psychophysics")
    return (rep.summary_markdown(cmp), rep.forest_figure(cmp), rep.reading_markdown(cmp), rep.pairwise_frame(cmp),
            gr.update(value=str(items_csv), visible=True), gr.update(value=str(json_path), visible=True),
            gr.update(value=str(cmp_csv), visible=True))


def _ci(ci: Sequence[float] | None, i: int) -> float | None:
    return None if ci is None else float(ci[i])


def pair_frame(cmp: PsychometricComparison) -> pd.DataFrame:
    """One row per added model and context: ΔPSE and Δshift (B − A) with their intervals, or why there is none."""
    rows = [{**{k: r.get(k) for k in PAIR_COLUMNS},
             "pse_diff_low": _ci(r["pse_diff_ci"], 0), "pse_diff_high": _ci(r["pse_diff_ci"], 1),
             "shift_diff_low": _ci(r["shift_diff_ci"], 0), "shift_diff_high": _ci(r["shift_diff_ci"], 1)}
            for r in cmp.rows]
    return pd.DataFrame(rows, columns=PAIR_COLUMNS).round(3)


def curves_reading(cmp: PsychometricComparison) -> str:
    """Plain sentences: per added model and context, the difference of shifts (or of PSEs) and its interval."""
    pct = f"{100 * cmp.confidence:.0f}%"
    lines = [f"Reference context: *{md_escape(cmp.reference)}*. Differences are the added model minus "
             f"**{md_escape(cmp.labels[0])}**, with {pct} intervals from one bootstrap of the stimuli."]
    for r in cmp.rows:
        who, ctx = md_escape(r["model_b"]), md_escape(r["context"])
        if r["reference"]:
            if r["pse_diff"] is not None:
                lines.append(f"- *{ctx}* (reference): PSE of {who} {r['pse_b']:.3f} vs {r['pse_a']:.3f}, difference "
                             f"{r['pse_diff']:+.3f}" + _interval_words(r["pse_diff_ci"]))
            continue
        if r["shift_diff"] is None:
            lines.append(f"- *{ctx}*: no difference of shifts for {who}: {md_escape(r['message'] or '')}")
            continue
        lines.append(f"- *{ctx}*: the context moves the PSE of {who} by {r['shift_b']:+.3f}, of "
                     f"{md_escape(r['model_a'])} by {r['shift_a']:+.3f}: difference of shifts {r['shift_diff']:+.3f}"
                     + _interval_words(r["shift_diff_ci"]))
    return "\n".join(lines)


def _interval_words(ci: Sequence[float] | None) -> str:
    if ci is None:
        return " (no interval: too few bootstrap fits)."
    verdict = "excludes 0" if ci[0] > 0 or ci[1] < 0 else "includes 0"
    return f" (interval {ci[0]:+.3f} to {ci[1]:+.3f}, {verdict})."


def curves_forest(cmp: PsychometricComparison):
    """Every model's PSE per context with its interval (hover: model, context, fit status, shift)."""
    rows = []
    for r in cmp.per_model:
        hover = {"model": r["model"], "context": r["context"], "fit": r["fit_status"]}
        if r["shift"] is not None:
            hover["shift from the reference"] = f"{r['shift']:+.3f}"
        rows.append({"label": f"{r['model']} · {r['context']}", "estimate": r["pse"], "ci_low": _ci(r["pse_ci"], 0),
                     "ci_high": _ci(r["pse_ci"], 1), "hover": hover})
    return rep.forest_rows_figure(rows, title=f"PSE per context, {len(cmp.labels)} chat models", value_label="PSE (α)",
                              reference=None, interval_label=f"{100 * cmp.confidence:.0f}% interval", digits=3)


def curves_compare_view(session: Any) -> tuple:
    """The comparison of the session's chat models' curves: reading, forest, table and the downloads."""
    found = _results(session, CURVES)
    if found is None:
        return empty_view()
    results, labels = found
    cmp = compare_psychometric_chat(results, seed=results[0].seed, labels=labels)
    summary = (f"**{len(labels)} chat models on the same {len(results[0].continuum['stimuli']):,} stimuli and "
               f"{len(cmp.contexts)} contexts:** " + ", ".join(md_escape(x) for x in labels))
    left = {k: v for k, v in cmp.left_out.items() if v}
    if left:
        summary += " — contexts not asked of every model, left out: " + "; ".join(
            f"{md_escape(k)}: {md_escape(', '.join(v))}" for k, v in left.items())
    directory = session_export_dir("biastest-psychometric-chat-compare-")
    per_model = [{ROW_TYPE: "model", **{k: v for k, v in r.items() if not k.endswith("_ci")},
                  "pse_low": _ci(r["pse_ci"], 0), "pse_high": _ci(r["pse_ci"], 1),
                  "shift_low": _ci(r["shift_ci"], 0), "shift_high": _ci(r["shift_ci"], 1)} for r in cmp.per_model]
    pairs = [{ROW_TYPE: "pair", **r} for r in pair_frame(cmp).to_dict("records")]
    contexts = [{ROW_TYPE: "context", "model": lab, **rec} for r, lab in zip(results, labels, strict=True)
                for rec in curves_report.summary_records(r)]
    csv_path = write_csv([*per_model, *pairs, *contexts], directory / "biastest-psychometric-chat-compare.csv")
    json_path = write_json({"comparison": cmp.to_dict(),
                            "results": [{"model": lab, **r.to_dict()} for r, lab in zip(results, labels, strict=True)]},
                           directory / "biastest-psychometric-chat-compare.json")
    return (summary, curves_forest(cmp), curves_reading(cmp), pair_frame(cmp),
            gr.update(value=str(csv_path), visible=True), gr.update(value=str(json_path), visible=True),
            gr.update(value=None, visible=False))


VIEWS = {CHAT: chat_compare_view, CURVES: curves_compare_view}


# ------------------------------------------------------------------ handlers
def make_add_handler(what: str):
    """The "Ask this model too" handler: (session, where, model, url, key, confirm) → session, message, outputs."""

    @user_errors
    def add_handler(session, where, model_id, url, api_key, confirmed, progress=gr.Progress(), *,
                    model: ChatLM | None = None, cache_dir=None):
        """Ask the added model, then show the comparison (a mistake: ⚠️ under the button, the rest unchanged)."""
        try:
            new, name, requests = add_core(session, what, where, model_id, url, api_key, confirmed,
                                           progress=progress_callback(progress), model=model, cache_dir=cache_dir)
        except BiastestError as exc:
            gr.Warning(exc.message.split("\n", 1)[0])
            return (gr.skip(), "⚠️ " + md_escape(exc.message), *(gr.skip(),) * 7)
        n = 1 + len(_added(new, what))
        return (new, MSG_ADDED.format(model=md_escape(name), requests=requests, n=n), *VIEWS[what](new))

    return add_handler


def make_clear_handler(what: str):
    """"Remove the added models": the session without them, a message, an empty section."""

    @user_errors
    def clear_handler(session):
        new, message = clear_core(session, what)
        if new is None:
            return (gr.skip(), message, *(gr.skip(),) * 7)
        return (new, message, *empty_view())

    return clear_handler


# ------------------------------------------------------------------ controls and wiring
def build(sec: Section, what: str) -> None:
    """Lay the section out inside ``sec`` (step 3's chat or curves results) as ``sec.cmp_*``; "New bias test"
    puts every part back."""
    p = f"{what}-compare"
    with gr.Accordion("Compare with another chat model", open=False, elem_id=f"{p}-section"):
        gr.Markdown(HELP[what], elem_classes=["bt-hint"])
        sec.add("cmp_where", gr.Radio(CHAT_WHERE_CHOICES, value=CHAT_HERE, label="Where the other chat model runs",
                                      elem_id=f"{p}-where"), CHAT_HERE)
        sec.add("cmp_model", gr.Textbox(label="Other chat model (Hub id or folder; at an endpoint, the name it serves)",
                                        elem_id=f"{p}-model"), "")
        with sec.add("cmp_endpoint_box", gr.Column(visible=False), gr.update(visible=False)):
            sec.add("cmp_url", gr.Textbox(label="Endpoint address (API root)", elem_id=f"{p}-url"), "")
            sec.add("cmp_key", gr.Textbox(label="Key (this run only; never stored)", type="password",
                                          elem_id=f"{p}-key"), "")
        sec.add("cmp_confirm", gr.Checkbox(False, label=f"I accept the cost (needed for a hosted endpoint asked more "
                                                        f"than {CONFIRM_ABOVE_REQUESTS:,} questions)",
                                           elem_id=f"{p}-confirm"), False)
        with gr.Row():
            sec.cmp_add = gr.Button("Ask this model the same questions", variant="primary", elem_id=f"{p}-add")
            sec.cmp_clear = gr.Button("Remove the added models", elem_id=f"{p}-clear")
        sec.add("cmp_message", gr.Markdown("", elem_id=f"{p}-message"), "")
        outs = [gr.Markdown("", elem_id=f"{p}-summary"),
                gr.Plot(label="Every model (hover for details)", elem_id=f"{p}-forest"),
                gr.Markdown("", elem_id=f"{p}-reading"),
                gr.Dataframe(label="Every model against the first", interactive=False, wrap=True,
                             elem_id=f"{p}-table")]
        with gr.Row():
            outs += [gr.DownloadButton("Download every model's rows (CSV)", visible=False,
                                       elem_id=f"{p}-download-csv"),
                     gr.DownloadButton("Download every result and the comparison (JSON)", visible=False,
                                       elem_id=f"{p}-download-json"),
                     gr.DownloadButton("Download the comparison (CSV)", visible=False,
                                       elem_id=f"{p}-download-comparison")]
    sec.cmp_outputs = outs
    for component, value in zip(outs, empty_view(), strict=True):
        sec.add(f"cmp_out_{outs.index(component)}", component, value)


def wire(sec: Section, session: Any, what: str, *, clear_on: Sequence[Any] = ()) -> None:
    """The section's handlers; a press of any of ``clear_on`` (a new first run) empties it."""
    sec.cmp_where.change(chat_where_visibility, sec.cmp_where, sec.cmp_endpoint_box, queue=False,
                         show_progress="hidden")
    sec.cmp_add.click(make_add_handler(what),
                      [session, sec.cmp_where, sec.cmp_model, sec.cmp_url, sec.cmp_key, sec.cmp_confirm],
                      [session, sec.cmp_message, *sec.cmp_outputs], concurrency_id="chat-model", concurrency_limit=1,
                      show_progress_on=[sec.cmp_message])
    sec.cmp_clear.click(make_clear_handler(what), session, [session, sec.cmp_message, *sec.cmp_outputs],
                        queue=False)
    for btn in clear_on:
        btn.click(lambda: ("", *empty_view()), None, [sec.cmp_message, *sec.cmp_outputs], queue=False,
                  show_progress="hidden")
