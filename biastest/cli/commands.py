"""The command line's other commands: ``list-specs``, ``list-measures``, ``list-methods``, ``audit``, ``report``."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Callable
from pathlib import Path

from biastest.audit import GridError, load_grid, run_audit
from biastest.audit.report import write_report
from biastest.audit.run import MSG_RERUN
from biastest.cli.common import EXIT_OK, EXIT_RUN_FAILED, MSG_WROTE, check_choice, output_path
from biastest.cli.flags import whole_number
from biastest.cli.run import KINDS, MSG_UNKNOWN_KIND, cli_measures, legacy_name
from biastest.errors import BiastestError, DataError, UsageError
from biastest.measures.stereotype.score import METHODS
from biastest.measures.vlm.options import COMBINE_CHOICES
from biastest.measures.vlm.options import METHODS as VLM_METHODS
from biastest.models.endpoint_vlm import ENDPOINT_METHOD
from biastest.specs import list_specs

__all__ = [
    "MSG_BAD_RAY_CPUS",
    "MSG_RAY_CPUS_WITHOUT_LOCAL",
    "MSG_RAY_MISSING",
    "MSG_REPORT_NOT_FOLDER",
    "add_other_parsers",
    "cmd_audit",
    "cmd_list_measures",
    "cmd_list_methods",
    "cmd_list_specs",
    "cmd_report",
]

MSG_RAY_MISSING = (
    "--ray needs Ray, an optional extra that is not installed here: pip install -r requirements-ray.txt (or "
    "pip install 'biastest[ray]'), then run again. Without --ray the audit runs in this process."
)
MSG_RAY_CPUS_WITHOUT_LOCAL = "--ray-cpus applies to --ray local only (a running cluster has its own CPUs)."
MSG_BAD_RAY_CPUS = "--ray-cpus must be a whole number from 1 to 4096, got {value}."
MSG_REPORT_NOT_FOLDER = "'{path}' is not a folder: give the audit folder (python -m biastest audit … --out DIR)."

Out = Callable[[str], None]


def add_other_parsers(sub: argparse._SubParsersAction) -> None:
    """``list-specs``, ``list-measures``, ``list-methods``, ``audit`` and ``report``."""
    ls = sub.add_parser("list-specs", help="names of the predefined specifications, one a line")
    ls.add_argument("--kind", help="only those that run with this kind: lm, vlm or embeddings")
    sub.add_parser("list-measures", help="the measures (run MEASURE …): name, kind of model, aliases, what it is")
    lm_ = sub.add_parser("list-methods", help="scoring methods and tests, per kind")
    lm_.add_argument("--kind", help="only this kind: lm, vlm or embeddings")
    au = sub.add_parser(
        "audit",
        help="run a grid of models × specifications × methods × seeds (resumable)",
        description="Run every cell of an audit grid (YAML) with the apps' runners; write one result file per cell "
        "and the results table (Parquet and CSV). A rerun skips the finished cells.",
    )
    au.add_argument("grid", metavar="GRID", help="the grid file (YAML; see docs/audits.md)")
    au.add_argument("--out", required=True, metavar="DIR", help="the audit folder (created if missing; reused)")
    au.add_argument("--ray", metavar="ADDRESS",
                    help="run the cells on Ray: 'local' starts Ray on this machine, host:port joins a running "
                    "cluster (needs the optional extra: pip install -r requirements-ray.txt)")
    au.add_argument("--ray-cpus", type=whole_number, metavar="N", help="CPUs of a --ray local instance (default: all)")
    au.add_argument("--no-progress", action="store_true", help="no progress bar")
    rp = sub.add_parser(
        "report",
        help="write the HTML results report of an audit folder",
        description="Write one self-contained HTML file (figures embedded, no server or network needed) with the "
        "forest plots per specification and the model comparisons of an audit folder.",
    )
    rp.add_argument("folder", metavar="DIR", help="the audit folder (python -m biastest audit … --out DIR)")
    rp.add_argument("--out", metavar="FILE", help="the HTML file to write (default DIR/report.html)")


def cmd_list_specs(args: argparse.Namespace, out: Out) -> int:
    """The predefined specifications (those a kind of model can run)."""
    kind = check_choice(args.kind, KINDS, MSG_UNKNOWN_KIND) if args.kind else None
    kinds = {"lm": ("bias", "weat"), "vlm": ("image", "bias", "weat")}.get(kind or "")
    for name in list_specs(kinds):
        out(name)
    return EXIT_OK


def cmd_list_measures(args: argparse.Namespace, out: Out) -> int:
    """One line per measure with a ``run`` subcommand: name, kind of model, aliases, title."""
    for m in cli_measures():
        out(f"{m.name}\t{m.kind}\t{','.join(m.aliases) or '-'}\t{m.title}")
    return EXIT_OK


def cmd_list_methods(args: argparse.Namespace, out: Out) -> int:
    """The language models' scoring methods, the vision-language methods and the embedding tests."""
    kind = check_choice(args.kind, KINDS, MSG_UNKNOWN_KIND) if args.kind else None
    if kind in (None, "lm"):
        for m in METHODS.values():
            out(f"lm\t{m.name}\t{'/'.join(m.kinds)} models\t{m.title}")
    if kind in (None, "vlm"):
        notes = {"clip": f"--combine {'|'.join(COMBINE_CHOICES)}, --prompt-template",
                 "vqa-classifier": "--question", "generative": "--question, --max-new-tokens"}
        for model_kind, name in VLM_METHODS.items():
            out(f"vlm\t{name}\t{model_kind} models (chosen from the model)\t{notes[model_kind]}")
        out(f"vlm\t{ENDPOINT_METHOD}\tmodels behind an endpoint (--endpoint URL)\t--question, --max-new-tokens")
    if kind in (None, "embeddings"):
        for m in cli_measures():
            if m.kind == "embeddings":
                out(f"embeddings\t{legacy_name(m)}\trun {m.name} (--test {legacy_name(m)})\t{m.title}")
    return EXIT_OK


