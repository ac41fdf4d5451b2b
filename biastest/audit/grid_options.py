"""A grid's ``methods`` and ``options``, read against :data:`biastest.measures.MEASURES`.

A ``methods`` entry names a measure (``weat``, ``2afc``/``twoafc``, ``vlm`` …) or one of a measure's named
variants (the stereotype measure's scoring methods ``causal-sum``, ``pll-unmodified`` …: a variant selects
that measure with ``method=<variant>``). A measure that gives no single score per cell
(``MEASURE.extra["audit"] = False``) is refused with its own words.

The ``options`` a grid may set for a cell are the fields of that measure's ``Options``
(:func:`biastest.audit.uses.grid_fields`); each value is checked by the Options of every measure of the
grid that takes it, before any model loads, and a mistake names where it is in the file (and, when the
value suits some measures and not others, for which). The defaults are the Options' own
(:meth:`~biastest.measures.base.OptionsBase.defaults`).
"""

from __future__ import annotations

import math
import numbers
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from biastest.audit.grid_common import (
    MSG_BAD_CHOICE,
    MSG_BAD_FLAG,
    MSG_BAD_SIGMA,
    MSG_BAD_TEMPLATES,
    MSG_DUPLICATE_ITEM,
    MSG_NOT_IN_AUDIT,
    MSG_UNKNOWN_METHOD,
    MSG_UNKNOWN_OPTION,
    GridError,
    as_list,
    as_mapping,
    hint,
    in_entry,
)
from biastest.audit.uses import (
    CELL_FIELDS,
    KIND_WORDS,
    audit_measures,
    grid_fields,
    label_of,
    use_of,
    variants,
)
from biastest.errors import BiastestError
from biastest.measures import MEASURES, Measure

__all__ = [
    "applies_words",
    "cell_options",
    "default_measure",
    "measure_of",
    "method_choices",
    "model_measures",
    "option_names",
    "parse_methods",
    "parse_options",
    "takers",
]

#: The data types a device's weights may be loaded in (a grid's ``dtype``).
DTYPES = ("auto", "float32", "float16", "bfloat16")


# --------------------------------------------------------------------------- methods
def method_choices() -> list[str]:
    """What a grid's ``methods`` may list: each measure's variants, or its name (``2afc`` for twoafc)."""
    return [name for m in audit_measures() for name in (variants(m) or (label_of(m),))]


def measure_of(method: str) -> Measure:
    """The measure a checked ``methods`` entry runs (a variant's measure, or the measure itself)."""
    for m in audit_measures():
        if method in variants(m) or method == label_of(m):
            return m
    return MEASURES.get_measure(method)


def _method(value: Any, where: str) -> str:
    name = str(value).strip().lower()
    choices = method_choices()
    if name in choices:
        return name
    try:
        measure = MEASURES.get_measure(name)
    except BiastestError:
        measure = None
    if measure is not None:
        if use_of(measure) is None:
            refusal = measure.extra.get("audit_refusal") or MSG_NOT_IN_AUDIT
            raise GridError(refusal.format(where=where, name=measure.name))
        if not variants(measure):
            return label_of(measure)
    names = [*choices, *MEASURES, *(a for m in MEASURES.values() for a in m.aliases)]
    raise GridError(MSG_UNKNOWN_METHOD.format(value=value, where=where, hint=hint(value, names),
                                              choices=", ".join(choices)))


def parse_methods(value: Any, where: str) -> tuple[str, ...]:
    """The ``methods`` entries as the table names them (a variant, or a measure's label), each once."""
    out: list[str] = []
    for v in as_list(value, "methods", where):
        name = _method(v, where)
        if name in out:
            raise GridError(MSG_DUPLICATE_ITEM.format(value=name, key="methods", where=where))
        out.append(name)
    return tuple(out)


def default_measure(kind: str, spec_type: str) -> Measure | None:
    """The measure a model of ``kind`` runs on a specification of ``spec_type`` when no method is listed."""
    for m in audit_measures(kind):
        if use_of(m).spec_type == spec_type and use_of(m).default:
            return m
    return None


