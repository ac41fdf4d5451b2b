"""What every measure shares: typed options, typed results, and the :class:`Measure` record.

A measure is one folder under ``biastest/measures/`` (``options.py``, ``score.py``,
``result.py``, ``summary.py``, ``run.py``, ``report.py``, ``compare.py``) and one
:class:`Measure` record in :data:`biastest.measures.MEASURES`. This module holds the
three pieces they all build on:

* :class:`OptionsBase` — a frozen pydantic model. A measure's options declare their
  defaults on the fields; every field named in :data:`biastest.options.BOUNDS` is
  checked against its bound with the project's message constants, and
  :meth:`OptionsBase.parse` raises the measure's own :class:`~biastest.errors.BiastestError`
  (never a pydantic ``ValidationError``), so the CLI, the audit grid and the apps show
  the same words before any model loads.
* :class:`ResultBase` — a pydantic model with JSON written once: :meth:`~ResultBase.to_dict`,
  :meth:`~ResultBase.from_dict`, :meth:`~ResultBase.save_json`, :meth:`~ResultBase.load_json`.
  Result files written by earlier versions keep loading: a result overrides
  :meth:`ResultBase.upgrade` to map an old layout onto today's fields.
* :class:`Measure` — name, kind of model, options, run, result, report and comparison.

Examples
--------
>>> from pydantic import Field
>>> class Toy(OptionsBase):
...     seed: int = 0
...     n_resamples: int = Field(1000, description="bootstrap resamples")
>>> Toy.parse({"seed": 3}).seed
3
>>> Toy.parse({"seed": -1})
Traceback (most recent call last):
...
biastest.errors.OptionError: The seed must be a whole number from 0 to 4,294,967,295, got -1.
>>> Toy.parse({"sede": 1})
Traceback (most recent call last):
...
biastest.errors.OptionError: Unknown option 'sede'. Did you mean 'seed'?
"""

from __future__ import annotations

import difflib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from biastest.errors import BiastestError, DataError, MethodError, OptionError
from biastest.options import BOUNDS, check_option

__all__ = [
    "KINDS",
    "AuditUse",
    "Headless",
    "Inputs",
    "MSG_BAD_RESULT_FILE",
    "MSG_UNKNOWN_MEASURE",
    "MSG_UNKNOWN_OPTION_HINT",
    "Measure",
    "MeasureRegistry",
    "OptionsBase",
    "ResultBase",
    "cli_flag",
    "did_you_mean",
    "json_safe",
]

#: The kinds of model a measure takes (what the CLI's ``--model`` and the audit grid's models are).
KINDS = ("lm", "vlm", "embeddings", "chat", "classifier")

MSG_UNKNOWN_MEASURE = "Unknown measure '{name}'.{hint} Available: {choices}."
MSG_UNKNOWN_OPTION_HINT = "Unknown option '{name}'.{hint}"
MSG_BAD_RESULT_FILE = "This file is not a saved {what} result ({problem})."


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest of ``choices``, or an empty string.

    >>> did_you_mean("wat", ["weat", "2afc"])
    " Did you mean 'weat'?"
    """
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf) replaced by ``None``, recursively.

    JSON has no NaN: a result file must stay readable by any JSON reader.

    >>> json_safe({"a": float("nan"), "b": [1.0, float("inf")]})
    {'a': None, 'b': [1.0, None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


# --------------------------------------------------------------------------- options
class OptionsBase(BaseModel):
    """Base of every measure's options: frozen, no unknown fields, bounds from :data:`biastest.options.BOUNDS`.

    Subclasses declare fields with their defaults (``seed: int = 0``) and add
    ``field_validator``/``model_validator`` methods for their own choices and
    cross-field rules; a validator raises a :class:`~biastest.errors.BiastestError`
    with the measure's message constant, and :meth:`parse` re-raises it as it is.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=False, arbitrary_types_allowed=True)

    #: The error class raised for an option the measure does not know (a subclass may narrow it).
    unknown_error: ClassVar[type[BiastestError]] = OptionError

    @field_validator("*", mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: Any) -> Any:
        """Check every field named in :data:`biastest.options.BOUNDS` (``None`` passes when the default is ``None``)."""
        name = info.field_name
        if name in BOUNDS:
            if value is None and cls.model_fields[name].default is None:
                return None
            return check_option(name, value)
        return value

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """Validate ``values`` (and keyword values) into options, raising the project's own error.

        Parameters
        ----------
        values : mapping, optional
            Option name → value as a user gave it; ``None`` values are left out (the default applies).

        Raises
        ------
        OptionError
            An unknown option (with "did you mean"), or a value out of its bounds.
        BiastestError
            Whatever a measure's own validator raises (its ``MSG_*`` constant).
        """
        given = {k: v for k, v in {**dict(values or {}), **more}.items() if v is not None}
        unknown = sorted(set(given) - set(cls.model_fields))
        if unknown:
            name = unknown[0]
            hint = did_you_mean(name, cls.model_fields)
            raise cls.unknown_error(MSG_UNKNOWN_OPTION_HINT.format(name=name, hint=hint))
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            raise _first_error(exc) from None

    def dump(self) -> dict[str, Any]:
        """The options as JSON-ready values (the provenance records this)."""
        return json_safe(self.model_dump(mode="json"))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every option's default (fields without a default are left out)."""
        return {name: f.default for name, f in cls.model_fields.items() if not f.is_required()}


