"""Where the models an app can test come from, said honestly: this machine, embedded defaults, the Hub, endpoints.

Each app (``lm``: language models, ``vlm``: vision-language models,
``embeddings``: word embeddings) has an :class:`AppModels` entry: what its
models are called, example ids of its own kind for messages, the Hub ids it
suggests and its embedded defaults. :func:`suggestions` lists, in this order:

1. **on this machine** — models of the app's kind in the Hugging Face cache
   (:func:`scan_hf_cache`, through ``huggingface_hub.scan_cache_dir``; a repo
   counts when its snapshot has a configuration *and* weights) and in the
   models folder ``$BIASTEST_MODELS_DIR`` (:func:`scan_models_dir`; one saved
   model per subfolder, or word-vector files for the embedding app). In public
   mode (:mod:`biastest.public`) nothing is offered by its path on the server:
   cached Hub repos are offered by their Hub id, the models folder not at all;
2. **embedded** defaults that work offline (GloVe 6B 50d and the MiniLM
   encoder for the embedding app; the language and vision apps have none);
3. **Hub ids**, marked "downloads when online", or "needs the internet" when
   the Hub cannot be reached now;
4. **endpoints** are not list entries: :attr:`AppModels.endpoint_note` says how
   the app reaches a model served elsewhere, or that it cannot.

:func:`hub_status` answers "can the Hub be reached?" within
:data:`HUB_PROBE_TIMEOUT` seconds: ``HF_HUB_OFFLINE`` answers at once; otherwise
one HTTP ``HEAD`` of ``$HF_ENDPOINT`` (default ``https://huggingface.co``) runs
in a helper thread that is waited for at most that long, and the answer is
kept for :data:`HUB_PROBE_MAX_AGE` seconds (process-wide: the state of the
network, not user data). :func:`offline_source` lets the model loaders fail
fast with :data:`MSG_HUB_OFFLINE` for a Hub id that is not cached while the
Hub cannot be reached (instead of a 30-s download attempt), and load a cached
one from its snapshot folder without asking the network.

This module imports no gradio.

Examples
--------
>>> CATALOGS["vlm"].examples_text()
"'openai/clip-vit-base-patch32' or 'dandelin/vilt-b32-finetuned-vqa'"
>>> HUB_PROBE_TIMEOUT <= 2.0
True
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest import public as policy
from biastest import settings
from biastest.errors import ModelLoadError
from biastest.models.embeddings import EMBEDDING_SOURCES, SAFE_EMBEDDING_SUFFIXES
from biastest.models.kinds import lm_kind_of, vlm_kind_of

__all__ = [
    "CATALOGS",
    "HUB_PROBE_MAX_AGE",
    "HUB_PROBE_TIMEOUT",
    "AppModels",
    "HubStatus",
    "LocalModel",
    "Suggestion",
    "cached_snapshot",
    "default_reference",
    "hf_cache_dir",
    "hub_status",
    "local_models",
    "offline_source",
    "picker_note",
    "scan_hf_cache",
    "scan_models_dir",
    "suggestions",
]

log = logging.getLogger(__name__)

#: The folder of saved models (and word-vector files) offered as "on this machine".
#: Longest wait for the Hub reachability probe, in seconds.
HUB_PROBE_TIMEOUT = 2.0
#: How long one probe's answer is kept, in seconds.
HUB_PROBE_MAX_AGE = 60.0
#: How long one scan of the cache and the models folder is kept, in seconds.
SCAN_MAX_AGE = 10.0
#: Most entries one scan reports (a huge folder never floods a dropdown or the scan time).
MAX_LOCAL = 200
DEFAULT_HUB = "https://huggingface.co"

ORIGIN_LOCAL = "local"
ORIGIN_EMBEDDED = "embedded"
ORIGIN_HUB = "hub"

MSG_HUB_OFFLINE = (
    "The model '{model_id}' is not on this machine, and the Hugging Face Hub cannot be reached from here ({why}), so "
    "it cannot be downloaded. Choose a {what} that the model list marks 'on this machine'."
)
MSG_WHY_OFFLINE_ENV = "HF_HUB_OFFLINE is set"
MSG_WHY_NO_ANSWER = "no answer from {endpoint} within {seconds:g} s"
MSG_WHY_NO_CONNECTION = "no connection to {endpoint}"
MSG_WHY_STATUS = "{endpoint} answered HTTP {status}"
MSG_PICKER_OFFLINE = (
    "⚠️ The Hugging Face Hub cannot be reached from this server ({why}): the Hub ids in the list need the internet "
    "and cannot be loaded now. {works}"
)
MSG_WORKS_OFFLINE_LOCAL = "The models marked 'on this machine' work."
MSG_WORKS_OFFLINE_EMBEDDED = "The embedded defaults and the models marked 'on this machine' work."
MSG_NOTHING_OFFLINE = (
    "No {what} is on this machine yet, so none can be tested until the Hub can be reached{or_endpoint}."
)
MSG_PICKER_ONLINE = "Models marked 'on this machine' load at once; Hub ids download when first used."
MSG_NO_HUB_MODELS = "This app loads no models from the Hub: its embedded defaults and your files work offline."
MSG_NO_EMBEDDED = "biastest ships no {what} of its own that works offline."

LABEL_CACHED = "{ref} · on this machine ({kind})"
LABEL_FOLDER = "{name} · on this machine, models folder ({kind})"
LABEL_EMBEDDED = "{label} · embedded, works offline"
LABEL_HUB = "{ref} · Hub, downloads when online"
LABEL_HUB_OFFLINE = "{ref} · Hub, needs the internet (unreachable now)"

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".gguf")
_ST_MARKERS = ("modules.json", "config_sentence_transformers.json")


# --------------------------------------------------------------------------- per-app catalogs
@dataclass(frozen=True)
class AppModels:
    """What one app tests and where its models come from.

    Attributes
    ----------
    key : str
        ``lm``, ``vlm`` or ``embeddings``.
    what : str
        The kind of model in words ("language model"), for messages.
    examples : tuple of str
        Two Hub ids (or source names) of this kind, for messages.
    hub_ids : tuple of str
        Hub ids suggested in the model list.
    endpoint_note : str
        How the app reaches a model behind an endpoint ("" when it cannot).
    kind_of : callable or None
        ``config.json`` (a dict) → the model's kind for this app, or None when
        the app cannot test it; None for the embedding app (files, not configs).
    """

    key: str
    what: str
    examples: tuple[str, ...]
    hub_ids: tuple[str, ...]
    endpoint_note: str
    kind_of: Callable[[dict[str, Any]], str | None] | None

    def examples_text(self) -> str:
        """The examples as message text: ``'a' or 'b'``."""
        quoted = [f"'{e}'" for e in self.examples]
        return " or ".join(quoted) if len(quoted) <= 2 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"

    def embedded(self) -> list[tuple[str, str]]:
        """(value, label) of the defaults shipped with biastest that work offline (empty when the app has none)."""
        if self.key != "embeddings":
            return []
        return [(s.name, s.label.removesuffix(" (embedded default)")) for s in EMBEDDING_SOURCES.values()]


CATALOGS: dict[str, AppModels] = {
    "lm": AppModels(
        key="lm",
        what="language model",
        examples=("gpt2", "bert-base-uncased"),
        hub_ids=(
            "gpt2",
            "gpt2-medium",
            "distilgpt2",
            "bert-base-uncased",
            "bert-large-uncased",
            "roberta-base",
            "distilbert-base-uncased",
            "albert-base-v2",
            "microsoft/biogpt",
            "EleutherAI/pythia-160m",
            "meta-llama/Llama-3.2-1B",
            "tiiuae/falcon-rw-1b",
        ),
        endpoint_note=(
            "A model too large for this server (Llama, Mistral, Qwen …) can be tested where it is served: choose "
            "'A model behind an endpoint' (vLLM, llama.cpp's server)."
        ),
        kind_of=lm_kind_of,
    ),
    "vlm": AppModels(
        key="vlm",
        what="vision-language model",
        examples=("openai/clip-vit-base-patch32", "dandelin/vilt-b32-finetuned-vqa"),
        hub_ids=(
            "openai/clip-vit-base-patch32",
            "dandelin/vilt-b32-finetuned-vqa",
            "Salesforce/blip-vqa-base",
            "microsoft/git-base-vqav2",
        ),
        endpoint_note=(
            "A model served elsewhere (LLaVA or Qwen-VL on vLLM, a GPT-4o-class model) can be tested there: choose "
            "'A model behind an endpoint'."
        ),
        kind_of=vlm_kind_of,
    ),
    "embeddings": AppModels(
        key="embeddings",
        what="word embedding",
        examples=("glove-6b-50d", "minilm-l6-v2"),
        hub_ids=(),
        endpoint_note="",
        kind_of=None,
    ),
}


def _catalog(app: str | AppModels) -> AppModels:
    return app if isinstance(app, AppModels) else CATALOGS[app]


# --------------------------------------------------------------------------- the Hub: reachable?
@dataclass(frozen=True)
class HubStatus:
    """Whether the Hub can be reached now, and why not.

    Attributes
    ----------
    reachable : bool
    endpoint : str
        The Hub address probed (``$HF_ENDPOINT`` or the public Hub).
    why : str
        Why it cannot be reached ("" when it can), for messages.
    checked_at : float
        ``time.monotonic()`` of the probe.
    """

    reachable: bool
    endpoint: str
    why: str
    checked_at: float


_status_lock = threading.Lock()
_status: dict[str, HubStatus] = {}  # endpoint → last answer: process-wide network state, not user data


def hub_offline_flag() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub reads it (its constant, so a test or a caller may switch it)."""
    from huggingface_hub import constants  # late: slow to import

    return bool(constants.HF_HUB_OFFLINE)


