"""WEAT's "How much can d vary by chance?" (issue 26, item 5): random word lists of the same sizes.

The simulation equals a naive loop over the documented draws, is reproducible from its seed, recovers planted
cases, and reaches the app's table and figure, the CSV, the JSON and the command line.
"""

from __future__ import annotations

import csv
import html
import itertools
import json
import math
import string

import numpy as np
import pytest

from biastest import cli
from biastest.errors import DataError, EmbeddingError, MethodError, OptionError
from biastest.measures.weat import WEATOptions, WEATResult
from biastest.measures.weat.null_sim import (
    MSG_NULL_NO_VOCABULARY,
    MSG_NULL_SEED,
    MSG_NULL_VOCAB_TOO_SMALL,
    VOCAB_SIZE,
    VOCAB_SKIP,
    vocabulary_slice,
    weat_null,
)
from biastest.measures.weat.report import (
    MSG_WEAT_NULL_NONE,
    weat_exports,
    weat_frame,
    weat_null_figure,
    weat_null_markdown,
)
from biastest.models.embeddings import MSG_NO_VOCABULARY, InMemoryEmbeddings
from biastest.models.factory import word_vectors
from tests.embedding_runs import run_mac, run_weat

SEED = 11
print(f"test seed: {SEED}")
WEAT7 = "WEAT 7: Math vs arts, male vs female terms"


def _naive_d(x, y, a, b) -> float:
    """d by plain loops: cosine by sums, s(w) per word, SD with n − 1."""
    def cos(u, v):
        return sum(p * q for p, q in zip(u, v, strict=True)) / math.sqrt(sum(p * p for p in u) * sum(q * q for q in v))

    def s(w):
        return sum(cos(w, t) for t in a) / len(a) - sum(cos(w, t) for t in b) / len(b)

    sx, sy = [s(w) for w in x], [s(w) for w in y]
    pooled = sx + sy
    mean = sum(pooled) / len(pooled)
    sd = math.sqrt(sum((p - mean) ** 2 for p in pooled) / (len(pooled) - 1))
    return (sum(sx) / len(sx) - sum(sy) / len(sy)) / sd


def _roles(rng, sizes=(3, 4, 5, 2), dim=6):
    return {r: rng.normal(size=(n, dim)) for r, n in zip("XYAB", sizes, strict=True)}


def _split(rows, sizes):
    cuts = np.cumsum((0, *sizes))
    return [rows[cuts[i]:cuts[i + 1]] for i in range(4)]


def test_vocabulary_draws_equal_a_naive_loop_over_the_documented_draws():
    rng = np.random.default_rng(SEED)
    roles, pool = _roles(rng), rng.normal(size=(60, 6))
    sizes, k = (3, 4, 5, 2), 14
    null = weat_null(0.7, mode="vocabulary", n_draws=40, seed=SEED, role_vectors=roles, pool_vectors=pool)
    draw = np.random.default_rng(SEED)  # the documented order: one choice without replacement per draw
    expected = []
    for _ in range(40):
        idx = draw.choice(len(pool), k, replace=False)
        expected.append(_naive_d(*(list(map(list, part)) for part in _split(pool[idx], sizes))))
    assert np.allclose(null.draws, expected, rtol=0, atol=1e-9) and null.n_valid == 40
    share = sum(abs(d) >= 0.7 for d in expected) / 40
    assert null.share_at_least == share and null.n_at_least == round(share * 40)
    assert null.quantiles["q50"] == pytest.approx(float(np.median(expected)), abs=1e-9)
    assert null.max_abs == pytest.approx(max(abs(d) for d in expected), abs=1e-9)


def test_shuffled_draws_equal_a_naive_loop_over_the_users_words():
    rng = np.random.default_rng(SEED + 1)
    roles = _roles(rng)
    sizes = (3, 4, 5, 2)
    words = np.concatenate([roles[r] for r in "XYAB"])
    null = weat_null(-0.4, mode="shuffled", n_draws=30, seed=SEED, role_vectors=roles)
    draw = np.random.default_rng(SEED)
    expected = [_naive_d(*(list(map(list, p)) for p in _split(words[draw.permutation(14)], sizes)))
                for _ in range(30)]
    assert np.allclose(null.draws, expected, rtol=0, atol=1e-9)
    assert null.share_at_least == sum(abs(d) >= 0.4 for d in expected) / 30
    assert null.sizes == {"X": 3, "Y": 4, "A": 5, "B": 2} and "shuffled" in null.pool


