"""Soak: many short sessions against the suite server; nothing of a closed session may stay on disk.

Usage: ``python -m benchmarks.soak_sessions [--sessions 200] [--concurrency 2] [--heartbeat S] [--max-age S]``.

Not one of the ``make bench`` benchmarks (``python -m benchmarks`` runs only
``bench_*.py``). It starts ``python -m biastest.ui.serve`` on 127.0.0.1 (a
free port) as a child process with its own ``TMPDIR``, ``GRADIO_TEMP_DIR`` and
store, then runs sessions with gradio_client, in turn on each app:

* word embeddings: a WEAT/MAC run on the embedded GloVe 6B 50d (CSV and JSON downloads);
* vision-language: four small PNGs uploaded, a run on a tiny random CLIP (downloads);
* language models: a library specification, two sentence pairs, a run on a tiny random GPT-2 (downloads).

Each session downloads its CSV, then closes its client. The server runs with
``BIASTEST_SESSION_MAX_AGE=--max-age`` (default 30 s instead of two hours), so
that the age-based clean-ups (Gradio's ``delete_cache``, the sweeper) also
come round within the run. At the end it waits (bounded) for the server to
notice the closed sessions and for those clean-ups, counts what is left in the
server's working folder and in Gradio's cache, stops the server with SIGTERM
and checks that the working folder is gone and that Gradio's cache holds no
file. It prints a summary (and writes it as JSON with ``--out``) and exits 1
when anything of a closed session is left. Every wait is bounded; the server
is ended by its pid.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 180
CALL_TIMEOUT_S = 300
SEED = 7
WEAT = "WEAT 7: Math vs arts, male vs female terms"
LM_SPEC = "Math_Arts_vs_Male_Female"
PAIR_HEADERS = ["keep", "attribute_term", "group_term_stereotyped", "stereotyped", "group_term_anti",
                "anti_stereotyped", "category", "source", "template"]
PAIRS = [
    [True, "math", "he", "He is good at math.", "she", "She is good at math.", "Math", "user", "[T] is good at math."],
    [True, "poetry", "she", "She loves poetry.", "he", "He loves poetry.", "Arts", "user", "[T] loves poetry."],
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def files_under(path: Path) -> list[Path]:
    """Every file below ``path`` (none when it does not exist)."""
    return [p for p in path.rglob("*") if p.is_file() or p.is_symlink()] if path.is_dir() else []


def _call(job, *args, api_name: str):
    """One call with a bounded wait (gradio_client's ``predict`` has no timeout of its own)."""
    return job.submit(*args, api_name=api_name).result(timeout=CALL_TIMEOUT_S)


def _download_path(value) -> Path:
    """The local file gradio_client downloaded for a DownloadButton output."""
    if isinstance(value, dict):
        value = value.get("value") or value.get("path")
    if isinstance(value, dict):
        value = value.get("path")
    path = Path(str(value))
    if not path.is_file():
        raise RuntimeError(f"no downloaded file for {value!r}")
    return path


class Soak:
    """The server, the shared inputs and the session runners."""

    def __init__(self, work: Path, *, heartbeat: float | None, max_age: float) -> None:
        self.work = work
        self.tmp, self.cache, self.downloads = work / "tmp", work / "gradio", work / "client"
        for d in (self.tmp, self.cache, self.downloads):
            d.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.heartbeat = heartbeat
        self.max_age = max_age
        self.proc: subprocess.Popen | None = None
        self.inputs = self._inputs()

    # -------------------------------------------------------------- set-up
    def _inputs(self) -> dict:
        from PIL import Image

        from tests.lm_helpers import build_tiny_gpt2
        from tests.vlm_helpers import save_tiny_clip

        models = self.work / "models"
        pictures = self.work / "pictures"
        pictures.mkdir()
        pngs = {}
        for term, colours in (("man", ("red", "orange")), ("woman", ("blue", "teal"))):
            pngs[term] = []
            for colour in colours:
                Image.new("RGB", (24, 20), colour).save(pictures / f"{colour}.png")
                pngs[term].append(str(pictures / f"{colour}.png"))
        return {"gpt2": str(build_tiny_gpt2(models / "tiny-gpt2", seed=SEED)),
                "clip": str(save_tiny_clip(models / "tiny-clip", seed=SEED)), "pngs": pngs}

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env.update(TMPDIR=str(self.tmp), GRADIO_TEMP_DIR=str(self.cache), BIASTEST_DATA_DIR=str(self.work / "store"),
                   GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                   BIASTEST_SESSION_MAX_AGE=str(self.max_age))
        if self.heartbeat:
            env["GRADIO_HEARTBEAT_INTERVAL"] = str(self.heartbeat)
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "biastest.ui.serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server did not answer within {START_TIMEOUT_S} s: {self.log_tail()}")
            time.sleep(0.5)

    def stop(self) -> int | None:
        """SIGTERM (as a process manager would), a bounded wait, then SIGKILL; the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            return self.proc.returncode

    def log_tail(self) -> str:
        try:
            return (self.work / "server.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def cache_entries(self) -> list[Path]:
        """Everything in Gradio's cache but the empty ``vibe_edit_history`` folder Gradio makes at start."""
        return [p for p in self.cache.rglob("*") if not (p.name == "vibe_edit_history" and p.parent == self.cache
                                                         and p.is_dir() and not any(p.iterdir()))]

    def process_dirs(self) -> list[Path]:
        return sorted(self.tmp.glob("biastest-*"))

    def session_folders(self) -> list[Path]:
        return [p for d in self.process_dirs() for p in (d / "sessions").glob("*")]

    # -------------------------------------------------------------- sessions
    def session(self, i: int) -> int:
        """Run session ``i`` (the app by turn); return how many files it downloaded."""
        from gradio_client import Client

        app = ("psychophysics", "vqa", "gpt")[i % 3]
        client = Client(f"{self.url}/{app}/", verbose=False, download_files=str(self.downloads / str(i)))
        try:
            return getattr(self, f"_{app}")(client)
        finally:
            client.close()

    def _psychophysics(self, client) -> int:
        from biastest.ui import psychophysics as ui

        x, y, a, b, *names = _call(client, WEAT, api_name="/fill_weat")
        values = [ui.KIND_WEAT, ui.CUSTOM, "", "", "", "", WEAT, x, y, a, b, *names, "glove-6b-50d", None, ""]
        msg = _call(client, *values, api_name="/confirm_spec")[0]
        if "✅" not in str(msg):
            raise RuntimeError(f"psychophysics step 1: {msg}")
        out = _call(client, ui.REPLICATES_NONE, 0.05, None, "norm", False, 0, 1000, SEED, api_name="/run_handler")
        return len([_download_path(v) for v in out[-2:]])

    def _vqa(self, client) -> int:
        from gradio_client import handle_file

        from biastest.ui.spec_step import CUSTOM

        _call(client, CUSTOM, "man", "woman", "doctor", "nurse", api_name="/confirm_handler")
        for term, paths in self.inputs["pngs"].items():
            msg = _call(client, [handle_file(p) for p in paths], term, api_name="/upload_handler")[0]
            if "Added 2" not in str(msg):
                raise RuntimeError(f"vqa upload: {msg}")
        out = _call(client, self.inputs["clip"], ["a photo of a {term}"], "", "sum-prob", "", SEED, 4, 200,
                    api_name="/run_handler")
        return len([_download_path(v) for v in out[-2:]])

    def _gpt(self, client) -> int:
        from biastest.specs import get_spec

        offered = get_spec(LM_SPEC).name  # the dropdown offers the library's readable names (LM_SPEC is an alias)
        library = _call(client, offered, api_name="/fill_from_library")
        msg = _call(client, offered, *library[:4], api_name="/confirm_spec")[0]
        if "✅" not in str(msg):
            raise RuntimeError(f"gpt step 1: {msg}")
        table = {"headers": PAIR_HEADERS, "data": PAIRS, "metadata": None}
        out = _call(client, self.inputs["gpt2"], "causal-sum", SEED, table, api_name="/run_test")
        return len([_download_path(v) for v in out[-2:]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak_sessions", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=2, help="sessions open at once")
    parser.add_argument("--heartbeat", type=float, default=None,
                        help="GRADIO_HEARTBEAT_INTERVAL for the server (default: Gradio's, 15 s)")
    parser.add_argument("--max-age", type=float, default=30.0,
                        help="BIASTEST_SESSION_MAX_AGE for the server, seconds (default 30)")
    parser.add_argument("--settle", type=float, default=None,
                        help="most seconds to wait for the clean-ups after the last session (default: 2 heartbeats "
                             "+ 3 max ages + 30 s)")
    parser.add_argument("--out", type=Path, default=None, help="also write the summary as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (server log, leftovers)")
    args = parser.parse_args(argv)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    work = Path(tempfile.mkdtemp(prefix="biastest-soak-"))
    summary: dict = {"sessions": args.sessions, "concurrency": args.concurrency,
                     "heartbeat_s": args.heartbeat or 15.0, "max_age_s": args.max_age, "work": str(work)}
    soak = None
    failures: list[str] = []
    try:
        t0 = time.monotonic()
        soak = Soak(work, heartbeat=args.heartbeat, max_age=args.max_age)
        soak.start()
        summary["startup_s"] = round(time.monotonic() - t0, 1)
        peak = {"session_folders": 0, "gradio_cache_files": 0}
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(1.0):
                peak["session_folders"] = max(peak["session_folders"], len(soak.session_folders()))
                peak["gradio_cache_files"] = max(peak["gradio_cache_files"], len(files_under(soak.cache)))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        t1 = time.monotonic()
        downloaded, errors = 0, []
        with ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
            futures = [pool.submit(soak.session, i) for i in range(args.sessions)]
            for i, fut in enumerate(futures):
                try:
                    downloaded += fut.result(timeout=CALL_TIMEOUT_S * 4)
                except Exception as exc:  # a failed session is reported, the others go on
                    errors.append(f"session {i}: {type(exc).__name__}: {exc}"[:300])
                if (i + 1) % 20 == 0:
                    print(f"[{i + 1}/{args.sessions}] {time.monotonic() - t1:.0f} s, "
                          f"{len(soak.session_folders())} session folder(s) on disk", flush=True)
        summary["sessions_s"] = round(time.monotonic() - t1, 1)
        summary["per_session_s"] = round(summary["sessions_s"] / max(1, args.sessions), 2)
        summary["downloads"] = downloaded
        summary["failed_sessions"] = len(errors)
        summary["errors"] = errors[:10]

        settle = args.settle if args.settle is not None else 2 * (args.heartbeat or 15.0) + 3 * args.max_age + 30
        t2 = time.monotonic()
        while soak.session_folders() and time.monotonic() - t2 < settle:
            time.sleep(0.5)
        summary["sessions_gone_after_s"] = round(time.monotonic() - t2, 1)
        while soak.cache_entries() and time.monotonic() - t2 < settle:
            time.sleep(0.5)
        stop.set()
        watcher.join(timeout=5)
        summary["settle_s"] = round(time.monotonic() - t2, 1)
        summary["peak_session_folders"] = peak["session_folders"]
        summary["peak_gradio_cache_files"] = peak["gradio_cache_files"]
        left = [f for d in soak.process_dirs() for sub in ("sessions", "exports") for f in files_under(d / sub)]
        summary["leftover_session_folders"] = len(soak.session_folders())
        summary["leftover_files"] = len(left)
        summary["leftover_examples"] = [str(p.relative_to(work)) for p in left[:5]]
        summary["gradio_cache_entries_after_settle"] = len(soak.cache_entries())
        summary["gradio_cache_examples"] = [str(p.relative_to(soak.cache)) for p in soak.cache_entries()][:5]
        summary["process_dirs_while_running"] = len(soak.process_dirs())

        summary["server_exit"] = soak.stop()
        summary["process_dirs_after_stop"] = len(soak.process_dirs())
        summary["gradio_cache_files_after_stop"] = len(files_under(soak.cache))
        summary["tmp_entries_after_stop"] = sorted(p.name for p in soak.tmp.iterdir())[:10]

        if errors:
            failures.append(f"{len(errors)} session(s) failed")
        if left or summary["leftover_session_folders"]:
            failures.append(f"{len(left)} file(s) in {summary['leftover_session_folders']} closed session folder(s)")
        if summary["gradio_cache_entries_after_settle"]:
            failures.append(f"{summary['gradio_cache_entries_after_settle']} entries in Gradio's cache after "
                            f"{summary['settle_s']} s")
        if summary["process_dirs_after_stop"]:
            failures.append("the working folder outlived the server")
        if summary["gradio_cache_files_after_stop"]:
            failures.append(f"{summary['gradio_cache_files_after_stop']} file(s) in Gradio's cache after the stop")
    except Exception as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
        if soak is not None:
            summary["server_log"] = soak.log_tail()
    finally:
        if soak is not None:
            soak.stop()
        summary["failures"] = failures
        print(json.dumps(summary, indent=2, default=str))
        if args.out:
            args.out.write_text(json.dumps(summary, indent=2, default=str))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
