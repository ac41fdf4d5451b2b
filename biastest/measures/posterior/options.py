"""The posterior sampler's options: embedding, seed, sampler settings, classifier and word-table settings.

The defaults are the measure's run's (the app sets its own, smaller draws and tuning in its controls);
``seed``, ``draws``, ``tune`` and ``chains`` are checked with the project's bound messages before the
embedding loads.

Examples
--------
>>> PosteriorOptions.parse({"draws": 300}).dump()["draws"]
300
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import field_validator, model_validator

from biastest.errors import OptionError
from biastest.measures.bayes.options import EmbeddingSamplerOptions

__all__ = ["MSG_BAD_FOLDS", "MSG_TWO_TRAINING_SOURCES", "PosteriorOptions"]

MSG_BAD_FOLDS = "The number of cross-validation folds must be a whole number from 2 to 10, got {value!r}."
MSG_TWO_TRAINING_SOURCES = (
    "Give the labelled texts once: a CSV file (training_texts) or rows (training_rows), not both."
)


class PosteriorOptions(EmbeddingSamplerOptions):
    """Options of the posterior of embeddings given a sentiment classifier.

    Parameters
    ----------
    source : str or WordEmbeddings
        Embedding source with a vocabulary (word-vector sources; default GloVe 6B 50d).
    seed : int
        Seeds the classifier (split and initialisation), the sampler and the tests.
    draws, tune, chains : int
        Sampler settings per chain.
    hidden, epochs : int
        Classifier settings (``hidden=0``: logistic regression).
    vocab_size : int
        The nearest/farthest word tables search the first ``vocab_size`` alphabetic words of the
        vocabulary (GloVe is ordered by frequency).
    k_words : int
        Words per table.
    training_texts : str, optional
        A CSV file of labelled texts (``text,label``) to learn the classifier from (averaged word vectors, the MLP),
        as the paper did; None (default): the VADER lexicon's words.
    training_rows : tuple of (text, label), optional
        The same as rows in memory (an app's upload); not with ``training_texts``.
    training_positive_label : str, optional
        Which label is positive when it is not recognised (``1``, ``positive``, ``pos`` … are).
    cv_folds : int
        Folds of the cross-validated AUC of a classifier learned from texts (2 … 10).
    """

    draws: int = 2000
    tune: int = 1000
    chains: int = 2
    hidden: int = 8
    epochs: int = 200
    vocab_size: int = 50000
    k_words: int = 10
    training_texts: str | None = None
    training_rows: tuple[tuple[str, str], ...] | None = None
    training_positive_label: str | None = None
    cv_folds: int = 5

    @field_validator("cv_folds", mode="before")
    @classmethod
    def _folds(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 10:
            raise OptionError(MSG_BAD_FOLDS.format(value=value), option="cv_folds", value=value)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.training_texts is not None and self.training_rows is not None:
            raise OptionError(MSG_TWO_TRAINING_SOURCES, option="training_rows")
        return self