def test_the_seed_repeats_the_draws_and_another_seed_does_not():
    rng = np.random.default_rng(SEED)
    roles, pool = _roles(rng), rng.normal(size=(80, 6))
    args = {"mode": "vocabulary", "n_draws": 50, "role_vectors": roles, "pool_vectors": pool}
    a, b, c = (weat_null(1.0, seed=s, **args) for s in (3, 3, 4))
    assert a == b and a.draws != c.draws and a.seed == 3
    with pytest.raises(MethodError) as e:
        weat_null(1.0, seed=None, **args)
    assert e.value.message == MSG_NULL_SEED
    with pytest.raises(DataError) as e:
        weat_null(1.0, seed=0, mode="vocabulary", n_draws=5, role_vectors=roles, pool_vectors=pool[:10])
    assert e.value.message == MSG_NULL_VOCAB_TOO_SMALL.format(need=14, n=10)


def test_planted_cases_are_recovered():
    """Lists with a planted association sit far out in the null; lists without one sit inside it."""
    rng = np.random.default_rng(SEED)
    dim, n = 20, 8
    axis = np.zeros(dim)
    axis[0] = 3.0
    planted = {"X": rng.normal(size=(n, dim)) + axis, "Y": rng.normal(size=(n, dim)) - axis,
               "A": rng.normal(size=(n, dim)) + axis, "B": rng.normal(size=(n, dim)) - axis}
    pool = rng.normal(size=(2000, dim))  # a vocabulary with no structure
    d = _naive_d(*(list(map(list, planted[r])) for r in "XYAB"))
    assert d > 1.5
    null = weat_null(d, mode="vocabulary", n_draws=1000, seed=SEED, role_vectors=planted, pool_vectors=pool)
    assert null.share_at_least < 0.01 and abs(null.quantiles["q50"]) < 0.15
    assert null.quantiles["q2.5"] < -0.5 and null.quantiles["q97.5"] > 0.5  # symmetric, and not degenerate
    shuffled = weat_null(d, mode="shuffled", n_draws=1000, seed=SEED, role_vectors=planted)
    assert shuffled.share_at_least < 0.05 and abs(shuffled.quantiles["q50"]) < 0.2
    # no planted association: the user's d is one more draw from the null, so the share is not small
    plain = {r: rng.normal(size=(n, dim)) for r in "XYAB"}
    d0 = _naive_d(*(list(map(list, plain[r])) for r in "XYAB"))
    null0 = weat_null(d0, mode="vocabulary", n_draws=1000, seed=SEED, role_vectors=plain, pool_vectors=pool)
    assert null0.share_at_least > 0.05
    # the Bayesian paper's point: two targets per group and five attributes reach "large" d with no bias at all
    small = {"X": plain["X"][:2], "Y": plain["Y"][:2], "A": plain["A"][:5], "B": plain["B"][:5]}
    tiny = weat_null(0.0, mode="vocabulary", n_draws=1000, seed=SEED, role_vectors=small, pool_vectors=pool)
    assert tiny.share_large > 0.3 and tiny.max_abs > 1.5 and tiny.share_at_least == 1.0


def _letters(n):
    return ["".join(p) for p in itertools.islice(itertools.product(string.ascii_lowercase, repeat=3), n)]


def test_vocabulary_slice_is_the_documented_frequency_slice():
    words = _letters(VOCAB_SKIP + 50)
    words[VOCAB_SKIP + 3] = "ab1"  # not letters only
    emb = InMemoryEmbeddings("toy", words, np.random.default_rng(SEED).normal(size=(len(words), 4)))
    pool, vectors, label = vocabulary_slice(emb, exclude=[words[VOCAB_SKIP].upper()])
    assert pool == [w for w in words[VOCAB_SKIP + 1:] if w != "ab1"] and len(vectors) == 48
    assert np.allclose(vectors[0], emb.matrix()[VOCAB_SKIP + 1])
    assert f"frequency ranks {VOCAB_SKIP + 1:,} to {VOCAB_SKIP + 50:,}" in label
    glove = word_vectors("glove-6b-50d")
    pool, vectors, label = vocabulary_slice(glove, exclude=["math", "poetry"])
    assert len(pool) == VOCAB_SIZE and all(w.isascii() and w.isalpha() for w in pool)
    assert "math" not in pool and "poetry" not in pool and pool[0] == glove.vocabulary()[VOCAB_SKIP]


class _NoVocabulary(InMemoryEmbeddings):
    def vocabulary(self):
        raise EmbeddingError(MSG_NO_VOCABULARY.format(source=self.name), source=self.name)