def model_measures(kind: str, listed: Sequence[str] | None) -> list[Measure]:
    """The measures a model of ``kind`` may run: those listed for its kind, else its defaults (and benchmarks)."""
    chosen = _unique(measure_of(x) for x in (listed or ()))
    chosen = [m for m in chosen if m.kind == kind]
    if chosen:
        return chosen
    defaults = [m for t in ("bias", "twoafc") if (m := default_measure(kind, t)) is not None]
    return _unique([*defaults, *(m for m in audit_measures(kind) if use_of(m).spec_type == "none")])


def _unique(measures) -> list[Measure]:
    """Each measure once, in order (a record holds mappings: it is told apart by its name)."""
    return list({m.name: m for m in measures}.values())


# --------------------------------------------------------------------------- options
def option_names() -> list[str]:
    """Every option a grid may set: the fields of the audited measures' Options (less the cell's own)."""
    return list(dict.fromkeys(f for m in audit_measures() for f in grid_fields(m)))


def takers(name: str) -> list[Measure]:
    """The audited measures whose Options have the option ``name``."""
    return [m for m in audit_measures() if name in grid_fields(m)]


def applies_words(name: str) -> str:
    """Which measures take ``name``, in words: ``the stereotype test (the language models), …``."""
    return ", ".join(f"the {label_of(m)} test ({KIND_WORDS[m.kind]})" for m in takers(name))


def _stand_in(measure: Measure) -> dict[str, Any]:
    """Values for the Options' required fields, so one option can be checked on its own."""
    out: dict[str, Any] = {}
    for f, info in measure.Options.model_fields.items():
        if info.is_required():
            out[f] = 0 if f == "seed" else (variants(measure) or ("x",))[0] if f == "method" else "x"
    return out


def _field_type(name: str) -> Any:
    for m in takers(name):
        return m.Options.model_fields[name].annotation
    return None


def _grid_value(name: str, v: Any, where: str) -> Any:
    """A value as a grid writes it, in the form the Options take (with the grid's own messages)."""
    annotation = _field_type(name)
    if name == "noise_sigma":  # 0 is "no noise" (a deterministic step)
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) or v < 0:
            raise GridError(MSG_BAD_SIGMA.format(where=where, value=v))
        return None if v == 0 else v
    if name == "prompt_template":
        templates = [v] if isinstance(v, str) else v
        if not isinstance(templates, list) or not templates or not all(isinstance(t, str) for t in templates):
            raise GridError(MSG_BAD_TEMPLATES.format(where=where, value=v))
        return templates
    choices = DTYPES if name == "dtype" else typing.get_args(annotation) if typing.get_origin(
        annotation) is typing.Literal else None
    if choices and v not in choices:
        raise GridError(MSG_BAD_CHOICE.format(name=name, where=where, choices=", ".join(choices), value=v))
    if annotation is bool and not isinstance(v, bool):
        raise GridError(MSG_BAD_FLAG.format(name=name, where=where, value=v))
    return v


def _check(measure: Measure, name: str, value: Any) -> Any:
    """``value`` as ``measure``'s Options store it (dumped), or the Options' error."""
    return measure.Options.parse({**_stand_in(measure), name: value}).dump().get(name)


