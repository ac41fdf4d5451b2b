"""Command line for headless and batch bias tests, on the same measures as the apps.

Commands::

    python -m biastest run MEASURE SPEC --model MODEL --out result.json [--csv rows.csv] [options of MEASURE]
    python -m biastest list-measures
    python -m biastest list-specs [--kind lm|vlm|embeddings]
    python -m biastest list-methods [--kind lm|vlm|embeddings]
    python -m biastest audit GRID.yaml --out DIR [--ray ADDRESS|local]   (see biastest.audit)
    python -m biastest report DIR [--out report.html]                     (see biastest.audit.report)

``MEASURE`` is a measure of :data:`biastest.measures.MEASURES` (``list-measures``: stereotype, vlm, twoafc or
2afc, weat, bayes); its options are its flags (``run MEASURE --help``), made from the measure's options
(:mod:`biastest.cli.run`). The form of earlier versions, ``run SPEC --kind lm|vlm|embeddings [--test …]``, still
works. ``SPEC`` is the name of a predefined specification (``list-specs``; a typo gets "did you mean …") or the
path of a JSON specification file (BiasTestGPT form, or a 2AFC form with ``targets`` and ``cue_pairs``).

Where the test data come from, per kind of model:

- language models — sentence pairs imported from one or more ``--pairs`` files (BiasTestGPT pairs or sentences
  CSV, CrowS-Pairs CSV, StereoSet JSON; as the app's import) or, without ``--pairs``, found in the local dataset
  store (``--store DIR``, default ``$BIASTEST_DATA_DIR`` or ``~/.cache/biastest/store``, as the app's "Find
  sentences");
- vision-language models — ``--images DIR`` with one subfolder per image term (``DIR/woman/1.png``), or a manifest
  CSV/JSON with the columns ``path`` and ``image_term`` (paths relative to the manifest); without ``--images``, the
  images of the dataset store for the spec's group terms;
- word embeddings — the words of the specification; ``--model`` is an embedding source (default the embedded
  GloVe 6B 50d), a word-vector file or a sentence-encoder folder.

The JSON written by ``--out`` holds the result's ``to_dict()`` (with its provenance, seed included), the
specification and the effective options; the CSV written by ``--csv`` is the app's download (text cells neutralised
against formula injection). Nothing else is written, and no key or token is ever written anywhere.

Exit status: 0 success; 1 the test started but failed at run time (the model or embedding cannot be loaded,
nothing could be scored, a file cannot be written); 2 bad usage or input (unknown spec, measure, method or option,
a missing file, unusable data). Errors are one user-facing message on stderr (the library's ``MSG_*`` constants),
never a traceback.

This package never imports gradio.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from biastest import __version__
from biastest.cli.commands import (
    MSG_BAD_RAY_CPUS,
    MSG_RAY_CPUS_WITHOUT_LOCAL,
    MSG_RAY_MISSING,
    MSG_REPORT_NOT_FOLDER,
    add_other_parsers,
    cmd_audit,
    cmd_list_measures,
    cmd_list_methods,
    cmd_list_specs,
    cmd_report,
)
from biastest.cli.common import (
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    MSG_CANNOT_WRITE,
    MSG_DID_YOU_MEAN,
    MSG_NO_OUTPUT_FOLDER,
    MSG_WROTE,
    Parser,
)
from biastest.cli.flags import flags_of
from biastest.cli.run import (
    KINDS,
    MSG_2AFC_NEEDS_TWOAFC_SPEC,
    MSG_BAD_KEY_ENV,
    MSG_KEY_ENV_UNSET,
    MSG_NEEDS_ENDPOINT,
    MSG_NO_ENDPOINT_MODEL,
    MSG_NO_MODEL,
    MSG_NOT_WITH_ENDPOINT,
    MSG_OPTION_NOT_FOR_RUN,
    MSG_SAME_OUTPUT,
    MSG_SPEC_NOT_FOR_KIND,
    MSG_TEST_NEEDS_BIAS_SPEC,
    MSG_TOO_FEW_REPLICATES,
    MSG_UNKNOWN_KIND,
    MSG_UNKNOWN_TEST,
    add_run_parser,
    cmd_run,
    legacy_argv,
    model_kind_argv,
    refuse_other_flags,
)
from biastest.errors import (
    BiastestError,
    DataError,
    EmbeddingError,
    MethodError,
    OptionError,
    PolicyError,
    SpecError,
    UsageError,
)
from biastest.measures import MEASURES
from biastest.measures.stereotype.summary import MSG_NOTHING_SCORED
from biastest.measures.twoafc.headless import MSG_BAD_SIGMA

__all__ = [
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "KINDS",
    "MSG_2AFC_NEEDS_TWOAFC_SPEC",
    "MSG_BAD_KEY_ENV",
    "MSG_BAD_RAY_CPUS",
    "MSG_BAD_SIGMA",
    "MSG_CANNOT_WRITE",
    "MSG_DID_YOU_MEAN",
    "MSG_INTERRUPTED",
    "MSG_KEY_ENV_UNSET",
    "MSG_NEEDS_ENDPOINT",
    "MSG_NOT_WITH_ENDPOINT",
    "MSG_NO_ENDPOINT_MODEL",
    "MSG_NO_MODEL",
    "MSG_NO_OUTPUT_FOLDER",
    "MSG_OPTION_NOT_FOR_RUN",
    "MSG_RAY_CPUS_WITHOUT_LOCAL",
    "MSG_RAY_MISSING",
    "MSG_REPORT_NOT_FOLDER",
    "MSG_SAME_OUTPUT",
    "MSG_SPEC_NOT_FOR_KIND",
    "MSG_TEST_NEEDS_BIAS_SPEC",
    "MSG_TOO_FEW_REPLICATES",
    "MSG_UNEXPECTED",
    "MSG_UNKNOWN_KIND",
    "MSG_UNKNOWN_TEST",
    "MSG_WROTE",
    "build_parser",
    "exit_code_for",
    "main",
]

MSG_UNEXPECTED = (
    "Unexpected error ({type_name}). Nothing was written. If it happens again, report it with the command you ran."
)
MSG_INTERRUPTED = "Interrupted."


def exit_code_for(exc: BaseException) -> int:
    """The exit status for an error: 2 for bad usage or input, 1 for a failure at run time.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    int
        :data:`EXIT_USAGE` for :class:`UsageError`, :class:`SpecError`, :class:`MethodError`,
        :class:`OptionError`, :class:`PolicyError` and :class:`DataError` (except "none of the pairs could be
        scored", a run-time outcome); :data:`EXIT_RUN_FAILED` for everything else (model or embedding that cannot
        be loaded or is the wrong kind, store, generation and unexpected errors). An embedding file refused as
        unsafe (pickle-based, without ``--trust-gensim-file``) is bad input: :data:`EXIT_USAGE`.
    """
    if isinstance(exc, EmbeddingError) and exc.details.get("unsafe"):
        return EXIT_USAGE
    if isinstance(exc, DataError) and exc.message.startswith(MSG_NOTHING_SCORED.split("{", 1)[0]):
        return EXIT_RUN_FAILED
    if isinstance(exc, UsageError | SpecError | MethodError | DataError | OptionError | PolicyError):
        return EXIT_USAGE
    return EXIT_RUN_FAILED


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m biastest`` (raises :class:`UsageError` on bad arguments)."""
    parser = Parser(
        prog="python -m biastest",
        description="Test social bias in language, vision-language and embedding models, headless.",
        epilog="Exit status: 0 success, 1 the test failed at run time, 2 bad usage or input.",
    )
    parser.add_argument("--version", action="version", version=f"biastest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    add_run_parser(sub)
    add_other_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (never raises, never prints a traceback).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        :data:`EXIT_OK` (0), :data:`EXIT_RUN_FAILED` (1) or :data:`EXIT_USAGE` (2).
    """

    def out(line: str) -> None:
        print(line, file=sys.stdout, flush=True)

    try:
        return _main(argv, out)
    except BrokenPipeError:  # the reader went away (`list-specs | head -3`): stop quietly, as Unix tools do
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK


def _dispatch(argv: list[str], out: Callable[[str], None], err: Callable[[str], None]) -> int:
    argv, legacy = legacy_argv(model_kind_argv(argv))
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if args.command == "run":
        measure = MEASURES.get_measure(args.measure)
        refuse_other_flags(extras, measure, legacy)
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if args.command == "list-specs":
        return cmd_list_specs(args, out)
    if args.command == "list-measures":
        return cmd_list_measures(args, out)
    if args.command == "list-methods":
        return cmd_list_methods(args, out)
    if args.command == "audit":
        return cmd_audit(args, out, err)
    if args.command == "report":
        return cmd_report(args, out)
    return cmd_run(args, flags_of(measure.Options), legacy, out, err)


def _main(argv: Sequence[str] | None, out: Callable[[str], None]) -> int:

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv), out, err)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except BiastestError as exc:
        usage = exc.details.get("usage") if isinstance(exc, UsageError) else None
        if usage:
            err(usage.rstrip())
        err(exc.message)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        err(MSG_INTERRUPTED)
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        err(MSG_UNEXPECTED.format(type_name=type(exc).__name__))
        return EXIT_RUN_FAILED
