"""The Bayesian estimate on a second embedding (inside its accordion): this embedding hard-debiased, or another.

After the Bayesian estimate has run, "Compare with another embedding" runs it again, with the same model and
settings, on a second embedding — by default this embedding hard-debiased (Bolukbasi et al. 2016, see
:mod:`biastest.models.embeddings.debias`) — and shows, per target word and contrast, the difference of the
posterior contrasts (second − first) with its highest posterior density interval
(:func:`biastest.measures.bayes.compare.compare_bayes`), as a forest plot, a table, a reading and downloads.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from biastest.errors import DataError
from biastest.measures.bayes import BayesItems, BayesOptions, run
from biastest.measures.bayes.compare import compare_bayes, comparison_exports, comparison_figure
from biastest.models.catalog import suggestions
from biastest.models.embeddings import debiased_source
from biastest.ui.common import USER_MISTAKES, escape, progress_callback, session_export_dir, user_errors, warn_inline
from biastest.ui.compare import source_label
from biastest.ui.psychophysics.spec import embedding_source_id
from biastest.ui.psychophysics.state import Section, need_session

__all__ = ["SOURCE_DEBIASED", "build", "compare_core", "compare_view", "source_choices", "wire"]

#: The choice "this embedding, hard-debiased".
SOURCE_DEBIASED = "__this-embedding-hard-debiased__"
DEBIASED_LABEL = "This embedding, hard-debiased (Bolukbasi et al. 2016)"

MSG_RUN_BAYES_FIRST = "Run the Bayesian estimate first; the comparison runs it again on a second embedding."
MSG_SAME_EMBEDDING = "That is the embedding of the Bayesian estimate itself; choose another one."
COMPARE_HELP = (
    "Run the same Bayesian estimate (same model, settings and seed) on a **second embedding** — by default this "
    "embedding after *hard debiasing* (Bolukbasi et al. 2016: the gender direction removed from every word that "
    "is not gender-specific, and pairs such as *he/she* made equidistant) — and see, for each target word and "
    "contrast, how much the contrast moved (second − first) with its HPDI. An interval above 0: the second "
    "embedding shows less of the stereotyped closeness; an interval holding 0: no credible change."
)


def source_choices(*, allow_paths: bool) -> list[tuple[str, str]]:
    """(label, value) of the second embedding: this one hard-debiased first, then the embeddings listed."""
    return [(DEBIASED_LABEL, SOURCE_DEBIASED),
            *((s.label, s.value) for s in suggestions("embeddings", public=not allow_paths))]


def _base_key(result: Any) -> list[Any]:
    return [result.seed, dict(result.provenance).get("created_at"), dict(result.provenance).get("model_id")]


def compare_core(session: Any, choice: Any, *, allow_paths: bool = False, progress=None) -> dict[str, Any]:
    """Run the session's Bayesian estimate on the second embedding and compare; returns the new session.

    ``choice`` is :data:`SOURCE_DEBIASED` or an embedding source; one on this machine (``file:``,
    ``sentence-transformers:``) only where server paths are allowed.
    """
    session = need_session(session)
    first = session.get("bayes")
    if first is None:
        raise DataError(MSG_RUN_BAYES_FIRST)
    choice = str(choice or SOURCE_DEBIASED)
    if choice == SOURCE_DEBIASED:
        source = debiased_source(session["source"])
    else:
        source = embedding_source_id(choice, None, None, allow_paths=allow_paths)
    if source == session["source"]:
        raise DataError(MSG_SAME_EMBEDDING)
    prov = dict(first.provenance)
    requested = dict(prov.get("requested") or {})
    options = BayesOptions.given({
        "source": source, "model": first.model["name"], "seed": first.seed,
        "draws": requested.get("draws", first.draws), "tune": requested.get("tune", first.tune),
        "chains": first.chains, "hdi_prob": first.hdi_prob,
        **({"time_limit": prov["time_limit"]} if prov.get("time_limit") is not None else {}),
    })
    second = run(options, BayesItems.from_spec(session["spec"]), progress=progress)
    labels = (source_label(session["source"]), source_label(source))
    cmp = compare_bayes(first, second, labels=labels)
    new = dict(session)
    new["bayes_compare"] = {"base": _base_key(first), "source": source, "result": second, "comparison": cmp}
    return new


def compare_view(session: dict[str, Any]) -> tuple:
    """Status, reading, figure, table, CSV and JSON of the comparison in the session."""
    saved = session.get("bayes_compare") or {}
    cmp = saved.get("comparison")
    if cmp is None or session.get("bayes") is None or saved.get("base") != _base_key(session["bayes"]):
        hidden = gr.update(value=None, visible=False)
        return "", "", None, None, hidden, hidden
    second = saved["result"]
    converged = bool(second.diagnostics.get("converged"))
    status = (f"✅ Compared with {escape(cmp.labels[1])}." if converged else
              f"⚠️ The estimate on {escape(cmp.labels[1])} did NOT converge: do not rely on these differences.")
    csv_path, json_path = comparison_exports(cmp, directory=session_export_dir("biastest-bayes-compare-"))
    table = pd.DataFrame(cmp.rows)[["protected_word", "group", "contrast", "first_mean", "second_mean",
                                    "difference", "hdi_low", "hdi_high", "p_higher", "verdict"]]
    reading = "\n".join(f"- {escape(line)}" for line in cmp.reading)
    if cmp.only_in_one:
        reading += f"\n- Left out (in one embedding only): {escape(', '.join(cmp.only_in_one))}."
    return (status, reading, comparison_figure(cmp), table.round(4), gr.update(value=str(csv_path), visible=True),
            gr.update(value=str(json_path), visible=True))


def compare_handler(*, allow_paths: bool):
    """The button's handler: run on the second embedding and compare; a mistake inline under the button."""

    @user_errors
    def handler(session, choice, progress=gr.Progress()):
        try:
            new = compare_core(session, choice, allow_paths=allow_paths, progress=progress_callback(progress))
        except USER_MISTAKES as exc:
            return (gr.skip(), warn_inline(exc), *(gr.skip(),) * 5)
        return (new, *compare_view(new))

    return handler


