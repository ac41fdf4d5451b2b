"""The language-model app with a model behind an endpoint: same numbers as in process, clear messages, no key kept.

A real HTTP server on 127.0.0.1 (:mod:`tests.completions_stub`) serves a tiny GPT-2 through the OpenAI completions
protocol with its own ``transformers`` forward passes, under the name vLLM gives a model served from a folder (the
folder's path), so the app finds its tokenizer and sends token ids. Through step 2's "A model behind an endpoint"
the app's result equals the in-process run of the same weights pair by pair (to 1e-4); every input is checked before
a request; what the endpoint answers unusably is a message next to the button; a budget that runs out keeps the
scored pairs and says the result is partial. The key reaches the server and nothing else: a run through the
launched app (gradio_client) is followed by a search of every file it wrote, the downloads, the logs and the output.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from biastest import public, remote, workdir
from biastest.measures.stereotype import options as stereotype_options
from biastest.measures.stereotype import report
from biastest.measures.stereotype import run as lm_run
from biastest.measures.stereotype.result import StereotypeResult
from biastest.models import endpoint_lm as E
from biastest.remote import STOP_BUDGET, STOP_RATE_LIMITED, STOP_TIME, STOP_UNAVAILABLE, RetryPolicy
from biastest.report.text import md_escape
from biastest.spec import BiasSpec
from biastest.ui import gpt as app
from tests import lm_helpers as H
from tests.completions_stub import Action, CompletionsStub
from tests.lm_helpers import run_pairs

SEED = 13
print(f"test seed: {SEED}")
KEY = "sk-app-endpoint-SECRET-91b4e2"
FAST = RetryPolicy(max_retries=2, initial_delay=0.01, factor=1.0, max_delay=0.05, jitter=0.0)
TOL = 1e-4
SPEC_NAME = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"
ATTRIBUTES = ("math", "algebra", "geometry", "calculus", "poetry", "art", "dance", "literature")


def _sentence(frame: str, group: str, attribute: str) -> str:
    text = frame.format(group, attribute)
    return text[0].upper() + text[1:]


#: 32 minimal pairs about the spec's terms: 64 sentences, two requests of 32 prompts.
FRAMES = (("he", "she", "{} likes {}."), ("she", "he", "{} studied {}."), ("man", "woman", "The {} likes {}."),
          ("boy", "girl", "The {} studied {}."))
ROWS = [
    {"keep": True, "attribute_term": a, "group_term_stereotyped": g1, "group_term_anti": g2,
     "stereotyped": _sentence(frame, g1, a), "anti_stereotyped": _sentence(frame, g2, a), "category": "",
     "source": "user", "template": ""}
    for a in ATTRIBUTES
    for g1, g2, frame in FRAMES
]


@pytest.fixture(autouse=True)
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    return H.build_tiny_gpt2(tmp_path_factory.mktemp("app_endpoint") / "gpt2", seed=SEED)


@pytest.fixture(scope="module")
def server(gpt2_dir):
    with CompletionsStub(gpt2_dir, served_name=str(gpt2_dir)) as stub:
        yield stub


@pytest.fixture
def stub(server):
    server.reset()
    yield server
    server.reset()


def _table(rows=ROWS):
    import pandas as pd

    return pd.DataFrame(rows, columns=report.PAIR_COLUMNS).rename(columns=report.PAIR_HEADERS)


def _state():
    state, msg, *_ = app.confirm_spec(SPEC_NAME, *app.fill_from_library(SPEC_NAME)[:4], app._fresh_state())
    assert msg.startswith("✅")
    return state


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


def _endpoint(stub, gpt2_dir, **kw) -> lm_run.LMEndpoint:
    kw.setdefault("retry", FAST)
    return lm_run.LMEndpoint(stub.base_url, str(gpt2_dir), kw.pop("api_key", KEY), **kw)


def test_the_rows_are_valid_minimal_pairs():
    assert report.row_problems(_table(), list(range(len(ROWS)))) == {}


# ----------------------------------------------------------------------------- equivalence
@pytest.mark.parametrize("method", ["causal-sum", "causal-diff-span"])
def test_a_run_through_the_endpoint_equals_the_same_weights_in_process(stub, gpt2_dir, method):
    state, table = _state(), _table()
    out = app.run_test("ignored-when-an-endpoint-is-given", method, 7, state, table, endpoint=_endpoint(stub, gpt2_dir))
    assert out[0] == app.MSG_RUN_DONE.format(n=len(ROWS), model=md_escape(str(gpt2_dir)))
    there = StereotypeResult.from_dict(out[1]["result"])
    pairs = report.pairs_from_table(table, spec_name=BiasSpec.from_dict(state["spec"]).name)
    here = run_pairs(pairs=pairs, model_id=str(gpt2_dir), method=method, seed=7, device="cpu", cache=None)
    worst = 0.0
    for x, y in zip(here.pairs, there.pairs, strict=True):
        assert (x.excluded_code, x.verdict) == (y.excluded_code, y.verdict), x.stereotyped
        if x.score_stereotyped is not None:
            worst = max(worst, abs(x.score_stereotyped - y.score_stereotyped), abs(x.score_anti - y.score_anti))
    print(f"{method}: largest difference from in-process {worst:.2e} nats over {here.n_scored} pairs")
    assert here.n_scored == there.n_scored >= 30 and worst < TOL
    assert (there.overall.score, there.overall.ci_low, there.overall.ci_high) == (
        here.overall.score, here.overall.ci_low, here.overall.ci_high)
    info = there.provenance["model"]
    assert info["served_by"] == "endpoint" and info["prompts"] == "token-ids" and info["api_key"] == "***"
    assert info["complete"] is True
    assert report.endpoint_lines(there)[0] in out[4]  # the summary says where the model was scored
    assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(out[1])  # the session's state


# ----------------------------------------------------------------------------- checked before any request
@pytest.mark.parametrize(("url", "served", "method", "message"), [
    ("", "x", "causal-sum", E.MSG_NEED_ENDPOINT_URL),
    ("  ", "x", "causal-sum", E.MSG_NEED_ENDPOINT_URL),
    ("localhost:8000", "x", "causal-sum", E.MSG_BAD_ENDPOINT.format(value="localhost:8000")),
    ("{url}", "", "causal-sum", E.MSG_NO_MODEL_NAME),
    ("{url}", "x", "pll-unmodified", stereotype_options.MSG_MASKED_NEEDS_PROCESS.format(method="pll-unmodified")),
    ("{url}", "x", "template-mask", stereotype_options.MSG_MASKED_NEEDS_PROCESS.format(method="template-mask")),
])
def test_the_endpoint_choice_is_checked_before_any_request(stub, url, served, method, message):
    endpoint = lm_run.LMEndpoint(url.format(url=stub.base_url), served, KEY)
    assert app.run_test("", method, 1, _state(), _table(), endpoint=endpoint)[0] == _inline(message)
    assert stub.requests == []


def test_public_mode_refuses_a_private_endpoint_before_any_request(stub, gpt2_dir, monkeypatch):
    monkeypatch.setattr(public, "_policy", public.decide(host="0.0.0.0", environ={}))
    out = app.run_test("", "causal-sum", 1, _state(), _table(), endpoint=_endpoint(stub, gpt2_dir))
    assert out[0] == _inline(remote.MSG_PRIVATE_ADDRESS.format(host="127.0.0.1"))
    assert stub.requests == []


def test_a_mistake_in_the_table_is_answered_before_any_request(stub, gpt2_dir):
    rows = [{**ROWS[0], "anti_stereotyped": ROWS[0]["stereotyped"]}]
    out = app.run_test("", "causal-sum", 1, _state(), _table(rows), endpoint=_endpoint(stub, gpt2_dir))
    assert out[0].startswith("⚠️") and stub.requests == []


# ----------------------------------------------------------------------------- what the endpoint answers
def _where(stub) -> str:
    return stub.base_url


@pytest.mark.parametrize(("actions", "message"), [
    ([Action("null_logprobs")], lambda s, m: E.MSG_NO_PROMPT_LOGPROBS.format(where=_where(s), model=m)),
    ([Action("model", model="llama-3")], lambda s, m: E.MSG_MODEL_MISMATCH.format(where=_where(s), served="llama-3",
                                                                                   model=m)),
    ([Action("status", status=500)], lambda s, m: E.MSG_ENDPOINT_FAILED.format(
        where=_where(s), why=E.MSG_WHY[STOP_UNAVAILABLE].format(tries=3))),
    ([Action("status", status=429)], lambda s, m: E.MSG_ENDPOINT_FAILED.format(
        where=_where(s), why=E.MSG_WHY[STOP_RATE_LIMITED].format(tries=3))),
    ([Action("status", status=401)], lambda s, m: E.MSG_KEY_REFUSED.format(where=_where(s), status=401)),
    ([Action("garbage")], lambda s, m: E.MSG_GARBLED.format(where=_where(s))),
], ids=["no-prompt-logprobs", "other-model", "500", "429", "key-refused", "garbage"])
def test_what_the_endpoint_cannot_do_is_a_message_next_to_the_button(stub, gpt2_dir, actions, message):
    stub.always(actions[0])
    out = app.run_test("", "causal-sum", 1, _state(), _table(), endpoint=_endpoint(stub, gpt2_dir))
    assert out[0] == _inline(message(stub, str(gpt2_dir)))
    assert all(o is not None for o in out[1:])  # nothing else is changed (gr.skip)
    assert stub.count("/v1/completions") <= 2 * (FAST.max_retries + 1)  # bounded tries


def test_a_served_name_the_server_does_not_list_is_refused_before_scoring(stub, gpt2_dir):
    endpoint = lm_run.LMEndpoint(stub.base_url, "llama-3", None, retry=FAST)
    out = app.run_test("", "causal-sum", 1, _state(), _table(), endpoint=endpoint)
    assert out[0] == _inline(E.MSG_NOT_SERVED.format(where=stub.base_url, model="llama-3", served=str(gpt2_dir)))
    assert stub.count("/v1/completions") == 0


def test_a_budget_that_runs_out_keeps_the_scored_pairs_and_says_the_result_is_partial(stub, gpt2_dir, tmp_path):
    import csv

    out = app.run_test("", "causal-sum", 3, _state(), _table(), endpoint=_endpoint(stub, gpt2_dir, max_requests=1))
    result = StereotypeResult.from_dict(out[1]["result"])
    info = result.provenance["model"]
    assert info["complete"] is False and info["stopped_because"] == STOP_BUDGET
    stop = E.MSG_ENDPOINT_PARTIAL.format(why=E.MSG_WHY[STOP_BUDGET].format(max_requests=1), missing=32, total=64)
    assert info["stop_message"] == stop
    assert out[0] == app.MSG_RUN_PARTIAL.format(n_scored=result.n_scored, n=len(ROWS),
                                                model=md_escape(str(gpt2_dir)), why=md_escape(stop))
    assert 0 < result.n_scored < len(ROWS) and result.excluded_reasons.get("not-scored", 0) > 0
    assert report.MSG_SUMMARY_PARTIAL.format(message=md_escape(stop)) in out[4]
    # issue 28 item 4: the reading opens with "no verdict" for a partial run, and claims no lean
    from biastest.measures.verdict import MSG_PARTIAL, PREFIX
    assert out[5] == f"{PREFIX} no verdict — {MSG_PARTIAL}." + out[5].split(f"{MSG_PARTIAL}.", 1)[1], out[5]
    assert "significant" not in out[5] and "evidence of a" not in out[5] and "Holm" not in out[5]
    assert stub.count("/v1/completions") == 1
    with open(out[9].value["path"], newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    not_scored = [r for r in rows if "stopped before this pair was scored" in " ".join(map(str, r.values()))]
    assert len(not_scored) == result.excluded_reasons["not-scored"]  # listed in the download with their reason


# ----------------------------------------------------------------------------- the key is never written
def _files_under(root: Path, since: float) -> list[Path]:
    if not root.exists():
        return []
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_mtime >= since]


def test_the_key_is_never_written_to_a_file_a_download_a_log_or_the_output(stub, gpt2_dir, tmp_path, monkeypatch,
                                                                           caplog, capfd):
    from gradio_client import Client

    from biastest.specs import get_spec
    from biastest.store import default_store_dir
    from tests.browser_helpers import served

    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "store"))
    since = time.time() - 1
    demo = app.build_demo()
    downloads = tmp_path / "downloads"
    with served(demo) as url:
        c = Client(url, verbose=False, download_files=str(downloads))
        offered = get_spec(SPEC_NAME).name
        lists = c.predict(offered, api_name="/fill_from_library")
        assert c.predict(offered, *lists[:4], api_name="/confirm_spec")[0].startswith("✅")
        table = {"headers": list(_table().columns), "data": _table().astype(object).values.tolist(), "metadata": None}
        out = c.predict("gpt2", "causal-sum", 5, table, app.MODEL_ENDPOINT, stub.base_url, str(gpt2_dir), KEY,
                        api_name="/run_test")
        cache = Path(demo.GRADIO_CACHE)
    assert out[0] == app.MSG_RUN_DONE.format(n=len(ROWS), model=md_escape(str(gpt2_dir)))
    assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {KEY}"}  # the key was used
    roots = [workdir.process_dir(), cache, default_store_dir(), tmp_path]
    written = sorted({p for root in roots for p in _files_under(root, since)})
    names = {p.suffix for p in written if downloads in p.parents}
    assert {".csv", ".json"} <= names  # the downloads were searched
    assert any(stub.base_url.encode() in p.read_bytes() for p in written if p.suffix == ".json")  # run data is there
    leaked = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    assert leaked == []
    assert all(KEY not in r.getMessage() for r in caplog.records)
    printed = capfd.readouterr()
    assert KEY not in printed.out and KEY not in printed.err


def test_a_server_that_never_answers_ends_at_the_time_limit_with_a_message(stub, gpt2_dir):
    stub.always(Action("hang", seconds=5))  # bounded: the stub closes a held request after 5 s
    out = app.run_test("", "causal-sum", 1, _state(), _table(), endpoint=_endpoint(stub, gpt2_dir, time_limit=1.0))
    assert out[0] == _inline(E.MSG_ENDPOINT_FAILED.format(where=stub.base_url,
                                                          why=E.MSG_WHY[STOP_TIME].format(seconds=1.0)))


# ----------------------------------------------------------------------------- comparability (issue 28, item 5)
def test_the_tokenizer_box_is_read_as_the_command_line_reads_it():
    assert [lm_run.tokenizer_choice(v) for v in ("", "  ", None, "none", " None ", False, " gpt2 ")] == [
        None, None, None, False, False, False, "gpt2"]


def _run_through_the_app_handler(stub, gpt2_dir, tokenizer: str, seed: int = 7):
    """The Run button's own handler (as the page calls it) with the endpoint's fields and the tokenizer box."""
    from biastest.ui.gpt.layout import _run_handler

    handler = _run_handler(threading.Lock())
    return handler("ignored", "causal-sum", seed, _state(), _table(), app.MODEL_ENDPOINT, stub.base_url,
                   str(gpt2_dir), KEY, "auto", False, tokenizer, progress=None)


def test_scores_from_server_split_text_say_first_that_they_are_not_comparable(stub, gpt2_dir):
    from biastest.measures.stereotype.comparability import MSG_NOT_COMPARABLE
    from biastest.measures.verdict import MSG_NOT_COMPARABLE as MSG_VERDICT_NOT_COMPARABLE
    from biastest.measures.verdict import PREFIX as VERDICT_PREFIX

    out = _run_through_the_app_handler(stub, gpt2_dir, "none")
    there = StereotypeResult.from_dict(out[1]["result"])
    assert there.provenance["model"]["prompts"] == "text"
    assert all(isinstance(r["body"]["prompt"][0], str) for r in stub.requests if r["path"].endswith("/completions"))
    assert out[4].startswith(MSG_NOT_COMPARABLE)  # the summary's first sentence
    # the reading's first sentence is the verdict: none, because the scores are not comparable (issue 28 item 4)
    assert out[5].startswith(VERDICT_PREFIX + " no verdict — " + MSG_VERDICT_NOT_COMPARABLE), out[5]
    assert MSG_NOT_COMPARABLE in out[5] and "significant" not in out[5] and "evidence of a" not in out[5]
    assert "significant" not in out[4].split("\n")[0]


def test_an_empty_tokenizer_box_tries_the_served_name_and_the_scores_are_comparable(stub, gpt2_dir):
    from biastest.measures.stereotype.comparability import MSG_NOT_COMPARABLE

    out = _run_through_the_app_handler(stub, gpt2_dir, "")
    there = StereotypeResult.from_dict(out[1]["result"])
    assert there.provenance["model"]["prompts"] == "token-ids"
    assert MSG_NOT_COMPARABLE not in out[4] and MSG_NOT_COMPARABLE not in out[5]
    named = _run_through_the_app_handler(stub, gpt2_dir, f" {gpt2_dir} ")  # a tokenizer typed: the same
    assert StereotypeResult.from_dict(named[1]["result"]).provenance["model"]["prompts"] == "token-ids"


def test_a_comparison_of_server_split_text_with_in_process_scores_is_labelled_not_comparable(stub, gpt2_dir):
    from biastest.measures.stereotype.comparability import MSG_COMPARE_NOT_COMPARABLE, comparable
    from biastest.ui import compare

    text = _run_through_the_app_handler(stub, gpt2_dir, "none")[1]
    tokens = _run_through_the_app_handler(stub, gpt2_dir, "")[1]
    base = StereotypeResult.from_dict(text["result"])
    here = run_pairs(pairs=compare.lm_pairs(base), model_id=str(gpt2_dir), method="causal-sum", seed=base.seed,
                     device="cpu", cache=None)
    assert not comparable([base, here]) and comparable([base, base]) and comparable([here, tokens["result"]])
    state = {**text, "compare": {"base": compare._lm_key(base), "results": [here.to_dict()]}}
    summary, _, reading, *_ = compare.lm_view(state)
    assert summary.startswith(MSG_COMPARE_NOT_COMPARABLE.split("{")[0])
    assert reading.startswith(MSG_COMPARE_NOT_COMPARABLE.split("{")[0])
    # token-id prompts through the endpoint and in process: one model, comparable scores, no label
    state = {**tokens, "compare": {"base": compare._lm_key(StereotypeResult.from_dict(tokens["result"])),
                                   "results": [here.to_dict()]}}
    summary, _, reading, *_ = compare.lm_view(state)
    assert MSG_COMPARE_NOT_COMPARABLE.split("{")[0] not in summary + reading