def hub_endpoint() -> str:
    """The Hub address: ``$HF_ENDPOINT`` (read now) or huggingface_hub's, without a trailing slash."""
    from huggingface_hub import constants  # late: slow to import

    return (settings.hf_endpoint() or constants.ENDPOINT or DEFAULT_HUB).rstrip("/")


def _probe(endpoint: str, timeout: float) -> tuple[bool, str]:
    """One HEAD request of the Hub's address; any answer below 500 means it can be reached."""
    request = urllib.request.Request(endpoint + "/", method="HEAD", headers={"User-Agent": "biastest-hub-probe"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # the operator's Hub address
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError):
        return False, MSG_WHY_NO_CONNECTION.format(endpoint=endpoint)
    if status >= 500:
        return False, MSG_WHY_STATUS.format(endpoint=endpoint, status=status)
    return True, ""


def hub_status(*, timeout: float = HUB_PROBE_TIMEOUT, max_age: float = HUB_PROBE_MAX_AGE,
               endpoint: str | None = None) -> HubStatus:
    """Can the Hugging Face Hub be reached now? Answers within ``timeout`` seconds.

    Parameters
    ----------
    timeout : float
        Longest wait for the probe (at most :data:`HUB_PROBE_TIMEOUT`; a larger
        value is lowered to it). The probe runs in a daemon thread, so a name
        lookup that hangs does not hold the caller longer.
    max_age : float
        An answer younger than this (seconds) is returned without a new probe.
    endpoint : str, optional
        The Hub address (default :func:`hub_endpoint`).

    Returns
    -------
    HubStatus
        Not reachable at once when ``HF_HUB_OFFLINE`` is set.
    """
    endpoint = (endpoint or hub_endpoint()).rstrip("/")
    now = time.monotonic()
    if hub_offline_flag():
        return HubStatus(False, endpoint, MSG_WHY_OFFLINE_ENV, now)
    with _status_lock:
        known = _status.get(endpoint)
    if known is not None and now - known.checked_at < max_age:
        return known
    timeout = min(float(timeout), HUB_PROBE_TIMEOUT)
    answer: list[tuple[bool, str]] = []
    worker = threading.Thread(target=lambda: answer.append(_probe(endpoint, timeout)), daemon=True,
                              name="biastest-hub-probe")
    worker.start()
    worker.join(timeout)
    reachable, why = answer[0] if answer else (False, MSG_WHY_NO_ANSWER.format(endpoint=endpoint, seconds=timeout))
    status = HubStatus(reachable, endpoint, why, time.monotonic())
    with _status_lock:
        _status[endpoint] = status
    if not reachable:
        log.info("the Hugging Face Hub cannot be reached: %s", why)
    return status


def forget_hub_status() -> None:
    """Drop the kept probe answers (the next :func:`hub_status` probes again)."""
    with _status_lock:
        _status.clear()


# --------------------------------------------------------------------------- what is on this machine
@dataclass(frozen=True)
class LocalModel:
    """A model (or embedding file) found on this machine.

    Attributes
    ----------
    reference : str
        What the loader is given: a Hub id (cache), a folder path, or for the
        embedding app an embedding source (``file:<path>``,
        ``sentence-transformers:<folder>``).
    name : str
        Short name for the list.
    kind : str
        The model's kind for its app (``causal``, ``clip``, ``word vectors`` …).
    where : str
        ``cache`` (Hugging Face cache) or ``folder`` (the models folder).
    is_path : bool
        Whether ``reference`` names a path on the server (never offered in public mode).
    """

    reference: str
    name: str
    kind: str
    where: str
    is_path: bool


def hf_cache_dir() -> Path:
    """The Hugging Face cache folder huggingface_hub and transformers use (read at each call)."""
    from huggingface_hub import constants  # late: slow to import

    return Path(constants.HF_HUB_CACHE)


def models_dir() -> Path | None:
    """``$BIASTEST_MODELS_DIR`` (:func:`biastest.settings.models_dir`) as an existing folder, or None."""
    path = settings.models_dir()
    return path if path is not None and path.is_dir() else None


def _read_config(folder: Path) -> dict[str, Any] | None:
    try:
        with open(folder / "config.json", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _has_weights(names: list[str]) -> bool:
    return any(n.endswith(_WEIGHT_SUFFIXES) and "tokenizer" not in n and "training_args" not in n for n in names)


def _classify_folder(folder: Path, names: list[str], catalog: AppModels) -> str | None:
    """The folder's kind for the app, or None (not a complete model of that kind)."""
    if catalog.kind_of is None:  # the embedding app: sentence-transformers folders
        return "sentence encoder" if any(m in names for m in _ST_MARKERS) and _has_weights(names) else None
    if "config.json" not in names or not _has_weights(names):
        return None
    config = _read_config(folder)
    return None if config is None else catalog.kind_of(config)


_scan_lock = threading.Lock()
_scans: dict[tuple[str, ...], tuple[float, list[LocalModel]]] = {}


def _kept(key: tuple[str, ...], compute: Callable[[], list[LocalModel]], max_age: float) -> list[LocalModel]:
    now = time.monotonic()
    with _scan_lock:
        hit = _scans.get(key)
    if hit is not None and now - hit[0] < max_age:
        return list(hit[1])
    found = compute()
    with _scan_lock:
        _scans[key] = (now, found)
    return list(found)


def scan_hf_cache(app: str | AppModels, *, cache_dir: str | Path | None = None,
                  max_age: float = SCAN_MAX_AGE) -> list[LocalModel]:
    """Models of the app's kind in the Hugging Face cache, newest first.

    A model repo counts when its newest snapshot holds ``config.json`` and a
    weights file (a repo from which only a configuration was read is not a
    model on this machine). Language and vision models are referred to by their
    Hub id; sentence encoders (embedding app) by ``sentence-transformers:`` and
    their snapshot folder. A missing or unreadable cache gives an empty list.
    """
    catalog = _catalog(app)
    folder = Path(cache_dir) if cache_dir is not None else hf_cache_dir()

    def compute() -> list[LocalModel]:
        from huggingface_hub import scan_cache_dir  # late: slow to import

        try:
            info = scan_cache_dir(folder)
        except Exception:  # no cache yet, or not a folder
            return []
        found: list[tuple[float, LocalModel]] = []
        for repo in info.repos:
            if repo.repo_type != "model" or not repo.revisions:
                continue
            revision = max(repo.revisions, key=lambda r: r.last_modified)
            names = sorted(f.file_name for f in revision.files)
            kind = _classify_folder(Path(revision.snapshot_path), names, catalog)
            if kind is None:
                continue
            if catalog.kind_of is None:
                ref, is_path = f"sentence-transformers:{revision.snapshot_path}", True
            else:
                ref, is_path = repo.repo_id, False
            found.append((revision.last_modified, LocalModel(ref, repo.repo_id, kind, "cache", is_path)))
        found.sort(key=lambda item: (-item[0], item[1].name))
        return [m for _, m in found[:MAX_LOCAL]]

    return _kept(("cache", catalog.key, str(folder)), compute, max_age)


def scan_models_dir(app: str | AppModels, *, folder: str | Path | None = None,
                    max_age: float = SCAN_MAX_AGE) -> list[LocalModel]:
    """Saved models of the app's kind in the models folder (``$BIASTEST_MODELS_DIR``), by name.

    One model per subfolder, one or two levels deep (``my-bert/`` or
    ``org/model/``), written by ``save_pretrained`` (``config.json`` and
    weights). For the embedding app: word-vector files in the formats that
    carry no code (``file:<path>``) and sentence-transformers folders. At most
    :data:`MAX_LOCAL` entries; no folder set or found gives an empty list.
    """
    catalog = _catalog(app)
    root = Path(folder).expanduser() if folder is not None else models_dir()
    if root is None or not root.is_dir():
        return []

    def compute() -> list[LocalModel]:
        found: list[LocalModel] = []

        def visit(path: Path, depth: int) -> None:
            if len(found) >= MAX_LOCAL:
                return
            try:
                entries = sorted(path.iterdir(), key=lambda p: p.name)
            except OSError:
                return
            names = [p.name for p in entries]
            kind = _classify_folder(path, names, catalog) if path != root else None
            if kind is not None:
                name = path.relative_to(root).as_posix()
                ref = f"sentence-transformers:{path}" if catalog.kind_of is None else str(path)
                found.append(LocalModel(ref, name, kind, "folder", True))
                return
            if path != root and "config.json" in names:
                return  # a saved model of another kind: its weights files are not word vectors
            for entry in entries:
                if len(found) >= MAX_LOCAL or entry.name.startswith("."):
                    continue
                if entry.is_dir() and depth < 2:
                    visit(entry, depth + 1)
                elif (catalog.kind_of is None and entry.is_file()
                      and entry.name.lower().endswith(tuple(SAFE_EMBEDDING_SUFFIXES))):
                    found.append(LocalModel(f"file:{entry}", entry.relative_to(root).as_posix(), "word vectors",
                                            "folder", True))

        visit(root, 0)
        return found

    return _kept(("folder", catalog.key, str(root.resolve())), compute, max_age)


def local_models(app: str | AppModels, *, public: bool | None = None, cache_dir: str | Path | None = None,
                 folder: str | Path | None = None) -> list[LocalModel]:
    """The app's models on this machine: the cache's, then the models folder's; none by path in public mode."""
    if public is None:
        public = policy.current().public
    found = [*scan_hf_cache(app, cache_dir=cache_dir), *scan_models_dir(app, folder=folder)]
    return [m for m in found if not (public and m.is_path)]


# --------------------------------------------------------------------------- the model list
@dataclass(frozen=True)
class Suggestion:
    """One entry of a model list.

    Attributes
    ----------
    value : str
        What the app loads (a Hub id, a folder, an embedding source).
    label : str
        What the list shows: the name and where it comes from.
    origin : str
        ``local``, ``embedded`` or ``hub``.
    works_now : bool
        False for a Hub id while the Hub cannot be reached.
    """

    value: str
    label: str
    origin: str
    works_now: bool


def suggestions(app: str | AppModels, *, hub: HubStatus | None = None, public: bool | None = None,
                cache_dir: str | Path | None = None, folder: str | Path | None = None) -> list[Suggestion]:
    """The app's model list: on this machine, embedded, then Hub ids (each once), labelled by origin.

    Parameters
    ----------
    app : {"lm", "vlm", "embeddings"} or AppModels
    hub : HubStatus, optional
        The Hub's state; None labels Hub ids "downloads when online" without
        probing (pass :func:`hub_status` to mark them when unreachable).
    public : bool, optional
        Public mode (default: the process's policy): nothing offered by path.
    cache_dir, folder :
        The Hugging Face cache and the models folder (defaults: huggingface_hub's
        cache, ``$BIASTEST_MODELS_DIR``).
    """
    catalog = _catalog(app)
    out: list[Suggestion] = []
    seen: set[str] = set()
    for m in local_models(catalog, public=public, cache_dir=cache_dir, folder=folder):
        if m.reference in seen:
            continue
        seen.add(m.reference)
        label = (LABEL_CACHED.format(ref=m.name, kind=m.kind) if m.where == "cache"
                 else LABEL_FOLDER.format(name=m.name, kind=m.kind))
        out.append(Suggestion(m.reference, label, ORIGIN_LOCAL, True))
    for value, label in catalog.embedded():
        if value not in seen:
            seen.add(value)
            out.append(Suggestion(value, LABEL_EMBEDDED.format(label=label), ORIGIN_EMBEDDED, True))
    offline = hub is not None and not hub.reachable
    for ref in catalog.hub_ids:
        if ref in seen:
            continue
        seen.add(ref)
        label = (LABEL_HUB_OFFLINE if offline else LABEL_HUB).format(ref=ref)
        out.append(Suggestion(ref, label, ORIGIN_HUB, not offline))
    return out


def default_reference(app: str | AppModels, *, public: bool | None = None, cache_dir: str | Path | None = None,
                      folder: str | Path | None = None) -> str:
    """The list's first entry that needs no download (on this machine, embedded), else its first Hub id."""
    entries = suggestions(app, public=public, cache_dir=cache_dir, folder=folder)
    ready = [s for s in entries if s.origin != ORIGIN_HUB]
    return (ready or entries)[0].value


def picker_note(app: str | AppModels, entries: list[Suggestion], hub: HubStatus | None) -> str:
    """The line under a model list: whether the Hub can be reached and what works; how to reach endpoints.

    Plain text (the caller escapes it for Markdown).
    """
    catalog = _catalog(app)
    parts: list[str] = []
    has_local = any(s.origin == ORIGIN_LOCAL for s in entries)
    has_embedded = any(s.origin == ORIGIN_EMBEDDED for s in entries)
    if not catalog.hub_ids:
        parts.append(MSG_NO_HUB_MODELS)
    elif hub is not None and not hub.reachable:
        if has_local or has_embedded:
            works = MSG_WORKS_OFFLINE_EMBEDDED if has_embedded else MSG_WORKS_OFFLINE_LOCAL
        else:
            or_endpoint = " (or test one behind an endpoint)" if catalog.endpoint_note else ""
            works = MSG_NOTHING_OFFLINE.format(what=catalog.what, or_endpoint=or_endpoint)
        parts.append(MSG_PICKER_OFFLINE.format(why=hub.why, works=works))
    else:
        parts.append(MSG_PICKER_ONLINE)
    if not catalog.embedded():
        parts.append(MSG_NO_EMBEDDED.format(what=catalog.what))
    if catalog.endpoint_note:
        parts.append(catalog.endpoint_note)
    return " ".join(parts)


# --------------------------------------------------------------------------- loading while offline
def cached_snapshot(repo_id: str, *, revision: str | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """The snapshot folder of a Hub model in the cache (its ``config.json`` is there), or None."""
    from huggingface_hub import try_to_load_from_cache  # late: slow to import

    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=str(cache_dir or hf_cache_dir()),
                                       revision=revision)
    except Exception:  # a malformed id or revision: not cached
        return None
    return Path(found).parent if isinstance(found, str) else None


def offline_source(model_id: str, *, revision: str | None = None, family: str = "lm") -> Path | None:
    """Where to load a Hub id from while the Hub cannot be reached; None while it can.

    Returns
    -------
    pathlib.Path or None
        The cached snapshot folder (loaded without asking the network), or None
        when the Hub can be reached (load as usual).

    Raises
    ------
    ModelLoadError
        :data:`MSG_HUB_OFFLINE` — the Hub cannot be reached and the model is
        not in the cache; raised within :data:`HUB_PROBE_TIMEOUT` seconds.
    """
    status = hub_status()
    if status.reachable:
        return None
    snapshot = cached_snapshot(model_id, revision=revision)
    if snapshot is not None:
        return snapshot
    catalog = CATALOGS.get(family, CATALOGS["lm"])
    raise ModelLoadError(MSG_HUB_OFFLINE.format(model_id=model_id, why=status.why, what=catalog.what),
                         model_id=model_id, why=status.why)
