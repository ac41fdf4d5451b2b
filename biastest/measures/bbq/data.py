"""The BBQ benchmark's files as typed items: who is the target, who is not, which answer is "unknown".

BBQ (Parrish et al., Findings of ACL 2022; ``nyu-mll/BBQ``, CC BY 4.0) ships one JSON-lines file per
category (``Age.jsonl`` … ``Sexual_orientation.jsonl``: 58,492 items in 11 categories) and
``additional_metadata.csv``. :func:`load_bbq` reads them into :class:`BBQItem` records: the context (ambiguous
or disambiguated), the question (negative or non-negative), the three answers with their **roles** (the
target group of the stereotype, the other group, "unknown"), the correct answer (``label``) and the
**biased** answer — the target for a negative question, the non-target for a non-negative one.

Which answer is the target
--------------------------
Two readings are made of every item and compared (:attr:`BBQData.checks`):

* **Official** (used when ``additional_metadata.csv`` is there): its ``target_loc`` column, the reading of
  the authors' analysis. In this file ``target_loc`` is the position of the *biased* answer: the target for a
  negative question and the other group for a non-negative one (the JSONL's ``answer_info`` shows it: for
  every non-negative item it points at the non-stereotyped group), so the target of a non-negative item is the
  non-unknown answer that ``target_loc`` does not name. ``NA`` (16 Gender_identity items pairing "boy" with
  "man" or "woman" with "girl") means no single target: those items are **dropped**, as the official analysis
  drops them, and listed in :attr:`BBQData.dropped` with their ids. The file has 64 duplicated rows (Gender_identity,
  identical values): duplicates with equal values are read once, conflicting ones are an error.
* **From the JSONL** (:func:`derive_target`): the answer whose group (``answer_info``) is one of
  ``additional_metadata.stereotyped_groups``. Its quirks: in Race_x_gender and Race_x_SES the JSONL names only
  the race as stereotyped — the second attribute (``M``/``F``, ``lowSES``/``highSES``) is the CSV's
  ``Known_stereotyped_var2``, so without the CSV those two categories have no target; 344 Race_x_gender
  answers have an empty ``answer_info`` (all "The Latina woman"): the group is read from the answer's text
  (gender and race words); Nationality keeps the nationality in the first ``answer_info`` field (the second is
  the region); group labels such as ``lowSES-M-Black`` carry the race last. Without the CSV this reading is used.

On the published files the two readings agree on every item except the 16 dropped ones and 68 items
(52 Race_x_gender, 16 Race_x_SES) that pair an "African" with a "Black" or "African American" person: the
JSONL names only "Black"/"African American" as stereotyped, the official file reads the "African" answer as
the target. The
official reading is used (the scores stay comparable with the paper's) and the items are listed in
:attr:`BBQData.checks`.

Hostile input: every file is bounded (:data:`MAX_FILE_BYTES`, :data:`MAX_LINE_CHARS`, :data:`MAX_ITEMS`); a
malformed line is skipped and said (:data:`MSG_BAD_LINE` naming the file and the line; counted in
:attr:`BBQData.checks` as ``n_skipped``, the first ones quoted in ``skipped``), never a traceback; the rest of the
file is read. Windows line endings (``Religion.jsonl``) are read like any others.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biastest.errors import DataError

__all__ = [
    "CATEGORIES",
    "CONDITIONS",
    "METADATA_FILE",
    "MSG_BAD_LINE",
    "MSG_BAD_METADATA",
    "MSG_DUPLICATE_ID",
    "MSG_NO_CATEGORY_FILE",
    "MSG_NO_FOLDER",
    "MSG_TOO_LARGE",
    "POLARITIES",
    "ROLES",
    "BBQData",
    "BBQItem",
    "Dropped",
    "bbq_fingerprint",
    "derive_target",
    "load_bbq",
]

#: The eleven categories, as the files and the ``category`` field name them.
CATEGORIES = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
              "Race_ethnicity", "Race_x_SES", "Race_x_gender", "Religion", "SES", "Sexual_orientation")
#: Context conditions: ambiguous (the correct answer is "unknown") or disambiguated.
CONDITIONS = ("ambig", "disambig")
#: Question polarities: negative (the stereotype is about a bad trait) or non-negative.
POLARITIES = ("neg", "nonneg")
#: An answer's role.
ROLE_TARGET, ROLE_OTHER, ROLE_UNKNOWN = "target", "non-target", "unknown"
ROLES = (ROLE_TARGET, ROLE_OTHER, ROLE_UNKNOWN)
#: The official metadata file.
METADATA_FILE = "additional_metadata.csv"

#: Bounds on what is read (the published files are at most 13 MB, lines under 2,000 characters).
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 50_000
MAX_ITEMS = 200_000
MAX_TEXT_CHARS = 10_000

MSG_NO_FOLDER = (
    "The BBQ folder '{path}' does not exist. Download the data of nyu-mll/BBQ (the data/ folder: one .jsonl file "
    "per category and additional_metadata.csv) and give that folder (--bbq-dir)."
)
MSG_NO_CATEGORY_FILE = "The BBQ folder '{path}' has no file {name} (category {category})."
MSG_TOO_LARGE = "The BBQ file {name} is too large ({size:,} bytes; at most {limit:,})."
MSG_BAD_LINE = "The BBQ file {name}, line {line}: {problem}."
#: How many skipped lines a category's checks quote (all are counted).
MAX_SKIPPED_SHOWN = 20
MSG_DUPLICATE_ID = "The BBQ file {name}, line {line}: example_id {example_id} appears twice."
MSG_BAD_METADATA = "The BBQ metadata file {name}, line {line}: {problem}."

#: Why an item was dropped.
DROP_NO_TARGET = "no single target: the official metadata has target_loc NA"
DROP_UNDERIVED = "no single target in answer_info and stereotyped_groups ({why})"

_GENDER_OF = {"woman": "f", "girl": "f", "man": "m", "boy": "m", "f": "f", "m": "m"}
_FEMALE_WORDS = {"woman", "women", "girl", "lady", "mother", "wife", "latina"}
_MALE_WORDS = {"man", "men", "boy", "gentleman", "father", "husband", "latino"}
#: Race words an answer text may use, longest first (``Latina`` is the feminine of ``Latino``).
_RACE_WORDS = (("african american", "African American"), ("native american", "Native American"),
               ("middle eastern", "Middle Eastern"), ("south american", "South American"), ("caucasian", "Caucasian"),
               ("european", "European"), ("african", "African"), ("hispanic", "Hispanic"), ("latina", "Latino"),
               ("latino", "Latino"), ("jewish", "Jewish"), ("black", "Black"), ("white", "White"),
               ("asian", "Asian"), ("arab", "Arab"), ("roma", "Roma"))
_MARKERS = {"f", "m", "lowses", "highses"}


def _norm(text: str) -> str:
    """Lower case, letters and digits only (``low SES`` and ``lowSES`` read alike)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class BBQItem:
    """One BBQ question.

    Attributes
    ----------
    example_id : int
        As in the file (unique within a category).
    category : str
        One of :data:`CATEGORIES`.
    question_index : str
        The template (with ``category``, the cluster of the intervals).
    polarity : {"neg", "nonneg"}
    condition : {"ambig", "disambig"}
    context, question : str
    answers : tuple of 3 str
        ``ans0``, ``ans1``, ``ans2`` in the file's order.
    roles : tuple of 3 str
        Each answer's role (:data:`ROLES`), same order.
    label : int
        Index of the correct answer.
    groups : tuple of 3 str
        Each answer's group label as read (``answer_info``'s, inferred from the text where empty; ``unknown``).
    target_from : {"metadata", "answer_info"}
        Which reading gave the target.
    subcategory : str
    """

    example_id: int
    category: str
    question_index: str
    polarity: str
    condition: str
    context: str
    question: str
    answers: tuple[str, str, str]
    roles: tuple[str, str, str]
    label: int
    groups: tuple[str, str, str] = ("", "", "")
    target_from: str = "metadata"
    subcategory: str = ""

    @property
    def target(self) -> int:
        """Index of the target group's answer."""
        return self.roles.index(ROLE_TARGET)

    @property
    def other(self) -> int:
        """Index of the non-target group's answer."""
        return self.roles.index(ROLE_OTHER)

    @property
    def unknown(self) -> int:
        """Index of the "unknown" answer."""
        return self.roles.index(ROLE_UNKNOWN)

    @property
    def biased(self) -> int:
        """Index of the biased answer: the target for a negative question, the non-target for a non-negative one."""
        return self.target if self.polarity == "neg" else self.other

    @property
    def template(self) -> str:
        """The cluster: ``category/question_index``."""
        return f"{self.category}/{self.question_index}"

    @property
    def key(self) -> str:
        """A unique id across categories: ``category:example_id``."""
        return f"{self.category}:{self.example_id}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"example_id": self.example_id, "category": self.category, "question_index": self.question_index,
                "polarity": self.polarity, "condition": self.condition, "context": self.context,
                "question": self.question, "answers": list(self.answers), "roles": list(self.roles),
                "label": self.label, "groups": list(self.groups), "target_from": self.target_from,
                "subcategory": self.subcategory}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BBQItem:
        """The item :meth:`as_dict` wrote."""
        return cls(example_id=int(data["example_id"]), category=str(data["category"]),
                   question_index=str(data["question_index"]), polarity=str(data["polarity"]),
                   condition=str(data["condition"]), context=str(data["context"]), question=str(data["question"]),
                   answers=tuple(str(a) for a in data["answers"]), roles=tuple(str(r) for r in data["roles"]),
                   label=int(data["label"]), groups=tuple(str(g) for g in data.get("groups", ("", "", ""))),
                   target_from=str(data.get("target_from", "metadata")), subcategory=str(data.get("subcategory", "")))


