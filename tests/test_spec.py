"""BiasSpec validation, round-trip, term matching, pairing and the library."""

from __future__ import annotations

import json

import pytest

from biastest import spec as S
from biastest.errors import SpecError
from biastest.spec import BiasSpec, TwoAFCSpec, contains_term, counterpart_pairs, find_terms, term_combinations
from biastest.specs import MSG_DID_YOU_MEAN, MSG_UNKNOWN_SPEC, get_document, get_spec, get_twoafc_spec, list_specs


def make(**kw):
    args = dict(
        group1="man, father", group2="woman, mother", stereotype1="math, science", antistereotype1="art, poetry"
    )
    args.update(kw)
    return BiasSpec.from_terms(**args)


# ------------------------------------------------------------ validation
@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"group1": ""}, S.MSG_EMPTY_LIST.format(list_name="Social group 1")),
        ({"antistereotype1": []}, S.MSG_EMPTY_LIST.format(list_name="Anti-stereotype for group 1")),
        (
            {"group2": "woman, man"},
            S.MSG_TERM_IN_BOTH_GROUPS.format(term="man", list1="Social group 1", list2="Social group 2"),
        ),
        (
            {"antistereotype1": "art, Math"},
            S.MSG_TERM_IN_BOTH_ATTRIBUTES.format(
                term="math", list1="Stereotype for group 1", list2="Anti-stereotype for group 1"
            ),
        ),
        ({"group1": "man, Man"}, S.MSG_DUPLICATE_TERM.format(term="Man", list_name="Social group 1")),
        ({"group1": "man,, father"}, S.MSG_EMPTY_TERM.format(list_name="Social group 1")),
        (
            {"stereotype1": ["math", 3]},
            S.MSG_NOT_TEXT.format(list_name="Stereotype for group 1", value=3, type_name="int"),
        ),
        (
            {"group1": [f"man{i}" for i in range(S.MAX_TERMS_PER_LIST + 1)]},
            S.MSG_TOO_MANY_TERMS.format(
                list_name="Social group 1", count=S.MAX_TERMS_PER_LIST + 1, limit=S.MAX_TERMS_PER_LIST
            ),
        ),
        (
            {"group1": ["x" * 61]},
            S.MSG_TERM_TOO_LONG.format(start="x" * 30, list_name="Social group 1", length=61, limit=S.MAX_TERM_LENGTH),
        ),
        (  # a 300-character term is quoted by its start only (it was shown whole, twice, inline and in a toast)
            {"group1": ["doctor " * 43]},
            S.MSG_TERM_TOO_LONG.format(start=("doctor " * 43)[:30], list_name="Social group 1", length=300,
                                       limit=S.MAX_TERM_LENGTH),
        ),
        (
            {"stereotype1": "math, man"},
            S.MSG_TERM_GROUP_AND_ATTRIBUTE.format(
                term="man", group_list="Social group 1", attribute_list="Stereotype for group 1"
            ),
        ),
        ({"name": ""}, S.MSG_BAD_NAME.format(value="")),
        ({"templates": ["no slot here"]}, S.MSG_BAD_TEMPLATE.format(template="no slot here")),
    ],
)
def test_bad_specs_get_clear_messages(kw, expected):
    with pytest.raises(SpecError) as err:
        make(**kw)
    assert err.value.message == expected


def test_good_spec_accessors_and_trailing_comma():
    s = make(group1="man, father,")
    assert s.group1 == ("man", "father")
    assert s.attributes1 == ("math", "science")
    assert s.group_of("MAN") == 1 and s.group_of("mother") == 2 and s.group_of("cat") is None
    assert s.attribute_side("poetry") == 2
    assert s.is_testable and s.check_testable() is s


def test_spec_is_frozen_and_hashable():
    s = make()
    with pytest.raises(AttributeError):
        s.name = "x"  # type: ignore[misc]
    assert hash(s) == hash(make())
    assert s.fingerprint() == make().fingerprint() != make(group1="boy").fingerprint()


def test_third_attribute_list_is_refused_not_ignored():
    d = {
        "name": "three",
        "social_groups": {"A": ["man"], "B": ["woman"]},
        "attributes": {"x": ["math"], "y": ["art"], "z": ["cooking"]},
    }
    s = BiasSpec.from_dict(d)
    assert not s.is_testable
    with pytest.raises(SpecError) as err:
        s.check_testable()
    assert err.value.message == S.MSG_THIRD_ATTRIBUTE_LIST.format(count=3, names="x, y, z")
    with pytest.raises(SpecError):
        counterpart_pairs(s)
    picked = s.select(groups=["A", "B"], attributes=["x", "z"])
    assert picked.attributes2 == ("cooking",)
    with pytest.raises(SpecError) as err:
        s.select(groups=["A", "C"], attributes=["x", "y"])
    assert err.value.message == S.MSG_UNKNOWN_LIST.format(kind="social group", name="C", available="A, B")


