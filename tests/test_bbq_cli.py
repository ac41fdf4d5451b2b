"""``run bbq`` on the command line (and an audit cell) with a planted chat model injected in the backend factory.

``biastest.models.factory.chat_model`` is the backend builder the measure calls; the test replaces it (it may not
exist yet on this branch: ``raising=False``) by one returning a :class:`~biastest.models.dummy.DummyChatLM`.
"""

from __future__ import annotations

import csv
import json

import pytest

from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.cli import run as cli_run
from biastest.cli.run import MSG_CONFIRM_NEEDED, MSG_NO_MODEL, MSG_NOT_CONFIRMED
from biastest.measures import chat_common
from biastest.measures.bbq import BBQOptions, BBQResult
from biastest.measures.bbq.cost import MSG_COST
from biastest.measures.bbq.run import run
from biastest.models.dummy import DummyChatLM
from biastest.models.response_cache import default_cache_dir

BUILT: list = []


@pytest.fixture
def dummy_chat(monkeypatch):
    """Every chat backend the measure builds is a dummy that answers "A" (the refs it was asked for are kept)."""
    BUILT.clear()

    def chat_model(ref, **kw):
        BUILT.append((ref, kw))
        return DummyChatLM(lambda request: "A", model_id=ref.model_id)

    monkeypatch.setattr(chat_common.factory, "chat_model", chat_model, raising=False)
    return BUILT


def test_run_bbq_writes_the_result_and_prints_the_cost_first(tmp_path, shared_data, dummy_chat, capsys) -> None:
    out, table = tmp_path / "bbq.json", tmp_path / "bbq.csv"
    argv = ["run", "bbq", "--model", "tiny-chat", "--bbq-dir", str(shared_data / "bbq"), "--category", "Age",
            "--category", "SES", "--n-items", "30", "--seed", "3", "--bootstrap", "200", "--order", "rotations",
            "--out", str(out), "--csv", str(table)]
    rc = main(argv)
    stdout, stderr = capsys.readouterr()
    assert rc == EXIT_OK, stderr
    assert stderr.startswith("This BBQ run asks 180 questions (60 BBQ questions × 3 order(s) × 1 sample(s)) of "
                             "tiny-chat: about ") and "(estimate: characters/4)" in stderr
    assert stdout.splitlines()[0].startswith("BBQ on tiny-chat: accuracy ambiguous")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "bbq" and doc["kind"] == "chat" and doc["seed"] == 3 and doc["spec"] is None
    assert doc["options"]["categories"] == ["Age", "SES"] and doc["options"]["n_items"] == 30
    result = BBQResult.from_dict(doc["result"])
    direct = run(BBQOptions.parse(model_id="tiny-chat", seed=3, categories=["Age", "SES"], n_items=30,
                                  n_resamples=200, order="rotations", bbq_dir=str(shared_data / "bbq")),
                 model=DummyChatLM(lambda request: "A", model_id="tiny-chat"))
    assert result.overall == direct.overall and result.rows == direct.rows
    assert result.overall.position_shares == [1.0, 0.0, 0.0]
    with table.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["row_type"] == "summary" and sum(r["row_type"] == "request" for r in rows) == 180
    ref, kw = dummy_chat[0]
    assert ref.model_id == "tiny-chat" and ref.endpoint is None and kw["seed"] == 3 and kw["api_key"] is None
    assert kw["cache_dir"] == default_cache_dir()  # the response cache, by default


