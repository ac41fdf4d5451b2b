"""The psychometric test of a chat model (``psychometric-chat``): planted curves recovered, counted by hand.

The planted subject is :class:`tests.psychometric_helpers.PlantedPsychometricResponder` (a DummyChatLM rule, or
behind the loopback :class:`tests.chat_stub.ChatStub`): per context a logistic Ψ(α) = expit(rate·(α − PSE)), a
habit of naming the first-shown cue with probability q, and refusals. Checks:

* the counts per context and stimulus equal a naive loop over the raw replies; refusals are counted apart;
* the fitted PSE and JND of each context and the PSE shift contain the planted values in their intervals —
  one run, and coverage over 20 seeded runs (a small bootstrap; at least 16 of 20, which a 95 % interval fails
  with probability 0.016 — the observed counts were 17 to 20 of 20);
* a planted position habit does not move the PSE once orders are balanced (q fitted, or fixed at the measured
  position share);
* unidentifiable data keep their status and message, never a number or NaN;
* end to end through the endpoint backend with faults, and the command line.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biastest import public
from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.continuum import Continuum, Stimulus, name_continuum
from biastest.errors import BiastestError
from biastest.measures.psychometric_chat import (
    PsychometricChatOptions,
    PsychometricChatResult,
    PsychometricItems,
    read_cue,
    run_psychometric_chat,
)
from biastest.measures.psychometric_chat.report import csv_rows, curves_figure, export_files, summary_records
from biastest.measures.psychometric_chat.templates import (
    MSG_CONTEXT_DUPLICATE,
    MSG_CONTEXT_SLOT,
    MSG_CUES_BAD,
    MSG_TEMPLATE_FIELDS,
)
from biastest.models import factory
from biastest.models.chat_records import ChatRequest
from biastest.models.dummy import DummyChatLM
from biastest.stats.psychometric.guess_lapse import MSG_GL_NO_VARIATION
from tests.chat_stub import Action, ChatStub
from tests.psychometric_helpers import REFUSAL, PlantedPsychometricResponder

NEUTRAL, NURSE, ENGINEER = "{stimulus} is a person.", "{stimulus} is a nurse.", "{stimulus} is an engineer."
PLANTED = {NEUTRAL: (0.5, 12.0), NURSE: (0.35, 12.0), ENGINEER: (0.65, 8.0)}
CUES = ("man", "woman")


def jnd(rate: float) -> float:
    """The JND of a logistic of this rate: π/(√3·rate)."""
    return math.pi / (math.sqrt(3.0) * rate)


def responder(contexts, *, q=0.2, seed=0, refusal_rate=0.05, continuum=None):
    c = continuum or name_continuum()
    return PlantedPsychometricResponder({s.text: s.alpha for s in c.stimuli}, {k: PLANTED[k] for k in contexts},
                                        cues=CUES, q=q, seed=seed, refusal_rate=refusal_rate)


def options(contexts, **kw):
    return PsychometricChatOptions.parse({"model_id": "planted", "seed": 1, "samples": 2, "temperature": 1.0,
                                          "n_bootstrap": 60, "contexts": contexts, **kw})


def run_planted(contexts=(NEUTRAL, NURSE, ENGINEER), *, q=0.2, seed=0, refusal_rate=0.05, **kw):
    rule = responder(contexts, q=q, seed=seed, refusal_rate=refusal_rate)
    return run_psychometric_chat(options(contexts, **kw), PsychometricItems(name_continuum()),
                                 model=DummyChatLM(rule))


def inside(ci, value) -> bool:
    return ci is not None and ci[0] <= value <= ci[1]


# --------------------------------------------------------------------------- reading answers and options
@pytest.mark.parametrize(("text", "outcome", "position"), [
    ("woman", "choice", "second"), ("Woman.", "choice", "second"), ("**man**", "choice", "first"),
    ("A woman.", "choice", "second"), ('"a man"', "choice", "first"), ("Answer: woman", "choice", "second"),
    ("A", "unparseable", None), ("(B)", "unparseable", None), ("man or woman", "unparseable", None),
    ("She is probably a woman.", "unparseable", None), ("", "unparseable", None),
    (REFUSAL, "refused", None), ("Neither.", "refused", None), ("It depends on the person.", "refused", None),
])
def test_an_answer_counts_as_a_cue_only_when_it_is_one(text, outcome, position) -> None:
    r = read_cue(text, "man", "woman")
    assert (r.outcome, r.position) == (outcome, position)


@pytest.mark.parametrize(("kw", "message"), [
    ({"contexts": ["no slot here"]}, MSG_CONTEXT_SLOT.split("{number}")[0]),
    ({"contexts": [NURSE, " {stimulus}  is a nurse. "]}, MSG_CONTEXT_DUPLICATE.format(first=1, second=2)),
    ({"cues": "man/Man"}, MSG_CUES_BAD.split("{limit}")[0]),
    ({"cues": "man"}, MSG_CUES_BAD.split("{limit}")[0]),
    ({"template_text": "Is {stimulus} a {first}?"}, MSG_TEMPLATE_FIELDS.split("{{")[0]),
    ({"reference": 4}, "The reference context must be a number from 1 to 3"),
    ({"bootstrap": "jackknife"}, "The option bootstrap must be one of: parametric, nonparametric, levels"),
])
def test_bad_options_are_refused_with_their_message(kw, message) -> None:
    with pytest.raises(BiastestError) as err:
        PsychometricChatOptions.parse({"model_id": "m", "seed": 1, **kw})
    assert message in str(err.value)


# --------------------------------------------------------------------------- one planted run
@pytest.fixture(scope="module")
def planted_run() -> PsychometricChatResult:
    return run_planted()


def test_counts_equal_a_naive_loop_over_the_raw_replies(planted_run) -> None:
    r = planted_run
    for s in r.summaries:
        for i, level in enumerate(s.levels):
            k = n = refused = first = 0
            for a in r.asks:
                if a.context_index != s.index or a.stimulus_index != i:
                    continue
                text, user = a.reply["text"], a.request["messages"][-1]["content"]
                shown_first = user.split("Question: is ", 1)[1].split(" a ", 1)[1].split(" or a ", 1)[0]
                if text in CUES:
                    n, k, first = n + 1, k + (text == "woman"), first + (text == shown_first)
                refused += text == REFUSAL
            assert (level.k, level.n, level.refused, level.unparseable) == (k, n, refused, 0)
        rows = [a for a in r.asks if a.context_index == s.index]
        assert len(rows) == len(r.continuum["stimuli"]) * 2 * 2  # stimuli × orders × samples
        assert s.counts["refused"] == sum(lv.refused for lv in s.levels) > 0
        assert sum(lv.n for lv in s.levels) == s.counts["cue-1"] + s.counts["cue-2"]  # refusals in neither
        naive_first = sum(a.position == "first" for a in rows if a.outcome in ("cue-1", "cue-2"))
        assert s.position_bias.k == naive_first


def test_one_planted_run_finds_each_context_near_its_planted_curve(planted_run) -> None:
    """One run: estimates within what the binomial spread allows (the intervals' coverage is tested below)."""
    for s in planted_run.summaries:
        pse, rate = PLANTED[s.context]
        assert s.fit["status"] == "ok", s.fit["message"]
        assert abs(s.fit["pse"] - pse) < 0.1 and s.fit["pse_ci"][0] < s.fit["pse"] < s.fit["pse_ci"][1]
        assert 0.5 < s.fit["jnd"] / jnd(rate) < 2 and s.fit["jnd_ci"][0] < s.fit["jnd"] < s.fit["jnd_ci"][1]
        assert inside(s.fit["guess_lapse_ci"], 0.2)  # q and the slope trade off on 4 answers per name
        assert inside((s.refusal_rate.low / 100, s.refusal_rate.high / 100), 0.05)
        assert inside((s.position_bias.low / 100, s.position_bias.high / 100), 0.2 + 0.8 / 2)
        if s.reference:
            assert s.shift is None
        else:
            assert abs(s.shift["shift"] - (pse - PLANTED[NEUTRAL][0])) < 0.12 and s.shift["paired"]
            assert s.shift["shift_ci"][0] < s.shift["shift"] < s.shift["shift_ci"][1]
            assert "from the reference context" in s.reading
        assert f"α = {s.fit['pse']:.2f}" in s.reading and "a name borne by women" in s.reading
    # issue 28 item 4: the readings open with the verdict — a count of the contexts whose shift interval leaves out 0,
    # equal to a naive count of the result's own intervals
    from biastest.measures.psychometric_chat.report import readings

    shifts = [s.shift["shift_ci"] for s in planted_run.summaries if not s.reference]
    n_moved = sum(1 for lo, hi in shifts if lo > 0 or hi < 0)
    first = readings(planted_run)[0]
    assert first.startswith("Verdict: ") and f"; {len(shifts) - n_moved} cannot be told apart" in first, first


def test_the_result_round_trips_and_exports_the_exact_requests_and_replies(planted_run, tmp_path) -> None:
    r = planted_run
    data = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert PsychometricChatResult.from_dict(data).summaries == r.summaries
    back = PsychometricChatResult.load_json(r.save_json(tmp_path / "r.json"))
    assert back.asks == r.asks
    rows = csv_rows(r)
    assert len(rows) == len(r.asks) and rows[0]["question"] == r.asks[0].request["messages"][-1]["content"]
    assert rows[0]["answer"] == r.asks[0].reply["text"]
    assert [row["context"] for row in summary_records(r)] == list(r.contexts)
    csv_path, json_path = export_files(r, directory=tmp_path)
    assert csv_path.read_text(encoding="utf-8-sig").startswith("row_type") and json_path.is_file()
    fig = curves_figure(r)
    assert len(fig.data) == 3 * 3  # per context: answers, fit, PSE
    assert "David" in json.dumps([list(row) for row in fig.data[0].customdata])
    assert r.provenance["template"]["user"] == r.template["user"]


# --------------------------------------------------------------------------- coverage, position habit
def test_pse_jnd_and_shift_intervals_cover_the_planted_values_over_seeded_runs() -> None:
    hits = {"pse-nurse": 0, "pse-engineer": 0, "jnd-nurse": 0, "jnd-engineer": 0, "shift": 0}
    for run in range(20):
        r = run_psychometric_chat(options((NURSE, ENGINEER), seed=run), PsychometricItems(name_continuum()),
                                  model=DummyChatLM(responder((NURSE, ENGINEER), seed=100 + run)))
        for s, name in zip(r.summaries, ("nurse", "engineer"), strict=True):
            pse, rate = PLANTED[s.context]
            hits[f"pse-{name}"] += inside(s.fit.get("pse_ci"), pse)
            hits[f"jnd-{name}"] += inside(s.fit.get("jnd_ci"), jnd(rate))
        hits["shift"] += inside(r.summaries[1].shift["shift_ci"], 0.3)
    assert min(hits.values()) >= 16, hits


@pytest.mark.parametrize("mode", ["fit", "position"])
def test_a_position_habit_does_not_move_the_pse_once_orders_are_balanced(mode) -> None:
    kw = {"refusal_rate": 0.0, "guess_lapse": mode, "samples": 10, "n_bootstrap": 0}  # point fits, 20 answers/name
    plain, habit = run_planted((NURSE, ENGINEER), q=0.0, **kw), run_planted((NURSE, ENGINEER), q=0.4, **kw)
    for a, b in zip(plain.summaries, habit.summaries, strict=True):
        pse = PLANTED[a.context][0]
        # the content answers of the habit run are a subset of the plain run's draws (same seeds): the PSE stays
        assert abs(a.fit["pse"] - pse) < 0.06 and abs(b.fit["pse"] - pse) < 0.06, (a.fit["pse"], b.fit["pse"])
        assert abs(b.fit["pse"] - a.fit["pse"]) < 0.05
        assert 60 < b.position_bias.estimate < 80  # q + (1 − q)/2 = 70 %
    if mode == "position":
        assert habit.guess_lapse_fixed == pytest.approx(
            abs(2 * np.mean([a.position == "first" for a in habit.asks]) - 1))
        assert all(s.fit["guess_lapse_fixed"] for s in habit.summaries)
    else:
        assert all(abs(s.fit["guess_lapse"] - 0.4) < 0.1 for s in habit.summaries)


# --------------------------------------------------------------------------- what cannot be fitted
def test_unidentifiable_contexts_report_their_status_and_message_never_a_number() -> None:
    def rule(request: ChatRequest) -> str:
        user = request.messages[-1][1]
        return REFUSAL if "engineer" in user else "woman"

    o = options((NURSE, ENGINEER), n_bootstrap=20)
    r = run_psychometric_chat(o, PsychometricItems(name_continuum()), model=DummyChatLM(rule))
    nurse, engineer = r.summaries
    assert nurse.fit["status"] == "no_variation" and nurse.fit["pse"] is None
    assert nurse.fit["message"] == MSG_GL_NO_VARIATION.format(side=2)
    assert nurse.fit["message"] in nurse.reading
    assert engineer.fit["status"] == "too_few_levels" and engineer.fit["pse"] is None
    assert engineer.counts["refused"] == len(engineer.levels) * 4 and engineer.refusal_rate.estimate == 100.0
    assert engineer.shift["shift"] is None and engineer.shift["message"]
    text = json.dumps(r.to_dict(), allow_nan=False)  # no NaN anywhere
    assert "NaN" not in text and len(curves_figure(r).data) == 2  # answers only, no invented curve


# --------------------------------------------------------------------------- through the endpoint, and the CLI
SMALL = Continuum(tuple(Stimulus(f"Name{i:02d}", round(i / 14, 4)) for i in range(15)), "a test continuum")


@pytest.fixture
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


def test_end_to_end_through_the_endpoint_with_faults_nothing_lost_and_a_rerun_cached(private_mode,
                                                                                        tmp_path) -> None:
    planted = responder((NURSE,), q=0.2, refusal_rate=0.1, continuum=SMALL)

    def rule(messages, seed) -> str:
        return planted(ChatRequest(tuple((m["role"], m["content"]) for m in messages), seed=seed))

    with ChatStub(rule, served_name="stub-chat") as stub:
        stub.script(Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500),
                    Action("garbage"), Action("content_filter"))
        o = options((NURSE,), model_id="stub-chat", endpoint=stub.base_url, concurrency=2, samples=4,
                    n_bootstrap=40)
        first = run_psychometric_chat(o, PsychometricItems(SMALL), cache_dir=tmp_path / "cache")
        asked = stub.count()
        again = run_psychometric_chat(o, PsychometricItems(SMALL), cache_dir=tmp_path / "cache")
        assert stub.count() == asked  # the rerun asked nothing
    s = first.summaries[0]
    assert sum(s.counts.values()) == 15 * 2 * 4 and s.counts["not-asked"] == 0
    filtered = [a for a in first.asks if a.outcome == "unparseable"]  # the content filter's empty answer
    assert s.counts["failed"] == 0 and len(filtered) == 1 and filtered[0].rule == "empty"
    assert filtered[0].reply["finish_reason"] == "content_filter"
    assert s.counts["refused"] > 0 and s.fit["status"] in ("ok", "step", "separated")
    assert first.served_model == "stub-chat" and again.summaries[0].counts == s.counts
    assert all(a.reply is not None for a in first.asks)


