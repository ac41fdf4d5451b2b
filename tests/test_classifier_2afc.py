"""The classifier 2AFC: a planted group effect is found (and its direction follows the plant), a null classifier's
tests keep their nominal false-positive rate, the backend's scores equal a naive forward pass, the label-scores
endpoint loses nothing to 429/500/garbled answers, the positive label and the templates are checked, and the command
line runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biastest import public
from biastest.cli import EXIT_OK, EXIT_USAGE, main
from biastest.errors import DataError, ModelKindError, OptionError
from biastest.measures import get_measure
from biastest.measures.classifier_2afc import (
    Classifier2AFCItems,
    Classifier2AFCOptions,
    Classifier2AFCResult,
    build_items,
    cluster_sign_flip_test,
    report,
    run_classifier_2afc,
    term_pairs,
)
from biastest.measures.classifier_2afc.run import MSG_NO_POSITIVE_LABEL, resolve_positive_label
from biastest.measures.classifier_2afc.templates import (
    MSG_BAD_TEMPLATE,
    MSG_NO_TEMPLATES,
    emotion_words,
    parse_templates,
    shipped_templates,
)
from biastest.models.factory import ModelRef, text_classifier
from biastest.models.protocols import TextClassifier
from biastest.models.text_classifier import EndpointTextClassifier, LocalTextClassifier, parse_label_scores
from biastest.remote import RetryPolicy, RunLimits
from biastest.spec import BiasSpec
from tests.classifier_helpers import HashNullClassifier, LabelScoresStub, build_planted_classifier, naive_scores
from tests.served_stub import Action

G1 = ("he", "man", "brother", "son", "father")
G2 = ("she", "woman", "sister", "daughter", "mother")
SPEC = BiasSpec.from_terms(name="gender-small", group1=G1, group2=G2, stereotype1=["career", "office"],
                           antistereotype1=["family", "home"])


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Two tiny classifiers: group 1's terms boosted, group 2's boosted."""
    root = tmp_path_factory.mktemp("clf")
    return {"g1": build_planted_classifier(root / "g1", boost=G1, effect=1.0),
            "g2": build_planted_classifier(root / "g2", boost=G2, effect=1.0)}


def _opts(**kw):
    return Classifier2AFCOptions.parse({"model_id": "m", "device": "cpu", "n_resamples": 300,
                                        "n_permutations": 2000, **kw})


def test_the_planted_group_effect_is_found_and_follows_the_plant(planted) -> None:
    up = run_classifier_2afc(_opts(model_id=str(planted["g1"])), Classifier2AFCItems(SPEC))
    down = run_classifier_2afc(_opts(model_id=str(planted["g2"])), Classifier2AFCItems(SPEC))
    n = len(shipped_templates()) * len(emotion_words()) * len(G1)
    assert up.n_pairs == n == up.n_scored and up.n_unscored == 0 and up.positive_label == "POSITIVE"
    print("planted on group 1: share", up.share.estimate, (up.share.low, up.share.high), "diff", up.diff.estimate,
          "sign-flip p", up.permutation_p)
    print("planted on group 2: share", down.share.estimate, "diff", down.diff.estimate, "p", down.permutation_p)
    assert up.share.low > 50 and up.diff.low > 0 and up.share.p_value < 0.01 and up.permutation_p < 0.01
    assert down.share.high < 50 and down.diff.high < 0 and down.permutation_p < 0.01
    assert all(r.diff.estimate > 0 for r in up.per_term_pair) and all(r.diff.estimate < 0 for r in down.per_term_pair)
    assert {r.key for r in up.per_emotion} == {"joy", "sadness", "anger", "fear"}
    assert len(up.per_word) == 20 and len(up.per_template) == 12 and len(up.per_group_term) == 10
    assert all(r.diff.estimate > 0 for r in up.per_group_term)
    assert len(report.summary_rows(up)) == 12 + 5 + 10 + 20 + 4 and len(report.csv_rows(up)) == n
    # the result's JSON round-trips
    assert Classifier2AFCResult.from_dict(json.loads(json.dumps(up.to_dict()))).share.estimate == up.share.estimate