def build(*, allow_paths: bool) -> Section:
    """The comparison's controls (inside the Bayesian estimate's accordion)."""
    sec = Section()
    with gr.Accordion("Compare with another embedding", open=False, elem_id="bayes-compare"):
        gr.Markdown(COMPARE_HELP, elem_classes=["bt-hint"])
        choices = source_choices(allow_paths=allow_paths)
        sec.add("source", gr.Dropdown(choices, value=SOURCE_DEBIASED, label="Second embedding",
                                      elem_id="bayes-compare-source"), SOURCE_DEBIASED)
        sec.run = gr.Button("Run on the second embedding and compare", elem_id="bayes-compare-run")
        sec.add("status", gr.Markdown("", elem_id="bayes-compare-status"), "")
        sec.add("reading", gr.Markdown("", elem_id="bayes-compare-reading"), "")
        sec.add("plot", gr.Plot(label="Difference of each contrast (second − first)", elem_id="bayes-compare-plot"),
                None)
        sec.add("table", gr.Dataframe(label="Differences per target word", interactive=False,
                                      elem_id="bayes-compare-table"), None)
        with gr.Row():
            sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="bayes-compare-csv"),
                    gr.update(value=None, visible=False))
            sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="bayes-compare-json"),
                    gr.update(value=None, visible=False))
    return sec


def wire(sec: Section, session: Any, *, allow_paths: bool, clear_on: tuple[Any, ...] = ()) -> None:
    """The button (one sampler at a time, as the estimate itself); ``clear_on`` buttons (a new estimate) clear it."""
    outputs = [sec.status, sec.reading, sec.plot, sec.table, sec.csv, sec.json]
    sec.run.click(compare_handler(allow_paths=allow_paths), [session, sec.source], [session, *outputs],
                  concurrency_id="mcmc", concurrency_limit=1)
    shown = [(c, v) for c, v in sec.resets() if c in outputs]
    for button in clear_on:
        button.click(lambda: tuple(v for _, v in shown), None, [c for c, _ in shown], queue=False)
