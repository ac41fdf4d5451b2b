"""The 2AFC numbers of Liang & Acuna (2020) recomputed on the shipped GloVe 6B 50d, as a plain dict.

:func:`reproduction_numbers` runs the library's two specifications (occupations
vs gender with the paper's eight cue pairs; occupations vs love/hate with its
one pair) on GloVe 6B 50d and returns, beside the paper's value where it
states one: the PSE ↔ % women correlation, the JND ↔ sqrt(p(1 − p))
correlation, and the named findings (electrician leans male; hairdresser
against men, lawyer against women; hairdresser's JND above lawyer's; teacher
most "love", examiner most "hate"), each with whether it holds here.

The paper used 32 GloVe models trained on bootstrap resamples of Wikipedia, so
its JND is the replicate JND; GloVe 6B 50d is one model, so the JND here is the
curve JND (the fitted psychometric function's SD over the cue pairs,
:mod:`biastest.measures.twoafc.jnd`): the magnitudes need not agree, and the
returned dict says which findings hold.
"""

from __future__ import annotations

from typing import Any

from biastest.measures.twoafc.labor import jnd_labor_correlation, labor_statistics_correlation
from biastest.measures.twoafc.options import TwoAFCOptions
from biastest.measures.twoafc.run import TwoAFCItems, run
from biastest.specs import get_twoafc_spec

__all__ = ["GENDER_SPEC", "LOVE_HATE_SPEC", "PAPER", "PAPER_FIG4_OCCUPATIONS", "reproduction_numbers"]

GENDER_SPEC = "Occupations vs gender (Liang & Acuna 2020)"
LOVE_HATE_SPEC = "Occupations vs love/hate (Liang & Acuna 2020)"

PAPER: dict[str, Any] = {
    "pse_bls_r": 0.368,
    "pse_bls_p": 0.049,
    "jnd_sd_abs_r": 0.401,
    "jnd_sd_p": 0.031,
    "n_models": 32,
}
"""The values the paper reports (§5.1; its JND ↔ SD r is printed +0.401, its notebook computes −0.401)."""

PAPER_FIG4_OCCUPATIONS = (
    "examiner", "investigator", "psychologist", "pathologist", "veterinarian", "practitioner", "engineer",
    "salesperson", "pharmacist", "advisor", "inspector", "clerk", "carpenter", "electrician", "technician",
    "scientist", "librarian", "bartender", "educator", "instructor", "architect", "hairdresser", "nurse", "manager",
    "teacher",
)
"""The 25 occupations of the paper's Fig. 4 (love–hate), from most "hate" to most "love"."""


def _target(result, name: str) -> dict[str, Any]:
    t = result.target(name)
    jnd, ci, kind = t.jnd()
    return {"pse": t.pse, "pse_ci": t.pse_ci, "saturated": t.saturated, "jnd": jnd, "jnd_ci": ci, "jnd_kind": kind}


def _finding(text: str, paper: str, glove: str, holds: bool) -> dict[str, Any]:
    return {"finding": text, "paper": paper, "glove_6b_50d": glove, "holds": bool(holds)}