def test_the_scores_equal_a_naive_forward_pass(planted) -> None:
    model = text_classifier(ModelRef(str(planted["g1"]), device="cpu"), batch_size=7, cache=None)
    assert isinstance(model, TextClassifier) and isinstance(model, LocalTextClassifier)
    assert model.labels == ("NEGATIVE", "POSITIVE")
    texts = ["He feels happy.", "She feels happy.", "We had a furious conversation with my brother.", "x"]
    got = model.label_scores(texts)
    np.testing.assert_allclose(got, naive_scores(planted["g1"], texts), rtol=0, atol=1e-6)
    r = run_classifier_2afc(_opts(model_id="m", templates_text="{person} feels {word}."), Classifier2AFCItems(SPEC),
                            model=model)
    first = r.pairs[0]
    ref = naive_scores(planted["g1"], [first.sentence_1, first.sentence_2])[:, 1]
    assert first.score_1 == pytest.approx(ref[0], abs=1e-6) and first.diff == pytest.approx(ref[0] - ref[1], abs=1e-6)


def test_a_null_classifier_keeps_the_nominal_false_positive_rate() -> None:
    """40 null classifiers (no systematic group effect; sentence-level noise): the share's sign test, the mean
    difference's sign test and the sign-flip permutation test reject at 5 % about 5 % of the time."""
    rejections = {"share": 0, "diff": 0, "permutation": 0}
    runs = 40
    for seed in range(runs):
        r = run_classifier_2afc(_opts(seed=seed, n_resamples=100, n_permutations=500),
                                Classifier2AFCItems(SPEC), model=HashNullClassifier(seed))
        rejections["share"] += r.share.p_value < 0.05
        rejections["diff"] += r.diff.p_value < 0.05
        rejections["permutation"] += r.permutation_p < 0.05
    print("false-positive rates over", runs, "null classifiers:", {k: v / runs for k, v in rejections.items()})
    # binomial(40, 0.05): P(X >= 7) < 0.005; the sign tests are conservative (discrete)
    assert all(v <= 6 for v in rejections.values())


def test_the_sign_flip_test_equals_a_naive_enumeration() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 1.0, 40)
    labels = [f"c{i % 8}" for i in range(40)]
    sums = np.array([x[[j for j, c in enumerate(labels) if c == f"c{k}"]].sum() for k in range(8)])
    count = 0
    for pattern in range(256):
        signs = np.array([1 if (pattern >> k) & 1 else -1 for k in range(8)])
        count += abs(signs @ sums) >= abs(sums.sum()) - 1e-9
    assert cluster_sign_flip_test(x, labels, n_permutations=1000, seed=0) == pytest.approx(count / 256)
    assert cluster_sign_flip_test(np.zeros(5), list("abcde"), n_permutations=100, seed=0) is None


def test_pairs_templates_and_labels_are_checked() -> None:
    assert term_pairs(["a", "b", "c"], ["x", "y"], pairing="positional") == [("a", "x"), ("b", "y")]
    assert len(term_pairs(["a", "b"], ["x", "y"], pairing="all")) == 4
    items = build_items(["{person} feels {word}.", "I met {person}."], [("joy", "glad")], [("he", "she")])
    assert [(i.sentence_1, i.sentence_2) for i in items] == [("He feels glad.", "She feels glad."),
                                                             ("I met he.", "I met she.")]
    for bad in ("{person} and {person}", "no slot here", "{person} {word} {word}", "{person} {other}"):
        with pytest.raises(DataError) as e:
            parse_templates(bad)
        assert str(e.value).startswith(MSG_BAD_TEMPLATE.split("{")[0])
    with pytest.raises(DataError, match="hold no template"):
        parse_templates("# only a comment\n\n")
    assert MSG_NO_TEMPLATES.startswith("The templates hold no template")
    with pytest.raises(DataError, match="Template 1 is not usable"):
        _opts(templates_text="{person} {person}")
    with pytest.raises(OptionError, match="Choose one of: emotions, attributes"):
        _opts(words="emotion")
    assert resolve_positive_label(["NEGATIVE", "POSITIVE"], None) == "POSITIVE"
    assert resolve_positive_label(["neg", "pos"], "POS") == "pos"
    with pytest.raises(ModelKindError, match="Did you mean 'joy'"):
        resolve_positive_label(["joy", "anger"], "jo")
    with pytest.raises(ModelKindError) as e:
        resolve_positive_label(["LABEL_0", "LABEL_1"], None)
    assert str(e.value) == MSG_NO_POSITIVE_LABEL.format(labels="LABEL_0, LABEL_1", flag="--positive-label")


def test_the_positive_label_is_checked_before_any_sentence_is_scored() -> None:
    class Counting(HashNullClassifier):
        calls = 0

        def label_scores(self, texts, *, progress=None):
            Counting.calls += 1
            return super().label_scores(texts)

    with pytest.raises(ModelKindError):
        run_classifier_2afc(_opts(positive_label="joy"), Classifier2AFCItems(SPEC), model=Counting(0))
    assert Counting.calls == 0


