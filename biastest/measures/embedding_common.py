"""What the word-embedding measures (2AFC, WEAT/MAC) share: checking word lists, looking words up, record columns.

Progress reaches the caller as a plain callback ``progress(done, total, message)``;
nothing here knows about Gradio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from biastest.errors import DataError, EmbeddingError
from biastest.models.embeddings import LookupReport, WordEmbeddings
from biastest.models.factory import word_vectors

__all__ = [
    "MSG_NO_TERMS",
    "Progress",
    "check_terms",
    "embedding_id",
    "field_of",
    "joint_lookup",
    "level_text",
    "record_fields",
    "resolve_models",
    "tick",
]

Progress = Callable[[int, int, str], None]

MSG_NO_TERMS = "The {role} list is empty; add at least one word."


def tick(progress: Progress | None, done: int, total: int, message: str) -> None:
    """Call ``progress`` when there is one."""
    if progress is not None:
        progress(done, total, message)


def check_terms(role: str, terms: Sequence[str] | None) -> list[str]:
    """The non-blank words of ``terms``, each once, in order; :data:`MSG_NO_TERMS` when none is left."""
    out = [t for t in (terms or []) if isinstance(t, str) and t.strip()]
    if not out:
        raise DataError(MSG_NO_TERMS.format(role=role), role=role)
    return list(dict.fromkeys(out))


def resolve_models(
    *,
    source: str | WordEmbeddings | None,
    replicates: Sequence[str | WordEmbeddings] | None,
) -> list[WordEmbeddings]:
    """The model(s) of a run: the replicates if given, otherwise the one source."""
    if replicates:
        return [word_vectors(r) for r in replicates]
    if source is None:
        raise EmbeddingError("Choose an embedding source (for example glove-6b-50d).")
    return [word_vectors(source)]


def joint_lookup(models: Sequence[WordEmbeddings], terms: Sequence[str]) -> tuple[LookupReport, dict[str, str]]:
    """Lookup in the first model, and terms missing from any model with the reason."""
    reports = [m.lookup_report(terms) for m in models]
    reasons: dict[str, str] = {}
    for m, rep in zip(models, reports, strict=True):
        for t in rep.terms:
            if not t.found and t.term not in reasons:
                why = f"not in '{m.name}'"
                if t.missing_words:
                    why += f" (missing word(s): {', '.join(t.missing_words)})"
                reasons[t.term] = why
    if len(models) > 1:  # a term is usable only when every replicate has it
        first = reports[0]
        terms_out = tuple(
            type(t)(t.term, False, t.key, "missing", t.missing_words, t.lowercased) if t.term in reasons else t
            for t in first.terms
        )
        return LookupReport(first.source if len(models) == 1 else "replicates", terms_out, first.note), reasons
    return reports[0], reasons


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """A field of a result or record, whether it is an object or its ``to_dict()`` (a mapping).

    Parameters
    ----------
    obj : object or Mapping
    name : str
    default : optional
        When the field is not there.

    Returns
    -------
    Any
    """
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def embedding_id(result: Any) -> str:
    """The embedding a result was computed on (its provenance's ``model_id``), for comparisons."""
    prov = (result.get("provenance") if isinstance(result, Mapping) else getattr(result, "provenance", None)) or {}
    mid = prov.get("model_id") if isinstance(prov, Mapping) else None
    if isinstance(mid, (list, tuple)):
        return f"{mid[0]} (+{len(mid) - 1} replicates)" if mid else "embedding"
    return str(mid) if mid else "embedding"


def level_text(ci_level: float) -> str:
    """A confidence level as a reader sees it: 0.95 → ``"95 %"`` (from the result, never a fixed level)."""
    return f"{100 * float(ci_level):.4g} %"


def record_fields(provenance: Mapping[str, Any] | None, spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The record columns every summary row ends with: spec, method, versions and date (from the result)."""
    prov = dict(provenance or {})
    name = (spec or {}).get("name")
    if name is None and isinstance(prov.get("spec"), Mapping):
        name = prov["spec"].get("name")
    return {"spec": name, "method": prov.get("method"), "versions": prov.get("versions"),
            "date": prov.get("created_at")}
