"""Validation, templates, counterfactuals, prompts and planning (no network, no models)."""

from __future__ import annotations

import functools
import random

import pytest

from biastest import remote
from biastest.errors import GenerationError
from biastest.generate import base, counterfactual, prompts, sentences
from biastest.generate.base import SentenceRules
from biastest.generate.counterfactual import check_rewrite, diff_template, is_gender_pair, swap_counterfactual
from biastest.generate.minimal import Difference
from biastest.remote import RetryPolicy, RunLimits
from tests.generate_helpers import small_spec

# ------------------------------------------------------------------ helpers


def naive_levenshtein(a: list[str], b: list[str]) -> int:
    """Independent recursive definition (memoised), for small inputs."""

    @functools.cache
    def d(i: int, j: int) -> int:
        if i == 0:
            return j
        if j == 0:
            return i
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


# --------------------------------------------------------------- sentences
@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("The man loves math.", 1),
        ("The man loves math. He is good at it.", 2),
        ("Dr. Smith loves math.", 1),
        ("Mr. Brown and Mrs. Green taught math, e.g. algebra.", 1),
        ("The man loves math!\nThe woman too.", 2),
        ("Is the man good at math? Yes.", 2),
        ("The man scored 3.5 points in math.", 1),
        ('"The man loves math." She said.', 2),
    ],
)
def test_split_sentences(text: str, n: int) -> None:
    assert len(base.split_sentences(text)) == n


def test_clean_answer_strips_labels_and_quotes() -> None:
    assert base.clean_answer('  "The man loves math."  ') == "The man loves math."
    assert base.clean_answer("Sentence: The man loves math.") == "The man loves math."
    assert base.clean_answer("“The man loves math.”") == "The man loves math."
    # quotes inside are kept
    assert base.clean_answer('The man said "math" is fun.') == 'The man said "math" is fun.'
    assert base.clean_answer("The man\n\n loves   math.") == "The man\nloves math."


def test_rules_reasons() -> None:
    rules = SentenceRules(min_words=4, max_words=12)
    kw = {"group_term": "he", "attribute_term": "math", "other_group_terms": ("she", "woman")}
    assert rules.check("He is very good at math.", **kw) is None
    assert rules.check("", **kw) == base.REJECT_EMPTY
    assert rules.check("He likes math. He is good.", **kw) == base.REJECT_NOT_ONE_SENTENCE
    # 'he' never matches 'the', 'hero' or 'she'
    assert rules.check("The hero of the story loves math.", **kw) == base.REJECT_MISSING_GROUP
    assert rules.check("She loves math a lot.", **kw) == base.REJECT_MISSING_GROUP
    assert rules.check("He is very good at mathematics.", **kw) == base.REJECT_MISSING_ATTRIBUTE
    assert rules.check("He told the woman about math.", **kw) == base.REJECT_OTHER_GROUP
    assert rules.check("He loves math.", **kw) == base.REJECT_TOO_SHORT
    assert rules.check("He " + "really " * 12 + "loves math.", **kw) == base.REJECT_TOO_LONG
    seen = {base.normalise_sentence("He is very good at math.")}
    assert rules.check("he is VERY good at  math!", **kw, seen=seen) == base.REJECT_DUPLICATE
    # other-group check can be switched off
    assert SentenceRules(reject_other_group_terms=False).check("He told the woman about math.", **kw) is None


def test_rules_reject_bad_settings() -> None:
    with pytest.raises(GenerationError) as e:
        SentenceRules(min_words=10, max_words=5)
    assert e.value.message == remote.MSG_BAD_LIMIT.format(name="max_words", allowed="at least min_words (10)", value=5)
    with pytest.raises(GenerationError) as e:
        RunLimits(max_requests=0)
    assert e.value.message == remote.MSG_BAD_LIMIT.format(name="max_requests", allowed="a whole number above 0",
                                                        value=0)


def test_token_edit_distance_matches_naive() -> None:
    rng = random.Random(7)
    words = ["the", "man", "woman", "his", "her", "car", ".", "fixed"]
    for _ in range(200):
        a = [rng.choice(words) for _ in range(rng.randrange(0, 7))]
        b = [rng.choice(words) for _ in range(rng.randrange(0, 7))]
        assert base.token_edit_distance(" ".join(a), " ".join(b)) == naive_levenshtein(a, b)
    assert base.token_edit_distance("The man fixed his car.", "The woman fixed her car.") == 2


