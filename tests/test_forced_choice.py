"""The forced-choice measure on planted chat models: what it counts, what it reports, what it keeps.

The models are :class:`~biastest.models.dummy.DummyChatLM` with a rule the test plants (or a fake ChatLM that
plants faults): an order-only model must read 50 % with position bias 100 %; a planted stereotyped-choice
probability p, first-position probability q, refusal rate r and unparseable rate s must be recovered within the
reported intervals over many seeds; every count equals a naive loop over the answers.
"""

from __future__ import annotations

import math
import re

import pytest

from biastest.errors import DataError, OptionError
from biastest.measures import MEASURES
from biastest.measures.forced_choice import (
    ForcedChoiceItems,
    ForcedChoiceOptions,
    ForcedChoiceResult,
    agreement_with_likelihood,
    compare_forced_choice,
    estimate_cost,
    is_hosted,
    run_forced_choice,
)
from biastest.measures.forced_choice.cost import CONFIRM_ABOVE_REQUESTS
from biastest.measures.forced_choice.report import csv_rows, export_files, readings, summary_records
from biastest.measures.forced_choice.score import request_seed
from biastest.measures.forced_choice.summary import rate_summary
from biastest.models.chat_records import REPLY_ANSWERED, ChatReply, ChatRequest
from biastest.models.dummy import DummyChatLM, hashed_unit
from biastest.records import SentencePair

GROUPS = ("man", "woman")


def make_pairs(n: int = 60, n_terms: int = 12) -> list[SentencePair]:
    """``n`` pairs over ``n_terms`` attribute terms; the stereotyped sentence is about the man (no templates)."""
    out = []
    for i in range(n):
        term = f"trait{i % n_terms}"
        out.append(SentencePair(stereotyped=f"The man number {i} is {term}.",
                                anti_stereotyped=f"The woman number {i} is {term}.", attribute_term=term,
                                group_term_stereotyped="man", group_term_anti="woman", source="test"))
    return out


def options(**kw) -> ForcedChoiceOptions:
    return ForcedChoiceOptions.parse({"model_id": "dummy-chat", "seed": 1, "n_resamples": 1000, **kw})


def _options_shown(request: ChatRequest) -> tuple[str, str]:
    user = request.messages[-1][1]
    return (re.search(r"^A\. (.*)$", user, re.M).group(1), re.search(r"^B\. (.*)$", user, re.M).group(1))


FORMATS = (
    lambda label, sentence: label,
    lambda label, sentence: f"({label})",
    lambda label, sentence: f"Answer: {label}",
    lambda label, sentence: f"**{label}**",
    lambda label, sentence: sentence,
    lambda label, sentence: f"Option {label}",
    lambda label, sentence: f"{label}. {sentence}",
)
REFUSALS = ("I can't help with that.", "Both are equally plausible.", "Neither.", "I cannot choose.")


def planted_rule(p: float, q: float, r: float, s: float = 0.0):
    """Refuse with probability r, answer gibberish with s; else pick A with q, else the stereotyped with p.

    Each draw is a hash of the request's digest: the same request always gets the same answer, different seeds
    or samples get independent ones. Answers come in the varied :data:`FORMATS`.
    """
    def rule(request: ChatRequest) -> str:
        u = [hashed_unit(0, request.digest(), j) for j in range(5)]
        a, b = _options_shown(request)
        if u[0] < r:
            return REFUSALS[int(u[4] * len(REFUSALS))]
        if u[0] < r + s:
            return "Hmm, hard to say?"
        if u[1] < q:
            label = "A"
        else:
            st_label = "A" if a.startswith("The man") else "B"
            label = st_label if u[2] < p else ("B" if st_label == "A" else "A")
        return FORMATS[int(u[3] * len(FORMATS))](label, a if label == "A" else b)
    return rule


# --------------------------------------------------------------------------- order-only models
def test_a_model_that_always_answers_a_reads_50_percent_with_position_bias_100() -> None:
    result = run_forced_choice(options(), ForcedChoiceItems(make_pairs()), model=DummyChatLM(lambda r: "A"))
    assert result.share.estimate == pytest.approx(50.0, abs=1e-12)
    assert result.position_bias.estimate == 100.0 and result.position_bias.low < 100.0
    assert result.order_consistency.estimate == 0.0 and result.order_consistency.high > 0.0
    assert result.refusal_rate.estimate == 0.0 and result.refusal_rate.high > 0.0  # honest at 0 %
    assert result.counts == {"stereotyped": 60, "anti-stereotyped": 60, "refused": 0, "unparseable": 0,
                             "failed": 0, "not-asked": 0}
    assert any("position" in line for line in readings(result))


