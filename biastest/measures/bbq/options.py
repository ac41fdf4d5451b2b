"""The options of a BBQ run: the model asked (:class:`~biastest.measures.chat_common.ChatModelOptions`) and the design.

Examples
--------
>>> o = BBQOptions.parse(model_id="dummy", seed=1, categories=["Age"], n_items=20)
>>> o.categories, o.n_items, o.sample_per, o.order, o.template
(('Age',), 20, 'category', 'balanced', 'bbq-v1')
>>> BBQOptions.parse(model_id="dummy", seed=1, categories=["Ages"])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
biastest.errors.OptionError: Unknown BBQ category 'Ages'. Did you mean 'Age'? Choose from: Age, ...
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field, field_validator, model_validator

from biastest.errors import OptionError
from biastest.measures.base import cli_flag, did_you_mean
from biastest.measures.bbq.data import CATEGORIES, CONDITIONS
from biastest.measures.bbq.prompt import DEFAULT_TEMPLATE, check_template, template_text
from biastest.measures.chat_common import ChatModelOptions
from biastest.options import DEFAULT_CONFIDENCE

__all__ = [
    "DEFAULT_N_RESAMPLES",
    "MSG_BAD_CHOICE",
    "MSG_BAD_N_ITEMS",
    "MSG_UNKNOWN_CATEGORY",
    "MSG_UNKNOWN_CONDITION",
    "ORDER_SCHEMES",
    "SAMPLE_PER",
    "BBQOptions",
]

#: How the answers are ordered: ``balanced`` (one order per question; over the questions of a category and
#: context condition the six orders are dealt in turn after a seeded shuffle, so each role is in each position
#: equally often, within one), ``shuffled`` (one order per question drawn from a generator seeded by the seed and the
#: question), ``rotations`` (each question three times: the three rotations of a shuffled order — every role in every
#: position once per question).
ORDER_SCHEMES = ("balanced", "shuffled", "rotations")
#: ``n_items`` per category, or over all the chosen categories.
SAMPLE_PER = ("category", "overall")
DEFAULT_N_RESAMPLES = 10_000
MAX_N_ITEMS = 60_000

MSG_UNKNOWN_CATEGORY = "Unknown BBQ category '{name}'.{hint} Choose from: {choices}."
MSG_UNKNOWN_CONDITION = "Unknown BBQ context condition '{name}'. Choose from: ambig, disambig."
MSG_BAD_N_ITEMS = "The number of BBQ questions must be a whole number from 1 to {limit:,}, got {value!r}."
MSG_BAD_CHOICE = "The option {option} must be one of {choices}, got {value!r}."


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.replace(";", ",").split(",")]
    if not isinstance(value, list | tuple):
        raise OptionError(MSG_UNKNOWN_CATEGORY.format(name=value, hint="", choices=", ".join(CATEGORIES)))
    out: list[str] = []
    for v in value:
        for part in str(v).split(","):
            if part.strip() and part.strip() not in out:
                out.append(part.strip())
    return tuple(out)


class BBQOptions(ChatModelOptions):
    """Everything a BBQ run can be told (see :mod:`biastest.measures.bbq`).

    Attributes
    ----------
    categories : tuple of str
        Categories asked (default all eleven).
    conditions : tuple of str
        Context conditions asked (default both).
    n_items : int, optional
        Questions drawn (seeded, without replacement) per category or overall (``sample_per``); None: all.
    sample_per : {"category", "overall"}
    order : {"balanced", "shuffled", "rotations"}
        :data:`ORDER_SCHEMES`.
    template : str
        A released template's name (``bbq-v1``).
    template_text : str, optional
        The user's own template (checked; recorded verbatim), instead of the named one.
    n_resamples, confidence :
        Cluster bootstrap of the intervals (clusters: category × question_index).
    bbq_dir : str, optional
        The folder of the BBQ files (the command line's ``--bbq-dir``).
    """

    categories: tuple[str, ...] = Field(
        CATEGORIES, json_schema_extra=cli_flag("--category", "a BBQ category to ask (repeatable; default all 11)",
                                               metavar="NAME"))
    conditions: tuple[str, ...] = Field(
        CONDITIONS, json_schema_extra=cli_flag("--condition", "ambig or disambig (repeatable; default both)",
                                               metavar="COND"))
    n_items: int | None = Field(
        None, json_schema_extra=cli_flag("--n-items", "questions drawn (seeded) per category, or overall with "
                                                      "--sample-per overall (default all)", metavar="N"))
    sample_per: str = Field("category", json_schema_extra=cli_flag("--sample-per", "category (default) or overall"))
    order: str = Field("balanced", json_schema_extra=cli_flag(
        "--order", "answer order: balanced (default), shuffled or rotations (each question in 3 orders)"))
    template: str = Field(DEFAULT_TEMPLATE, json_schema_extra=cli_flag("--template", "prompt template name "
                                                                                   "(default bbq-v1)"))
    template_text: str | None = None
    n_resamples: int = Field(DEFAULT_N_RESAMPLES, json_schema_extra=cli_flag(
        "--bootstrap", "cluster bootstrap resamples (default 10000)"))
    confidence: float = Field(DEFAULT_CONFIDENCE, json_schema_extra=cli_flag("--confidence",
                                                                             "interval level (default 0.95)"))
    bbq_dir: str | None = Field(None, json_schema_extra=cli_flag(
        "--bbq-dir", "folder of the BBQ files (*.jsonl and additional_metadata.csv; default <data dir>/bbq)",
        metavar="DIR"))

    @field_validator("categories", mode="before")
    @classmethod
    def _categories(cls, value: Any) -> tuple[str, ...]:
        names = _names(value)
        if not names:
            raise OptionError(MSG_UNKNOWN_CATEGORY.format(name="", hint="", choices=", ".join(CATEGORIES)))
        for n in names:
            if n not in CATEGORIES:
                raise OptionError(MSG_UNKNOWN_CATEGORY.format(name=n, hint=did_you_mean(n, CATEGORIES),
                                                              choices=", ".join(CATEGORIES)), option="categories")
        return tuple(c for c in CATEGORIES if c in names)

    @field_validator("conditions", mode="before")
    @classmethod
    def _conditions(cls, value: Any) -> tuple[str, ...]:
        names = _names(value)
        bad = [n for n in names if n not in CONDITIONS] or ([""] if not names else [])
        if bad:
            raise OptionError(MSG_UNKNOWN_CONDITION.format(name=bad[0]), option="conditions")
        return tuple(c for c in CONDITIONS if c in names)

    @field_validator("n_items", mode="before")
    @classmethod
    def _n_items(cls, value: Any) -> int | None:
        if value is None:
            return None
        ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_N_ITEMS
        if not ok and isinstance(value, str) and value.strip().isdigit():
            value, ok = int(value.strip()), 1 <= int(value.strip()) <= MAX_N_ITEMS
        if not ok:
            raise OptionError(MSG_BAD_N_ITEMS.format(limit=MAX_N_ITEMS, value=value), option="n_items")
        return int(value)

    @field_validator("sample_per", "order", mode="before")
    @classmethod
    def _choice(cls, value: Any, info: Any) -> str:
        choices = SAMPLE_PER if info.field_name == "sample_per" else ORDER_SCHEMES
        if value not in choices:
            raise OptionError(MSG_BAD_CHOICE.format(option=info.field_name, choices=", ".join(choices), value=value),
                              option=info.field_name)
        return str(value)

    @field_validator("template_text", mode="before")
    @classmethod
    def _template_text(cls, value: Any) -> str | None:
        return None if value is None else check_template(value)

    @model_validator(mode="after")
    def _template_known(self) -> Self:
        template_text(self.template, self.template_text)  # an unknown name is refused unless a text is given
        return self

    def prompt_template(self) -> str:
        """The template's text as asked (the user's own, or the named one's)."""
        return template_text(self.template, self.template_text)
