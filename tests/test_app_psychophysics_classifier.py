"""The word-embedding app's 2AFC of a text classifier (step 2's "Which model?" → a text classifier), handlers called
directly: the occupations design (twoafc-classifier) with a planted rule classifier tied to the BLS shares, step 3's
per-target figure, labour scatter, tables and downloads (checked against a naive count of the CSV), a classifier
behind the loopback label-scores endpoint (the key reaches the server only), the mistakes, and "Compare with another
classifier" (paired per target)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from biastest import public
from biastest.measures.classifier_twoafc import compare_twoafc_classifier, report
from biastest.models.endpoint_lm import MSG_NEED_ENDPOINT_URL
from biastest.report.export import ROW_TYPE
from biastest.report.text import md_escape
from biastest.ui import psychophysics as app
from biastest.ui.chat_choice import CHAT_ENDPOINT, CHAT_HERE, MSG_NO_CHAT_MODEL
from biastest.ui.psychophysics import classifier
from tests.classifier_helpers import LabelScoresStub, RuleClassifier
from tests.twoafc_chat_helpers import BLS

SEED = 3
BOOT = 200
KEY = "sk-psy-clf-SECRET-7a1e"
TARGETS = list(BLS)[:12]
CUES = "woman/man, female/male, she/he, girl/boy, her/him"
N_VIEW = 15
run_clf = classifier.make_classifier_run_handler(N_VIEW)
add_clf = classifier.make_compare_handler()


@pytest.fixture(scope="module")
def session():
    values = [app.KIND_TWOAFC, app.CUSTOM, ", ".join(TARGETS), CUES, "female", "male", app.CUSTOM,
              *("",) * 8, "glove-6b-50d", None, ""]
    state, message, _reports, _notes = app.confirm_spec_core(app.new_session(), *values, allow_paths=False)
    assert message.startswith("✅")
    return state


def _inline(message: str) -> str:
    return f"⚠️ {md_escape(message)}"


def test_the_occupations_design_shows_p_per_target_the_scatter_tables_and_downloads(session) -> None:
    model = RuleClassifier(seed=SEED)
    out = run_clf(session, CHAT_HERE, "rule-clf", "", "", "", SEED, "bls", model=model, n_resamples=BOOT)
    assert out[0].startswith("✅ Classifier 2AFC on 12 targets: Pearson r with % women \\(bls\\)")
    result = out[1]["classifier"]
    assert result.n_comparisons == 12 * 5 * 4 and result.labour.pearson_r > 0.8
    box, headline, targets_fig, labour_plot, table, targets_table, csv_btn, json_btn = out[4:12]
    assert box.visible is True and headline == md_escape(report.reading(result))
    assert headline.startswith("Verdict: ")  # issue 28 item 4: the reading opens with the verdict
    assert len(targets_fig.data[0].x) == 12 and "ties" in targets_fig.data[0].hovertemplate
    assert labour_plot.visible is True and "% women" in json.dumps(labour_plot.value, default=str)
    assert len(table) == len(report.summary_rows(result)) and len(targets_table) == 12
    with open(csv_btn.value["path"], encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    comparisons = [r for r in rows if r[ROW_TYPE] == "comparison"]
    assert len(comparisons) == result.n_comparisons
    for t in result.targets:  # naive count of the CSV's comparison rows
        mine = [r for r in comparisons if r["target"] == t.target]
        won = sum(r["outcome"] == "cue-1" for r in mine)
        decided = sum(r["outcome"] in ("cue-1", "cue-2") for r in mine)
        assert t.estimate == pytest.approx(100 * won / decided, abs=1e-9)
    assert json.loads(Path(json_btn.value["path"]).read_text(encoding="utf-8"))["model_id"] == "rule-clf"
    assert out[12:] == ("", None, "", None, *out[16:])  # the comparison starts empty


def test_a_classifier_behind_an_endpoint_and_the_mistakes(session, monkeypatch) -> None:
    monkeypatch.setattr(public, "_policy", public.decide(host="127.0.0.1", environ={}))
    with LabelScoresStub(RuleClassifier(seed=SEED)) as stub:
        out = run_clf(session, CHAT_ENDPOINT, "clf", stub.url, KEY, "POSITIVE", SEED, "zhao", n_resamples=BOOT)
        sent = {r["headers"].get("authorization") for r in stub.requests}
    assert out[0].startswith("✅") and sent == {f"Bearer {KEY}"}
    assert KEY not in json.dumps(out[1]["classifier"].to_dict(), default=str)
    assert out[1]["classifier"].labour.table == "zhao"
    out = run_clf(session, CHAT_HERE, "m", "", "", "JOY", SEED, model=RuleClassifier(SEED), n_resamples=BOOT)
    assert out[0].startswith("⚠️ The classifier has no label 'JOY'")
    assert run_clf(session, CHAT_HERE, " ", "", "", "", SEED)[0] == _inline(MSG_NO_CHAT_MODEL)
    assert run_clf(session, CHAT_ENDPOINT, "m", "", "", "", SEED)[0] == _inline(MSG_NEED_ENDPOINT_URL)


def test_compare_with_another_classifier_is_paired_per_target(session) -> None:
    first = run_clf(session, CHAT_HERE, "rule-clf", "", "", "", SEED, "bls", model=RuleClassifier(SEED),
                    n_resamples=BOOT)[1]
    out = add_clf(app.new_session(), CHAT_HERE, "null", "", "", "", SEED, model=RuleClassifier(SEED, beta=0.0),
                  n_resamples=BOOT)
    assert out[1] == _inline(classifier.MSG_COMPARE_FIRST)
    out = add_clf(first, CHAT_HERE, "null", "", "", "", SEED, model=RuleClassifier(SEED + 1, beta=0.0),
                  n_resamples=BOOT)
    new, message, summary, forest, _reading, pairs, items, js, cmp_csv = out
    assert message.startswith("✅ 2 classifiers compared on the same 12 targets")
    assert len(new["classifier_compare"]) == 1 and len(pairs) == 1 and forest is not None
    assert all(x["visible"] and Path(x["value"]).is_file() for x in (items, js, cmp_csv)) and "12" in summary
    # the paired difference is the mean over targets of the per-target differences (the house's paired comparison)
    a, b = new["classifier"], new["classifier_compare"][0]
    diffs = [x.estimate - y.estimate for x, y in zip(a.targets, b.targets, strict=True)]
    pair = compare_twoafc_classifier([a, b], seed=SEED, n_resamples=BOOT).pairs[0]
    assert pair.n_items == 12 and pair.difference == pytest.approx(sum(diffs) / len(diffs), abs=1e-9)
    assert pair.ci_low <= pair.difference <= pair.ci_high
    assert f"{abs(pair.difference):.1f}" in " ".join(str(v) for v in pairs.iloc[0].to_numpy())
    # a new run drops the comparison
    again = run_clf(new, CHAT_HERE, "rule-clf", "", "", "", SEED, "bls", model=RuleClassifier(SEED),
                    n_resamples=BOOT)
    assert again[1]["classifier_compare"] == []