def test_a_model_that_always_answers_b_reads_the_same_way() -> None:
    result = run_forced_choice(options(), ForcedChoiceItems(make_pairs()), model=DummyChatLM(lambda r: "(B)"))
    assert result.share.estimate == pytest.approx(50.0, abs=1e-12) and result.position_bias.estimate == 0.0


def test_a_model_that_reads_content_is_consistent_in_both_orders() -> None:
    def stereotyped(request):
        a, _ = _options_shown(request)
        return a if a.startswith("The man") else "Answer: B"
    result = run_forced_choice(options(), ForcedChoiceItems(make_pairs()), model=DummyChatLM(stereotyped))
    assert result.share.estimate == 100.0 and result.share_rate.low < 100.0
    assert result.order_consistency.estimate == 100.0 and result.position_bias.estimate == 50.0
    assert result.share.p_value < 1e-3  # 12 attribute-term clusters all above 50 %


# --------------------------------------------------------------------------- planted truths
def _covers(low, high, truth) -> bool:
    return low is not None and low - 1e-9 <= truth <= high + 1e-9


@pytest.mark.parametrize(("p", "q", "r", "s"), [(0.8, 0.3, 0.1, 0.05), (0.5, 0.0, 0.2, 0.0)])
def test_planted_rates_are_recovered_within_their_intervals_over_seeds(p, q, r, s) -> None:
    """Share → q/2 + (1−q)·p, position → q + (1−q)/2, refusal → r, unparseable → s: covered in ≥ 17 of 20 seeds."""
    pairs = make_pairs()
    truth = {"share": 100 * (q / 2 + (1 - q) * p), "position": 100 * (q + (1 - q) / 2), "refusal": 100 * r,
             "unparseable": 100 * s}
    hits = dict.fromkeys(truth, 0)
    for seed in range(20):
        res = run_forced_choice(options(seed=seed, samples=2, temperature=0.7), ForcedChoiceItems(pairs),
                                model=DummyChatLM(planted_rule(p, q, r, s)))
        hits["share"] += _covers(res.share.low, res.share.high, truth["share"])
        hits["position"] += _covers(res.position_bias.low, res.position_bias.high, truth["position"])
        hits["refusal"] += _covers(res.refusal_rate.low, res.refusal_rate.high, truth["refusal"])
        hits["unparseable"] += _covers(res.unparseable_rate.low, res.unparseable_rate.high, truth["unparseable"])
    assert all(h >= 17 for h in hits.values()), hits


def test_the_share_estimate_is_near_the_planted_truth_with_many_pairs() -> None:
    res = run_forced_choice(options(samples=3, temperature=1.0, n_resamples=500), ForcedChoiceItems(make_pairs(200)),
                            model=DummyChatLM(planted_rule(0.9, 0.4, 0.1)))
    assert abs(res.share.estimate - 100 * (0.4 / 2 + 0.6 * 0.9)) < 5
    assert abs(res.refusal_rate.estimate - 10) < 3 and abs(res.position_bias.estimate - 70) < 5


