"""The ``models`` of a grid: each entry checked (kind, id or endpoint, key variable) into a :class:`ModelEntry`.

A model is loaded here never: a local folder must exist, a Hub id must pass the public-mode check
(:mod:`biastest.public`), an endpoint address must be one this process may reach, and the variable that
holds an endpoint's key must be set (the key itself never enters a grid, a plan or a cell).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biastest import public, settings
from biastest.audit.grid_common import (
    KEY_ENV,
    MSG_BAD_KEY_ENV,
    MSG_ENDPOINT_NOT_EMBEDDINGS,
    MSG_KEY_ENV_UNSET,
    MSG_KEY_NOT_FOR_MODEL,
    MSG_METHOD_NOT_FOR_KIND,
    MSG_MISSING_KEY,
    MSG_MODEL_ENDPOINT_NEEDS_MODEL,
    MSG_MODEL_FOLDER_MISSING,
    MSG_MODEL_ID_AND_ENDPOINT,
    MSG_MODEL_KIND,
    MSG_MODEL_NO_ID,
    GridError,
    as_mapping,
    as_text,
    check_keys,
    hint,
    in_entry,
    looks_like_path,
    parse_resources,
    resolve_path,
)
from biastest.audit.grid_options import (
    applies_words,
    endpoint_rule,
    measure_of,
    model_measures,
    parse_methods,
    parse_options,
)
from biastest.audit.uses import audit_measures, grid_fields
from biastest.errors import BiastestError
from biastest.inputs import embedding_source
from biastest.measures.base import KINDS
from biastest.models.embeddings import DEBIAS_METHODS, EMBEDDING_SOURCES, debiased_source, resolve_source
from biastest.models.endpoint_lm import check_endpoint_url
from biastest.remote import safe_base_url

MODEL_KEYS = ("name", "kind", "id", "revision", "endpoint", "model", "api_key_env", "tokenizer", "methods", "options",
              "resources", "debias")

MSG_UNKNOWN_DEBIAS = "{where}: unknown debias '{value}'.{hint} Choose one of: {choices}."


@dataclass(frozen=True)
class ModelEntry:
    """One model of the grid.

    Attributes
    ----------
    name : str
        The label in the results table (default: the id or the served model's name).
    kind : {"lm", "vlm", "embeddings", "chat", "classifier"}
    ref : str
        What loads it: a resolved local folder or file, a Hub id, or an embedding source
        (:func:`biastest.inputs.embedding_source`); the served model's name for an endpoint.
    local : bool
        ``ref`` is a folder or file on this machine.
    revision : str or None
    endpoint : str or None
        The endpoint address as given (checked); the key is never here, only ``api_key_env``.
    api_key_env, tokenizer :
        Endpoint settings (the tokenizer: Hub id, folder, ``False`` for text prompts, None to try ``ref``).
    methods : tuple of str or None
        This model's methods (overrides the grid's).
    options, resources : dict
        This model's options and Ray resources (override the grid's).
    """

    name: str
    kind: str
    ref: str
    local: bool = False
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    tokenizer: str | bool | None = None
    methods: tuple[str, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)

    @property
    def scope(self) -> str:
        """``lm-endpoint`` or ``vlm-endpoint`` for a model behind an endpoint, else the kind."""
        return f"{self.kind}-endpoint" if self.endpoint is not None else self.kind

    def identity(self) -> dict[str, Any]:
        """What makes this model this model (its label excluded): the part of a cell's key that names it."""
        if self.endpoint is not None:
            return {"kind": self.kind, "endpoint": safe_base_url(self.endpoint), "model": self.ref,
                    "tokenizer": self.tokenizer, "revision": self.revision}
        out: dict[str, Any] = {"kind": self.kind, "ref": self.ref, "revision": self.revision}
        if self.local:
            out["fingerprint"] = fingerprint(self.ref)
        return out

    def public_dict(self) -> dict[str, Any]:
        """The entry as recorded in the plan and every cell (no key: only the name of its variable)."""
        out = {"name": self.name, "kind": self.kind, "ref": self.ref, "local": self.local, "revision": self.revision}
        if self.endpoint is not None:
            out.update({"endpoint": safe_base_url(self.endpoint), "api_key_env": self.api_key_env,
                        "tokenizer": self.tokenizer})
        return out