def test_the_template_file_and_no_cache_flags(tmp_path, shared_data, dummy_chat, capsys) -> None:
    own = tmp_path / "prompt.txt"
    own.write_text("Q: {question}\nC: {context}\nA) {a}\nB) {b}\nC) {c}\nLetter?", encoding="utf-8")
    out = tmp_path / "bbq.json"
    rc = main(["run", "bbq", "--model", "m", "--bbq-dir", str(shared_data / "bbq"), "--category", "Religion",
               "--n-items", "5", "--bootstrap", "100", "--template-file", str(own), "--no-cache", "--out", str(out)])
    assert rc == EXIT_OK, capsys.readouterr().err
    result = BBQResult.from_dict(json.loads(out.read_text(encoding="utf-8"))["result"])
    assert result.template == own.read_text(encoding="utf-8") and result.template_name == "custom"
    assert result.rows[0].request["messages"][0]["content"].startswith("Q: ")
    assert dummy_chat[0][1]["cache_dir"] is None  # --no-cache: use_cache False
    own.write_text("{context} only", encoding="utf-8")
    rc = main(["run", "bbq", "--model", "m", "--bbq-dir", str(shared_data / "bbq"), "--template-file", str(own),
               "--out", str(out)])
    assert rc == EXIT_USAGE and "{question} appears 0 times" in capsys.readouterr().err
    rc = main(["run", "bbq", "--model", "m", "--template-file", str(tmp_path / "none.txt"), "--out", str(out)])
    assert rc == EXIT_USAGE and "cannot be read (FileNotFoundError)" in capsys.readouterr().err


def test_a_hosted_endpoint_with_many_requests_asks_first(tmp_path, shared_data, dummy_chat, capsys,
                                                         monkeypatch) -> None:
    monkeypatch.setenv("BBQ_TEST_KEY", "sk-secret-123")
    base = ["run", "bbq", "--model", "gpt-x", "--endpoint", "https://8.8.8.8/v1", "--api-key-env", "BBQ_TEST_KEY",
            "--bbq-dir", str(shared_data / "bbq"), "--n-items", "100", "--seed", "1", "--bootstrap", "100",
            "--out", str(tmp_path / "x.json")]
    rc = main(base)
    _, stderr = capsys.readouterr()
    assert rc == EXIT_USAGE and stderr.strip().endswith(MSG_CONFIRM_NEEDED.format(requests=1100, limit=200))
    assert "asks 1,100 questions" in stderr and not (tmp_path / "x.json").exists() and not dummy_chat
    # someone at the terminal says no, then yes
    monkeypatch.setattr(cli_run, "interactive", lambda: True)
    monkeypatch.setattr(cli_run, "ask", lambda question: "n")
    assert main(base) == EXIT_USAGE and capsys.readouterr().err.strip().endswith(MSG_NOT_CONFIRMED)
    assert not dummy_chat
    rc = main([*base, "--yes"])
    _, stderr = capsys.readouterr()
    assert rc == EXIT_OK, stderr
    text = (tmp_path / "x.json").read_text(encoding="utf-8")
    assert "sk-secret-123" not in text
    doc = json.loads(text)
    assert doc["options"]["api_key"] == "***" and doc["options"]["endpoint"] == "https://8.8.8.8/v1"
    assert doc["result"]["provenance"]["options"]["endpoint"] == "https://8.8.8.8/v1"
    assert dummy_chat[0][1]["api_key"] == "sk-secret-123" and dummy_chat[0][0].endpoint is not None


