"""Audit cells on a Ray cluster: one actor per model, so each worker loads its model once.

The only module of biastest that imports ``ray`` (an optional extra:
``pip install biastest[ray]`` or ``pip install -r requirements-ray.txt``).
:func:`run_on_ray` connects to a running cluster (``address="host:port"``) or
starts Ray on this machine (``address="local"``), and:

- starts one actor per model (``resources.replicas`` actors for a model whose
  cells should spread over several workers), each with the resources its
  model declares (``num_cpus``, ``num_gpus``, ``memory``; default one CPU);
  an actor runs its model's cells one after another with
  :func:`biastest.audit.cells.run_cell`, so the model loads once per worker
  (the worker's model cache), and cells of the same model go to the same
  worker;
- a worker that dies (killed, out of memory, a lost node) is restarted and
  the cell it was running, and those queued behind it, are run again
  (``resources.max_retries``, default 2); when the retries are spent the cell
  is recorded as failed with the reason;
- every result comes back to this process, which writes it (the same
  write-once store as in process): a retried cell is written once;
- the actors are ended when their model's cells are done, and all of them on
  the way out (an interrupted run included); a local Ray instance is shut
  down.

A local instance (``address="local"``) listens on loopback only: no
dashboard, and this node's address is 127.0.0.1, which Ray's GCS server,
raylet (node and object manager), workers and agents bind to. Ray has no
public option for it — given ``_node_ip_address="127.0.0.1"`` it swaps a
loopback address for the machine's reachable one and its servers listen on
all interfaces — so while the instance starts, Ray's own switch for machines
that are not cluster nodes (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read by
``ray._private.services.get_node_ip_address``) is off, in this process and in
the environment the Ray processes inherit (:func:`_loopback_only`). A real
cluster (``address="host:port"``) is the operator's: see docs/audits.md.

Test data reach the workers through Ray's object store (each items set is put
once); models are loaded on the workers by their id or path, and the images of
a vision-language cell are read by path, so on a cluster of several machines
local folders must exist at the same path on every node (a shared file
system) — Hub ids work anywhere. biastest itself must be importable on every
node (the same version: it is part of every cell's key). The key of a model
behind an endpoint is read from the environment of the worker.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any

import ray

from biastest import settings
from biastest.audit.cells import failed_document, run_cell
from biastest.audit.progress import progress_bar
from biastest.errors import BiastestError

__all__ = ["DEFAULT_MAX_RETRIES", "MSG_NOTHING_AT", "MSG_RAY_CONNECT", "MSG_WORKER_LOST", "CellWorker", "run_on_ray"]

DEFAULT_MAX_RETRIES = 2
MSG_RAY_CONNECT = "Could not {what} Ray ({problem}). {hint}"
MSG_RAY_HINT_LOCAL = "Check that this machine can run Ray (see the README's 'Audits' section)."
MSG_RAY_HINT_ADDRESS = (
    "Check the address (host:port of the head node, as 'ray start --head' printed it) and that the cluster runs "
    "the same Ray version ({version})."
)
MSG_NOTHING_AT = "nothing answers at {address}: {problem}"
PROBE_TIMEOUT = 5.0
#: The address a local Ray instance gives its node (every Ray server of the instance binds to it).
LOCAL_NODE_IP = "127.0.0.1"
#: Ray's switch: off, Ray keeps a loopback node address instead of swapping it for the machine's reachable one.
RAY_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
MSG_WORKER_LOST = (
    "The Ray worker running this cell stopped and the retries are spent ({retries} retries): {problem}"
)


class CellWorker:
    """A Ray actor that runs the cells of one model (the model stays loaded in its process)."""

    def run(self, task: dict[str, Any], items: dict[str, Any] | None) -> dict[str, Any]:
        return run_cell(task, items)

    def where(self) -> dict[str, Any]:
        """The host and pid of this worker (asked first, before any cell: the audit's ``workers.log``)."""
        return {"host": socket.gethostname(), "pid": os.getpid()}


def _probe(address: str) -> str | None:
    """Why nothing can be reached at ``host:port`` (None when something answers, or the address is not host:port).

    ``ray.init`` retries an address where nothing listens for minutes; this answers in seconds.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host or "/" in host:
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT):
            return None
    except OSError as exc:
        return MSG_NOTHING_AT.format(address=address, problem=exc.strerror or type(exc).__name__)


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local instance starts: Ray's cluster switch off, here and for the processes it starts (see module)."""
    from ray._private import ray_constants  # Ray's own switch: no public option keeps a loopback node address

    saved_switch = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        with settings.environ_set(RAY_CLUSTER_SWITCH, "0"):
            yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_switch


def _connect(address: str, num_cpus: int | None) -> None:
    """Start a local instance on loopback (``address="local"``) or connect to the cluster at ``host:port``.

    Raises
    ------
    BiastestError
        :data:`MSG_RAY_CONNECT`: nothing answers at the address, or Ray could not start or connect.
    """
    kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
    if address != "local" and (problem := _probe(address)) is not None:
        raise BiastestError(MSG_RAY_CONNECT.format(what=f"connect to the cluster at {address} with", problem=problem,
                                                   hint=MSG_RAY_HINT_ADDRESS.format(version=ray.__version__)))
    try:
        if address == "local":
            with _loopback_only():
                ray.init(num_cpus=num_cpus or os.cpu_count() or 1, _node_ip_address=LOCAL_NODE_IP, **kwargs)
        else:
            ray.init(address=address, log_to_driver=False)
    except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError … with its own words
        local = address == "local"
        raise BiastestError(MSG_RAY_CONNECT.format(
            what="start" if local else f"connect to the cluster at {address} with",
            problem=" ".join(str(exc).split())[:300],
            hint=MSG_RAY_HINT_LOCAL if local else MSG_RAY_HINT_ADDRESS.format(version=ray.__version__),
        )) from None


def run_on_ray(
    cells: list,
    items: dict[str, dict[str, Any] | None],
    save: Callable[[dict[str, Any]], None],
    *,
    address: str,
    num_cpus: int | None = None,
    progress: bool = True,
    on_worker: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """Run ``cells`` (:class:`biastest.audit.plan.Cell`) on Ray; ``save`` receives each cell's document.

    Parameters
    ----------
    cells : list of Cell
    items : dict
        Frozen items by their hash (:attr:`biastest.audit.plan.Items.content`).
    save : callable
        Called in this process with each cell's document, as it comes back.
    address : str
        ``"local"`` or ``host:port`` of a running cluster.
    num_cpus : int, optional
        CPUs of a local instance (default: this machine's).
    progress : bool
        Progress bar on stderr.
    on_worker : callable, optional
        ``on_worker(model name, {"host", "pid"})`` as each worker starts (restarted workers are not reported;
        each cell's document names the worker that ran it).
    """

    if not cells:
        return
    _connect(address, num_cpus)
    actors: list[Any] = []
    try:
        refs_items = {sha: ray.put(content) for sha, content in items.items()}
        groups: dict[str, list] = {}
        for cell in cells:
            groups.setdefault(cell.model.name, []).append(cell)
        pending: dict[Any, tuple[Any, str, int]] = {}
        asked: dict[Any, str] = {}
        remaining: dict[str, int] = {}
        owned: dict[str, list[Any]] = {}
        for name, group in groups.items():
            res = group[0].resources
            retries = res.get("max_retries", DEFAULT_MAX_RETRIES)
            options: dict[str, Any] = {"num_cpus": res.get("num_cpus", 1), "num_gpus": res.get("num_gpus", 0),
                                       "max_restarts": retries, "max_task_retries": retries}
            if res.get("memory"):
                options["memory"] = res["memory"]
            worker_cls = ray.remote(CellWorker).options(**options)
            replicas = [worker_cls.remote() for _ in range(min(res.get("replicas", 1), len(group)))]
            actors.extend(replicas)
            owned[name] = replicas
            for actor in replicas:
                asked[actor.where.remote()] = name
            remaining[name] = len(group)
            for i, cell in enumerate(group):
                ref = replicas[i % len(replicas)].run.remote(cell.task(), refs_items.get(cell.items.sha256))
                pending[ref] = (cell, name, retries)
        bar = progress_bar(len(cells), progress)
        try:
            while pending:
                ready, _ = ray.wait([*asked, *pending], num_returns=1)
                for ref in ready:
                    if ref in asked:
                        name = asked.pop(ref)
                        with contextlib.suppress(ray.exceptions.RayError):
                            info = ray.get(ref)
                            if on_worker is not None:
                                on_worker(name, info)
                        continue
                    cell, name, retries = pending.pop(ref)
                    try:
                        doc = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        problem = " ".join(str(exc).split())[:300]
                        doc = failed_document(cell.task(), MSG_WORKER_LOST.format(retries=retries, problem=problem),
                                              type(exc).__name__, worker={"host": "(lost Ray worker)", "pid": None})
                    save(doc)
                    bar.set_postfix_str(f"{cell.model.name} × {cell.spec.name[:30]} × {cell.method}", refresh=False)
                    bar.update(1)
                    remaining[name] -= 1
                    if remaining[name] == 0:  # this model's cells are done: free its resources for the next model
                        for actor in owned[name]:
                            ray.kill(actor)
        finally:
            bar.close()
    finally:
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # already ended
                pass
        ray.shutdown()
        sys.stderr.flush()