@pytest.fixture
def built(monkeypatch):
    """``factory.chat_model`` builds the planted subject as a DummyChatLM."""
    def chat_model(ref, *, api_key=None, cache_dir=None, seed=None, cancel=None, **more):
        return DummyChatLM(responder((NURSE, ENGINEER), continuum=SMALL), model_id=ref.model_id)

    monkeypatch.setattr(factory, "chat_model", chat_model, raising=False)


def _continuum_csv(tmp_path):
    path = tmp_path / "continuum.csv"
    path.write_text("stimulus,alpha\n" + "".join(f"{s.text},{s.alpha}\n" for s in SMALL.stimuli), encoding="utf-8")
    return path


def test_the_command_line_runs_it_and_writes_the_result(built, tmp_path, capsys) -> None:
    contexts = tmp_path / "contexts.txt"
    contexts.write_text(f"# one per line\n{ENGINEER}\n", encoding="utf-8")
    out, table = tmp_path / "r.json", tmp_path / "r.csv"
    code = main(["run", "psychometric-chat", "Occupations vs gender (Liang & Acuna 2020)", "--model", "chat-x",
                 "--seed", "5", "--context", NURSE, "--contexts-file", str(contexts), "--cues", "man/woman",
                 "--continuum", str(_continuum_csv(tmp_path)), "--samples", "3", "--temperature", "1",
                 "--bootstrap", "30", "--out", str(out), "--csv", str(table)])
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    assert "This run asks 180 questions (2 contexts × 15 stimuli × 2 orders × 3 sample(s))" in captured.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "psychometric-chat" and doc["options"]["contexts"] == [NURSE, ENGINEER]
    assert doc["result"]["provenance"]["spec"] == "Occupations vs gender (Liang & Acuna 2020)"
    assert len(doc["result"]["asks"]) == 180 and "Psychometric curves:" in captured.out
    assert table.read_text(encoding="utf-8").count("\n") > 180


