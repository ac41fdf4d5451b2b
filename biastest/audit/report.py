"""The results report of an audit folder: one self-contained HTML file (``python -m biastest report DIR``).

It reads what ``python -m biastest audit`` wrote (:mod:`biastest.audit.run`): the results table
(``DIR/results.parquet`` when it can be read, else ``DIR/results.csv``), the plan (``DIR/audit.json``) and every
finished cell's result (``DIR/cells/<key>.json``), and writes one HTML file with

- per specification and statistic, a **forest plot** of every cell (model × method × seed) with its own interval,
  sorted, with hover;
- per group of cells tested on the **same items** with the same seed (same specification, same frozen test data),
  the **comparison** of :mod:`biastest.stats.compare`: the paired forest plot, the pairwise table (difference,
  interval, discordant items, p and Holm-adjusted p) and a plain-language reading;
- the failed cells with their messages, and every cell in one table.

The figures are plotly's, embedded inline with plotly.js itself (``include_plotlyjs=True`` once, for the first
figure): the file needs no server, no network and no CDN. Every text that comes from the data (model and
specification names, methods, options, error messages) is HTML-escaped; text inside the figures is escaped by
:mod:`biastest.report.compare`.
"""

from __future__ import annotations

import csv
import html
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biastest import __version__
from biastest.audit.uses import BUILTIN_USES, use_of
from biastest.errors import DataError
from biastest.measures import MEASURES
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.twoafc.compare import compare_twoafc
from biastest.measures.vlm import compare_vlm
from biastest.measures.weat.compare import compare_weat
from biastest.paths import resolve_under
from biastest.provenance import utc_now
from biastest.report import compare as rep
from biastest.stats import compare as cmp_stats

__all__ = [
    "MSG_NO_AUDIT",
    "MSG_NO_RESULTS",
    "build_report",
    "write_report",
]

MSG_NO_AUDIT = "'{path}' is not an audit folder (it has no results.csv). Run: python -m biastest audit GRID --out DIR"
MSG_NO_RESULTS = "The audit folder '{path}' has a results table but no cell in it; run the audit first."
MSG_BAD_TABLE = "The results table of '{path}' cannot be read ({problem})."
MSG_BAD_ROW = (
    "The results table '{path}' has a bad value in row {row}, column '{column}' ({problem}). Run the audit again: "
    "it rebuilds the table from the cell files."
)
MSG_BAD_PLAN = "The plan '{path}' holds {what}, not an audit's plan. Run the audit again to write it."
MSG_BAD_CELL = "The cell file '{path}' cannot be used ({problem}). Run the audit again: it computes the cell again."
PROBLEM_NOT_NUMBER = "not a finite number"
PROBLEM_NOT_WHOLE = "not a whole number of 0 or more"
PROBLEM_NOT_TEXT = "not text"
MSG_NOT_COMPARED = "Not compared: {reason}"
MSG_COMPARE_HEAD = "Compared on the same items: {items} (seed {seed})"
MSG_NO_SCORE = "no single score per cell (a 2AFC cell has one PSE per target word): see the comparisons below"



def own_family(measure: Any) -> bool:
    """True for a measure whose cells are compared with each other only, by the measure's own ``compare`` (or not
    at all when it has none, as BBQ): one that brings its own audit use (``MEASURE.extra["audit"]``, e.g.
    forced-choice), not one the audit read before the registry (:data:`~biastest.audit.uses.BUILTIN_USES`,
    compared by scope below)."""
    return (isinstance(measure, str) and measure in MEASURES and measure not in BUILTIN_USES
            and use_of(MEASURES[measure]) is not None)


def uncompared(family: str) -> bool:
    """A measure's own family whose cells are listed, not compared (it has no ``compare`` yet)."""
    return own_family(family) and MEASURES[family].compare is None

FAMILIES = {"lm": "lm", "lm-endpoint": "lm", "vlm": "vlm", "vlm-endpoint": "vlm", "weat": "weat", "2afc": "2afc"}

CSS = """
body { font-family: Inter, system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #0f172a; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #cbd5e1; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #cbd5e1; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f1f5f9; } .note { color: #475569; font-size: 0.92em; } .failed { color: #b91c1c; }
ul.reading li { margin: 0.3em 0; }
"""


