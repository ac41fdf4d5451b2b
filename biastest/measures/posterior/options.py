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

from biastest.measures.bayes.options import EmbeddingSamplerOptions

__all__ = ["PosteriorOptions"]


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
    """

    draws: int = 2000
    tune: int = 1000
    chains: int = 2
    hidden: int = 8
    epochs: int = 200
    vocab_size: int = 50000
    k_words: int = 10
