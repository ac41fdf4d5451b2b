"""The posterior of embeddings given a sentiment classifier (an accordion of step 3).

A small network learns positive vs negative words from the VADER lexicon;
NUTS samples word vectors the network finds positive or negative (Liang &
Acuna 2020, §3.2); two word groups of the user's are compared by their
distance to each posterior, with a permutation test.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.measures.posterior import PosteriorItems, PosteriorOptions, load_default_groups, run
from biastest.measures.posterior import report as rep
from biastest.measures.presets import PAPER_PRESETS, embedding_dim, estimate_line, is_preset, preset_markdown
from biastest.options import DEFAULT_SEED
from biastest.spec import parse_terms
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
from biastest.ui.psychophysics.state import ACTION_POSTERIOR, Section, need_session

MSG_POSTERIOR_DONE = (
    "✅ Posteriors sampled ({seconds:.1f} s of sampling): converged, {divergences} divergent transitions, mean "
    "acceptance probability {accept}."
)
MSG_POSTERIOR_NOT_CONVERGED = (
    "⚠️ Posteriors sampled ({seconds:.1f} s of sampling) but NOT converged — do not rely on the tables: {problems}. "
    "Run more draws and tuning steps (mean acceptance probability {accept})."
)
POSTERIOR_DEFAULTS = {"draws": 1000, "tune": 500, "chains": 2, "seed": DEFAULT_SEED}


def _default_groups() -> tuple[str, str, str, str]:
    (na, wa), (nb, wb) = list(load_default_groups().items())[:2]
    return na, ", ".join(wa), nb, ", ".join(wb)


def posterior_core(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed, *,
                   progress=None) -> dict[str, Any]:
    """Sample the embedding posteriors given the sentiment classifier, for the session's embedding."""
    session = need_session(session)
    groups = {
        (name_a or "").strip() or "group 1": list(parse_terms(words_a)),
        (name_b or "").strip() or "group 2": list(parse_terms(words_b)),
    }
    options = PosteriorOptions.given({
        "source": session["source"],
        "seed": option_value("seed", seed),
        "draws": option_value("draws", draws),
        "tune": option_value("tune", tune),
        "chains": option_value("chains", chains),
    })
    result = run(options, PosteriorItems(groups=groups), progress=progress)
    new = dict(session)
    new["posterior"] = result
    return new


def _sampler_values(draws, tune, chains) -> dict[str, int] | None:
    try:
        return {"draws": option_value("draws", draws), "tune": option_value("tune", tune),
                "chains": option_value("chains", chains)}
    except USER_MISTAKES:
        return None


@user_errors
def posterior_estimate(session, draws, tune, chains) -> tuple[str, str]:
    """Before running: the paper preset's note (when the settings are the paper's) and the estimated run time."""
    values = _sampler_values(draws, tune, chains)
    if values is None:
        return "", ""
    source = (session or {}).get("source") or "glove-6b-50d"
    note = preset_markdown("posterior") if is_preset("posterior", values) else ""
    return note, estimate_line("posterior", values, dim=embedding_dim(source))


@user_errors
def posterior_preset_handler(session):
    """Fill in the paper's sampler settings (10,000 warm-up + 10,000 draws), with the note and the estimate."""
    v = PAPER_PRESETS["posterior"].values
    return (v["draws"], v["tune"], v["chains"], *posterior_estimate(session, v["draws"], v["tune"], v["chains"]))


def posterior_status(result) -> str:
    """The status line: converged or NOT converged (why), with the divergent transitions and the acceptance rate."""
    d = result.diagnostics
    fields = {"seconds": float(d.get("seconds", 0.0)), "accept": d.get("mean_accept_prob")}
    if d.get("converged"):
        return MSG_POSTERIOR_DONE.format(**fields, divergences=d.get("divergences"))
    return MSG_POSTERIOR_NOT_CONVERGED.format(**fields, problems=escape("; ".join(d.get("problems", ()))))


