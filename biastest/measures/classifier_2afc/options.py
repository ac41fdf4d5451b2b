"""The options of a classifier 2AFC: the classifier (in process or behind an endpoint), its positive label, the
sentences (templates, words, term pairs) and the statistics.

Examples
--------
>>> o = Classifier2AFCOptions.parse(model_id="m")
>>> o.positive_label is None, o.words, o.pairing, o.clusters
(True, 'emotions', 'positional', 'template')
>>> Classifier2AFCOptions.parse(model_id="m", clusters="templates")
Traceback (most recent call last):
...
biastest.errors.OptionError: Unknown clusters 'templates'. Choose one of: template, term-pair.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from biastest.errors import OptionError
from biastest.measures.base import OptionsBase, cli_flag
from biastest.measures.classifier_2afc.templates import parse_templates
from biastest.models.factory import EndpointRef, ModelRef
from biastest.options import DEFAULT_CONFIDENCE

__all__ = ["CLUSTERS", "Classifier2AFCOptions", "ClassifierModelOptions", "MSG_BAD_CHOICE", "MSG_BAD_MARGIN",
           "PAIRINGS", "WORDS", "check_margin", "choice"]

#: Where the ``{word}`` slot's words come from: the shipped emotion words, or the specification's attribute terms.
WORDS = ("emotions", "attributes")
#: Which group terms are compared: the i-th of group 1 with the i-th of group 2, or every term with every term.
PAIRINGS = ("positional", "all")
#: What leans together in the intervals and the tests: pairs of one template, or pairs of one pair of terms.
CLUSTERS = ("template", "term-pair")
MSG_BAD_CHOICE = "Unknown {name} '{value}'. Choose one of: {choices}."
MSG_BAD_MARGIN = "The tie margin must be a number from 0 to 0.5 (probability points), got {value!r}."


def choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise OptionError(MSG_BAD_CHOICE.format(name=name, value=value, choices=", ".join(choices)), option=name,
                          value=value)
    return text


def check_margin(value: Any) -> float:
    """A tie margin from 0 to 0.5 (probability points), or :class:`OptionError` with :data:`MSG_BAD_MARGIN`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 0.5:
        raise OptionError(MSG_BAD_MARGIN.format(value=value), option="tie_margin", value=value)
    return float(value)


class ClassifierModelOptions(OptionsBase):
    """The text classifier a measure scores with, in process or behind an endpoint (shared by ``classifier-2afc``
    and ``twoafc-classifier``), checked before the model loads.

    Attributes
    ----------
    model_id : str
        Hub id or folder of a sequence-classification model; with ``endpoint``, a name for the classifier there.
    revision, device, dtype : str
        In process only.
    endpoint : str, optional
        The full address of a classifier that takes ``POST {"inputs": [...]}`` and answers label scores.
    max_requests, time_limit :
        The endpoint run's request budget (retries included) and time limit.
    """

    model_id: str = Field(json_schema_extra=cli_flag(
        "--model", "Hub id or folder of a text-classification model (with --endpoint: a name for it)"))
    revision: str | None = Field(
        None, json_schema_extra=cli_flag("--revision", "Hub revision (branch, tag or commit)", endpoint="never"))
    device: str = Field(
        "auto", json_schema_extra=cli_flag("--device", "auto, cpu, cuda … (default auto)", endpoint="never"))
    dtype: str = Field(
        "auto", json_schema_extra=cli_flag("--dtype", "auto, float32, float16, bfloat16 (default auto)",
                                           endpoint="never"))
    endpoint: str | None = Field(None, json_schema_extra=cli_flag(
        "--endpoint", "full address of a classifier that takes POST {\"inputs\": [...]} and answers label scores "
        "(e.g. http://localhost:8080/predict)", metavar="URL"))
    max_requests: int = Field(2000, json_schema_extra=cli_flag(
        "--max-requests", "request budget, retries included (default 2000)", endpoint="only"))
    time_limit: float = Field(3600.0, json_schema_extra=cli_flag(
        "--time-limit", "overall time limit (default 3600)", metavar="SECONDS", endpoint="only"))

    def model_ref(self) -> ModelRef:
        """The classifier these options name, for :func:`biastest.models.factory.text_classifier`."""
        endpoint = None if self.endpoint is None else EndpointRef(
            self.endpoint, max_requests=self.max_requests, time_limit=self.time_limit,
            request_timeout=min(120.0, self.time_limit))
        return ModelRef(self.model_id, revision=self.revision, device=self.device, dtype=self.dtype,
                        endpoint=endpoint)


