"""``run <measure> SPEC …``: one subcommand per measure of :data:`biastest.measures.MEASURES`.

Each subcommand is made from its measure: the flags are the measure's options that declare one
(:func:`biastest.measures.base.cli_flag`), with their types, defaults and checks; the test data flags are those
of the measure's kind of model (``--pairs``/``--format``/``--pairing``/``--store`` for language models,
``--images``/``--store`` for vision-language models, ``--trust-gensim-file`` for word embeddings); a measure whose
options hold an ``endpoint`` also takes ``--api-key-env``. A flag that another measure takes but this one does not
is refused with the measures it applies to — no table lists which option applies where. A measure that sets
``extra={"cli": False}`` has no subcommand.

The form of earlier versions, ``run SPEC --kind lm|vlm|embeddings [--test 2afc|weat|bayes]``, still works: the
kind (and test) name the measure (:func:`legacy_measure`), and messages speak in that form.

Flow: the measure's flags are parsed and each bounded value checked (:mod:`biastest.options`), the output files
checked, the specification loaded and matched to the measure, a model behind an endpoint checked (its key read
from the variable ``--api-key-env`` names, never from the command line), the test data loaded
(:mod:`biastest.inputs`), and the measure's ``headless`` run (or, for a measure without one, ``Options.parse`` and
``run``) gives the result, the recorded options and the headline. The JSON written by ``--out`` holds the
result's ``to_dict()``, the specification, the options and where the data came from; ``--csv`` the app's table.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from biastest import __version__, settings
from biastest.cli.common import (
    MSG_WROTE,
    Parser,
    check_choice,
    copy_export,
    output_path,
    printing_progress,
    write_atomic,
)
from biastest.cli.flags import Flag, add_flags, flags_of, given_values
from biastest.errors import BiastestError, SpecError, UsageError
from biastest.inputs import (
    MSG_FILE_NOT_FOUND,
    embedding_source,
    images_from_folder,
    images_from_store,
    load_spec,
    pairs_from_files,
    pairs_from_store,
)
from biastest.measures import MEASURES, Measure
from biastest.measures.base import Headless, Inputs
from biastest.models.embeddings import DEBIAS_METHODS, debiased_source
from biastest.models.endpoint_lm import check_endpoint_url
from biastest.options import BOUNDS, check_option
from biastest.report.export import private_dir, write_csv, write_json
from biastest.spec import TwoAFCSpec

__all__ = [
    "KINDS",
    "MSG_2AFC_NEEDS_TWOAFC_SPEC",
    "MSG_BAD_KEY_ENV",
    "MSG_CONFIRM_NEEDED",
    "MSG_CONFIRM_PROMPT",
    "MSG_KEY_ENV_UNSET",
    "MSG_MEASURE_NEEDS_TWOAFC_SPEC",
    "MSG_NEEDS_ENDPOINT",
    "MSG_NOT_WITH_ENDPOINT",
    "MSG_NO_ENDPOINT_MODEL",
    "MSG_NOT_CONFIRMED",
    "MSG_NO_MODEL",
    "MSG_OPTION_NOT_FOR_RUN",
    "MSG_SAME_OUTPUT",
    "MSG_SPEC_NOT_FOR_KIND",
    "MSG_TEST_NEEDS_BIAS_SPEC",
    "MSG_TOO_FEW_REPLICATES",
    "MSG_UNKNOWN_FLAG",
    "MSG_UNKNOWN_KIND",
    "MSG_UNKNOWN_MODEL_KIND",
    "MSG_UNKNOWN_DEBIAS",
    "MSG_UNKNOWN_TEST",
    "add_run_parser",
    "cli_measures",
    "cmd_run",
    "legacy_argv",
    "legacy_name",
    "model_kind_argv",
    "refuse_other_flags",
]

#: The kinds of model (the ``--kind`` of earlier versions, and ``list-specs --kind``).
KINDS = ("lm", "vlm", "embeddings")
#: An example model per kind, for the message of a missing ``--model``.
MODEL_EXAMPLES = {"lm": "gpt2", "vlm": "openai/clip-vit-base-patch32", "chat": "Qwen/Qwen2.5-0.5B-Instruct",
                  "classifier": "distilbert-base-uncased-finetuned-sst-2-english"}

MSG_UNKNOWN_KIND = "Unknown kind of test '{value}'.{hint} Choose one of: {choices}."
MSG_UNKNOWN_MODEL_KIND = "Unknown --model-kind '{value}' for this measure.{hint} Choose one of: {choices}."
MSG_UNKNOWN_TEST = "Unknown embedding test '{value}'.{hint} Choose one of: {choices}."
MSG_NO_MODEL = "Give the model to test with --model (a Hugging Face Hub id such as {example}, or a local folder)."
MSG_SPEC_NOT_FOR_KIND = (
    "'{name}' is a 2AFC (psychophysics) specification of target words and cue pairs; it can only be run with "
    "--kind embeddings (test 2afc)."
)
MSG_TEST_NEEDS_BIAS_SPEC = (
    "The {test} test needs a bias specification with two social groups and two attribute lists, but '{name}' is a "
    "2AFC specification. Use --test 2afc, or choose another specification (list-specs --kind embeddings)."
)
MSG_2AFC_NEEDS_TWOAFC_SPEC = (
    "The 2afc test needs target words and cue pairs, but '{name}' is a bias specification. Use --test weat or "
    "--test bayes, or choose a 2AFC specification (list-specs --kind embeddings)."
)
MSG_MEASURE_NEEDS_TWOAFC_SPEC = (
    "run {measure} needs a 2AFC specification of target words and cue pairs, but '{name}' is a bias specification. "
    "Choose a 2AFC specification (list-specs --kind embeddings lists them)."
)
MSG_OPTION_NOT_FOR_RUN = "The option {option} does not apply to {what}; it applies to {applies}. Leave it out."
MSG_UNKNOWN_FLAG = "The option {option} is not an option of any test. See python -m biastest run {measure} --help."
MSG_SAME_OUTPUT = "--out and --csv name the same file '{path}'. Give two different files."
MSG_NEEDS_ENDPOINT = (
    "The option {option} applies only to a model behind an endpoint; give --endpoint URL too, or leave it out."
)
MSG_NOT_WITH_ENDPOINT = (
    "The option {option} does not apply to a model behind an endpoint (the server decides where and how it runs). "
    "Leave it out."
)
MSG_NO_ENDPOINT_MODEL = (
    "Give the name of the model the endpoint serves with --model (for example meta-llama/Llama-3.1-8B; the server's "
    "model list shows it)."
)
MSG_BAD_KEY_ENV = (
    "--api-key-env takes the name of an environment variable that holds the key (such as MY_ENDPOINT_KEY), not the "
    "key itself: keys never go on the command line."
)
MSG_KEY_ENV_UNSET = (
    "The environment variable named by --api-key-env is not set or is empty. Set it to the endpoint's key first "
    "(export NAME=…), then run again."
)
MSG_CONFIRM_NEEDED = (
    "This run asks a hosted endpoint {requests:,} questions (more than {limit:,}); it may cost money. Run it again "
    "with --yes to confirm."
)
MSG_CONFIRM_PROMPT = "Ask {requests:,} questions of the hosted endpoint? [y/N] "
MSG_NOT_CONFIRMED = "Not confirmed: nothing was asked."
MSG_UNKNOWN_DEBIAS = "Unknown --debias '{value}'.{hint} Choose one of: {choices}."
MSG_TOO_FEW_REPLICATES = "Give at least two replicate embedding files (--replicate FILE, once per file); got {count}."

_KEY_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


# --------------------------------------------------------------------------- which measures, which flags
def cli_measures() -> list[Measure]:
    """The measures with a ``run`` subcommand, in registry order."""
    return [m for m in MEASURES.values() if Mapping.get(m.extra, "cli", True)]


def _takes_endpoint(measure: Measure) -> bool:
    return "endpoint" in measure.Options.model_fields


#: The test-data flags of each kind of model: (flag, argparse keywords).
INPUT_FLAGS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "lm": (
        ("--pairs", {"action": "append", "metavar": "FILE", "help": "sentence pairs file (BiasTestGPT CSV, "
                     "CrowS-Pairs CSV, StereoSet JSON); repeatable (default: the pairs in the dataset store)"}),
        ("--format", {"help": "format of the --pairs files (default auto)"}),
        ("--pairing", {"help": "counterparts when building pairs from stored sentences: positional or all"}),
        ("--store", {"metavar": "DIR", "help": "dataset store folder (default: $BIASTEST_DATA_DIR or the apps')"}),
    ),
    "vlm": (
        ("--images", {"metavar": "DIR", "help": "folder with one subfolder per image term, or a manifest CSV/JSON"}),
        ("--store", {"metavar": "DIR", "help": "dataset store folder (default: $BIASTEST_DATA_DIR or the apps')"}),
    ),
    "spec": (),  # a 2AFC specification asked of a model that answers: its words are the test data
    "embeddings": (
        ("--trust-gensim-file", {"action": "store_true", "default": None,
                                 "help": "also open gensim .kv/.model/.wv files (--model, --replicate). They are "
                                 "pickles: opening one RUNS THE CODE IN THE FILE. Only for files you made yourself "
                                 "or fully trust"}),
        ("--debias", {"metavar": "METHOD", "help": "test the embedding after a debiasing transform: hard (hard "
                      "debiasing, Bolukbasi et al. 2016, with the authors' word lists; recorded as '<model> + "
                      "hard-debias(bolukbasi2016)'); applies to --model and every --replicate"}),
    ),
    "chat": (),
    "classifier": (),  # a text classifier: the measure writes its sentences from the specification
}
YES_FLAG = ("--yes", {"action": "store_true", "default": None,
                      "help": "run without asking, even when a hosted endpoint is asked many questions"})
API_KEY_FLAG = ("--api-key-env", {"metavar": "VAR", "help": "name of the environment variable that holds the "
                                  "endpoint's key (never the key itself)"})


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def input_kind(measure: Measure) -> str:
    """Which test data a measure reads (a key of :data:`INPUT_FLAGS`): its kind's, or only the specification for a
    2AFC measure of a model that is not a word embedding (its targets and cue pairs are the questions)."""
    return "spec" if measure.spec_type == "twoafc" and measure.kind != "embeddings" else measure.kind


def _extra_flags(measure: Measure) -> list[tuple[str, dict[str, Any]]]:
    return [*INPUT_FLAGS[input_kind(measure)], *([API_KEY_FLAG] if _takes_endpoint(measure) else []),
            *_own_flags(measure), *([YES_FLAG] if _cost_of(measure) is not None else [])]


def _own_flags(measure: Measure) -> tuple[tuple[str, dict[str, Any]], ...]:
    """Flags a measure declares that are not options (``extra["cli_flags"]``); its ``prepare`` reads them."""
    return tuple(Mapping.get(measure.extra, "cli_flags", ()))


def _cost_of(measure: Measure) -> Callable[..., Any] | None:
    """The measure's cost before a run (``extra["cost"]``: ``cost(values, inputs)`` with ``text`` and
    ``needs_confirmation``), or None."""
    return Mapping.get(measure.extra, "cost")


def _has_spec(measure: Measure) -> bool:
    """A measure that tests a specification (a benchmark with its own items, ``spec_type`` none, does not)."""
    return measure.spec_type != "none"


def _flag_names(measure: Measure) -> set[str]:
    return {f.flag for f in flags_of(measure.Options)} | {flag for flag, _ in _extra_flags(measure)}


def add_run_parser(sub: Any) -> None:
    """Add ``run`` with one subcommand per measure of :func:`cli_measures` to the command line's subparsers."""
    run = sub.add_parser("run", help="run one bias test and write the result",
                         description="Run one bias test with the same code as the app and write the result as JSON "
                         "(and CSV). The earlier form run SPEC --kind … [--test …] still works.")
    measures = run.add_subparsers(dest="measure", metavar="MEASURE", parser_class=Parser)
    measures.required = True
    for m in cli_measures():
        p = measures.add_parser(m.name, aliases=list(m.aliases), help=m.title, description=m.title,
                                allow_abbrev=False)
        if _has_spec(m):
            p.add_argument("spec", metavar="SPEC", help="predefined specification name (list-specs) or JSON file path")
        p.add_argument("--out", required=True, help="result JSON file to write")
        p.add_argument("--csv", help="also write the per-item table as CSV (as the app's download)")
        p.add_argument("--progress", action="store_true", help="print progress to stderr")
        add_flags(p, flags_of(m.Options))
        for flag, kw in _extra_flags(m):
            p.add_argument(flag, dest=_dest(flag), **kw)


