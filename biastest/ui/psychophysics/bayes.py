"""The Bayesian estimate with control groups (an accordion of step 3, for WEAT/MAC specifications).

Every (social-group word, attribute word) distance enters a Bayesian cosine
model beside neutral control words; the section shows the priors before
anything is sampled, then the highest-posterior-density intervals (of the mass
chosen, 89 % by default) per word and connection, the contrasts with the
controls, the sampler diagnostics of every attempt (R-hat, ESS, divergent
transitions) and the downloads. The sampler runs again with more tuning when a
run is not converged, within the time limit set here; a result that never
converged says so in the status line.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.errors import DataError
from biastest.measures.bayes import BayesItems, BayesOptions, available_models, run
from biastest.measures.bayes import report as rep
from biastest.measures.bayes.score import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TIME_LIMIT, DEFAULT_TUNE, HDI_PROB
from biastest.measures.presets import PAPER_PRESETS, bayes_rows, estimate_line, is_preset, preset_markdown
from biastest.options import DEFAULT_SEED
from biastest.report.text import level_percent
from biastest.spec import BiasSpec
from biastest.ui.common import (
    DETAILS_LABEL,
    USER_MISTAKES,
    escape,
    inline_failures,
    option_value,
    progress_callback,
    session_export_dir,
    user_errors,
    warn_inline,
)
from biastest.ui.psychophysics.state import ACTION_BAYES, Section, need_session

MSG_BAYES_NEEDS_WEAT = (
    "The Bayesian estimate needs two target lists and two attribute lists: choose “WEAT / MAC” in step 1 "
    "(a 2AFC specification has target words and cue pairs, but no stereotype attribute lists)."
)
BAYES_HELP = (
    "Instead of one average, this model uses every distance between a word of your target lists X and Y (e.g. "
    "Math and Arts) and a word of your attribute lists A and B (e.g. Male and Female terms), and compares them "
    "with **neutral control words** (neutral human attributes and neutral words, shipped with biastest). It "
    "reports highest-posterior-density intervals (HPDI) of the mass you choose (the method's 0.89 by default): a "
    "bias is credible only where the whole interval of *associated − control* lies below 0. When a run has not "
    "converged (R-hat above 1.01, too few effective draws, or any divergent transition), the sampler runs again "
    "with more tuning and draws, as long as the next run is expected to end within the time limit. Needs a WEAT / "
    "MAC specification; the figures and the reading name your lists. With three or more groups (Manzini et al.'s "
    "religion and race lists), each group's own stereotypes are also compared, over its words, with the other "
    "groups' stereotypes and with the controls."
)
MSG_BAYES_DONE = (
    "✅ Bayesian estimate done ({model}, {seconds:.1f} s): converged on attempt {attempts} (largest R-hat "
    "{max_rhat}, {divergences} divergent transitions); intervals are {interval}."
)
MSG_BAYES_NOT_CONVERGED = (
    "⚠️ Bayesian estimate NOT converged ({model}, {seconds:.1f} s, {attempts} attempt(s); largest R-hat {max_rhat}, "
    "{divergences} divergent transitions): do not rely on these intervals. {stop}"
)
BAYES_DEFAULTS = {"model": "hierarchical", "draws": DEFAULT_DRAWS, "tune": DEFAULT_TUNE, "chains": DEFAULT_CHAINS,
                  "seed": DEFAULT_SEED, "hdi_prob": HDI_PROB, "time_limit": DEFAULT_TIME_LIMIT}


def bayes_core(session, model, draws, tune, chains, seed, hdi_prob=HDI_PROB, time_limit=DEFAULT_TIME_LIMIT, *,
               progress=None) -> dict[str, Any]:
    """Bayesian estimate with control groups for the session's (WEAT/MAC) spec."""
    session = need_session(session)
    spec = session["spec"]
    if not isinstance(spec, BiasSpec):
        raise DataError(MSG_BAYES_NEEDS_WEAT)
    options = BayesOptions.given({
        "source": session["source"],
        "model": model or BAYES_DEFAULTS["model"],
        "seed": option_value("seed", seed),
        "draws": option_value("draws", draws),
        "tune": option_value("tune", tune),
        "chains": option_value("chains", chains),
        "hdi_prob": option_value("hdi_prob", hdi_prob),
        "time_limit": option_value("time_limit", time_limit),
    })
    result = run(options, BayesItems.from_spec(spec), progress=progress)
    new = dict(session)
    new["bayes"] = result
    return new


