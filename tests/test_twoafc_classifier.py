"""A text classifier's 2AFC on occupations: a planted rule tied to the BLS share of women is recovered per target and
in the correlation; a null classifier's correlation interval covers 0 at the nominal rate; the statistics equal a
naive re-count; a tiny real classifier's scores are a naive forward pass; labels, templates, ties and labour tables
are checked; the command line runs it (also as ``run twoafc --model-kind classifier``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.errors import DataError, ModelKindError, OptionError
from biastest.measures import get_measure
from biastest.measures.classifier_2afc.run import MSG_NO_POSITIVE_LABEL, MSG_UNKNOWN_LABEL
from biastest.measures.classifier_twoafc import (
    TwoAFCClassifierItems,
    TwoAFCClassifierOptions,
    TwoAFCClassifierResult,
    run_twoafc_classifier,
)
from biastest.measures.classifier_twoafc import report as rep
from biastest.measures.classifier_twoafc.templates import (
    MSG_BAD_OCCUPATION_TEMPLATE,
    fill,
    parse_occupation_templates,
    shipped_templates,
)
from biastest.measures.labour import MSG_NO_DECIDED, MSG_UNKNOWN_TABLE, labour_figure, load_labour_table
from biastest.spec import TwoAFCSpec
from tests.classifier_helpers import RuleClassifier, build_planted_classifier, naive_scores
from tests.twoafc_chat_helpers import BLS, OCCUPATIONS, small_spec


def _spec() -> TwoAFCSpec:
    """The 60 BLS occupations with the paper's 8 cue pairs."""
    return small_spec(n=60, pairs=8)


def _opts(**kw) -> TwoAFCClassifierOptions:
    return TwoAFCClassifierOptions.parse({"model_id": "m", "device": "cpu", "n_resamples": 300, **kw})


def test_a_planted_rule_is_recovered_per_target_and_in_the_correlation() -> None:
    model = RuleClassifier(seed=1)
    r = run_twoafc_classifier(_opts(seed=4), TwoAFCClassifierItems(_spec()), model=model)
    assert r.n_targets == 60 and r.n_comparisons == 60 * 8 * 4 and r.counts["unscored"] == 0 and model.calls == 1
    covered = sum(t.p_cue1_rate.low <= model.planted(t.target) <= t.p_cue1_rate.high for t in r.targets)
    boot = sum(t.p_cue1.low <= model.planted(t.target) <= t.p_cue1.high for t in r.targets)
    err = np.mean([abs(t.estimate - model.planted(t.target)) for t in r.targets])
    lab = r.labour
    print(f"planted rule: Wilson covers {covered}/60, cluster bootstrap {boot}/60, mean |error| {err:.1f} points; "
          f"r = {lab.pearson_r:.3f} ({lab.pearson_low:.3f}–{lab.pearson_high:.3f}), rho = {lab.spearman_rho:.3f}")
    assert covered >= 52 and boot >= 45 and err < 10
    assert lab.n == 60 and lab.table == "bls" and lab.pearson_low > 0.7 and lab.spearman_rho > 0.7
    # the female cue second: the same classifier reads mirrored, the correlation unchanged
    flipped = TwoAFCSpec(name="flipped", targets=_spec().targets, cue_pairs=tuple((b, a) for a, b in _spec().cue_pairs),
                         cue1_name="male", cue2_name="female")
    f = run_twoafc_classifier(_opts(seed=4, female_cue=2), TwoAFCClassifierItems(flipped), model=model)
    assert f.labour.pearson_r == pytest.approx(lab.pearson_r, abs=1e-9)
    assert f.target("nurse").estimate == pytest.approx(100 - r.target("nurse").estimate, abs=1e-9)
    # the JSON round-trips
    back = TwoAFCClassifierResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.labour.pearson_r == lab.pearson_r and back.target("nurse").counts == r.target("nurse").counts


def test_a_null_classifier_keeps_the_correlation_interval_at_its_nominal_rate() -> None:
    """40 null classifiers (sentence noise only): the 90 % interval of r excludes 0 in about 10 % of runs."""
    excluded = 0
    runs = 40
    for seed in range(runs):
        r = run_twoafc_classifier(_opts(seed=seed, n_resamples=200, confidence=0.9),
                                  TwoAFCClassifierItems(_spec()), model=RuleClassifier(seed=100 + seed, beta=0.0))
        lab = r.labour
        excluded += not (lab.pearson_low <= 0 <= lab.pearson_high)
    print(f"null classifiers: the 90% interval of r excludes 0 in {excluded}/{runs}")
    # binomial(40, 0.10): P(X >= 10) < 0.01
    assert excluded <= 9