# --------------------------------------------------------------------------- the form of earlier versions
@dataclass(frozen=True)
class Legacy:
    """A ``run SPEC --kind … [--test …]`` command line: the measure it names and how messages name runs."""

    measure: Measure


def legacy_name(measure: Measure) -> str:
    """How the earlier form names a measure's run: ``lm``/``vlm`` for the one measure of that kind, else its test."""
    return measure.kind if measure.kind != "embeddings" else (measure.aliases[0] if measure.aliases else measure.name)


def _legacy_label(measure: Measure) -> str:
    if measure.kind not in KINDS:  # a measure the earlier form never had (bbq): its own subcommand
        return f"run {measure.name}"
    return legacy_name(measure) if measure.kind != "embeddings" else f"--test {legacy_name(measure)}"


def _legacy_what(measure: Measure) -> str:
    base = f"--kind {measure.kind}"
    return base if measure.kind != "embeddings" else f"{base} --test {legacy_name(measure)}"


def _pop_flag(argv: list[str], flag: str) -> str | None:
    """Remove ``flag VALUE`` (or ``flag=VALUE``) from ``argv``; its value, or None."""
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            value = argv[i + 1]
            del argv[i:i + 2]
            return value
        if token.startswith(flag + "="):
            del argv[i]
            return token.split("=", 1)[1]
    return None


