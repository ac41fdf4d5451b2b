"""Hard debiasing (Bolukbasi et al. 2016) as an embedding transform: naive reference, its properties, the source
string, and what it does to WEAT's gender tests on the shipped GloVe 6B 50d."""

from __future__ import annotations

import numpy as np
import pytest

from biastest.errors import EmbeddingError
from biastest.measures import weat as weat_measure
from biastest.models.cache import ModelCache
from biastest.models.embeddings import (
    MSG_DEBIAS_TWICE,
    MSG_FEW_DEFINITIONAL,
    MSG_UNKNOWN_DEBIAS,
    MSG_UNKNOWN_LISTS,
    HardDebiasedEmbeddings,
    InMemoryEmbeddings,
    debiased_source,
    load_debias_lists,
    load_embeddings,
    resolve_source,
    split_debiased,
)
from biastest.models.embeddings.debias import DebiasLists, equalise, gender_direction, neutralise
from biastest.specs import get_spec

GLOVE = "glove-6b-50d"
DEBIASED = "glove-6b-50d + hard-debias(bolukbasi2016)"


# --------------------------------------------------------------------------- a naive reference
def naive_hard_debias(words, matrix, definitional, specific, equalize):
    """The authors' algorithm (debiaswe/debias.py) written out with loops over a whole vocabulary."""
    index = {w: i for i, w in enumerate(words)}
    vecs = [np.array(v, dtype=np.float64) / np.linalg.norm(v) for v in matrix]
    rows = []
    for a, b in definitional:
        center = (vecs[index[a]] + vecs[index[b]]) / 2
        rows.append(vecs[index[a]] - center)
        rows.append(vecs[index[b]] - center)
    m = np.array(rows)
    m = m - m.mean(axis=0)
    eigval, eigvec = np.linalg.eigh(m.T @ m)  # PCA by the covariance's eigenvectors
    g = eigvec[:, np.argmax(eigval)]
    for i, w in enumerate(words):
        if w not in set(specific):
            v = vecs[i] - (vecs[i] @ g) * g
            vecs[i] = v / np.linalg.norm(v)
    candidates = []
    for e1, e2 in equalize:
        for pair in ((e1.lower(), e2.lower()), (e1.title(), e2.title()), (e1.upper(), e2.upper())):
            if pair not in candidates:
                candidates.append(pair)
    for a, b in candidates:
        if a in index and b in index:
            mid = (vecs[index[a]] + vecs[index[b]]) / 2
            y = mid - (mid @ g) * g
            z = np.sqrt(1 - y @ y)
            if (vecs[index[a]] - vecs[index[b]]) @ g < 0:
                z = -z
            vecs[index[a]] = z * g + y
            vecs[index[b]] = -z * g + y
    return np.array([v / np.linalg.norm(v) for v in vecs]), g


def planted(seed: int = 0, dim: int = 12):
    """A small vocabulary with a planted gender axis: gendered words at ±1 on it, occupations leaning."""
    rng = np.random.default_rng(seed)
    axis = np.zeros(dim)
    axis[0] = 1.0
    words, rows = [], []
    for f, m in [("she", "he"), ("woman", "man"), ("girl", "boy"), ("mother", "father"), ("queen", "king")]:
        base = rng.normal(size=dim)
        base[0] = 0
        words += [f, m]
        rows += [base + 1.2 * axis + rng.normal(0, 0.05, dim), base - 1.2 * axis + rng.normal(0, 0.05, dim)]
    for w, lean in [("nurse", 0.8), ("engineer", -0.8), ("teacher", 0.3), ("table", 0.0), ("pilot", -0.5)]:
        v = rng.normal(size=dim)
        v[0] = lean
        words.append(w)
        rows.append(v)
    lists = DebiasLists(
        name="test", source="test",
        definitional_pairs=(("she", "he"), ("woman", "man"), ("girl", "boy")),
        equalize_pairs=(("mother", "father"), ("Queen", "King")),
        gender_specific=("she", "he", "woman", "man", "girl", "boy", "mother", "father", "queen", "king"),
    )
    return words, np.array(rows), lists


def test_equals_a_naive_reference():
    words, matrix, lists = planted()
    debiased = HardDebiasedEmbeddings(InMemoryEmbeddings("planted", words, matrix), lists)
    want, g = naive_hard_debias(words, matrix, lists.definitional_pairs, lists.gender_specific, lists.equalize_pairs)
    np.testing.assert_allclose(debiased.matrix(), want, atol=1e-6)
    assert abs(abs(float(g @ debiased.direction)) - 1) < 1e-9
    got, missing = debiased.vectors(["nurse", "king"])
    assert missing == []
    np.testing.assert_allclose(got, want[[words.index("nurse"), words.index("king")]], atol=1e-6)