def parse_options(value: Any, where: str, measures: Mapping[str, Sequence[Measure]]) -> dict[str, Any]:
    """Check a grid's or a model's ``options``; return them in the Options' form.

    Parameters
    ----------
    value : Any
        The ``options`` mapping as written.
    where : str
        Where it is in the file (``options``, ``model 2 ('gpt2') options``).
    measures : mapping
        Option name → the measures of this grid that would take it from here (the grid's options do not reach a
        model that sets its own). A value is checked by each of them; an option none of them takes is left to the
        caller (:data:`MSG_OPTION_UNUSED`, :data:`MSG_KEY_NOT_FOR_MODEL`).

    Raises
    ------
    GridError
        An unknown option, or a value of the wrong form.
    BiastestError
        The Options' own error, after ``where`` (and, when the value suits some measures and not others, for
        which ones).
    """
    opts = as_mapping(value, where)
    names = option_names()
    out: dict[str, Any] = {}
    for name, v in opts.items():
        if name not in names:
            raise GridError(MSG_UNKNOWN_OPTION.format(name=name, where=where, hint=hint(name, names),
                                                      choices=", ".join(names)))
        v = _grid_value(name, v, where)
        verdicts: dict[str, Any] = {}
        for m in takers(name):
            try:
                verdicts[m.name] = _check(m, name, v)
            except BiastestError as exc:
                verdicts[m.name] = exc
        errors = {n: e for n, e in verdicts.items() if isinstance(e, BiastestError)}
        relevant = [m for m in measures.get(name, ()) if m.name in verdicts]
        for m in relevant:
            if m.name in errors:
                exc = errors[m.name]
                same = len(errors) == len(verdicts) and len({e.message for e in errors.values()}) == 1
                raise in_entry(where if same else f"{where} (for {_words(m, name)})", exc) from None
        if relevant:
            out[name] = verdicts[relevant[0].name]
        else:
            accepted = [x for x in verdicts.values() if not isinstance(x, BiastestError)]
            out[name] = accepted[0] if accepted else v
    return out


def _words(measure: Measure, name: str) -> str:
    same_kind = [m for m in takers(name) if m.kind == measure.kind]
    return KIND_WORDS[measure.kind] if len(same_kind) == 1 else f"the {label_of(measure)} test"


def endpoint_rule(measure: Measure, name: str) -> str | None:
    """``"only"`` (the option applies only behind an endpoint), ``"never"``, or None: as the option's field says
    (:func:`biastest.measures.base.cli_flag`)."""
    field = measure.Options.model_fields.get(name)
    extra = field.json_schema_extra if field is not None and isinstance(field.json_schema_extra, Mapping) else {}
    return extra.get("endpoint")


def cell_options(measure: Measure, given: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's options, checked by the measure's Options: the defaults, the headless defaults, then ``given``.

    ``identity`` fills the cell's own fields (model, seed, method …); they are checked with the rest and left
    out of the returned options (the cell records them apart). An option that does not apply to the cell's
    model — one for a model in this process when it is behind an endpoint, or the reverse — does not reach it
    (a grid's options apply where they apply).
    """
    fields = set(grid_fields(measure))
    use = use_of(measure)
    behind = identity.get("endpoint") is not None
    applies = {k for k in fields if endpoint_rule(measure, k) != ("never" if behind else "only")}
    values = {**use.defaults, **{k: v for k, v in given.items() if k in applies}}
    own = {k: v for k, v in identity.items() if k in measure.Options.model_fields}
    options = measure.Options.parse({**values, **own})
    return {k: v for k, v in options.dump().items() if k not in CELL_FIELDS}


def scope_of(measure: Measure, endpoint: bool) -> str:
    """A cell's scope: ``lm``/``vlm`` (``-endpoint`` behind one) by kind of model, else the measure's label."""
    if measure.kind == "embeddings":
        return label_of(measure)
    return f"{measure.kind}-endpoint" if endpoint else measure.kind


def scope_defaults() -> dict[str, dict[str, Any]]:
    """The options of a cell left at its defaults, per scope (``lm``, ``lm-endpoint``, ``vlm`` … ``2afc``)."""
    out: dict[str, dict[str, Any]] = {}
    for m in audit_measures():
        for endpoint in (False, True) if m.kind != "embeddings" else (False,):
            identity = {**_stand_in(m), **({"endpoint": "http://127.0.0.1:1/v1"} if endpoint else {})}
            for method in variants(m) or (identity.get("method"),):  # the first variant that runs there
                try:
                    out.setdefault(scope_of(m, endpoint), cell_options(m, {}, {**identity, "method": method}))
                    break
                except BiastestError:
                    continue
    return out