def _first_positional(argv: Sequence[str], switches: set[str]) -> str | None:
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token.startswith("--"):
            skip = "=" not in token and token not in switches
            continue
        return token
    return None


def legacy_argv(argv: Sequence[str]) -> tuple[list[str], Legacy | None]:
    """``run SPEC --kind K [--test T] …`` rewritten as ``run <measure> SPEC …``; other command lines unchanged.

    Raises
    ------
    UsageError
        :data:`MSG_UNKNOWN_KIND` or :data:`MSG_UNKNOWN_TEST` (with "did you mean").
    """
    args = list(argv)
    names = {n for m in cli_measures() for n in (m.name, *m.aliases)}
    if len(args) < 2 or args[0] != "run" or args[1] in names or args[1] in ("-h", "--help"):
        return args, None
    if not any(a == "--kind" or a.startswith("--kind=") for a in args):
        return args, None  # argparse says what is missing
    rest = args[1:]
    kind = check_choice(_pop_flag(rest, "--kind") or "", KINDS, MSG_UNKNOWN_KIND)
    test = _pop_flag(rest, "--test")
    of_kind = [m for m in cli_measures() if m.kind == kind]
    if kind != "embeddings":
        measure = of_kind[0]
    elif test is not None:
        tests = [legacy_name(m) for m in of_kind]
        measure = of_kind[tests.index(check_choice(test, tests, MSG_UNKNOWN_TEST))]
    else:  # the earlier default: 2afc for a 2AFC specification, else the first test of a bias specification
        switches = {f for f, kw in INPUT_FLAGS["embeddings"] if kw.get("action") == "store_true"}
        switches |= {"--progress", "--lapse"}
        spec = _first_positional(rest, switches)
        spec_type = "twoafc" if spec is not None and isinstance(load_spec(spec), TwoAFCSpec) else "bias"
        measure = next(m for m in of_kind if m.spec_type == spec_type)
    return ["run", measure.name, *rest], Legacy(measure)


