"""Bounded waits in generation: a stop signal and an overall time limit end a run early and keep its results.

Sentences and images go through the real ``openai`` client to the local stub
server (``tests/openai_stub.py``), whose ``hang`` action holds a request open
without answering (bounded: the stub closes it when it stops). Every wait in
these tests is bounded; each test takes about a second.
"""

from __future__ import annotations

import threading
import time

import pytest

from biastest import remote
from biastest.generate import SentenceSettings, base, generate_sentences
from biastest.generate.images import OpenAICompatibleImageGenerator, generate_images
from biastest.generate.openai_chat import OpenAIChatGenerator
from biastest.remote import MalformedAnswer, RetryPolicy, RunLimits, RunState, RunStopped
from tests.generate_helpers import small_spec
from tests.openai_stub import Action, OpenAIStub

FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, factor=2.0, max_delay=0.05, max_retry_after=0.2,
                         jitter=0.0)
CHAT = "/v1/chat/completions"
IMAGES = "/v1/images/generations"


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


def chat(stub: OpenAIStub) -> OpenAIChatGenerator:
    return OpenAIChatGenerator("stub-chat", api_key="sk-test", base_url=stub.base_url)


def images(stub: OpenAIStub) -> OpenAICompatibleImageGenerator:
    return OpenAICompatibleImageGenerator(stub.base_url, "stub-image", size=(64, 64))


