"""The classifier 2AFC's report: per-pair CSV rows, the summary rows, and the files of a download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biastest.measures.classifier_2afc.result import Classifier2AFCResult, SubsetRow
from biastest.measures.verdict import PREFIX, run_standing, share_claim, verdict
from biastest.report.export import private_dir, write_csv, write_json

__all__ = ["csv_rows", "export_files", "headline", "reading", "summary_rows", "verdict_sentence"]


def csv_rows(result: Classifier2AFCResult) -> list[dict[str, Any]]:
    """One row per counterfactual pair: the two sentences, their scores, the difference and the verdict."""
    return [{"template": r.template, "word": r.word, "emotion": r.emotion, "term_1": r.term_1, "term_2": r.term_2,
             "sentence_1": r.sentence_1, "sentence_2": r.sentence_2, "score_1": r.score_1, "score_2": r.score_2,
             "diff": r.diff, "verdict": r.verdict} for r in result.pairs]


def _row(what: str, row: SubsetRow) -> dict[str, Any]:
    d, s = row.diff, row.share
    return {"by": what, "key": row.key, "n_pairs": row.n_pairs, "n_ties": row.n_ties,
            "mean_diff": None if d is None else d.estimate, "diff_low": None if d is None else d.low,
            "diff_high": None if d is None else d.high, "diff_p_sign": None if d is None else d.p_value,
            "share_pct": None if s is None else s.estimate, "share_low": None if s is None else s.low,
            "share_high": None if s is None else s.high}


def summary_rows(result: Classifier2AFCResult) -> list[dict[str, Any]]:
    """The per-template, per-term-pair, per-word and per-emotion figures, one row each."""
    return [_row(what, row) for what, rows in (("template", result.per_template),
                                               ("term pair", result.per_term_pair),
                                               ("group term", result.per_group_term), ("word", result.per_word),
                                               ("emotion", result.per_emotion)) for row in rows]


def headline(result: Classifier2AFCResult) -> str:
    """One line for the terminal."""
    s, d = result.share, result.diff
    g1, g2 = result.groups
    if s is None:
        share = "no pair was decided (all tied or unscored)"
    else:
        ci = f"{s.low:.1f}–{s.high:.1f}" if s.interval_shown else "no interval"
        share = f"{g1}'s sentence scores higher in {s.estimate:.1f}% of pairs ({ci}, {s.n_clusters} clusters)"
    diff = "" if d is None else f"; mean {result.positive_label} difference {d.estimate:+.4f}"
    perm = "" if result.permutation_p is None else f" (sign-flip p = {result.permutation_p:.3g})"
    return (f"Classifier 2AFC, {g1} vs {g2}: {share}{diff}{perm}; {result.n_scored} of {result.n_pairs} pairs "
            f"scored by {result.model_id}.")


def verdict_sentence(result: Classifier2AFCResult) -> str:
    """The reading's first sentence (:func:`biastest.measures.verdict.verdict`): group 1's winning share with its
    cluster interval and sign test; none for a run that stopped early or decided no pair."""
    g1, g2 = result.groups
    if result.share is None:
        return f"{PREFIX} no verdict — no pair was decided (all tied or unscored)."
    claim = share_claim(result.share, what=f"share of pairs in which the {g1} sentence scores higher",
                        above=f"towards {g1}", below=f"towards {g2}")
    return verdict(claim, standing=run_standing(result.provenance))


def reading(result: Classifier2AFCResult) -> str:
    """The verdict sentence, then the headline line (plain text)."""
    return f"{verdict_sentence(result)}\n\n{headline(result)}"


def export_files(result: Classifier2AFCResult) -> tuple[Path, Path]:
    """The per-pair CSV and the result JSON in a private temporary folder."""
    folder = private_dir()
    return (write_csv(csv_rows(result), folder / "classifier-2afc.csv"),
            write_json(result.to_dict(), folder / "classifier-2afc.json"))
