"""The options of WEAT and MAC: the embedding, the permutation test, the interval of d.

Defaults are today's app, command-line and audit defaults; bounds come from
:data:`biastest.options.BOUNDS` (``n_resamples`` is the number of resamples of
the words behind the interval of d).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from biastest.measures.base import OptionsBase, cli_flag
from biastest.models.embeddings import WordEmbeddings
from biastest.options import DEFAULT_CONFIDENCE, DEFAULT_WEAT_BOOTSTRAP, DEFAULT_WEAT_NULL_DRAWS

__all__ = ["MACOptions", "WEATOptions"]


class WEATOptions(OptionsBase):
    """Options of a WEAT run (Caliskan et al. 2017).

    Attributes
    ----------
    source : str or WordEmbeddings
        The embedding (default the embedded GloVe 6B 50d).
    seed : int
        Seeds the sampled permutations and the resamples of the words; recorded.
    n_permutations, exact_limit : int
        Partitions sampled, or all of them when there are at most ``exact_limit``.
    n_resamples : int
        Resamples of the target words behind a comparison's interval of Δd (recorded in the result); d's own
        interval is the jackknife over the words, which draws nothing (issue 28; before it, this many resamples
        of X, Y, A and B made a percentile interval of d).
    confidence : float
        Level of that interval.
    alternative : {"greater", "less", "two-sided"}
    max_missing_fraction : float
        Refuse a list with more than this share of its words missing.
    null_draws : int
        Random word lists of the same sizes behind "How much can d vary by chance?"
        (:mod:`biastest.measures.weat.null_sim`); 0 = none.
    null_from : {"vocabulary", "shuffled"}
        Where they are drawn from: a frequency-filtered slice of the embedding's vocabulary, or the user's own
        words shuffled between the four roles.
    """

    source: str | WordEmbeddings = Field(
        "glove-6b-50d", json_schema_extra=cli_flag("--model",
            "embedding source (default the embedded GloVe 6B 50d), a word-vector file or a sentence-encoder "
            "folder"))
    seed: int = Field(
        0, json_schema_extra=cli_flag("--seed",
            "seed of the permutations and the bootstrap (default 0, as the app); recorded"))
    n_permutations: int = Field(
        10_000, json_schema_extra=cli_flag("--permutations",
            "permutations for the p-value (default 10000)"))
    exact_limit: int = 100_000
    n_resamples: int = Field(
        DEFAULT_WEAT_BOOTSTRAP, json_schema_extra=cli_flag("--bootstrap",
            "bootstrap resamples of the target words behind a comparison's interval of Δd (default 2000; d's own "
            "interval is the jackknife over the words)",
            metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence",
            "level of the interval of d (default 0.95)",
            metavar="LEVEL"))
    alternative: Literal["greater", "less", "two-sided"] = "greater"
    max_missing_fraction: float = 0.5
    null_draws: int = Field(
        DEFAULT_WEAT_NULL_DRAWS, json_schema_extra=cli_flag("--null-draws",
            "random word lists of the same sizes, to show how much d varies by chance (default 1000; 0 = none)",
            metavar="N"))
    null_from: Literal["vocabulary", "shuffled"] = Field(
        "vocabulary", json_schema_extra=cli_flag("--null-from",
            "draw them from the embedding's vocabulary (default) or shuffle your own words between the roles",
            metavar="vocabulary|shuffled"))


class MACOptions(OptionsBase):
    """Options of a MAC run (Manzini et al. 2019): the embedding and the missing-word limit (MAC has no randomness)."""

    source: str | WordEmbeddings = "glove-6b-50d"
    max_missing_fraction: float = 0.5