def test_run_weat_on_glove_reaches_the_table_figure_csv_json_and_their_reload(tmp_path):
    from biastest.specs import get_spec

    spec = get_spec(WEAT7)
    r = run_weat(spec=spec, seed=0, n_permutations=1000, n_bootstrap=200, null_draws=300)
    null = r.null_simulation
    assert null is not None and null.n_draws == 300 and null.mode == "vocabulary" and null.seed == 0
    assert null.observed == r.effect_size and null.sizes == {k: len(getattr(r, k.lower())) for k in "XYAB"}
    assert r.provenance["null_draws"] == 300 and r.provenance["null_pool"] == null.pool
    again = WEATResult.load_json(r.save_json(tmp_path / "w.json"))
    assert again.null_simulation == null
    mac = run_mac(spec=spec)
    table = weat_frame(r, mac).set_index("quantity")["value"]
    assert table[f"share of {null.n_valid:,} random word lists with |d| ≥ |d|"] == round(null.share_at_least, 6)
    fig = weat_null_figure(r)
    assert list(fig.data[0].x) == list(null.draws) and "%{y} random word lists" in fig.data[0].hovertemplate
    assert [s.x0 for s in fig.layout.shapes] == [r.effect_size, -r.effect_size]
    text = weat_null_markdown(r)
    assert f"{null.n_at_least:,} of {null.n_valid:,}" in text and "1.82" in text
    csv_path, json_path = weat_exports(r, mac, source="glove-6b-50d", spec=spec.to_dict(), directory=tmp_path)
    rows = {row["measure"]: row for row in csv.DictReader(csv_path.open(encoding="utf-8-sig"))}
    share = rows["share of random word lists with |d| >= |observed d|"]
    assert float(share["estimate"]) == pytest.approx(null.share_at_least, abs=1e-4) and int(share["n"]) == null.n_valid
    median = rows["d of random word lists, median (2.5 % and 97.5 % quantiles)"]
    assert float(median["ci_low"]) == pytest.approx(null.quantiles["q2.5"], abs=1e-4)  # the CSV rounds
    doc = json.loads(json_path.read_text(encoding="utf-8"))
    assert doc["weat"]["null_simulation"]["draws"] == pytest.approx(list(null.draws))
    # the app's WEAT results place the reading and the histogram after MAC's table, before the downloads
    from biastest.ui.psychophysics.results import results_view

    view = results_view({"spec": spec, "source": "glove-6b-50d", "weat": r, "mac": mac})
    assert view[-4] == text and list(view[-3].data[0].x) == list(null.draws) and view[-1]["visible"] is True


def test_without_a_vocabulary_or_draws_the_result_says_why():
    words = ["he", "she", "man", "woman", "math", "art", "poem", "sum"]
    vecs = np.random.default_rng(SEED).normal(size=(len(words), 5))
    lists = {"X": ["he", "man"], "Y": ["she", "woman"], "A": ["math", "sum"], "B": ["art", "poem"]}
    r = run_weat(source=_NoVocabulary("enc", words, vecs), seed=0, n_permutations=100, n_bootstrap=100, **lists)
    assert r.null_simulation is None and r.null_note == MSG_NULL_NO_VOCABULARY.format(source="enc")
    assert weat_null_figure(r) is None and html.unescape(weat_null_markdown(r)).endswith(r.null_note)
    small = run_weat(source=InMemoryEmbeddings("small", words, vecs), seed=0, n_permutations=100,
                     n_bootstrap=100, **lists)
    assert small.null_note == MSG_NULL_VOCAB_TOO_SMALL.format(need=8, n=0)
    shuffled = run_weat(source=InMemoryEmbeddings("small", words, vecs), seed=0, n_permutations=100,
                        n_bootstrap=100, null_from="shuffled", null_draws=100, **lists)
    assert shuffled.null_simulation.n_draws == 100 and shuffled.null_note is None
    none = run_weat(source=InMemoryEmbeddings("small", words, vecs), seed=0, n_permutations=100,
                    n_bootstrap=100, null_draws=0, **lists)
    assert none.null_simulation is None and none.null_note is None and MSG_WEAT_NULL_NONE in weat_null_markdown(none)


def test_options_are_checked():
    assert WEATOptions().null_draws == 1_000 and WEATOptions().null_from == "vocabulary"
    with pytest.raises(OptionError):
        WEATOptions.parse(null_from="dictionary")
    with pytest.raises(OptionError) as e:
        WEATOptions.parse(null_draws=-1)
    assert "random word lists" in e.value.message


def test_the_command_line_flags_reach_the_simulation(tmp_path, capsys):
    out = tmp_path / "w.json"
    rc = cli.main(["run", "weat", WEAT7, "--permutations", "200", "--bootstrap", "100", "--null-draws", "150",
                   "--null-from", "shuffled", "--out", str(out)])
    stdout, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err
    doc = json.loads(out.read_text(encoding="utf-8"))
    null = doc["result"]["null_simulation"]
    assert null["mode"] == "shuffled" and null["n_draws"] == 150 and doc["options"]["null_draws"] == 150
    assert f"{100 * null['share_at_least']:.1f} % had |d|" in stdout
