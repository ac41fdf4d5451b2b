"""Importers: existing public bias-test data as ready test items.

* The original BiasTestGPT CSV files: ``*_pairs.csv`` (columns ``group``,
  ``group_term``, ``template``, ``sent_att_1``, ``sent_att_2``,
  ``att_term_1``, ``att_term_2``, ``label_1``, ``label_2``, ``discarded`` …)
  become :class:`~biastest.records.SentencePair` records and
  ``*_sentences.csv`` (``Bias Name``, ``Attribute word``, ``Group Term``,
  ``Generated sentence``, ``Template version``, ``Discarded`` …) become
  :class:`~biastest.records.TestSentence` records. Rows marked discarded are
  skipped and counted. Note the original's naming in the pairs files: the
  column ``group_term`` holds the **attribute** term and ``att_term_1/2`` hold
  the two **social-group** terms (``math`` / ``male``, ``female``); the
  sentence labelled ``stereotype`` becomes the stereotyped side.
* CrowS-Pairs (``sent_more``, ``sent_less``, ``stereo_antistereo``,
  ``bias_type``): the direction is handled exactly as the CrowS-Pairs metric
  (``nyu-mll/crows-pairs`` ``metric.py``) does. It reads ``sent1, sent2 =
  sent_more, sent_less`` for ``stereo`` rows and ``sent_less, sent_more`` for
  ``antistereo`` rows, and counts a pair as biased when ``sent1`` scores
  higher (stereo) or ``sent2`` scores higher (antistereo) — in both cases
  when **``sent_more``** is preferred. So ``sent_more`` is the stereotyped
  side of every pair; in ``antistereo`` rows ``sent_less`` is the sentence
  that violates a stereotype about the disadvantaged group, and ``sent_more``
  says the same of the advantaged group. The direction is kept in the pair's
  provenance (``crows_direction``) so results can be split by it, and
  ``bias_type`` becomes the category.
* StereoSet intrasentence (``dev.json``): each context with ``BLANK`` and its
  sentences with gold labels becomes a pair (gold ``stereotype`` sentence,
  gold ``anti-stereotype`` sentence); the ``unrelated`` sentence and the
  words filled in are kept in the provenance (for the language-model score).

Files come from the user (an upload: a path, bytes or a file object); the
product never reads the reference data folder itself.

:func:`pull_public_biastestgpt` brings the public BiasTestGPT sentence dataset
(``AnimaLab/bias-test-gpt-sentences`` on the Hugging Face Hub, one CSV per
group term) into the local store, read-only, when the network allows and the
user has not configured a dataset of their own; otherwise it says why it was
skipped (it never raises for a missing network).
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from biastest import settings
from biastest.errors import DataError
from biastest.paths import UnsafeNameError, resolve_under
from biastest.provenance import provenance
from biastest.records import SentencePair, TestSentence
from biastest.store.hub import hub_api, is_network_error
from biastest.store.local import AddReport, DatasetStore
from biastest.words import plural, plural_word

__all__ = [
    "ImportResult",
    "PublicPull",
    "PUBLIC_BIASTESTGPT_REPO",
    "read_biastestgpt_csv",
    "read_biastestgpt_pairs",
    "read_biastestgpt_sentences",
    "read_crows_pairs",
    "read_stereoset_intrasentence",
    "import_file",
    "pull_public_biastestgpt",
]

log = logging.getLogger(__name__)

PUBLIC_BIASTESTGPT_REPO = "AnimaLab/bias-test-gpt-sentences"

SKIP_DISCARDED = "marked discarded"
SKIP_EMPTY = "a sentence or term is missing"
SKIP_LABELS = "labels are not one stereotype and one anti-stereotype"
SKIP_DIRECTION = "direction is neither stereo nor antistereo"
SKIP_GOLD = "no gold stereotype and anti-stereotype sentence"
SKIP_MALFORMED = "not a StereoSet example (a field is missing or of the wrong type)"

MSG_IMPORTED = "Imported {n_items} {kind} from {name} ({n_rows} read{details})."
MSG_MISSING_COLUMNS = (
    "The file {name} is not a {kind} file: it lacks the column(s) {missing}. Expected columns: {expected}."
)
MSG_UNKNOWN_CSV = (
    "The file {name} does not look like BiasTestGPT data. A pairs file has the columns {pairs}; a sentences file "
    "has {sentences}."
)
MSG_UNREADABLE = "The file {name} cannot be read as {kind} ({problem}). Check that it is the right file."
MSG_UNKNOWN_KIND = "Unknown kind of file '{kind}'. Choose one of: {choices}."

PULL_DONE = "pulled"
PULL_UP_TO_DATE = "up-to-date"
PULL_OFFLINE = "offline"
PULL_CONFIGURED = "skipped-configured"
PULL_FAILED = "failed"
#: The problem named when a JSON file nests too deeply to be read.
MSG_TOO_DEEP = "it nests lists or objects too deeply"
MSG_PULL_DONE = "Loaded {rows} public BiasTestGPT sentences from {files} new file(s) of {repo} into the local store."
MSG_PULL_UP_TO_DATE = "The public BiasTestGPT sentences from {repo} are already in the local store."
MSG_PULL_OFFLINE = (
    "The public BiasTestGPT sentences were not loaded: there is no connection to the Hugging Face Hub. "
    "Retrieval uses the sentences already stored here; generate new ones or import a file."
)
MSG_PULL_CONFIGURED = (
    "The public BiasTestGPT sentences were not loaded because your own dataset ({dataset}) is configured."
)
MSG_PULL_FAILED = (
    "The public BiasTestGPT sentences could not be loaded from {repo} ({problem}). Retrieval uses the sentences "
    "already stored here."
)

PAIRS_COLUMNS = ("group_term", "template", "sent_att_1", "sent_att_2", "att_term_1", "att_term_2", "label_1",
                 "label_2")
SENTENCES_COLUMNS = ("Bias Name", "Attribute word", "Group Term", "Generated sentence", "Template version")
CROWS_COLUMNS = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")


@dataclass(frozen=True)
class ImportResult:
    """Records read from one file and what was left out.

    Attributes
    ----------
    kind : str
        ``biastestgpt-pairs``, ``biastestgpt-sentences``, ``crows-pairs``,
        ``stereoset-intrasentence`` or ``biastestgpt-public``.
    name : str
        The file's name (no folder).
    sentences, pairs : tuple
    rows_read : int
    discarded : int
        Rows the file itself marks as discarded (skipped).
    skipped : dict
        Reason → rows left out (``discarded`` included).
    """

    kind: str
    name: str
    sentences: tuple[TestSentence, ...]
    pairs: tuple[SentencePair, ...]
    rows_read: int
    discarded: int
    skipped: dict[str, int]
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def message(self) -> str:
        sentences_only = self.kind in ("biastestgpt-sentences", "biastestgpt-public")
        n_items = len(self.sentences) if sentences_only else len(self.pairs)
        kind = plural_word(n_items, "sentence" if sentences_only else "sentence pair")
        details = "".join(f"; {n} skipped: {why}" for why, n in self.skipped.items() if n)
        return MSG_IMPORTED.format(n_items=n_items, kind=kind, name=self.name,
                                   n_rows=plural(self.rows_read, "row"), details=details)

    def store_into(self, store: DatasetStore, *, local_only: bool = False) -> AddReport:
        """Add the records to ``store``."""
        return store.add(self.sentences, self.pairs, local_only=local_only)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "sentences": len(self.sentences), "pairs": len(self.pairs),
                "rows_read": self.rows_read, "discarded": self.discarded, "skipped": dict(self.skipped),
                "message": self.message, "provenance": self.provenance}


Source = str | os.PathLike | bytes | IO[bytes] | IO[str]


def _name_of(src: Source, name: str | None) -> str:
    if name:
        return os.path.basename(name)
    if isinstance(src, str | os.PathLike):
        return os.path.basename(os.fspath(src))
    fname = getattr(src, "name", None)
    return os.path.basename(fname) if isinstance(fname, str) and fname else "uploaded file"


def _read_bytes(src: Source) -> bytes:
    if isinstance(src, bytes):
        return src
    if isinstance(src, str | os.PathLike):
        return Path(src).read_bytes()
    data = src.read()
    return data.encode("utf-8") if isinstance(data, str) else data


def _read_csv(src: Source, name: str, kind: str):
    try:
        raw = _read_bytes(src)
        return pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataError(MSG_UNREADABLE.format(name=name, kind=kind, problem=str(exc)[:160])) from None


def _need(df, columns, name: str, kind: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(MSG_MISSING_COLUMNS.format(name=name, kind=kind, missing=", ".join(missing),
                                                   expected=", ".join(columns)))


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() not in ("", "0", "false", "nan", "no", "none")


def _clean(value: Any) -> str:
    return str(value).strip() if value is not None else ""


# ------------------------------------------------------------- BiasTestGPT
def read_biastestgpt_pairs(src: Source, *, name: str | None = None) -> ImportResult:
    """Read an original BiasTestGPT ``*_pairs.csv`` file into sentence pairs."""
    name = _name_of(src, name)
    df = _read_csv(src, name, "BiasTestGPT pairs")
    _need(df, PAIRS_COLUMNS, name, "BiasTestGPT pairs")
    skipped = {SKIP_DISCARDED: 0, SKIP_EMPTY: 0, SKIP_LABELS: 0}
    pairs = []
    has_discard = "discarded" in df.columns
    for i, row in enumerate(df.to_dict("records")):
        if has_discard and _truthy(row.get("discarded", "")):
            skipped[SKIP_DISCARDED] += 1
            continue
        s1, s2 = _clean(row["sent_att_1"]), _clean(row["sent_att_2"])
        t1, t2, attr = _clean(row["att_term_1"]), _clean(row["att_term_2"]), _clean(row["group_term"])
        if not (s1 and s2 and t1 and t2 and attr):
            skipped[SKIP_EMPTY] += 1
            continue
        labels = (_clean(row["label_1"]).lower(), _clean(row["label_2"]).lower())
        if labels == ("stereotype", "anti-stereotype"):
            st, an, gst, gan = s1, s2, t1, t2
        elif labels == ("anti-stereotype", "stereotype"):
            st, an, gst, gan = s2, s1, t2, t1
        else:
            skipped[SKIP_LABELS] += 1
            continue
        bias = _clean(row.get("group", ""))
        prov = {"file": name, "row": i}
        if _clean(row.get("add_refs", "")):
            prov["agreement_words"] = _clean(row["add_refs"])
        pairs.append(SentencePair(stereotyped=st, anti_stereotyped=an, attribute_term=attr,
                                  group_term_stereotyped=gst, group_term_anti=gan,
                                  template=_clean(row["template"]), category=bias, source="imported:biastestgpt",
                                  spec_name=bias, provenance=prov))
    return ImportResult("biastestgpt-pairs", name, (), tuple(pairs), len(df), skipped[SKIP_DISCARDED], skipped,
                        provenance(method="import", importer="biastestgpt-pairs", file=name))


def read_biastestgpt_sentences(src: Source, *, name: str | None = None) -> ImportResult:
    """Read an original BiasTestGPT ``*_sentences.csv`` file into test sentences."""
    name = _name_of(src, name)
    df = _read_csv(src, name, "BiasTestGPT sentences")
    _need(df, SENTENCES_COLUMNS, name, "BiasTestGPT sentences")
    return _sentences_from(df, name, "biastestgpt-sentences", text="Generated sentence", group="Group Term",
                           attribute="Attribute word", template="Template version", bias="Bias Name",
                           discarded="Discarded")


def _sentences_from(df, name: str, kind: str, *, text: str, group: str, attribute: str, template: str | None,
                    bias: str | None, discarded: str | None, source: str = "imported:biastestgpt",
                    extra: Mapping[str, str] | None = None) -> ImportResult:
    skipped = {SKIP_DISCARDED: 0, SKIP_EMPTY: 0}
    out = []
    for i, row in enumerate(df.to_dict("records")):
        if discarded and discarded in row and _truthy(row[discarded]):
            skipped[SKIP_DISCARDED] += 1
            continue
        t, g, a = _clean(row[text]), _clean(row[group]), _clean(row[attribute])
        if not (t and g and a):
            skipped[SKIP_EMPTY] += 1
            continue
        prov: dict[str, Any] = {"file": name, "row": i}
        for key, col in (extra or {}).items():
            if col in row and _clean(row[col]):
                prov[key] = _clean(row[col])
        out.append(TestSentence(text=t, group_term=g, attribute_term=a,
                                template=_clean(row[template]) if template and template in row else "",
                                source=source, spec_name=_clean(row[bias]) if bias and bias in row else "",
                                provenance=prov))
    return ImportResult(kind, name, tuple(out), (), len(df), skipped[SKIP_DISCARDED], skipped,
                        provenance(method="import", importer=kind, file=name))


def read_biastestgpt_csv(src: Source, *, name: str | None = None) -> ImportResult:
    """Read any BiasTestGPT CSV, recognising its schema from the columns.

    Pairs files and sentences files of the original repository, and the
    per-group-term files of the public Hub dataset (columns ``Test
    sentence``, ``Group term``, ``Attribute term``, or ``sentence``,
    ``org_grp_term``, ``att_term``) are recognised.
    """
    name = _name_of(src, name)
    raw = _read_bytes(src)
    df = _read_csv(raw, name, "BiasTestGPT data")
    cols = set(df.columns)
    if {"sent_att_1", "sent_att_2", "label_1", "label_2", "att_term_1", "att_term_2"} <= cols and "group_term" in cols:
        return read_biastestgpt_pairs(raw, name=name)
    if "Generated sentence" in cols:
        return read_biastestgpt_sentences(raw, name=name)
    extra = {"generator_model": "gen_model", "type": "type", "bias_spec": "bias_spec"}
    if {"Test sentence", "Group term", "Attribute term"} <= cols:
        return _sentences_from(df, name, "biastestgpt-public", text="Test sentence", group="Group term",
                               attribute="Attribute term", template="Template" if "Template" in cols else None,
                               bias=None, discarded=None, source=f"imported:{PUBLIC_BIASTESTGPT_REPO}", extra=extra)
    if {"sentence", "org_grp_term", "att_term"} <= cols:
        return _sentences_from(df, name, "biastestgpt-public", text="sentence", group="org_grp_term",
                               attribute="att_term", template="template" if "template" in cols else None,
                               bias=None, discarded=None, source=f"imported:{PUBLIC_BIASTESTGPT_REPO}", extra=extra)
    raise DataError(MSG_UNKNOWN_CSV.format(name=name, pairs=", ".join(PAIRS_COLUMNS),
                                           sentences=", ".join(SENTENCES_COLUMNS)))


# --------------------------------------------------------------- CrowS-Pairs
def read_crows_pairs(src: Source, *, name: str | None = None) -> ImportResult:
    """Read CrowS-Pairs (``crows_pairs_anonymized.csv``) into sentence pairs.

    ``stereotyped`` is ``sent_more`` for both directions — the sentence whose
    preference the CrowS-Pairs metric counts as bias (see the module notes).
    """
    name = _name_of(src, name)
    df = _read_csv(src, name, "CrowS-Pairs")
    _need(df, CROWS_COLUMNS, name, "CrowS-Pairs")
    skipped = {SKIP_EMPTY: 0, SKIP_DIRECTION: 0}
    pairs = []
    index_col = df.columns[0] if df.columns[0] in ("", "Unnamed: 0") else None
    for i, row in enumerate(df.to_dict("records")):
        more, less = _clean(row["sent_more"]), _clean(row["sent_less"])
        direction = _clean(row["stereo_antistereo"]).lower()
        if not (more and less):
            skipped[SKIP_EMPTY] += 1
            continue
        if direction not in ("stereo", "antistereo"):
            skipped[SKIP_DIRECTION] += 1
            continue
        prov = {"file": name, "row": i, "crows_direction": direction,
                "crows_index": _clean(row[index_col]) if index_col else str(i)}
        pairs.append(SentencePair(stereotyped=more, anti_stereotyped=less, category=_clean(row["bias_type"]),
                                  source="imported:crows-pairs", provenance=prov))
    return ImportResult("crows-pairs", name, (), tuple(pairs), len(df), 0, skipped,
                        provenance(method="import", importer="crows-pairs", file=name))


# ----------------------------------------------------------------- StereoSet
def _filled_word(context: str, sentence: str) -> str:
    if "BLANK" not in context:
        return ""
    pre, post = context.split("BLANK", 1)
    if sentence.lower().startswith(pre.lower()) and sentence.lower().endswith(post.lower()):
        return sentence[len(pre): len(sentence) - len(post)].strip()
    return ""


def read_stereoset_intrasentence(src: Source, *, name: str | None = None) -> ImportResult:
    """Read StereoSet (``dev.json``) intrasentence examples into sentence pairs (gold labels)."""
    name = _name_of(src, name)
    try:
        doc = json.loads(_read_bytes(src))
        items = doc["data"]["intrasentence"]
        if not isinstance(items, list):
            raise TypeError("'intrasentence' is not a list")
    except RecursionError:  # a JSON nested thousands deep: a hostile or broken file, not StereoSet
        raise DataError(MSG_UNREADABLE.format(name=name, kind="StereoSet", problem=MSG_TOO_DEEP)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(MSG_UNREADABLE.format(name=name, kind="StereoSet", problem=str(exc)[:160])) from None
    skipped = {SKIP_GOLD: 0}
    pairs = []
    for ex in items:
        pair = _stereoset_pair(ex, name, doc.get("version", ""))
        if isinstance(pair, str):
            skipped[pair] = skipped.get(pair, 0) + 1
        else:
            pairs.append(pair)
    return ImportResult("stereoset-intrasentence", name, (), tuple(pairs), len(items), 0, skipped,
                        provenance(method="import", importer="stereoset-intrasentence", file=name))


def _text(value: Any) -> str:
    """A scalar field as text ("" for null, a list, a mapping)."""
    return _clean(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else ""


def _stereoset_pair(ex: Any, name: str, version: Any) -> SentencePair | str:
    """The pair of one intrasentence example, or the reason it is skipped (a ``SKIP_*``)."""
    if not isinstance(ex, dict) or not isinstance(ex.get("sentences", []), list):
        return SKIP_MALFORMED
    by_gold: dict[str, dict[str, Any]] = {}
    for s in ex.get("sentences", []):
        if isinstance(s, dict) and isinstance(s.get("gold_label"), str):
            by_gold.setdefault(s["gold_label"], s)
    st, an = by_gold.get("stereotype"), by_gold.get("anti-stereotype")
    if st is None or an is None or not st.get("sentence") or not an.get("sentence"):
        return SKIP_GOLD
    if not isinstance(st["sentence"], str) or not isinstance(an["sentence"], str):
        return SKIP_MALFORMED
    context = _text(ex.get("context"))
    un = by_gold.get("unrelated")
    prov = {"file": name, "stereoset_id": _text(ex.get("id")), "context": context,
            "stereotype_word": _filled_word(context, st["sentence"]),
            "anti_stereotype_word": _filled_word(context, an["sentence"]),
            "unrelated": _text(un.get("sentence")) if un else "", "version": _text(version)}
    target = _text(ex.get("target"))
    return SentencePair(stereotyped=st["sentence"], anti_stereotyped=an["sentence"], group_term_stereotyped=target,
                        group_term_anti=target, category=_text(ex.get("bias_type")), source="imported:stereoset",
                        provenance=prov)


_READERS = {
    "biastestgpt": read_biastestgpt_csv,
    "biastestgpt-pairs": read_biastestgpt_pairs,
    "biastestgpt-sentences": read_biastestgpt_sentences,
    "crows-pairs": read_crows_pairs,
    "stereoset": read_stereoset_intrasentence,
}


def import_file(store: DatasetStore, src: Source, *, kind: str = "auto", name: str | None = None) -> ImportResult:
    """Read a file (path, bytes or file object) and add its records to ``store``.

    ``kind`` is one of ``auto`` (by the file's extension and columns),
    ``biastestgpt``, ``biastestgpt-pairs``, ``biastestgpt-sentences``,
    ``crows-pairs``, ``stereoset``.
    """
    fname = _name_of(src, name)
    if kind == "auto":
        raw = _read_bytes(src)
        if fname.lower().endswith(".json"):
            kind = "stereoset"
        else:
            head = raw[:4096].decode("utf-8", "replace")
            kind = "crows-pairs" if "sent_more" in head and "sent_less" in head else "biastestgpt"
        src = raw
    reader = _READERS.get(kind)
    if reader is None:
        raise DataError(MSG_UNKNOWN_KIND.format(kind=kind, choices=", ".join(["auto", *_READERS])))
    result = reader(src, name=fname)
    result.store_into(store)
    return result


# ----------------------------------------------------- public Hub dataset
@dataclass(frozen=True)
class PublicPull:
    """What :func:`pull_public_biastestgpt` did.

    Attributes
    ----------
    status : str
        ``pulled``, ``up-to-date``, ``offline``, ``skipped-configured`` or ``failed``.
    message : str
        One sentence for the user.
    files_new, rows_added : int
    """

    status: str
    message: str
    repo_id: str
    files_new: int = 0
    rows_added: int = 0

    @property
    def ok(self) -> bool:
        return self.status in (PULL_DONE, PULL_UP_TO_DATE)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "repo_id": self.repo_id,
                "files_new": self.files_new, "rows_added": self.rows_added}


def _ledger_path(store: DatasetStore) -> Path:
    return store.state_dir / "public_pulled.jsonl"


def _pulled(store: DatasetStore) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for line in _ledger_path(store).read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["path"]] = rec.get("oid", "")
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        log.warning("the ledger of pulled public files is unreadable; files will be checked again")
    return out


def pull_public_biastestgpt(
    store: DatasetStore,
    *,
    repo_id: str = PUBLIC_BIASTESTGPT_REPO,
    endpoint: str | None = None,
    configured_dataset: str | None = None,
    timeout_s: float = 20.0,
) -> PublicPull:
    """Pull the public BiasTestGPT sentences into the local store (read-only, once per file version).

    Lists the dataset's CSV files and downloads only those not pulled
    before (or changed since); the rows are stored as local-only shards
    (never pushed to the user's own dataset). Skipped, with a clear note,
    when the user has configured a dataset of their own
    (``configured_dataset`` or ``$BIASTEST_HF_DATASET``) or when the Hub
    cannot be reached (offline mode or no connection).

    Returns
    -------
    PublicPull
        Never raises for network problems.
    """
    configured = configured_dataset if configured_dataset is not None else settings.hf_dataset()
    if configured:
        return PublicPull(PULL_CONFIGURED, MSG_PULL_CONFIGURED.format(dataset=configured), repo_id)
    from huggingface_hub import constants, hf_hub_download  # late, as in store/hub.py: only when the Hub is asked

    if constants.is_offline_mode():
        return PublicPull(PULL_OFFLINE, MSG_PULL_OFFLINE, repo_id)
    api = hub_api(endpoint=endpoint, token=False)
    try:
        api.dataset_info(repo_id, timeout=timeout_s)  # fails fast (no client-side retries) when offline
        remote = {f.path: (f.blob_id or "") for f in api.list_repo_tree(repo_id, repo_type="dataset", recursive=True)
                  if hasattr(f, "size") and f.path.lower().endswith(".csv")}
    except Exception as exc:  # network failure or Hub error: never break retrieval
        if is_network_error(exc):
            return PublicPull(PULL_OFFLINE, MSG_PULL_OFFLINE, repo_id)
        return PublicPull(PULL_FAILED, MSG_PULL_FAILED.format(repo=repo_id, problem=type(exc).__name__), repo_id)
    done = _pulled(store)
    todo = sorted(p for p, oid in remote.items() if done.get(p) != oid)
    if not todo:
        return PublicPull(PULL_UP_TO_DATE, MSG_PULL_UP_TO_DATE.format(repo=repo_id), repo_id)
    rows = files = 0
    download_dir = store.state_dir / "public" / repo_id.replace("/", "--")
    for path in todo:
        try:
            resolve_under(download_dir, path, source=f"the file list of {repo_id}")
        except UnsafeNameError as exc:  # a name that would leave the folder: skip it, name it, pull the rest
            log.warning("public file skipped: %s", exc.message)
            continue
        try:
            local = hf_hub_download(repo_id, path, repo_type="dataset", endpoint=api.endpoint, token=False,
                                    local_dir=download_dir, etag_timeout=timeout_s)
            result = read_biastestgpt_csv(local, name=os.path.basename(path))
        except DataError as exc:
            log.warning("public file %s skipped: %s", path, exc.message)
            continue
        except Exception as exc:
            if files or rows:
                break  # keep what was pulled; the rest is tried next time
            if is_network_error(exc):
                return PublicPull(PULL_OFFLINE, MSG_PULL_OFFLINE, repo_id)
            return PublicPull(PULL_FAILED, MSG_PULL_FAILED.format(repo=repo_id, problem=type(exc).__name__),
                              repo_id)
        report = result.store_into(store, local_only=True)
        rows += report.written["sentences"]
        files += 1
        with open(_ledger_path(store), "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"path": path, "oid": remote[path]}) + "\n")
    return PublicPull(PULL_DONE, MSG_PULL_DONE.format(rows=rows, files=files, repo=repo_id), repo_id, files, rows)