def test_bad_documents():
    with pytest.raises(SpecError) as err:
        BiasSpec.from_json("{not json")
    assert err.value.message.startswith("The file is not valid JSON")
    with pytest.raises(SpecError) as err:
        BiasSpec.from_dict({"name": "x", "social_groups": {}})
    assert err.value.message == S.MSG_BAD_DOCUMENT.format(problem="the field 'attributes' is missing")
    with pytest.raises(SpecError) as err:
        BiasSpec.from_dict({"name": "x", "social_groups": {"a": ["man"]}, "attributes": {"b": ["x"], "c": ["y"]}})
    assert err.value.message == S.MSG_TOO_FEW_LISTS.format(kind="social groups", count=1)


# ------------------------------------------------------------ round trip
def test_all_15_original_specs_round_trip(shared_data):
    path = shared_data / "biastestgpt" / "bias_specs_with_glove_and_thesaurus.json"
    originals = json.loads(path.read_text())
    assert len(originals) == 15
    for d in originals:
        s = BiasSpec.from_dict(d)
        out = s.to_dict()
        assert out == d
        assert list(out) == list(d)
        assert list(out["social_groups"]) == list(d["social_groups"])
        assert list(out["attributes"]) == list(d["attributes"])
        assert BiasSpec.from_json(s.to_json()) == s
    assert [s.name for s in BiasSpec.load_many(path)] == [d["name"] for d in originals]


def test_library_ships_its_own_copy_of_the_originals(shared_data):
    originals = json.loads((shared_data / "biastestgpt" / "bias_specs_with_glove_and_thesaurus.json").read_text())
    for d in originals:
        assert get_document(d["name"]).to_dict() == d


# ------------------------------------------------------------ matching
@pytest.mark.parametrize(
    ("text", "term", "hit"),
    [
        ("The cat sat.", "he", False),
        ("Then he left.", "he", True),
        ("HE left.", "he", True),
        ("He's a nurse.", "he", True),
        ("(he) is here", "he", True),
        ("She is a hero.", "he", False),
        ("A nurse practitioner came.", "nurse practitioner", True),
        ("A nurse  practitioner came.", "nurse practitioner", True),
        ("A nurse came, practitioner later.", "nurse practitioner", False),
        ("She studies C++ daily.", "C++", True),
        ("The dr. came", "dr.", True),
        ("The drx came", "dr.", False),
        ("mothers", "mother", False),
        ("mother-in-law", "mother", True),
    ],
)
def test_term_matching(text, term, hit):
    assert contains_term(text, term) is hit


def test_find_terms_and_alternation_agree():
    text = "The man and his mother talked about nursing."
    terms = ["he", "man", "mother", "nurse", "his"]
    assert find_terms(text, terms) == ["man", "mother", "his"]
    assert sorted(m.group(0).lower() for m in S.terms_regex(terms).finditer(text)) == ["his", "man", "mother"]


# ------------------------------------------------------------ pairing
def test_pairing_is_deterministic_and_recorded():
    s = make(group1="man, father, boy", group2="woman, mother, girl")
    pos = counterpart_pairs(s)
    assert pos.pairs == (("man", "woman"), ("father", "mother"), ("boy", "girl")) and pos.mode == "positional"
    assert len(counterpart_pairs(s, mode="all").pairs) == 9
    a = counterpart_pairs(s, mode="sample", n=4, seed=7)
    b = counterpart_pairs(s, mode="sample", n=4, seed=7)
    assert a == b and a.seed == 7 and len(a.pairs) == 4
    assert a.to_dict()["seed"] == 7
    with pytest.raises(SpecError) as err:
        counterpart_pairs(s, mode="sample", n=4)
    assert err.value.message == S.MSG_SAMPLE_NEEDS_SEED
    uneq = make(group1="man, father", group2="woman")
    with pytest.raises(SpecError) as err:
        counterpart_pairs(uneq)
    assert err.value.message == S.MSG_UNEQUAL_POSITIONAL.format(
        list1="Social group 1", n1=2, list2="Social group 2", n2=1
    )
    combos = term_combinations(s)
    assert len(combos.pairs) == 6 * 4
    assert term_combinations(s, n=5, seed=1) == term_combinations(s, n=5, seed=1)
    assert term_combinations(s, n=5, seed=1) != term_combinations(s, n=5, seed=2)


# ------------------------------------------------------------ library
MATH_ARTS = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"