def test_the_statistics_equal_a_naive_recount() -> None:
    model = RuleClassifier(seed=7)
    spec = small_spec(n=10, pairs=3)
    r = run_twoafc_classifier(_opts(seed=1, tie_margin=0.01), TwoAFCClassifierItems(spec), model=model)
    templates = shipped_templates()
    roles = {"woman": "noun", "female": "noun", "she": "subject"}
    pf, ps = [], []
    for target in spec.targets:
        wins = decided = ties = 0
        for c1, c2 in spec.cue_pairs:
            for k in templates[roles[c1]]:
                s1, s2 = model.label_scores([fill(k, c1, target), fill(k, c2, target)])[:, 1]
                d = s1 - s2
                wins += d > 0.01
                decided += abs(d) > 0.01
                ties += abs(d) <= 0.01
        t = r.target(target)
        assert t.counts["cue-1"] == wins and t.counts["tie"] == ties
        assert t.estimate == pytest.approx(100 * wins / decided, abs=1e-9)
        pf.append(100 * wins / decided)
        ps.append(100 * BLS[target])
    x, y = np.array(pf), np.array(ps)
    dx, dy = x - x.mean(), y - y.mean()
    naive_r = (dx * dy).sum() / np.sqrt((dx**2).sum() * (dy**2).sum())
    assert r.labour.pearson_r == pytest.approx(naive_r, abs=1e-9)
    assert r.p_cue1_rate.k == sum(t.counts["cue-1"] for t in r.targets)
    assert r.n_comparisons == 10 * 3 * 4 and len(rep.csv_rows(r)) == r.n_comparisons
    assert {row["key"] for row in rep.summary_rows(r) if row["by"] == "cue pair"} == {"woman/man", "female/male",
                                                                                      "she/he"}


def test_a_tiny_real_classifier_scores_as_a_naive_forward_pass(tmp_path) -> None:
    path = build_planted_classifier(tmp_path / "clf", boost=("woman", "she"), effect=1.0)
    spec = small_spec(n=3, pairs=3)
    r = run_twoafc_classifier(_opts(model_id=str(path)), TwoAFCClassifierItems(spec))
    c = r.targets[0].comparisons[0]
    ref = naive_scores(path, [c.sentence_1, c.sentence_2])[:, 1]
    assert c.score_1 == pytest.approx(ref[0], abs=1e-6) and c.score_2 == pytest.approx(ref[1], abs=1e-6)
    # the boosted female words: every comparison of the two boosted pairs goes to cue 1
    assert all(x.outcome == "cue-1" for t in r.targets for x in t.comparisons if x.pair in (0, 2))


def test_labels_templates_ties_and_tables_are_checked() -> None:
    spec = small_spec(n=6, pairs=2)
    gender = RuleClassifier(seed=2, labels=("male", "female"))
    with pytest.raises(ModelKindError) as e:
        run_twoafc_classifier(_opts(), TwoAFCClassifierItems(spec), model=gender)
    assert str(e.value) == MSG_NO_POSITIVE_LABEL.format(labels="male, female", flag="--label") and gender.calls == 0
    with pytest.raises(ModelKindError) as e:
        run_twoafc_classifier(_opts(label="femal"), TwoAFCClassifierItems(spec), model=gender)
    assert str(e.value) == MSG_UNKNOWN_LABEL.format(label="femal", hint=" Did you mean 'female'?",
                                                    labels="male, female") and gender.calls == 0
    r = run_twoafc_classifier(_opts(label="FEMALE"), TwoAFCClassifierItems(spec), model=gender)
    assert r.label == "female"
    assert fill("{cue} is {a_target}.", "she", "accountant") == "She is an accountant."
    assert shipped_templates()["subject"][0] == "{cue} is {a_target}."
    with pytest.raises(DataError) as e:
        parse_occupation_templates("{cue} met {person}.")
    assert "Template 1 is not usable" in str(e.value)
    with pytest.raises(DataError) as e:
        _opts(templates_text="The {cue} is {a_target} and {target}.")
    assert str(e.value) == MSG_BAD_OCCUPATION_TEMPLATE.format(
        line=1, problem="it needs exactly one of {a_target} and {target}", limit=300)
    assert MSG_BAD_OCCUPATION_TEMPLATE.format(line=1, problem="x", limit=300).startswith("Template 1")
    with pytest.raises(OptionError) as e:
        _opts(labour_table="census")
    assert str(e.value) == MSG_UNKNOWN_TABLE.format(value="census", choices="bls, bergsma, zhao")

    class Constant(RuleClassifier):
        def label_scores(self, texts, *, progress=None):
            return np.tile([0.3, 0.7], (len(texts), 1))

    class FlatForEngineers(RuleClassifier):
        def label_scores(self, texts, *, progress=None):
            out = super().label_scores(texts)
            out[[("engineer" in t) for t in texts]] = [0.3, 0.7]
            return out

    partly = run_twoafc_classifier(_opts(), TwoAFCClassifierItems(spec), model=FlatForEngineers(0))
    assert partly.target("engineer").estimate is None and partly.labour.dropped["engineer"] == MSG_NO_DECIDED
    assert partly.labour.n == 5
    flat = run_twoafc_classifier(_opts(), TwoAFCClassifierItems(spec), model=Constant(0))
    assert flat.counts["tie"] == flat.n_comparisons and flat.p_cue1_rate.estimate is None and flat.labour is None
    assert flat.tie_rate.estimate == 100.0 and "no comparison was decided" in rep.headline(flat)