class _StopLater:
    """Sets a stop signal ``delay`` seconds after :meth:`start`; remembers when it did."""

    def __init__(self, delay: float) -> None:
        self.event = threading.Event()
        self.delay = delay
        self.set_at: float | None = None
        self._timer: threading.Timer | None = None

    def _fire(self) -> None:
        self.set_at = time.monotonic()
        self.event.set()

    def start(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.delay, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


# ------------------------------------------------------------------ stop after k results
def test_stop_after_k_sentences_keeps_exactly_those(stub: OpenAIStub) -> None:
    cancel = threading.Event()

    def progress(done: int, total: int, message: str) -> None:
        if done == 3:
            cancel.set()  # while the fourth sentence is about to be asked for

    run = generate_sentences(small_spec(), chat(stub), SentenceSettings(seed=5, target_per_attribute=2,
                                                                        retry=FAST_RETRY), cancel=cancel,
                             progress=progress)
    rep = run.report
    assert rep.stopped_because == remote.STOP_CANCELLED
    assert rep.accepted == 3 == len(run.sentences) == len(run.pairs)
    assert rep.total_missing == 8 - 3
    assert rep.message == base.MSG_RUN_CANCELLED.format(accepted=3, items="sentences", missing=5)
    assert stub.count(CHAT) == 3  # no request was sent after the stop


def test_stop_after_k_images_keeps_exactly_those(stub: OpenAIStub) -> None:
    cancel = threading.Event()

    def progress(done: int, total: int, message: str) -> None:
        if done == 2:
            cancel.set()

    run = generate_images(["man", "woman"], images(stub), seed=1, target_per_term=3, retry=FAST_RETRY,
                          cancel=cancel, progress=progress)
    rep = run.report
    assert rep.stopped_because == remote.STOP_CANCELLED
    assert rep.accepted == 2 == len(run.images)
    assert [i.image_term for i in run.images] == ["man", "woman"]  # round-robin: both terms covered
    assert rep.message == base.MSG_RUN_CANCELLED.format(accepted=2, items="images", missing=4)
    assert stub.count(IMAGES) == 2


def test_a_stop_set_before_the_run_sends_nothing(stub: OpenAIStub) -> None:
    cancel = threading.Event()
    cancel.set()
    run = generate_sentences(small_spec(), chat(stub), SentenceSettings(seed=5, target_per_attribute=1), cancel=cancel)
    assert run.report.stopped_because == remote.STOP_CANCELLED and run.sentences == ()
    assert stub.count(CHAT) == 0


# ------------------------------------------------------------------ a hanging service
def test_hanging_endpoint_is_given_up_at_the_time_limit_and_results_are_kept(stub: OpenAIStub) -> None:
    stub.script("chat", Action("rule"), Action("rule"))
    stub.always("chat", Action("hang"))
    limits = RunLimits(max_seconds=1.0, request_timeout=60.0)
    t0 = time.monotonic()
    run = generate_sentences(small_spec(), chat(stub), SentenceSettings(
        seed=3, target_per_attribute=1, limits=limits,
        retry=RetryPolicy(max_retries=4, initial_delay=0.01, jitter=0.0)))
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0 + remote.DEADLINE_GRACE_SECONDS + 5.0, elapsed  # not 60 s, nor 5 × 60 s
    rep = run.report
    assert rep.stopped_because == remote.STOP_TIME
    assert rep.accepted == 2 == len(run.pairs)
    assert rep.message == base.MSG_RUN_TIME.format(seconds=1.0, accepted=2, items="sentences", missing=2)


def test_hanging_image_service_is_given_up_at_the_time_limit(stub: OpenAIStub) -> None:
    stub.script("images", Action("rule"))
    stub.always("images", Action("hang"))
    t0 = time.monotonic()
    run = generate_images(["man", "woman"], images(stub), seed=1, target_per_term=2,
                          limits=RunLimits(max_seconds=1.0, request_timeout=120.0), retry=FAST_RETRY)
    assert time.monotonic() - t0 < 1.0 + remote.DEADLINE_GRACE_SECONDS + 5.0
    assert run.report.stopped_because == remote.STOP_TIME and len(run.images) == 1
    assert run.report.message == base.MSG_RUN_TIME.format(seconds=1.0, accepted=1, items="images", missing=3)


def test_stop_while_a_request_hangs_is_honoured_at_once(stub: OpenAIStub) -> None:
    stub.script("chat", Action("rule"), Action("rule"))
    stub.always("chat", Action("hang"))
    stop = _StopLater(0.3)

    def progress(done: int, total: int, message: str) -> None:
        if done == 2:
            stop.start()  # 0.3 s into the third request, which hangs

    try:
        run = generate_sentences(small_spec(), chat(stub), SentenceSettings(
            seed=3, target_per_attribute=1, limits=RunLimits(max_seconds=30.0, request_timeout=20.0), retry=FAST_RETRY,
        ), cancel=stop.event, progress=progress)
        ended = time.monotonic()
    finally:
        stop.cancel_timer()
    assert stop.set_at is not None
    assert ended - stop.set_at < 5.0  # the hanging request is given up, not waited for (20 s)
    assert run.report.stopped_because == remote.STOP_CANCELLED
    assert run.report.accepted == 2 == len(run.sentences)
    assert run.report.message == base.MSG_RUN_CANCELLED.format(accepted=2, items="sentences", missing=2)


def test_stop_during_a_backoff_wait_is_honoured_within_a_second(stub: OpenAIStub) -> None:
    stub.script("chat", Action("rule"))
    stub.always("chat", Action("status", 503, headers={"Retry-After": "30"}))
    stop = _StopLater(0.3)

    def progress(done: int, total: int, message: str) -> None:
        if done == 1:
            stop.start()

    try:
        run = generate_sentences(small_spec(), chat(stub), SentenceSettings(
            seed=3, target_per_attribute=1, limits=RunLimits(max_seconds=120.0),
            retry=RetryPolicy(max_retries=3, max_retry_after=60.0, jitter=0.0),
        ), cancel=stop.event, progress=progress)
        ended = time.monotonic()
    finally:
        stop.cancel_timer()
    assert stop.set_at is not None and ended - stop.set_at < 5.0  # not the 30 s the service asked for
    rep = run.report
    assert rep.stopped_because == remote.STOP_CANCELLED and rep.accepted == 1
    assert rep.transient_failures == {"server_error": 1} and rep.requests_used == 2


# ------------------------------------------------------------------ RunState with work that ignores its time-out
def test_run_state_gives_up_work_that_ignores_its_timeout_at_the_time_limit() -> None:
    release = threading.Event()
    run = RunState(RunLimits(max_seconds=0.3, request_timeout=60.0), RetryPolicy(), seed=0)
    seen: list[float] = []

    def stuck(timeout: float) -> str:
        seen.append(timeout)
        release.wait(10.0)  # a local model that does not honour the time-out (bounded here)
        return "late"

    t0 = time.monotonic()
    try:
        with pytest.raises(RunStopped) as stopped:
            run.call(stuck, what="stuck")
    finally:
        release.set()
    assert stopped.value.reason == remote.STOP_TIME
    assert time.monotonic() - t0 < 0.3 + remote.DEADLINE_GRACE_SECONDS + 5.0
    assert seen and seen[0] <= 0.3  # the time-out handed to the work never exceeds the time left


def test_run_state_stop_ends_a_call_in_flight_and_keeps_finished_answers() -> None:
    release = threading.Event()
    cancel = threading.Event()
    run = RunState(RunLimits(max_seconds=30.0), RetryPolicy(), seed=0, cancel=cancel)
    assert run.call(lambda timeout: "first", what="ok") == "first"
    with pytest.raises(MalformedAnswer):  # errors of the work reach the caller unchanged

        def malformed(timeout: float) -> str:
            raise MalformedAnswer()

        run.call(malformed, what="malformed")

    timer = threading.Timer(0.2, cancel.set)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(RunStopped) as stopped:
            run.call(lambda timeout: release.wait(10.0), what="stuck")
    finally:
        release.set()
        timer.cancel()
    assert stopped.value.reason == remote.STOP_CANCELLED
    assert time.monotonic() - t0 < 0.2 + 5.0  # not the 10 s the work would take