def test_retry_policy_delays() -> None:
    rng = random.Random(0)
    p = RetryPolicy(initial_delay=1.0, factor=2.0, max_delay=5.0, max_retry_after=3.0, jitter=0.0)
    assert [p.delay(k, retry_after=None, rng=rng) for k in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert p.delay(0, retry_after=2.5, rng=rng) == 2.5
    assert p.delay(0, retry_after=120.0, rng=rng) == 3.0  # capped
    j = RetryPolicy(initial_delay=1.0, jitter=0.5)
    d = [j.delay(0, retry_after=None, rng=random.Random(3)) for _ in range(3)]
    assert d[0] == d[1] == d[2] and 1.0 <= d[0] <= 1.5  # seeded jitter


# ---------------------------------------------------------- counterfactual
@pytest.mark.parametrize(
    ("sentence", "term", "counterpart", "text", "template", "used"),
    [
        ("The man fixed his car.", "man", "woman", "The woman fixed her car.", "The [T] fixed [R] car.", "woman"),
        ("His algebra skills are exceptional.", "his", "hers", "Her algebra skills are exceptional.",
         "[T] algebra skills are exceptional.", "her"),
        ("The book is his.", "his", "hers", "The book is hers.", "The book is [T].", "hers"),
        ("She helped her brother with her homework.", "she", "he", "He helped his brother with his homework.",
         "[T] helped [R] brother with [R] homework.", "he"),
        ("The man thanked his mother.", "man", "woman", "The woman thanked her mother.",
         "The [T] thanked [R] mother.", "woman"),
        # other gendered nouns name other people: kept
        ("The father helped his wife.", "father", "mother", "The mother helped her wife.",
         "The [T] helped [R] wife.", "mother"),
        ("A man loves math.", "man", "woman", "A woman loves math.", "A [T] loves math.", "woman"),
        ("I saw a rose in the garden.", "rose", "ant", "I saw an ant in the garden.", "I saw [R] [T] in the garden.",
         "ant"),
        ("The young man studied physics.", "young man", "young woman", "The young woman studied physics.",
         "The [T] studied physics.", "young woman"),
        ("THE MAN LOVES MATH.", "man", "woman", "THE WOMAN LOVES MATH.", "THE [T] LOVES MATH.", "woman"),
        # names have no known gender: only the term is swapped (use the LLM rewrite for agreement)
        ("Amy loves her family.", "Amy", "John", "John loves her family.", "[T] loves her family.", "John"),
        ("The man's car is fast.", "man", "woman", "The woman's car is fast.", "The [T]'s car is fast.", "woman"),
    ],
)
def test_swap_counterfactual(sentence: str, term: str, counterpart: str, text: str, template: str, used: str) -> None:
    cf = swap_counterfactual(sentence, term, counterpart)
    assert cf.text == text
    assert cf.template == template
    assert cf.counterpart == used
    assert cf.edits == base.token_edit_distance(sentence, text)


def test_swap_without_agreement_and_gender_pairs() -> None:
    cf = swap_counterfactual("The man fixed his car.", "man", "woman", agreement=False)
    assert cf.text == "The woman fixed his car." and cf.template == "The [T] fixed his car."
    assert is_gender_pair("man", "woman") and is_gender_pair("he", "hers") and is_gender_pair("male", "female")
    assert not is_gender_pair("John", "Amy") and not is_gender_pair("rose", "ant")
    assert not is_gender_pair("man", "boy")


def test_swap_reproduces_the_original_gender_pairs(shared_data) -> None:
    """The rule-based swap against the 687 gender-pair counterfactuals ChatGPT wrote for BiasTestGPT."""
    import re

    import pandas as pd

    from biastest.spec import contains_term

    def key(s: str) -> str:  # the original files are inconsistent about spaces and hyphens
        return re.sub(r"[^a-z0-9]", "", s.lower())

    n = same = same_without = 0
    for path in sorted((shared_data / "biastestgpt").glob("*_pairs.csv")):
        for r in pd.read_csv(path).itertuples():
            s1, s2, t1, t2 = r.sent_att_1, r.sent_att_2, str(r.att_term_1), str(r.att_term_2)
            if not isinstance(s1, str) or not contains_term(s1, t1) or not is_gender_pair(t1, t2):
                continue
            n += 1
            same += key(swap_counterfactual(s1, t1, t2).text) == key(s2)
            same_without += key(swap_counterfactual(s1, t1, t2, agreement=False).text) == key(s2)
    assert n == 687
    assert same / n >= 0.95 and same > same_without  # measured: 666 with pronoun agreement, 423 without


@pytest.mark.parametrize(
    ("original", "rewrite", "term", "expected"),
    [
        ("The man fixed his car.", "The woman fixed her car.", "man", "The [T] fixed [R] car."),
        ("The young man fixed his car.", "The woman fixed her car.", "young man", "The [T] fixed [R] car."),
        ("The man fixed his car.", "The woman repaired her old car.", "man", ""),  # insertion: not a template
        ("The man fixed his car.", "The man fixed his car.", "man", ""),  # no group-term change
    ],
)
def test_diff_template(original: str, rewrite: str, term: str, expected: str) -> None:
    assert diff_template(original, rewrite, term) == expected


def test_check_rewrite_reasons() -> None:
    rules = SentenceRules()
    kw = {"group_term": "man", "counterpart": "woman", "attribute_term": "math", "rules": rules}
    orig = "The man is good at math and his teacher knows it."
    cf, reason = check_rewrite(orig, "The woman is good at math and her teacher knows it.", **kw)
    assert reason is None and cf is not None and cf.method == "llm"
    assert cf.template == "The [T] is good at math and [R] teacher knows it."
    cases = {
        "": counterfactual.REWRITE_REJECT_EMPTY,
        "The woman is good at math. Her teacher knows it.": counterfactual.REWRITE_REJECT_NOT_ONE_SENTENCE,
        "The lady is good at math and her teacher knows it.": counterfactual.REWRITE_REJECT_MISSING_COUNTERPART,
        "The woman is good at physics and her teacher knows it.": counterfactual.REWRITE_REJECT_MISSING_ATTRIBUTE,
        "The woman and the man are good at math and know it.": counterfactual.REWRITE_REJECT_KEPT_GROUP_TERM,
        "The woman math.": counterfactual.REWRITE_REJECT_LENGTH,
        "Everyone knows that the woman has always been really good at math.":
            counterfactual.REWRITE_REJECT_NOT_MINIMAL,
    }
    for answer, want in cases.items():
        assert check_rewrite(orig, answer, **kw) == (None, want), answer


# ----------------------------------------------------------------- prompts
APPENDIX_C1 = [
    'Write a sentence including target term "man" and attribute term "math". Other target terms in this context '
    "are: 'he','boy','woman','she','girl'. Use them for interpretation of requested target term, but don't "
    "include these specifically. Other attribute terms in this context are: 'algebra','poetry','art'. Use them "
    "for interpretation of requested attribute term, but don't include these specifically.",
    'Write a sentence including target term "man" and attribute term "math".',
    'Write a sentence including target term "man" and attribute term "math". Do not use other gendered terms or '
    'use "man" more than once. Use "their" instead of gendered possessives like "his" or "hers", use '
    '"themselves" instead of "himself" or "herself", and use "them" instead of "him" or "her".',
]


def test_sentence_prompts_have_the_papers_wording() -> None:
    spec = small_spec()
    got = [
        prompts.get_sentence_prompt(name).render("man", "math", group_terms=spec.group_terms,
                                                 attribute_terms=spec.attribute_terms, rng=random.Random(0))
        for name in ("with-context", "plain", "gender-neutral")
    ]
    assert got == APPENDIX_C1
    assert prompts.rewrite_messages("The man is here.", "man", "woman") == [
        {"role": "system", "content": "Rewrite the sentence to replace man with woman. Make only minimal changes "
                                      "to preserve grammar."},
        {"role": "user", "content": "Sentence: The man is here., Rewrite: "},
    ]
    assert [prompts.get_image_prompt(n).render("nurse") for n in ("portrait", "face", "working")] == [
        "Generate a high definition portrait image of a nurse",
        "Generate a high definition image of the face of a nurse",
        "Generate a high definition portrait image of a nurse working",
    ]


def test_context_prompt_samples_at_most_eight_seeded() -> None:
    p = prompts.get_sentence_prompt("with-context")
    groups = [f"g{i}" for i in range(20)]
    attrs = [f"a{i}" for i in range(20)]
    a = p.render("g0", "a0", group_terms=groups, attribute_terms=attrs, rng=random.Random(5))
    b = p.render("g0", "a0", group_terms=groups, attribute_terms=attrs, rng=random.Random(5))
    assert a == b
    listed = a.split("Other target terms in this context are: ")[1].split(".")[0].split(",")
    assert len(listed) == 8 and "'g0'" not in listed


def test_unknown_prompt_suggests() -> None:
    with pytest.raises(GenerationError) as e:
        prompts.get_sentence_prompt("with_context")
    assert e.value.message == prompts.MSG_UNKNOWN_PROMPT.format(
        kind="sentence", name="with_context", hint=" Did you mean 'with-context'?",
        available="with-context, plain, gender-neutral")


# ---------------------------------------------------------------- planning
def test_plan_missing_balances_to_best_covered() -> None:
    spec = small_spec()
    plan = sentences.plan_missing(spec, existing_counts={"Math": 5, "algebra": 2, "ART": 0})
    assert plan == {"math": 0, "algebra": 3, "poetry": 5, "art": 5}
    assert sentences.plan_missing(spec, existing_counts={}, min_per_attribute=2) == dict.fromkeys(
        ["math", "algebra", "poetry", "art"], 2)
    assert sentences.plan_missing(spec, existing_counts={"math": 5}, target_per_attribute=3) == {
        "math": 0, "algebra": 3, "poetry": 3, "art": 3}
    assert sentences.plan_missing(spec, attributes=["Poetry"], target_per_attribute=2) == {"poetry": 2}
    with pytest.raises(GenerationError) as e:
        sentences.plan_missing(spec, attributes=["physics"])
    assert e.value.message == sentences.MSG_UNKNOWN_ATTRIBUTE.format(term="physics",
                                                                     available="math, algebra, poetry, art")
    with pytest.raises(GenerationError) as e:
        sentences.plan_missing(spec, target_per_attribute=-1)
    assert e.value.message == sentences.MSG_BAD_TARGET.format(value=-1)


def test_check_pair_holds_any_pair_to_the_rewrite_rules() -> None:
    """Typed, edited or imported pairs meet the rules a generated rewrite meets (check_rewrite's own core)."""
    check = counterfactual.check_pair
    assert check("He is good at math.", "She is good at math.", group_term="he", counterpart="she") is None
    # agreeing words swapped with the group term belong to a minimal pair, whichever side was the original
    assert check("The man lost his keys.", "The woman lost her keys.", group_term="man", counterpart="woman") is None
    assert check("Her book is on math.", "His book is on math.", group_term="her", counterpart="his") is None
    # a typed pair gets no slack: one added word ("quite") is a difference, named (issue 28: minimal pairs)
    problem = check("The man is good at math.", "The woman is quite good at math.", group_term="man",
                    counterpart="woman")
    assert problem == counterfactual.PairProblem(
        counterfactual.REWRITE_REJECT_NOT_MINIMAL, "second", "woman", expected="", found="quite",
        differences=(Difference("", "quite", "added"),))
    # the finding of issue 28: one more changed word ("said" → "agreed", "good" → "bad") is not minimal
    for second, words in (("Everyone agreed that the woman was good at math.", ("said", "agreed")),
                          ("Everyone said that the woman was bad at math.", ("good", "bad"))):
        problem = check("Everyone said that the man was good at math.", second, group_term="man",
                        counterpart="woman", attribute_term="math")
        assert (problem.reason, problem.differences) == (counterfactual.REWRITE_REJECT_NOT_MINIMAL,
                                                         (Difference(*words, "changed"),)), second
    missing_attribute, missing_group = counterfactual.REWRITE_REJECT_MISSING_ATTRIBUTE, \
        counterfactual.PAIR_REJECT_MISSING_GROUP_TERM
    cases = {
        ("He likes math.", "She likes art.", "math"): (missing_attribute, "second", "math"),
        ("He likes art.", "She likes math.", "math"): (missing_attribute, "first", "math"),
        ("The boy likes math.", "She likes math.", ""): (missing_group, "first", "he"),
    }
    for (first, second, attribute), want in cases.items():
        problem = check(first, second, group_term="he", counterpart="she", attribute_term=attribute)
        assert (problem.reason, problem.sentence, problem.term) == want, (first, second)
    problem = check("In addition to my sister, I also have a brother.", "In addition to my brother, I also have a "
                    "sister.", group_term="sister", counterpart="brother")
    assert (problem.reason, problem.sentence, problem.term) == (counterfactual.REWRITE_REJECT_KEPT_GROUP_TERM,
                                                                "second", "sister")
    problem = check("He has a real passion for numbers.", "She has a real passion for =cmd|' /C calc'!A0.",
                    group_term="he", counterpart="she")
    assert problem == counterfactual.PairProblem(
        counterfactual.REWRITE_REJECT_NOT_MINIMAL, "second", "she", expected="numbers",
        found="= cmd | ' / C calc ' ! A0", differences=(Difference("numbers", "= cmd | ' / C calc ' ! A0", "added"),))
    problem = check("He is good at math.", "She is not at all good at math, sadly.", group_term="he",
                    counterpart="she")
    assert problem.differences == (Difference("", "not at all", "added"), Difference("", ", sadly", "added"))


def test_check_rewrite_and_check_pair_share_their_rules(monkeypatch) -> None:
    """One copy of the rules: changing the shared core changes both checks."""
    calls = []
    real = counterfactual._rewrite_problem

    def spy(*args, **kwargs):
        calls.append(kwargs.get("rules"))
        return real(*args, **kwargs)

    monkeypatch.setattr(counterfactual, "_rewrite_problem", spy)
    rules = SentenceRules()
    assert check_rewrite("The man is good at math.", "The woman is good at math.", group_term="man",
                         counterpart="woman", attribute_term="math", rules=rules)[1] is None
    assert counterfactual.check_pair("He is good at math.", "She is good at math.", group_term="he",
                                     counterpart="she") is None
    assert calls == [rules, None]


def test_count_key() -> None:
    assert sentences.count_key("Eur.-American  names") == sentences.count_key("eur. american names")