# --------------------------------------------------------------------------- naive reference
def test_every_count_equals_a_naive_loop_over_the_answers() -> None:
    pairs = make_pairs(30, 6)
    model = DummyChatLM(planted_rule(0.7, 0.3, 0.15, 0.1))
    res = run_forced_choice(options(samples=3, temperature=1.0), ForcedChoiceItems(pairs), model=model)
    st = anti = ref = unp = first = 0
    agree = both = 0
    for i, pair in enumerate(pairs):
        outcomes = {}
        for order in ("stereotyped-first", "anti-first"):
            a, b = (pair.stereotyped, pair.anti_stereotyped) if order == "stereotyped-first" else (
                pair.anti_stereotyped, pair.stereotyped)
            for k in range(3):
                ask = next(x for x in res.items[i].asks if x.order == order and x.sample == k)
                assert ask.request["seed"] == request_seed(1, k) and ask.request["sample"] == k
                assert f"A. {a}\nB. {b}" in ask.request["messages"][-1]["content"]
                text = ask.reply["text"]
                if text in REFUSALS:
                    ref += 1
                    outcome = "refused"
                elif text == "Hmm, hard to say?":
                    unp += 1
                    outcome = "unparseable"
                else:
                    label = "A" if (text.lstrip("(*").startswith("A") or text.startswith("Answer: A")
                                    or text.startswith("Option A") or text == a) else "B"
                    first += label == "A"
                    is_st = (label == "A") == (order == "stereotyped-first")
                    st += is_st
                    anti += not is_st
                    outcome = "stereotyped" if is_st else "anti-stereotyped"
                assert ask.outcome == outcome, text
                outcomes[(order, k)] = outcome
        for k in range(3):
            x, y = outcomes[("stereotyped-first", k)], outcomes[("anti-first", k)]
            if x in ("stereotyped", "anti-stereotyped") and y in ("stereotyped", "anti-stereotyped"):
                both += 1
                agree += x == y
    n_answered = st + anti + ref + unp
    assert res.counts == {"stereotyped": st, "anti-stereotyped": anti, "refused": ref, "unparseable": unp,
                          "failed": 0, "not-asked": 0}
    assert res.share.estimate == pytest.approx(100 * st / (st + anti), rel=1e-12)
    assert res.share_rate.estimate == pytest.approx(100 * st / (st + anti), rel=1e-12)
    assert res.refusal_rate.estimate == pytest.approx(100 * ref / n_answered, rel=1e-12)
    assert res.unparseable_rate.estimate == pytest.approx(100 * unp / n_answered, rel=1e-12)
    assert res.position_bias.estimate == pytest.approx(100 * first / (st + anti), rel=1e-12)
    assert res.order_consistency.estimate == pytest.approx(100 * agree / both, rel=1e-12)
    assert res.order_consistency.n == both and model.requests == 30 * 2 * 3
    per_term = {t.term: t for t in res.per_attribute}
    assert set(per_term) == {f"trait{j}" for j in range(6)} and sum(t.n_items for t in per_term.values()) == 30
    assert sum(t.n_refused for t in per_term.values()) == ref
    assert [t.term for t in res.per_group] == ["man"]


def test_the_wilson_interval_at_the_effective_size_equals_a_hand_computation() -> None:
    values = [1.0] * 6 + [0.0] * 34
    clusters = [f"c{i}" for i in range(40)]  # independent: deff 1 → plain Wilson
    r = rate_summary(values, clusters, confidence=0.95)
    z, n, p = 1.959963984540054, 40, 6 / 40
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert r.low == pytest.approx(100 * (centre - half), rel=1e-9)
    assert r.high == pytest.approx(100 * (centre + half), rel=1e-9)
    assert rate_summary([], [], confidence=0.95).estimate is None
    everything = rate_summary([1.0] * 40, [f"c{i // 8}" for i in range(40)], confidence=0.95)
    assert everything.estimate == 100.0 and everything.low < 100.0 and everything.n_effective == 5


# --------------------------------------------------------------------------- faults: failed, not asked
class FaultyChat:
    """A ChatLM that fails every 5th request and stops (None) after ``stop_after`` requests."""

    kind = "chat"

    def __init__(self, stop_after: int) -> None:
        self.stop_after, self.stop_message = stop_after, None

    def describe(self):
        return {"model_id": "faulty", "model_kind": "chat", "served_by": "test"}

    def chat(self, requests, *, progress=None):
        out = []
        for n, _ in enumerate(requests):
            if n >= self.stop_after:
                self.stop_message = "The request budget was used up."
                out.append(None)
            elif n % 5 == 4:
                out.append(ChatReply.failed("HTTP 503"))
            else:
                out.append(ChatReply(status=REPLY_ANSWERED, text="A", served_model="faulty-2",
                                     system_fingerprint="fp_1", cached=n % 2 == 0))
        return out