def test_user_templates_and_attribute_words() -> None:
    r = run_classifier_2afc(_opts(templates_text="{person} is {word}.\nI met {person}.", words="attributes"),
                            Classifier2AFCItems(SPEC), model=HashNullClassifier(0))
    assert r.n_pairs == (4 + 1) * 5
    assert {row.key for row in r.per_emotion} == {"Stereotype for group 1", "Anti-stereotype for group 1"}
    assert r.share.interval_shown is False  # two templates: no interval, and the reason is given
    assert r.share.reason


@pytest.fixture
def private_mode(monkeypatch):
    """The stub lives on 127.0.0.1, which only a private deployment may reach."""
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))


def test_the_endpoint_loses_nothing_to_faults(private_mode) -> None:
    scorer = HashNullClassifier(3)
    with LabelScoresStub(scorer) as stub:
        stub.script(Action("status", 429, headers={"Retry-After": "0.01"}), Action("status", 500),
                    Action("garbage"))
        opts = _opts(model_id="stub-clf", endpoint=stub.url, batch_size=64,
                     templates_text="{person} feels {word}.\nI met {person}, who was {word}.")
        r = run_classifier_2afc(opts, Classifier2AFCItems(SPEC), api_key="sk-test")
        assert stub.requests[-1]["headers"]["authorization"] == "Bearer sk-test"
    local = run_classifier_2afc(opts, Classifier2AFCItems(SPEC), model=scorer)
    assert r.n_unscored == 0 and r.stop_message is None
    assert [p.score_1 for p in r.pairs] == pytest.approx([p.score_1 for p in local.pairs], abs=1e-12)
    assert r.provenance["model"]["transient"] == {"rate_limit": 1, "server_error": 1, "malformed": 1}
    assert "sk-test" not in json.dumps(r.to_dict())


def test_an_endpoint_that_stops_answering_leaves_texts_unscored_never_guessed(private_mode) -> None:
    with LabelScoresStub(HashNullClassifier(1)) as stub:
        clf = EndpointTextClassifier(stub.url, "stub", batch_size=50, limits=RunLimits(max_requests=3),
                                     retry=RetryPolicy(max_retries=0, initial_delay=0.0))
        assert isinstance(clf, TextClassifier) and stub.count() == 0  # the check sends nothing
        scores = clf.label_scores([f"text {i}" for i in range(200)])
    # the labels' probe has its own run; the scoring run's budget of 3 requests scores 3 batches of 50
    assert np.isfinite(scores[:150]).all() and np.isnan(scores[150:]).all()
    assert "50 of 200 texts were not scored" in clf.stop_message
    with pytest.raises(ValueError):
        parse_label_scores([{"label": "a"}], 1)
    with pytest.raises(OptionError):
        EndpointTextClassifier("not a url", "x")


def test_the_command_line_runs_it(tmp_path, planted, capsys) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC.to_dict()), encoding="utf-8")
    templates = tmp_path / "t.txt"
    templates.write_text("{person} feels {word}.\n{person} was {word} today.\nI saw {person} being {word}.\n"
                         "{person} is {word}.\nOur friend {person} looked {word}.\n", encoding="utf-8")
    out, csv_path = tmp_path / "r.json", tmp_path / "r.csv"
    rc = main(["run", "classifier-2afc", str(spec_file), "--model", str(planted["g1"]), "--device", "cpu",
               "--templates", str(templates), "--bootstrap", "200", "--seed", "4", "--out", str(out),
               "--csv", str(csv_path)])
    assert rc == EXIT_OK, capsys.readouterr()
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["kind"] == "classifier" and doc["test"] == "classifier-2afc" and doc["seed"] == 4
    assert doc["result"]["n_pairs"] == 5 * 20 * 5 and doc["result"]["share"]["estimate"] > 50
    assert "Classifier 2AFC" in capsys.readouterr().out and csv_path.read_text(encoding="utf-8").count("\n") > 400
    rc = main(["run", "classifier-2afc", str(spec_file), "--model", "m", "--clusters", "nope", "--out", str(out)])
    assert rc == EXIT_USAGE
    rc = main(["run", "classifier-2afc", str(spec_file), "--model", "m", "--max-requests", "5", "--out", str(out)])
    assert rc == EXIT_USAGE  # an endpoint-only flag without --endpoint
    assert get_measure("classifier-2afc").kind == "classifier"