def fingerprint(ref: str) -> str:
    """Names, sizes and modification times of a local model's files (a changed model gets new cells)."""
    root = Path(ref)
    h = hashlib.sha256()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for f in files:
        st = f.stat()
        rel = f.name if root.is_file() else f.relative_to(root).as_posix()
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def parse_model(value: Any, index: int, base: Path) -> ModelEntry:
    where = f"model {index}"
    m = as_mapping(value, where)
    check_keys(m, MODEL_KEYS, where)
    if isinstance(m.get("name"), str) and m["name"].strip():
        where = f"model {index} ('{m['name'].strip()}')"
    if "kind" not in m:
        raise GridError(MSG_MISSING_KEY.format(where=where, key="kind", what="lm, vlm, embeddings, chat or classifier"))
    kind = str(m["kind"]).strip().lower()
    if kind not in KINDS:
        raise GridError(MSG_MODEL_KIND.format(where=where, value=m["kind"], hint=hint(m["kind"], KINDS)))
    endpoint = m.get("endpoint")
    if endpoint is not None and "id" in m:
        raise GridError(MSG_MODEL_ID_AND_ENDPOINT.format(where=where))
    for key in ("model", "api_key_env", "tokenizer"):
        if key in m and endpoint is None:
            raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key=key, applies="a model behind an endpoint"))
    if "tokenizer" in m and kind != "lm":
        raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="tokenizer",
                                                     applies="a language model behind an endpoint"))
    if "debias" in m and (kind != "embeddings" or endpoint is not None):
        raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="debias", applies="embeddings"))
    if "revision" in m and kind == "embeddings":
        raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=where, key="revision", applies="lm and vlm models"))
    revision = as_text(m["revision"], "revision", where) if m.get("revision") is not None else None
    local = False
    api_key_env = None
    tokenizer: str | bool | None = None
    if endpoint is not None:
        if kind == "embeddings":
            raise GridError(MSG_ENDPOINT_NOT_EMBEDDINGS.format(where=where))
        try:
            endpoint = check_endpoint_url(endpoint)
        except BiastestError as exc:
            raise in_entry(where, exc) from None
        if "model" not in m:
            raise GridError(MSG_MODEL_ENDPOINT_NEEDS_MODEL.format(where=where))
        ref = as_text(m["model"], "model", where)
        if m.get("api_key_env") is not None:
            api_key_env = str(m["api_key_env"]).strip()
            if not KEY_ENV.fullmatch(api_key_env):
                raise GridError(MSG_BAD_KEY_ENV.format(where=where))
            if not settings.secret_from(api_key_env):
                raise GridError(MSG_KEY_ENV_UNSET.format(var=api_key_env, where=where))
        t = m.get("tokenizer")
        if isinstance(t, bool) or t is None:
            tokenizer = False if t is False else None
        else:
            tokenizer = as_text(t, "tokenizer", where)
            if tokenizer.lower() == "none":
                tokenizer = False
            elif (resolve_path(base, tokenizer)).is_dir():
                tokenizer = str(resolve_path(base, tokenizer))
    else:
        if "id" not in m:
            raise GridError(MSG_MODEL_NO_ID.format(where=where))
        given = as_text(m["id"], "id", where)
        path = resolve_path(base, given)
        if kind == "embeddings":
            ref, local = embedding_ref(given, path, base, where)
            if m.get("debias") is not None:
                ref = debiased_ref(ref, m["debias"], where)
        elif path.exists():
            try:
                public.check_model_reference(given)
            except BiastestError as exc:
                raise in_entry(where, exc) from None
            ref, local = str(path), True
        elif looks_like_path(given) or given.count("/") > 1:
            raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=given))
        else:
            try:
                ref = public.check_model_reference(given)
            except BiastestError as exc:
                raise in_entry(where, exc) from None
    name = as_text(m["name"], "name", where) if "name" in m else ref
    methods = None
    if "methods" in m:
        methods = parse_methods(m["methods"], f"{where} methods")
        for meth in methods:
            if measure_of(meth).kind != kind:
                raise GridError(MSG_METHOD_NOT_FOR_KIND.format(where=where, method=meth,
                                                               method_kind=measure_of(meth).kind, kind=kind))
    options: dict[str, Any] = {}
    if "options" in m:
        candidates = model_measures(kind, methods) if methods else audit_measures(kind)
        given = as_mapping(m["options"], f"{where} options")
        options = parse_options(given, f"{where} options", {name: candidates for name in given})
        for opt in options:
            if not any(opt in grid_fields(c) for c in candidates):
                raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=f"{where} options", key=opt,
                                                             applies=applies_words(opt)))
            rule = next((endpoint_rule(c, opt) for c in candidates if endpoint_rule(c, opt)), None)
            if rule == "never" and endpoint is not None:
                raise GridError(MSG_KEY_NOT_FOR_MODEL.format(
                    where=f"{where} options", key=opt, applies="a model in this process (not behind an endpoint)"))
            if rule == "only" and endpoint is None:
                raise GridError(MSG_KEY_NOT_FOR_MODEL.format(where=f"{where} options", key=opt,
                                                             applies="a model behind an endpoint"))
    resources = parse_resources(m["resources"], f"{where} resources") if "resources" in m else {}
    return ModelEntry(name=name, kind=kind, ref=ref, local=local, revision=revision, endpoint=endpoint,
                      api_key_env=api_key_env, tokenizer=tokenizer, methods=methods, options=options,
                      resources=resources)


def debiased_ref(ref: str, method: Any, where: str) -> str:
    """``ref`` after the debiasing ``method`` (``debias: hard``): ``<ref> + hard-debias(bolukbasi2016)``."""
    value = str(method).strip().lower()
    if value not in DEBIAS_METHODS:
        raise GridError(MSG_UNKNOWN_DEBIAS.format(where=where, value=method, hint=hint(method, DEBIAS_METHODS),
                                                  choices=", ".join(DEBIAS_METHODS)))
    try:
        return debiased_source(ref, value)
    except BiastestError as exc:  # already debiased in its id
        raise in_entry(where, exc) from None


def embedding_ref(given: str, path: Path, base: Path, where: str) -> tuple[str, bool]:
    """The embedding source of ``id``: a registry name, or a file or sentence-encoder folder (read from ``base``)."""
    low = given.lower()
    if low.startswith(("file:", "sentence-transformers:")):
        prefix, rest = given.split(":", 1)
        path = resolve_path(base, rest.strip())
        if not path.exists():
            raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=rest.strip()))
        public.check_server_path()
        return f"{prefix.lower()}:{path}", True
    if low in EMBEDDING_SOURCES or low.startswith("spacy:"):
        return resolve_source(given), False
    if path.exists():
        public.check_server_path()
        return embedding_source(str(path)), True
    if looks_like_path(given) or "/" in given:
        raise GridError(MSG_MODEL_FOLDER_MISSING.format(where=where, path=given))
    try:
        return resolve_source(given), False  # an unknown name: the registry's message, with did-you-mean
    except BiastestError as exc:
        raise in_entry(where, exc) from None