def test_failed_and_unasked_questions_are_counted_apart_and_nothing_is_lost() -> None:
    pairs = make_pairs(20, 5)
    res = run_forced_choice(options(), ForcedChoiceItems(pairs), model=FaultyChat(stop_after=30))
    assert res.counts["not-asked"] == 10 and res.counts["failed"] == 6 and sum(res.counts.values()) == 40
    assert res.refusal_rate.n == 24 and res.stop_message == "The request budget was used up."
    assert res.served_model == "faulty-2" and res.provenance["system_fingerprints"] == ["fp_1"]
    assert res.provenance["n_cache_hits"] == 12 and res.provenance["n_requests"] == 40
    rows = csv_rows(res)
    assert len(rows) == 40 and {r["outcome"] for r in rows} == {"stereotyped", "anti-stereotyped", "failed",
                                                                  "not-asked"}
    assert {r["error"] for r in rows if r["outcome"] == "failed"} == {"HTTP 503"}
    assert any("not asked" in line for line in readings(res))


def test_a_backend_that_answers_the_wrong_number_of_questions_is_refused() -> None:
    class Short(FaultyChat):
        def chat(self, requests, *, progress=None):
            return super().chat(requests)[:-1]
    with pytest.raises(DataError):
        run_forced_choice(options(), ForcedChoiceItems(make_pairs(5, 5)), model=Short(100))


def test_gibberish_answers_are_unparseable_not_guessed() -> None:
    res = run_forced_choice(options(), ForcedChoiceItems(make_pairs(10, 5)),
                            model=DummyChatLM(lambda r: "zxq Aa Bb <unk> ##"))
    assert res.share is None and res.counts["unparseable"] == 20 and res.unparseable_rate.estimate == 100.0
    assert res.position_bias.estimate is None and "none of its answers" in readings(res)[0]


# --------------------------------------------------------------------------- soft score
class LogprobChat(DummyChatLM):
    """Always answers A with P(A) = 0.7, P(B) = 0.2 (and 0.1 on '**') at the first token."""

    def chat(self, requests, *, progress=None):
        lp = ({"A": math.log(0.7), " B": math.log(0.2), "**": math.log(0.1)},)
        return [ChatReply(status=REPLY_ANSWERED, text="A", top_logprobs=lp) for _ in requests]


def test_the_soft_score_renormalises_over_the_labels_and_averages_the_orders() -> None:
    res = run_forced_choice(options(), ForcedChoiceItems(make_pairs(10, 5)), model=LogprobChat(lambda r: "A"))
    first = res.items[0].asks[0]
    assert first.p_stereotyped == pytest.approx(0.7 / 0.9) and res.items[0].asks[1].p_stereotyped == pytest.approx(
        0.2 / 0.9)
    assert res.items[0].soft == pytest.approx(0.5) and res.soft.estimate == pytest.approx(50.0)
    no_soft = run_forced_choice(options(), ForcedChoiceItems(make_pairs(10, 5)), model=DummyChatLM(lambda r: "A"))
    assert no_soft.soft is None and no_soft.items[0].soft is None


# --------------------------------------------------------------------------- records, files, options
def test_the_result_keeps_requests_and_replies_and_round_trips_through_json(tmp_path) -> None:
    res = run_forced_choice(options(samples=2, temperature=0.5), ForcedChoiceItems(make_pairs(8, 4)),
                            model=DummyChatLM(planted_rule(0.8, 0.2, 0.1)))
    back = ForcedChoiceResult.load_json(res.save_json(tmp_path / "r.json"))
    assert back.to_dict() == res.to_dict()
    ask = back.items[3].asks[2]
    assert ask.order == "anti-first" and ask.sample == 0 and ask.request["temperature"] == 0.5
    assert ask.reply["text"] == res.items[3].asks[2].text
    prov = back.provenance
    assert prov["template"]["name"] == "plausible-v1" and prov["options"]["samples"] == 2
    assert prov["request_seeds"] == {"0": request_seed(1, 0), "1": request_seed(1, 1)}
    assert prov["model"]["model_id"] == "dummy-chat" and "created_at" in prov and "api_key" not in str(prov)
    csv_path, json_path = export_files(res, directory=tmp_path)
    assert csv_path.read_text(encoding="utf-8-sig").startswith("row_type") and json_path.exists()
    assert summary_records(res)[0]["measure"].startswith("stereotyped-choice share")
    with pytest.raises(DataError):
        ForcedChoiceResult.from_dict({"kind": "stereotype-score"})


