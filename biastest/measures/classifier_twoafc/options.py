"""The options of a classifier's 2AFC on occupations: the classifier (shared with the classifier 2AFC), the label
read as the score, the sentences, the ties, the clusters and the labour-statistics validation.

Examples
--------
>>> o = TwoAFCClassifierOptions.parse(model_id="m")
>>> o.label is None, o.clusters, o.labour_table, o.female_cue
(True, 'cue-pair', 'bls', 1)
>>> TwoAFCClassifierOptions.parse(model_id="m", labour_table="census")
Traceback (most recent call last):
...
biastest.errors.OptionError: Unknown labour table 'census'. Choose one of: bls, bergsma, zhao.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from biastest.measures.base import cli_flag
from biastest.measures.classifier_2afc.options import ClassifierModelOptions, check_margin, choice
from biastest.measures.classifier_twoafc.templates import parse_occupation_templates
from biastest.measures.labour import DEFAULT_TABLE, LABOUR_TABLES, check_female_cue, check_table
from biastest.options import DEFAULT_CONFIDENCE

__all__ = ["CLUSTERS", "TwoAFCClassifierOptions"]

#: What leans together in a target's interval: its comparisons of one cue pair (every template), or of one template.
CLUSTERS = ("cue-pair", "template")


class TwoAFCClassifierOptions(ClassifierModelOptions):
    """Everything a classifier's 2AFC on occupations can be told, checked before the model loads.

    Attributes
    ----------
    model_id, revision, device, dtype, endpoint, max_requests, time_limit :
        The classifier (:class:`~biastest.measures.classifier_2afc.options.ClassifierModelOptions`).
    label : str, optional
        The label whose probability is the score (a sentiment model's ``POSITIVE``, a zero-shot or gender
        classifier's label); checked against the model's labels before anything is scored. None: the label called
        ``positive`` or ``pos`` (case aside).
    templates_text : str, optional
        The user's templates (one a line, ``{cue}`` and ``{a_target}`` or ``{target}``), checked; None: the shipped
        ones, four per role of the cue word.
    clusters : {"cue-pair", "template"}
        What leans together within a target (its interval's clusters); overall, the targets are the clusters.
    tie_margin : float
        ``|d|`` at most this is a tie (probability points; default 0: equal scores only).
    female_cue : {1, 2}
        Which cue of each pair is the female one (for the labour-statistics validation).
    labour_table : str
        The table of % women per occupation (:data:`biastest.measures.labour.LABOUR_TABLES`).
    batch_size, seed, n_resamples, confidence :
        Texts per forward pass or request; the bootstrap's seed and size; the level of the intervals.
    """

    label: str | None = Field(None, json_schema_extra=cli_flag(
        "--label", "the label whose probability is the score (default: the label named positive or pos)",
        metavar="LABEL"))
    templates_text: str | None = None
    clusters: str = Field("cue-pair", json_schema_extra=cli_flag(
        "--clusters", "what leans together within a target: cue-pair (default) or template"))
    tie_margin: float = Field(0.0, json_schema_extra=cli_flag(
        "--tie-margin", "a difference at most this is a tie (probability points, default 0)", metavar="P"))
    female_cue: int = Field(1, json_schema_extra=cli_flag(
        "--female-cue", "which cue of each pair is the female one, for the labour-statistics validation (default 1)",
        metavar="1|2"))
    labour_table: str = Field(DEFAULT_TABLE, json_schema_extra=cli_flag(
        "--labour-table", f"the table of % women per occupation to validate against: {', '.join(LABOUR_TABLES)} "
        f"(default {DEFAULT_TABLE})", metavar="NAME"))
    batch_size: int = Field(32, json_schema_extra=cli_flag("--batch-size", "texts per forward pass or request"))
    seed: int = Field(0, json_schema_extra=cli_flag("--seed", "seed of the bootstrap"))
    n_resamples: int = Field(2000, json_schema_extra=cli_flag(
        "--bootstrap", "bootstrap resamples of the intervals (default 2000)", metavar="N"))
    confidence: float = Field(DEFAULT_CONFIDENCE, json_schema_extra=cli_flag(
        "--confidence", "level of the intervals (default 0.95)", metavar="LEVEL"))

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters(cls, value: Any) -> str:
        return choice("clusters", value, CLUSTERS)

    @field_validator("tie_margin", mode="before")
    @classmethod
    def _margin(cls, value: Any) -> float:
        return check_margin(value)

    @field_validator("templates_text", mode="before")
    @classmethod
    def _templates(cls, value: Any) -> Any:
        if value is not None:
            parse_occupation_templates(value)
        return value

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        return None if value is None or not str(value).strip() else str(value).strip()

    @field_validator("female_cue", mode="before")
    @classmethod
    def _female_cue(cls, value: Any) -> int:
        return check_female_cue(value)

    @field_validator("labour_table", mode="before")
    @classmethod
    def _labour_table(cls, value: Any) -> str:
        return check_table(value)