class Classifier2AFCOptions(ClassifierModelOptions):
    """Everything a classifier 2AFC can be told, checked before the model loads.

    Attributes
    ----------
    model_id : str
        Hub id or folder of a sequence-classification model; with ``endpoint``, a name for the classifier there.
    revision, device, dtype : str
        In process only.
    endpoint : str, optional
        The full address of a classifier that takes ``POST {"inputs": [...]}`` and answers label scores.
    max_requests, time_limit :
        The endpoint run's request budget (retries included) and time limit.
    positive_label : str, optional
        The label whose probability is the score; checked against the model's labels before anything is scored.
        None: the label called ``positive`` or ``pos`` (case aside) when the model has one.
    words : {"emotions", "attributes"}
        The ``{word}`` slot's words: the shipped emotion words, or the specification's attribute terms.
    pairing : {"positional", "all"}
    templates_text : str, optional
        The user's templates (one a line, ``{person}`` and ``{word}``), checked; None: the shipped 12.
    clusters : {"template", "term-pair"}
    tie_margin : float
        ``|d|`` at most this is a tie (probability points; default 0: equal scores only).
    batch_size, seed, n_resamples, n_permutations, confidence :
        Texts per forward pass or request; the seed of the bootstrap and the permutations; their sizes; the level.
    """

    positive_label: str | None = Field(None, json_schema_extra=cli_flag(
        "--positive-label", "the label whose probability is the score (default: the label named positive or pos)",
        metavar="LABEL"))
    words: str = Field("emotions", json_schema_extra=cli_flag(
        "--words", "the {word} slot's words: emotions (default, shipped) or attributes (the specification's)"))
    pairing: str = Field("positional", json_schema_extra=cli_flag(
        "--pairing", "group terms compared: positional (default: i-th with i-th) or all"))
    templates_text: str | None = None
    clusters: str = Field("template", json_schema_extra=cli_flag(
        "--clusters", "what leans together: template (default) or term-pair"))
    tie_margin: float = Field(0.0, json_schema_extra=cli_flag(
        "--tie-margin", "a difference at most this is a tie (probability points, default 0)", metavar="P"))
    batch_size: int = Field(32, json_schema_extra=cli_flag("--batch-size", "texts per forward pass or request"))
    seed: int = Field(0, json_schema_extra=cli_flag("--seed", "seed of the bootstrap and the permutations"))
    n_resamples: int = Field(2000, json_schema_extra=cli_flag(
        "--bootstrap", "bootstrap resamples of the intervals (default 2000)", metavar="N"))
    n_permutations: int = Field(10_000, json_schema_extra=cli_flag(
        "--sign-flips", "sign-flip permutations (default 10000; exact when 2^clusters is fewer)", metavar="N"))
    confidence: float = Field(DEFAULT_CONFIDENCE, json_schema_extra=cli_flag(
        "--confidence", "level of the intervals (default 0.95)", metavar="LEVEL"))

    @field_validator("words", mode="before")
    @classmethod
    def _words(cls, value: Any) -> str:
        return choice("words", value, WORDS)

    @field_validator("pairing", mode="before")
    @classmethod
    def _pairing(cls, value: Any) -> str:
        return choice("pairing", value, PAIRINGS)

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
            parse_templates(value)
        return value

    @field_validator("positive_label", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        return None if value is None or not str(value).strip() else str(value).strip()