@dataclass(frozen=True)
class Dropped:
    """An item left out, with its ids and why."""

    category: str
    example_id: int
    question_index: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"category": self.category, "example_id": self.example_id, "question_index": self.question_index,
                "reason": self.reason}


@dataclass(frozen=True)
class BBQData:
    """What :func:`load_bbq` read.

    Attributes
    ----------
    items : tuple of BBQItem
        In category order, then file order.
    dropped : tuple of Dropped
    checks : dict
        Per category: ``n_items`` (lines read), ``n_target`` (items with a target), ``n_dropped``,
        ``n_official`` (target from the metadata file), ``n_agree`` (both readings agree), and
        ``disagree`` (``example_id`` list where the JSONL's reading differs from the official one).
    folder : str
    metadata : bool
        Whether ``additional_metadata.csv`` was read.
    """

    items: tuple[BBQItem, ...]
    dropped: tuple[Dropped, ...] = ()
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    folder: str = ""
    metadata: bool = False

    def provenance(self) -> dict[str, Any]:
        """What a result records of the data (the dropped items with their ids, the checks' counts)."""
        return {"folder": self.folder, "metadata": self.metadata, "n_items": len(self.items),
                "dropped": [d.as_dict() for d in self.dropped],
                "checks": {c: {k: v for k, v in info.items()} for c, info in self.checks.items()}}