def test_the_command_line_refuses_a_bad_context_before_asking(built, tmp_path, capsys) -> None:
    code = main(["run", "psychometric-chat", "Occupations vs gender (Liang & Acuna 2020)", "--model", "m",
                 "--context", "no slot", "--out", str(tmp_path / "r.json")])
    assert code == EXIT_USAGE and MSG_CONTEXT_SLOT.split("{number}")[0] in capsys.readouterr().err


def test_an_audit_cell_is_the_first_contexts_pse_shift_and_equals_a_direct_run(built, tmp_path) -> None:
    """One cell per model and seed (listed only); its score is the shift of the first context after the reference,
    equal to a direct call of the runner with the same options and continuum."""
    from biastest.audit import parse_grid, read_table, run_audit
    from biastest.measures.psychometric_chat.audit import STATISTIC

    csv_path = _continuum_csv(tmp_path)
    options = {"contexts": [NURSE, ENGINEER], "continuum": str(csv_path), "samples": 10,
               "temperature": 1.0, "n_bootstrap": 60, "use_cache": False}
    grid = {"models": [{"name": "planted", "kind": "lm", "id": "org/planted"}],
            "specs": ["Occupations vs gender (Liang & Acuna 2020)"], "methods": ["psychometric-chat"], "seeds": [5],
            "options": options}
    out = tmp_path / "out"
    summary = run_audit(parse_grid(grid, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (1, 1, 0)
    row = read_table(out).iloc[0]
    direct = run_psychometric_chat(PsychometricChatOptions.parse({**options, "model_id": "org/planted", "seed": 5}),
                                   PsychometricItems(SMALL))
    shift = direct.summaries[1].shift
    assert row.status == "done" and row.statistic == STATISTIC
    assert row.score == pytest.approx(shift["shift"], abs=1e-12)
    assert (row.ci_low, row.ci_high) == pytest.approx(tuple(shift["shift_ci"]), abs=1e-12)
    assert row.n == len(direct.asks) and ENGINEER in row.note and "(reference)" in row.note and shift["shift"] > 0.1


def test_several_cue_pairs_give_a_pse_per_pair_and_pooled() -> None:
    """Two cue pairs with different planted PSEs in the nurse context (man/woman 0.35, male/female 0.45): each pair's
    own fit recovers its PSE, the pooled fit lies between, and the pooled counts are the sum of the pairs' (naive)."""
    from tests.psychometric_helpers import UNKNOWN_ANSWER

    first = PlantedPsychometricResponder({s.text: s.alpha for s in name_continuum().stimuli},
                                         {NEUTRAL: (0.5, 12.0), NURSE: (0.35, 12.0)}, cues=("man", "woman"),
                                         q=0.2, seed=1)
    second = PlantedPsychometricResponder({s.text: s.alpha for s in name_continuum().stimuli},
                                          {NEUTRAL: (0.5, 12.0), NURSE: (0.45, 12.0)}, cues=("male", "female"),
                                          q=0.2, seed=2)

    def rule(request):
        answer = first(request)
        return second(request) if answer == UNKNOWN_ANSWER else answer

    o = options((NEUTRAL, NURSE), cues="man/woman, male/female", samples=3)
    assert o.cue_pairs() == (("man", "woman"), ("male", "female")) and o.cue_pair() == ("man", "woman")
    r = run_psychometric_chat(o, PsychometricItems(name_continuum()), model=DummyChatLM(rule))
    assert r.cue_pairs == (("man", "woman"), ("male", "female")) and len(r.per_pair) == 2
    assert r.n_requests == 2 * len(name_continuum()) * 2 * 2 * 3
    nurse = [p.summaries[1] for p in r.per_pair]
    print("nurse PSE per pair:", [round(s.fit["pse"], 3) for s in nurse], "pooled", round(r.summaries[1].fit["pse"], 3))
    # each pair's fit is that pair's own curve (its coverage is the single-pair fit's, tested above over many runs)
    assert abs(nurse[0].fit["pse"] - 0.35) < 0.04 and abs(nurse[1].fit["pse"] - 0.45) < 0.04
    assert nurse[0].fit["pse"] < r.summaries[1].fit["pse"] < nurse[1].fit["pse"]
    for c in range(2):
        pooled = r.summaries[c].levels
        for i, lv in enumerate(pooled):
            assert lv.k == sum(p.summaries[c].levels[i].k for p in r.per_pair)
            assert lv.n == sum(p.summaries[c].levels[i].n for p in r.per_pair)
    rows = summary_records(r)
    assert [row["cue_pair"] for row in rows] == ["pooled"] * 2 + ["man/woman"] * 2 + ["male/female"] * 2
    assert {row["cue_pair"] for row in csv_rows(r)} == {"man/woman", "male/female"}
    with pytest.raises(BiastestError):
        options((NEUTRAL,), cues="man/woman, Man/Woman")
