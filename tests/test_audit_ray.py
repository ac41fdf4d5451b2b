"""Audits on a real Ray cluster on this machine: the same table as in process, a killed worker's cells run again.

The test starts a Ray head node on 127.0.0.1 as its own child process (``ray start --head --block``, token
authentication off with ``RAY_AUTH_MODE=disabled``, its own free ports and temp folder) and stops it by its pid
(its process group, then any process left in its session, each by pid) — never ``ray stop``, which would end every
Ray process on the machine. The audit runs as ``python -m biastest audit … --ray 127.0.0.1:PORT`` in a child process;
as soon as the audit reports (``workers.log``) the worker of one model, the test kills it by pid, in the middle of
its first cell (which loads the model), and checks that the cluster restarted it and ran that cell and the queued
ones again, that every cell was written exactly once, and that the table equals the one computed in process.
Grid: two tiny GPT-2s (seeds 0, 1) × two specifications × two methods, seed 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from biastest.audit import read_table, run_audit
from tests.audit_helpers import VOLATILE, build_models, write_lm_grid

pytest.importorskip("ray")

REPO_ROOT = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).with_name("ray")
START_TIMEOUT = 90.0
AUDIT_TIMEOUT = 300.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_members(sid: int) -> list[int]:
    """Pids of the processes in session ``sid`` (the head we started and everything it started)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid:
            out.append(int(entry.name))
    return out


class LocalCluster:
    """A Ray head node on 127.0.0.1, a child process of this test, stopped by its pid."""

    def __init__(self, num_cpus: int = 2) -> None:
        self.num_cpus = num_cpus
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = tempfile.mkdtemp(prefix="rayt", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
        self.env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(REPO_ROOT),
                    "RAY_USAGE_STATS_ENABLED": "0"}
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> LocalCluster:
        cmd = [str(RAY), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(self.port),
               "--num-cpus", str(self.num_cpus), "--include-dashboard=false", "--disable-usage-stats",
               "--temp-dir", self.temp, "--object-store-memory", str(100 * 2**20)]
        for flag in ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                     "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"):
            cmd += [flag, str(_free_port())]
        self.log = open(Path(self.temp) / "head.log", "w")  # closed in stop()
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"ray start exited with {self.proc.returncode}: see {self.temp}/head.log")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return self
            time.sleep(0.2)
        self.stop()
        pytest.fail(f"the Ray head did not open port {self.port} within {START_TIMEOUT} s")

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM to the head's process group, SIGKILL after 5 s; then every process left in its session, by pid."""
        if self.proc is None:
            return
        pid = self.proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while (left := _session_members(pid)) and time.monotonic() < deadline:
            for p in left:  # workers sit in process groups of their own, in the head's session
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            time.sleep(0.2)
        assert _session_members(pid) == [], "processes of the test's Ray cluster were left running"
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)
        self.proc = None

    def owns(self, pid: int) -> bool:
        return self.proc is not None and pid in _session_members(self.proc.pid)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    return build_models(tmp_path_factory.mktemp("audit-ray-models"))


def _stable(frame):
    return frame.drop(columns=VOLATILE).sort_values("key").reset_index(drop=True)


def _written(out: Path, model: str) -> int:
    cells = out / "cells"
    return sum(json.loads(f.read_text())["cell"]["model"]["name"] == model for f in cells.glob("*.json")) \
        if cells.is_dir() else 0


def test_a_killed_worker_on_a_ray_cluster_leaves_every_cell_once_and_the_in_process_table(tmp_path, models) -> None:
    grid = write_lm_grid(tmp_path / "g", models, n_pairs=24, seeds=(1,))
    reference = tmp_path / "in-process"
    assert run_audit(grid, reference, progress=False).computed == 8
    out = tmp_path / "on-ray"
    with LocalCluster(num_cpus=2) as cluster:
        audit = subprocess.Popen([sys.executable, "-m", "biastest", "audit", str(grid), "--out", str(out),
                                  "--ray", cluster.address, "--no-progress"], cwd=REPO_ROOT, env=cluster.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = None
        try:
            deadline = time.monotonic() + AUDIT_TIMEOUT
            log = out / "workers.log"
            while killed is None and audit.poll() is None and time.monotonic() < deadline:
                for line in log.read_text().splitlines() if log.is_file() else ():
                    worker = json.loads(line)
                    if worker["model"] == "tiny-a":  # reported before its first cell (which loads the model) ends
                        killed = worker["pid"]
                        assert cluster.owns(killed)  # a worker of the cluster this test started
                        os.kill(killed, signal.SIGKILL)
                        assert _written(out, "tiny-a") == 0  # killed in the middle of its first cell
                        break
                time.sleep(0.02)
            stdout, stderr = audit.communicate(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if audit.poll() is None:
                audit.kill()
                audit.wait()
        assert killed is not None, stderr
        assert audit.returncode == 0, stderr
        assert "8 cells (0 already done, 8 computed, 0 failed)" in stdout
    journal = [json.loads(line) for line in (out / "cells.log").read_text().splitlines()]
    assert len(journal) == 8 and len({e["key"] for e in journal}) == 8  # every cell written exactly once
    assert len(list((out / "cells").glob("*.json"))) == 8
    on_ray = read_table(out)
    assert _stable(on_ray).equals(_stable(read_table(reference)))
    pids = {name: {int(w.rsplit(":", 1)[1]) for w in on_ray[on_ray.model == name].worker} for name in ("tiny-a",
                                                                                                      "tiny-b")}
    assert len(pids["tiny-a"]) == 1 and killed not in pids["tiny-a"]  # the restarted worker ran all of tiny-a's
    assert len(pids["tiny-b"]) == 1  # one worker ran all of a model's cells
    assert pids["tiny-a"] != pids["tiny-b"] and os.getpid() not in pids["tiny-a"] | pids["tiny-b"]


def test_an_address_where_nothing_answers_is_a_message_in_seconds_not_minutes_of_retries(tmp_path, capsys) -> None:
    from biastest.audit.ray_runner import MSG_NOTHING_AT
    from biastest.cli import main

    grid = tmp_path / "g.yaml"
    grid.write_text(json.dumps({"models": [{"kind": "embeddings", "id": "glove-6b-50d"}],
                                "specs": ["WEAT 1: Flowers vs insects, pleasant vs unpleasant"]}))
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    t = time.monotonic()
    assert main(["audit", str(grid), "--out", str(tmp_path / "o"), "--ray", address, "--no-progress"]) == 1
    assert time.monotonic() - t < 60
    err = capsys.readouterr().err
    assert MSG_NOTHING_AT.format(address=address, problem="Connection refused") in err
    assert not list((tmp_path / "o" / "cells").glob("*.json"))
