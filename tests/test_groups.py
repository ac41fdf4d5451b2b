"""Several protected groups: Manzini group specs, MAC per group against naive loops, two-group tests refusing more."""

from __future__ import annotations

import json

import pytest

from biastest.errors import SpecError
from biastest.measures import weat as weat_measure
from biastest.measures.weat.result import MACResult
from biastest.spec import MSG_GROUPS_ATTRIBUTES_MISMATCH, MSG_TERM_IN_BOTH_GROUPS, MSG_TWO_GROUPS_ONLY, BiasSpec
from biastest.specs import get_spec, list_specs
from tests.embeddings_helpers import glove_vec, naive_mac

RELIGION = "Manzini 2019: Jewish vs Christian vs Muslim terms, religious stereotypes"
RACE = "Manzini 2019: Black vs Caucasian vs Asian terms, racial stereotypes"
GENDER = "Manzini 2019: Male vs female terms, gender role stereotypes"


def test_manzini_group_specs_are_in_the_library_with_their_words():
    assert list_specs("groups") == [RELIGION, RACE, GENDER]
    rel = get_spec(RELIGION)
    assert [n for n, _ in rel.social_groups] == ["Jewish terms", "Christian terms", "Muslim terms"]
    assert rel.stereotype_of() == {"Jewish terms": "Jewish stereotypes", "Christian terms": "Christian stereotypes",
                                   "Muslim terms": "Muslim stereotypes"}
    # Manzini's religion vocabulary (definite sets, analogy templates), as the Bayesian paper's data files use it
    assert dict(rel.social_groups)["Muslim terms"] == ("islam", "muslim", "mosque", "quran", "imam")
    assert dict(rel.attributes)["Jewish stereotypes"] == ("greedy", "cheap", "hairy", "liberal")
    assert dict(rel.attributes)["Christian stereotypes"] == ("critical", "conservative", "familial")
    assert dict(rel.attributes)["Muslim stereotypes"] == ("violent", "terrorist", "dirty", "uneducated")
    race = get_spec(RACE)
    assert race.n_groups == 3 and dict(race.attributes)["Black stereotypes"][3] == "criminal"
    gender = get_spec(GENDER)
    assert gender.n_groups == 2 and gender.is_testable and len(gender.attributes1) == 12
    for name in (RELIGION, RACE, GENDER):
        spec = get_spec(name)
        assert spec.is_group_spec and "Manzini" in spec.source and "MIT" in spec.source
        assert BiasSpec.from_json(spec.to_json()) == spec  # round-trips


def test_group_spec_checks_roles_across_every_list():
    groups = {"A": ["a1", "a2"], "B": ["b1"], "C": ["c1"]}
    attrs = {"x": ["x1"], "y": ["y1"], "z": ["z1"]}
    assert BiasSpec.from_dict({"name": "t", "social_groups": groups, "attributes": attrs}).check_group_spec()
    with pytest.raises(SpecError) as e:
        BiasSpec.from_dict({"name": "t", "social_groups": {**groups, "C": ["a2"]}, "attributes": attrs})
    assert e.value.message == MSG_TERM_IN_BOTH_GROUPS.format(term="a2", list1="A", list2="C")
    spec = BiasSpec.from_dict({"name": "t", "social_groups": groups, "attributes": {"x": ["x1"], "y": ["y1"]}})
    with pytest.raises(SpecError) as e:
        spec.check_group_spec()
    assert e.value.message == MSG_GROUPS_ATTRIBUTES_MISMATCH.format(name="t", n_groups=3, groups="A, B, C",
                                                                   n_attributes=2, attributes="x, y")


def test_weat_and_the_stereotype_score_refuse_three_groups_in_words():
    rel = get_spec(RELIGION)
    names = "Jewish terms, Christian terms, Muslim terms"
    for test in ("WEAT", "The stereotype score"):
        with pytest.raises(SpecError) as e:
            rel.check_two_groups(test)
        assert e.value.message == MSG_TWO_GROUPS_ONLY.format(test=test, name=RELIGION, count=3, names=names)
    with pytest.raises(SpecError) as e:
        weat_measure.run(weat_measure.WEATOptions(), weat_measure.WEATItems(spec=rel))
    assert e.value.message == MSG_TWO_GROUPS_ONLY.format(test="WEAT", name=RELIGION, count=3, names=names)
    from biastest.measures import stereotype

    with pytest.raises(SpecError) as e:  # refused before any model loads or pair is read
        options = stereotype.StereotypeOptions.parse(model_id="no-such-model", method="causal-sum", seed=1)
        stereotype.MEASURE.run(options, stereotype.StereotypeItems((), rel))
    assert e.value.message == MSG_TWO_GROUPS_ONLY.format(test="The stereotype score", name=RELIGION, count=3,
                                                         names=names)
    assert get_spec(GENDER).check_two_groups("WEAT").is_testable


