"""Run every benchmark and write one JSON report (``make bench``).

Usage: ``python -m benchmarks [--quick] [--only NAME ...] [--out PATH]``.
Each ``benchmarks/bench_<area>.py`` exposes ``run(quick: bool) -> dict``. A
benchmark that crashes is recorded with its error (and makes the command
exit non-zero: a crash is a bug); a slow machine is not a failure.
Each benchmark runs in its own process, so that the peak resident memory it
reports (``peak_rss_mb_child``) is its own. Timings on a 2-core CPU are
noisy: the benchmarks report medians and ratios measured in one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine() -> dict:
    """Describe the machine the numbers were measured on."""
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    try:
        model = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")]
        info["cpu"] = model[0].split(":", 1)[1].strip() if model else ""
        mem = [ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")]
        info["memory_kb"] = int(mem[0].split()[1]) if mem else None
    except OSError:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.is_available()
    except ImportError:
        pass
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE.parent, check=False
        ).stdout.strip()
    except OSError:
        pass
    return info


def discover() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py"))


def _run_one(name: str, quick: bool, out: Path) -> int:
    """Child side: run one benchmark and write its figures (or its crash) to ``out``."""
    try:
        module = importlib.import_module(f"benchmarks.{name}")
        result = module.run(quick=quick)
        code = 0
    except Exception as exc:  # a crash is a bug: record it, the parent fails at the end
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print(result["traceback"], file=sys.stderr)
        code = 1
    result["peak_rss_mb_child"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out.write_text(json.dumps(result, default=str))
    return code


def _run_in_child(name: str, quick: bool) -> dict:
    """Run one benchmark in a fresh process, so that its peak memory is its own."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "benchmarks", "--child", name, "--child-out", str(out)]
        if quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, cwd=HERE.parent, check=False)
        if out.is_file():
            return json.loads(out.read_text())
        return {"error": f"the benchmark process exited with status {proc.returncode} and wrote no figures"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about a minute each)")
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names, e.g. bench_lm")
    parser.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _run_one(args.child, args.quick, Path(args.child_out))
    names = args.only or discover()
    report = {
        "machine": machine(),
        "quick": args.quick,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    results = {}
    crashed = False
    for name in names:
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        results[name] = _run_in_child(name, args.quick)
        crashed = crashed or "error" in results[name]
        results[name]["wall_seconds"] = round(time.perf_counter() - t0, 3)
    report["results"] = results
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"report written to {out}")
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