# --------------------------------------------------------------------------- reading
def _read_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DataError(MSG_TOO_LARGE.format(name=path.name, size=size, limit=MAX_FILE_BYTES))
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(MSG_BAD_LINE.format(name=path.name, line=1, problem=f"not UTF-8 text ({exc.reason})")) from None


def _text(raw: Mapping[str, Any], key: str, *, empty: bool = False) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ValueError(f"'{key}' must be a non-empty text")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"'{key}' is longer than {MAX_TEXT_CHARS:,} characters")
    return value


def _answer_info(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    info = raw.get("answer_info")
    if not isinstance(info, Mapping):
        raise ValueError("'answer_info' must be an object")
    out = []
    for i in range(3):
        pair = info.get(f"ans{i}")
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise ValueError(f"'answer_info.ans{i}' must be a list of two texts")
        out.append((pair[0], pair[1]))
    return tuple(out)


@dataclass(frozen=True)
class _Raw:
    """One JSONL line, checked."""

    example_id: int
    question_index: str
    polarity: str
    condition: str
    context: str
    question: str
    answers: tuple[str, str, str]
    label: int
    info: tuple[tuple[str, str], ...]
    stereotyped: tuple[str, ...]
    subcategory: str


def _parse_line(raw: Any, category: str) -> _Raw:
    """A checked line; ValueError (with the problem in words) otherwise."""
    if not isinstance(raw, Mapping):
        raise ValueError("not a JSON object")
    eid = raw.get("example_id")
    if not isinstance(eid, int) or isinstance(eid, bool) or eid < 0:
        raise ValueError("'example_id' must be a whole number ≥ 0")
    if raw.get("category") != category:
        raise ValueError(f"'category' is {str(raw.get('category'))[:40]!r}, not {category!r}")
    qi = raw.get("question_index")
    if not isinstance(qi, str | int) or isinstance(qi, bool) or not str(qi).strip() or len(str(qi)) > 20:
        raise ValueError("'question_index' must be a short text or number")
    polarity, condition = raw.get("question_polarity"), raw.get("context_condition")
    if polarity not in POLARITIES:
        raise ValueError(f"'question_polarity' must be one of {', '.join(POLARITIES)}")
    if condition not in CONDITIONS:
        raise ValueError(f"'context_condition' must be one of {', '.join(CONDITIONS)}")
    label = raw.get("label")
    if not isinstance(label, int) or isinstance(label, bool) or label not in (0, 1, 2):
        raise ValueError("'label' must be 0, 1 or 2")
    meta = raw.get("additional_metadata")
    if not isinstance(meta, Mapping):
        raise ValueError("'additional_metadata' must be an object")
    groups = meta.get("stereotyped_groups")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups) or len(groups) > 50:
        raise ValueError("'additional_metadata.stereotyped_groups' must be a list of texts")
    answers = tuple(_text(raw, f"ans{i}") for i in range(3))
    return _Raw(eid, str(qi).strip(), polarity, condition, _text(raw, "context"), _text(raw, "question"),
                answers, label, _answer_info(raw), tuple(groups), str(meta.get("subcategory") or "")[:200])


