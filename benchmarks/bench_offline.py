"""Benchmark: how long a user waits to learn that a Hub model cannot be loaded while the Hub cannot be reached.

Issue 18 found the default ``gpt2`` failing after 33.5 s and ``openai/clip-vit-base-patch32`` after 27.6 s offline.
Each figure is the wall time of one fresh process (huggingface_hub reads ``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` when
imported) from the call to the message, with ``HF_HUB_OFFLINE`` unset and an empty Hugging Face cache, against:

* ``refused``: a Hub address on 127.0.0.1 whose port refuses connections (a machine with no network);
* ``no_answer``: a Hub address on 127.0.0.1 that accepts connections and never answers (a network that drops
  packets, a captive portal);
* ``this_machine``: the real Hub address, whatever this machine's network does with it.

Both children import transformers before the clock starts, as in a running server. ``biastest_s`` is biastest's
load (:func:`biastest.models.lm.load_language_model`,
:func:`biastest.models.vlm.load_vlm`: the 2-s probe, then :data:`biastest.models.catalog.MSG_HUB_OFFLINE`);
``transformers_s`` is what the load did before (``AutoConfig.from_pretrained`` on the Hub id, which waits for the
network and retries), measured only without ``--quick``, capped at :data:`CAP_S`.

Usage: ``python -m benchmarks.bench_offline [--quick]``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAP_S = 60.0
MODELS = {"lm": "gpt2", "vlm": "openai/clip-vit-base-patch32"}

_BIASTEST = """
import json, sys, time
from biastest.errors import ModelLoadError
from biastest.models.lm import load_language_model
from biastest.models.vlm import load_vlm
from biastest.models.base import quiet_transformers
import transformers.models.auto.modeling_auto  # loaded, as in a running server: the figure is the wait itself
quiet_transformers()
load = {"lm": load_language_model, "vlm": load_vlm}[sys.argv[1]]
t = time.perf_counter()
try:
    load(sys.argv[2], cache=None)
    message = "loaded"
except ModelLoadError as exc:
    message = exc.message
print(json.dumps({"seconds": time.perf_counter() - t, "message": message}))
"""

_TRANSFORMERS = """
import json, sys, time
from transformers import AutoConfig
import transformers.models.auto.modeling_auto
t = time.perf_counter()
try:
    AutoConfig.from_pretrained(sys.argv[2])
    message = "loaded"
except Exception as exc:
    message = type(exc).__name__
print(json.dumps({"seconds": time.perf_counter() - t, "message": message}))
"""


def _child(code: str, app: str, model: str, env: dict[str, str]) -> dict:
    t = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", code, app, model], capture_output=True, text=True, env=env,
                             timeout=CAP_S, cwd=Path(__file__).resolve().parents[1], check=False)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "message": f"no answer within {CAP_S:g} s", "process_s": round(CAP_S, 1)}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    got = json.loads(lines[-1]) if lines else {"seconds": None, "message": out.stderr[-300:]}
    got["seconds"] = None if got["seconds"] is None else round(got["seconds"], 2)
    got["process_s"] = round(time.perf_counter() - t, 2)
    return got


def run(quick: bool = False) -> dict:
    """Run the benchmark; returns a JSON-able dict of figures (and prints it)."""
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    refused_port = refused.getsockname()[1]
    refused.close()  # nothing listens there now
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections complete in the kernel and are never accepted nor answered
    endpoints = {
        "refused": f"http://127.0.0.1:{refused_port}",
        "no_answer": f"http://127.0.0.1:{silent.getsockname()[1]}",
        "this_machine": None,
    }
    figures: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, endpoint in endpoints.items():
                env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                                                                        "HF_ENDPOINT")}
                env.update(HF_HOME=str(Path(tmp) / name), HF_HUB_DISABLE_TELEMETRY="1")
                if endpoint:
                    env["HF_ENDPOINT"] = endpoint
                for app, model in MODELS.items():
                    row = {"biastest": _child(_BIASTEST, app, model, env)}
                    if not quick:
                        row["transformers"] = _child(_TRANSFORMERS, app, model, env)
                    figures[f"{name}:{model}"] = row
    finally:
        silent.close()
    result = {
        "what": "seconds from the load call to the message, Hub unreachable, empty cache (fresh process each)",
        "figures": {k: {"biastest_s": v["biastest"]["seconds"], "message": v["biastest"]["message"][:120],
                        **({"transformers_s": v["transformers"]["seconds"], "transformers_result":
                            v["transformers"]["message"]} if "transformers" in v else {})}
                    for k, v in figures.items()},
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
