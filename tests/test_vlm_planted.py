"""Planted bias: tiny CLIP models trained on coloured shapes recover the planted rates.

Three tiny CLIP models are trained (seconds on CPU) on red and blue shapes whose
captions say "doctor" (red) / "nurse" (blue) at a planted rate of 90%, 50% or
10% (:func:`tests.vlm_helpers.train_planted_clip`). The vision-language score
of fresh test images must point in the planted direction, keep the planted
order, and land near the planted rate.
"""

from __future__ import annotations

import pytest

from biastest.models.cache import ModelCache
from biastest.spec import BiasSpec
from tests import vlm_helpers as H
from tests.vlm_helpers import run_vlm

SEED = 777
print(f"test seed: {SEED}")
RATES = (0.9, 0.5, 0.1)
SPEC = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse", name="planted")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    images = H.colour_images(root / "store", per_term=20, seed=SEED + 1)  # not the training images
    out = {}
    for rate in RATES:
        model_dir = H.train_planted_clip(root / f"clip_{rate}", rate=rate, seed=SEED)
        out[rate] = run_vlm(
            images=images,
            image_root=root / "store",
            spec=SPEC,
            model_id=str(model_dir),
            seed=SEED,
            batch_size=16,
            n_resamples=2000,
            device="cpu",
            cache=ModelCache(1),
        )
    return out


def test_direction_and_order_recovered(results):
    s = {rate: results[rate].soft.score for rate in RATES}
    assert s[0.9] > s[0.5] > s[0.1]
    assert s[0.9] > 50 > s[0.1]
    h = {rate: results[rate].hard.score for rate in RATES}
    assert h[0.9] > 50 > h[0.1]
    assert results[0.9].soft.p_value < 0.001 and results[0.1].soft.p_value < 0.001


def test_scores_near_planted_rates(results):
    for rate in RATES:
        r = results[rate]
        assert r.soft.score == pytest.approx(100 * rate, abs=5), (rate, r.soft.score)
        for term in r.per_image_term:  # both colours carry the planted rate
            assert term.soft.score == pytest.approx(100 * rate, abs=7), (rate, term.term, term.soft.score)
        for term in r.per_target_term:
            assert term.soft.score == pytest.approx(100 * rate, abs=5)


def test_unbiased_model_is_undecided(results):
    # At a planted rate of 50% every image sits at P ≈ 0.5. The soft score is 50%; the hard verdicts of such a
    # model are decided by tiny deviations from 0.5 and carry no information (read the soft score).
    r = results[0.5]
    assert abs(r.soft.score - 50) < 3
    assert all(abs(x.p_t1 - 0.5) < 0.05 for x in r.images)
