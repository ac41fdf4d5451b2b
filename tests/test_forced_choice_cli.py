"""The forced-choice measure from the command line and in an audit, with a planted chat model injected.

The chat backends are another part's work: the tests replace ``biastest.models.factory.chat_model`` (the one
seam :func:`biastest.measures.chat_common.build_chat_model` calls) with a builder of a
:class:`~biastest.models.dummy.DummyChatLM`, and record what it was asked to build.
"""

from __future__ import annotations

import json
import re

import pytest

from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.report import build_report
from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.cli import run as cli_run
from biastest.cli.run import MSG_CONFIRM_NEEDED, MSG_NOT_CONFIRMED, MSG_OPTION_NOT_FOR_RUN
from biastest.measures.forced_choice import ForcedChoiceResult
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.forced_choice.headless import MSG_TEMPLATE_FILE
from biastest.models import factory
from biastest.models.dummy import DummyChatLM
from biastest.models.response_cache import CACHE_FOLDER_NAME
from tests.audit_helpers import SPEC_A, write_crows
from tests.lm_helpers import planted_pairs


@pytest.fixture
def built(monkeypatch):
    """``factory.chat_model`` builds a DummyChatLM; each call's reference and settings are recorded."""
    calls = []

    stereotyped = {p.stereotyped for p in planted_pairs()}

    def content(request) -> str:  # always the stereotyped sentence, quoted
        shown = re.findall(r"^(?:\(A\)|\(B\)|A\.|B\.) (.*)$", request.messages[-1][1], re.M)
        return next((f'"{s}"' for s in shown if s in stereotyped), "?")

    def chat_model(ref, *, api_key=None, cache_dir=None, seed=None, cancel=None, **more):
        calls.append({"ref": ref, "api_key": api_key, "cache_dir": cache_dir, "seed": seed})
        if ref.model_id == "org/chat-content":
            return DummyChatLM(content, model_id=ref.model_id)
        return DummyChatLM(lambda r: "A" if r.sample == 0 else "(B)", model_id=ref.model_id)

    monkeypatch.setattr(factory, "chat_model", chat_model, raising=False)
    return calls


@pytest.fixture
def pairs_file(tmp_path):
    return write_crows(tmp_path / "pairs.csv", planted_pairs()[:12])


def _run(tmp_path, pairs_file, *more):
    return main(["run", "forced-choice", SPEC_A, "--pairs", str(pairs_file), "--model", "chat-x", "--seed", "5",
                 "--bootstrap", "200", "--out", str(tmp_path / "fc.json"), *more])


def test_forced_choice_runs_through_the_command_line(tmp_path, pairs_file, built, capsys) -> None:
    rc = _run(tmp_path, pairs_file, "--samples", "2", "--temperature", "0.5", "--template", "likely-v1",
              "--csv", str(tmp_path / "fc.csv"))
    stdout, stderr = capsys.readouterr()
    assert rc == EXIT_OK, stderr
    doc = json.loads((tmp_path / "fc.json").read_text(encoding="utf-8"))
    assert doc["test"] == "forced-choice" and doc["kind"] == "lm" and doc["seed"] == 5
    result = ForcedChoiceResult.from_dict(doc["result"])
    assert result.n_items == 12 and result.n_requests == 48 and result.template["name"] == "likely-v1"
    assert result.share.estimate == pytest.approx(50.0) and result.position_bias.estimate == pytest.approx(50.0)
    assert result.order_consistency.estimate == 0.0  # sample k always the same label: never the same sentence
    assert doc["options"]["samples"] == 2 and doc["options"]["template"] == "likely-v1"
    assert "endpoint" not in doc["options"] and doc["options"]["use_cache"] is True
    assert built[0]["seed"] == 5 and built[0]["cache_dir"] is not None and built[0]["api_key"] is None
    assert "48 questions" in stderr and "Forced choice: stereotyped-choice share 50.0%" in stdout
    table = (tmp_path / "fc.csv").read_text(encoding="utf-8-sig")
    assert table.startswith("row_type") and table.count("\nanswer,") == 48


def test_the_template_file_and_no_cache_flags(tmp_path, pairs_file, built, capsys) -> None:
    template = tmp_path / "t.txt"
    template.write_text("Be brief.\n---\n1) {option_a}\n2) {option_b}\nAnswer A for 1, B for 2.", encoding="utf-8")
    rc = _run(tmp_path, pairs_file, "--template-file", str(template), "--no-cache")
    assert rc == EXIT_OK, capsys.readouterr().err
    doc = json.loads((tmp_path / "fc.json").read_text(encoding="utf-8"))
    assert doc["result"]["template"]["name"] == "custom" and doc["result"]["template"]["system"] == "Be brief."
    assert doc["options"]["template_text"] == template.read_text(encoding="utf-8")
    assert built[-1]["cache_dir"] is None and doc["options"]["use_cache"] is False
    rc = _run(tmp_path, pairs_file, "--template-file", str(tmp_path / "missing.txt"))
    assert rc == EXIT_USAGE and MSG_TEMPLATE_FILE.format(path=tmp_path / "missing.txt",
                                                          problem="FileNotFoundError") in capsys.readouterr().err
    template.write_text("only {option_a}", encoding="utf-8")
    assert _run(tmp_path, pairs_file, "--template-file", str(template)) != EXIT_OK