# --------------------------------------------------------------------------- --model-kind: a measure's variants
#: How ``--model-kind`` names a measure's own kind of model.
MODEL_KIND_WORDS = {"embeddings": "embedding", "lm": "lm", "vlm": "vlm"}


def model_kind_argv(argv: Sequence[str]) -> list[str]:
    """``run <measure> … --model-kind K`` rewritten as ``run <variant> …``; other command lines unchanged.

    A measure declares itself the ``K`` variant of another with ``extra["model_kind"] = (other, K)`` (``twoafc-chat``
    is ``("twoafc", "chat")``, so ``run twoafc SPEC --model-kind chat`` runs it); no table lists variants. The
    measure's own kind (``embedding`` for ``twoafc``) keeps the measure.

    Raises
    ------
    UsageError
        :data:`MSG_UNKNOWN_MODEL_KIND` (with "did you mean").
    """
    args = list(argv)
    if len(args) < 2 or args[0] != "run" or not any(a == "--model-kind" or a.startswith("--model-kind=")
                                                    for a in args[2:]):
        return args
    try:
        base = MEASURES.get_measure(args[1])
    except BiastestError:
        return args  # not a measure's name: the earlier form or argparse says what is wrong
    rest = args[2:]
    value = _pop_flag(rest, "--model-kind") or ""
    variants = {m.extra["model_kind"][1]: m for m in cli_measures()
                if tuple(Mapping.get(m.extra, "model_kind", ()))[:1] == (base.name,)}
    own = MODEL_KIND_WORDS.get(base.kind, base.kind)
    kind = check_choice(value, [own, *variants], MSG_UNKNOWN_MODEL_KIND)
    return ["run", base.name if kind == own else variants[kind].name, *rest]