def _read_category(folder: Path, category: str) -> tuple[list[tuple[int, _Raw]], list[str]]:
    """``(line number, checked line)`` of one category's file, and why each malformed line was skipped.

    A malformed line (not JSON, a field of the wrong kind, too long, an ``example_id`` seen before) is skipped and
    said (:data:`MSG_BAD_LINE`, :data:`MSG_DUPLICATE_ID`): the rest of the file is read. A file that cannot be read
    at all, or holds more than :data:`MAX_ITEMS` items, is an error.
    """
    path = folder / f"{category}.jsonl"
    if not path.is_file():
        raise DataError(MSG_NO_CATEGORY_FILE.format(path=folder, name=path.name, category=category))
    text = _read_text(path)
    out: list[tuple[int, _Raw]] = []
    skipped: list[str] = []
    seen: set[int] = set()
    for number, line in enumerate(text.splitlines(), start=1):  # \r\n and \n alike
        if not line.strip():
            continue
        if len(out) + len(skipped) >= MAX_ITEMS:
            raise DataError(MSG_BAD_LINE.format(name=path.name, line=number, problem=f"more than {MAX_ITEMS:,} items"))
        if len(line) > MAX_LINE_CHARS:
            skipped.append(MSG_BAD_LINE.format(name=path.name, line=number,
                                               problem=f"longer than {MAX_LINE_CHARS:,} characters"))
            continue
        try:
            raw = _parse_line(json.loads(line), category)
        except (ValueError, RecursionError) as exc:
            problem = "not valid JSON" if isinstance(exc, json.JSONDecodeError | RecursionError) else str(exc)
            skipped.append(MSG_BAD_LINE.format(name=path.name, line=number, problem=problem))
            continue
        if raw.example_id in seen:
            skipped.append(MSG_DUPLICATE_ID.format(name=path.name, line=number, example_id=raw.example_id))
            continue
        seen.add(raw.example_id)
        out.append((number, raw))
    return out, skipped


@dataclass(frozen=True)
class _Meta:
    target_loc: int | None  # None: NA
    var2: str


def _read_metadata(path: Path) -> dict[tuple[str, int], _Meta]:
    """``(category, example_id) → (target_loc, Known_stereotyped_var2)`` of ``additional_metadata.csv``."""
    text = _read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    need = {"category", "example_id", "target_loc", "Known_stereotyped_var2"}
    if reader.fieldnames is None or not need <= set(reader.fieldnames):
        raise DataError(MSG_BAD_METADATA.format(name=path.name, line=1,
                                                problem=f"the header lacks {', '.join(sorted(need))}"))
    out: dict[tuple[str, int], _Meta] = {}
    try:
        for row in reader:
            line = reader.line_num
            if len(out) > MAX_ITEMS:
                raise DataError(MSG_BAD_METADATA.format(name=path.name, line=line, problem="too many rows"))
            try:
                key = (str(row["category"]), int(str(row["example_id"])))
                loc = str(row["target_loc"]).strip()
                meta = _Meta(None if loc in ("NA", "") else int(loc), str(row["Known_stereotyped_var2"] or "")[:40])
            except (TypeError, ValueError):
                raise DataError(MSG_BAD_METADATA.format(name=path.name, line=line,
                                                        problem="example_id and target_loc must be whole numbers "
                                                                "(target_loc may be NA)")) from None
            if meta.target_loc not in (None, 0, 1, 2):
                raise DataError(MSG_BAD_METADATA.format(name=path.name, line=line, problem="target_loc must be 0-2"))
            if key in out and out[key] != meta:
                raise DataError(MSG_BAD_METADATA.format(name=path.name, line=line,
                                                        problem=f"{key[0]} example {key[1]} appears twice with "
                                                                "different values"))
            out[key] = meta
    except csv.Error as exc:
        raise DataError(MSG_BAD_METADATA.format(name=path.name, line=reader.line_num, problem=str(exc))) from None
    return out


