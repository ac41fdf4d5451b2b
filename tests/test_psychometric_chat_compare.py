"""Comparing chat models' psychometric curves (``psychometric-chat``): ΔPSE and Δshift per context.

Planted subjects (:class:`tests.psychometric_helpers.PlantedPsychometricResponder`) with known PSEs per context.
Checks:

* every point value is the models' own fit and shift (the measure's numbers), and the differences are their
  differences;
* the joint bootstrap equals a naive loop that refits every resampled data set with ``fit_guess_lapse`` (same
  stimuli drawn for every model and context; a resample without a fit has no draw), and the intervals are
  ``numpy.nanpercentile`` of the differences of the draws;
* a planted difference of shifts (−0.15) lies in the Δshift interval, and a planted zero (two models with the
  same curves) in its interval, over 16 seeded runs (observed 15/15 and 10/14; see the test);
* mistakes: one result, another continuum, a reference context not asked, a fit that is not full (its status, no
  number, never NaN).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biastest.continuum import Continuum, Stimulus, name_continuum
from biastest.errors import DataError
from biastest.measures.psychometric_chat import PsychometricChatOptions, PsychometricItems, run_psychometric_chat
from biastest.measures.psychometric_chat.compare import (
    MSG_PC_NO_COMMON_CONTEXT,
    MSG_PC_NOT_SAME_CONTINUUM,
    MSG_PC_TOO_FEW,
    compare_psychometric_chat,
)
from biastest.measures.psychometric_chat.summary import derived_seed
from biastest.models.dummy import DummyChatLM
from biastest.stats.psychometric.guess_lapse import fit_guess_lapse
from biastest.stats.psychometric.shift import joint_pse_draws, pse_shift
from tests.psychometric_helpers import PlantedPsychometricResponder

NEUTRAL, NURSE = "{stimulus} is a person.", "{stimulus} is a nurse."
CUES = ("man", "woman")
A_CURVES = {NEUTRAL: (0.5, 8.0), NURSE: (0.35, 8.0)}  # shift −0.15
B_CURVES = {NEUTRAL: (0.5, 8.0), NURSE: (0.2, 8.0)}  # shift −0.30: Δshift −0.15, ΔPSE(nurse) −0.15


def run(curves, *, seed, q=0.2, refusal_rate=0.05, n_bootstrap=60, name="planted", continuum=None,
        contexts=(NEUTRAL, NURSE)):
    c = continuum or name_continuum()
    rule = PlantedPsychometricResponder({s.text: s.alpha for s in c.stimuli}, {k: curves[k] for k in contexts},
                                        cues=CUES, q=q, seed=seed, refusal_rate=refusal_rate)
    options = PsychometricChatOptions.parse({"model_id": name, "seed": 1, "samples": 2, "temperature": 1.0,
                                             "n_bootstrap": n_bootstrap, "contexts": list(contexts)})
    return run_psychometric_chat(options, PsychometricItems(c), model=DummyChatLM(rule, model_id=name))


def test_point_values_are_the_models_own_fits_and_shifts():
    a, b = run(A_CURVES, seed=0, name="model-a"), run(B_CURVES, seed=1, name="model-b")
    cmp = compare_psychometric_chat([a, b], seed=4, n_bootstrap=100)
    assert cmp.labels == ["model-a", "model-b"] and cmp.contexts == [NEUTRAL, NURSE] and cmp.reference == NEUTRAL
    own = {(r.model_id, s.context): s for r in (a, b) for s in r.summaries}
    for row in cmp.per_model:
        s = own[(row["model"], row["context"])]
        assert row["pse"] == pytest.approx(s.fit["pse"], abs=1e-6) and row["fit_status"] == s.fit["status"]
        if not row["reference"]:
            assert row["shift"] == pytest.approx(s.shift["shift"], abs=1e-6)
    ref, nurse = cmp.rows
    assert ref["reference"] and ref["shift_diff"] is None
    assert ref["pse_diff"] == pytest.approx(own[("model-b", NEUTRAL)].fit["pse"] - own[("model-a", NEUTRAL)].fit["pse"])
    assert nurse["shift_diff"] == pytest.approx(own[("model-b", NURSE)].shift["shift"]
                                                - own[("model-a", NURSE)].shift["shift"], abs=1e-6)
    assert nurse["shift_diff_ci"][0] < nurse["shift_diff"] < nurse["shift_diff_ci"][1]
    assert json.loads(json.dumps(cmp.to_dict()))["seed"] == derived_seed(4, 3)  # plain JSON, seed recorded


def test_the_joint_bootstrap_equals_a_naive_refit_of_every_resampled_data_set():
    a, b = run(A_CURVES, seed=2, refusal_rate=0.0), run(B_CURVES, seed=3, refusal_rate=0.0)
    n_boot, seed = 40, 11
    cmp = compare_psychometric_chat([a, b], seed=seed, n_bootstrap=n_boot, confidence=0.9)
    assert cmp.paired  # every stimulus answered in every context: the same stimuli drawn for all four fits
    data = [[(lv.alpha, lv.k, lv.n) for lv in s.levels] for r in (a, b) for s in r.summaries]  # A·N, A·U, B·N, B·U
    x, k, n = (np.array([[lv[j] for lv in d] for d in data], dtype=float) for j in range(3))
    used = derived_seed(seed, 3)
    rng = np.random.default_rng(np.random.SeedSequence(used).spawn(4)[0])
    index = rng.integers(0, x.shape[1], size=(n_boot, x.shape[1]))
    fits = [[fit_guess_lapse(x[f, i], k[f, i], n[f, i], sigmoid=a.sigmoid) for i in index] for f in range(4)]
    naive = np.array([[np.nan if ft.pse is None else ft.pse for ft in row] for row in fits])
    joint = joint_pse_draws([(x[f], k[f], n[f]) for f in range(4)], guess_lapses=[None] * 4, sigmoid=a.sigmoid,
                            n_bootstrap=n_boot, bootstrap="levels", seed=used)
    status = np.array([[ft.status for ft in row] for row in fits])
    ok = status == "ok"
    gap = np.abs(joint.draws[ok] - naive[ok])
    # the batch refit starts from the point fit, the naive one from a grid: on a near-step resample the two can
    # settle a little apart (seen: 1 of 147 draws, by 0.017); every other draw agrees to the optimiser's precision
    assert ok.mean() > 0.8 and (gap < 1e-6).mean() >= 0.97 and gap.max() < 0.05
    assert np.isnan(joint.draws[status == "failed"]).all()  # no fit, no draw (never a made-up value)
    step = status == "step"  # a step's PSE is read from its steepest bracket: same place, a looser agreement
    assert np.allclose(joint.draws[step], naive[step], atol=0.01)
    # the intervals are the plain percentiles of the differences of those draws (draws where all exist)
    d = joint.draws
    d_shift = (d[3] - d[2]) - (d[1] - d[0])
    nurse = cmp.rows[1]
    assert nurse["shift_diff_ci"] == pytest.approx(list(np.nanpercentile(d_shift, [5, 95])), abs=1e-9)
    assert nurse["pse_diff_ci"] == pytest.approx(list(np.nanpercentile(d[3] - d[1], [5, 95])), abs=1e-9)
    a_nurse = next(r for r in cmp.per_model if r["model"] == cmp.labels[0] and r["context"] == NURSE)
    assert a_nurse["pse_ci"] == pytest.approx(list(np.nanpercentile(d[1], [5, 95])), abs=1e-9)
    naive_shift = (naive[3] - naive[2]) - (naive[1] - naive[0])
    assert nurse["shift_diff_ci"] == pytest.approx(list(np.nanpercentile(naive_shift, [5, 95])), abs=0.01)


@pytest.mark.slow  # 48 planted runs and 16 comparisons: ~30 s alone, minutes on a loaded machine
def test_a_planted_difference_of_shifts_and_a_planted_zero_are_covered_over_seeded_runs():
    """16 seeded runs of three models (a; b with the nurse PSE 0.15 lower; a copy of a). A run where a fit is a step
    has no Δshift (the measure's own shift has none either) and is not counted. Observed: the planted −0.15 in 15
    of 15 intervals, the planted zero in 10 of 14 (over 27 runs of a and its copy: 22 of 27, 81 % at nominal 95 %:
    the stimuli bootstrap is somewhat narrow when few names lie where the curves turn — docs/measures)."""
    hit_diff = hit_zero = n_diff = n_zero = 0
    for i in range(16):
        a = run(A_CURVES, seed=100 + i, name="a", n_bootstrap=10)  # only the counts matter here
        b = run(B_CURVES, seed=200 + i, name="b", n_bootstrap=10)
        same = run(A_CURVES, seed=300 + i, name="same-as-a", n_bootstrap=10)
        cmp = compare_psychometric_chat([a, b, same], seed=i, n_bootstrap=200)
        rows = {(r["model_b"], r["context"]): r for r in cmp.rows}
        for name, truth in (("b", -0.15), ("same-as-a", 0.0)):
            ci = rows[(name, NURSE)]["shift_diff_ci"]
            if ci is None:
                assert rows[(name, NURSE)]["message"]  # why there is none
                continue
            hit = ci[0] <= truth <= ci[1]
            if name == "b":
                n_diff, hit_diff = n_diff + 1, hit_diff + hit
            else:
                n_zero, hit_zero = n_zero + 1, hit_zero + hit
    print(f"planted Δshift −0.15 covered {hit_diff}/{n_diff}; planted zero covered {hit_zero}/{n_zero}")
    assert n_diff >= 13 and n_zero >= 13
    assert hit_diff >= n_diff - 2 and hit_zero >= n_zero - 4


def test_mistakes_and_fits_without_a_pse_are_named_never_nan():
    a = run(A_CURVES, seed=0, name="a")
    with pytest.raises(DataError) as err:
        compare_psychometric_chat([a], seed=0)
    assert err.value.message == MSG_PC_TOO_FEW.format(n=1)
    small = Continuum(stimuli=tuple(Stimulus(text=s.text, alpha=s.alpha) for s in name_continuum().stimuli[:30]),
                      source="first 30 names")
    other = run(A_CURVES, seed=1, name="b", continuum=small)
    with pytest.raises(DataError) as err:
        compare_psychometric_chat([a, other], seed=0)
    assert err.value.message == MSG_PC_NOT_SAME_CONTINUUM.format(label="b", first="a")
    nurse_only = run(A_CURVES, seed=1, name="b", contexts=(NURSE,))
    with pytest.raises(DataError) as err:
        compare_psychometric_chat([a, nurse_only], seed=0)
    assert err.value.message == MSG_PC_NO_COMMON_CONTEXT.format(first="a", context=NEUTRAL, label="b")
    # a model that always names the same cue: no fit, so no PSE, no difference, a message — and no NaN anywhere
    options = PsychometricChatOptions.parse({"model_id": "stuck", "seed": 1, "samples": 1, "n_bootstrap": 20,
                                             "contexts": [NEUTRAL, NURSE]})
    stuck = run_psychometric_chat(options, PsychometricItems(name_continuum()),
                                  model=DummyChatLM(lambda request: "man", model_id="stuck"))
    cmp = compare_psychometric_chat([a, stuck], seed=0, n_bootstrap=20)
    text = json.dumps(cmp.to_dict())
    assert "NaN" not in text and "Infinity" not in text
    nurse = cmp.rows[1]
    assert nurse["pse_diff"] is None and nurse["shift_diff"] is None and "stuck" in nurse["message"]
    assert all(r["pse"] is None for r in cmp.per_model if r["model"] == "stuck")
    assert not math.isnan(cmp.per_model[0]["pse"])


@pytest.mark.parametrize("drop_one", [False, True])
def test_joint_draws_of_two_data_sets_give_the_shift_interval_of_pse_shift(drop_one):
    """Two data sets: the difference of the joint draws has :func:`pse_shift`'s interval (its draws are made alike),
    paired when both have the same stimuli and unpaired when one lacks a stimulus."""
    a = run(A_CURVES, seed=7, refusal_rate=0.0, n_bootstrap=10)
    data = [tuple(zip(*[(lv.alpha, lv.k, lv.n) for lv in s.levels], strict=True)) for s in a.summaries]
    if drop_one:
        data[1] = tuple(v[1:] for v in data[1])
    joint = joint_pse_draws(data, guess_lapses=[None, None], sigmoid="logistic", n_bootstrap=150, bootstrap="levels",
                            seed=21)
    shift = pse_shift(data[0], data[1], sigmoid="logistic", n_bootstrap=150, bootstrap="levels", seed=21)
    assert joint.paired is (not drop_one) and shift.paired is (not drop_one)
    assert joint.pse[1] - joint.pse[0] == pytest.approx(shift.shift, abs=1e-9)
    assert list(np.nanpercentile(joint.draws[1] - joint.draws[0], [2.5, 97.5])) == pytest.approx(
        list(shift.shift_ci), abs=1e-9)