# --------------------------------------------------------------------------- checks before anything loads
def refuse_other_flags(extras: Sequence[str], measure: Measure, legacy: Legacy | None) -> None:
    """Refuse the flags ``measure`` does not take, naming the measures that take them.

    Raises
    ------
    UsageError
        :data:`MSG_OPTION_NOT_FOR_RUN`, or :data:`MSG_UNKNOWN_FLAG` for a flag no measure takes.
    """
    for token in extras:
        if not token.startswith("--"):
            continue
        flag = token.split("=", 1)[0]
        takers = [m for m in cli_measures() if flag in _flag_names(m)]
        if not takers:
            raise UsageError(MSG_UNKNOWN_FLAG.format(option=flag, measure=measure.name))
        if legacy is not None:
            what, applies = _legacy_what(measure), ", ".join(dict.fromkeys(_legacy_label(m) for m in takers))
        else:
            what, applies = f"run {measure.name}", ", ".join(m.name for m in takers)
        raise UsageError(MSG_OPTION_NOT_FOR_RUN.format(option=flag, what=what, applies=applies))


def check_bounds(values: Mapping[str, Any]) -> None:
    """Check every bounded value given (:data:`biastest.options.BOUNDS`) before anything is read or loaded."""
    for name, value in values.items():
        if name in BOUNDS and value is not None and not isinstance(value, list | tuple):
            check_option(name, value)


def precheck(measure: Measure, values: Mapping[str, Any]) -> None:
    """Check the given values with the measure's options before anything loads (what the run fills in later —
    a default that depends on the model — may still be missing)."""
    try:
        measure.Options.model_validate(dict(values))
    except ValidationError as exc:
        for e in exc.errors():
            if e.get("type") == "missing":
                continue
            original = (e.get("ctx") or {}).get("error")
            if isinstance(original, BiastestError):
                raise original from None
            measure.Options.parse(values)  # the options' own words for it
            raise


def check_spec(spec: Any, measure: Measure, legacy: Legacy | None) -> None:
    """The specification is the kind the measure tests (a bias specification, or a 2AFC one)."""
    is_2afc = isinstance(spec, TwoAFCSpec)
    if measure.spec_type == "twoafc" and not is_2afc:
        if measure.kind != "embeddings":
            raise SpecError(MSG_MEASURE_NEEDS_TWOAFC_SPEC.format(measure=measure.name, name=spec.name))
        raise SpecError(MSG_2AFC_NEEDS_TWOAFC_SPEC.format(name=spec.name))
    if measure.spec_type != "twoafc" and is_2afc:
        if measure.kind == "embeddings":
            raise SpecError(MSG_TEST_NEEDS_BIAS_SPEC.format(test=legacy_name(measure), name=spec.name))
        raise SpecError(MSG_SPEC_NOT_FOR_KIND.format(name=spec.name))


