"""Process-wide services the apps share, and the glue from UI inputs to the library.

No gradio here and no per-user data: the dataset store is built once per
process (like the model cache) and every function takes the user's inputs
as arguments and returns typed records. The command line and the audit load
their inputs with :mod:`biastest.inputs` and run the same measures
(:data:`biastest.measures.MEASURES`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biastest import public, settings
from biastest.errors import DataError, GenerationError
from biastest.generate import TEXT_GENERATORS, SentenceSettings, generate_sentences, make_text_generator
from biastest.generate.prompts import SENTENCE_PROMPTS
from biastest.generate.sentences import SentenceRun
from biastest.measures.stereotype.pairs import pairs_from_templates
from biastest.options import check_option
from biastest.records import SentencePair
from biastest.remote import RunLimits
from biastest.report.text import md_escape
from biastest.spec import BiasSpec
from biastest.store import DatasetStore, default_store_dir, importers
from biastest.store.retrieval import retrieve_pairs as store_pairs
from biastest.store.retrieval import retrieve_sentences
from biastest.store.shared import SharedDataset

__all__ = [
    "IMPORT_FORMATS",
    "Found",
    "GENERATION_MAX_SECONDS",
    "StoredSentenceRun",
    "StopSignals",
    "generate_pairs",
    "generation_limits",
    "import_pairs",
    "retrieve_pairs",
    "sentence_prompt_choices",
    "shared_dataset",
    "shared_store",
    "text_generator_choices",
]

Progress = Callable[[int, int, str], None]

#: File formats the import accepts (``auto`` guesses from the columns).
IMPORT_FORMATS = ("auto", "biastestgpt-pairs", "biastestgpt-sentences", "crows-pairs", "stereoset")

MSG_NEED_KEY = (
    "Type your OpenAI API key (it is used for this session only and never stored), or choose another generator."
)
MSG_NEED_BASE_URL = "Type the address of the OpenAI-compatible server, e.g. http://localhost:8000/v1."
MSG_NEED_MODEL = "Type the name of the generator model."
MSG_UNKNOWN_FORMAT = "Unknown file format '{value}'. Choose one of: {choices}."
MSG_NO_PAIRS_IN_FILE = "No sentence pairs could be read from {name}. {details}"
MSG_BAD_COUNT = "The number of sentences per attribute term must be between 1 and {limit}, got {value!r}."
MSG_COVERAGE_HEAD = "| attribute term | sentences | |\n|---|---|---|"
MSG_THIN = "⚠️ thin: generate more"

MAX_PER_ATTRIBUTE = 50
THIN_BELOW = 2

#: Longest a whole generation run (sentences or images) may take in the apps, in seconds; what was generated
#: before the limit is kept.
GENERATION_MAX_SECONDS = 300.0
#: Longest one request to a sentence generator may take (never longer than the time left in the run).
TEXT_REQUEST_TIMEOUT = 60.0
#: Longest one request to an image generator may take (never longer than the time left in the run).
IMAGE_REQUEST_TIMEOUT = 120.0

_store_lock = threading.Lock()
_stores: dict[str, Any] = {}


def shared_store():
    """The process-wide local dataset store (``BIASTEST_DATA_DIR``), built once."""
    root = str(default_store_dir())
    with _store_lock:
        if root not in _stores:
            _stores[root] = DatasetStore(root, writer="app")
        return _stores[root]


_datasets: dict[str, Any] = {}


def shared_dataset():
    """The process-wide link of the shared store to the shared Hugging Face dataset, started on first use.

    Built once per store (like the store and the model cache): it pulls in the background (at once, then every
    10 minutes, and on :meth:`~biastest.store.shared.SharedDataset.refresh`) and pushes what users generate when
    ``BIASTEST_HF_DATASET`` and ``HF_TOKEN`` are set (see :mod:`biastest.store.shared`). Never blocks: retrieval
    reads what the store holds.
    """
    store = shared_store()
    key = str(store.root)
    with _store_lock:
        if key not in _datasets:
            _datasets[key] = SharedDataset(store).start()
        return _datasets[key]


def generation_limits(*, request_timeout: float, max_seconds: float = GENERATION_MAX_SECONDS):
    """The apps' bounds of one generation run: an overall time limit and a per-request time-out.

    A request's time-out is never longer than the time left in the run
    (:class:`~biastest.remote.RunState`), so a hanging service holds
    a user for at most ``max_seconds`` (or until they press Stop).
    """
    return RunLimits(max_seconds=max_seconds, request_timeout=min(request_timeout, max_seconds))


@dataclass
class _Run:
    event: threading.Event
    active: int = 0


class StopSignals:
    """The stop signals of the generation runs of one app, one per user session.

    A process-wide service (each app builds one and passes it to its
    handlers): the Stop button sets the signal of its own session, and the
    run of that session (which checks it between requests, while a request
    is in flight and during backoff waits) ends early and keeps what it
    made. It holds only :class:`threading.Event` objects keyed by session
    id, and only from :meth:`arm` until the run ends (:meth:`running`),
    :meth:`disarm` or :meth:`forget` — no user data.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def arm(self, key: str) -> threading.Event:
        """Prepare the signal of the next run of session ``key`` (before the run is queued).

        A Stop pressed while the run waits in the queue is then honoured as
        soon as the run starts. While a run of the session is in progress,
        its signal is returned unchanged.
        """
        with self._lock:
            run = self._runs.get(key)
            if run is None or run.active == 0:
                run = self._runs[key] = _Run(threading.Event())
            return run.event

    @contextmanager
    def running(self, key: str) -> Iterator[threading.Event]:
        """The signal for a run of session ``key`` (armed or new), released when the run ends."""
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                run = self._runs[key] = _Run(threading.Event())
            run.active += 1
        try:
            yield run.event
        finally:
            with self._lock:
                run.active -= 1
                if run.active == 0 and self._runs.get(key) is run:
                    del self._runs[key]

    def is_running(self, key: str) -> bool:
        """Whether a run of session ``key`` is in progress."""
        with self._lock:
            run = self._runs.get(key)
            return run is not None and run.active > 0

    def stop(self, key: str) -> bool:
        """Ask the armed or running run of session ``key`` to stop; False when there is none."""
        with self._lock:
            run = self._runs.get(key)
        if run is None:
            return False
        run.event.set()
        return True

    def disarm(self, key: str) -> None:
        """Drop the signal of session ``key`` if no run of it is in progress (the run was never started)."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None and run.active == 0:
                del self._runs[key]

    def forget(self, key: str) -> None:
        """The session ended: stop its run, if any, and drop its signal."""
        with self._lock:
            run = self._runs.pop(key, None)
        if run is not None:
            run.event.set()


@dataclass(frozen=True)
class Found:
    """Pairs found in the store for a spec, and how well each attribute is covered."""

    pairs: tuple[SentencePair, ...]
    n_sentences: int
    counts: dict[str, int]
    coverage_markdown: str
    texts: tuple[str, ...] = ()
    sentence_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoredSentenceRun(SentenceRun):
    """A generation run (:class:`~biastest.generate.sentences.SentenceRun`) and where its records were stored.

    Attributes
    ----------
    shards : tuple of str
        The store files (relative to the store root) that the run's new sentences and pairs were written to
        (:attr:`~biastest.store.local.AddReport.shards`; empty when nothing new was stored).
    """

    shards: tuple[str, ...] = ()


def _coverage_markdown(spec: BiasSpec, counts: dict[str, int]) -> str:
    rows = [MSG_COVERAGE_HEAD]
    for term in spec.attribute_terms:
        n = counts.get(term, 0)
        rows.append(f"| {md_escape(term)} | {n} | {MSG_THIN if n < THIN_BELOW else ''} |")
    return "\n".join(rows)


def _store_of(dataset) -> Any:
    """The store the apps read and write: ``dataset``'s, or the process's shared dataset's (started on first use).

    Always the store a :class:`~biastest.store.shared.SharedDataset` watches, so its pusher hears every write (the
    process's shared dataset is built on :func:`shared_store`, the same instance).
    """
    return (dataset if dataset is not None else shared_dataset()).store


def retrieve_pairs(spec: BiasSpec, *, dataset=None) -> Found:
    """Every stored pair and template sentence that matches the spec's terms.

    ``dataset``: the :class:`~biastest.store.shared.SharedDataset` whose store is read (default: the process's,
    :func:`shared_dataset`). Never waits for the network: it reads what the store holds.
    """
    store = _store_of(dataset)
    sentences = retrieve_sentences(store, spec)
    found = store_pairs(store, spec, sentences=sentences)
    counts = dict(found.coverage.per_attribute)
    return Found(
        pairs=tuple(found.pairs),
        n_sentences=len(sentences.matches),
        counts=counts,
        coverage_markdown=_coverage_markdown(spec, counts),
        texts=sentences.texts,
        sentence_ids=tuple(dict.fromkeys(m.sentence.id for m in sentences.matches)),
    )


def import_pairs(path: str | Path, *, fmt: str, spec: BiasSpec | None) -> list[SentencePair]:
    """Read sentence pairs from a BiasTestGPT, CrowS-Pairs or StereoSet file.

    The file is read for this session only: nothing is added to the shared
    store (one user's upload never appears in another user's retrieval).
    BiasTestGPT *sentence* files are paired with the spec's counterparts.
    """
    if fmt not in IMPORT_FORMATS:
        raise DataError(MSG_UNKNOWN_FORMAT.format(value=fmt, choices=", ".join(IMPORT_FORMATS)))
    path = Path(path)
    raw = path.read_bytes()
    kind = fmt
    if kind == "auto":
        if path.suffix.lower() == ".json":
            kind = "stereoset"
        else:
            head = raw[:4096].decode("utf-8", "replace")
            kind = "crows-pairs" if "sent_more" in head and "sent_less" in head else "biastestgpt"
    reader = {
        "biastestgpt": importers.read_biastestgpt_csv,
        "biastestgpt-pairs": importers.read_biastestgpt_pairs,
        "biastestgpt-sentences": importers.read_biastestgpt_sentences,
        "crows-pairs": importers.read_crows_pairs,
        "stereoset": importers.read_stereoset_intrasentence,
    }[kind]
    result = reader(raw, name=path.name)
    pairs = list(result.pairs)
    if not pairs and result.sentences and spec is not None:
        pairs = list(pairs_from_templates(spec, result.sentences).pairs)
    if not pairs:
        raise DataError(MSG_NO_PAIRS_IN_FILE.format(name=path.name, details=result.message))
    return pairs


def text_generator_choices() -> list[tuple[str, str]]:
    """(kind, description) of every sentence generator."""
    return [(k, v[2]) for k, v in TEXT_GENERATORS.items()]


def sentence_prompt_choices() -> list[tuple[str, str]]:
    """(label, name) of every sentence prompt."""
    return [(f"{p.name} — {p.description}", p.name) for p in SENTENCE_PROMPTS.values()]


def generate_pairs(
    spec: BiasSpec,
    *,
    kind: str,
    api_key: str | None,
    base_url: str | None,
    model: str,
    per_attribute: int,
    prompt: str,
    seed: int,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    max_seconds: float = GENERATION_MAX_SECONDS,
    dataset=None,
) -> StoredSentenceRun:
    """Generate the sentences the spec is missing, store them, return the run and the store files written.

    The key is handed to the client and forgotten; it is not stored or logged.
    The run ends at ``max_seconds`` or when ``cancel`` is set; the sentences
    generated before that are stored and returned all the same (the
    report's message says why it stopped and how many were kept).

    They are written to ``dataset``'s store (default: the process's shared dataset, :func:`shared_dataset`),
    whose pusher shares them when sharing is on; :attr:`StoredSentenceRun.shards` names the files written, whose
    sync state :meth:`~biastest.store.shared.SharedDataset.item_state` tells.
    """
    if not isinstance(per_attribute, int) or not 1 <= per_attribute <= MAX_PER_ATTRIBUTE:
        raise GenerationError(MSG_BAD_COUNT.format(limit=MAX_PER_ATTRIBUTE, value=per_attribute))
    seed = check_option("seed", seed)
    model = (model or "").strip()
    if not model:
        raise GenerationError(MSG_NEED_MODEL)
    if kind == "openai":
        key = (api_key or "").strip() or settings.openai_api_key() or ""
        if not key:
            raise GenerationError(MSG_NEED_KEY)
        options: dict[str, Any] = {"model": model, "api_key": key}
    elif kind == "openai-compatible":
        if not (base_url or "").strip():
            raise GenerationError(MSG_NEED_BASE_URL)
        options = {"base_url": base_url.strip(), "model": model}
        if (api_key or "").strip():
            options["api_key"] = api_key.strip()
    else:
        options = {"model": public.check_model_reference(model)}  # a model loaded on this server
    generator = make_text_generator(kind, options)
    found = retrieve_pairs(spec, dataset=dataset)
    run = generate_sentences(
        spec,
        generator,
        SentenceSettings(seed=seed, target_per_attribute=per_attribute, prompt=prompt,
                         limits=generation_limits(request_timeout=TEXT_REQUEST_TIMEOUT, max_seconds=max_seconds)),
        existing_counts=found.counts,
        existing_texts=found.texts,
        progress=progress,
        cancel=cancel,
    )
    shards: tuple[str, ...] = ()
    if run.sentences or run.pairs:
        shards = tuple(_store_of(dataset).add(run.sentences, run.pairs).shards)
    return StoredSentenceRun(run.sentences, run.pairs, run.report, shards=shards)