def test_library_lists_and_resolves():
    bias = list_specs("bias")
    assert MATH_ARTS in bias
    assert len(list_specs("weat")) == 10
    assert len(list_specs("twoafc")) == 2
    for name in list_specs(("bias", "weat")):
        assert get_spec(name).is_testable and get_spec(name).name == name
    # the original names stay valid (saved references, scripts, the CLI), any case
    assert get_spec("math_arts_vs_male_female") == get_spec("Math_Arts_vs_Male_Female") == get_spec(MATH_ARTS)
    assert get_spec(MATH_ARTS).name == MATH_ARTS
    sel = get_spec("Professions_vs_Gender (male vs female professions)")
    assert sel.attribute1_name == "male_professions" and sel.attribute2_name == "female_professions"
    assert sel.name == "BiasTestGPT: Male vs female terms, male vs female professions"
    occ = get_twoafc_spec("Occupations vs gender (Liang & Acuna 2020)")
    assert len(occ.cue_pairs) == 8 and occ.cue_pairs[0] == ("woman", "man")


def test_library_did_you_mean_and_originals_with_extra_lists():
    with pytest.raises(SpecError) as err:
        get_spec("Math_Art_vs_Male_Femal")
    assert err.value.message == MSG_UNKNOWN_SPEC.format(
        name="Math_Art_vs_Male_Femal", hint=MSG_DID_YOU_MEAN.format(suggestion=MATH_ARTS)
    )
    with pytest.raises(SpecError) as err:
        get_spec("Professions_vs_Gender")
    assert "choose one of its named selections" in err.value.message


def test_library_names_are_readable_in_one_style_and_say_how_they_relate_to_weat():
    """Issue 15: "Math_Arts_vs_Male_Female" beside "WEAT 7: Math vs arts, male vs female terms"."""
    import re

    from biastest.specs import aliases

    names = list_specs(("bias", "weat"))
    assert len(set(names)) == len(names)
    style = re.compile(r"^(BiasTestGPT|WEAT \d+): [A-Z][^_,]* vs [^_,]*, [^_]+$")  # source: groups, attributes
    assert [n for n in names if not style.match(n)] == []
    assert set(aliases().values()) == set(list_specs("bias"))  # every BiasTestGPT entry has its earlier name
    weat = {n.split(":")[0]: get_spec(n) for n in list_specs("weat")}

    def lists(spec):
        return [set(spec.group1), set(spec.group2), set(spec.attributes1), set(spec.attributes2)]

    marked = 0
    for name in list_specs("bias"):
        spec = get_spec(name)
        if m := re.search(r"\(same words as (WEAT \d+)\)$", name):
            assert lists(spec) == lists(weat[m[1]]), name
        elif m := re.search(r"\((WEAT \d+)'s words, groups and attributes swapped\)$", name):
            w = lists(weat[m[1]])
            assert lists(spec) == w[2:] + w[:2], name
        elif m := re.search(r"\((WEAT \d+)'s words, '(.+)' for '(.+)'\)$", name):
            swapped = [{m[2] if t == m[3] else t for t in terms} for terms in lists(weat[m[1]])]
            assert lists(spec) == swapped, name
        elif m := re.search(r"\(like (WEAT \d+), (\d+) names each\)$", name):
            assert len(spec.group1) == len(spec.group2) == int(m[2]), name
            assert lists(spec)[2] == lists(weat[m[1]])[2], name  # the same pleasant words
        else:
            continue
        marked += 1
    assert marked == 13  # 3 same, 2 swapped, 3 one word apart, 5 like a WEAT test


def test_twoafc_spec_validation():
    t = TwoAFCSpec(name="x", targets=("nurse",), cue_pairs=("woman/man",))
    assert t.cue_pairs == (("woman", "man"),)
    assert TwoAFCSpec.from_dict(t.to_dict()) == t
    with pytest.raises(SpecError) as err:
        TwoAFCSpec(name="x", targets=("nurse",), cue_pairs=(("man", "man"),))
    assert err.value.message == S.MSG_CUE_PAIR_SHAPE.format(value=("man", "man"))
    with pytest.raises(SpecError) as err:
        TwoAFCSpec(name="x", targets=("man",), cue_pairs=(("woman", "man"),))
    assert err.value.message == S.MSG_CUE_IN_TARGETS.format(term="man")


def test_image_specs_are_picture_terms_and_testable():
    """The /vqa library (issue 28 item 7): picture specifications first, each testable, no pronoun as a picture."""
    from biastest.ui.spec_step import build_spec_inputs  # noqa: F401  (the app's step 1 reads the same list)

    images = list_specs("image")
    assert len(images) == 5 and not set(images) & set(list_specs(("bias", "weat", "twoafc")))
    pronouns = {"he", "she", "him", "her", "his", "hers", "they", "them"}
    for name in images:
        spec = get_spec(name)
        assert spec.is_testable and spec.name == name
        assert not pronouns & {t.casefold() for t in (*spec.group1, *spec.group2)}
    occ = get_spec("Pictures: occupations dominated by men vs by women, man vs woman")
    assert occ.attributes1 == ("man",) and "nurse" in occ.group2
