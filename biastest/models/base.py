"""Shared helpers for every model adapter: where a model comes from, device, dtype, load errors.

Every adapter in :mod:`biastest.models` (language models, CLIP-like and VQA
models ...) loads through the same four steps, and this module provides each:

1. :func:`resolve_model_source` — turn what the user typed (a Hugging Face Hub
   id such as ``gpt2`` or a local folder) into a :class:`ModelSource`; a bad id
   or a missing folder is refused *before* anything is downloaded.
2. :func:`select_device` and :func:`select_dtype` — ``"auto"`` picks cuda, then
   mps, then cpu; float32 on the CPU, the checkpoint's own half precision on a
   GPU (see :func:`select_dtype`).
3. :func:`load_config` — read the model's configuration; the model *kind* is
   decided from it (never from a substring of the model's name).
4. :func:`translate_load_error` — every exception raised while loading
   (``OSError`` from transformers, ``huggingface_hub`` errors, unknown
   architectures ...) becomes a :class:`~biastest.errors.ModelLoadError` whose
   message says what happened and what to do (the ``MSG_*`` constants below).

After loading, :func:`check_no_missing_weights` refuses a checkpoint whose
weights were silently filled with random numbers (e.g. a ``BertModel``
checkpoint loaded as a masked language model has no prediction head), and
:func:`commit_hash` finds the revision (commit) that was actually loaded.
:func:`model_cache_key` builds the :data:`~biastest.models.cache.MODEL_CACHE`
key (adapter kind, id, revision, device, dtype).

Examples
--------
>>> from biastest.models.base import resolve_model_source, select_device
>>> resolve_model_source("/tmp").is_local
True
>>> select_device("cpu").type
'cpu'
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest.errors import ModelKindError, ModelLoadError
from biastest.models.catalog import CATALOGS, offline_source

__all__ = [
    "DEVICE_CHOICES",
    "DTYPE_CHOICES",
    "ModelSource",
    "check_local_weights",
    "check_no_missing_weights",
    "commit_hash",
    "dtype_name",
    "load_config",
    "model_cache_key",
    "resolve_model_source",
    "select_device",
    "select_dtype",
    "translate_load_error",
    "quiet_transformers",
]

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
DTYPE_CHOICES = ("auto", "float32", "float16", "bfloat16")

MSG_BAD_MODEL_ID = (
    "The model name {model_id!r} is not valid. Type a Hugging Face model id such as {examples}, or the path of a "
    "folder that holds a saved model."
)
MSG_MODEL_NOT_FOUND = (
    "The model '{model_id}' could not be found or downloaded. Check the spelling of the Hugging Face model id "
    "(for example {examples}) and the internet connection, or give the path of a folder that holds the saved model."
)
MSG_MODEL_GATED = (
    "The model '{model_id}' is gated: its owners must grant access first. Request access on its Hugging Face page "
    "and log in with a token that has it, or choose another model."
)
MSG_REVISION_NOT_FOUND = (
    "The model '{model_id}' has no revision '{revision}'. Leave the revision empty for the latest version, or give "
    "an existing branch, tag or commit."
)
MSG_FOLDER_NOT_FOUND = (
    "The folder '{path}' does not exist. Check the path, or type a Hugging Face model id such as {examples}."
)
MSG_NOT_A_FOLDER = (
    "'{path}' is a file, not a folder. Give the folder that holds the saved model (config.json and weights), "
    "or a Hugging Face model id such as {examples}."
)
MSG_REMOTE_CODE = (
    "The model '{model_id}' needs its own program code to run (trust_remote_code), which biastest does not execute "
    "for safety. Choose a model that transformers supports directly."
)
MSG_NO_CONFIG = (
    "The folder '{path}' does not hold a saved model: its configuration file (config.json) is missing. "
    "Save the model there with save_pretrained(), or choose the folder that contains config.json."
)
MSG_NO_WEIGHTS = (
    "The model '{model_id}' has a configuration but no weights file (model.safetensors or pytorch_model.bin). "
    "Save the complete model with save_pretrained() or download it again, then try again."
)
MSG_NO_TOKENIZER = (
    "The model '{model_id}' has no usable tokenizer files, so its sentences cannot be split into tokens. "
    "Save the tokenizer beside the model (tokenizer.save_pretrained()) or choose another model."
)
MSG_UNSUPPORTED_ARCHITECTURE = (
    "The model '{model_id}' uses the architecture '{model_type}', which the installed transformers {version} "
    "does not know. Update transformers, or choose another model."
)
MSG_LOAD_FAILED = (
    "The model '{model_id}' could not be loaded ({problem}). Check that it is a complete transformers model, "
    "or choose another model."
)
MSG_MISSING_WEIGHTS = (
    "The model '{model_id}' cannot be used as a {role}: {count} of the weights it needs are missing from the "
    "checkpoint (for example {examples}) and would be random numbers. It was probably saved without its "
    "{role} head (architecture: {architectures}). Choose a checkpoint trained as a {role}."
)
MSG_BAD_DEVICE = "Unknown device '{device}'. Choose one of: {choices}."
MSG_DEVICE_UNAVAILABLE = (
    "The device '{device}' is not available on this machine. Choose 'auto' (uses {fallback} here) or 'cpu'."
)
MSG_BAD_DTYPE = "Unknown number precision '{dtype}'. Choose one of: {choices}."
MSG_DTYPE_UNSUPPORTED = (
    "The precision '{dtype}' is not supported on the device '{device}'. Choose 'auto' or 'float32'."
)

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_SNAPSHOT = re.compile(r"[\\/]snapshots[\\/]([0-9a-f]{40})(?:[\\/]|$)")


@dataclass(frozen=True)
class ModelSource:
    """Where a model is loaded from.

    Attributes
    ----------
    model_id : str
        What the user typed (stripped), kept for messages and provenance.
    location : str
        What is passed to ``from_pretrained``: the Hub id, or the absolute
        path of a local folder.
    is_local : bool
        Whether ``location`` is a local folder.
    revision : str or None
        The Hub revision asked for (branch, tag or commit); None for local
        folders and for "latest".
    family : str
        The app whose kind of model this is (``lm``, ``vlm``): its messages
        name examples of that kind (:data:`biastest.models.catalog.CATALOGS`).
    """

    model_id: str
    location: str
    is_local: bool
    revision: str | None = None
    family: str = "lm"

    def pretrained_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``from_pretrained`` (revision only for the Hub)."""
        return {} if self.is_local or self.revision is None else {"revision": self.revision}


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", text)) or (
        text.count("/") > 1
    )


