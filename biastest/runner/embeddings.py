"""Orchestration of the embedding tests: 2AFC psychophysics, WEAT and MAC.

The app and the command line call these functions only. Each resolves the
embedding source (loaded once per process), looks every word up and reports
the missing ones per term, refuses a test whose words are mostly missing
(:data:`biastest.models.embeddings.MSG_MOSTLY_MISSING`), runs the metric and
records provenance (source, method, seed, spec, versions, time).

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from biastest.errors import DataError, EmbeddingError, MethodError
from biastest.metrics.twoafc import MSG_MODES, MSG_NO_PAIRS, TwoAFCResult, twoafc
from biastest.metrics.weat import MACResult, WEATResult, mac, weat
from biastest.models.embeddings import (
    LookupReport,
    WordEmbeddings,
    check_coverage,
    load_embeddings,
    train_bootstrap_replicates,
)
from biastest.options import (
    BOUNDS,
    DEFAULT_CONFIDENCE,
    DEFAULT_TWOAFC_BOOTSTRAP,
    DEFAULT_WEAT_BOOTSTRAP,
    check_option,
    validate_options,
)
from biastest.provenance import provenance

__all__ = ["run_twoafc", "run_weat", "run_mac", "resolve_models", "MSG_NO_TERMS", "MSG_CORPUS_AND_REPLICATES"]

Progress = Callable[[int, int, str], None]

MSG_NO_TERMS = "The {role} list is empty; add at least one word."
MSG_CORPUS_AND_REPLICATES = "Give either replicate models or a corpus to train them on, not both."


def _tick(progress: Progress | None, done: int, total: int, message: str) -> None:
    if progress is not None:
        progress(done, total, message)


def resolve_models(
    *,
    source: str | WordEmbeddings | None,
    replicates: Sequence[str | WordEmbeddings] | None,
) -> list[WordEmbeddings]:
    """The model(s) of a run: the replicates if given, otherwise the one source."""
    if replicates:
        return [load_embeddings(r) for r in replicates]
    if source is None:
        raise EmbeddingError("Choose an embedding source (for example glove-6b-50d).")
    return [load_embeddings(source)]


def _joint_lookup(models: Sequence[WordEmbeddings], terms: Sequence[str]) -> tuple[LookupReport, dict[str, str]]:
    """Lookup in the first model, and terms missing from any model with the reason."""
    reports = [m.lookup_report(terms) for m in models]
    reasons: dict[str, str] = {}
    for m, rep in zip(models, reports, strict=True):
        for t in rep.terms:
            if not t.found and t.term not in reasons:
                why = f"not in '{m.name}'"
                if t.missing_words:
                    why += f" (missing word(s): {', '.join(t.missing_words)})"
                reasons[t.term] = why
    if len(models) > 1:  # a term is usable only when every replicate has it
        first = reports[0]
        terms_out = tuple(
            type(t)(t.term, False, t.key, "missing", t.missing_words, t.lowercased) if t.term in reasons else t
            for t in first.terms
        )
        return LookupReport(first.source if len(models) == 1 else "replicates", terms_out, first.note), reasons
    return reports[0], reasons


def _check_terms(role: str, terms: Sequence[str] | None) -> list[str]:
    out = [t for t in (terms or []) if isinstance(t, str) and t.strip()]
    if not out:
        raise DataError(MSG_NO_TERMS.format(role=role), role=role)
    return list(dict.fromkeys(out))


def run_twoafc(
    *,
    targets: Sequence[str] | None = None,
    cue_pairs: Sequence[tuple[str, str]] | None = None,
    source: str | WordEmbeddings | None = "glove-6b-50d",
    replicates: Sequence[str | WordEmbeddings] | None = None,
    noise_sigma: float | None = None,
    seed: int,
    progress: Progress | None = None,
    corpus: str | Path | Sequence[str] | None = None,
    n_replicates: int = 32,
    train_options: Mapping[str, Any] | None = None,
    alpha_grid: Sequence[float] | None = None,
    sigmoid: Literal["norm", "logistic"] = "norm",
    lapse: bool = False,
    n_bootstrap: int = DEFAULT_TWOAFC_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    max_missing_fraction: float = 0.5,
    cue1_label: str | None = None,
    cue2_label: str | None = None,
    spec: Any = None,
) -> TwoAFCResult:
    """Run the 2AFC psychophysics test (Liang & Acuna 2020) end to end.

    Parameters
    ----------
    targets : sequence of str
        Target words (e.g. occupations). Or give ``spec``.
    cue_pairs : sequence of (c1, c2)
        E.g. :data:`biastest.metrics.twoafc.PAPER_CUE_PAIRS`. Or give ``spec``.
    source : str or WordEmbeddings
        The embedding (default the embedded GloVe 6B 50d). Not used when
        ``replicates`` or ``corpus`` is given (the replicates are the models).
    replicates : sequence of source strings or WordEmbeddings, optional
        Two or more replicate models: JND = SD of the PSE across them.
    noise_sigma : float, optional
        Thurstonian perceptual noise for a single model (exclusive with replicates).
    seed : int
        Seeds training and the bootstrap intervals; recorded.
    progress : callable(done, total, message), optional
    corpus : path, text or lines, optional
        Train ``n_replicates`` word2vec replicates on Poisson(1) stream-bootstrap
        resamples of it (``train_options`` go to
        :func:`biastest.models.embeddings.train_bootstrap_replicates`).
    alpha_grid, sigmoid, lapse, n_bootstrap :
        Psychometric fits; ``n_bootstrap`` also sets the resamples behind the
        PSE intervals (over replicate models, or over cue pairs for one model).
    confidence : float
        Level of every interval (recorded in the result).
    max_missing_fraction : float
        Refuse when more than this share of the target words or cue words is missing.
    spec : biastest.spec.TwoAFCSpec, optional
        Fills targets, cue pairs and labels; recorded in provenance.

    Returns
    -------
    TwoAFCResult
    """
    validate_options({"seed": seed, "n_bootstrap": n_bootstrap, "noise_sigma": noise_sigma,
                      "n_replicates": n_replicates if corpus is not None else None, "confidence": confidence},
                     optional=("noise_sigma", "n_replicates"))
    if replicates is not None and len(replicates) > BOUNDS["n_replicates"].high:
        check_option("n_replicates", len(replicates))
    if spec is not None:
        targets = targets or list(spec.targets)
        cue_pairs = cue_pairs or list(spec.cue_pairs)
        cue1_label = cue1_label or spec.cue1_name
        cue2_label = cue2_label or spec.cue2_name
    targets = _check_terms("target", targets)
    pairs = [tuple(p) for p in (cue_pairs or [])]
    if not pairs:
        raise DataError(MSG_NO_TERMS.format(role="cue pair"), role="cue pair")
    if (replicates or corpus is not None) and noise_sigma is not None:
        raise MethodError(MSG_MODES)
    if replicates and corpus is not None:
        raise MethodError(MSG_CORPUS_AND_REPLICATES)
    total = 4
    if corpus is not None:

        def train_progress(done: int, n: int, message: str) -> None:
            _tick(progress, done, n + 3, message)

        replicates = train_bootstrap_replicates(
            corpus, n_replicates=n_replicates, seed=seed, progress=train_progress, **dict(train_options or {})
        )
        total = n_replicates + 3
        base = n_replicates
    else:
        base = 0
        _tick(progress, 0, total, "Loading the embedding")
    models = resolve_models(source=source, replicates=replicates)
    _tick(progress, base + 1, total, "Looking the words up")
    cues = list(dict.fromkeys(c for p in pairs for c in p))
    t_report, t_reasons = _joint_lookup(models, targets)
    c_report, c_reasons = _joint_lookup(models, cues)
    check_coverage(t_report, role="target words", max_missing_fraction=max_missing_fraction)
    check_coverage(c_report, role="cue words", max_missing_fraction=max_missing_fraction)
    dropped_targets = {t: t_reasons[t] for t in targets if t in t_reasons}
    used_targets = [t for t in targets if t not in t_reasons]
    dropped_pairs: dict[str, str] = {}
    used_pairs = []
    for c1, c2 in pairs:
        bad = [c for c in (c1, c2) if c in c_reasons]
        if bad:
            dropped_pairs[f"{c1}/{c2}"] = "; ".join(f"'{c}' {c_reasons[c]}" for c in bad)
        else:
            used_pairs.append((c1, c2))
    if not used_pairs:
        raise EmbeddingError(
            MSG_NO_PAIRS.format(source=models[0].name, missing=", ".join(sorted(c_reasons))), missing=sorted(c_reasons)
        )
    _tick(progress, base + 2, total, "Computing PSEs and fitting psychometric functions")
    mode = "replicates" if len(models) > 1 else ("thurstonian" if noise_sigma is not None else "single")
    prov = provenance(
        method="2AFC psychophysics (Liang & Acuna 2020, eq. 8; closed-form PSE)",
        mode=mode,
        model_id=models[0].name if len(models) == 1 else [m.name for m in models],
        embedding=models[0].describe(),
        n_replicates=len(models),
        replicates_trained_on_corpus=corpus is not None,
        train_options=dict(train_options or {}) if corpus is not None else None,
        noise_sigma=noise_sigma,
        jnd_definition="standard deviation of the PSE across replicate models (ddof=1)",
        sigmoid=sigmoid,
        lapse=lapse,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        pse_interval="percentile bootstrap over "
        + ("replicate models" if len(models) > 1 else "cue pairs")
        + ", expanded for few units (Hesterberg 2015)",
        seed=seed,
        spec=spec.to_dict() if spec is not None and hasattr(spec, "to_dict") else None,
        max_missing_fraction=max_missing_fraction,
    )
    result = twoafc(
        models,
        targets=used_targets,
        cue_pairs=used_pairs,
        seed=seed,
        noise_sigma=noise_sigma,
        alpha_grid=alpha_grid,
        sigmoid=sigmoid,
        lapse=lapse,
        n_bootstrap=n_bootstrap,
        ci_level=confidence,
        cue1_label=cue1_label or "cue 1",
        cue2_label=cue2_label or "cue 2",
        dropped_targets=dropped_targets,
        dropped_pairs=dropped_pairs,
        lookup={"targets": t_report.to_dict(), "cues": c_report.to_dict()},
        provenance=prov,
    )
    _tick(progress, total, total, "Done")
    return result


def _weat_inputs(
    X: Sequence[str] | None, Y: Sequence[str] | None, A: Sequence[str] | None, B: Sequence[str] | None, spec: Any
) -> tuple[list[str], list[str], list[str], list[str], dict[str, str]]:
    names = {"X": "X", "Y": "Y", "A": "A", "B": "B"}
    if spec is not None:
        X = X or list(spec.group1)
        Y = Y or list(spec.group2)
        A = A or list(spec.attributes1)
        B = B or list(spec.attributes2)
        names = {"X": spec.group1_name, "Y": spec.group2_name, "A": spec.attribute1_name, "B": spec.attribute2_name}
    return (
        _check_terms(f"target list X ({names['X']})", X),
        _check_terms(f"target list Y ({names['Y']})", Y),
        _check_terms(f"attribute list A ({names['A']})", A),
        _check_terms(f"attribute list B ({names['B']})", B),
        names,
    )


def run_weat(
    *,
    X: Sequence[str] | None = None,
    Y: Sequence[str] | None = None,
    A: Sequence[str] | None = None,
    B: Sequence[str] | None = None,
    source: str | WordEmbeddings = "glove-6b-50d",
    seed: int,
    n_permutations: int = 10_000,
    exact_limit: int = 100_000,
    n_bootstrap: int = DEFAULT_WEAT_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
    max_missing_fraction: float = 0.5,
    names: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    spec: Any = None,
) -> WEATResult:
    """Run WEAT (Caliskan et al. 2017) on an embedding source.

    Missing words are dropped and reported per list; a list with more than
    ``max_missing_fraction`` missing is refused. ``spec`` (a
    :class:`biastest.spec.BiasSpec`) fills X, Y (social groups 1, 2) and A, B
    (attributes 1, 2) and their names. ``n_bootstrap`` resamples of the words
    (X, Y, A and B each with replacement) give the interval of d at level
    ``confidence`` (:func:`biastest.metrics.weat.weat_effect_size_bootstrap`).

    Returns
    -------
    WEATResult
        Effect size d with its interval, test statistic, permutation p-values, per-word table.
    """
    validate_options({"seed": seed, "n_permutations": n_permutations, "n_resamples": n_bootstrap,
                      "confidence": confidence})
    X, Y, A, B, spec_names = _weat_inputs(X, Y, A, B, spec)
    names = {**spec_names, **dict(names or {})}
    _tick(progress, 0, 3, "Loading the embedding")
    emb = load_embeddings(source)
    _tick(progress, 1, 3, "Looking the words up")
    vecs, missing = {}, {}
    for role, words in (("X", X), ("Y", Y), ("A", A), ("B", B)):
        rep = emb.lookup_report(words)
        check_coverage(rep, role=f"words of '{names[role]}'", max_missing_fraction=max_missing_fraction)
        v, miss = emb.vectors(words)
        vecs[role] = (v, [w for w in words if w not in set(miss)])
        missing[role] = tuple(miss)
    _tick(progress, 2, 3, "Computing WEAT and the permutation test")
    prov = provenance(
        method="WEAT (Caliskan et al. 2017): effect size d (ddof=1) and permutation test",
        model_id=emb.name,
        embedding=emb.describe(),
        seed=seed,
        n_permutations=n_permutations,
        exact_limit=exact_limit,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        effect_size_interval="percentile bootstrap over the words (X, Y, A, B each resampled with replacement)",
        alternative=alternative,
        spec=spec.to_dict() if spec is not None and hasattr(spec, "to_dict") else None,
        max_missing_fraction=max_missing_fraction,
    )
    result = weat(
        vecs["X"][0],
        vecs["Y"][0],
        vecs["A"][0],
        vecs["B"][0],
        x_words=vecs["X"][1],
        y_words=vecs["Y"][1],
        a_words=vecs["A"][1],
        b_words=vecs["B"][1],
        seed=seed,
        alternative=alternative,
        n_permutations=n_permutations,
        exact_limit=exact_limit,
        n_bootstrap=n_bootstrap,
        ci_level=confidence,
        names=names,
        missing=missing,
        provenance=prov,
    )
    _tick(progress, 3, 3, "Done")
    return result


def run_mac(
    *,
    words: Sequence[str] | None = None,
    attribute_classes: Mapping[str, Sequence[str]] | None = None,
    source: str | WordEmbeddings = "glove-6b-50d",
    max_missing_fraction: float = 0.5,
    progress: Progress | None = None,
    spec: Any = None,
) -> MACResult:
    """Run MAC (Manzini et al. 2019) on an embedding source.

    ``words`` are the protected words; ``attribute_classes`` maps a class name
    to its attribute words. ``spec`` (a BiasSpec) gives words = both social
    groups and the two attribute lists as classes. MAC has no randomness.

    Returns
    -------
    MACResult
    """
    if spec is not None:
        words = words or list(spec.group1) + list(spec.group2)
        attribute_classes = attribute_classes or {
            spec.attribute1_name: list(spec.attributes1),
            spec.attribute2_name: list(spec.attributes2),
        }
    words = _check_terms("protected word", words)
    if not attribute_classes:
        raise DataError(MSG_NO_TERMS.format(role="attribute class"), role="attribute class")
    classes = {str(k): _check_terms(f"attribute class '{k}'", v) for k, v in attribute_classes.items()}
    _tick(progress, 0, 3, "Loading the embedding")
    emb = load_embeddings(source)
    _tick(progress, 1, 3, "Looking the words up")
    rep = emb.lookup_report(words)
    check_coverage(rep, role="protected words", max_missing_fraction=max_missing_fraction)
    wv, wmiss = emb.vectors(words)
    missing = {"protected words": tuple(wmiss)}
    cvecs, cwords = {}, {}
    for c, terms in classes.items():
        check_coverage(emb.lookup_report(terms), role=f"words of '{c}'", max_missing_fraction=max_missing_fraction)
        v, miss = emb.vectors(terms)
        cvecs[c] = v
        cwords[c] = [t for t in terms if t not in set(miss)]
        missing[c] = tuple(miss)
    _tick(progress, 2, 3, "Computing MAC")
    prov = provenance(
        method="MAC (Manzini et al. 2019): mean cosine distance per protected word and attribute class",
        model_id=emb.name,
        embedding=emb.describe(),
        seed=None,
        spec=spec.to_dict() if spec is not None and hasattr(spec, "to_dict") else None,
        max_missing_fraction=max_missing_fraction,
    )
    result = mac(
        wv,
        cvecs,
        words=[w for w in words if w not in set(wmiss)],
        class_words=cwords,
        missing=missing,
        provenance=prov,
    )
    _tick(progress, 3, 3, "Done")
    return result