def endpoint_key(args: argparse.Namespace, values: dict[str, Any], measure: Measure) -> str | None:
    """Check the endpoint options (before anything is sent or loaded); the key from ``--api-key-env``, or None.

    The key is read from the environment variable the user named, never from the command line; no message
    quotes it.
    """
    flags = flags_of(measure.Options)
    key_env = getattr(args, "api_key_env", None)
    if values.get("endpoint") is None:
        if key_env is not None:
            raise UsageError(MSG_NEEDS_ENDPOINT.format(option="--api-key-env"))
        for f in flags:
            if f.endpoint == "only" and f.option in values:
                raise UsageError(MSG_NEEDS_ENDPOINT.format(option=f.flag))
        if measure.kind in MODEL_EXAMPLES and not str(values.get("model_id") or "").strip():
            raise UsageError(MSG_NO_MODEL.format(example=MODEL_EXAMPLES[measure.kind]))
        return None
    for f in flags:
        if f.endpoint == "never" and f.option in values:
            raise UsageError(MSG_NOT_WITH_ENDPOINT.format(option=f.flag))
    if not str(values.get("model_id") or "").strip():
        raise UsageError(MSG_NO_ENDPOINT_MODEL)
    key = None
    if key_env is not None:
        if not _KEY_ENV.fullmatch(key_env.strip()):
            raise UsageError(MSG_BAD_KEY_ENV)
        key = settings.secret_from(key_env.strip())
        if key is None:
            raise UsageError(MSG_KEY_ENV_UNSET)
    values["endpoint"] = check_endpoint_url(values["endpoint"])
    return key


def embedding_values(values: dict[str, Any], debias: str | None = None) -> None:
    """The embedding the user named (``--model``) as a source, and replicate files as ``file:`` sources.

    With ``debias`` (``--debias hard``) every source becomes its debiased version
    (:func:`~biastest.models.embeddings.debiased_source`); an unknown method is :data:`MSG_UNKNOWN_DEBIAS`
    (before anything loads).
    """
    method = check_choice(debias, DEBIAS_METHODS, MSG_UNKNOWN_DEBIAS) if debias is not None else None
    values["source"] = embedding_source(values.get("source"))
    replicates = values.get("replicates")
    if replicates:
        if len(replicates) < 2:
            raise UsageError(MSG_TOO_FEW_REPLICATES.format(count=len(replicates)))
        for f in replicates:
            if not Path(f).expanduser().is_file():
                raise UsageError(MSG_FILE_NOT_FOUND.format(what="replicate embedding file", path=f))
        values["replicates"] = [f"file:{f}" for f in replicates]
    if method is not None:
        try:
            values["source"] = debiased_source(values["source"], method)
            if values.get("replicates"):
                values["replicates"] = [debiased_source(r, method) for r in values["replicates"]]
        except BiastestError as exc:  # already debiased: the model's own words, as a usage error
            raise UsageError(str(exc)) from None


def load_inputs(args: argparse.Namespace, spec: Any, measure: Measure) -> Inputs:
    """The test data of the measure's kind: sentence pairs, pictures, or the specification's words."""
    if input_kind(measure) == "lm":
        if args.pairs:
            fmt = args.format or "auto"
            pairs, names = pairs_from_files(args.pairs, fmt, spec)
            data = {"from": "files", "files": names, "format": fmt}
        else:
            pairs, data = pairs_from_store(args.store, spec, args.pairing or "positional")
        data["n_pairs"] = len(pairs)
        return Inputs(spec=spec, pairs=tuple(pairs), data=data)
    if input_kind(measure) == "vlm":
        if args.images:
            images, root = images_from_folder(args.images)
            data = {"from": "images", "images": str(args.images), "n_images": len(images)}
        else:
            images, root = images_from_store(args.store, spec)
            data = {"from": "store", "store": str(root), "n_images": len(images)}
        return Inputs(spec=spec, images=tuple(images), image_root=root, data=data)
    if measure.kind == "chat":
        return Inputs(spec=spec, data={"from": "the measure's own data (see the result's provenance)"})
    if measure.kind == "classifier":
        return Inputs(spec=spec, data={"from": "specification (sentences from the measure's templates)"})
    return Inputs(spec=spec, data={"from": "specification"},
                  trust_pickle=bool(getattr(args, "trust_gensim_file", None)))


# --------------------------------------------------------------------------- the run
#: How the command line asks for a confirmation (tests replace these).
ask: Callable[[str], str] = input


