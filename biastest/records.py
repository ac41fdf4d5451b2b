"""Typed test items that cross every boundary of the flow.

Sentences, sentence pairs and images are frozen dataclasses with a
content-hash ``id`` (the same content always gets the same id, in any process)
and provenance (who or what created them, when). They convert to and from
flat dictionaries (``to_row`` / ``from_row``) — the schema of the local store
and of the Hugging Face dataset.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from biastest.provenance import utc_now

__all__ = ["GROUP_SLOT", "ATTRIBUTE_SLOT", "TestSentence", "SentencePair", "TestImage", "content_id"]

GROUP_SLOT = "[T]"
ATTRIBUTE_SLOT = "[A]"


def content_id(*parts: Any) -> str:
    """A stable 16-hex-digit SHA-256 id of JSON-serialisable parts."""
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


class _Row:
    """Mixin: flat row conversion shared by the record types."""

    _id_fields: ClassVar[tuple[str, ...]] = ()

    def to_row(self) -> dict[str, Any]:
        """Flat dict for the store (``provenance`` as a JSON string)."""
        row = asdict(self)  # type: ignore[call-overload]
        row["provenance"] = json.dumps(row.get("provenance") or {}, ensure_ascii=False, sort_keys=True)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]):
        """Inverse of :meth:`to_row` (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        data = {k: v for k, v in row.items() if k in names}
        prov = data.get("provenance")
        if isinstance(prov, str):
            data["provenance"] = json.loads(prov) if prov else {}
        for k, v in list(data.items()):
            if v is not None and isinstance(v, float) and v != v:  # NaN from a DataFrame round trip
                data[k] = None
        return cls(**data)


@dataclass(frozen=True)
class TestSentence(_Row):
    """One generated, imported or typed test sentence.

    Attributes
    ----------
    text : str
        The sentence.
    group_term, attribute_term : str
        The social-group term and the attribute term it contains.
    template : str
        The sentence with the group term replaced by ``[T]`` (and agreeing
        words marked, e.g. ``[R]``, where known); empty if unknown.
    source : str
        ``generated``, ``imported:<dataset>``, ``user`` ...
    generator, model, prompt : str
        How it was made (empty when not generated).
    spec_name : str
        The specification it was made for (empty if none).
    seed : int or None
    created_at : str
        UTC time.
    provenance : dict
        Anything else worth keeping (never a key or token).
    id : str
        Content hash of (text, group_term, attribute_term), set automatically.
    """

    __test__: ClassVar[bool] = False  # not a pytest class
    _id_fields: ClassVar[tuple[str, ...]] = ("text", "group_term", "attribute_term")

    text: str
    group_term: str
    attribute_term: str
    template: str = ""
    source: str = "user"
    generator: str = ""
    model: str = ""
    prompt: str = ""
    spec_name: str = ""
    seed: int | None = None
    created_at: str = field(default_factory=utc_now)
    provenance: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", content_id("sentence", self.text, self.group_term, self.attribute_term))


@dataclass(frozen=True)
class SentencePair(_Row):
    """A stereotyped / anti-stereotyped sentence pair.

    The two sentences differ only in the social-group term (and words that
    agree with it). ``stereotyped`` pairs group 1 with a group-1 stereotype
    (or group 2 with an anti-stereotype); ``anti_stereotyped`` is the other.

    Attributes
    ----------
    stereotyped, anti_stereotyped : str
        The two sentences.
    attribute_term : str
        The attribute term both contain.
    group_term_stereotyped, group_term_anti : str
        The group term in each sentence.
    template : str
        Shared template with the group slot ``[T]`` (empty if unknown, e.g.
        CrowS-Pairs); required by the ``template-mask`` method.
    category : str
        Bias type or attribute list name (e.g. CrowS-Pairs ``bias_type``).
    source, spec_name, created_at, provenance :
        As for :class:`TestSentence`.
    id : str
        Content hash of the two sentences (order matters).
    """

    __test__: ClassVar[bool] = False

    stereotyped: str
    anti_stereotyped: str
    attribute_term: str = ""
    group_term_stereotyped: str = ""
    group_term_anti: str = ""
    template: str = ""
    category: str = ""
    source: str = "user"
    spec_name: str = ""
    created_at: str = field(default_factory=utc_now)
    provenance: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", content_id("pair", self.stereotyped, self.anti_stereotyped))


@dataclass(frozen=True)
class TestImage(_Row):
    """An image file in the store with what it was made for.

    Attributes
    ----------
    path : str
        Path relative to the store root (``images/<sha256>.png``).
    sha256 : str
        Hash of the image bytes (also the file name).
    image_term : str
        The term the image was generated or uploaded for (e.g. ``nurse``).
    prompt, generator, model : str
        How it was made (``upload`` for user uploads).
    width, height : int
    seed : int or None
    source, spec_name, created_at, provenance :
        As for :class:`TestSentence`.
    id : str
        Content hash of (sha256, image_term).
    """

    __test__: ClassVar[bool] = False

    path: str
    sha256: str
    image_term: str
    prompt: str = ""
    generator: str = ""
    model: str = ""
    width: int = 0
    height: int = 0
    seed: int | None = None
    source: str = "user"
    spec_name: str = ""
    created_at: str = field(default_factory=utc_now)
    provenance: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", content_id("image", self.sha256, self.image_term))