def bayes_view(session: dict[str, Any]) -> tuple:
    """Outputs of the Bayes section: status, reading (the verdict first), priors, two plots, diagnostics, table, CSV,
    JSON."""
    result = session["bayes"]
    csv_path, json_path = rep.bayes_exports(result, source=session["source"],
                                                directory=session_export_dir("biastest-bayes-"))
    return (
        bayes_status(result),
        rep.bayes_reading_markdown(result),
        rep.bayes_priors_markdown(result.model),
        rep.bayes_interval_figure(result),
        rep.bayes_contrast_figure(result),
        rep.bayes_diagnostics_markdown(result),
        rep.bayes_contrast_frame(result),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


def bayes_status(result) -> str:
    """The status line: converged (on which attempt) or NOT converged with why sampling stopped; divergences always."""
    d = result.diagnostics
    fields = {"model": escape(result.model["title"]), "seconds": result.seconds, "attempts": d.get("attempts", 1),
              "max_rhat": d.get("max_rhat"), "divergences": d.get("divergences")}
    if d.get("converged"):
        return MSG_BAYES_DONE.format(**fields, interval=escape(f"{level_percent(result.hdi_prob)} HPDI"))
    return MSG_BAYES_NOT_CONVERGED.format(**fields, stop=escape(d.get("stop_message", "")))


@user_errors
@inline_failures(ACTION_BAYES, 10, 1)
def bayes_handler(session, model, draws, tune, chains, seed, hdi_prob=HDI_PROB, time_limit=DEFAULT_TIME_LIMIT,
                  progress=gr.Progress()):
    """Run the Bayesian estimate (progress bar) and render it; a mistake inline under the button, nothing else."""
    try:
        new = bayes_core(session, model, draws, tune, chains, seed, hdi_prob, time_limit,
                         progress=progress_callback(progress))
    except USER_MISTAKES as exc:
        return (gr.skip(), warn_inline(exc), *(gr.skip(),) * 8)
    return (new, *bayes_view(new))


@user_errors
def bayes_estimate(session, model, draws, tune, chains, hdi_prob) -> tuple[str, str]:
    """Before running: the paper preset's note (when the settings are the paper's) and the estimated run time.

    The rows are those of the session's WEAT/MAC specification (target words × attribute and control words), or
    of the measured WEAT 7 before a specification is chosen.
    """
    try:
        values = {"draws": option_value("draws", draws), "tune": option_value("tune", tune),
                  "chains": option_value("chains", chains), "hdi_prob": option_value("hdi_prob", hdi_prob),
                  "model": model}
    except USER_MISTAKES:
        return "", ""
    spec = (session or {}).get("spec")
    rows = bayes_rows(spec) if isinstance(spec, BiasSpec) else None
    note = preset_markdown("bayes") if is_preset("bayes", values) else ""
    return note, estimate_line("bayes", values, rows=rows)


@user_errors
def bayes_preset_handler(session):
    """Fill in the Bayesian paper's settings (its model, 89 % HPDI, Stan's default sampler), note and estimate."""
    v = PAPER_PRESETS["bayes"].values
    return (v["model"], v["draws"], v["tune"], v["chains"], v["hdi_prob"],
            *bayes_estimate(session, v["model"], v["draws"], v["tune"], v["chains"], v["hdi_prob"]))


@user_errors
def priors_handler(model: str) -> str:
    """Show the priors of the chosen model before anything is sampled."""
    info = {m["name"]: m for m in available_models()}.get(model)
    return rep.bayes_priors_markdown(info) if info else ""


def build() -> Section:
    """The section's controls (call inside its accordion); “New bias test” resets each to its value here."""
    sec = Section()
    models = available_models()
    default = {m["name"]: m for m in models}[BAYES_DEFAULTS["model"]]
    gr.Markdown(BAYES_HELP, elem_classes=["bt-hint"])
    sec.add("model", gr.Radio([(m["title"], m["name"]) for m in models], value=default["name"], label="Model",
                              elem_id="bayes-model"), BAYES_DEFAULTS["model"])
    sec.add("priors", gr.Markdown(rep.bayes_priors_markdown(default), elem_id="bayes-priors"),
            rep.bayes_priors_markdown(default))
    with gr.Row():
        for key, label in (("draws", "Draws per chain"), ("tune", "Tuning steps per chain"), ("chains", "Chains"),
                           ("seed", "Seed")):
            sec.add(key, gr.Number(BAYES_DEFAULTS[key], precision=0, label=label, elem_id=f"bayes-{key}"),
                    BAYES_DEFAULTS[key])
    with gr.Row():
        sec.add("hdi_prob", gr.Number(BAYES_DEFAULTS["hdi_prob"], label="Interval mass (HPDI, 0.5–0.999)",
                                      elem_id="bayes-hdi-prob"), BAYES_DEFAULTS["hdi_prob"])
        sec.add("time_limit", gr.Number(BAYES_DEFAULTS["time_limit"], label="Time limit for re-runs (seconds)",
                                        elem_id="bayes-time-limit"), BAYES_DEFAULTS["time_limit"])
    sec.paper = gr.Button(PAPER_PRESETS["bayes"].label, size="sm", elem_id="bayes-paper-preset")
    sec.add("preset_note", gr.Markdown("", elem_id="bayes-preset-note"), "")
    first = bayes_estimate(None, *(BAYES_DEFAULTS[k] for k in ("model", "draws", "tune", "chains", "hdi_prob")))[1]
    sec.add("estimate", gr.Markdown(first, elem_id="bayes-estimate"), first)
    sec.run = gr.Button("Run the Bayesian estimate", variant="primary", elem_id="bayes-run")
    sec.add("status", gr.Markdown("", elem_id="bayes-status"), "")
    sec.add("reading", gr.Markdown("", elem_id="bayes-reading"), "")
    sec.add("plot", gr.Plot(label="Expected distance of each target word to each kind of attribute",
                            elem_id="bayes-plot"), None)
    sec.add("contrast_plot", gr.Plot(label="Contrasts with the controls", elem_id="bayes-contrast-plot"), None)
    sec.add("table", gr.Dataframe(label="Contrasts per target word", interactive=False, elem_id="bayes-table"),
            None)
    with gr.Accordion(DETAILS_LABEL, open=False, elem_id="bayes-details"):
        sec.add("diagnostics", gr.Markdown("", elem_id="bayes-diagnostics"), "")
    with gr.Row():
        sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="bayes-download-csv"),
                gr.update(value=None, visible=False))
        sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="bayes-download-json"),
                gr.update(value=None, visible=False))
    return sec


def wire(sec: Section, session: Any) -> None:
    """The section's handlers: the priors of the chosen model, the paper's settings, the estimate, and the run."""
    sec.model.change(priors_handler, sec.model, sec.priors, queue=False)
    settings = [session, sec.model, sec.draws, sec.tune, sec.chains, sec.hdi_prob]
    for box in (sec.model, sec.draws, sec.tune, sec.chains, sec.hdi_prob):
        box.change(bayes_estimate, settings, [sec.preset_note, sec.estimate], queue=False)
    sec.paper.click(bayes_preset_handler, session, [sec.model, sec.draws, sec.tune, sec.chains, sec.hdi_prob,
                                                    sec.preset_note, sec.estimate], queue=False)
    sec.run.click(
        bayes_handler,
        [session, sec.model, sec.draws, sec.tune, sec.chains, sec.seed, sec.hdi_prob, sec.time_limit],
        [session, sec.status, sec.reading, sec.priors, sec.plot, sec.contrast_plot, sec.diagnostics, sec.table,
         sec.csv, sec.json],
        concurrency_id="mcmc",
        concurrency_limit=1,
    )