def test_neutral_words_lose_the_direction_and_pairs_are_equalised():
    words, matrix, lists = planted(seed=3)
    d = HardDebiasedEmbeddings(InMemoryEmbeddings("planted", words, matrix), lists)
    g = d.direction
    assert float(g @ (matrix[0] - matrix[1])) > 0  # oriented toward the first (female) words
    neutral, _ = d.vectors(["nurse", "engineer", "teacher", "table", "pilot"])
    assert np.max(np.abs(neutral.astype(np.float64) @ g)) < 1e-6
    np.testing.assert_allclose(np.linalg.norm(d.matrix(), axis=1), 1.0, atol=1e-6)
    for a, b in [("mother", "father"), ("queen", "king")]:
        (va, vb), _ = d.vectors([a, b])
        va, vb = va.astype(np.float64), vb.astype(np.float64)
        assert abs(va @ g + vb @ g) < 1e-6 and va @ g > 0.1
        np.testing.assert_allclose(va - (va @ g) * g, vb - (vb @ g) * g, atol=1e-6)
        for w in ("nurse", "engineer", "table"):  # equidistant from every neutralised word
            (vw,), _ = d.vectors([w])
            assert abs(float(vw @ va) - float(vw @ vb)) < 1e-6
    (she,), _ = d.vectors(["she"])  # gender-specific and not equalised: unchanged (unit)
    np.testing.assert_allclose(she, matrix[0] / np.linalg.norm(matrix[0]), atol=1e-6)