def cmd_audit(args: argparse.Namespace, out: Out, err: Out) -> int:
    """``audit GRID --out DIR [--ray ADDRESS|local]``: exit 0 when every cell finished, 1 when some failed."""
    ray = args.ray.strip() if args.ray else None
    if args.ray_cpus is not None:
        if ray != "local":
            raise UsageError(MSG_RAY_CPUS_WITHOUT_LOCAL)
        if not 1 <= args.ray_cpus <= 4096:
            raise UsageError(MSG_BAD_RAY_CPUS.format(value=args.ray_cpus))
    if ray is not None and importlib.util.find_spec("ray") is None:
        raise UsageError(MSG_RAY_MISSING)
    try:  # a mistake in the grid is bad input (exit 2), whatever its type; nothing has run yet
        grid = load_grid(args.grid)
    except BiastestError as exc:
        raise UsageError(exc.message) from None
    try:
        summary = run_audit(grid, args.out, ray=ray, ray_cpus=args.ray_cpus, progress=not args.no_progress,
                            report=err)
    except GridError as exc:
        raise UsageError(exc.message) from None
    out(summary.message())
    out(MSG_WROTE.format(path=summary.table))
    if summary.failed:
        err(MSG_RERUN)
        return EXIT_RUN_FAILED
    return EXIT_OK


def cmd_report(args: argparse.Namespace, out: Out) -> int:
    """``report DIR [--out FILE]``: the audit's HTML report (exit 2 when DIR is not an audit folder)."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(MSG_REPORT_NOT_FOLDER.format(path=args.folder))
    target = output_path(args.out, "report file") if args.out else None
    try:
        path = write_report(folder, target)
    except DataError as exc:  # not an audit folder, or an empty one: bad input
        raise UsageError(exc.message) from None
    out(MSG_WROTE.format(path=path))
    return EXIT_OK