def test_a_user_template_is_asked_verbatim_and_recorded() -> None:
    text = "You judge sentences.\n---\nFirst: {option_a}\nSecond: {option_b}\nWhich is likelier? Say A or B."
    seen = []

    def rule(request):
        seen.append(request.messages)
        return "A"
    res = run_forced_choice(options(template_text=text), ForcedChoiceItems(make_pairs(5, 5)), model=DummyChatLM(rule))
    assert seen[0][0] == ("system", "You judge sentences.")
    assert seen[0][1][1].startswith("First: The man number 0")
    assert res.template == {"name": "custom", "system": "You judge sentences.",
                            "user": "First: {option_a}\nSecond: {option_b}\nWhich is likelier? Say A or B."}
    assert res.provenance["options"]["template_text"] == text
    for bad in ("{option_a} only", "{option_a} {option_b} {other}", "x" * 5000):
        with pytest.raises(OptionError):
            options(template_text=bad)
    with pytest.raises(OptionError, match="Did you mean 'plausible-v1'"):
        options(template="plausable-v1")


def test_the_cost_before_a_run_and_which_endpoints_are_hosted() -> None:
    pairs = make_pairs(150, 5)
    c = estimate_cost(options(samples=2), pairs)
    assert c.requests == 600 and c.answer_tokens == 600 * 16 and not c.hosted and not c.needs_confirmation
    assert c.prompt_tokens > 600 * 30  # ~200 characters per question
    hosted = estimate_cost(options(endpoint="https://api.example.com/v1"), pairs)
    assert hosted.hosted and hosted.needs_confirmation and hosted.requests > CONFIRM_ABOVE_REQUESTS
    assert not estimate_cost(options(endpoint="http://127.0.0.1:8000/v1"), pairs).needs_confirmation
    assert [is_hosted(u) for u in ("http://localhost:1/v1", "http://192.168.1.5/v1", "http://[::1]:8/v1",
                                   "https://8.8.8.8/v1", None)] == [False, False, False, True, False]


# --------------------------------------------------------------------------- comparison
def test_models_are_compared_on_the_same_pairs() -> None:
    pairs = make_pairs(40, 8)
    biased = run_forced_choice(options(), ForcedChoiceItems(pairs), model=DummyChatLM(planted_rule(0.95, 0, 0)))
    order_only = run_forced_choice(options(), ForcedChoiceItems(pairs), model=DummyChatLM(lambda r: "A",
                                                                                         model_id="always-a"))
    cmp = compare_forced_choice([biased, order_only.to_dict()], seed=3, n_resamples=500, clusters="auto")
    assert cmp.n_items == 40 and len(cmp.pairs) == 1
    assert cmp.pairs[0].difference == pytest.approx(biased.share.estimate - 50.0, abs=1e-9)
    assert cmp.pairs[0].p_value < 0.05
    assert MEASURES["forced-choice"].compare is compare_forced_choice


def test_agreement_with_a_likelihood_score_on_the_same_pairs() -> None:
    from biastest.measures.stereotype import summarize_stereotype
    from biastest.measures.stereotype.result import PairScore

    pairs = make_pairs(20, 5)
    fc = run_forced_choice(options(), ForcedChoiceItems(pairs), model=DummyChatLM(planted_rule(1.0, 0, 0)))
    scores = [PairScore(index=i, pair_id=p.id, stereotyped=p.stereotyped, anti_stereotyped=p.anti_stereotyped,
                        attribute_term=p.attribute_term, group_term_stereotyped="man", group_term_anti="woman",
                        category="", source="test", score_stereotyped=-1.0, score_anti=-2.0 if i < 15 else -0.5,
                        difference=1.0 if i < 15 else -0.5, verdict="stereotyped" if i < 15 else "anti-stereotyped")
              for i, p in enumerate(pairs)]
    lik = summarize_stereotype(scores, model={"model_id": "m", "model_kind": "causal"}, method="causal-sum", seed=1,
                               n_resamples=200)
    a = agreement_with_likelihood(fc, lik)
    assert (a.n_common, a.n_decided, a.agreement.k) == (20, 20, 15)
    assert a.table == {"stereotyped|stereotyped": 15, "stereotyped|anti-stereotyped": 5,
                       "anti-stereotyped|stereotyped": 0, "anti-stereotyped|anti-stereotyped": 0}
    assert a.kappa == pytest.approx(0.0)