def _love_hate(seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Ranks of teacher and examiner on love (cue 1) / hate (cue 2), among the spec's and the paper's occupations."""
    res = run(TwoAFCOptions(seed=seed, n_bootstrap=0), TwoAFCItems(spec=get_twoafc_spec(LOVE_HATE_SPEC)))
    order = [t.target for t in sorted(res.targets, key=lambda t: (-t.pse, t.target))]
    fig4 = [w for w in order if w in PAPER_FIG4_OCCUPATIONS]
    info = {
        "n_targets": len(order),
        "most_love": order[0],
        "most_hate": order[-1],
        "most_love_of_paper_fig4": fig4[0],
        "most_hate_of_paper_fig4": fig4[-1],
        "teacher_rank_love": order.index("teacher") + 1,
        "teacher_rank_love_of_paper_fig4": fig4.index("teacher") + 1,
        "pse": {w: res.target(w).pse for w in ("teacher", "examiner", order[0])},
    }
    findings = [
        _finding("teacher is the occupation most toward love", "teacher most love (Fig. 4)",
                 f"teacher leans love (PSE {info['pse']['teacher']:.3f}) but ranks {info['teacher_rank_love']} of "
                 f"{len(order)} ({info['teacher_rank_love_of_paper_fig4']} of the paper's 25); most love: "
                 f"{order[0]} (of the paper's 25: {fig4[0]})", order[0] == "teacher"),
        _finding("examiner is the occupation most toward hate", "examiner most hate (Fig. 4)",
                 f"most hate: {order[-1]} (PSE {res.target(order[-1]).pse:.3f}); of the paper's 25: {fig4[-1]}",
                 order[-1] == "examiner"),
    ]
    return info, findings


def reproduction_numbers(*, seed: int = 0, n_bootstrap: int = 1000) -> dict[str, Any]:
    """The 2AFC part of the paper's numbers on GloVe 6B 50d, with the paper's beside them.

    Parameters
    ----------
    seed : int
        Seed of every bootstrap (PSE and JND intervals); recorded.
    n_bootstrap : int
        Resamples of the cue pairs behind the intervals.

    Returns
    -------
    dict
        ``embedding``, ``seed``, ``n_bootstrap``, ``paper`` (:data:`PAPER`);
        ``pse_bls`` and ``jnd_sd`` (``pearson_r``, ``pearson_p``,
        ``spearman_rho``, ``spearman_p``, ``n``; ``jnd_sd`` also ``jnd_kind``,
        ``jnd_definition``); ``occupations`` (electrician, hairdresser,
        lawyer: ``pse``, ``pse_ci``, ``jnd``, ``jnd_ci``, ``jnd_kind``,
        ``saturated``); ``love_hate`` (ranks of teacher and examiner);
        ``findings`` (one dict per named finding: ``finding``, ``paper``,
        ``glove_6b_50d``, ``holds``). Plain values only (JSON-ready).
    """
    res = run(TwoAFCOptions(seed=seed, n_bootstrap=n_bootstrap), TwoAFCItems(spec=get_twoafc_spec(GENDER_SPEC)))
    corr = labor_statistics_correlation(res)
    jcorr = jnd_labor_correlation(res)
    occ = {w: _target(res, w) for w in ("electrician", "hairdresser", "lawyer")}
    e, h, law = occ["electrician"], occ["hairdresser"], occ["lawyer"]

    def side(o: dict[str, Any]) -> str:
        ci = o["pse_ci"]
        sure = ci is not None and (ci[0] > 0.5 or ci[1] < 0.5)
        return (f"PSE {o['pse']:.3f} (leans {'female' if o['pse'] > 0.5 else 'male'}; interval "
                f"{'excludes' if sure else 'includes'} 0.5)")

    findings = [
        _finding("electrician leans male", "bias toward male (Fig. 2)", side(e), e["pse"] < 0.5),
        _finding("hairdresser leans against men (toward women)", "highly biased against man (Fig. 3a)", side(h),
                 h["pse"] > 0.5),
        _finding("lawyer leans against women (toward men)", "relatively biased against woman (Fig. 3a)",
                 side(law), law["pse"] < 0.5),
        _finding("hairdresser's JND is larger than lawyer's", "hairdresser high uncertainty, lawyer lower (Fig. 3b)",
                 f"{h['jnd_kind']} JND: hairdresser {h['jnd']:.3f}, lawyer {law['jnd']:.3f}",
                 h["jnd"] is not None and law["jnd"] is not None and h["jnd"] > law["jnd"]),
        _finding("PSE correlates positively with % women", "r = 0.368, p = 0.049",
                 f"r = {corr.pearson_r:.3f}, p = {corr.pearson_p:.2g}, n = {corr.n}",
                 corr.pearson_r > 0 and corr.pearson_p < 0.05),
        _finding("JND correlates with sqrt(p(1 − p)) of % women", "|r| = 0.401, p = 0.031",
                 f"r = {jcorr.pearson_r:.3f}, p = {jcorr.pearson_p:.2g}, n = {jcorr.n} ({jcorr.jnd_kind} JND)",
                 jcorr.pearson_p < 0.05),
    ]
    love_hate, lh_findings = _love_hate(seed)
    stats_of = ("pearson_r", "pearson_p", "spearman_rho", "spearman_p", "n")
    return {
        "embedding": res.provenance.get("model_id", "glove-6b-50d"),
        "seed": seed,
        "n_bootstrap": n_bootstrap,
        "paper": dict(PAPER),
        "pse_bls": {k: getattr(corr, k) for k in stats_of},
        "jnd_sd": {**{k: getattr(jcorr, k) for k in stats_of}, "jnd_kind": jcorr.jnd_kind,
                   "jnd_definition": jcorr.jnd_definition},
        "occupations": occ,
        "love_hate": love_hate,
        "findings": findings + lh_findings,
    }