def posterior_view(session: dict[str, Any]) -> tuple:
    """Outputs of the posterior section: status, reading (the verdict first), details, ACF, PCA, word table, group
    table, CSV, JSON."""
    result = session["posterior"]
    csv_path, json_path = rep.posterior_exports(result, source=session["source"],
                                                    directory=session_export_dir("biastest-posterior-"))
    return (
        posterior_status(result),
        rep.posterior_reading_markdown(result),
        rep.posterior_markdown(result),
        rep.posterior_acf_figure(result),
        rep.posterior_pca_figure(result),
        rep.posterior_words_frame(result),
        rep.posterior_group_frame(result),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


@user_errors
@inline_failures(ACTION_POSTERIOR, 10, 1)
def posterior_handler(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed, progress=gr.Progress()):
    """Train the classifier, sample both posteriors (progress bar) and render them; a mistake inline, nothing else."""
    try:
        new = posterior_core(session, name_a, words_a, name_b, words_b, draws, tune, chains, seed,
                             progress=progress_callback(progress))
    except USER_MISTAKES as exc:
        return (gr.skip(), warn_inline(exc), *(gr.skip(),) * 8)
    return (new, *posterior_view(new))


def build() -> Section:
    """The section's controls (call inside its accordion); “New bias test” resets each to its value here."""
    sec = Section()
    na, wa, nb, wb = _default_groups()
    gr.Markdown(
        "A small neural network learns, from the VADER sentiment lexicon, to tell positive from negative words by "
        "their vectors. The sampler (NUTS) then draws word vectors that the network finds positive (p(s | +)) or "
        "negative (p(s | −)), from a wide prior N(0, 10²·I) (Liang & Acuna 2020, §3.2; the prior is our choice, the "
        "paper does not state one). Are the words of one "
        "group (by default female vs male first names) closer to a posterior than the other's? A permutation test "
        "answers.",
        elem_classes=["bt-hint"],
    )
    with gr.Row():
        sec.add("name_a", gr.Textbox(na, label="Name of word group 1", elem_id="posterior-name-a"), na)
        sec.add("words_a", gr.Textbox(wa, label="Words of group 1", elem_id="posterior-words-a"), wa)
    with gr.Row():
        sec.add("name_b", gr.Textbox(nb, label="Name of word group 2", elem_id="posterior-name-b"), nb)
        sec.add("words_b", gr.Textbox(wb, label="Words of group 2", elem_id="posterior-words-b"), wb)
    with gr.Row():
        for key, label in (("draws", "Draws per chain"), ("tune", "Tuning steps per chain"), ("chains", "Chains"),
                           ("seed", "Seed")):
            sec.add(key, gr.Number(POSTERIOR_DEFAULTS[key], precision=0, label=label, elem_id=f"posterior-{key}"),
                    POSTERIOR_DEFAULTS[key])
    sec.paper = gr.Button(PAPER_PRESETS["posterior"].label, size="sm", elem_id="posterior-paper-preset")
    sec.add("preset_note", gr.Markdown("", elem_id="posterior-preset-note"), "")
    first = posterior_estimate(None, POSTERIOR_DEFAULTS["draws"], POSTERIOR_DEFAULTS["tune"],
                               POSTERIOR_DEFAULTS["chains"])[1]
    sec.add("estimate", gr.Markdown(first, elem_id="posterior-estimate"), first)
    sec.run = gr.Button("Sample the posteriors", variant="primary", elem_id="posterior-run")
    sec.add("status", gr.Markdown("", elem_id="posterior-status"), "")
    sec.add("reading", gr.Markdown("", elem_id="posterior-reading"), "")
    with gr.Accordion(DETAILS_LABEL, open=False, elem_id="posterior-details"):
        sec.add("details", gr.Markdown("", elem_id="posterior-diagnostics"), "")
    with gr.Row():
        sec.add("acf", gr.Plot(label="Autocorrelation (paper Fig. 5)", elem_id="posterior-acf"), None)
        sec.add("pca", gr.Plot(label="PCA of the samples (paper Fig. 6)", elem_id="posterior-pca"), None)
    sec.add("words", gr.Dataframe(label="Words nearest to and farthest from each posterior mean (paper Table 1)",
                                  interactive=False, elem_id="posterior-words"), None)
    sec.add("groups", gr.Dataframe(label="Distance of each word group to each posterior, with tests",
                                   interactive=False, elem_id="posterior-groups"), None)
    with gr.Row():
        sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="posterior-download-csv"),
                gr.update(value=None, visible=False))
        sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="posterior-download-json"),
                gr.update(value=None, visible=False))
    return sec


def wire(sec: Section, session: Any) -> None:
    """The section's handlers: the paper's settings, the run-time estimate, and train, sample and render."""
    settings = [session, sec.draws, sec.tune, sec.chains]
    for box in (sec.draws, sec.tune, sec.chains):
        box.change(posterior_estimate, settings, [sec.preset_note, sec.estimate], queue=False)
    sec.paper.click(posterior_preset_handler, session, [sec.draws, sec.tune, sec.chains, sec.preset_note,
                                                        sec.estimate], queue=False)
    sec.run.click(
        posterior_handler,
        [session, sec.name_a, sec.words_a, sec.name_b, sec.words_b, sec.draws, sec.tune, sec.chains, sec.seed],
        [session, sec.status, sec.reading, sec.details, sec.acf, sec.pca, sec.words, sec.groups, sec.csv, sec.json],
        concurrency_id="mcmc",
        concurrency_limit=1,
    )
