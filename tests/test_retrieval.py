"""Retrieval: sentences, pairs and images for a spec, against naive re-implementations."""

from __future__ import annotations

import random

import numpy as np
import pytest

from biastest.records import SentencePair, TestSentence
from biastest.spec import BiasSpec, contains_term
from biastest.store import DatasetStore, retrieve_images, retrieve_pairs, retrieve_sentences
from biastest.store import retrieval as R
from tests.store_helpers import png_bytes


def _spec(**kw) -> BiasSpec:
    args = dict(name="Math_Arts", group1="man, he, social worker", group2="woman, she, nurse aide",
                stereotype1="math, algebra", antistereotype1="art, poetry",
                group1_name="Male", group2_name="Female", stereotype1_name="Math", antistereotype1_name="Arts")
    args.update(kw)
    return BiasSpec.from_terms(**args)


def _naive(store: DatasetStore, spec: BiasSpec):
    """Deliberately plain: scan every stored sentence with the word-bounded matcher."""
    out = {}
    excluded = {R.SKIP_BOTH_GROUPS: 0, R.SKIP_BOTH_ATTRIBUTE_LISTS: 0}
    for s in store.sentences():
        g1 = [t for t in spec.group1 if contains_term(s.text, t)]
        g2 = [t for t in spec.group2 if contains_term(s.text, t)]
        a1 = [t for t in spec.attributes1 if contains_term(s.text, t)]
        a2 = [t for t in spec.attributes2 if contains_term(s.text, t)]
        if not (g1 or g2) or not (a1 or a2):
            continue
        if g1 and g2:
            excluded[R.SKIP_BOTH_GROUPS] += 1
            continue
        if a1 and a2:
            excluded[R.SKIP_BOTH_ATTRIBUTE_LISTS] += 1
            continue
        gs, as_ = g1 + g2, a1 + a2
        g = next((t for t in gs if t.lower() == s.group_term.lower()), gs[0])
        a = next((t for t in as_ if t.lower() == s.attribute_term.lower()), as_[0])
        out[s.id] = (g, a)
    return out, excluded


def _random_store(tmp_path, seed: int) -> DatasetStore:
    rng = random.Random(seed)
    words = ["man", "he", "the", "hero", "woman", "she", "Social worker", "social", "nurse aide", "math", "MATH",
             "algebraic", "algebra", "art", "artist", "poetry", "likes", "and", "a", "nurse", "her", "them"]
    store = DatasetStore(tmp_path)
    for _ in range(3):
        batch = []
        for _ in range(200):
            ws = [rng.choice(words) for _ in range(rng.randint(2, 8))]
            text = " ".join(ws).capitalize() + rng.choice([".", "!", "?", ""])
            batch.append(TestSentence(text, rng.choice(["he", "she", "man", "x"]), rng.choice(["math", "art", "y"])))
        store.add(batch)
    return store


@pytest.mark.parametrize(
    "terms",
    [
        {},  # multi-word group terms: the attribute side is found first
        dict(group1="man, he", group2="woman, she", stereotype1="math, social worker",
             antistereotype1="art, nurse aide"),
    ],
    ids=["attributes-first", "groups-first"],
)
def test_retrieve_sentences_equals_naive_scan(tmp_path, terms):
    store = _random_store(tmp_path, seed=11)
    spec = _spec(**terms)
    got = retrieve_sentences(store, spec)
    naive, excluded = _naive(store, spec)
    assert {m.sentence.id: (m.group_term, m.attribute_term) for m in got.matches} == naive
    assert got.excluded == excluded
    assert got.coverage.total == len(naive)
    for term in spec.attribute_terms:
        assert got.coverage.per_attribute[term] == sum(1 for _, a in naive.values() if a == term)
    for term in spec.group_terms:
        assert got.coverage.per_group[term] == sum(1 for g, _ in naive.values() if g == term)
    for m in got.matches:
        assert m.group == spec.group_of(m.group_term) and m.attribute_list == spec.attribute_side(m.attribute_term)
    assert len(got.matches) > 50 and got.excluded[R.SKIP_BOTH_GROUPS] > 0
    assert got.provenance["spec_fingerprint"] == spec.fingerprint()


