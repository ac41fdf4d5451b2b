"""The Bayesian estimate's options: embedding, model, sampler settings, interval mass and retry bounds.

Defaults are the app's, the command line's and the measure's run's (one place: here). Every sampler setting
named in :data:`biastest.options.BOUNDS` (``seed``, ``draws``, ``tune``, ``chains``, ``hdi_prob``,
``time_limit``) is checked with the project's bound messages before any embedding loads; an unknown
model gives :data:`~biastest.measures.bayes.score.MSG_UNKNOWN_MODEL`.

Examples
--------
>>> BayesOptions.parse({"draws": 500}).draws
500
>>> BayesOptions.parse({"model": "hierarchal"})
Traceback (most recent call last):
...
biastest.errors.MethodError: There is no Bayesian model called 'hierarchal'. Choose one of: additive, hierarchical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, field_serializer, field_validator

from biastest.errors import MethodError
from biastest.measures.base import OptionsBase, cli_flag
from biastest.measures.bayes.score import (
    BAYES_MODELS,
    DEFAULT_CHAINS,
    DEFAULT_DRAWS,
    DEFAULT_TIME_LIMIT,
    DEFAULT_TUNE,
    HDI_PROB,
    MAX_ATTEMPTS,
    MSG_BAD_ATTEMPTS,
    MSG_UNKNOWN_MODEL,
)
from biastest.options import BOUNDS, check_option

__all__ = ["DEFAULT_SOURCE", "BayesOptions", "EmbeddingSamplerOptions"]

#: The embedding both samplers use by default (shipped with the project).
DEFAULT_SOURCE = "glove-6b-50d"


class EmbeddingSamplerOptions(OptionsBase):
    """What the two word-embedding samplers (Bayesian estimate, posterior sampler) share: the embedding and the seed.

    ``source`` is an embedding source name, or embeddings already loaded (the command line's
    ``--trust-gensim-file`` loads them with the opt-in); its dump is the source's name.
    """

    source: Any = Field(
        DEFAULT_SOURCE, json_schema_extra=cli_flag("--model",
            "embedding source (default the embedded GloVe 6B 50d), a word-vector file or a sentence-encoder "
            "folder"))
    seed: int = Field(
        0, json_schema_extra=cli_flag("--seed",
            "seed of the sampler (default 0, as the app); recorded"))

    @field_serializer("source")
    def _source_name(self, source: Any) -> str:
        return source if isinstance(source, str) else str(getattr(source, "name", source))

    @classmethod
    def given(cls, values: Mapping[str, Any]) -> Self:
        """Options from values a caller gave explicitly: unlike :meth:`parse`, a ``None`` is refused, not defaulted.

        Raises
        ------
        OptionError
            The bound's message for a ``None`` (or any bad value) of a bounded option.
        """
        for name, value in values.items():
            if value is None and name in BOUNDS and name in cls.model_fields:
                check_option(name, value)
        return cls.parse(values)


class BayesOptions(EmbeddingSamplerOptions):
    """Options of the Bayesian estimate with control groups.

    Parameters
    ----------
    source : str or WordEmbeddings
        Embedding source (default the shipped GloVe 6B 50d).
    model : {"hierarchical", "additive"}
        See :data:`~biastest.measures.bayes.score.BAYES_MODELS`.
    seed, draws, tune, chains : int
        Sampler settings of the first attempt (draws and tuning steps per chain).
    hdi_prob : float
        Mass of the highest posterior density intervals (0.5–0.999; the method's 0.89).
    time_limit : float
        Seconds within which further sampler attempts must be expected to end.
    max_attempts : int
        Most sampler attempts (1 = no retry).
    """

    model: str = Field(
        "hierarchical", json_schema_extra=cli_flag("--bayes-model",
            "hierarchical or additive"))
    draws: int = Field(
        DEFAULT_DRAWS, json_schema_extra=cli_flag("--draws",
            "draws per chain of the first sampler run (default 2000)"))
    tune: int = Field(
        DEFAULT_TUNE, json_schema_extra=cli_flag("--tune",
            "tuning steps per chain of the first sampler run (default 1000)"))
    chains: int = Field(
        DEFAULT_CHAINS, json_schema_extra=cli_flag("--chains",
            "chains (default 2)"))
    hdi_prob: float = Field(
        HDI_PROB, json_schema_extra=cli_flag("--hdi-prob",
            "mass of the highest-posterior-density intervals (default 0.89)"))
    time_limit: float = Field(
        DEFAULT_TIME_LIMIT, json_schema_extra=cli_flag("--sampling-time-limit",
            "an unconverged sampler runs again with more tuning only if the next run is expected to end within "
            "this many seconds (default 120)",
            metavar="SECONDS"))
    max_attempts: int = MAX_ATTEMPTS

    @field_validator("model", mode="before")
    @classmethod
    def _known_model(cls, value: Any) -> str:
        if value not in BAYES_MODELS:
            raise MethodError(MSG_UNKNOWN_MODEL.format(name=value, choices=", ".join(BAYES_MODELS)), name=value)
        return value

    @field_validator("max_attempts", mode="before")
    @classmethod
    def _attempts(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPTS:
            raise MethodError(MSG_BAD_ATTEMPTS.format(value=value, high=MAX_ATTEMPTS), max_attempts=value)
        return value