def _examples(family: str) -> str:
    return CATALOGS.get(family, CATALOGS["lm"]).examples_text()


def resolve_model_source(model_id: str, *, revision: str | None = None, family: str = "lm") -> ModelSource:
    """Decide whether ``model_id`` is a local folder or a Hugging Face Hub id.

    An existing folder wins; text that looks like a path (starts with ``/``,
    ``./``, ``~`` ... or has more than one ``/``) but does not exist is
    refused with :data:`MSG_FOLDER_NOT_FOUND`; anything else must be a valid
    Hub id (``name`` or ``owner/name``).

    While the Hub cannot be reached (``HF_HUB_OFFLINE``, or no answer within
    2 s: :func:`biastest.models.catalog.hub_status`), a Hub id in the cache is
    loaded from its snapshot folder without asking the network (``model_id``
    and the commit are kept), and one that is not cached is refused at once
    with :data:`biastest.models.catalog.MSG_HUB_OFFLINE` instead of after a
    download attempt.

    Parameters
    ----------
    model_id : str
        Hub id (``gpt2``, ``google-bert/bert-base-uncased``) or folder path.
    revision : str, optional
        Hub branch, tag or commit (ignored for local folders). Empty text means
        the latest version.
    family : {"lm", "vlm"}
        The app's kind of model, for the examples its messages name.

    Returns
    -------
    ModelSource

    Raises
    ------
    ModelLoadError
        :data:`MSG_BAD_MODEL_ID`, :data:`MSG_FOLDER_NOT_FOUND`, or
        :data:`biastest.models.catalog.MSG_HUB_OFFLINE`.
    """
    examples = _examples(family)
    if not isinstance(model_id, str) or not model_id.strip():
        raise ModelLoadError(MSG_BAD_MODEL_ID.format(model_id=model_id, examples=examples), model_id=model_id)
    text = model_id.strip()
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        revision = None
    expanded = os.path.expanduser(text)
    if os.path.isdir(expanded):
        path = str(Path(expanded).resolve())
        return ModelSource(model_id=text, location=path, is_local=True, revision=None, family=family)
    if os.path.exists(expanded):
        raise ModelLoadError(MSG_NOT_A_FOLDER.format(path=text, examples=examples), model_id=text)
    if _looks_like_path(text):
        raise ModelLoadError(MSG_FOLDER_NOT_FOUND.format(path=text, examples=examples), model_id=text)
    if not _HUB_ID.match(text) or ".." in text or "--" in text:
        raise ModelLoadError(MSG_BAD_MODEL_ID.format(model_id=text, examples=examples), model_id=text)
    revision = revision.strip() if revision else None
    snapshot = offline_source(text, revision=revision, family=family)
    if snapshot is not None:  # the Hub cannot be reached: the cached copy, by its folder (commit read from the path)
        return ModelSource(model_id=text, location=str(snapshot), is_local=True, revision=None, family=family)
    return ModelSource(model_id=text, location=text, is_local=False, revision=revision, family=family)


