"""The options of the 2AFC test: the embedding(s), the noise mode, the fits and the intervals.

Defaults are today's app, command-line and audit defaults; bounds come from
:data:`biastest.options.BOUNDS`; the cross-field rules (one source of noise;
replicates or a corpus, not both) raise their message constants.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from biastest.errors import MethodError
from biastest.measures.base import OptionsBase, cli_flag
from biastest.measures.twoafc.score import MSG_MODES
from biastest.models.embeddings import WordEmbeddings
from biastest.options import BOUNDS, DEFAULT_CONFIDENCE, DEFAULT_TWOAFC_BOOTSTRAP, check_option

__all__ = ["MSG_CORPUS_AND_REPLICATES", "TwoAFCOptions"]

MSG_CORPUS_AND_REPLICATES = "Give either replicate models or a corpus to train them on, not both."


class TwoAFCOptions(OptionsBase):
    """Options of a 2AFC run (Liang & Acuna 2020).

    Attributes
    ----------
    source : str or WordEmbeddings
        The embedding (default the embedded GloVe 6B 50d). Not used when
        ``replicates`` or ``corpus`` is given (the replicates are the models).
    replicates : tuple of source strings or WordEmbeddings, optional
        Two or more replicate models: JND = SD of the PSE across them.
    noise_sigma : float, optional
        Thurstonian perceptual noise for a single model (exclusive with replicates).
    seed : int
        Seeds training and the bootstrap intervals; recorded.
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
    """

    source: str | WordEmbeddings | None = Field(
        "glove-6b-50d", json_schema_extra=cli_flag("--model",
            "embedding source (default the embedded GloVe 6B 50d), a word-vector file or a sentence-encoder "
            "folder"))
    replicates: tuple[str | WordEmbeddings, ...] | None = Field(
        None, json_schema_extra=cli_flag("--replicate",
            "replicate embedding file; repeatable (at least two)",
            metavar="FILE"))
    noise_sigma: float | None = Field(
        None, json_schema_extra=cli_flag("--noise-sigma",
            "perceptual noise σ of one model (default 0.05; 0 = none)"))
    seed: int = Field(
        0, description="seeds training and the bootstrap intervals", json_schema_extra=cli_flag("--seed",
            "seed of the bootstrap intervals (default 0, as the app); recorded"))
    corpus: str | Path | tuple[str, ...] | None = None
    n_replicates: int = 32
    train_options: dict[str, Any] | None = None
    alpha_grid: tuple[float, ...] | None = None
    sigmoid: Literal["norm", "logistic"] = Field(
        "norm", json_schema_extra=cli_flag("--sigmoid",
            "psychometric function, norm or logistic"))
    lapse: bool = Field(
        False, json_schema_extra=cli_flag("--lapse",
            "fit a lapse rate"))
    n_bootstrap: int = Field(
        DEFAULT_TWOAFC_BOOTSTRAP, json_schema_extra=cli_flag("--bootstrap",
            "bootstrap resamples of the cue pairs or replicate models behind the PSE intervals and refits of the "
            "psychometric functions (default 1000)",
            metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence",
            "level of the intervals (default 0.95)",
            metavar="LEVEL"))
    max_missing_fraction: float = 0.5

    @model_validator(mode="after")
    def _one_noise_source(self) -> TwoAFCOptions:
        """Replicates are bounded in number; one source of noise; replicates or a corpus, not both."""
        if self.replicates is not None and len(self.replicates) > BOUNDS["n_replicates"].high:
            check_option("n_replicates", len(self.replicates))
        if (self.replicates or self.corpus is not None) and self.noise_sigma is not None:
            raise MethodError(MSG_MODES)
        if self.replicates and self.corpus is not None:
            raise MethodError(MSG_CORPUS_AND_REPLICATES)
        return self
