"""The options of a psychometric test of a chat model: the model, the question, the design, the fit.

:class:`~biastest.measures.chat_common.ChatModelOptions` holds the model and its sampling; this adds the question
template (named, or the user's own text), the contexts (sentences with a ``{stimulus}`` slot), the two cues (α = 0
and α = 1), the continuum file (None: the built-in name continuum), which context is the reference of the PSE
shifts, and the fit: sigmoid, how the guess/lapse rate q is set, the bootstrap.

Examples
--------
>>> o = PsychometricChatOptions.parse(model_id="m", seed=1)
>>> o.template, o.cue_pair(), o.reference, o.bootstrap, o.guess_lapse
('which-cue-v1', ('man', 'woman'), 1, 'levels', 'fit')
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from biastest.errors import OptionError
from biastest.measures.base import cli_flag
from biastest.measures.chat_common import ChatModelOptions
from biastest.measures.psychometric_chat.templates import (
    CUSTOM,
    DEFAULT_CONTEXTS,
    DEFAULT_CUES,
    DEFAULT_TEMPLATE,
    QuestionTemplate,
    check_contexts,
    check_cue_pairs,
    check_template_name,
    custom_template,
    resolve_template,
)
from biastest.options import DEFAULT_CONFIDENCE
from biastest.stats.psychometric.guess_lapse import GL_BOOTSTRAPS

__all__ = ["DEFAULT_N_BOOTSTRAP", "GUESS_LAPSE_MODES", "MSG_BAD_CHOICE", "MSG_BAD_REFERENCE",
           "PsychometricChatOptions"]

#: Bootstrap fits per context (and per shift).
DEFAULT_N_BOOTSTRAP = 1000
#: How q is set: fitted with Ψ, or fixed at |2·P(first) − 1| measured on all the run's parseable answers.
GUESS_LAPSE_MODES = ("fit", "position")
SIGMOIDS = ("logistic", "norm")
MSG_BAD_CHOICE = "The option {option} must be one of: {choices}; got '{value}'."
MSG_BAD_REFERENCE = "The reference context must be a number from 1 to {count} (the contexts' count); got {value}."


def _choice(option: str, value: Any, choices: tuple[str, ...]) -> str:
    v = str(value).strip().lower()
    if v not in choices:
        raise OptionError(MSG_BAD_CHOICE.format(option=option, choices=", ".join(choices), value=str(value)[:40]),
                          option=option, value=value)
    return v


class PsychometricChatOptions(ChatModelOptions):
    """Everything a psychometric test of a chat model can be told, checked before any request.

    Attributes
    ----------
    template, template_text :
        A named question template, or the user's own text (then ``template`` is ``custom``), recorded verbatim.
    contexts : tuple of str
        Context sentences, each with ``{stimulus}`` once.
    cues : str
        ``"cue at α = 0/cue at α = 1"`` (default ``man/woman``: the name continuum's α is the share of women);
        several pairs separated by commas (``man/woman, male/female``): every question is asked with every pair,
        the fits are per pair and pooled.
    continuum : str, optional
        A continuum CSV (``stimulus,alpha[,group]``); None: the built-in name continuum.
    reference : int
        Which context (1 = the first) the PSE shifts are measured from.
    sigmoid : {"logistic", "norm"}
    guess_lapse : {"fit", "position"}
        q fitted per context, or fixed for every context at the position share measured on the whole run.
    bootstrap : {"levels", "nonparametric", "parametric"}
        ``levels`` (default) resamples stimuli with their answers (see the card).
    n_bootstrap, confidence :
        Bootstrap fits and the level of the intervals.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=False, protected_namespaces=())

    top_logprobs: int = Field(
        0, json_schema_extra=cli_flag("--top-logprobs",
            "alternatives asked per answer token, recorded with the reply (default 0: none)", metavar="N"))
    template: str = Field(
        DEFAULT_TEMPLATE, json_schema_extra=cli_flag("--template",
            f"named question template (default {DEFAULT_TEMPLATE}; list: which-cue-v1, which-cue-system-v1)",
            metavar="NAME"))
    template_text: str | None = None
    contexts: tuple[str, ...] = Field(
        DEFAULT_CONTEXTS, json_schema_extra=cli_flag("--context",
            "a context sentence with {stimulus} where the stimulus goes; repeatable (default: a person, a nurse, "
            "an engineer)", metavar="SENTENCE"))
    cues: str = Field(
        "/".join(DEFAULT_CUES), json_schema_extra=cli_flag("--cues",
            "the two answers, cue at α = 0 / cue at α = 1 (default man/woman); several pairs separated by commas "
            "(man/woman, male/female, he/she): PSE per pair and pooled", metavar="CUE0/CUE1[,…]"))
    continuum: str | None = Field(
        None, json_schema_extra=cli_flag("--continuum",
            "continuum CSV with columns stimulus,alpha[,group] (default: the built-in name continuum)",
            metavar="FILE"))
    reference: int = Field(
        1, json_schema_extra=cli_flag("--reference", "which context the PSE shifts are measured from (default 1)",
                                      metavar="N"))
    sigmoid: str = Field(
        "logistic", json_schema_extra=cli_flag("--sigmoid", "logistic (default) or norm"))
    guess_lapse: str = Field(
        "fit", json_schema_extra=cli_flag("--guess-lapse",
            "fit (default): q fitted per context; position: q fixed at the measured position share"))
    bootstrap: str = Field(
        "levels", json_schema_extra=cli_flag("--bootstrap-kind",
            "levels (default: stimuli resampled), nonparametric or parametric", metavar="KIND"))
    n_bootstrap: int = Field(
        DEFAULT_N_BOOTSTRAP, json_schema_extra=cli_flag("--bootstrap",
            f"bootstrap fits per context and per shift (default {DEFAULT_N_BOOTSTRAP})", metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence", "level of the intervals (default 0.95)",
                                                       metavar="LEVEL"))

    @field_validator("template", mode="before")
    @classmethod
    def _template(cls, value: Any) -> str:
        return check_template_name(value)

    @field_validator("template_text", mode="before")
    @classmethod
    def _template_text(cls, value: Any) -> Any:
        if value is not None:
            custom_template(value)
        return value

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts(cls, value: Any) -> tuple[str, ...]:
        return check_contexts(value)

    @field_validator("cues", mode="before")
    @classmethod
    def _cues(cls, value: Any) -> str:
        return ", ".join("/".join(pair) for pair in check_cue_pairs(value))

    @field_validator("continuum", mode="before")
    @classmethod
    def _continuum(cls, value: Any) -> Any:
        return None if value is None or not str(value).strip() else str(value).strip()

    @field_validator("sigmoid", mode="before")
    @classmethod
    def _sigmoid(cls, value: Any) -> str:
        return _choice("sigmoid", value, SIGMOIDS)

    @field_validator("guess_lapse", mode="before")
    @classmethod
    def _guess_lapse(cls, value: Any) -> str:
        return _choice("guess_lapse", value, GUESS_LAPSE_MODES)

    @field_validator("bootstrap", mode="before")
    @classmethod
    def _bootstrap(cls, value: Any) -> str:
        return _choice("bootstrap", value, GL_BOOTSTRAPS)

    @model_validator(mode="before")
    @classmethod
    def _custom(cls, data: Any) -> Any:
        """A user template makes the template ``custom``; ``custom`` without a text is refused."""
        if isinstance(data, dict):
            if data.get("template_text") is not None:
                data = {**data, "template": CUSTOM}
            elif str(data.get("template", "")).strip().lower() == CUSTOM:
                custom_template(None)
        return data

    @model_validator(mode="after")
    def _checked(self) -> Self:
        resolve_template(self.template, self.template_text)
        contexts = self.contexts if "contexts" in self.model_fields_set else DEFAULT_CONTEXTS
        if not isinstance(self.reference, int) or not 1 <= self.reference <= len(contexts):
            raise OptionError(MSG_BAD_REFERENCE.format(count=len(contexts), value=self.reference),
                              option="reference", value=self.reference)
        return self

    def prompt(self) -> QuestionTemplate:
        """The template the run asks with."""
        return resolve_template(self.template, self.template_text)

    def cue_pair(self) -> tuple[str, str]:
        """The first pair: (cue at α = 0, cue at α = 1)."""
        return self.cue_pairs()[0]

    def cue_pairs(self) -> tuple[tuple[str, str], ...]:
        """Every cue pair, in the order given (one run asks each question with every pair)."""
        return check_cue_pairs(self.cues)
