"""The papers' settings as presets (issue 26, item 6): what the seeds state, valid options, and run-time estimates.

The estimates scale one measurement (``biastest/data/preset_timings.json``) by the documented formulas; the
docstrings no longer call N(0, 10² I) the paper's prior nor quote run times the seeds do not state.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import pytest

from biastest.errors import MethodError
from biastest.measures.bayes import BayesOptions
from biastest.measures.posterior import PosteriorOptions
from biastest.measures.presets import (
    MSG_UNKNOWN_PRESET,
    PAPER_PRESETS,
    bayes_rows,
    estimate_line,
    estimate_seconds,
    format_duration,
    is_preset,
    load_timings,
    preset_markdown,
)
from biastest.measures.twoafc import TwoAFCOptions
from biastest.specs import get_spec, get_twoafc_spec

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO.parent / "shared" / "seeds"


def test_the_presets_are_the_papers_settings_and_valid_options():
    post = PAPER_PRESETS["posterior"]
    assert (post.values["tune"], post.values["draws"]) == (10_000, 10_000)
    PosteriorOptions.parse(post.values)
    bayes = PAPER_PRESETS["bayes"]
    options = BayesOptions.parse(bayes.values)
    assert options.model == "additive" and options.hdi_prob == 0.89
    assert any("Stan's defaults" in s for s in bayes.open)  # the seed states no sampler settings, and we say so
    two = PAPER_PRESETS["twoafc"]
    spec = get_twoafc_spec(two.values["spec"])
    assert len(spec.cue_pairs) == 8 and TwoAFCOptions.parse(n_replicates=two.values["n_replicates"]).n_replicates == 32
    for p in PAPER_PRESETS.values():
        assert p.label.startswith("As in the paper") and p.stated


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seeds are in ../shared/seeds")
def test_what_the_presets_say_the_seeds_state_is_in_the_seeds():
    psycho = next(SEEDS.glob("000_*.txt")).read_text(encoding="utf-8")
    bayes = next(SEEDS.glob("002_*.txt")).read_text(encoding="utf-8")
    assert "10,000\nwarm-up samples and run 10,000 steps" in psycho and "32 GloVe word embed" in psycho
    assert "0.953 AUC" in psycho and "Poisson distribution with mean" in psycho
    assert "m_{pw} & \\sim dnorm(1,.5)" in bayes and "co_{con} & \\sim dnorm(0,1)" in bayes
    assert "dcauchy(0,1)" in bayes and "89\\% highest posterior density" in bayes and "STAN" in bayes
    # what the code no longer claims: the seeds give no prior for the embedding posterior and no run time
    assert "10^2" not in psycho and "hours" not in psycho


def test_no_docstring_calls_the_wide_prior_the_papers_or_quotes_an_unstated_run_time():
    for path in [*(REPO / "biastest").rglob("*.py"), *(REPO / "docs").rglob("*.md")]:
        text = path.read_text(encoding="utf-8")
        assert "paper's prior" not in text and "paper's N(0" not in text, path
        assert "1.7–3.2" not in text, path


def test_estimates_scale_the_measurement_by_the_documented_formulas():
    t = load_timings()
    post, bay, two = t["posterior"], t["bayes"], t["twoafc"]
    est = estimate_seconds("posterior", {"tune": 10_000, "draws": 10_000, "chains": 1}, dim=100)
    assert est.seconds == pytest.approx(post["fixed_seconds"] + post["seconds_per_step"] * 20_000 * 100 / post["dim"])
    assert "20,000 NUTS steps" in est.how and t["machine"] in est.how
    small = estimate_seconds("posterior", {"tune": 500, "draws": 1_000, "chains": 2}, dim=50)
    assert small.seconds < est.seconds
    rows = bayes_rows(get_spec("WEAT 7: Math vs arts, male vs female terms"))
    assert rows == bay["rows"]  # the measurement was made on WEAT 7
    est = estimate_seconds("bayes", {"tune": 1_000, "draws": 1_000, "chains": 4}, rows=rows)
    assert est.seconds == pytest.approx(bay["fixed_seconds"] + bay["seconds_per_step_row"] * 8_000 * rows)
    est = estimate_seconds("twoafc", {"n_replicates": 32}, tokens=1_000_000)
    assert est.seconds == pytest.approx(two["fixed_seconds"] + two["seconds_per_token"] * 32e6)
    unknown = estimate_seconds("twoafc", {"n_replicates": 32})
    assert math.isnan(unknown.seconds) and "per million tokens" in unknown.how
    assert "per million tokens" in estimate_line("twoafc", {"n_replicates": 32})
    with pytest.raises(MethodError) as e:
        estimate_seconds("weat", {})
    assert e.value.message == MSG_UNKNOWN_PRESET.format(measure="weat", known="twoafc, posterior, bayes")


def test_durations_read_as_words():
    assert [format_duration(s) for s in (0.2, 40, 600, 9000)] == ["about 1 s", "about 40 s", "about 10 min",
                                                                  "about 2.5 h"]


def test_is_preset_and_the_note():
    assert is_preset("posterior", {"draws": 10_000, "tune": 10_000, "chains": 1})
    assert not is_preset("posterior", {"draws": 1_000, "tune": 10_000, "chains": 1})
    note = preset_markdown("posterior")
    assert "10,000 warm-up samples and 10,000 steps" in note and "It leaves open" in note


def test_the_apps_handlers_fill_the_paper_settings_and_show_the_estimate():
    from biastest.ui.psychophysics.bayes import bayes_estimate, bayes_preset_handler
    from biastest.ui.psychophysics.posterior import posterior_estimate, posterior_preset_handler

    draws, tune, chains, note, estimate = posterior_preset_handler(None)
    assert (draws, tune, chains) == (10_000, 10_000, 1)
    assert note == preset_markdown("posterior") and estimate.startswith("⏱️ Estimated run time: **about")
    assert posterior_estimate(None, 1000, 500, 2)[0] == ""  # not the paper's: no note
    assert posterior_estimate(None, -3, 500, 2) == ("", "")  # a bad number: the run will say why
    model, draws, tune, chains, hdi, note, estimate = bayes_preset_handler(None)
    assert (model, draws, tune, chains, hdi) == ("additive", 1_000, 1_000, 4, 0.89)
    assert note == preset_markdown("bayes") and "rows" in estimate
    spec = get_spec("WEAT 1: Flowers vs insects, pleasant vs unpleasant")
    assert f"{bayes_rows(spec):,} rows" in bayes_estimate({"spec": spec}, "additive", 1000, 1000, 4, 0.89)[1]


def test_the_2afc_preset_fills_the_replicate_training_and_estimates_it_from_the_corpus(tmp_path):
    """The paper's 2AFC (32 replicates trained on a bootstrapped corpus) in the app's step 2, with its run time."""
    from biastest.ui.psychophysics.data import (
        MSG_PRESET_OTHER_SPEC,
        REPLICATES_TRAIN,
        corpus_tokens,
        twoafc_estimate,
        twoafc_preset_handler,
    )

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the nurse said she would come\nthe engineer said he was late\n" * 500, encoding="utf-8")
    assert corpus_tokens(str(corpus)) == 12 * 500 and corpus_tokens(None) is None
    assert corpus_tokens(str(tmp_path / "missing.txt")) is None
    paper = get_twoafc_spec("Occupations vs gender (Liang & Acuna 2020)")
    mode, n, note, estimate = twoafc_preset_handler({"spec": paper}, str(corpus))
    assert (mode, n) == (REPLICATES_TRAIN, 32) and note == preset_markdown("twoafc")
    t = load_timings()["twoafc"]
    expected = estimate_seconds("twoafc", {"n_replicates": 32}, tokens=6000).seconds
    assert expected == pytest.approx(t["fixed_seconds"] + t["seconds_per_token"] * 6000 * 32)
    assert estimate == twoafc_estimate(str(corpus), 32) and "32 replicates × 6,000 tokens" in estimate
    assert "per million tokens" in twoafc_estimate(None, 8)  # no corpus yet: the rate
    assert twoafc_estimate(None, 0) == ""  # out of bounds: the training says why
    other = get_twoafc_spec("Occupations vs love/hate (Liang & Acuna 2020)")
    _, _, note, _ = twoafc_preset_handler({"spec": other}, None)
    assert html.unescape(note).endswith(MSG_PRESET_OTHER_SPEC.format(paper=paper.name, spec=other.name))