# ------------------------------------------------------------------ device / dtype
def _mps_available() -> bool:
    import torch  # late: heavy

    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def _auto_device_name() -> str:
    import torch  # late: heavy

    if torch.cuda.is_available():
        return "cuda"
    if _mps_available():
        return "mps"
    return "cpu"


def select_device(device: Any = "auto"):
    """Resolve a device choice to a ``torch.device``.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "mps"} or str or torch.device
        ``"auto"`` takes cuda if available, else mps (Apple GPU), else cpu.
        ``"cuda:1"`` style indices are accepted.

    Returns
    -------
    torch.device

    Raises
    ------
    ModelLoadError
        :data:`MSG_BAD_DEVICE` for an unknown name, :data:`MSG_DEVICE_UNAVAILABLE`
        for a device this machine does not have.
    """
    import torch  # late: heavy

    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str) and device.strip():
        name = device.strip().lower()
    else:
        raise ModelLoadError(MSG_BAD_DEVICE.format(device=device, choices=", ".join(DEVICE_CHOICES)))
    if name == "auto":
        return torch.device(_auto_device_name())
    base = name.split(":", 1)[0]
    if base not in DEVICE_CHOICES:
        raise ModelLoadError(MSG_BAD_DEVICE.format(device=device, choices=", ".join(DEVICE_CHOICES)))
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise ModelLoadError(MSG_BAD_DEVICE.format(device=device, choices=", ".join(DEVICE_CHOICES))) from None
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available() and (dev.index is None or dev.index < torch.cuda.device_count()),
        "mps": _mps_available(),
    }[base]
    if not available:
        raise ModelLoadError(MSG_DEVICE_UNAVAILABLE.format(device=name, fallback=_auto_device_name()))
    return dev


