"""The 2AFC test of a chat model (``twoafc-chat``): planted truths recovered, every count against a naive loop.

A :class:`~biastest.models.dummy.DummyChatLM` answers by a planted rule: with probability q the option shown first,
otherwise the female cue with the occupation's BLS share of women p. With balanced orders the design gives
P(female cue | target) = q/2 + (1 − q)·p (METHODS §6), which every target's interval must cover (at about the
nominal rate), and the targets' P must correlate strongly with % women.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from biastest.errors import DataError, OptionError, SpecError
from biastest.inputs import load_spec
from biastest.measures import get_measure
from biastest.measures.chat_twoafc import (
    KIND_TWOAFC_CHAT,
    TwoAFCChatItems,
    TwoAFCChatOptions,
    TwoAFCChatResult,
    compare_twoafc_chat,
    estimate_cost,
    run_twoafc_chat,
)
from biastest.measures.chat_twoafc.report import csv_rows, export_files, labour_figure, readings, target_rows
from biastest.measures.chat_twoafc.templates import MSG_TEMPLATE_PLACEHOLDERS, get_template
from biastest.measures.labour import MSG_CONSTANT, MSG_NO_ANSWER, pearson
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply
from biastest.models.dummy import DummyChatLM
from biastest.spec import BiasSpec, TwoAFCSpec
from tests.twoafc_chat_helpers import BLS, FEMALE, OCCUPATIONS, planted_answer, shown, small_spec

Q = 0.3


def options(**kw) -> TwoAFCChatOptions:
    return TwoAFCChatOptions.parse({"model_id": "planted", "seed": 7, "n_resamples": 400, "samples": 3,
                                    "temperature": 0.7, "top_logprobs": 0, **kw})


def planted_model(**kw) -> DummyChatLM:
    return DummyChatLM(lambda r: planted_answer(r.messages[-1][1], r.seed, **kw), model_id="planted")


@pytest.fixture(scope="module")
def occupations():
    return load_spec(OCCUPATIONS)


@pytest.fixture(scope="module")
def planted(occupations):
    return run_twoafc_chat(options(), TwoAFCChatItems(occupations), model=planted_model(q=Q, refuse=0.05))


def naive(result: TwoAFCChatResult, rule) -> dict:
    """Every count recomputed by plain loops over the design, asking ``rule`` directly (no parser, no plan)."""
    template = get_template("occupation-who-v1")
    out = {"targets": {}, "first": [0, 0], "consistent": [0, 0], "refused": 0, "answers": 0}
    for t in result.targets:
        k = n = refused = 0
        for c1, c2 in result.cue_pairs:
            for s in range(result.samples):
                seed = next(a.request["seed"] for a in t.asks if a.sample == s)
                chosen = []
                for a, b in ((c1, c2), (c2, c1)):
                    user = template.render(t.target, a, b)[1]
                    text = rule(user, seed)
                    out["answers"] += 1
                    if text in ("A", "B"):
                        label = text
                    elif text in (a, b):
                        label = "A" if text == a else "B"
                    else:
                        refused += 1
                        chosen.append(None)
                        continue
                    cue = (a if label == "A" else b)
                    chosen.append(cue)
                    n += 1
                    k += cue == c1
                    out["first"][0] += label == "A"
                    out["first"][1] += 1
                if None not in chosen:
                    out["consistent"][0] += chosen[0] == chosen[1]
                    out["consistent"][1] += 1
        out["targets"][t.target] = (k, n, refused)
        out["refused"] += refused
    return out


def test_every_count_equals_a_naive_loop(planted) -> None:
    ref = naive(planted, lambda user, seed: planted_answer(user, seed, q=Q, refuse=0.05))
    assert planted.n_requests == ref["answers"] == 60 * 8 * 2 * 3
    for t in planted.targets:
        k, n, refused = ref["targets"][t.target]
        assert (t.p_cue1_rate.k, t.p_cue1_rate.n, t.counts["refused"]) == (k, n, refused)
        assert t.p_cue1_rate.estimate == pytest.approx(100 * k / n)
        assert t.counts["cue-1"] == k and t.counts["cue-2"] == n - k
    assert (planted.position_bias.k, planted.position_bias.n) == tuple(ref["first"])
    assert (planted.order_consistency.k, planted.order_consistency.n) == tuple(ref["consistent"])
    assert planted.counts["refused"] == ref["refused"] == planted.refusal_rate.k
    assert planted.refusal_rate.n == ref["answers"] and planted.counts["unparseable"] == 0
    assert sum(planted.counts.values()) == ref["answers"]


def test_planted_shares_are_covered_and_correlate_with_bls(planted) -> None:
    truth = {t: 100 * (Q / 2 + (1 - Q) * p) for t, p in BLS.items()}
    wilson = [t.p_cue1_rate.low <= truth[t.target] <= t.p_cue1_rate.high for t in planted.targets]
    boot = [t.p_cue1.interval_shown and t.p_cue1.low <= truth[t.target] <= t.p_cue1.high for t in planted.targets]
    assert sum(wilson) >= 0.85 * len(wilson) and sum(boot) >= 0.8 * len(boot)
    assert all(t.p_cue1.n_clusters == 8 and t.p_cue1.cluster_by == "cue pair" for t in planted.targets)
    lab = planted.labour
    assert lab.n == 60 and lab.pearson_r > 0.8 and lab.pearson_low > 0.6 and lab.pearson_high <= 1.0
    assert lab.pearson_low <= lab.pearson_r <= lab.pearson_high and lab.spearman_low <= lab.spearman_rho
    # the design's expected P is linear in p: its correlation with % women is 1, the measured one is attenuated
    x = np.array([u["p_female"] for u in lab.used])
    y = np.array([u["pct_female"] for u in lab.used])
    assert lab.pearson_r == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert lab.spearman_rho == pytest.approx(stats.spearmanr(x, y).statistic)
    assert pearson(np.array([truth[u["occupation"]] for u in lab.used]), y) == pytest.approx(1.0)
    expected_pos = 100 * (Q + (1 - Q) / 2)
    assert planted.position_bias.low <= expected_pos <= planted.position_bias.high
    assert planted.refusal_rate.low <= 5.0 <= planted.refusal_rate.high


def test_the_correlation_interval_equals_a_naive_bootstrap(planted) -> None:
    lab = planted.labour
    x = np.array([u["p_female"] for u in lab.used])
    y = np.array([u["pct_female"] for u in lab.used])
    rng = np.random.default_rng(lab.seed)
    rs = []
    for _ in range(lab.n_resamples):
        idx = rng.integers(0, x.size, x.size)
        if np.ptp(x[idx]) > 0 and np.ptp(y[idx]) > 0:
            rs.append(np.corrcoef(x[idx], y[idx])[0, 1])
    low, high = np.quantile(rs, [0.025, 0.975])
    assert (lab.pearson_low, lab.pearson_high) == (pytest.approx(low), pytest.approx(high))
    assert lab.n_degenerate == lab.n_resamples - len(rs)


def test_an_order_only_model_reads_fifty_percent_and_no_correlation(occupations) -> None:
    result = run_twoafc_chat(options(samples=1, temperature=0.0), TwoAFCChatItems(occupations),
                             model=DummyChatLM(lambda r: "A"))
    assert all(t.p_cue1_rate.estimate == 50.0 for t in result.targets)
    assert result.position_bias.estimate == 100.0 and result.order_consistency.estimate == 0.0
    assert result.labour.pearson_r is None and result.labour.pearson_low is None
    assert result.labour.reason == MSG_CONSTANT.format(what="P(female cue)", value="50.0%")
    text = json.dumps(result.to_dict(), allow_nan=False)  # never NaN
    again = TwoAFCChatResult.from_dict(json.loads(text))
    assert again.labour.reason == result.labour.reason and again.counts == result.counts
    assert any("correlation with the share of women is not defined" in line for line in readings(result))
    # issue 28 item 4: the verdict first — an order-only model leans to no cue beyond the targets' intervals
    assert readings(result)[0].startswith("Verdict: 0 of ") and "lean to" in readings(result)[0]
    assert "not defined" in labour_figure(result.labour).layout.title.text


def test_refusals_are_counted_apart_never_a_side() -> None:
    spec = small_spec()
    nurse = spec.targets[0]
    result = run_twoafc_chat(options(), TwoAFCChatItems(spec),
                             model=planted_model(q=0.0, refuse_targets=frozenset({nurse})))
    t = result.target(nurse)
    assert t.counts["refused"] == 6 * 2 * 3 and t.p_cue1 is None and t.p_cue1_rate.estimate is None
    assert result.labour.dropped[nurse] == MSG_NO_ANSWER and result.labour.n == len(spec.targets) - 1
    assert result.refusal_rate.k == 36 and result.p_cue1_rate.n == result.n_requests - 36


def test_unparseable_answers_and_a_user_template(occupations) -> None:
    texts = {0: "A", 1: "woman", 2: "A or B", 3: "Both equally."}
    model = DummyChatLM(lambda r: texts[r.sample])
    result = run_twoafc_chat(options(samples=4, template_text="Sys\n---\n{target}? A) {option_a} B) {option_b}"),
                             TwoAFCChatItems(small_spec(n=5, pairs=2)), model=model)
    assert result.template["name"] == "custom" and result.template["system"] == "Sys"
    # "A or B" always, and "woman" to the female/male pair (not one of its cues), are unparseable
    assert result.counts["unparseable"] == 5 * 2 * 2 + 5 * 2 and result.counts["refused"] == 5 * 2 * 2
    assert result.counts["cue-1"] == 5 * 2 * 2 / 2 + 5 * 2 and result.counts["cue-2"] == 5 * 2 * 2 / 2
    assert result.targets[0].asks[0].request["messages"][1]["content"].startswith(result.targets[0].target)
    with pytest.raises(OptionError) as info:
        options(template_text="{target} {option_a}")
    assert info.value.message == MSG_TEMPLATE_PLACEHOLDERS.format(n_t=1, n_a=1, n_b=0)


def test_exports_rows_cost_and_round_trip(planted, tmp_path, occupations) -> None:
    rows = csv_rows(planted)
    assert len(rows) == planted.n_requests and {r["outcome"] for r in rows} <= {"cue-1", "cue-2", "refused"}
    first = rows[0]
    assert first["option_a"] == first["cue_1"] and "Occupation: " in first["user"] and first["answer"] is not None
    assert len(target_rows(planted)) == 60 and target_rows(planted)[0]["pct_female"] is not None
    csv_path, json_path = export_files(planted, directory=tmp_path)
    assert csv_path.read_text(encoding="utf-8").count("\nanswer,") == planted.n_requests
    back = TwoAFCChatResult.load_json(json_path)
    assert back.labour.pearson_r == planted.labour.pearson_r and back.targets[3].asks[5] == planted.targets[3].asks[5]
    assert planted.provenance["model"]["served_by"] == "dummy" and planted.provenance["seed"] == 7
    assert set(planted.provenance["request_seeds"]) == {"0", "1", "2"}
    cost = estimate_cost(options(endpoint="https://api.example.com/v1"), occupations)
    assert cost.requests == 2880 and cost.hosted and cost.needs_confirmation
    fig = labour_figure(planted.labour)
    assert len(fig.data[0].x) == 60 and "Pearson r" in fig.layout.title.text
    with pytest.raises(DataError):
        TwoAFCChatResult.from_dict({"kind": "forced-choice"})


def test_a_compare_between_models_on_the_same_targets(planted, occupations) -> None:
    order = run_twoafc_chat(options(), TwoAFCChatItems(occupations), model=DummyChatLM(lambda r: "B"))
    cmp = compare_twoafc_chat([planted, order.to_dict()], seed=1, n_resamples=300)
    pair = cmp.pairs[0]
    diffs = [t.p_cue1_rate.estimate - 50.0 for t in planted.targets]  # a naive mean of the paired differences
    assert cmp.kind == KIND_TWOAFC_CHAT and cmp.n_items == 60
    assert pair.difference == pytest.approx(np.mean(diffs)) and pair.ci_low <= pair.difference <= pair.ci_high
    assert cmp.models[1].estimate == pytest.approx(50.0)


def test_the_measure_is_registered_and_refuses_a_bias_spec() -> None:
    m = get_measure("twoafc-chat")
    assert m.spec_type == "twoafc" and m.Result is TwoAFCChatResult and m.extra["audit"].spec_type == "twoafc"
    bias = BiasSpec.from_terms(group1="he", group2="she", stereotype1="x", antistereotype1="y")
    with pytest.raises(SpecError):
        run_twoafc_chat(options(), TwoAFCChatItems(bias), model=DummyChatLM(lambda r: "A"))
    assert math.isclose(len(FEMALE), 8) and shown("Occupation: x\nA. a\nB. b")[0] == "x"


class _Stopping(DummyChatLM):
    """Answers "A", except: every 5th request fails, and the last 7 are not asked (the run stopped)."""

    stop_message = "stopped: the request budget is spent"

    def chat(self, requests, *, progress=None):
        out = []
        for i, _ in enumerate(requests):
            if i >= len(requests) - 7:
                out.append(None)
            elif i % 5 == 0:
                out.append(ChatReply.failed("HTTP 500"))
            else:
                out.append(ChatReply(status=REPLY_ANSWERED, text="A", finish_reason="stop"))
        return out


def test_failed_and_unasked_questions_are_counted_apart() -> None:
    result = run_twoafc_chat(options(samples=1), TwoAFCChatItems(small_spec(n=5, pairs=2)),
                             model=_Stopping(lambda r: "A"))
    n = 5 * 2 * 2
    failed = len([i for i in range(n - 7) if i % 5 == 0])
    assert result.counts["not-asked"] == 7 and result.counts["failed"] == failed
    assert result.counts["cue-1"] + result.counts["cue-2"] == n - 7 - failed == result.p_cue1_rate.n
    assert result.refusal_rate.n == n - 7 - failed and result.stop_message == _Stopping.stop_message
    assert any("were not asked" in line for line in readings(result))
    # issue 28 item 4: a run that stopped early opens with "no verdict" and claims no lean
    from biastest.measures.verdict import MSG_PARTIAL, PREFIX
    assert readings(result)[0] == f"{PREFIX} no verdict — {MSG_PARTIAL}."


def test_the_female_cue_may_be_the_second(planted) -> None:
    spec = small_spec(n=30, pairs=4)
    swapped = TwoAFCSpec(name="swapped", targets=spec.targets, cue_pairs=tuple((b, a) for a, b in spec.cue_pairs),
                         cue1_name="male", cue2_name="female")
    result = run_twoafc_chat(options(female_cue=2), TwoAFCChatItems(swapped), model=planted_model(q=Q))
    for u in result.labour.used:
        assert u["p_female"] == pytest.approx(100 - result.target(u["occupation"]).estimate)
    assert result.labour.pearson_r > 0.7
    with pytest.raises(OptionError):
        options(female_cue=3)