def _naive_groups(spec):
    """MAC per group and class, and own − others per group, by loops over GloVe vectors."""
    classes = [list(t) for _, t in spec.attributes]
    out = {}
    for k, (g, words) in enumerate(spec.social_groups):
        words = [w for w in words if glove_vec(w) is not None]
        _, table = naive_mac([glove_vec(w) for w in words],
                             [[glove_vec(a) for a in c if glove_vec(a) is not None] for c in classes])
        per_class = [sum(row[j] for row in table) / len(table) for j in range(len(classes))]
        others = [per_class[j] for j in range(len(classes)) if j != k]
        per_word = {w: table[i][k] - sum(table[i][j] for j in range(len(classes)) if j != k) / (len(classes) - 1)
                    for i, w in enumerate(words)}
        out[g] = (per_class, per_class[k] - sum(others) / len(others), per_word)
    return out


@pytest.mark.parametrize("name", [RELIGION, RACE, GENDER])
def test_mac_per_group_equals_naive_loops_on_glove(name):
    spec = get_spec(name)
    r = weat_measure.run_mac(weat_measure.MACOptions(), weat_measure.MACItems(spec=spec))
    naive = _naive_groups(spec)
    classes = [n for n, _ in spec.attributes]
    assert list(r.groups) == [g for g, _ in spec.social_groups]
    assert len(r.per_group) == spec.n_groups * len(classes)
    for row in r.per_group:
        j = classes.index(row["class"])
        assert row["mean_distance"] == pytest.approx(naive[row["group"]][0][j], abs=1e-9)
        assert row["connection"] == ("associated" if spec.stereotype_of()[row["group"]] == row["class"]
                                     else "different")
    for c in r.group_contrasts:
        assert c["contrast"] == pytest.approx(naive[c["group"]][1], abs=1e-9)
        assert c["contrast"] == pytest.approx(c["own_distance"] - c["others_distance"], abs=1e-12)
    for w in r.per_word:
        assert w["contrast"] == pytest.approx(naive[w["group"]][2][w["word"]], abs=1e-9)
    # the overall MAC is still Manzini's mean of means over every word and class
    all_words = [t for _, ts in spec.social_groups for t in ts]
    value, _ = naive_mac([glove_vec(t) for t in all_words], [[glove_vec(a) for a in ts] for _, ts in spec.attributes])
    assert r.mac == pytest.approx(value, abs=1e-9)


def test_mac_per_group_recovers_a_planted_direction():
    """Toy vectors: each group's words point at its own stereotype, so every contrast is negative, by construction."""
    import numpy as np

    from biastest.measures.weat.score import mac

    rng = np.random.default_rng(5)
    axes = np.eye(3)
    words, vecs, groups, classes, cwords = [], [], {}, {}, {}
    for k, g in enumerate("ABC"):
        groups[g] = [f"{g}{i}" for i in range(4)]
        for w in groups[g]:
            words.append(w)
            vecs.append(axes[k] + rng.normal(0, 0.2, 3))
        classes[f"s{g}"] = np.array([axes[k] + rng.normal(0, 0.2, 3) for _ in range(3)])
        cwords[f"s{g}"] = [f"s{g}{i}" for i in range(3)]
    r = mac(np.array(vecs), classes, words=words, class_words=cwords, groups=groups,
            stereotypes={g: f"s{g}" for g in "ABC"})
    assert all(c["contrast"] < -0.5 for c in r.group_contrasts)
    assert all(w["contrast"] < 0 for w in r.per_word)


def test_mac_results_written_before_groups_still_load():
    from pathlib import Path

    old = Path(__file__).parent / "data" / "results" / "weat-0.1.0-mac.json"
    doc = json.loads(old.read_text())
    assert "groups" not in doc
    r = MACResult.load_json(old)
    assert r.groups == {} and r.group_contrasts == () and r.mac == doc["mac"]