# --------------------------------------------------------------------------- the target
def _infer_label(text: str) -> str:
    """A ``G-Race`` label from an answer's text (for the empty ``answer_info`` of Race_x_gender), or ``""``."""
    low = text.lower()
    words = set(re.findall(r"[a-z]+", low))
    gender = "F" if words & _FEMALE_WORDS else "M" if words & _MALE_WORDS else ""
    race = next((name for word, name in _RACE_WORDS if re.search(rf"\b{word}\b", low)), "")
    return f"{gender}-{race}" if gender and race else ""


def _groups_of(category: str, info: tuple[str, str], text: str) -> tuple[str, frozenset[str]]:
    """The answer's group label (as read) and the normalised names it matches."""
    name, label = info
    if label == "unknown":
        return label, frozenset()
    if category == "Nationality":  # nationality first, region second
        return name, frozenset({_norm(name)})
    if not label.strip():
        label = _infer_label(text)
    if category.startswith("Race"):
        parts = label.split("-")
        return label, frozenset({_norm(parts[-1]), *(_norm(p) for p in parts[:-1] if _norm(p) in _MARKERS)})
    names = {_norm(label)}
    if category == "Gender_identity":
        if label.lower() in _GENDER_OF:
            names.add(_GENDER_OF[label.lower()])
        if label.lower().startswith("trans"):
            names.add("trans")
    return label, frozenset(names)


def derive_target(category: str, raw: _Raw, var2: str | None) -> tuple[int | None, str, tuple[str, str, str]]:
    """The target's index read from the JSONL alone (None with the reason when there is no single one).

    An answer is the target when one of its group names is in ``stereotyped_groups`` (letters and digits
    compared, case aside) and, for Race_x_gender and Race_x_SES, its second attribute equals ``var2`` (the
    metadata's ``Known_stereotyped_var2``; None: unknown, no target).

    Returns
    -------
    (index or None, reason, group labels of the three answers)
    """
    stereotyped = {_norm(g) for g in raw.stereotyped}
    labels, hits = [], []
    for i in range(3):
        label, names = _groups_of(category, raw.info[i], raw.answers[i])
        labels.append(label)
        if raw.info[i][1] == "unknown":
            continue
        hit = bool(names & stereotyped)
        if category in ("Race_x_gender", "Race_x_SES"):
            hit = hit and var2 is not None and _norm(var2) in names
        if hit:
            hits.append(i)
    if category in ("Race_x_gender", "Race_x_SES") and var2 is None:
        return None, f"{category} needs {METADATA_FILE} for its second attribute", tuple(labels)
    if len(hits) != 1:
        return None, f"{len(hits)} answers match {', '.join(raw.stereotyped) or 'no group'}", tuple(labels)
    return hits[0], "", tuple(labels)


def _unknown_of(raw: _Raw) -> int | None:
    found = [i for i in range(3) if raw.info[i][1] == "unknown"]
    return found[0] if len(found) == 1 else None


def _roles(target: int, unknown: int) -> tuple[str, str, str]:
    return tuple(ROLE_TARGET if i == target else ROLE_UNKNOWN if i == unknown else ROLE_OTHER
                 for i in range(3))  # type: ignore[return-value]


