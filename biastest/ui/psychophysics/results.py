"""Step 3 of the word-embedding app: the 2AFC and WEAT/MAC results, and their downloads.

2AFC: the PSE per target, the psychometric curve of a chosen target, the
spectrum, the labour-statistics comparison where the cues are gendered, the
per-target table. WEAT/MAC: statistic and effect size, per-word associations,
MAC. The measures' reports (:mod:`biastest.measures.twoafc.report`,
:mod:`biastest.measures.weat.report`) make the tables and figures; this module places them.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.measures.twoafc import report as rep
from biastest.measures.weat import report as weat_rep
from biastest.spec import TwoAFCSpec
from biastest.ui.common import DETAILS_LABEL, session_export_dir, user_errors
from biastest.ui.psychophysics.state import Section


def results_view(session: dict[str, Any]) -> tuple:
    """Values of the result components for the session's result (in the order of ``Section.outputs``)."""
    spec, source = session["spec"], session["source"]
    hide = gr.update(visible=False)
    if isinstance(spec, TwoAFCSpec):
        result, corr = session["result"], session.get("labour")
        csv_path, json_path = rep.twoafc_exports(result, source=source, corr=corr, spec=spec.to_dict(),
                                                   directory=session_export_dir("biastest-2afc-"))
        names = [t.target for t in sorted(result.targets, key=lambda t: -t.pse)]
        first, first_note = rep.first_curve_target(result)
        return (
            rep.twoafc_interpretation(result, source=source),
            gr.update(visible=True),
            gr.update(visible=False),
            rep.pse_figure(result),
            gr.update(choices=names, value=first, info=first_note),
            rep.curve_figure(result.psychometric_curve(first)) if first else None,
            rep.spectrum_figure(result.spectrum()),
            rep.labour_markdown(corr) if corr is not None else "",
            gr.update(value=rep.labour_figure(corr, cue1_label=result.cue1_label), visible=True)
            if corr is not None
            else gr.update(value=None, visible=False),
            rep.twoafc_frame(result),
            None,
            None,
            None,
            None,
            gr.update(value=str(csv_path), visible=True),
            gr.update(value=str(json_path), visible=True),
        )
    weat, mac = session["weat"], session["mac"]
    csv_path, json_path = weat_rep.weat_exports(weat, mac, source=source, spec=spec.to_dict(),
                                               directory=session_export_dir("biastest-weat-"))
    return (
        weat_rep.weat_interpretation(weat, mac, source=source),
        gr.update(visible=False),
        gr.update(visible=True),
        None,
        gr.update(choices=[], value=None, info=None),
        None,
        None,
        "",
        hide,
        None,
        weat_rep.weat_frame(weat, mac),
        weat_rep.weat_figure(weat),
        weat_rep.weat_words_frame(weat),
        weat_rep.mac_frame(mac),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


@user_errors
def curve_handler(session, target):
    """Psychometric curve of the selected target."""
    if not session or not isinstance(session.get("spec"), TwoAFCSpec) or session.get("result") is None or not target:
        return None
    return rep.curve_figure(session["result"].psychometric_curve(target))


def build() -> Section:
    """Step 3's result controls (call inside its tab); ``sec.outputs`` lists what :func:`results_view` fills."""
    sec = Section()
    sec.add("summary", gr.Markdown("", elem_id="result-summary"), "")
    with sec.add("twoafc_box", gr.Column(visible=True), gr.update(visible=True)):
        sec.add("pse_plot", gr.Plot(label="PSE per target word (paper Fig. 3)", elem_id="pse-plot"), None)
        with gr.Row():
            sec.add("curve_target", gr.Dropdown([], label="Psychometric curve of the target word",
                                                elem_id="curve-target"), gr.update(choices=[], value=None, info=None))
        sec.add("curve_plot", gr.Plot(label="Psychometric curve (paper Fig. 2)", elem_id="curve-plot"), None)
        sec.add("spectrum_plot", gr.Plot(label="Spectrum of target words (paper Fig. 4)", elem_id="spectrum-plot"),
                None)
        sec.add("labour_md", gr.Markdown("", elem_id="labour-summary"), "")
        sec.add("labour_plot", gr.Plot(label="PSE vs labour statistics", visible=False, elem_id="labour-plot"),
                gr.update(value=None, visible=False))
        sec.add("twoafc_df", gr.Dataframe(label="Per target word", interactive=False, elem_id="twoafc-table"), None)
    with sec.add("weat_box", gr.Column(visible=False), gr.update(visible=False)):
        # the reading (its verdict first), the figure, then the numbers folded into Details (issue 28)
        sec.add("weat_plot", gr.Plot(label="Association of each target word", elem_id="weat-plot"), None)
        with gr.Accordion(DETAILS_LABEL, open=False, elem_id="weat-details"):
            sec.add("weat_df", gr.Dataframe(label="WEAT and MAC", interactive=False, elem_id="weat-table"), None)
            sec.add("weat_words_df", gr.Dataframe(label="Per target word", interactive=False,
                                                  elem_id="weat-words-table"), None)
            sec.add("mac_df", gr.Dataframe(label="MAC per target word and attribute list", interactive=False,
                                           elem_id="mac-table"), None)
    with gr.Row():
        sec.add("csv", gr.DownloadButton("Download CSV", visible=False, elem_id="download-csv"),
                gr.update(value=None, visible=False))
        sec.add("json", gr.DownloadButton("Download JSON", visible=False, elem_id="download-json"),
                gr.update(value=None, visible=False))
    sec.outputs = [
        sec.summary, sec.twoafc_box, sec.weat_box, sec.pse_plot, sec.curve_target, sec.curve_plot,
        sec.spectrum_plot, sec.labour_md, sec.labour_plot, sec.twoafc_df, sec.weat_df, sec.weat_plot,
        sec.weat_words_df, sec.mac_df, sec.csv, sec.json,
    ]
    return sec


def wire(sec: Section, session: Any) -> None:
    """Step 3's handler: the psychometric curve of the chosen target."""
    sec.curve_target.change(curve_handler, [session, sec.curve_target], sec.curve_plot, queue=False)
