"""The options of a forced-choice test: the chat model and how it is asked, the prompt, the statistics.

Everything the model part needs is :class:`~biastest.measures.chat_common.ChatModelOptions` (model or endpoint,
temperature, samples per order, answer length, top log-probabilities, seed, response cache); this adds the
prompt template (a name from :data:`~.templates.TEMPLATES`, or the user's own text, checked), the bootstrap and
the clustering. The endpoint's API key is not an option.

Examples
--------
>>> o = ForcedChoiceOptions.parse(model_id="m", seed=1)
>>> o.template, o.samples, o.clusters, o.template_text is None
('plausible-v1', 1, 'auto', True)
>>> ForcedChoiceOptions.parse(model_id="m", seed=1, template_text="{option_a} or {option_b}?").template
'custom'
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from biastest.measures.base import cli_flag
from biastest.measures.chat_common import ChatModelOptions
from biastest.measures.forced_choice.templates import (
    CUSTOM,
    DEFAULT_TEMPLATE,
    PromptTemplate,
    check_template_name,
    custom_template,
    resolve_template,
)
from biastest.measures.stereotype.clusters import DEFAULT_CLUSTERS, check_clusters
from biastest.options import DEFAULT_CONFIDENCE

__all__ = ["DEFAULT_N_RESAMPLES", "ForcedChoiceOptions"]

#: Bootstrap resamples of the share's and the soft score's intervals.
DEFAULT_N_RESAMPLES = 10_000


class ForcedChoiceOptions(ChatModelOptions):
    """Everything a forced-choice test can be told, checked before any request.

    Attributes
    ----------
    template : str
        A named prompt template (``plausible-v1`` …); ``custom`` when ``template_text`` is given.
    template_text : str, optional
        The user's own template (system message, a ``---`` line, user message with ``{option_a}`` and
        ``{option_b}``); checked by :func:`~.templates.custom_template` and recorded verbatim.
    n_resamples, confidence :
        Bootstrap settings of the intervals.
    clusters : {"auto", "template", "attribute-term", "pair"}
        Which items lean together (an item's orders and samples always do).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=False, protected_namespaces=())

    template: str = Field(
        DEFAULT_TEMPLATE, json_schema_extra=cli_flag("--template",
            f"named prompt template (default {DEFAULT_TEMPLATE}; list: plausible-v1, likely-v1)", metavar="NAME"))
    template_text: str | None = None
    n_resamples: int = Field(
        DEFAULT_N_RESAMPLES, json_schema_extra=cli_flag("--bootstrap",
            "bootstrap resamples of the intervals (default 10000)", metavar="N"))
    confidence: float = Field(
        DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence", "level of the intervals (default 0.95)",
                                                       metavar="LEVEL"))
    clusters: str = Field(
        DEFAULT_CLUSTERS, json_schema_extra=cli_flag("--clusters",
            "items that lean together: auto (default), template, attribute-term or pair (an item's orders and "
            "samples always do)"))

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

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters(cls, value: Any) -> str:
        return check_clusters(value)

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

    def prompt(self) -> PromptTemplate:
        """The template the run asks with."""
        return resolve_template(self.template, self.template_text)
