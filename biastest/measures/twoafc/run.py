"""Running the 2AFC test end to end: :func:`run` (options, items) → :class:`TwoAFCResult`.

It resolves the embedding source (loaded once per process) or trains the
replicates, looks every word up and reports the missing ones per term, refuses
a test whose words are mostly missing
(:data:`biastest.models.embeddings.MSG_MOSTLY_MISSING`), runs the statistics
and records provenance (source, method, seed, spec, versions, time).

Progress reaches the caller as a plain callback ``progress(done, total,
message)``; nothing here knows about Gradio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from biastest.errors import DataError, EmbeddingError
from biastest.measures.embedding_common import (
    MSG_NO_TERMS,
    Progress,
    check_terms,
    joint_lookup,
    resolve_models,
    tick,
)
from biastest.measures.twoafc.jnd import JND_CURVE_DEFINITION, JND_REPLICATE_DEFINITION
from biastest.measures.twoafc.options import TwoAFCOptions
from biastest.measures.twoafc.result import TwoAFCResult
from biastest.measures.twoafc.score import MSG_NO_PAIRS
from biastest.measures.twoafc.summary import twoafc
from biastest.models.embeddings import WordEmbeddings, check_coverage, train_bootstrap_replicates
from biastest.provenance import provenance

__all__ = ["TwoAFCItems", "run"]


@dataclass(frozen=True)
class TwoAFCItems:
    """What a 2AFC run tests: target words and cue pairs (or a spec that gives them).

    Attributes
    ----------
    targets : sequence of str
        Target words (e.g. occupations). Or give ``spec``.
    cue_pairs : sequence of (c1, c2)
        E.g. :data:`biastest.measures.twoafc.score.PAPER_CUE_PAIRS`. Or give ``spec``.
    cue1_label, cue2_label : str, optional
        Names of the two cues (default the spec's, else "cue 1"/"cue 2").
    spec : biastest.spec.TwoAFCSpec, optional
        Fills targets, cue pairs and labels; recorded in provenance.
    """

    targets: Sequence[str] | None = None
    cue_pairs: Sequence[tuple[str, str]] | None = None
    cue1_label: str | None = None
    cue2_label: str | None = None
    spec: Any = None

    def resolved(self) -> TwoAFCItems:
        """The items with the spec's words and labels filled in, and the lists checked."""
        targets, pairs, l1, l2 = self.targets, self.cue_pairs, self.cue1_label, self.cue2_label
        if self.spec is not None:
            targets = targets or list(self.spec.targets)
            pairs = pairs or list(self.spec.cue_pairs)
            l1 = l1 or self.spec.cue1_name
            l2 = l2 or self.spec.cue2_name
        targets = check_terms("target", targets)
        pairs = [tuple(p) for p in (pairs or [])]
        if not pairs:
            raise DataError(MSG_NO_TERMS.format(role="cue pair"), role="cue pair")
        return TwoAFCItems(targets, pairs, l1 or "cue 1", l2 or "cue 2", self.spec)


def _models(options: TwoAFCOptions, progress: Progress | None) -> tuple[list[WordEmbeddings], int, int]:
    """The models of the run (trained on the corpus first when one is given), the progress base and total."""
    replicates = options.replicates
    if options.corpus is None:
        tick(progress, 0, 4, "Loading the embedding")
        return resolve_models(source=options.source, replicates=replicates), 0, 4
    n = options.n_replicates

    def train_progress(done: int, total: int, message: str) -> None:
        tick(progress, done, total + 3, message)

    corpus = list(options.corpus) if isinstance(options.corpus, tuple) else options.corpus
    replicates = train_bootstrap_replicates(
        corpus, n_replicates=n, seed=options.seed, progress=train_progress, **dict(options.train_options or {})
    )
    return resolve_models(source=options.source, replicates=replicates), n, n + 3


def _provenance(options: TwoAFCOptions, models: Sequence[WordEmbeddings], mode: str, spec: Any) -> dict[str, Any]:
    trained = options.corpus is not None
    return provenance(
        method="2AFC psychophysics (Liang & Acuna 2020, eq. 8; closed-form PSE)",
        mode=mode,
        model_id=models[0].name if len(models) == 1 else [m.name for m in models],
        embedding=models[0].describe(),
        n_replicates=len(models),
        replicates_trained_on_corpus=trained,
        train_options=dict(options.train_options or {}) if trained else None,
        noise_sigma=options.noise_sigma,
        jnd_definition=JND_REPLICATE_DEFINITION if len(models) > 1 else JND_CURVE_DEFINITION,
        sigmoid=options.sigmoid,
        lapse=options.lapse,
        n_bootstrap=options.n_bootstrap,
        confidence=options.confidence,
        pse_interval="percentile bootstrap over "
        + ("replicate models" if len(models) > 1 else "cue pairs")
        + ", expanded for few units (Hesterberg 2015)",
        seed=options.seed,
        spec=spec.to_dict() if spec is not None and hasattr(spec, "to_dict") else None,
        max_missing_fraction=options.max_missing_fraction,
    )


def run(
    options: TwoAFCOptions,
    items: TwoAFCItems,
    *,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> TwoAFCResult:
    """Run the 2AFC psychophysics test (Liang & Acuna 2020) end to end.

    Parameters
    ----------
    options : TwoAFCOptions
        The embedding(s), noise mode, fits and intervals.
    items : TwoAFCItems
        Target words and cue pairs (or a spec).
    progress : callable(done, total, message), optional
    cancel : callable, optional
        Not polled: the computation is one vectorised step (accepted for the common signature).

    Returns
    -------
    TwoAFCResult
    """
    items = items.resolved()
    models, base, total = _models(options, progress)
    tick(progress, base + 1, total, "Looking the words up")
    pairs = list(items.cue_pairs)
    cues = list(dict.fromkeys(c for p in pairs for c in p))
    t_report, t_reasons = joint_lookup(models, items.targets)
    c_report, c_reasons = joint_lookup(models, cues)
    check_coverage(t_report, role="target words", max_missing_fraction=options.max_missing_fraction)
    check_coverage(c_report, role="cue words", max_missing_fraction=options.max_missing_fraction)
    dropped_targets = {t: t_reasons[t] for t in items.targets if t in t_reasons}
    used_targets = [t for t in items.targets if t not in t_reasons]
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
    tick(progress, base + 2, total, "Computing PSEs and fitting psychometric functions")
    mode = "replicates" if len(models) > 1 else ("thurstonian" if options.noise_sigma is not None else "single")
    prov = _provenance(options, models, mode, items.spec)
    result = twoafc(
        models,
        targets=used_targets,
        cue_pairs=used_pairs,
        seed=options.seed,
        noise_sigma=options.noise_sigma,
        alpha_grid=options.alpha_grid,
        sigmoid=options.sigmoid,
        lapse=options.lapse,
        n_bootstrap=options.n_bootstrap,
        ci_level=options.confidence,
        labels=(items.cue1_label, items.cue2_label),
    )
    result = result.model_copy(update={
        "dropped_targets": dropped_targets,
        "dropped_pairs": dropped_pairs,
        "lookup": {"targets": t_report.to_dict(), "cues": c_report.to_dict()},
        "provenance": prov,
    })
    tick(progress, total, total, "Done")
    return result