def test_a_large_hosted_run_asks_for_confirmation(tmp_path, built, capsys, monkeypatch) -> None:
    many = write_crows(tmp_path / "many.csv", (planted_pairs() * 10)[:CONFIRM_ABOVE_REQUESTS // 2 + 1])
    monkeypatch.setenv("FC_TEST_KEY", "sk-secret-value")
    hosted = ["--endpoint", "https://api.example.com/v1", "--api-key-env", "FC_TEST_KEY"]
    monkeypatch.setattr(cli_run, "interactive", lambda: False)
    rc = _run(tmp_path, many, *hosted)
    err = capsys.readouterr().err
    assert rc == EXIT_USAGE and MSG_CONFIRM_NEEDED.format(requests=2 * (CONFIRM_ABOVE_REQUESTS // 2 + 1),
                                                           limit=CONFIRM_ABOVE_REQUESTS) in err
    assert not built and not (tmp_path / "fc.json").exists()
    monkeypatch.setattr(cli_run, "interactive", lambda: True)
    monkeypatch.setattr(cli_run, "ask", lambda prompt: "n")
    assert _run(tmp_path, many, *hosted) == EXIT_USAGE and MSG_NOT_CONFIRMED in capsys.readouterr().err
    monkeypatch.setattr(cli_run, "ask", lambda prompt: "y")
    assert _run(tmp_path, many, *hosted) == EXIT_OK
    monkeypatch.setattr(cli_run, "interactive", lambda: False)
    assert _run(tmp_path, many, *hosted, "--yes") == EXIT_OK
    doc = json.loads((tmp_path / "fc.json").read_text(encoding="utf-8"))
    assert doc["options"]["api_key"] == "***" and "sk-secret-value" not in json.dumps(doc)
    assert built[-1]["api_key"] == "sk-secret-value"


def test_flags_of_other_measures_are_refused(tmp_path, pairs_file, built, capsys) -> None:
    assert _run(tmp_path, pairs_file, "--method", "causal-sum") == EXIT_USAGE
    assert capsys.readouterr().err.strip().endswith(MSG_OPTION_NOT_FOR_RUN.format(
        option="--method", what="run forced-choice", applies="stereotype"))
    rc = main(["run", "stereotype", SPEC_A, "--pairs", str(pairs_file), "--model", "gpt2", "--template",
               "likely-v1", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and "forced-choice" in capsys.readouterr().err
    assert _run(tmp_path, pairs_file, "--samples", "0") == EXIT_USAGE


def test_forced_choice_runs_in_an_audit(tmp_path, pairs_file, built) -> None:
    grid = {"models": [{"name": "chat", "kind": "lm", "id": "org/chat-x"}],
            "specs": [{"spec": SPEC_A, "data": {"lm": {"from": "files", "files": ["pairs.csv"]}}}],
            "methods": ["forced-choice"], "seeds": [5],
            "options": {"n_resamples": 200, "samples": 2, "template": "likely-v1"}}
    out = tmp_path / "out"
    summary = run_audit(parse_grid(grid, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (1, 1, 0)
    row = read_table(out).set_index("method").loc["forced-choice"]
    assert row.status == "done" and row.score == pytest.approx(50.0) and row.n == 48 and row.n_scored == 48
    assert row.statistic.startswith("stereotyped-choice share") and "position bias 50.0%" in row.note
    assert json.loads(row.options)["template"] == "likely-v1"
    # a resumed audit asks nothing twice: the cache is on by default
    assert built[-1]["cache_dir"].name == CACHE_FOLDER_NAME and built[-1]["seed"] == 5
    cell = json.loads((out / "cells" / f"{row.key}.json").read_text(encoding="utf-8"))
    assert ForcedChoiceResult.from_dict(cell["result"]).samples == 2
    with pytest.raises(Exception) as info:
        parse_grid({**grid, "options": {"template": "nope"}}, base=tmp_path)
    assert "Unknown prompt template 'nope'" in info.value.message


def test_an_audit_report_compares_forced_choice_cells_with_each_other(tmp_path, pairs_file, built) -> None:
    grid = {"models": [{"name": "order", "kind": "lm", "id": "org/chat-x"},
                       {"name": "content", "kind": "lm", "id": "org/chat-content"}],
            "specs": [{"spec": SPEC_A, "data": {"lm": {"from": "files", "files": ["pairs.csv"]}}}],
            "methods": ["forced-choice"], "seeds": [5], "options": {"n_resamples": 200, "samples": 2}}
    out = tmp_path / "out"
    assert run_audit(parse_grid(grid, base=tmp_path), out, progress=False).failed == 0
    table = read_table(out).set_index("model")
    assert table.loc["content", "score"] == 100.0 and table.loc["order", "score"] == pytest.approx(50.0)
    html = build_report(out)
    assert "2 models on the same 12 items" in html and "ties (count as" not in html
    assert "not compared" not in html.lower()
