"""Stimulus continua: stimuli placed at a known α between two cues, built in or read from a user's CSV.

Black-box psychophysics (issue 25) asks a model about stimuli along a
continuum from cue 1 (α = 0) to cue 2 (α = 1) and fits its psychometric curve
over α (:func:`biastest.stats.psychometric.fit_guess_lapse`). A continuum is a
list of :class:`Stimulus` records (text, α, optional group label):

- :func:`name_continuum` — the built-in one: 91 U.S. first names with α = the
  share of female births with that name, 1950–2017, from the Social Security
  Administration's counts (``biastest/data/name_continuum_ssa.csv``; its
  README gives the source, package, version and selection);
- :func:`load_continuum_csv` / :func:`parse_continuum_csv` — a user's CSV with
  the columns ``stimulus`` and ``alpha`` (and optionally ``group``; other
  columns are ignored), UTF-8 (a byte-order mark is allowed).

A user's file is hostile until read: it is refused, with the ``MSG_*`` text
below, when it is larger than :data:`MAX_CONTINUUM_BYTES`, not UTF-8, not a
CSV with those columns, has no rows or more than :data:`MAX_STIMULI`, a row
whose stimulus is empty, too long or holds a control character, an α that is
not a number in [0, 1], the same stimulus twice (case and surrounding or
repeated white space aside), or fewer than :data:`MIN_LEVELS` different α
values (no curve can be fitted).
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from biastest.errors import DataError

__all__ = [
    "Continuum",
    "Stimulus",
    "load_continuum_csv",
    "name_continuum",
    "parse_continuum_csv",
    "MAX_CONTINUUM_BYTES",
    "MAX_STIMULI",
    "MAX_STIMULUS_CHARS",
    "MAX_GROUP_CHARS",
    "MIN_LEVELS",
    "NAME_CONTINUUM_FILE",
    "MSG_CONTINUUM_TOO_LARGE",
    "MSG_CONTINUUM_UNREADABLE",
    "MSG_CONTINUUM_NOT_UTF8",
    "MSG_CONTINUUM_BAD_CSV",
    "MSG_CONTINUUM_COLUMNS",
    "MSG_CONTINUUM_EMPTY",
    "MSG_CONTINUUM_TOO_MANY",
    "MSG_CONTINUUM_BAD_STIMULUS",
    "MSG_CONTINUUM_BAD_GROUP",
    "MSG_CONTINUUM_BAD_ALPHA",
    "MSG_CONTINUUM_DUPLICATE",
    "MSG_CONTINUUM_TOO_FEW_LEVELS",
]

#: Largest continuum file read (a thousand names with α take about 20 KB).
MAX_CONTINUUM_BYTES = 1_000_000
#: Most stimuli in one continuum (each is asked in two orders × samples × contexts).
MAX_STIMULI = 5_000
MAX_STIMULUS_CHARS = 200
MAX_GROUP_CHARS = 100
#: Fewest different α values (a psychometric fit has three parameters).
MIN_LEVELS = 3
#: The built-in name continuum, under ``biastest/data``.
NAME_CONTINUUM_FILE = "name_continuum_ssa.csv"

MSG_CONTINUUM_TOO_LARGE = (
    "The continuum file {source} is larger than {limit_kb} KB; a continuum is a list of stimuli with their α "
    "(a few kilobytes)."
)
MSG_CONTINUUM_UNREADABLE = "The continuum file {source} cannot be read ({problem})."
MSG_CONTINUUM_NOT_UTF8 = "The continuum file {source} is not UTF-8 text. Save it as a UTF-8 CSV."
MSG_CONTINUUM_BAD_CSV = "The continuum file {source} is not a readable CSV ({problem})."
MSG_CONTINUUM_COLUMNS = (
    "The continuum file {source} needs a header row with the columns 'stimulus' and 'alpha' (and optionally "
    "'group'); its header is: {header}."
)
MSG_CONTINUUM_EMPTY = "The continuum file {source} has no stimuli below its header."
MSG_CONTINUUM_TOO_MANY = "The continuum file {source} has more than {limit} stimuli; give at most {limit}."
MSG_CONTINUUM_BAD_STIMULUS = (
    "Row {row} of {source}: the stimulus must be non-empty text of at most {limit} characters without control "
    "characters."
)
MSG_CONTINUUM_BAD_GROUP = "Row {row} of {source}: the group must be text of at most {limit} characters."
MSG_CONTINUUM_BAD_ALPHA = (
    "Row {row} of {source}: alpha must be a number from 0 (all cue 1) to 1 (all cue 2); got {value}."
)
MSG_CONTINUUM_DUPLICATE = (
    "The stimulus '{stimulus}' appears twice in {source} (rows {first} and {second}); give each stimulus once."
)
MSG_CONTINUUM_TOO_FEW_LEVELS = (
    "The continuum in {source} has {count} different α value(s); a psychometric curve needs at least {need}. "
    "Add stimuli along the continuum."
)

_QUOTE = 60  # characters of a user's value quoted in a message


@dataclass(frozen=True)
class Stimulus:
    """One stimulus of a continuum: its text, its α (0 = cue 1, 1 = cue 2) and an optional group label."""

    text: str
    alpha: float
    group: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"stimulus": self.text, "alpha": self.alpha, "group": self.group}


@dataclass(frozen=True)
class Continuum:
    """A stimulus continuum: the stimuli in file order, and where they came from."""

    stimuli: tuple[Stimulus, ...]
    source: str

    @property
    def alphas(self) -> tuple[float, ...]:
        return tuple(s.alpha for s in self.stimuli)

    def __len__(self) -> int:
        return len(self.stimuli)

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "stimuli": [s.as_dict() for s in self.stimuli]}


def _quote(value: object) -> str:
    text = str(value).encode("unicode_escape", "backslashreplace").decode("ascii")
    return repr(text if len(text) <= _QUOTE else text[:_QUOTE] + "…")


def _clean_text(value: str) -> str:
    return " ".join(value.split())


def _has_control(value: str) -> bool:
    return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)


def _alpha(value: str, row: int, source: str) -> float:
    try:
        alpha = float(value.strip())
    except ValueError:
        alpha = math.nan
    if not (math.isfinite(alpha) and 0.0 <= alpha <= 1.0):
        raise DataError(MSG_CONTINUUM_BAD_ALPHA.format(row=row, source=source, value=_quote(value)), row=row)
    return alpha


def parse_continuum_csv(data: bytes | str, *, source: str = "the continuum file") -> Continuum:
    """A continuum from CSV text (columns ``stimulus``, ``alpha``, optional ``group``; others ignored).

    Parameters
    ----------
    data : bytes or str
        The file's content (bytes are decoded as UTF-8, a byte-order mark allowed).
    source : str
        How messages name the file.

    Returns
    -------
    Continuum

    Raises
    ------
    DataError
        With one of the ``MSG_CONTINUUM_*`` messages (module docstring).

    Examples
    --------
    >>> c = parse_continuum_csv("stimulus,alpha\\nAnn,0.99\\nSam,0.5\\nBob,0.01\\n")
    >>> [(s.text, s.alpha) for s in c.stimuli]
    [('Ann', 0.99), ('Sam', 0.5), ('Bob', 0.01)]
    """
    if len(data) > MAX_CONTINUUM_BYTES:
        raise DataError(MSG_CONTINUUM_TOO_LARGE.format(source=source, limit_kb=MAX_CONTINUUM_BYTES // 1000))
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DataError(MSG_CONTINUUM_NOT_UTF8.format(source=source)) from None
    elif data.startswith("\ufeff"):
        data = data[1:]
    if "\x00" in data:
        raise DataError(MSG_CONTINUUM_BAD_CSV.format(source=source, problem="it holds NUL characters"))
    reader = csv.reader(io.StringIO(data, newline=""))
    try:
        header = next(reader, None)
        columns = [_clean_text(h).casefold() for h in header] if header else []
        if "stimulus" not in columns or "alpha" not in columns:
            shown = ", ".join(_quote(h) for h in (header or [])[:10]) or "(none)"
            raise DataError(MSG_CONTINUUM_COLUMNS.format(source=source, header=shown))
        at = {name: columns.index(name) for name in ("stimulus", "alpha", "group") if name in columns}
        stimuli: list[Stimulus] = []
        seen: dict[str, int] = {}
        for row_number, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue  # blank lines are not stimuli
            if len(stimuli) >= MAX_STIMULI:
                raise DataError(MSG_CONTINUUM_TOO_MANY.format(source=source, limit=MAX_STIMULI))
            stimuli.append(_row(row, at, row_number, source, seen))
    except csv.Error as exc:
        raise DataError(MSG_CONTINUUM_BAD_CSV.format(source=source, problem=str(exc)[:200])) from None
    if not stimuli:
        raise DataError(MSG_CONTINUUM_EMPTY.format(source=source))
    levels = len({s.alpha for s in stimuli})
    if levels < MIN_LEVELS:
        raise DataError(MSG_CONTINUUM_TOO_FEW_LEVELS.format(source=source, count=levels, need=MIN_LEVELS))
    return Continuum(tuple(stimuli), source)


def _row(row: list[str], at: dict[str, int], row_number: int, source: str, seen: dict[str, int]) -> Stimulus:
    """One checked stimulus from a CSV row (``seen``: the rows of the stimuli so far, by folded text)."""
    cell = row[at["stimulus"]] if at["stimulus"] < len(row) else ""
    text = _clean_text(cell)
    if not text or len(text) > MAX_STIMULUS_CHARS or _has_control(cell.replace("\t", " ")):
        raise DataError(MSG_CONTINUUM_BAD_STIMULUS.format(row=row_number, source=source, limit=MAX_STIMULUS_CHARS),
                        row=row_number)
    alpha = _alpha(row[at["alpha"]] if at["alpha"] < len(row) else "", row_number, source)
    group = None
    if "group" in at and at["group"] < len(row):
        raw = row[at["group"]]
        group = _clean_text(raw) or None
        if group is not None and (len(group) > MAX_GROUP_CHARS or _has_control(raw.replace("\t", " "))):
            raise DataError(MSG_CONTINUUM_BAD_GROUP.format(row=row_number, source=source, limit=MAX_GROUP_CHARS),
                            row=row_number)
    key = text.casefold()
    if key in seen:
        raise DataError(MSG_CONTINUUM_DUPLICATE.format(stimulus=text[:_QUOTE], source=source, first=seen[key],
                                                       second=row_number), row=row_number)
    seen[key] = row_number
    return Stimulus(text, alpha, group)


def load_continuum_csv(path: str | os.PathLike) -> Continuum:
    """A user's continuum CSV (:func:`parse_continuum_csv`), read at most :data:`MAX_CONTINUUM_BYTES` + 1 bytes.

    Parameters
    ----------
    path : path
        The CSV file.

    Returns
    -------
    Continuum
    """
    source = f"'{Path(path).name}'"
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONTINUUM_BYTES + 1)
    except OSError as exc:
        raise DataError(MSG_CONTINUUM_UNREADABLE.format(source=source, problem=exc.strerror or type(exc).__name__)
                        ) from None
    return parse_continuum_csv(data, source=source)


def name_continuum() -> Continuum:
    """The built-in continuum: 91 first names, α = share of female births 1950–2017 (SSA counts).

    Examples
    --------
    >>> c = name_continuum()
    >>> len(c), min(c.alphas) < 0.01, max(c.alphas) > 0.99
    (91, True, True)
    """
    data = (resources.files("biastest") / "data" / NAME_CONTINUUM_FILE).read_bytes()
    return parse_continuum_csv(data, source=f"the built-in name continuum ({NAME_CONTINUUM_FILE})")