def interactive() -> bool:
    """Whether a person can answer on stdin."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def confirm_cost(cost: Any, yes: bool, err: Callable[[str], None]) -> None:
    """Print the run's cost; a run that needs confirmation goes on only with ``--yes`` or a "y" typed at the prompt.

    Raises
    ------
    UsageError
        :data:`MSG_CONFIRM_NEEDED` (no ``--yes`` and no one to ask), :data:`MSG_NOT_CONFIRMED` (the answer was not
        yes).
    """
    err(cost.text)
    if not cost.needs_confirmation or yes:
        return
    limit = getattr(cost, "limit", None) or 0
    if not interactive():
        raise UsageError(MSG_CONFIRM_NEEDED.format(requests=cost.requests, limit=limit))
    try:
        answer = ask(MSG_CONFIRM_PROMPT.format(requests=cost.requests))
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise UsageError(MSG_NOT_CONFIRMED)


def _default_headless(measure: Measure) -> Callable[..., Headless]:
    """A measure without its own headless run: its options checked, ``run(options, inputs)``, its CSV rows."""

    def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> Headless:
        options = measure.Options.parse(values)
        result = measure.run(options, inputs, progress=progress)

        def export() -> tuple[Path, Path]:
            folder = private_dir()
            rows = measure.report.csv_rows(result) if measure.report is not None else []
            return (write_csv(rows, folder / f"{measure.name}.csv"),
                    write_json(result.to_dict(), folder / f"{measure.name}.json"))

        headline = f"{measure.name} ({measure.title}): done (seed {getattr(options, 'seed', '—')})."
        return Headless(measure.name, options.dump(), result, headline, export)

    return headless


def document(measure: Measure, spec: Any, run: Headless, data: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON ``--out`` writes (the format of earlier versions: ``biastest-cli-result``)."""
    return {
        "format": "biastest-cli-result",
        "biastest_version": __version__,
        "kind": measure.kind,
        "test": run.test,
        "seed": run.options.get("seed"),
        "spec": spec.to_dict() if spec is not None else None,
        "options": run.options,
        "data": dict(data),
        "result": run.result.to_dict(),
        **run.extra,
    }


def cmd_run(args: argparse.Namespace, flags_given: list[Flag], legacy: Legacy | None,
            out: Callable[[str], None], err: Callable[[str], None]) -> int:
    """Run one measure as the command line asked (flags already parsed and refused where they do not apply)."""
    measure = MEASURES.get_measure(args.measure)
    values = given_values(args, flags_given)
    for flag, _ in _own_flags(measure):
        if getattr(args, _dest(flag), None) is not None:
            values[_dest(flag)] = getattr(args, _dest(flag))
    if measure.prepare is not None:
        values = measure.prepare(values)
    check_bounds(values)
    precheck(measure, values)
    out_path = output_path(args.out, "output file")
    csv_path = output_path(args.csv, "CSV file") if args.csv else None
    if csv_path is not None and csv_path.resolve() == out_path.resolve():
        raise UsageError(MSG_SAME_OUTPUT.format(path=args.out))
    spec = load_spec(args.spec) if _has_spec(measure) else None
    if spec is not None:
        check_spec(spec, measure, legacy)
    api_key = endpoint_key(args, values, measure) if _takes_endpoint(measure) else None
    if measure.kind == "embeddings":
        embedding_values(values, getattr(args, "debias", None))
    inputs = load_inputs(args, spec, measure)
    if _cost_of(measure) is not None:
        confirm_cost(_cost_of(measure)(values, inputs), bool(getattr(args, "yes", None)), err)
    headless = measure.headless or _default_headless(measure)
    run = headless(values, inputs, api_key=api_key, progress=printing_progress(args.progress, err))
    write_atomic(out_path, lambda p: write_json(document(measure, spec, run, inputs.data), p))
    if csv_path is not None:
        write_atomic(csv_path, copy_export(run.export))
    out(run.headline)
    for notice in run.notices:  # e.g. a model behind an endpoint: how it was scored, or why it stopped early
        err(notice)
    out(MSG_WROTE.format(path=out_path))
    if csv_path is not None:
        out(MSG_WROTE.format(path=csv_path))
    return 0