def test_stored_term_fields_are_preferred(tmp_path):
    store = DatasetStore(tmp_path)
    s = TestSentence("He, a man, likes algebra and math.", "man", "math")
    store.add([s])
    (m,) = retrieve_sentences(store, _spec()).matches
    assert (m.group_term, m.attribute_term, m.group, m.attribute_list) == ("man", "math", 1, 1)
    assert m.stereotyped


def test_coverage_thin_and_message():
    cov = R.Coverage({"math": 3, "art": 0}, {"he": 1, "she": 5}, 6)
    assert cov.thin(2) == [("attribute", "art", 0), ("group", "he", 1)]
    assert cov.message(2) == R.MSG_COVERAGE_THIN.format(count=2, min_count=2, terms="art (0), he (1)")
    assert cov.message(0) == R.MSG_COVERAGE_OK.format(min_count=0)
    assert cov.to_dict()["per_attribute"] == {"math": 3, "art": 0}


def test_pairs_built_from_templates_with_spec_orientation(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([
        # group 1 + attribute list 1 -> the sentence itself is stereotyped
        TestSentence("The man is good at math.", "man", "math", template="The [T] is good at [A]."),
        # group 2 + attribute list 1 -> the counterpart (group 1) is stereotyped
        TestSentence("She loves algebra.", "she", "algebra", template="[T] loves algebra."),
        # group 2 + list 2 -> itself stereotyped
        TestSentence("A woman wrote poetry.", "woman", "poetry", template="A [T] wrote poetry."),
        TestSentence("The man enjoys art.", "man", "art"),  # no template
        TestSentence("The man did math for his son.", "man", "math", template="The [T] did math for [R] son."),
        TestSentence("The man did math again.", "man", "math", template="The [T] did art again."),  # mismatch
    ])
    got = retrieve_pairs(store, _spec())
    by_attr = {p.attribute_term: p for p in got.pairs}
    assert got.built == 3 and got.stored == 0 and got.pairing == "positional"
    p = by_attr["math"]
    assert (p.stereotyped, p.anti_stereotyped) == ("The man is good at math.", "The woman is good at math.")
    assert (p.group_term_stereotyped, p.group_term_anti, p.category) == ("man", "woman", "Math")
    p = by_attr["algebra"]
    assert (p.stereotyped, p.anti_stereotyped) == ("He loves algebra.", "She loves algebra.")  # capitalised
    assert (p.group_term_stereotyped, p.group_term_anti) == ("he", "she")
    p = by_attr["poetry"]
    assert (p.stereotyped, p.anti_stereotyped) == ("A woman wrote poetry.", "A man wrote poetry.")
    assert p.category == "Arts" and p.template == "A [T] wrote poetry."
    assert got.skipped == {R.SKIP_NO_TEMPLATE: 1, R.SKIP_OTHER_SLOTS: 1, R.SKIP_TEMPLATE_MISMATCH: 1}
    assert got.coverage.per_attribute["math"] == 1 and got.coverage.per_group["man"] == 2


def test_stored_pairs_matched_and_reoriented(tmp_path):
    store = DatasetStore(tmp_path)
    right = SentencePair("The man does math.", "The woman does math.", "math", "man", "woman")
    wrong = SentencePair("The woman writes poetry.", "The man writes poetry.", "poetry", "woman", "man")
    foreign = SentencePair("The cat sleeps.", "The dog sleeps.", "math", "cat", "dog")
    same_group = SentencePair("The man does math.", "He does math.", "math", "man", "he")
    store.add([], [right, wrong, foreign, same_group])
    spec = _spec()
    got = retrieve_pairs(store, spec, build=False)
    assert got.stored == 2 and got.reoriented == 0 and got.skipped == {R.SKIP_PAIR_GROUPS: 2}
    assert {p.id for p in got.pairs} == {right.id, wrong.id}
    # The same pairs for a spec with the attribute lists in the other order are re-oriented
    flipped_spec = _spec(stereotype1="art, poetry", antistereotype1="math, algebra")
    got = retrieve_pairs(store, flipped_spec, build=False)
    assert got.reoriented == 2
    by_attr = {p.attribute_term: p for p in got.pairs}
    assert by_attr["math"].stereotyped == "The woman does math."
    assert by_attr["math"].provenance["reoriented_from"] == right.id
    assert by_attr["poetry"].stereotyped == "The man writes poetry."


def test_unequal_groups_fall_back_to_all_counterparts(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([TestSentence("The man does math.", "man", "math", template="The [T] does math.")])
    spec = _spec(group2="woman, she")
    got = retrieve_pairs(store, spec)
    assert got.pairing == "all"
    assert sorted(p.anti_stereotyped for p in got.pairs) == ["The she does math.", "The woman does math."]
    got_all = retrieve_pairs(store, _spec(), pairing="all")
    assert got_all.built == 3


def test_stored_pair_and_built_pair_are_not_duplicated(tmp_path):
    store = DatasetStore(tmp_path)
    store.add([TestSentence("The man is good at math.", "man", "math", template="The [T] is good at math.")],
              [SentencePair("The man is good at math.", "The woman is good at math.", "math", "man", "woman")])
    got = retrieve_pairs(store, _spec())
    assert len(got.pairs) == 1 and got.stored == 1 and got.built == 0


def test_retrieve_images_counts_per_term(tmp_path):
    store = DatasetStore(tmp_path)
    store.add_image(png_bytes((1, 1, 1)), image_term="Nurse")
    store.add_image(png_bytes((2, 2, 2)), image_term="nurse")
    store.add_image(png_bytes((3, 3, 3)), image_term="social  worker")
    store.add_image(png_bytes((4, 4, 4)), image_term="male nurse")
    got = retrieve_images(store, ["nurse", "social worker", "doctor"])
    assert got.per_term == {"nurse": 2, "social worker": 1, "doctor": 0}
    assert len(got.images) == 3
    assert got.thin(1) == [("doctor", 0)]


@pytest.mark.parametrize("seed", [1, 2])
def test_pairs_orientation_matches_naive_rule(tmp_path, seed):
    rng = random.Random(seed)
    spec = _spec()
    store = DatasetStore(tmp_path)
    sents = []
    for _ in range(60):
        g = rng.choice(spec.group_terms)
        a = rng.choice(spec.attribute_terms)
        tpl = rng.choice(["The [T] likes {a}.", "[T] studies {a} daily.", "Yesterday the [T] chose {a}."])
        tpl = tpl.format(a=a)
        sents.append(TestSentence(tpl.replace("[T]", g), g, a, template=tpl))
    store.add(sents)
    got = retrieve_pairs(store, spec)
    for p in got.pairs:
        side = spec.attribute_side(p.attribute_term)
        assert spec.group_of(p.group_term_stereotyped) == side  # group k + list k is stereotyped
        assert spec.group_of(p.group_term_anti) == 3 - side
        assert contains_term(p.stereotyped, p.group_term_stereotyped)
        assert contains_term(p.anti_stereotyped, p.group_term_anti)
        assert p.stereotyped.lower() == p.template.replace("[T]", p.group_term_stereotyped).lower()


def test_real_biastestgpt_sentences_retrieved_for_core_specs(shared_data, tmp_path):
    from biastest.store.importers import read_biastestgpt_sentences

    store = DatasetStore(tmp_path)
    read_biastestgpt_sentences(shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_sentences.csv").store_into(store)
    specs = [s for s in BiasSpec.load_many(shared_data / "biastestgpt" / "bias_specs_with_glove_and_thesaurus.json")
             if s.is_testable]
    assert len(specs) >= 10
    total = 0
    for spec in specs:
        got = retrieve_sentences(store, spec)
        naive, excluded = _naive(store, spec)
        assert {m.sentence.id: (m.group_term, m.attribute_term) for m in got.matches} == naive, spec.name
        assert got.excluded == excluded
        pairs = retrieve_pairs(store, spec, sentences=got)
        for p in pairs.pairs:
            assert spec.group_of(p.group_term_stereotyped) == spec.attribute_side(p.attribute_term)
        total += len(got.matches)
    assert total > 500


def test_term_rows_within_a_mask(tmp_path):
    view = _random_store(tmp_path, seed=5).view("sentences")
    mask = np.random.default_rng(0).random(view.num_rows) < 0.5
    for term in ("man", "social worker", "MATH", "nurse aide"):
        rows = view.term_rows(term)
        assert len(rows) > 0, term
        assert view.term_rows(term, within=mask).tolist() == rows[mask[rows]].tolist(), term
    with pytest.raises(ValueError, match="within has 3 entries"):
        view.term_rows("man", within=np.ones(3, dtype=bool))