def _first_error(exc: ValidationError) -> BiastestError:
    """The project's error behind a pydantic ``ValidationError`` (its first error), or an :class:`OptionError`."""
    for err in exc.errors():
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, BiastestError):
            return original
    err = exc.errors()[0]
    name = ".".join(str(p) for p in err.get("loc", ())) or "options"
    return OptionError(f"The option '{name}' is not valid: {err.get('msg', 'bad value')}.", option=name)


# --------------------------------------------------------------------------- results
class ResultBase(BaseModel):
    """Base of every measure's result: JSON written once, old files upgraded on load.

    Fields hold what the run learned; ``provenance`` holds the options' dump plus what the
    run recorded (model, revision, versions, seed, time). Subclasses may keep numpy arrays or
    stats records as fields (``arbitrary_types_allowed``) as long as :meth:`to_dict` gives
    JSON-ready values (override ``model_serializer`` where a field needs its own form).
    """

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, frozen=False)

    #: How a message names this result ("stereotype-test"); subclasses set it.
    result_name: ClassVar[str] = "biastest"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (non-finite floats as ``None``)."""
        return json_safe(self.model_dump(mode="json"))

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Map a result written by an earlier version onto today's fields (default: unchanged)."""
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """A result from :meth:`to_dict`'s output (or an earlier version's), validated.

        Raises
        ------
        DataError
            With :data:`MSG_BAD_RESULT_FILE` when ``data`` is not this kind of result.
        """
        if not isinstance(data, Mapping):
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem="not a JSON object"))
        try:
            return cls.model_validate(cls.upgrade(dict(data)))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or "the file"
            problem = f"{where}: {err['type']}"
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem=problem)) from None

    def save_json(self, path: str | Path) -> Path:
        """Write the result as JSON (atomically: a crash leaves no half-written file)."""
        target = Path(path)
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=target.parent if str(target.parent) else ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load_json(cls, path: str | Path) -> Self:
        """Read a result written by :meth:`save_json` (of this version or an earlier one)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise DataError(MSG_BAD_RESULT_FILE.format(what=cls.result_name, problem=type(exc).__name__)) from None
        return cls.from_dict(data)


# --------------------------------------------------------------------------- headless runs (the CLI, audits)
def cli_flag(flag: str, help: str, *, metavar: str | None = None, endpoint: str | None = None) -> dict[str, Any]:
    """``json_schema_extra`` that puts an option on the command line (``run <measure> … FLAG VALUE``).

    Parameters
    ----------
    flag : str
        The flag (``"--bootstrap"``); its type, default and bounds are the field's.
    help : str
        One line for ``--help``.
    metavar : str, optional
    endpoint : {"only", "never"}, optional
        The option applies only to a model behind an endpoint, or never to one (the command line refuses it
        otherwise, naming the flag).
    """
    extra: dict[str, Any] = {"flag": flag, "help": help}
    if metavar:
        extra["metavar"] = metavar
    if endpoint:
        extra["endpoint"] = endpoint
    return extra


@dataclass(frozen=True)
class Inputs:
    """What a headless run hands a measure: the specification and the test data of the measure's kind.

    Attributes
    ----------
    spec : BiasSpec or TwoAFCSpec
    pairs : tuple of SentencePair
        Language models: the sentence pairs (from files or the dataset store).
    images : tuple of TestImage
        Vision-language models: the pictures, with ``image_root`` the folder their paths are relative to.
    image_root : Path, optional
    data : mapping
        Where the data came from (recorded in the run's document).
    embedding_files : tuple of str
        Word embeddings: more embedding files the user named (2AFC replicate models).
    trust_pickle : bool
        Word embeddings: the user opted in to gensim pickle files (``--trust-gensim-file``, command line only).
    """

    spec: Any
    pairs: tuple = ()
    images: tuple = ()
    image_root: Path | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    embedding_files: tuple[str, ...] = ()
    trust_pickle: bool = False


@dataclass
class Headless:
    """What a headless run produced: the result, what to record of it and how to export it.

    Attributes
    ----------
    test : str
        The document's ``test`` name (``stereotype-score``, ``2afc`` …).
    options : dict
        The options as recorded (secrets masked).
    result : ResultBase
    headline : str
        One line for the terminal.
    export : callable
        ``export() -> (csv_path, json_path)``: the app's downloads in a private temporary folder.
    extra : dict
        More keys of the document (WEAT's ``mac``).
    notices : list of str
        Lines for stderr (how an endpoint scored, why it stopped early).
    """

    test: str
    options: dict[str, Any]
    result: Any
    headline: str
    export: Callable[[], tuple[Path, Path]]
    extra: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the measure record
@dataclass(frozen=True)
class AuditUse:
    """What an audit needs of a measure beyond its record: ``MEASURE.extra["audit"]``, read by the audit.

    It lives here, below the audit, so a measure's own folder can say how an audit runs it (the audit,
    :mod:`biastest.audit.uses`, reads it; a measure may not import the audit).

    Attributes
    ----------
    label : str, optional
        The method's name in the grid and the table (default the measure's name).
    spec_type : {"bias", "twoafc", "none"}
        The specifications it takes (a bias specification, a 2AFC one of target words and cue pairs, or none: a
        benchmark with its own items, run once per model and seed whatever the grid's specifications).
    items : callable
        ``items(records) -> Items``: the measure's items from the audit's frozen records of a cell
        (:func:`biastest.audit.uses.items_for_kind`: ``pairs`` and ``spec``, or ``images``, ``image_root`` and ``spec``,
        or ``spec``).
    row : callable
        ``row(result, row)``: fill a table row (``score``, ``ci_low`` …) from the result's ``to_dict()``.
    statistic : str
        What the ``score`` column holds.
    defaults : mapping
        Defaults of a headless run that differ from the options' own (a single model's 2AFC needs noise).
    prepare : callable, optional
        ``prepare(values) -> values``: the cell's identity made ready to run (e.g. a method read from the model).
    more : callable, optional
        ``more(measure, options, items) -> dict``: further documents of the cell (WEAT's MAC).
    data_identity : callable, optional
        A benchmark (``spec_type`` none): ``data_identity(options) -> {"sha256", "count", "source"}`` of the data
        the cell will read (its key changes when the data does).
    default : bool
        Whether a model of the measure's kind runs it when the grid lists no method (False: only when listed, as
        for a measure that needs a model that answers).
    """

    spec_type: str
    items: Callable[[dict[str, Any]], Any]
    row: Callable[[dict[str, Any], dict[str, Any]], None]
    statistic: str
    label: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    more: Callable[[Measure, Any, Any], dict[str, Any]] | None = None
    data_identity: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    default: bool = True


@dataclass(frozen=True)
class Measure:
    """One measure: what the CLI, the audit grid and the apps need to know of it.

    Parameters
    ----------
    name : str
        The measure's name (the CLI's ``run NAME``, an audit grid's ``methods`` entry).
    kind : str
        The kind of model it tests, one of :data:`KINDS`.
    title : str
        One line for lists and help ("WEAT effect size and permutation test").
    Options : type of OptionsBase
        Its options (defaults, bounds, cross-field checks).
    run : callable
        ``run(options, items, *, progress=None, cancel=None) -> Result``.
    Result : type of ResultBase
        Its result (JSON save/load).
    report : module, optional
        Its report: tables, figures, CSV rows (``report.csv_rows(result)`` at least).
    compare : callable, optional
        ``compare(results, ...)``: a comparison of several models' results on the same items.
    aliases : tuple of str
        Other names that resolve to this measure (``2afc`` for ``twoafc``).
    card : str
        Path of its docs card, relative to the repository root.
    headless : callable, optional
        ``headless(values, inputs, *, api_key=None, progress=None) -> Headless``: a run from the command line's
        values (option name → value as given) and :class:`Inputs`. Without one the command line parses
        ``values`` with ``Options``, runs ``run(options, inputs)`` and writes ``report.csv_rows(result)``.
    prepare : callable, optional
        ``prepare(values) -> values``: the command line's values in the options' terms, before they are checked
        (defaults of the app that the options leave to their caller, a flag's own spelling such as 2AFC's
        ``--noise-sigma 0`` for no noise).
    spec_type : {"bias", "twoafc", "none"}
        The kind of specification it tests (a bias specification of groups and attributes, a 2AFC one of
        targets and cue pairs, or none: a benchmark that brings its own items, such as BBQ).
    label : str
        Its short name in the apps' lists and section titles (``"WEAT / MAC"``); its ``name`` when left empty.
    choices : mapping of str to tuple of str
        Option name → the values the apps offer for it, in the order they show them (the stereotype measure's
        scoring ``method``, the vision-language measure's ``combine``); the options check every value anyway.
    extra : mapping
        What one caller alone reads (the audit's ``methods`` variants, ``audit``/``cli`` switches, WEAT's MAC).
    """

    name: str
    kind: str
    title: str
    Options: type[OptionsBase]
    run: Callable[..., Any]
    Result: type[ResultBase]
    report: ModuleType | None = None
    compare: Callable[..., Any] | None = None
    aliases: tuple[str, ...] = ()
    card: str = ""
    headless: Callable[..., Headless] | None = None
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    spec_type: str = "bias"
    label: str = ""
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"measure {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if not self.label:
            object.__setattr__(self, "label", self.name)  # frozen: the one place the record fills itself in
        for option in self.choices:
            if option not in self.Options.model_fields:
                raise ValueError(f"measure {self.name!r}: choices name {option!r}, not one of its options")


class MeasureRegistry(Mapping[str, Measure]):
    """Name → :class:`Measure`, with aliases and "did you mean" (the one list of measures).

    >>> from pydantic import BaseModel
    >>> reg = MeasureRegistry([])
    >>> reg.get_measure("weat")
    Traceback (most recent call last):
    ...
    biastest.errors.MethodError: Unknown measure 'weat'. Available: .
    """

    def __init__(self, measures: Iterable[Measure]) -> None:
        self._by_name: dict[str, Measure] = {}
        for m in measures:
            self._add(m)

    def _add(self, measure: Measure) -> None:
        for key in (measure.name, *measure.aliases):
            if key in self._by_name or key in self._aliases():
                raise ValueError(f"measure name {key!r} is registered twice")
        self._by_name[measure.name] = measure

    def _aliases(self) -> dict[str, str]:
        return {a: m.name for m in self._by_name.values() for a in m.aliases}

    def __getitem__(self, name: str) -> Measure:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self, kind: str | None = None) -> list[str]:
        """The measures' names (of one kind of model), in registry order."""
        return [n for n, m in self._by_name.items() if kind is None or m.kind == kind]

    def get_measure(self, name: str) -> Measure:
        """The measure called ``name`` (or one of its aliases).

        Raises
        ------
        MethodError
            With :data:`MSG_UNKNOWN_MEASURE` and the closest name.
        """
        key = str(name).strip()
        key = self._aliases().get(key, key)
        if key in self._by_name:
            return self._by_name[key]
        choices = [*self._by_name, *self._aliases()]
        raise MethodError(MSG_UNKNOWN_MEASURE.format(name=name, hint=did_you_mean(key, choices),
                                                     choices=", ".join(self._by_name)))

    @contextmanager
    def registered(self, measure: Measure) -> Iterator[Measure]:
        """Register ``measure`` for the duration of a ``with`` block (tests, plug-ins)."""
        self._add(measure)
        try:
            yield measure
        finally:
            self._by_name.pop(measure.name, None)