# --------------------------------------------------------------------------- reading the folder
def _rows(folder: Path) -> list[dict[str, Any]]:
    """The results table as dicts (Parquet when readable: exact; else the CSV)."""
    parquet, csv_path = folder / "results.parquet", folder / "results.csv"
    if not parquet.is_file() and not csv_path.is_file():
        raise DataError(MSG_NO_AUDIT.format(path=folder))
    if parquet.is_file():
        try:
            frame = pd.read_parquet(parquet)
            return _checked([{k: _clean(v) for k, v in r.items()} for r in frame.to_dict("records")], parquet)
        except DataError:
            raise
        except Exception as exc:  # an unreadable Parquet file: the CSV holds the same rows
            if not csv_path.is_file():
                raise DataError(MSG_BAD_TABLE.format(path=parquet, problem=type(exc).__name__)) from None
    try:
        with csv_path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(MSG_BAD_TABLE.format(path=folder, problem=type(exc).__name__)) from None
    return _checked([{k: _from_csv(k, v) for k, v in r.items()} for r in rows], csv_path)


_WHOLE = {"seed", "n", "n_scored", "n_excluded", "n_clusters"}
_REAL = {"score", "ci_low", "ci_high", "exact_ci_low", "exact_ci_high", "confidence", "p_value", "design_effect",
         "seconds"}
_TEXT = {"status", "error", "model", "model_ref", "kind", "spec", "method", "statistic", "items_file",
         "items_sha256"}


def _bad_value(column: str, value: Any) -> str | None:
    """Why ``value`` cannot stand in ``column`` of the results table (None when it can)."""
    if value is None:
        return None
    if column in _WHOLE or column in _REAL:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return PROBLEM_NOT_NUMBER
        if column in _WHOLE and (value < 0 or float(value) != int(value)):
            return PROBLEM_NOT_WHOLE
    elif column in _TEXT and not isinstance(value, str):
        return PROBLEM_NOT_TEXT
    return None


