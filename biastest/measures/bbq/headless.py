"""A BBQ run without the app: the command line's ``run bbq`` (and an audit cell).

:func:`prepare` fills the seed of the apps (0) when none is given; :func:`cost` plans the run and says what
it will cost before anything is asked (the command line prints it and, for a hosted endpoint above the limit,
asks for confirmation); :func:`headless` checks the options, reads the BBQ folder (``--bbq-dir``, default
``<data dir>/bbq``), runs :func:`~biastest.measures.bbq.run.run` and says what to record: the options (the
endpoint without credentials, the key as ``***``), a headline and the CSV/JSON export.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from biastest.errors import UsageError
from biastest.measures.base import Headless, Inputs
from biastest.measures.bbq.cost import Cost, estimate_cost
from biastest.measures.bbq.data import BBQData, load_bbq
from biastest.measures.bbq.options import BBQOptions
from biastest.measures.bbq.prompt import MAX_TEMPLATE_CHARS
from biastest.measures.bbq.report import export_files, headline
from biastest.measures.bbq.run import BBQItems, data_dir_of, run
from biastest.options import DEFAULT_SEED
from biastest.remote import mask_secret, safe_base_url

__all__ = ["CLI_FLAGS", "DEFAULT_SEED", "MSG_TEMPLATE_FILE", "cost", "headless", "load_cached", "prepare"]

#: The seed of the apps' seed boxes.
MSG_TEMPLATE_FILE = "The prompt template file '{path}' cannot be read ({problem})."

#: The command line's flags that are not options (read by :func:`prepare`): (flag, argparse keywords).
CLI_FLAGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--template-file", {"metavar": "FILE", "help": "your own prompt template (UTF-8 text with {context}, "
                         "{question}, {a}, {b}, {c} once each); recorded verbatim"}),
    ("--no-cache", {"action": "store_true", "default": None,
                    "help": "ask every question again (neither read nor write the response cache)"}),
)


def _read_template(path: str) -> str:
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > 4 * MAX_TEMPLATE_CHARS:
            raise UsageError(MSG_TEMPLATE_FILE.format(path=path, problem="too large"))
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(MSG_TEMPLATE_FILE.format(path=path, problem=type(exc).__name__)) from None

_CACHE: dict[tuple, BBQData] = {}


def load_cached(folder: Path, categories: tuple[str, ...]) -> BBQData:
    """:func:`~biastest.measures.bbq.data.load_bbq`, remembered for the last folder read (files unchanged)."""
    root = Path(folder).expanduser()
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.glob("*"))
                  if p.is_file()) if root.is_dir() else ()
    key = (str(root.resolve()) if root.exists() else str(root), categories, stamp)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_bbq(root, categories)
    return _CACHE[key]


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms: the apps' seed when none is given, the text of
    ``--template-file`` as ``template_text`` (checked by the options), ``--no-cache`` as ``use_cache=False``. It may be
    applied twice (the command line applies it, then :func:`headless` does)."""
    given = {k: v for k, v in values.items() if v is not None}
    given.setdefault("seed", DEFAULT_SEED)
    if "model_id" in given:
        given["model_id"] = str(given["model_id"]).strip()
    path = given.pop("template_file", None)
    if path is not None:
        given["template_text"] = _read_template(str(path))
    if given.pop("no_cache", None):
        given["use_cache"] = False
    return given


def _items(options: BBQOptions) -> BBQItems:
    return BBQItems(load_cached(data_dir_of(options), options.categories))


def cost(values: Mapping[str, Any], inputs: Inputs | None = None) -> Cost:
    """The requests and tokens the run of ``values`` will cost (nothing is asked)."""
    options = BBQOptions.parse(prepare(values))
    return estimate_cost(options, _items(options))


def recorded_options(options: BBQOptions, api_key: str | None) -> dict[str, Any]:
    """The options as a document records them (no credentials; the key as ``***``)."""
    dumped = options.dump()
    if options.endpoint:
        dumped["endpoint"] = safe_base_url(options.endpoint)
        dumped["api_key"] = mask_secret(api_key)
        for name in ("device", "dtype", "revision"):
            dumped.pop(name, None)
    return dumped


def headless(values: Mapping[str, Any], inputs: Inputs | None = None, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None, model: Any = None) -> Headless:
    """Run BBQ with the options ``values``; see the module docstring."""
    options = BBQOptions.parse(prepare(values))
    result = run(options, _items(options), progress=progress, api_key=api_key, model=model)
    notices = [result.stop_message] if result.stop_message else []
    return Headless("bbq", recorded_options(options, api_key), result, headline(result),
                    lambda: export_files(result), notices=notices)
