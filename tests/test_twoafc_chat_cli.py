"""The 2AFC test of a chat model end to end: through the loopback chat endpoint with faults, the command line, an
audit cell. The command line and the audit replace ``biastest.models.factory.chat_model`` (the one seam
:func:`biastest.measures.chat_common.build_chat_model` calls) with a builder of a planted DummyChatLM.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biastest import public
from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.plan import MSG_SKIP_TWOAFC_SPEC, make_plan
from biastest.audit.report import build_report
from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.cli import run as cli_run
from biastest.cli.run import (
    MSG_CONFIRM_NEEDED,
    MSG_MEASURE_NEEDS_TWOAFC_SPEC,
    MSG_OPTION_NOT_FOR_RUN,
    MSG_UNKNOWN_MODEL_KIND,
    model_kind_argv,
)
from biastest.measures.chat_twoafc import TwoAFCChatItems, TwoAFCChatOptions, TwoAFCChatResult, run_twoafc_chat
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.labour import MSG_UNKNOWN_TABLE, load_labour_table
from biastest.models import factory
from biastest.models.dummy import DummyChatLM
from tests.audit_helpers import SPEC_A
from tests.chat_stub import Action, ChatStub
from tests.twoafc_chat_helpers import BLS, OCCUPATIONS, planted_answer, small_spec

SERVED = "stub-chat"
Q = 0.2


@pytest.fixture
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


def test_through_the_endpoint_faults_lose_nothing_and_a_rerun_is_cached(tmp_path, private_mode) -> None:
    spec = small_spec(n=12, pairs=6)
    with ChatStub(lambda messages, seed: planted_answer(messages[-1]["content"], seed, q=Q, refuse=0.1),
                  served_name=SERVED) as stub:
        stub.script(Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500), Action("garbage"))
        o = TwoAFCChatOptions.parse({"model_id": SERVED, "seed": 3, "n_resamples": 300, "top_logprobs": 0,
                                     "samples": 2, "temperature": 0.5, "concurrency": 3, "endpoint": stub.base_url})
        first = run_twoafc_chat(o, TwoAFCChatItems(spec), cache_dir=tmp_path / "cache")
        asked = stub.count()
        again = run_twoafc_chat(o, TwoAFCChatItems(spec), cache_dir=tmp_path / "cache")
        assert stub.count() == asked  # the rerun asked nothing
    assert first.counts["failed"] == 0 and first.counts["not-asked"] == 0 and first.counts["unparseable"] == 0
    assert sum(first.counts.values()) == 12 * 6 * 2 * 2  # nothing lost to the faults
    assert first.served_model == SERVED and again.counts == first.counts
    assert first.refusal_rate.low <= 10.0 <= first.refusal_rate.high
    assert first.position_bias.low <= 100 * (Q + (1 - Q) / 2) <= first.position_bias.high
    truth = {t: 100 * (Q / 2 + (1 - Q) * p) for t, p in BLS.items()}
    covered = [t.p_cue1_rate.low <= truth[t.target] <= t.p_cue1_rate.high for t in first.targets]
    assert sum(covered) >= 10


@pytest.fixture
def built(monkeypatch):
    """``factory.chat_model`` builds a planted DummyChatLM; each call's reference and settings are recorded."""
    calls = []

    def chat_model(ref, *, api_key=None, cache_dir=None, seed=None, cancel=None, **more):
        calls.append({"ref": ref, "api_key": api_key, "cache_dir": cache_dir, "seed": seed})
        if ref.model_id == "org/order":
            return DummyChatLM(lambda r: "A", model_id=ref.model_id)
        return DummyChatLM(lambda r: planted_answer(r.messages[-1][1], r.seed, q=Q), model_id=ref.model_id)

    monkeypatch.setattr(factory, "chat_model", chat_model, raising=False)
    return calls


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small_spec().to_dict()), encoding="utf-8")
    return path


def test_the_command_line_runs_it(tmp_path, spec_file, built, capsys) -> None:
    rc = main(["run", "twoafc-chat", str(spec_file), "--model", "chat-x", "--seed", "5", "--bootstrap", "200",
               "--samples", "2", "--temperature", "0.5", "--out", str(tmp_path / "r.json"),
               "--csv", str(tmp_path / "r.csv")])
    stdout, stderr = capsys.readouterr()
    assert rc == EXIT_OK, stderr
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert doc["test"] == "twoafc-chat" and doc["seed"] == 5 and doc["data"] == {"from": "specification"}
    result = TwoAFCChatResult.from_dict(doc["result"])
    assert result.n_requests == 12 * 6 * 2 * 2 and result.labour.n == 12 and result.labour.pearson_r > 0.5
    assert doc["options"]["samples"] == 2 and "endpoint" not in doc["options"]
    assert built[0]["seed"] == 5 and built[0]["cache_dir"] is not None
    assert "288 questions" in stderr and "2AFC of a chat model: Pearson r with % women" in stdout
    assert (tmp_path / "r.csv").read_text(encoding="utf-8").count("\nanswer,") == 288