def test_the_steps_on_their_own():
    g = gender_direction([(np.array([3.0, 1.0, 0.0]), np.array([-3.0, 1.0, 0.0]))])
    np.testing.assert_allclose(g, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(neutralise(np.array([[2.0, 0.0, 2.0]]), g), [[0.0, 0.0, 1.0]], atol=1e-12)
    a, b = equalise(np.array([0.8, 0.6, 0.0]), np.array([-0.6, 0.0, 0.8]), g)
    assert abs(a @ g + b @ g) < 1e-12 and abs(np.linalg.norm(a) - 1) < 1e-12
    np.testing.assert_allclose(a[1:], b[1:], atol=1e-12)


def test_an_encoder_is_debiased_term_by_term():
    """A source that embeds whole terms (a sentence encoder) gets the same transform, term by term."""
    words, matrix, lists = planted(seed=5)
    rows = HardDebiasedEmbeddings(InMemoryEmbeddings("planted", words, matrix), lists)
    terms = HardDebiasedEmbeddings(InMemoryEmbeddings("enc", words, matrix, multiword="encoder"), lists)
    got, _ = terms.vectors(words)
    np.testing.assert_allclose(got, rows.matrix(), atol=1e-6)
    assert terms.lookup_report(["nurse"]).source == "enc + hard-debias(bolukbasi2016)"


def test_too_few_definitional_pairs():
    words, matrix, lists = planted()
    keep = [i for i, w in enumerate(words) if w not in ("she", "woman")]
    with pytest.raises(EmbeddingError) as err:
        HardDebiasedEmbeddings(InMemoryEmbeddings("small", [words[i] for i in keep], matrix[keep]), lists)
    assert str(err.value) == MSG_FEW_DEFINITIONAL.format(need=2, pairs="she/he, woman/man, girl/boy",
                                                         source="small", found=1)


def test_the_source_string():
    assert resolve_source("glove-6b-50d+hard-debias") == DEBIASED
    assert resolve_source(" GloVe-6B-50d + Hard-Debias(bolukbasi2016) ") == DEBIASED
    assert debiased_source(GLOVE) == DEBIASED and split_debiased(DEBIASED) == (GLOVE, "bolukbasi2016")
    assert split_debiased(GLOVE) is None
    assert resolve_source("file:/tmp/x.txt+hard-debias") == "file:/tmp/x.txt + hard-debias(bolukbasi2016)"
    with pytest.raises(EmbeddingError) as err:
        resolve_source("glove-6b-50d + hard-debias + hard-debias")
    assert str(err.value) == MSG_DEBIAS_TWICE.format(source="glove-6b-50d + hard-debias")
    with pytest.raises(EmbeddingError) as err:
        resolve_source("glove-6b-50d + hard-debias(mine)")
    assert str(err.value) == MSG_UNKNOWN_LISTS.format(lists="mine")
    with pytest.raises(EmbeddingError) as err:
        debiased_source(GLOVE, "soft")
    assert str(err.value) == MSG_UNKNOWN_DEBIAS.format(value="soft")
    with pytest.raises(EmbeddingError) as err:
        debiased_source(DEBIASED)
    assert str(err.value) == MSG_DEBIAS_TWICE.format(source=DEBIASED)


def test_the_shipped_lists():
    lists = load_debias_lists()
    assert (len(lists.definitional_pairs), len(lists.equalize_pairs), len(lists.gender_specific)) == (10, 52, 218)
    assert lists.definitional_pairs[0] == ("woman", "man") and "tolga-b/debiaswe" in lists.source
    lowered = {tuple(w.lower() for w in p) for p in lists.equalize_pairs}
    seen = [w for p in lowered for w in p]
    assert len(seen) == len(set(seen))  # no word in two equality pairs: the order of equalising cannot matter
    with pytest.raises(EmbeddingError):
        load_debias_lists("other")


# --------------------------------------------------------------------------- the shipped GloVe 6B 50d
@pytest.fixture(scope="module")
def glove_pair():
    cache = ModelCache(4)
    return load_embeddings(GLOVE, cache=cache), load_embeddings("glove-6b-50d+hard-debias", cache=cache)


def test_glove_properties(glove_pair):
    glove, debiased = glove_pair
    assert debiased.name == DEBIASED and debiased.base is glove
    assert len(debiased.pairs_used) == 10 and len(debiased.equalised) >= 40
    g = debiased.direction
    neutral = ["nurse", "engineer", "homemaker", "programmer", "receptionist", "doctor", "babysitter", "table"]
    v, missing = debiased.vectors(neutral)
    assert missing == [] and np.max(np.abs(v.astype(np.float64) @ g)) < 1e-6
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    before, _ = glove.vectors(["nurse", "engineer"])
    assert abs(float(before[0] @ g) / np.linalg.norm(before[0])) > 0.05  # there was something to remove
    for a, b in [("man", "woman"), ("he", "she"), ("king", "queen"), ("grandfather", "grandmother")]:
        (va, vb), _ = debiased.vectors([a, b])
        va, vb = va.astype(np.float64), vb.astype(np.float64)
        assert abs(va @ g + vb @ g) < 1e-6 and abs(va @ g) > 0.1
        np.testing.assert_allclose(va - (va @ g) * g, vb - (vb @ g) * g, atol=1e-6)
        np.testing.assert_allclose([np.linalg.norm(va), np.linalg.norm(vb)], 1.0, atol=1e-6)
    (him,), _ = debiased.vectors(["him"])  # gender-specific, in no equality pair: kept as it was (unit)
    (him0,), _ = glove.vectors(["him"])
    np.testing.assert_allclose(him, him0 / np.linalg.norm(him0), atol=1e-6)
    described = debiased.describe()
    assert described["source"] == DEBIASED and described["transform"]["lists"]["name"] == "bolukbasi2016"


@pytest.mark.parametrize("name", ["WEAT 6: Male vs female names, career vs family",
                                  "WEAT 7: Math vs arts, male vs female terms",
                                  "WEAT 8: Science vs arts, male vs female terms"])
def test_weat_gender_tests_drop(glove_pair, name):
    """On GloVe 6B 50d the gender tests' |d| and |mean association difference| fall after hard debiasing.

    (Measured: WEAT 6 d 1.71 → 0.96; WEAT 7 1.50 → −1.12; WEAT 8 1.49 → −0.20. What is left in WEAT 7 and 8 is
    carried by the attribute words that are in no equality pair, 'him' and 'hers': the test statistic shrinks far
    more than d, which is scaled by the now small spread.)
    """
    glove, debiased = glove_pair
    runs = [weat_measure.run(weat_measure.WEATOptions.parse(source=e, seed=0, n_permutations=200),
                             weat_measure.WEATItems(spec=get_spec(name))) for e in (glove, debiased)]
    assert runs[1].provenance["model_id"] == DEBIASED
    assert abs(runs[1].effect_size) < abs(runs[0].effect_size) - 0.3
    assert abs(runs[1].test_statistic) < abs(runs[0].test_statistic) / 2
