"""The options of a 2AFC test of a chat model: the model and how it is asked, the question, the statistics.

The model part is :class:`~biastest.measures.chat_common.ChatModelOptions` (model or endpoint, temperature,
samples per question and order, answer length, top log-probabilities, seed, response cache); this adds the
question template (a name from :data:`~.templates.TEMPLATES`, or the user's own text, checked), the bootstrap, the
confidence level and which cue of the specification is the female one (for the labour-statistics validation).

Examples
--------
>>> o = TwoAFCChatOptions.parse(model_id="m", seed=1)
>>> o.template, o.samples, o.female_cue
('occupation-who-v1', 1, 1)
>>> TwoAFCChatOptions.parse(model_id="m", seed=1, template_text="{target}: {option_a} or {option_b}?").template
'custom'
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from biastest.measures.base import cli_flag
from biastest.measures.chat_common import ChatModelOptions
from biastest.measures.chat_twoafc.templates import (
    CUSTOM,
    DEFAULT_TEMPLATE,
    TEMPLATES,
    ChatTemplate,
    check_template_name,
    custom_template,
    resolve_template,
)
from biastest.measures.labour import DEFAULT_TABLE, LABOUR_TABLES, MSG_BAD_FEMALE_CUE, check_female_cue, check_table
from biastest.options import DEFAULT_CONFIDENCE

__all__ = ["DEFAULT_N_RESAMPLES", "MSG_BAD_FEMALE_CUE", "TwoAFCChatOptions"]

#: Bootstrap resamples of every interval (per target, overall, the correlation).
DEFAULT_N_RESAMPLES = 2000


class TwoAFCChatOptions(ChatModelOptions):
    """Everything a 2AFC test of a chat model can be told, checked before any request.

    Attributes
    ----------
    template : str
        A named question template (``occupation-who-v1`` …); ``custom`` when ``template_text`` is given.
    template_text : str, optional
        The user's own template (system message, a ``---`` line, user message with ``{target}``,
        ``{option_a}`` and ``{option_b}``); checked by :func:`~.templates.custom_template`, recorded verbatim.
    n_resamples, confidence :
        Bootstrap settings of the intervals.
    female_cue : {1, 2}
        Which cue of each pair is the female one (the occupations specification: 1, woman/man …); the
        labour-statistics correlation is of P(female cue).
    labour_table : str
        The table of % women per occupation (:data:`biastest.measures.labour.LABOUR_TABLES`: ``bls`` by default,
        ``bergsma``, ``zhao``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=False, protected_namespaces=())

    template: str = Field(
        DEFAULT_TEMPLATE, json_schema_extra=cli_flag("--template",
            f"named question template (default {DEFAULT_TEMPLATE}; list: {', '.join(TEMPLATES)})", metavar="NAME"))
    template_text: str | None = None
    n_resamples: int = Field(
        DEFAULT_N_RESAMPLES, json_schema_extra=cli_flag("--bootstrap",
            f"bootstrap resamples of the intervals (default {DEFAULT_N_RESAMPLES})", metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence", "level of the intervals (default 0.95)",
                                                       metavar="LEVEL"))
    female_cue: int = Field(
        1, json_schema_extra=cli_flag("--female-cue",
            "which cue of each pair is the female one, for the labour-statistics validation (default 1)",
            metavar="1|2"))
    labour_table: str = Field(
        DEFAULT_TABLE, json_schema_extra=cli_flag("--labour-table",
            f"the table of % women per occupation to validate against: {', '.join(LABOUR_TABLES)} (default "
            f"{DEFAULT_TABLE})", metavar="NAME"))

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

    @field_validator("female_cue", mode="before")
    @classmethod
    def _female_cue(cls, value: Any) -> int:
        return check_female_cue(value)

    @field_validator("labour_table", mode="before")
    @classmethod
    def _labour_table(cls, value: Any) -> str:
        return check_table(value)

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
    def _resolved(self) -> Self:
        resolve_template(self.template, self.template_text)
        return self

    def prompt(self) -> ChatTemplate:
        """The template the run asks with."""
        return resolve_template(self.template, self.template_text)