def test_the_user_templates_and_the_zhao_table() -> None:
    spec = small_spec(n=60, pairs=2)
    r = run_twoafc_classifier(_opts(templates_text="{cue} : {target}\n# c\nA {target} called {cue}.",
                                    labour_table="zhao"), TwoAFCClassifierItems(spec), model=RuleClassifier(3))
    zhao = {row["occupation"] for row in load_labour_table("zhao")}
    assert r.n_comparisons == 60 * 2 * 2 and r.labour.table == "zhao"
    assert r.labour.n == len(zhao & set(spec.targets)) and r.labour.table_source.endswith("occupations_zhao2018.csv")
    assert {c.role for t in r.targets for c in t.comparisons} == {"any"}
    fig = labour_figure(r.labour)
    assert "Zhao" in fig.layout.xaxis.title.text and "untied comparisons" in fig.data[0].hovertemplate


def test_the_command_line_runs_it_also_as_a_model_kind(tmp_path, monkeypatch) -> None:
    path = build_planted_classifier(tmp_path / "clf", boost=("woman", "female"), effect=1.0)
    out = tmp_path / "r.json"
    rc = main(["run", "twoafc", OCCUPATIONS, "--model-kind", "classifier", "--model", str(path), "--device", "cpu",
               "--bootstrap", "100", "--labour-table", "bergsma", "--out", str(out), "--csv", str(tmp_path / "r.csv")])
    assert rc == EXIT_OK
    doc = json.loads(out.read_text())
    assert doc["test"] == "twoafc-classifier" and doc["result"]["labour"]["table"] == "bergsma"
    assert doc["result"]["n_comparisons"] == 60 * 8 * 4
    assert get_measure("twoafc-classifier").spec_type == "twoafc"
    assert main(["run", "twoafc-classifier", OCCUPATIONS, "--model", str(path), "--labour-table", "census",
                 "--out", str(tmp_path / "x.json")]) == EXIT_USAGE


def test_the_labour_tables_are_one_registry_of_the_shipped_files() -> None:
    from biastest.measures.labour import LABOUR_TABLES
    from biastest.measures.twoafc.labor import load_occupations_bls

    sizes = {name: len(load_labour_table(name)) for name in LABOUR_TABLES}
    assert sizes == {"bls": 60, "bergsma": 60, "zhao": 40}
    bls = {r["occupation"]: r["pct_female"] for r in load_occupations_bls()}
    assert {r["occupation"]: r["pct_female"] for r in load_labour_table("bls")} == bls
    assert {r["occupation"] for r in load_labour_table("bergsma")} == set(bls)
    zhao = {r["occupation"]: r["pct_female"] for r in load_labour_table("zhao")}
    assert zhao["nurse"] == 90 and zhao["carpenter"] == 2 and "construction worker" in zhao
    assert all(0 <= r["pct_female"] <= 100 for name in LABOUR_TABLES for r in load_labour_table(name))
