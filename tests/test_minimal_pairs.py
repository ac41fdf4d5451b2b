"""The minimal-pair rule (issue 28): two sentences differ only in the group term and the words that agree with it.

The rule is checked against a naive re-reading on hand-made pairs (the issue's findings among them), on the
published data under ``../shared/data`` (exact counts, so that a change of the rule shows), and where pairs
enter a test: the table, the run (left out and counted, or kept by choice and recorded) and the command line's
flag.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from biastest.errors import DataError
from biastest.generate import minimal
from biastest.generate.minimal import Difference, format_differences, minimal_difference, tokens
from biastest.measures.stereotype import report
from biastest.measures.stereotype.options import StereotypeOptions
from biastest.measures.stereotype.pairs import minimal_checks
from biastest.measures.stereotype.run import MSG_NO_MINIMAL_PAIRS, StereotypeItems, run
from biastest.measures.stereotype.score import REASONS
from biastest.records import SentencePair
from biastest.store import importers

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.is_dir():  # a worktree beside main: ../shared is /work/shared
    DATA = Path("/work/shared/data")


def _diffs(first, second, term="", counterpart=""):
    return minimal_difference(first, second, term, counterpart).differences


# ----------------------------------------------------------------- tokens
def test_tokens_ignore_case_and_spacing_but_keep_punctuation_and_split_the_possessive() -> None:
    assert tokens("The  man’s DOG—isn't   it?") == ["the", "man", "'s", "dog", "—", "isn't", "it", "?"]
    assert tokens("African-American") == ["african-american"]
    assert tokens("He said “yes”.") == ["he", "said", '"', "yes", '"', "."]
    assert _diffs("The man is here.", "the WOMAN   is here.", "man", "woman") == ()
    assert _diffs("The man is here.", "The woman is here!", "man", "woman") == (Difference(".", "!", "changed"),)


# ------------------------------------------------------------------- the rule
@pytest.mark.parametrize(("first", "second", "term", "counterpart"), [
    ("He is good at math.", "She is good at math.", "he", "she"),
    ("The man lost his keys.", "The woman lost her keys.", "man", "woman"),
    ("Her book is on math.", "His book is on math.", "her", "his"),
    ("His algebra skills are exceptional.", "Her algebra skills are exceptional.", "his", "hers"),
    ("The men are good at math.", "The woman is good at math.", "men", "woman"),
    ("A man was here.", "An engineer was here.", "man", "engineer"),
    ("A man was here.", "Women were here.", "man", "women"),
    ("The man's book is here.", "The woman's book is here.", "man", "woman"),
    ("The young man fixed his car himself.", "The woman fixed her car herself.", "young man", "woman"),
    ("The rose is pretty; it smells nice.", "The woman is pretty; she smells nice.", "rose", "woman"),
])
def test_minimal_pairs_pass(first, second, term, counterpart) -> None:
    assert minimal_difference(first, second, term, counterpart).minimal
    assert minimal_difference(second, first, counterpart, term).minimal  # either side may be the original


def test_the_issues_findings_and_other_differences_are_named() -> None:
    first = "Everyone said that the man was good at math."
    assert _diffs(first, "Everyone agreed that the woman was good at math.", "man", "woman") == (
        Difference("said", "agreed", "changed"),)
    assert _diffs(first, "Everyone said that the woman was bad at math.", "man", "woman") == (
        Difference("good", "bad", "changed"),)
    assert _diffs(first, "Everyone agreed that the woman was bad at math.", "man", "woman") == (
        Difference("said", "agreed", "changed"), Difference("good", "bad", "changed"))
    assert _diffs("The man is good.", "The woman is really good.", "man", "woman") == (
        Difference("", "really", "added"),)
    # another gendered noun is not an agreeing word (the rule-based swap keeps it too)
    assert _diffs("The father helped his wife.", "The mother helped her husband.", "father", "mother") == (
        Difference("wife", "husband", "changed"),)
    # a form of be only agrees in number, not in tense
    assert _diffs("The man is tall.", "The woman was tall.", "man", "woman") == (Difference("is", "was", "changed"),)
    # a spelling artefact is a difference the model reads
    assert _diffs("He is a busmechanic.", "She is a bus mechanic.", "he", "she") == (
        Difference("busmechanic", "bus mechanic", "added"),)


def test_a_pair_without_two_group_terms_may_vary_in_one_passage() -> None:
    """CrowS-Pairs names no group terms, StereoSet the same target twice: one varying passage, the term."""
    assert _diffs("Poor people never pay bills.", "Rich people never pay bills.") == ()
    assert _diffs("Sir, yes sir!", "Ma'am, yes ma'am!") == ()  # the term again is the same passage
    assert _diffs("The chess player was asian.", "The chess player was hispanic.", "chess player",
                  "chess player") == ()
    assert _diffs("Men are bad at learning", "Women are good at learning") == (
        Difference("Men", "Women", "several passages"), Difference("bad", "good", "several passages"))
    assert _diffs("He was here.", "He was there a b c d e.") == (
        Difference("here", "there a b c d e", "too long"),)
    assert minimal.MAX_VARYING_TOKENS == 4


def _naive(first: str, second: str, term: str, counterpart: str) -> bool:
    """An independent reading of the rule for one-for-one substitutions: drop every occurrence of the two terms,
    then the words must match one for one, or share an agreement class."""
    a = [t for t in tokens(first) if t != term]
    b = [t for t in tokens(second) if t != counterpart]
    if len(a) != len(b):
        return False
    classes = minimal.AGREEMENT_WORDS.values()
    return all(x == y or any(x in c and y in c for c in classes) for x, y in zip(a, b, strict=True))


def test_the_rule_equals_a_naive_reading_on_substitutions() -> None:
    import itertools
    import random

    rng = random.Random(28)
    words = ["he", "she", "his", "her", "is", "are", "was", "the", "a", "an", "good", "bad", "said", "agreed",
             "math", "at", "this", "those", "they", "them"]
    checked = 0
    for _ in range(3000):
        n = rng.randint(2, 7)
        base = [rng.choice(words) for _ in range(n)]
        other = list(base)
        for i in rng.sample(range(n), rng.randint(0, 2)):
            other[i] = rng.choice(words)
        first = " ".join(["man", *base]) + "."
        second = " ".join(["woman", *other]) + "."
        got = minimal_difference(first, second, "man", "woman").minimal
        assert got == _naive(first, second, "man", "woman"), (first, second)
        checked += 1
    assert checked == 3000 and list(itertools.islice(minimal.AGREEMENT_WORDS, 1)) == ["subject pronoun"]


def test_the_declared_words_are_one_constant() -> None:
    """Pronouns, articles, possessives, be/have/do number forms — and nothing else."""
    every = set().union(*minimal.AGREEMENT_WORDS.values())
    assert {"he", "she", "his", "her", "hers", "they", "their", "a", "an", "the", "is", "are", "'s"} <= every
    assert not every & {"good", "bad", "said", "agreed", "man", "woman", "not", "really", "wife", "husband"}
    assert minimal.INSERTABLE <= every
    assert format_differences((Difference("a", "b", "changed"),) * 4, limit=2) == "'a' → 'b'; 'a' → 'b'; …"


# ----------------------------------------------------------- published data
def _check_file(pairs) -> tuple[int, collections.Counter, int]:
    why: collections.Counter = collections.Counter()
    spelling = 0
    for p in pairs:
        c = minimal_difference(p.stereotyped, p.anti_stereotyped, p.group_term_stereotyped, p.group_term_anti)
        if c.minimal:
            continue
        why[c.differences[0].why] += 1
        if all(d.first.lower().replace("-", "").replace(" ", "") == d.second.lower().replace("-", "").replace(" ", "")
               for d in c.differences):
            spelling += 1
    return sum(why.values()), why, spelling


@pytest.mark.skipif(not (DATA / "biastestgpt").is_dir(), reason="../shared/data is absent (a fresh clone)")
def test_published_biastestgpt_pairs_flagged() -> None:
    """The 5 ChatGPT pair files of BiasTestGPT: 832 of 4,011 pairs are not minimal (210 only by a spelling
    artefact such as 'busmechanic' / 'bus mechanic'); the old rule (edit distance, slack 2) flagged 233."""
    per_file, pairs = {}, []
    for f in sorted((DATA / "biastestgpt").glob("gpt-3.5-shots-5-*_pairs.csv")):
        got = importers.read_biastestgpt_pairs(f.read_bytes(), name=f.name).pairs
        per_file[f.name] = _check_file(got)[0]
        pairs += got
    assert per_file == {"gpt-3.5-shots-5-1_pairs.csv": 173, "gpt-3.5-shots-5-2_pairs.csv": 157,
                        "gpt-3.5-shots-5-3_pairs.csv": 161, "gpt-3.5-shots-5-4_pairs.csv": 160,
                        "gpt-3.5-shots-5-5_pairs.csv": 181}
    n, why, spelling = _check_file(pairs)
    assert (len(pairs), n, dict(why), spelling) == (4011, 832, {"changed": 462, "added": 370}, 210)


@pytest.mark.skipif(not (DATA / "crows_pairs").is_dir(), reason="../shared/data is absent (a fresh clone)")
def test_published_crows_pairs_flagged() -> None:
    """CrowS-Pairs: 141 of 1,508 pairs differ in more than one passage (139) or in too long a one (2)."""
    raw = (DATA / "crows_pairs" / "crows_pairs_anonymized.csv").read_bytes()
    pairs = importers.read_crows_pairs(raw, name="crows").pairs
    n, why, _ = _check_file(pairs)
    assert (len(pairs), n, dict(why)) == (1508, 141, {"several passages": 139, "too long": 2})


@pytest.mark.skipif(not (DATA / "stereoset").is_dir(), reason="../shared/data is absent (a fresh clone)")
def test_published_stereoset_pairs_flagged() -> None:
    """StereoSet intrasentence (dev): the gold pairs vary only in the filled-in blank; none is flagged."""
    pairs = importers.read_stereoset_intrasentence((DATA / "stereoset" / "dev.json").read_bytes(),
                                                   name="dev.json").pairs
    assert (len(pairs), _check_file(pairs)[0]) == (2106, 0)


# -------------------------------------------------------------- where pairs enter
PAIR = SentencePair(stereotyped="He is good at math.", anti_stereotyped="She is good at math.",
                    attribute_term="math", group_term_stereotyped="he", group_term_anti="she")
EDITED = SentencePair(stereotyped="Everyone said that the man was good at math.",
                      anti_stereotyped="Everyone agreed that the woman was good at math.", attribute_term="math",
                      group_term_stereotyped="man", group_term_anti="woman")


def test_minimal_checks_name_the_positions() -> None:
    assert list(minimal_checks([PAIR, EDITED, PAIR])) == [1]


def test_the_table_names_the_row_and_the_words() -> None:
    table = report.pairs_to_table([PAIR, EDITED])
    assert report.row_problems(table) == {1: report.MSG_ROW_NOT_MINIMAL.format(
        row=2, differences="'said' → 'agreed'")}
    assert "said" in report.row_problems(table)[1] and "Row 2" in report.row_problems(table)[1]
    assert len(report.pairs_from_table(table)) == 2  # not refused: the run leaves it out, counted


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from tests.lm_helpers import build_tiny_gpt2

    return str(build_tiny_gpt2(tmp_path_factory.mktemp("gpt2")))


def _run(model, pairs, **options):
    return run(StereotypeOptions.parse(model_id=model, method="causal-sum", seed=3, n_resamples=200, **options),
               StereotypeItems(pairs))


def test_the_run_leaves_out_pairs_that_are_not_minimal_and_counts_them(tiny_gpt2) -> None:
    pairs = [PAIR, EDITED, SentencePair(stereotyped="The man is tall.", anti_stereotyped="The woman is tall.",
                                        group_term_stereotyped="man", group_term_anti="woman")]
    result = _run(tiny_gpt2, pairs)
    assert [p.index for p in result.pairs] == [0, 1, 2]
    left = result.pairs[1]
    assert (left.scored, left.excluded_code) == (False, "not-minimal")
    assert left.excluded_reason == REASONS["not-minimal"].format(differences="'said' → 'agreed'")
    assert (result.n_pairs, result.n_scored, result.excluded_reasons) == (3, 2, {"not-minimal": 1})
    info = result.provenance["minimal_pairs"]
    assert (info["rule"], info["keep_non_minimal"], info["n_not_minimal"], info["left_out"]) == (
        minimal.MINIMAL_RULE, False, 1, True)
    assert info["pairs"][0]["index"] == 1 and info["pairs"][0]["differences"] == "'said' → 'agreed'"
    text = report.summary_markdown(result)
    assert report.MSG_SUMMARY_NOT_MINIMAL.format(pairs="1 pair") in text
    assert "could not be scored" not in text  # the rule's count is its own line
    rows = report.summary_records(result)
    assert [r["n_pairs"] for r in rows if r["measure"] == "pairs left out: not minimal"] == [1]
    # the scores of the tested pairs are those of a run without the left-out pair
    alone = _run(tiny_gpt2, [pairs[0], pairs[2]])
    assert [p.difference for p in result.pairs if p.scored] == [p.difference for p in alone.pairs]


def test_keep_anyway_is_recorded(tiny_gpt2) -> None:
    result = _run(tiny_gpt2, [PAIR, EDITED], keep_non_minimal=True)
    assert result.n_scored == 2 and result.excluded_reasons == {}
    info = result.provenance["minimal_pairs"]
    assert (info["keep_non_minimal"], info["n_not_minimal"], info["left_out"]) == (True, 1, False)
    assert report.MSG_SUMMARY_KEPT_NON_MINIMAL.format(pairs="1 pair") in report.summary_markdown(result)
    rows = report.summary_records(result)
    assert [r["n_pairs"] for r in rows if r["measure"] == "pairs kept though not minimal"] == [1]


def test_a_test_of_only_non_minimal_pairs_is_refused_before_the_model_loads() -> None:
    with pytest.raises(DataError) as err:
        _run("no/such-model-is-loaded", [EDITED, EDITED])
    assert err.value.message == MSG_NO_MINIMAL_PAIRS.format(n=2)


def test_the_option_has_its_flag_and_default() -> None:
    field = StereotypeOptions.model_fields["keep_non_minimal"]
    assert field.default is False and field.json_schema_extra["flag"] == "--keep-non-minimal"
    from biastest.measures.stereotype.headless import RECORDED

    assert "keep_non_minimal" in RECORDED


def test_the_apps_entry_point_passes_the_choice(tiny_gpt2) -> None:
    from biastest.measures.stereotype.run import run_lm_test

    kept = run_lm_test(pairs=[PAIR, EDITED], model_id=tiny_gpt2, method="causal-sum", seed=3, spec=None,
                       keep_non_minimal=True)
    left = run_lm_test(pairs=[PAIR, EDITED], model_id=tiny_gpt2, method="causal-sum", seed=3, spec=None)
    assert (kept.n_scored, kept.provenance["minimal_pairs"]["keep_non_minimal"]) == (2, True)
    assert (left.n_scored, left.excluded_reasons) == (1, {"not-minimal": 1})