# --------------------------------------------------------------------------- the app, the command line, the audit
def test_app_runs_mac_per_group_for_a_three_group_library_spec(tmp_path):
    """Step 1 keeps all three groups of a library group spec; step 3 shows MAC per group and says why no WEAT."""
    import csv

    from biastest.report.text import esc
    from biastest.ui import psychophysics as app
    from biastest.ui.psychophysics.spec import MSG_SPEC_OK_GROUPS

    filled = app.fill_weat(RELIGION)
    assert filled[:2] == ("judaism, jew, synagogue, torah, rabbi", "christianity, christian, church, bible, priest")
    values = [app.KIND_WEAT, app.CUSTOM, "", "", "", "", RELIGION, *filled, "glove-6b-50d", None, ""]
    session, message, reports, _ = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert session["spec"] == get_spec(RELIGION)
    assert message.startswith("✅ Specification is valid: 3 groups") and "Muslim terms → Muslim stereotypes" in message
    assert MSG_SPEC_OK_GROUPS.split("{")[0] in message
    assert list(reports) == ["Jewish terms", "Christian terms", "Muslim terms", "Jewish stereotypes",
                             "Christian stereotypes", "Muslim stereotypes"]
    edited = app.weat_spec_from_inputs(RELIGION, filled[0] + ", hebrew", *filled[1:])
    assert edited.n_groups == 2 and edited.name.endswith("(edited)")  # editing keeps the two groups shown
    run = app.run_core(session, app.REPLICATES_NONE, 0.05, None, "norm", False, 0, 1000, 1)
    assert run["weat"] is None and run["mac"].group_contrasts
    view = app.results_view(run)
    why = MSG_TWO_GROUPS_ONLY.format(test="WEAT", name=RELIGION, count=3,
                                     names="Jewish terms, Christian terms, Muslim terms")
    assert esc(why) in view[0]
    table = view[10].set_index("quantity")["value"]
    for c in run["mac"].group_contrasts:
        assert table[f"MAC contrast of '{c['group']}': own − other groups' stereotypes"] == pytest.approx(
            c["contrast"], abs=1e-6)
    words = view[12]
    assert set(words["group"]) == {"Jewish terms", "Christian terms", "Muslim terms"}
    rows = list(csv.DictReader(open(view[-2]["value"], encoding="utf-8-sig")))
    assert {r["row_type"] for r in rows} == {"summary", "word"}
    assert sum("MAC contrast of" in r["measure"] for r in rows if r["row_type"] == "summary") == 3
    doc = json.loads(open(view[-1]["value"], encoding="utf-8").read())
    assert doc["test"] == "mac" and len(doc["mac"]["group_contrasts"]) == 3


def test_cli_run_weat_on_three_groups_gives_mac_per_group(tmp_path):
    from biastest.cli import main

    out = tmp_path / "mac.json"
    assert main(["run", "weat", RELIGION, "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "mac" and [c["group"] for c in doc["result"]["group_contrasts"]] == [
        "Jewish terms", "Christian terms", "Muslim terms"]


def test_audit_grid_skips_three_group_specs_with_the_reason(tmp_path):
    from biastest.audit.grid import parse_grid
    from biastest.audit.plan import MSG_SKIP_TWO_GROUPS, make_plan

    grid = parse_grid({"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}],
                       "specs": [RELIGION, GENDER], "methods": ["weat"], "seeds": [1]}, base=tmp_path)
    plan = make_plan(grid, tmp_path / "out")
    assert [(c.spec.name, c.method) for c in plan.cells] == [(GENDER, "weat")]
    assert plan.skipped == [{"model": "glove", "spec": RELIGION, "method": "weat",
                             "reason": MSG_SKIP_TWO_GROUPS.format(method="weat", spec=RELIGION, count=3)}]


def test_cli_three_groups_without_a_list_per_group_gives_mac_over_all_lists(tmp_path, capsys):
    from biastest.cli import main
    from biastest.measures.weat.headless import MSG_NO_GROUP_CONTRASTS

    spec = {"name": "three groups, two lists", "social_groups": {"a": ["he"], "b": ["she"], "c": ["they"]},
            "attributes": {"x": ["doctor"], "y": ["nurse"]}}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    out = tmp_path / "mac.json"
    assert main(["run", "weat", str(path), "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "mac" and "group_contrasts" not in doc["result"]
    assert doc["result"]["words"] == ["he", "she", "they"] and list(doc["result"]["classes"]) == ["x", "y"]
    assert MSG_NO_GROUP_CONTRASTS in capsys.readouterr().out  # the headline's words when no group has its own list