def select_dtype(dtype: Any = "auto", *, device: Any = None, config: Any = None):
    """Resolve a precision choice to a ``torch.dtype``.

    ``"auto"`` means float32 on the CPU (exact, and what the published
    reference numbers used); on a GPU (cuda/mps) it means the checkpoint's own
    precision when that is float16 or bfloat16 (``config.dtype`` /
    ``config.torch_dtype``), otherwise float32. Scores are always accumulated
    in float32/float64 whatever the weights' precision.

    Parameters
    ----------
    dtype : {"auto", "float32", "float16", "bfloat16"} or torch.dtype
    device : torch.device, optional
        The device the model will run on (default: cpu).
    config : transformers.PretrainedConfig, optional
        Used by ``"auto"`` on a GPU.

    Returns
    -------
    torch.dtype

    Raises
    ------
    ModelLoadError
        :data:`MSG_BAD_DTYPE` or :data:`MSG_DTYPE_UNSUPPORTED` (half precision
        on the CPU is refused: it is slow and inexact there).
    """
    import torch  # late: heavy

    names = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    dev_type = "cpu" if device is None else torch.device(device).type
    if isinstance(dtype, torch.dtype):
        if dtype not in names.values():
            raise ModelLoadError(MSG_BAD_DTYPE.format(dtype=dtype, choices=", ".join(DTYPE_CHOICES)))
        chosen = dtype
    elif isinstance(dtype, str) and dtype.strip().lower() in DTYPE_CHOICES:
        key = dtype.strip().lower()
        if key == "auto":
            if dev_type == "cpu":
                return torch.float32
            own = None
            if config is not None:
                own = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
                if isinstance(own, str):
                    own = names.get(own)
            return own if own in (torch.float16, torch.bfloat16) else torch.float32
        chosen = names[key]
    else:
        raise ModelLoadError(MSG_BAD_DTYPE.format(dtype=dtype, choices=", ".join(DTYPE_CHOICES)))
    if dev_type == "cpu" and chosen is torch.float16:
        raise ModelLoadError(MSG_DTYPE_UNSUPPORTED.format(dtype="float16", device=dev_type))
    return chosen


def dtype_name(dtype: Any) -> str:
    """``torch.float32`` → ``"float32"`` (for keys and provenance)."""
    return str(dtype).replace("torch.", "")


# ------------------------------------------------------------------ errors
def _transformers_version() -> str:
    try:
        import transformers  # late: heavy

        return transformers.__version__
    except ImportError:  # pragma: no cover - transformers is a hard requirement
        return "(not installed)"


def translate_load_error(exc: BaseException, *, source: ModelSource, what: str = "model") -> ModelLoadError:
    """Turn an exception raised while loading into a :class:`ModelLoadError`.

    Parameters
    ----------
    exc : BaseException
        What transformers / huggingface_hub raised.
    source : ModelSource
        The model being loaded.
    what : {"model", "config", "tokenizer"}
        Which part was being loaded (a tokenizer failure gets
        :data:`MSG_NO_TOKENIZER`).

    Returns
    -------
    ModelLoadError
        With one of the ``MSG_*`` messages of this module; ``details`` keep
        the original exception type and text for logs.
    """
    from huggingface_hub import errors as hub_errors  # late: slow to import

    model_id = source.model_id
    text = str(exc)
    low = text.lower()
    details = {"model_id": model_id, "cause": type(exc).__name__, "cause_text": text[:500]}
    if isinstance(exc, ModelLoadError):
        return exc
    if isinstance(exc, hub_errors.GatedRepoError) or "gated repo" in low:
        return ModelLoadError(MSG_MODEL_GATED.format(model_id=model_id), **details)
    if isinstance(exc, hub_errors.RevisionNotFoundError) or "is not a valid git identifier" in low:
        return ModelLoadError(MSG_REVISION_NOT_FOUND.format(model_id=model_id, revision=source.revision), **details)
    if isinstance(exc, hub_errors.HFValidationError):
        return ModelLoadError(MSG_BAD_MODEL_ID.format(model_id=model_id, examples=_examples(source.family)), **details)
    if "trust_remote_code" in low:
        return ModelLoadError(MSG_REMOTE_CODE.format(model_id=model_id), **details)
    if what == "tokenizer":
        if source.is_local or not _is_not_found(exc, low):
            return ModelLoadError(MSG_NO_TOKENIZER.format(model_id=model_id), **details)
    if source.is_local and ("config.json" in low or "does not appear to have a file named config" in low):
        return ModelLoadError(MSG_NO_CONFIG.format(path=source.location), **details)
    if any(w in low for w in ("pytorch_model.bin", "model.safetensors", "tf_model.h5", "no file named")):
        return ModelLoadError(MSG_NO_WEIGHTS.format(model_id=model_id), **details)
    if "model_type" in low or "unrecognized model" in low or "does not recognize this architecture" in low:
        model_type = _model_type_from(text) or "unknown"
        return ModelLoadError(
            MSG_UNSUPPORTED_ARCHITECTURE.format(
                model_id=model_id, model_type=model_type, version=_transformers_version()
            ),
            **details,
        )
    if _is_not_found(exc, low):
        return ModelLoadError(MSG_MODEL_NOT_FOUND.format(model_id=model_id, examples=_examples(source.family)),
                              **details)
    problem = text.strip().splitlines()[0][:200] if text.strip() else type(exc).__name__
    return ModelLoadError(MSG_LOAD_FAILED.format(model_id=model_id, problem=problem), **details)


