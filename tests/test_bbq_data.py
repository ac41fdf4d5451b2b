"""The BBQ importer on the published files (``../shared/data/bbq``) and on hostile ones.

On the real data: every category's target is found for every item except the 16 Gender_identity items the
official analysis drops (listed with their ids); the official reading (``additional_metadata.csv``'s
``target_loc``) and the reading of the JSONL alone agree on every item but 68 documented ones (an "African"
paired with a "Black" or "African American" person in Race_x_gender and Race_x_SES). Counts per category are
asserted below.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from biastest.errors import DataError
from biastest.measures.bbq.data import (
    CATEGORIES,
    DROP_NO_TARGET,
    MSG_BAD_LINE,
    MSG_BAD_METADATA,
    MSG_DUPLICATE_ID,
    MSG_NO_CATEGORY_FILE,
    MSG_NO_FOLDER,
    ROLE_OTHER,
    ROLE_TARGET,
    ROLE_UNKNOWN,
    BBQItem,
    load_bbq,
)

#: Lines read, items with a target, items dropped, and items where the JSONL's reading differs from the official
#: one — per category, on the published files.
EXPECTED = {
    "Age": (3680, 3680, 0, 0),
    "Disability_status": (1556, 1556, 0, 0),
    "Gender_identity": (5672, 5656, 16, 0),
    "Nationality": (3080, 3080, 0, 0),
    "Physical_appearance": (1576, 1576, 0, 0),
    "Race_ethnicity": (6880, 6880, 0, 0),
    "Race_x_SES": (11160, 11160, 0, 16),
    "Race_x_gender": (15960, 15960, 0, 52),
    "Religion": (1200, 1200, 0, 0),
    "SES": (6864, 6864, 0, 0),
    "Sexual_orientation": (864, 864, 0, 0),
}
#: The 16 Gender_identity items with no single target (target_loc NA in the official metadata).
NO_TARGET_IDS = [284, 285, 286, 287, 300, 301, 302, 303, 304, 305, 306, 307, 320, 321, 322, 323]


@pytest.fixture(scope="module")
def bbq(shared_data):
    return load_bbq(shared_data / "bbq")


def test_every_target_is_found_except_the_documented_ones(bbq) -> None:
    got = {c: (v["n_items"], v["n_target"], v["n_dropped"], len(v["disagree"])) for c, v in bbq.checks.items()}
    print("per category (lines, targets found, dropped, readings differ):", got)
    assert got == EXPECTED
    assert sum(v[0] for v in EXPECTED.values()) == 58_492 and len(bbq.items) == 58_492 - 16
    assert all(v["n_official"] == v["n_target"] for v in bbq.checks.values()) and bbq.metadata
    assert sorted(d.example_id for d in bbq.dropped) == NO_TARGET_IDS
    assert {(d.category, d.reason) for d in bbq.dropped} == {("Gender_identity", DROP_NO_TARGET)}
    assert json.loads(json.dumps(bbq.provenance()))["dropped"][0]["example_id"] in NO_TARGET_IDS


def test_the_documented_disagreements_pair_an_african_with_a_black_or_african_american_person(bbq) -> None:
    by_key = {it.key: it for it in bbq.items}
    for category in ("Race_x_gender", "Race_x_SES"):
        for eid in bbq.checks[category]["disagree"]:
            item = by_key[f"{category}:{eid}"]
            groups = {g.split("-")[-1] for g, r in zip(item.groups, item.roles, strict=True) if r != ROLE_UNKNOWN}
            assert groups in ({"African", "Black"}, {"African", "African American"}), (category, eid, item.groups)
            assert item.groups[item.target].endswith("African")  # the official reading


def test_roles_labels_and_the_biased_answer_are_consistent(bbq) -> None:
    for it in bbq.items:
        assert sorted(it.roles) == sorted((ROLE_TARGET, ROLE_OTHER, ROLE_UNKNOWN))
        if it.condition == "ambig":
            assert it.label == it.unknown
        else:
            assert it.label != it.unknown
        assert it.biased == (it.target if it.polarity == "neg" else it.other)
        assert it.template == f"{it.category}/{it.question_index}"
    # the four versions of a question are balanced: polarity × condition
    counts = Counter((it.polarity, it.condition) for it in bbq.items)
    assert max(counts.values()) - min(counts.values()) <= 16


def test_the_two_readings_give_the_same_roles_without_the_metadata_file(shared_data, bbq) -> None:
    alone = load_bbq(shared_data / "bbq", [c for c in CATEGORIES if not c.startswith("Race_x")], metadata=False)
    official = {it.key: it.roles for it in bbq.items}
    assert all(it.target_from == "answer_info" for it in alone.items)
    assert all(official[it.key] == it.roles for it in alone.items)
    assert len(alone.items) == sum(EXPECTED[c][1] for c in CATEGORIES if not c.startswith("Race_x"))
    # the second attribute of Race_x_* is only in the metadata file: without it, no target (said, not guessed)
    race = load_bbq(shared_data / "bbq", ["Race_x_SES"], metadata=False)
    assert not race.items and len(race.dropped) == 11_160 and "needs additional_metadata.csv" in race.dropped[0].reason


def test_quirks_empty_answer_info_nationality_and_windows_line_endings(shared_data, bbq) -> None:
    raw = (shared_data / "bbq" / "Race_x_gender.jsonl").read_text(encoding="utf-8").splitlines()
    empty = [json.loads(line) for line in raw if '["", ""]' in line]
    assert len(empty) == 344
    by_key = {it.key: it for it in bbq.items}
    for d in empty:
        item = by_key[f"Race_x_gender:{d['example_id']}"]
        i = next(k for k in range(3) if d["answer_info"][f"ans{k}"] == ["", ""])
        assert item.groups[i] == "F-Latino"  # read from "The Latina woman"
    regions = {"Europe", "AsiaPacific", "Africa", "LatinSouthAmerica", "MiddleEast", "ArabStates", "NorthAmerica"}
    nationality = [it for it in bbq.items if it.category == "Nationality"]
    assert not {g for it in nationality for g in it.groups} & regions  # the nationality, never the region
    first = nationality[0]  # British (stereotyped) and Japanese friends
    assert (first.groups[first.target], first.groups[first.other]) == ("British", "Japanese")
    assert b"\r\n" in (shared_data / "bbq" / "Religion.jsonl").read_bytes()[:5000]
    assert bbq.checks["Religion"]["n_items"] == 1200
    assert all("\r" not in it.context + it.answers[2] for it in bbq.items if it.category == "Religion")


def test_an_item_round_trips_through_its_dict(bbq) -> None:
    it = bbq.items[123]
    assert BBQItem.from_dict(json.loads(json.dumps(it.as_dict()))) == it


# --------------------------------------------------------------------------- hostile files
def _line(**over):
    d = {"example_id": 0, "question_index": "1", "question_polarity": "neg", "context_condition": "ambig",
         "category": "Age", "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["grandson", "nonOld"],
                                            "ans2": ["Unknown", "unknown"]},
         "additional_metadata": {"subcategory": "None", "stereotyped_groups": ["old"]},
         "context": "A grandson and a grandfather.", "question": "Who forgot?", "ans0": "The grandfather",
         "ans1": "The grandson", "ans2": "Unknown", "label": 2}
    d.update(over)
    return json.dumps(d)


def _folder(tmp_path, lines, name="Age.jsonl"):
    (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_a_small_folder_without_metadata_reads_from_answer_info(tmp_path) -> None:
    data = load_bbq(_folder(tmp_path, [_line(), _line(example_id=1, question_polarity="nonneg")]), ["Age"])
    a, b = data.items
    assert (a.target, a.other, a.unknown, a.biased) == (0, 1, 2, 0)
    assert (b.target, b.biased) == (0, 1) and a.target_from == "answer_info" and not data.metadata


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("{not json", 2, "not valid JSON"),
    (_line(example_id=-1), 2, "'example_id' must be a whole number ≥ 0"),
    (_line(label=3), 2, "'label' must be 0, 1 or 2"),
    (_line(context_condition="vague"), 2, "'context_condition' must be one of ambig, disambig"),
    (_line(category="Religion"), 2, "'category' is 'Religion', not 'Age'"),
    (_line(ans1=None), 2, "'ans1' must be a non-empty text"),
    (_line(answer_info={"ans0": ["x"]}), 2, "'answer_info.ans0' must be a list of two texts"),
    (_line(additional_metadata=[]), 2, "'additional_metadata' must be an object"),
    ("[1, 2]", 2, "not a JSON object"),
    ("[" * 100_000, 2, "longer than 50,000 characters"),
    ("[" * 20_000 + "]" * 20_000, 2, "not valid JSON"),
    (_line(label=0), 2, "an ambiguous context whose correct answer is not 'unknown'"),
])
def test_a_malformed_line_is_skipped_and_said_naming_the_file_and_the_line(tmp_path, text, line, problem) -> None:
    folder = _folder(tmp_path, [_line(example_id=9), text])
    data = load_bbq(folder, ["Age"])
    assert [i.example_id for i in data.items] == [9]  # the good line is read, the bad one left out
    assert data.checks["Age"]["n_skipped"] == 1
    assert data.checks["Age"]["skipped"] == [MSG_BAD_LINE.format(name="Age.jsonl", line=line, problem=problem)]


def test_duplicates_missing_files_and_bad_metadata_are_said(tmp_path) -> None:
    data = load_bbq(_folder(tmp_path, [_line(), _line()]), ["Age"])
    assert len(data.items) == 1 and data.checks["Age"]["skipped"] == [
        MSG_DUPLICATE_ID.format(name="Age.jsonl", line=2, example_id=0)]
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path / "nowhere")
    assert info.value.message == MSG_NO_FOLDER.format(path=tmp_path / "nowhere")
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path, ["SES"])
    assert info.value.message == MSG_NO_CATEGORY_FILE.format(path=tmp_path, name="SES.jsonl", category="SES")
    _folder(tmp_path, [_line()])
    (tmp_path / "additional_metadata.csv").write_text(
        "category,question_index,example_id,target_loc,Known_stereotyped_var2\nAge,1,zero,1,NA\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path, ["Age"])
    assert info.value.message == MSG_BAD_METADATA.format(
        name="additional_metadata.csv", line=2,
        problem="example_id and target_loc must be whole numbers (target_loc may be NA)")
    (tmp_path / "additional_metadata.csv").write_text(
        "category,question_index,example_id,target_loc,Known_stereotyped_var2\nAge,1,0,1,NA\nAge,1,0,0,NA\n",
        encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path, ["Age"])
    assert "appears twice with different values" in info.value.message
    (tmp_path / "additional_metadata.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path, ["Age"])
    assert info.value.message.startswith("The BBQ metadata file additional_metadata.csv, line 1: the header lacks")
    # the metadata file's NA target drops the item, listed
    (tmp_path / "additional_metadata.csv").write_text(
        "category,question_index,example_id,target_loc,Known_stereotyped_var2\nAge,1,0,NA,NA\n", encoding="utf-8")
    data = load_bbq(tmp_path, ["Age"])
    assert not data.items and data.dropped[0].example_id == 0 and data.dropped[0].reason == DROP_NO_TARGET


def test_a_file_that_is_not_utf8_is_said(tmp_path) -> None:
    (tmp_path / "Age.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError) as info:
        load_bbq(tmp_path, ["Age"])
    assert info.value.message.startswith("The BBQ file Age.jsonl, line 1: not UTF-8 text")