def test_bad_bbq_flags_are_refused_before_anything_runs(tmp_path, shared_data, dummy_chat, capsys) -> None:
    rc = main(["run", "bbq", "--model", "m", "--category", "Ages", "--bbq-dir", str(shared_data / "bbq"),
               "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and "Unknown BBQ category 'Ages'. Did you mean 'Age'?" in capsys.readouterr().err
    rc = main(["run", "bbq", "--model", "m", "--bbq-dir", str(tmp_path / "none"), "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and "does not exist" in capsys.readouterr().err
    rc = main(["run", "bbq", "--model", "m", "--pairs", "x.csv", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and "--pairs does not apply to run bbq" in capsys.readouterr().err
    rc = main(["run", "bbq", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and capsys.readouterr().err.strip().endswith(
        MSG_NO_MODEL.format(example="Qwen/Qwen2.5-0.5B-Instruct"))
    assert not dummy_chat
    assert MSG_COST.startswith("This BBQ run asks {requests:,} questions")


# --------------------------------------------------------------------------- an audit cell
def test_a_bbq_cell_runs_in_an_audit_beside_another_measure(tmp_path, shared_data, dummy_chat) -> None:
    from biastest.audit import parse_grid, read_table, run_audit
    from tests.audit_helpers import SPEC_A

    options = {"n_items": 6, "bbq_dir": str(shared_data / "bbq"), "categories": ["Age", "SES"],
               "n_resamples": 100, "n_permutations": 200}
    doc = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"},
                      {"name": "tiny", "kind": "chat", "id": "tiny-chat"}],
           "specs": [SPEC_A], "methods": ["weat", "bbq"], "seeds": [5], "options": options}
    out = tmp_path / "out"
    summary = run_audit(parse_grid(doc, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (2, 2, 0)
    table = read_table(out).set_index("method")
    row = table.loc["bbq"]
    direct = run(BBQOptions.parse(model_id="tiny-chat", seed=5, n_items=6, bbq_dir=str(shared_data / "bbq"),
                                  categories=["Age", "SES"], n_resamples=100),
                 model=DummyChatLM(lambda request: "A", model_id="tiny-chat"))
    assert row.status == "done" and row.kind == "chat" and row.seed == 5 and row.spec == MEASURE_TITLE
    assert row.n == direct.n_requests == 12 and row.n_scored == 12
    s = direct.overall.s_dis
    assert (row.score, row.ci_low, row.ci_high) == (s.value, s.low, s.high) or s.value is None
    assert "accuracy ambiguous" in row.note and table.loc["weat", "status"] == "done"
    cell = json.loads((out / "cells" / f"{row.key}.json").read_text())
    assert BBQResult.from_dict(cell["result"]).overall == direct.overall
    # the data's identity is part of the cell: the key names the BBQ files' hash
    plan = json.loads((out / "plan.json").read_text()) if (out / "plan.json").exists() else None
    if plan is not None:
        bbq_items = [i for i in plan["items"] if i["kind"] == "bbq"]
        assert len(bbq_items) == 1 and len(bbq_items[0]["sha256"]) == 64


def test_two_chat_models_on_bbq_make_an_audit_report(tmp_path, shared_data, dummy_chat) -> None:
    from biastest.audit import parse_grid, run_audit
    from biastest.audit.report import build_report
    from tests.audit_helpers import SPEC_A

    doc = {"models": [{"name": "one", "kind": "chat", "id": "tiny-chat"},
                      {"name": "two", "kind": "chat", "id": "tiny-chat-2"}],
           "specs": [SPEC_A], "seeds": [2],
           "options": {"n_items": 4, "bbq_dir": str(shared_data / "bbq"), "categories": ["Religion"],
                       "n_resamples": 100}}
    summary = run_audit(parse_grid(doc, base=tmp_path), tmp_path / "out", progress=False)
    assert (summary.cells, summary.computed) == (2, 2)
    html = build_report(tmp_path / "out")
    assert "tiny-chat-2" in html or "two" in html


def test_a_bbq_cell_without_its_data_fails_saying_why(tmp_path, dummy_chat) -> None:
    from biastest.audit import parse_grid, read_table, run_audit
    from tests.audit_helpers import SPEC_A

    doc = {"models": [{"name": "tiny", "kind": "chat", "id": "tiny-chat"}], "specs": [SPEC_A],
           "seeds": [1], "options": {"bbq_dir": str(tmp_path / "missing")}}
    summary = run_audit(parse_grid(doc, base=tmp_path), tmp_path / "out", progress=False)
    assert (summary.cells, summary.failed) == (1, 1)
    row = read_table(tmp_path / "out").iloc[0]
    assert row.method == "bbq" and "does not exist" in row.error and not dummy_chat


MEASURE_TITLE = "BBQ: bias in question answering of a chat model (Parrish et al. 2022)"