def _is_not_found(exc: BaseException, low: str) -> bool:
    from huggingface_hub import errors as hub_errors  # late: slow to import

    if isinstance(
        exc,
        hub_errors.RepositoryNotFoundError | hub_errors.LocalEntryNotFoundError | hub_errors.EntryNotFoundError,
    ):
        return True
    markers = (
        "couldn't connect",
        "could not connect",
        "is not a local folder and is not a valid model identifier",
        "not a valid model identifier",
        "repository not found",
        "offline mode",
        "cannot find the requested files",
        "name or service not known",
        "connection",
        "timed out",
        "404",
    )
    return isinstance(exc, OSError | ConnectionError | TimeoutError) or any(m in low for m in markers)


def _model_type_from(text: str) -> str | None:
    m = re.search(r"model[_ ]type[`'\" :]+([A-Za-z0-9_-]+)", text)
    return m.group(1) if m else None


# ------------------------------------------------------------------ loading helpers
def quiet_transformers() -> None:
    """Silence transformers' progress bars and load reports (the UI shows its own progress)."""
    try:
        from transformers.utils import logging as tlogging  # late: heavy

        tlogging.set_verbosity_error()
        tlogging.disable_progress_bar()
    except Exception:  # pragma: no cover - cosmetic only
        pass


def load_config(source: ModelSource):
    """Read a model's configuration (``AutoConfig``), translating failures.

    Checks the cheap things first: a local folder without ``config.json``
    gets :data:`MSG_NO_CONFIG`; an unknown ``model_type`` gets
    :data:`MSG_UNSUPPORTED_ARCHITECTURE`; an unreachable or unknown Hub id gets
    :data:`MSG_MODEL_NOT_FOUND` (fast when ``HF_HUB_OFFLINE=1``).

    Returns
    -------
    transformers.PretrainedConfig

    Raises
    ------
    ModelLoadError
    """
    from transformers import AutoConfig  # late: heavy

    quiet_transformers()
    if source.is_local and not os.path.isfile(os.path.join(source.location, "config.json")):
        raise ModelLoadError(MSG_NO_CONFIG.format(path=source.location), model_id=source.model_id)
    try:
        return AutoConfig.from_pretrained(source.location, **source.pretrained_kwargs())
    except (ValueError, KeyError) as exc:
        if "trust_remote_code" in str(exc):
            raise translate_load_error(exc, source=source, what="config") from None
        model_type = None
        if source.is_local:
            model_type = _read_local_model_type(source.location)
        if model_type is not None or "model_type" in str(exc).lower() or "unrecognized" in str(exc).lower():
            raise ModelLoadError(
                MSG_UNSUPPORTED_ARCHITECTURE.format(
                    model_id=source.model_id,
                    model_type=model_type or _model_type_from(str(exc)) or "unknown",
                    version=_transformers_version(),
                ),
                model_id=source.model_id,
                cause=type(exc).__name__,
                cause_text=str(exc)[:500],
            ) from None
        raise translate_load_error(exc, source=source, what="config") from None
    except Exception as exc:
        raise translate_load_error(exc, source=source, what="config") from None


