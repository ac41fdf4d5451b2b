"""The apps' Stop button and time limit, through ``gradio_client`` against launched apps.

Each app is launched in this process on 127.0.0.1 (:func:`tests.browser_helpers.served`); generation goes
to the local OpenAI stub server, made slow (every answer 0.25 s late) or hanging. One ``Client`` is one
session, so its ``gr.State`` carries from the specification step to the generation, and its Stop reaches
its own run. Every wait is bounded; each test takes a few seconds.
"""

from __future__ import annotations

import threading
import time

import pytest

from biastest import remote
from biastest.generate import base
from biastest.measures.stereotype import report
from biastest.report.text import md_escape
from biastest.runner import services
from biastest.specs import get_spec
from biastest.ui.common import escape
from biastest.ui.spec_step import CUSTOM, fill_from_library
from biastest.ui.stop import StopControl, time_limit_hint
from tests.browser_helpers import served
from tests.openai_stub import Action, OpenAIStub

SPEC_NAME = "Math_Arts_vs_Male_Female"
CHAT = "/v1/chat/completions"
IMAGES = "/v1/images/generations"
SLOW = Action("sleep", seconds=1.0)


def _client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False)


def _wait_for(predicate, *, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _gpt_session(client) -> None:
    offered = get_spec(SPEC_NAME).name  # the dropdown offers the library's readable names (the old one is an alias)
    message = client.predict(offered, *fill_from_library(SPEC_NAME)[:4], api_name="/confirm_spec")[0]
    assert message.startswith("✅")


def _empty_table() -> dict:
    return {"headers": list(report.PAIR_COLUMNS), "data": [], "metadata": None}


def _generate_sentences(client, stub: OpenAIStub, per_attribute: int):
    return client.submit("openai-compatible", "", stub.base_url, "stub-chat", per_attribute, "with-context", 7,
                         _empty_table(), api_name="/generate_sentences")


# ------------------------------------------------------------------ language-model app
def test_gpt_stop_keeps_the_sentences_generated_so_far(tmp_path, monkeypatch):
    from biastest.ui.gpt import build_demo

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    with OpenAIStub() as stub, served(build_demo()) as url:
        stub.always("chat", SLOW)
        client = _client(url)
        _gpt_session(client)
        job = _generate_sentences(client, stub, per_attribute=2)
        _wait_for(lambda: stub.count(CHAT) >= 4, what="four requests")
        t0 = time.monotonic()
        client.predict(api_name="/stop_generation")
        assert time.monotonic() - t0 < 4.0  # the Stop click does not wait behind the running generation
        table, _, _, _, message, _ = job.result(timeout=20)  # table, find, coverage, import, generation, run
        assert time.monotonic() - t0 < 6.0  # far less than the run left alone (8 s and more)
        requests = stub.count(CHAT)
    kept = table["data"]
    assert 3 <= len(kept) <= requests  # the answers that came before the stop, nothing after it
    spec = get_spec(SPEC_NAME)
    total = 2 * len(spec.attribute_terms)
    assert message == md_escape(base.MSG_RUN_CANCELLED.format(accepted=len(kept), items="sentences",
                                                              missing=total - len(kept)))
    # the kept pairs are in the shared store as after any run
    stored = {p.stereotyped for p in services.retrieve_pairs(spec).pairs}
    column = list(table["headers"]).index(report.PAIR_HEADERS["stereotyped"])
    assert {row[column] for row in kept} <= stored and len(stored) == len(kept)


def test_gpt_hanging_endpoint_ends_at_the_time_limit_with_its_sentences(tmp_path, monkeypatch):
    from biastest.ui.gpt import build_demo

    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    with OpenAIStub() as stub, served(build_demo(generation_seconds=1.5)) as url:
        stub.script("chat", Action("rule"), Action("rule"))
        stub.always("chat", Action("hang"))
        client = _client(url)
        _gpt_session(client)
        t0 = time.monotonic()
        table, _, _, _, message, _ = _generate_sentences(client, stub, per_attribute=1).result(timeout=20)
        assert time.monotonic() - t0 < 1.5 + remote.DEADLINE_GRACE_SECONDS + 5.0
    spec = get_spec(SPEC_NAME)
    assert len(table["data"]) == 2
    assert message == md_escape(base.MSG_RUN_TIME.format(seconds=1.5, accepted=2, items="sentences",
                                                         missing=len(spec.attribute_terms) - 2))


# ------------------------------------------------------------------ vision-language app
def _vqa_session(client) -> None:
    out = client.predict(CUSTOM, "man", "woman", "doctor", "nurse", api_name="/confirm_handler")
    assert out[0].startswith("✅")


def _generate_images(client, stub: OpenAIStub, per_term: int):
    return client.submit("compatible", "", stub.base_url, "stub-image", "", "256x256", per_term, "portrait", 0,
                         api_name="/generate_images")


def test_vqa_stop_keeps_the_images_generated_so_far():
    from biastest.ui.vqa import build_demo

    with OpenAIStub() as stub, served(build_demo(use_store=False)) as url:
        stub.always("images", SLOW)
        client = _client(url)
        _vqa_session(client)
        job = _generate_images(client, stub, per_term=8)
        _wait_for(lambda: stub.count(IMAGES) >= 3, what="three requests")
        t0 = time.monotonic()
        client.predict(api_name="/stop_generation")
        assert time.monotonic() - t0 < 4.0  # not behind the generation's concurrency group (limit 1)
        message, _coverage, _summary, gallery = job.result(timeout=30)
        assert time.monotonic() - t0 < 6.0  # far less than the run left alone (13 s more)
    kept = len(gallery)
    assert 2 <= kept < 16
    assert message == escape(base.MSG_RUN_CANCELLED.format(accepted=kept, items="images", missing=16 - kept))


def test_vqa_hanging_image_service_ends_at_the_time_limit_with_its_images():
    from biastest.ui.vqa import build_demo

    with OpenAIStub() as stub, served(build_demo(use_store=False, generation_seconds=1.5)) as url:
        stub.script("images", Action("rule"))
        stub.always("images", Action("hang"))
        client = _client(url)
        _vqa_session(client)
        t0 = time.monotonic()
        message, _coverage, _summary, gallery = _generate_images(client, stub, per_term=1).result(timeout=20)
        assert time.monotonic() - t0 < 1.5 + remote.DEADLINE_GRACE_SECONDS + 5.0
    assert len(gallery) == 1
    assert message == escape(base.MSG_RUN_TIME.format(seconds=1.5, accepted=1, items="images", missing=1))


def test_a_stop_reaches_only_its_own_session():
    """Two users of one app: one presses Stop; the other's run is not touched."""
    from biastest.ui.vqa import build_demo

    with OpenAIStub() as stub, served(build_demo(use_store=False)) as url:
        stub.always("images", Action("sleep", seconds=0.1))
        alice, bob = _client(url), _client(url)
        _vqa_session(alice)
        _vqa_session(bob)
        job = _generate_images(alice, stub, per_term=2)
        _wait_for(lambda: stub.count(IMAGES) >= 1, what="the first request")
        bob.predict(api_name="/stop_generation")  # nothing of Bob's runs: harmless
        message, _c, _s, gallery = job.result(timeout=20)
    assert len(gallery) == 4
    assert message == escape(base.MSG_RUN_COMPLETED.format(accepted=4, items="images", unit="term"))


# ------------------------------------------------------------------ the registry and the wiring
def test_stop_signals_arm_run_stop_and_clean_up():
    signals = services.StopSignals()
    armed = signals.arm("s1")
    assert signals.stop("s1") and armed.is_set()  # Stop while the run waits in the queue …
    with signals.running("s1") as event:
        assert event is armed and event.is_set()  # … is seen as soon as it starts
        assert signals.is_running("s1")
    assert len(signals) == 0 and not signals.stop("s1")  # released when the run ends; a late Stop is harmless

    fresh = signals.arm("s1")
    assert fresh is not armed and not fresh.is_set()  # a new run never inherits an old stop
    signals.disarm("s1")
    assert len(signals) == 0

    with signals.running("s2") as event:
        assert signals.arm("s2") is event  # pressing Generate again during a run shares its signal
        signals.forget("s2")  # the page was closed
        assert event.is_set()
    assert len(signals) == 0


def test_stop_control_outside_gradio_and_hint():
    control = StopControl()
    with control.running(None) as event:
        assert isinstance(event, threading.Event) and len(control.signals) == 0
    assert time_limit_hint(services.GENERATION_MAX_SECONDS).startswith("A run stops by itself after 5 minutes;")
    limits = services.generation_limits(request_timeout=services.TEXT_REQUEST_TIMEOUT)
    assert limits.max_seconds == services.GENERATION_MAX_SECONDS and limits.request_timeout == 60.0
    assert services.generation_limits(request_timeout=120.0, max_seconds=2.0).request_timeout == 2.0
