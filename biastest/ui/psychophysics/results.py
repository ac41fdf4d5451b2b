"""Step 3 of the word-embedding app: the 2AFC and WEAT/MAC results, and their downloads.

2AFC: the PSE per target with a dot per cue pair (Fig. 3a), the JND per
target (Fig. 3b), the psychometric curve of a chosen target, the spectrum
(Fig. 4), the labour-statistics comparisons where the cues are gendered (the
PSE against % women, the JND against sqrt(p(1 − p))), the per-target table.
WEAT/MAC: statistic and effect size, per-word associations, MAC (per group where each group has its own
stereotype list), and how much d varies over random word lists of the same sizes. Three or more groups: MAC per
group alone, in WEAT's places (WEAT compares two groups). The measures' reports
(:mod:`biastest.measures.twoafc.report`, :mod:`biastest.measures.twoafc.report_figures`,
:mod:`biastest.measures.weat.report`) make the tables and figures; this module places them.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from biastest.errors import DataError
from biastest.measures.twoafc import jnd_labor_correlation
from biastest.measures.twoafc import report as rep
from biastest.measures.twoafc import report_figures as jnd_rep
from biastest.measures.weat import report as weat_rep
from biastest.spec import MSG_TWO_GROUPS_ONLY, TwoAFCSpec
from biastest.ui.common import DETAILS_LABEL, session_export_dir, user_errors
from biastest.ui.psychophysics.state import Section


def _jnd_views(result, corr) -> tuple[Any, Any, Any, Any]:
    """The JND figure (Fig. 3b), its validation against labour statistics (when the PSE's is shown) in words and
    as a scatter, and the validation record (None without one)."""
    hide_plot = gr.update(value=None, visible=False)
    if not any(t.jnd()[0] is not None for t in result.targets):
        return None, jnd_rep.MSG_NO_JND_AT_ALL, hide_plot, None
    fig = jnd_rep.jnd_figure(result)
    if corr is None:
        return fig, "", hide_plot, None
    try:
        val = jnd_labor_correlation(result)
    except DataError as exc:
        return fig, exc.message, hide_plot, None
    return fig, jnd_rep.jnd_labour_markdown(val), gr.update(value=jnd_rep.jnd_labour_figure(val), visible=True), val


def results_view(session: dict[str, Any]) -> tuple:
    """Values of the result components for the session's result (in the order of ``Section.outputs``)."""
    spec, source = session["spec"], session["source"]
    hide = gr.update(visible=False)
    if isinstance(spec, TwoAFCSpec):
        result, corr = session["result"], session.get("labour")
        jnd_plot, jnd_md, jnd_labour_plot, jnd_corr = _jnd_views(result, corr)
        csv_path, json_path = rep.twoafc_exports(result, source=source, corr=corr, spec=spec.to_dict(),
                                                   directory=session_export_dir("biastest-2afc-"), jnd_corr=jnd_corr)
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
            jnd_plot,
            jnd_md,
            jnd_labour_plot,
            "",
            None,
            gr.update(value=str(csv_path), visible=True),
            gr.update(value=str(json_path), visible=True),
        )
    weat, mac = session["weat"], session["mac"]
    if weat is None:
        return _mac_groups_view(session)
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
        None,
        "",
        gr.update(value=None, visible=False),
        weat_rep.weat_null_markdown(weat),
        weat_rep.weat_null_figure(weat),
        gr.update(value=str(csv_path), visible=True),
        gr.update(value=str(json_path), visible=True),
    )


def _mac_groups_view(session: dict[str, Any]) -> tuple:
    """Three or more groups: MAC per group in WEAT's places (WEAT compares two groups; the reading says so)."""
    spec, source, mac = session["spec"], session["source"], session["mac"]
    csv_path, json_path = weat_rep.mac_exports(mac, source=source, spec=spec.to_dict(),
                                               directory=session_export_dir("biastest-mac-"))
    why = MSG_TWO_GROUPS_ONLY.format(test="WEAT", name=spec.name, count=spec.n_groups,
                                     names=", ".join(n for n, _ in spec.social_groups))
    return (
        weat_rep.mac_interpretation(mac, source=source, note=why),
        gr.update(visible=False),
        gr.update(visible=True),
        None,
        gr.update(choices=[], value=None, info=None),
        None,
        None,
        "",
        gr.update(visible=False),
        None,
        weat_rep.mac_groups_frame(mac),
        weat_rep.mac_group_figure(mac),
        weat_rep.mac_words_frame(mac),
        weat_rep.mac_frame(mac),
        None,
        "",
        gr.update(value=None, visible=False),
        "",
        None,
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
        sec.add("pse_plot", gr.Plot(label="PSE per target word, a dot per cue pair (paper Fig. 3a)",
                                    elem_id="pse-plot"), None)
        sec.add("jnd_plot", gr.Plot(label="JND per target word (paper Fig. 3b)", elem_id="jnd-plot"), None)
        with gr.Row():
            sec.add("curve_target", gr.Dropdown([], label="Psychometric curve of the target word",
                                                elem_id="curve-target"), gr.update(choices=[], value=None, info=None))
        sec.add("curve_plot", gr.Plot(label="Psychometric curve (paper Fig. 2)", elem_id="curve-plot"), None)
        sec.add("spectrum_plot", gr.Plot(label="Spectrum of target words (paper Fig. 4)", elem_id="spectrum-plot"),
                None)
        sec.add("labour_md", gr.Markdown("", elem_id="labour-summary"), "")
        sec.add("labour_plot", gr.Plot(label="PSE vs labour statistics", visible=False, elem_id="labour-plot"),
                gr.update(value=None, visible=False))
        sec.add("jnd_labour_md", gr.Markdown("", elem_id="jnd-labour-summary"), "")
        sec.add("jnd_labour_plot", gr.Plot(label="JND vs the binomial SD of % women", visible=False,
                                           elem_id="jnd-labour-plot"), gr.update(value=None, visible=False))
        sec.add("twoafc_df", gr.Dataframe(label="Per target word", interactive=False, elem_id="twoafc-table"), None)
    with sec.add("weat_box", gr.Column(visible=False), gr.update(visible=False)):
        # the reading (its verdict first), the figure, then the numbers folded into Details (issue 28)
        sec.add("weat_plot", gr.Plot(label="Association of each target word", elem_id="weat-plot"), None)
        sec.add("null_md", gr.Markdown("", elem_id="weat-null-summary"), "")
        sec.add("null_plot", gr.Plot(label="How much can d vary by chance?", elem_id="weat-null-plot"), None)
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
        sec.weat_words_df, sec.mac_df, sec.jnd_plot, sec.jnd_labour_md, sec.jnd_labour_plot, sec.null_md,
        sec.null_plot, sec.csv, sec.json,
    ]
    return sec


def wire(sec: Section, session: Any) -> None:
    """Step 3's handler: the psychometric curve of the chosen target."""
    sec.curve_target.change(curve_handler, [session, sec.curve_target], sec.curve_plot, queue=False)