def _read_local_model_type(folder: str) -> str | None:
    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as fh:
            value = json.load(fh).get("model_type")
        return str(value) if value else None
    except (OSError, ValueError, AttributeError):
        return None


_WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".index.json", ".gguf")


def check_local_weights(source: ModelSource) -> None:
    """Refuse a local folder that has no weights file at all (:data:`MSG_NO_WEIGHTS`).

    Hub ids are not checked here (the download reports its own errors).
    """
    if not source.is_local:
        return
    try:
        names = os.listdir(source.location)
    except OSError:
        names = []
    if not any(n.endswith(_WEIGHT_FILES) and "tokenizer" not in n and "training_args" not in n for n in names):
        raise ModelLoadError(MSG_NO_WEIGHTS.format(model_id=source.model_id), model_id=source.model_id)


def commit_hash(source: ModelSource, *objects: Any) -> str | None:
    """The commit that was actually loaded, when it is known.

    Looks at ``_commit_hash`` of the given config/model/tokenizer objects
    (set by transformers for Hub downloads), then at a Hub-cache snapshot
    path (``.../snapshots/<40 hex>/``) of a local folder.

    Returns
    -------
    str or None
        A 40-hex-digit commit, or None for a plain local folder.
    """
    for obj in objects:
        for candidate in (obj, getattr(obj, "config", None)):
            value = getattr(candidate, "_commit_hash", None)
            if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{40}", value):
                return value
    m = _SNAPSHOT.search(source.location + "/")
    if m:
        return m.group(1)
    if source.revision and re.fullmatch(r"[0-9a-f]{40}", source.revision):
        return source.revision
    return None


def check_no_missing_weights(
    loading_info: dict[str, Any] | None, *, model: Any, source: ModelSource, role: str
) -> None:
    """Refuse a model whose needed weights were missing from the checkpoint.

    transformers fills missing weights with random numbers and only logs a
    warning; scores from such a model would be meaningless. Non-persistent
    buffers are not weights and are ignored.

    Parameters
    ----------
    loading_info : dict
        ``from_pretrained(..., output_loading_info=True)``'s second value.
    model : torch.nn.Module
    source : ModelSource
    role : str
        What the model was loaded as (``"masked language model"``).

    Raises
    ------
    ModelKindError
        :data:`MSG_MISSING_WEIGHTS`.
    """
    if not loading_info:
        return
    missing = set(loading_info.get("missing_keys") or ())
    params = {name for name, _ in model.named_parameters()}
    missing = sorted(k for k in missing if k in params or not k.endswith(("position_ids", "token_type_ids")))
    if missing:
        archs = getattr(getattr(model, "config", None), "architectures", None) or ["unknown"]
        raise ModelKindError(
            MSG_MISSING_WEIGHTS.format(
                model_id=source.model_id,
                role=role,
                count=len(missing),
                examples=", ".join(missing[:3]),
                architectures=", ".join(archs),
            ),
            model_id=source.model_id,
            missing=missing,
        )


def model_cache_key(adapter: str, source: ModelSource, *, device: Any, dtype: Any) -> tuple[str, ...]:
    """Key of a loaded model in :data:`~biastest.models.cache.MODEL_CACHE`.

    ``(adapter, location, revision or "", device, dtype)`` — the same model on
    another device or in another precision is another entry.
    """
    return (adapter, source.location, source.revision or "", str(device), dtype_name(dtype))