def _category_items(folder: Path, category: str, meta: dict[tuple[str, int], _Meta] | None,
                    ) -> tuple[list[BBQItem], list[Dropped], dict[str, Any]]:
    items, dropped, disagree = [], [], []
    n_official = n_agree = 0
    name = f"{category}.jsonl"
    lines, skipped = _read_category(folder, category)
    for number, raw in lines:
        unknown = _unknown_of(raw)
        if unknown is None:
            skipped.append(MSG_BAD_LINE.format(name=name, line=number, problem="no single 'unknown' answer"))
            continue
        if raw.condition == "ambig" and raw.label != unknown:
            skipped.append(MSG_BAD_LINE.format(
                name=name, line=number, problem="an ambiguous context whose correct answer is not 'unknown'"))
            continue
        m = None if meta is None else meta.get((category, raw.example_id))
        derived, why, labels = derive_target(category, raw, None if m is None else m.var2)
        if m is not None:
            if m.target_loc is None or m.target_loc == unknown:
                dropped.append(Dropped(category, raw.example_id, raw.question_index, DROP_NO_TARGET))
                continue
            # target_loc is the biased answer: the target of a negative question, the other group of a non-negative one
            target = m.target_loc if raw.polarity == "neg" else 3 - unknown - m.target_loc
            n_official += 1
            if derived == target:
                n_agree += 1
            else:
                disagree.append(raw.example_id)
            source = "metadata"
        elif derived is None:
            dropped.append(Dropped(category, raw.example_id, raw.question_index, DROP_UNDERIVED.format(why=why)))
            continue
        else:
            target, source = derived, "answer_info"
        items.append(BBQItem(raw.example_id, category, raw.question_index, raw.polarity, raw.condition, raw.context,
                             raw.question, raw.answers, _roles(target, unknown), raw.label, labels, source,
                             raw.subcategory))
    checks = {"n_items": len(lines), "n_target": len(items), "n_dropped": len(dropped), "n_official": n_official,
              "n_agree": n_agree, "disagree": disagree, "n_skipped": len(skipped),
              "skipped": skipped[:MAX_SKIPPED_SHOWN]}
    return items, dropped, checks


def bbq_fingerprint(folder: str | Path, categories: Iterable[str] | None = None) -> dict[str, Any]:
    """SHA-256 of the files :func:`load_bbq` would read (the categories' JSONL files, then the metadata file).

    Returns
    -------
    dict
        ``sha256``, ``count`` (files), ``source`` (folder and file names).

    Raises
    ------
    DataError
        :data:`MSG_NO_FOLDER` or :data:`MSG_NO_CATEGORY_FILE`.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DataError(MSG_NO_FOLDER.format(path=folder))
    names = [f"{c}.jsonl" for c in (tuple(categories) if categories is not None else CATEGORIES)]
    for name in names:
        if not (root / name).is_file():
            raise DataError(MSG_NO_CATEGORY_FILE.format(path=folder, name=name, category=name.removesuffix(".jsonl")))
    if (root / METADATA_FILE).is_file():
        names.append(METADATA_FILE)
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0")
        with (root / name).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return {"sha256": h.hexdigest(), "count": len(names), "source": {"from": "bbq", "folder": str(root),
                                                                    "files": names}}


def load_bbq(folder: str | Path, categories: Iterable[str] | None = None, *, metadata: bool = True) -> BBQData:
    """Read the BBQ files of ``categories`` (default all) from ``folder``.

    Parameters
    ----------
    folder : path
        The folder with ``<Category>.jsonl`` files (and ``additional_metadata.csv``).
    categories : iterable of str, optional
        Names from :data:`CATEGORIES` (checked by the options).
    metadata : bool
        Read ``additional_metadata.csv`` when it is there (the official target; Race_x_* need it).

    Raises
    ------
    DataError
        :data:`MSG_NO_FOLDER`, :data:`MSG_NO_CATEGORY_FILE`, :data:`MSG_TOO_LARGE`, :data:`MSG_BAD_LINE`,
        :data:`MSG_DUPLICATE_ID`, :data:`MSG_BAD_METADATA`.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DataError(MSG_NO_FOLDER.format(path=folder))
    wanted: Sequence[str] = tuple(categories) if categories is not None else CATEGORIES
    meta_path = root / METADATA_FILE
    meta = _read_metadata(meta_path) if metadata and meta_path.is_file() else None
    items: list[BBQItem] = []
    dropped: list[Dropped] = []
    checks: dict[str, dict[str, Any]] = {}
    for category in wanted:
        got, gone, check = _category_items(root, category, meta)
        items.extend(got)
        dropped.extend(gone)
        checks[category] = check
    return BBQData(tuple(items), tuple(dropped), checks, str(root), meta is not None)
