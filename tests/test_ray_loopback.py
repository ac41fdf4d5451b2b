"""A local Ray instance (``audit … --ray local``) listens on loopback only (issue 27).

The test starts the instance the way ``--ray local`` does (:func:`biastest.audit.ray_runner._connect`) in a child
Python process of its own session, asks one actor where it runs (so a worker process is up), and reads, from
``/proc``, every listening TCP socket of the processes in that session (the driver, the GCS server, the raylet with
its object manager, the agents, the workers): each must be bound to a loopback address (``127.0.0.0/8``, ``::1`` or
``::ffff:127.x.x.x``), none to ``0.0.0.0``, ``::`` or the machine's own address. On the commit before the fix the
GCS server, the raylet and the worker listened on ``::`` (all interfaces) and the runtime-env agent on the
machine's address. The child ends Ray itself (``ray.shutdown()``); whatever is left of its session is ended by
pid — never ``ray stop``, which would end every Ray process on the machine.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

REPO_ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 120.0

CHILD = r"""
import json, os, sys
import ray
from biastest.audit import ray_runner

ray_runner._connect("local", 1)
actor = ray.remote(ray_runner.CellWorker).options(num_cpus=1).remote()
where = ray.get(actor.where.remote(), timeout=120)
print(json.dumps({"worker": where["pid"], "switch": os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"),
                  "node_ip": ray.util.get_node_ip_address()}), flush=True)
sys.stdin.readline()
ray.kill(actor)
ray.shutdown()
"""


def _session_members(sid: int) -> list[int]:
    """Pids of the processes in session ``sid`` (the child we started and everything it started)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[3]) == sid:
            out.append(int(entry.name))
    return out


def _address(hex_address: str, v6: bool) -> tuple[str, int]:
    """``/proc/net/tcp{,6}``'s ``ADDR:PORT`` (little-endian 32-bit words) as text and a port."""
    addr, port = hex_address.split(":")
    raw = bytes.fromhex(addr)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw)), int(port, 16)


def listening_sockets(pids: list[int]) -> list[tuple[int, str, str, int]]:
    """(pid, command, address, port) of every listening TCP socket the processes ``pids`` hold."""
    inodes: dict[int, tuple[str, int]] = {}
    for name, v6 in (("tcp", False), ("tcp6", True)):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes[int(fields[9])] = _address(fields[1], v6)
    out = []
    for pid in pids:
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/comm").read_text().strip()
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:[") and int(target[8:-1]) in inodes:
                        out.append((pid, command, *inodes[int(target[8:-1])]))
    return sorted(set(out))


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


@pytest.mark.parametrize(("address", "loopback"), [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True),
                                                   ("::ffff:127.0.0.1", True), ("0.0.0.0", False), ("::", False),
                                                   ("::ffff:0.0.0.0", False), ("192.0.2.2", False)])
def test_what_counts_as_loopback(address, loopback):
    assert is_loopback(address) is loopback


def test_a_local_ray_instance_listens_on_loopback_only():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-c", CHILD], cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        line = ""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and not line and proc.poll() is None:
            line = proc.stdout.readline()  # the child prints once Ray and one worker are up
        assert line, f"the local Ray instance did not start (exit {proc.poll()})"
        started = json.loads(line)
        sockets = listening_sockets(_session_members(proc.pid))
        print("listening:", sockets)
        commands = {command for _, command, _, _ in sockets}
        assert {"gcs_server", "raylet"} <= commands and started["worker"] in {pid for pid, *_ in sockets}
        assert [s for s in sockets if not is_loopback(s[2])] == []
        assert started["node_ip"] == "127.0.0.1"
        assert started["switch"] is None  # Ray's switch is put back once the instance has started
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while (left := _session_members(proc.pid)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
    assert _session_members(proc.pid) == [], "processes of the test's Ray instance were left running"
