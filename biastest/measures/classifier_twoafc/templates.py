"""The counterfactual sentences of a classifier's 2AFC on occupations: templates with a ``{cue}`` slot and the
occupation, the cue's grammatical role, the filled sentences.

A template is one line with exactly one ``{cue}`` slot and exactly one occupation slot, ``{a_target}`` (the
occupation with its article: "a nurse", "an engineer") or ``{target}`` (the bare word), no other braces; checked by
the classifier 2AFC's :func:`~biastest.measures.classifier_2afc.templates.parse_templates`.

**Shipped** (``biastest/data/classifier_occupation_templates.txt``, written for biastest): four neutral templates
for each role a cue word can play, so every sentence is grammatical — ``noun`` (woman, female, daughter …: "The
{cue} is {a_target}."), ``subject`` (she, he, they: "{cue} is {a_target}."), ``object`` (her, him, them: "The
company hired {cue} as {a_target}."), ``possessive`` (hers, his, theirs: "The {target} job is {cue}."). A cue pair's
role is its first cue's (:func:`cue_role`; a pair whose cues have different roles uses the noun templates).
**The user's** templates (one a line, ``#`` comments) apply to every cue pair as written.

Examples
--------
>>> fill("{cue} is {a_target}.", "she", "engineer")
'She is an engineer.'
>>> cue_role("her"), cue_role("Woman"), pair_role(("she", "him"))
('object', 'noun', 'noun')
>>> [len(v) for v in shipped_templates().values()]
[4, 4, 4, 4]
"""

from __future__ import annotations

from importlib import resources

from biastest.errors import DataError
from biastest.measures.classifier_2afc.templates import MAX_TEMPLATE_CHARS, parse_templates

__all__ = [
    "MSG_BAD_OCCUPATION_TEMPLATE",
    "MSG_NO_OCCUPATION_TEMPLATES",
    "ROLES",
    "a_or_an",
    "cue_role",
    "fill",
    "pair_role",
    "parse_occupation_templates",
    "shipped_templates",
]

#: The roles a cue word plays in a sentence, in the shipped file's order.
ROLES = ("noun", "subject", "object", "possessive")
_ROLE_OF = {"she": "subject", "he": "subject", "they": "subject", "her": "object", "him": "object",
            "them": "object", "hers": "possessive", "his": "possessive", "theirs": "possessive"}
MSG_NO_OCCUPATION_TEMPLATES = (
    "The templates hold no template (one a line, each with {cue} and {a_target} or {target}; lines starting with # "
    "are comments)."
)
MSG_BAD_OCCUPATION_TEMPLATE = (
    "Template {line} is not usable: {problem}. A template has exactly one {{cue}} slot, exactly one occupation slot "
    "({{a_target}} or {{target}}), no other braces, and at most {limit} characters."
)
_SLOTS = {"required": ("cue",), "optional": ("a_target", "target"), "message": MSG_BAD_OCCUPATION_TEMPLATE,
          "empty": MSG_NO_OCCUPATION_TEMPLATES}


def parse_occupation_templates(text: str) -> tuple[str, ...]:
    """The user's templates, each checked (see the module docstring).

    Raises
    ------
    DataError
        :data:`MSG_NO_OCCUPATION_TEMPLATES` or :data:`MSG_BAD_OCCUPATION_TEMPLATE` (with its line).
    """
    templates = parse_templates(text, **_SLOTS)
    for number, t in enumerate(templates, start=1):
        if ("{a_target}" in t) == ("{target}" in t):
            raise DataError(MSG_BAD_OCCUPATION_TEMPLATE.format(
                line=number, problem="it needs exactly one of {a_target} and {target}",
                limit=MAX_TEMPLATE_CHARS))
    return templates


def shipped_templates() -> dict[str, tuple[str, ...]]:
    """Role → the shipped templates of that role (``biastest/data/classifier_occupation_templates.txt``)."""
    text = resources.files("biastest").joinpath("data/classifier_occupation_templates.txt").read_text(
        encoding="utf-8")
    out: dict[str, list[str]] = {}
    role = ROLES[0]
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            role = line[1:-1]
            continue
        if line and not line.startswith("#"):
            out.setdefault(role, []).append(line)
    return {r: parse_occupation_templates("\n".join(out[r])) for r in ROLES}


def cue_role(cue: str) -> str:
    """The role of a cue word: a pronoun's (subject, object, possessive) or ``noun``."""
    return _ROLE_OF.get(str(cue).strip().casefold(), "noun")


def pair_role(pair: tuple[str, str]) -> str:
    """The role of a cue pair: its cues' common role, ``noun`` when they differ."""
    first, second = cue_role(pair[0]), cue_role(pair[1])
    return first if first == second else "noun"


def a_or_an(word: str) -> str:
    """``a`` or ``an`` by the word's first letter (a vowel letter: ``an``)."""
    return "an" if str(word)[:1].lower() in "aeiou" and str(word)[:1] else "a"


def fill(template: str, cue: str, target: str) -> str:
    """The template with its slots filled; the first letter upper-cased when the sentence starts with the cue."""
    text = (template.replace("{a_target}", f"{a_or_an(target)} {target}").replace("{target}", target)
            .replace("{cue}", cue))
    if template.startswith("{cue}") and text:
        text = text[0].upper() + text[1:]
    return text