def test_the_labour_table_is_chosen_by_name_from_the_command_line(tmp_path, spec_file, built, capsys) -> None:
    """--labour-table names one table of LABOUR_TABLES; the result records which; an unknown name is refused."""
    rc = main(["run", "twoafc", str(spec_file), "--model-kind", "chat", "--model", "chat-x", "--bootstrap", "200",
               "--labour-table", "zhao", "--out", str(tmp_path / "r.json")])
    assert rc == EXIT_OK, capsys.readouterr().err
    lab = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["result"]["labour"]
    zhao = {r["occupation"] for r in load_labour_table("zhao")}
    assert lab["table"] == "zhao" and lab["table_source"] == "biastest/data/occupations_zhao2018.csv"
    assert lab["n"] == len(zhao & set(small_spec().targets)) >= 3
    built.clear()
    rc = main(["run", "twoafc-chat", str(spec_file), "--model", "chat-x", "--labour-table", "census",
               "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and MSG_UNKNOWN_TABLE.format(value="census", choices="bls, bergsma, zhao") in \
        capsys.readouterr().err
    assert not built  # refused before any model was built


def test_the_command_line_refuses_pairs_flags_and_asks_before_a_large_hosted_run(
        tmp_path, built, capsys, monkeypatch) -> None:
    out = ["--out", str(tmp_path / "r.json")]
    rc = main(["run", "twoafc-chat", OCCUPATIONS, "--model", "m", "--pairs", "x.csv", *out])
    assert rc == EXIT_USAGE and MSG_OPTION_NOT_FOR_RUN.format(
        option="--pairs", what="run twoafc-chat", applies="stereotype, forced-choice") in capsys.readouterr().err
    monkeypatch.setenv("TWOAFC_TEST_KEY", "sk-secret-value")
    monkeypatch.setattr(cli_run, "interactive", lambda: False)
    hosted = ["--endpoint", "https://api.example.com/v1", "--api-key-env", "TWOAFC_TEST_KEY"]
    rc = main(["run", "twoafc-chat", OCCUPATIONS, "--model", "m", *hosted, *out])
    assert rc == EXIT_USAGE and MSG_CONFIRM_NEEDED.format(requests=960, limit=CONFIRM_ABOVE_REQUESTS) in \
        capsys.readouterr().err
    assert not built
    rc = main(["run", "twoafc-chat", OCCUPATIONS, "--model", "m", *hosted, "--yes", "--bootstrap", "200", *out])
    assert rc == EXIT_OK
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert doc["options"]["api_key"] == "***" and "sk-secret-value" not in json.dumps(doc)
    rc = main(["run", "twoafc-chat", OCCUPATIONS, "--model", "m", "--female-cue", "3", *out])
    assert rc == EXIT_USAGE
    rc = main(["run", "twoafc-chat", SPEC_A, "--model", "m", *out])
    assert rc != EXIT_OK and MSG_MEASURE_NEEDS_TWOAFC_SPEC.format(measure="twoafc-chat", name=SPEC_A) in \
        capsys.readouterr().err


def test_an_audit_cell_runs_it(tmp_path, spec_file, built) -> None:
    grid = {"models": [{"name": "planted", "kind": "lm", "id": "org/planted"},
                       {"name": "order", "kind": "lm", "id": "org/order"}],
            "specs": [{"spec": str(spec_file)}], "methods": ["twoafc-chat"], "seeds": [5],
            "options": {"n_resamples": 200, "samples": 2, "temperature": 0.5}}
    out = tmp_path / "out"
    summary = run_audit(parse_grid(grid, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (2, 2, 0)
    table = read_table(out).set_index("model")
    planted, order = table.loc["planted"], table.loc["order"]
    assert planted.status == "done" and planted.score > 0.5 and planted.ci_low <= planted.score <= planted.ci_high
    assert planted.n == 288 and planted.statistic.startswith("Pearson r")
    assert order.status == "done" and pd.isna(order.score)  # empty: not defined
    assert "not defined" in order.note and "position bias 100.0%" in order.note
    html = build_report(out)  # the report compares the two cells by the measure's own compare
    assert "2 models on the same 12 targets" in html and "Measure: P(cue 1 | target)" in html
    # a model of kind lm runs it only when listed
    grid.pop("methods")
    grid.pop("options")
    plan = make_plan(parse_grid(grid, base=tmp_path), tmp_path / "out2")
    assert not plan.cells and plan.skipped[0]["reason"] == MSG_SKIP_TWOAFC_SPEC.format(spec="small occupations")


def test_run_twoafc_with_model_kind_chat_is_twoafc_chat(tmp_path, spec_file, built, capsys) -> None:
    argv = ["run", "2afc", str(spec_file), "--model", "chat-x", "--model-kind", "chat", "--seed", "5"]
    assert model_kind_argv(argv) == ["run", "twoafc-chat", str(spec_file), "--model", "chat-x", "--seed", "5"]
    assert model_kind_argv(["run", "twoafc", "S", "--model-kind=embedding"]) == ["run", "twoafc", "S"]
    assert model_kind_argv(["run", "S", "--kind", "lm"]) == ["run", "S", "--kind", "lm"]
    rc = main([*argv, "--bootstrap", "200", "--out", str(tmp_path / "r.json")])
    assert rc == EXIT_OK, capsys.readouterr().err
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["test"] == "twoafc-chat"
    rc = main(["run", "twoafc", str(spec_file), "--model-kind", "chatt", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and MSG_UNKNOWN_MODEL_KIND.format(
        value="chatt", hint=" Did you mean 'chat'?", choices="embedding, chat, classifier") in capsys.readouterr().err