def _checked(rows: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """``rows`` when every value fits its column and every key names a cell file inside the folder."""
    cells = path.parent / "cells"
    for i, row in enumerate(rows, start=1):
        for column, value in row.items():
            problem = _bad_value(column, value)
            if problem is not None:
                raise DataError(MSG_BAD_ROW.format(path=path, row=i, column=column, problem=problem))
        resolve_under(cells, f"{row.get('key')}.json", source=f"row {i} of the results table '{path}'")
    return rows


_NUMERIC = {"seed", "score", "ci_low", "ci_high", "exact_ci_low", "exact_ci_high", "confidence", "p_value", "n",
            "n_scored", "n_excluded", "seconds"}


def _from_csv(column: str, value: str | None) -> Any:
    if value is None or value == "":
        return None
    if column in _NUMERIC:
        try:
            return float(value)
        except ValueError:
            return None
    return value[1:] if value[:2] in ("'=", "'+", "'-", "'@") else value  # undo the formula neutraliser


def _clean(value: Any) -> Any:
    if value is None:
        return None
    try:
        if isinstance(value, float) and math.isnan(value):
            return None
    except TypeError:
        pass
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if value is pd.NA:
        return None
    return value


def _cell(folder: Path, key: str) -> dict[str, Any] | None:
    """The finished cell ``key`` (None when it has no file, or failed); a file that cannot be used is refused.

    Raises
    ------
    DataError
        :data:`~biastest.paths.MSG_UNSAFE_NAME` (a key that leaves the folder, a link) or :data:`MSG_BAD_CELL`.
    """
    path = resolve_under(folder / "cells", f"{key}.json", source="the results table")
    if path.is_symlink():
        raise DataError(MSG_BAD_CELL.format(path=path, problem="it is a symbolic link, which is not followed"))
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise DataError(MSG_BAD_CELL.format(path=path, problem="it is not readable JSON")) from None
    if not isinstance(doc, dict) or doc.get("key", key) != key:
        raise DataError(MSG_BAD_CELL.format(path=path, problem="it is not the document of this cell"))
    if doc.get("status") != "done":
        return None
    if not isinstance(doc.get("result"), dict):
        raise DataError(MSG_BAD_CELL.format(path=path, problem="its result is missing or of the wrong type"))
    return doc


# --------------------------------------------------------------------------- HTML pieces
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _num(value: Any, digits: int) -> str:
    if value is None:
        return "—"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return _e(value)
    return "—" if math.isnan(v) else f"{v:.{digits}f}"


def _p(value: Any) -> str:
    if value is None:
        return "—"
    v = float(value)
    return "&lt; 0.001" if v < 0.001 else f"{v:.3g}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (then the caller escaped them)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else _e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@dataclass
class _Figures:
    """Plotly figures as HTML: plotly.js inline with the first, the others use it."""

    count: int = 0
    ids: list[str] = field(default_factory=list)

    def html(self, fig) -> str:
        self.count += 1
        div_id = f"figure-{self.count}"
        self.ids.append(div_id)
        return fig.to_html(full_html=False, include_plotlyjs=self.count == 1, div_id=div_id,
                           config={"displaylogo": False, "responsive": True})


def _digits(statistic: str | None) -> int:
    return 1 if statistic and "%" in statistic else 3


def _label(row: Mapping[str, Any], *, methods: bool, seeds: bool) -> str:
    label = str(row.get("model") or "?")
    if methods and row.get("method"):
        label += f" · {row['method']}"
    if seeds and row.get("seed") is not None:
        label += f" · seed {int(row['seed'])}"
    return label


def _forest_of_rows(rows: list[dict[str, Any]], spec: str, statistic: str, figures: _Figures) -> str:
    scored = [r for r in rows if r.get("score") is not None]
    if not scored:
        return f"<p class='note'>{_e(MSG_NO_SCORE)}</p>"
    methods = len({r.get("method") for r in scored}) > 1
    seeds = len({r.get("seed") for r in scored}) > 1
    labels = cmp_stats.model_labels([_label(r, methods=methods, seeds=seeds) for r in scored])
    digits = _digits(statistic)
    forest_rows = []
    for r, label in zip(scored, labels, strict=True):
        hover = {"model": r.get("model_ref") or r.get("model"), "method": r.get("method"), "seed": r.get("seed"),
                 "n scored": r.get("n_scored"), "p (vs no bias)": _p(r.get("p_value")).replace("&lt;", "<")}
        forest_rows.append({"label": label, "estimate": float(r["score"]),
                            "ci_low": None if r.get("ci_low") is None else float(r["ci_low"]),
                            "ci_high": None if r.get("ci_high") is None else float(r["ci_high"]),
                            "no_interval": "no interval recorded", "hover": hover})
    confidence = next((r["confidence"] for r in scored if r.get("confidence")), 0.95)
    reference = 50.0 if "%" in statistic else 0.0
    fig = rep.forest_rows_figure(forest_rows, title=f"{spec}: every cell", value_label=statistic,
                                 reference=reference, interval_label=f"{rep.level(float(confidence))} interval",
                                 digits=digits)
    return figures.html(fig)


def _summary_html(c: cmp_stats.Comparison) -> str:
    clusters = f" in {c.n_clusters} clusters ({_e(c.cluster_by)})" if c.n_clusters is not None else ""
    text = (f"<b>{len(c.models)} models on the same {c.n_items} {_e(rep.ITEM_WORDS.get(c.kind, 'items'))}</b>"
            f"{clusters}. Measure: {_e(c.measure)}. Intervals: {_e(c.interval_method)} ({c.n_resamples:,} "
            f"resamples, seed {c.seed}). Test: {_e(c.test)}; p-values adjusted by Holm over the "
            f"{len(c.pairs)} pair(s).")
    notes = [_e(n) for n in c.notes]
    for m in c.models:
        if m.n_excluded or m.n_unmatched:
            notes.append(_e(rep.MSG_LEFT_OUT.format(label=m.label, excluded=m.n_excluded, unmatched=m.n_unmatched)))
    if notes:
        text += "<ul class='note'>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>"
    return f"<p>{text}</p>"


def _reading_html(c: cmp_stats.Comparison, p: cmp_stats.PairedComparison) -> str:
    """:func:`biastest.report.compare.pair_reading` as HTML: the sentence escaped, the two model names in bold."""
    names: dict[str, str] = {}

    def token(label: str) -> str:
        names[f"\x00{len(names)}\x00"] = label
        return f"\x00{len(names) - 1}\x00"

    text = _e(rep.pair_reading(c, p, escape=token, bold=False))
    for key, label in names.items():
        text = text.replace(key, f"<b>{_e(label)}</b>")
    return text


def _comparison_html(c: cmp_stats.Comparison, figures: _Figures, title: str) -> str:
    ordered = sorted(c.pairs, key=lambda p: (-abs(p.difference), p.a, p.b))
    readings = "".join(f"<li>{_reading_html(c, p)}</li>" for p in ordered)
    frame = rep.pairwise_frame(c)
    parts = [
        _summary_html(c),
        figures.html(rep.forest_figure(c, title=title)),
        _table(list(frame.columns), [[str(v) for v in row] for row in frame.itertuples(index=False)]),
        f"<ul class='reading'>{readings}</ul>",
    ]
    return "\n".join(parts)


def _compare_group(docs: list[tuple[dict[str, Any], dict[str, Any]]], family: str) -> cmp_stats.Comparison:
    """The comparison of a group of cells (row, document) on the same items."""
    methods = len({r.get("method") for r, _ in docs}) > 1
    labels = cmp_stats.model_labels([_label(r, methods=methods, seeds=False) for r, _ in docs])
    results = [d["result"] for _, d in docs]
    seed = int(docs[0][0].get("seed") or 0)
    if family == "lm":
        clusters = results[0].get("clusters") if isinstance(results[0], Mapping) else None
        return compare_stereotype(results, seed=seed, labels=labels, clusters=clusters or None)
    if family == "vlm":
        score = "soft" if all(r.get("soft") is not None for r in results) else "hard"
        return compare_vlm(results, seed=seed, labels=labels, score=score)
    if family == "weat":
        return compare_weat(results, seed=seed, labels=labels)
    if own_family(family):
        clusters = results[0].get("clusters") if isinstance(results[0], Mapping) else None
        return MEASURES[family].compare(results, seed=seed, labels=labels, clusters=clusters or None)
    return compare_twoafc(results, seed=seed, labels=labels)


def _family(doc: dict[str, Any] | None, row: Mapping[str, Any]) -> str:
    measure = ((doc or {}).get("cell") or {}).get("measure")
    if own_family(measure):  # a measure of a kind's models that is not that kind's default: its own family
        return measure
    scope = ((doc or {}).get("cell") or {}).get("scope")
    if scope in FAMILIES:
        return FAMILIES[scope]
    method = str(row.get("method") or "")
    if method in ("weat", "2afc"):
        return method
    return "vlm" if row.get("kind") == "vlm" else "lm"


def build_report(folder: str | Path) -> str:
    """The report of an audit folder as one HTML document (see the module docstring).

    Raises
    ------
    DataError
        :data:`MSG_NO_AUDIT` (no results table) or :data:`MSG_NO_RESULTS` (an empty one).
    """
    folder = Path(folder)
    rows = _rows(folder)
    if not rows:
        raise DataError(MSG_NO_RESULTS.format(path=folder))
    plan: Any = {}
    try:
        plan = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        pass
    if not isinstance(plan, dict):
        raise DataError(MSG_BAD_PLAN.format(path=folder / "audit.json", what=f"a JSON {type(plan).__name__}"))
    name = plan.get("name") or folder.name
    figures = _Figures()
    done = [r for r in rows if r.get("status") == "done"]
    failed = [r for r in rows if r.get("status") != "done"]
    specs = list(dict.fromkeys(str(r.get("spec")) for r in rows))
    body = [
        f"<h1>Audit report: {_e(name)}</h1>",
        f"<p class='note'>{len(rows)} cells ({len(done)} finished, {len(failed)} failed) · {len(specs)} "
        f"specification(s) · written {_e(utc_now())} by biastest {_e(__version__)} from the folder "
        f"<code>{_e(folder.name)}</code>.</p>",
        "<p class='note'>Each forest plot shows every cell's score with its own interval. Where several cells were "
        "tested on the same items (same specification, frozen test data and seed), they are also compared item "
        "by item: the difference of every pair of models with a paired interval and a test, p-values adjusted for "
        "the number of pairs (Holm). See the Methods section at the end.</p>",
        "<h2>Contents</h2><ul>" + "".join(f"<li><a href='#spec-{i}'>{_e(s)}</a></li>" for i, s in enumerate(specs))
        + "<li><a href='#cells'>Every cell</a></li><li><a href='#methods'>Methods</a></li></ul>",
    ]
    for i, spec in enumerate(specs):
        body.append(f"<h2 id='spec-{i}'>{_e(spec)}</h2>")
        spec_rows = [r for r in done if str(r.get("spec")) == spec]
        for statistic in dict.fromkeys(str(r.get("statistic")) for r in spec_rows):
            stat_rows = [r for r in spec_rows if str(r.get("statistic")) == statistic]
            body.append(f"<h3>{_e(statistic)}</h3>")
            body.append(_forest_of_rows(stat_rows, spec, statistic, figures))
            body.extend(_comparisons(folder, stat_rows, spec, figures))
        spec_failed = [r for r in failed if str(r.get("spec")) == spec]
        if spec_failed:
            body.append("<h3 class='failed'>Failed cells</h3>")
            body.append(_table(["model", "method", "seed", "error"],
                               [[r.get("model"), r.get("method"), _seed(r), r.get("error")] for r in spec_failed]))
    body.append("<h2 id='cells'>Every cell</h2>")
    body.append(_table(
        ["model", "specification", "method", "seed", "status", "statistic", "score", "interval", "p", "n scored",
         "error"],
        [[r.get("model"), r.get("spec"), r.get("method"), _seed(r), r.get("status"), r.get("statistic"),
          _num(r.get("score"), _digits(r.get("statistic"))), _interval(r), _p(r.get("p_value")).replace("&lt;", "<"),
          _seed(r, "n_scored"), r.get("error") or ""] for r in rows]))
    body.append(f"<h2 id='methods'>Methods</h2><div class='note'>{_methods_html()}</div>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(f'biastest audit report: {name}')}</title><style>{CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>")


def _seed(row: Mapping[str, Any], column: str = "seed") -> str:
    v = row.get(column)
    return "" if v is None else str(int(float(v)))


def _interval(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return "—"
    d = _digits(row.get("statistic"))
    return f"{_num(row['ci_low'], d)} – {_num(row['ci_high'], d)}"


def _comparisons(folder: Path, rows: list[dict[str, Any]], spec: str, figures: _Figures) -> list[str]:
    """One comparison per group of cells on the same items and seed (two cells or more)."""
    groups: dict[tuple[Any, ...], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for r in rows:
        doc = _cell(folder, str(r.get("key")))
        if doc is None:
            continue
        groups.setdefault((_family(doc, r), r.get("items_sha256"), r.get("seed")), []).append((r, doc))
    out = []
    for (family, _items, seed), docs in groups.items():
        if len(docs) < 2 or uncompared(family):
            continue
        items_file = docs[0][0].get("items_file") or "the specification's words"
        head = MSG_COMPARE_HEAD.format(items=Path(str(items_file)).name, seed=_seed({"seed": seed}))
        out.append(f"<h4>{_e(head)}</h4>")
        try:
            c = _compare_group(docs, family)
        except DataError as exc:  # e.g. cells that share no item after all: say so, keep the rest of the report
            out.append(f"<p class='note'>{_e(MSG_NOT_COMPARED.format(reason=exc.message))}</p>")
            continue
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):  # a result with parts missing
            files = ", ".join(f"{r.get('key')}.json" for r, _ in docs)
            raise DataError(MSG_BAD_CELL.format(path=folder / "cells" / f"{{{files}}}",
                                                problem="a result lacks what the comparison needs")) from None
        out.append(_comparison_html(c, figures, title=f"{spec}: {len(c.models)} models on the same items"))
    return out


def _methods_html() -> str:
    lines = [
        "Scores, intervals and p-values of single cells are those of each test (see the README's Metrics "
        "section).",
        f"Comparisons (biastest.stats.compare): items are matched by identity and only those every model scored "
        f"are used. Interval: {cmp_stats.INTERVAL_PAIRED}; with clusters, {cmp_stats.INTERVAL_CLUSTERED}. "
        f"Tests: {cmp_stats.TEST_MCNEMAR} (stereotype scores, hard VQA scores); {cmp_stats.TEST_SIGN_PAIRED} "
        f"(soft VQA scores, 2AFC); {cmp_stats.TEST_BOOTSTRAP} (WEAT effect sizes, {cmp_stats.INTERVAL_WEAT}). "
        f"{cmp_stats.ADJUST_HOLM}.",
        "A pair of models reads as 'a difference' when the Holm-adjusted p-value is below 1 − confidence and the "
        "interval of the difference excludes 0, 'no evidence of a difference' when neither holds, and 'unclear' "
        "when the two disagree; the intervals are not adjusted, so a pair whose interval excludes 0 but whose "
        "adjusted p-value does not reach the level reads 'no evidence once the comparisons are taken into "
        "account'.",
    ]
    return "".join(f"<p>{_e(x)}</p>" for x in lines)


def write_report(folder: str | Path, path: str | Path | None = None) -> Path:
    """Write :func:`build_report`'s HTML to ``path`` (default ``DIR/report.html``) atomically; returns the path."""
    folder = Path(folder)
    text = build_report(folder)
    target = Path(path) if path is not None else folder / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
