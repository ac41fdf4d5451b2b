"""One server for the whole suite: a landing page and each app at its own path.

``make run`` runs ``python -m biastest.ui.serve``: the three apps are mounted
on one FastAPI/uvicorn server (``/gpt``, ``/vqa``, ``/psychophysics``) with a
plain index page at ``/``, bound to ``127.0.0.1:7860`` unless ``--host`` /
``--port`` (or the environment, :func:`biastest.settings.bind_host` and
:func:`biastest.settings.bind_port`) say otherwise. Each app
file (``python app_gpt.py`` …) still launches one app alone, as a Space does.
Gradio's queue is on with bounded size and concurrency; models are shared
through the process-wide cache; analytics and telemetry are off.
"""

from __future__ import annotations

import argparse
import html
import importlib
import logging
import sys
from dataclasses import dataclass

from biastest import public, settings, workdir
from biastest.errors import SettingsError

settings.turn_off_telemetry()  # before gradio and huggingface_hub load: they read these variables then

# Below the call above on purpose: these load gradio and huggingface_hub, which read the telemetry variables.
import gradio as gr  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from fastapi.responses import HTMLResponse  # noqa: E402

from biastest.runner.services import shared_dataset  # noqa: E402
from biastest.ui.common import CSS, MAX_UPLOAD, THEME  # noqa: E402

__all__ = ["APPS", "AppEntry", "available_apps", "build_server", "configure_queue", "main"]

log = logging.getLogger("biastest.serve")

QUEUE_MAX_SIZE = 64
DEFAULT_CONCURRENCY = 2


@dataclass(frozen=True)
class AppEntry:
    """One app of the suite."""

    key: str
    title: str
    description: str
    module: str
    internet: str = ""


APPS = (
    AppEntry(
        "gpt",
        "Language models",
        "Stereotype score of masked and causal language models on sentence pairs, retrieved or generated.",
        "biastest.ui.gpt",
        "Needs the internet to download a Hugging Face model the first time it is tested and to generate sentences "
        "with OpenAI; stored sentences, imported files and models already on this server work offline.",
    ),
    AppEntry(
        "vqa",
        "Vision-language models",
        "Zero-shot bias score of CLIP, ViLT, BLIP, GIT … on retrieved, generated or uploaded images.",
        "biastest.ui.vqa",
        "Needs the internet to download a Hugging Face model the first time it is tested and to generate pictures "
        "with OpenAI; stored and uploaded pictures and models already on this server work offline.",
    ),
    AppEntry(
        "psychophysics",
        "Word embeddings",
        "Psychophysics 2AFC (PSE, JND, psychometric curves), WEAT/MAC and Bayesian estimates.",
        "biastest.ui.psychophysics",
        "Works offline: the GloVe and MiniLM embeddings come with biastest, and your own embedding files are "
        "uploaded.",
    ),
)


def configure_queue(demo):
    """Turn the queue on with the suite's bounds and return ``demo``."""
    return demo.queue(max_size=QUEUE_MAX_SIZE, default_concurrency_limit=DEFAULT_CONCURRENCY)


def available_apps() -> list[AppEntry]:
    """The apps whose UI module exists in this checkout."""
    out = []
    for entry in APPS:
        try:
            importlib.import_module(entry.module)
        except ModuleNotFoundError as exc:
            if exc.name != entry.module:
                raise
            continue
        out.append(entry)
    return out


MSG_OFFLINE_SERVER = (
    "This server has no connection to the Hugging Face Hub (HF_HUB_OFFLINE is set): only models already in its "
    "cache can be tested."
)


def _index_html(entries: list[AppEntry]) -> str:
    cards = "\n".join(
        f'<a class="card" href="/{e.key}/"><h2>{html.escape(e.title)}</h2><p>{html.escape(e.description)}</p>'
        f'<p class="net">{html.escape(e.internet)}</p></a>'
        for e in entries
    )
    note = f'<p class="net">{html.escape(MSG_OFFLINE_SERVER)}</p>' if settings.hub_offline() else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>biastest</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:Inter,system-ui,sans-serif;max-width:900px;margin:3rem auto;padding:0 1rem;color:#1e293b}}
.card{{display:block;border:1px solid #cbd5e1;border-radius:12px;padding:1rem 1.25rem;margin:1rem 0;
color:inherit;text-decoration:none}}
.card:hover{{border-color:#6366f1;box-shadow:0 2px 10px #6366f122}}
h1{{margin-bottom:.25rem}} p{{margin:.25rem 0}} .net{{font-size:.9em;color:#475569}}
</style></head><body>
<h1>biastest</h1>
<p>Test social bias in AI models, step by step: specify the bias, get test data, read the results.</p>
{note}
{cards}
</body></html>"""


def build_server(entries: list[AppEntry] | None = None):
    """A FastAPI app with the index page and every available app mounted."""
    entries = available_apps() if entries is None else entries
    app = FastAPI(title="biastest")
    page = _index_html(entries)

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return page

    for entry in entries:
        module = importlib.import_module(entry.module)
        demo = configure_queue(module.build_demo(index_link=True))
        gr.mount_gradio_app(
            app, demo, path=f"/{entry.key}", theme=THEME, css=CSS, ssr_mode=False, max_file_size=MAX_UPLOAD
        )
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the suite (``make run``)."""
    parser = argparse.ArgumentParser(prog="python -m biastest.ui.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--host", help="address to bind (default: biastest.settings.bind_host)")
    parser.add_argument("--port", type=int, help="port (default: biastest.settings.bind_port)")
    args = parser.parse_args(argv)
    try:
        args.host = args.host or settings.bind_host()
        args.port = settings.bind_port() if args.port is None else args.port
    except SettingsError as exc:
        print(exc.message, file=sys.stderr)
        return 2
    entries = available_apps()
    if not entries:
        print("No app is available in this checkout yet (expected the packages biastest/ui/gpt, biastest/ui/vqa "
              "or biastest/ui/psychophysics).")
        return 2
    logging.basicConfig(level=logging.INFO)
    policy = public.configure(host=args.host, quiet=True)
    print(policy.describe(), flush=True)
    app = build_server(entries)
    workdir.remove_on_sigterm()  # the working folder goes at exit (atexit) and on SIGTERM
    print(shared_dataset().summary(), flush=True)  # pulls start in the background; nothing waits for them
    print(f"biastest: serving {', '.join('/' + e.key for e in entries)} at http://{args.host}:{args.port}/")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
