"""Step 1 shared by the language and vision apps: a BiasSpec from the library or four term boxes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from biastest.errors import SpecError
from biastest.spec import BiasSpec
from biastest.specs import get_spec, list_specs
from biastest.ui.common import user_errors

__all__ = ["CUSTOM", "SpecInputs", "build_spec_inputs", "fill_from_library", "spec_from_inputs", "spec_summary"]

CUSTOM = "Custom (type your own terms)"

MSG_SPEC_OK = "✅ Specification is valid: {n1} + {n2} group terms, {a1} + {a2} attribute terms."


@dataclass
class SpecInputs:
    """The components of step 1."""

    library: Any
    group1: Any
    group2: Any
    stereotype1: Any
    antistereotype1: Any
    message: Any

    @property
    def term_boxes(self) -> list[Any]:
        return [self.group1, self.group2, self.stereotype1, self.antistereotype1]


def build_spec_inputs(*, kinds: tuple[str, ...] = ("bias", "weat"), labels: dict[str, str] | None = None) -> SpecInputs:
    """Lay out the library dropdown, the four term boxes and the inline message."""
    labels = {
        "group1": "Social group 1",
        "group2": "Social group 2",
        "stereotype1": "Stereotype for group 1",
        "antistereotype1": "Anti-stereotype for group 1",
        **(labels or {}),
    }
    library = gr.Dropdown(
        choices=[CUSTOM, *list_specs(kinds)],
        value=CUSTOM,
        label="Predefined bias specification",
        info="Pick one from the library, or type your own terms below (comma-separated).",
        elem_id="spec-library",
    )
    with gr.Row():
        group1 = gr.Textbox(label=labels["group1"], placeholder="e.g. man, father, brother", elem_id="spec-group1")
        group2 = gr.Textbox(label=labels["group2"], placeholder="e.g. woman, mother, sister", elem_id="spec-group2")
    with gr.Row():
        stereotype1 = gr.Textbox(
            label=labels["stereotype1"], placeholder="e.g. math, engineering", elem_id="spec-stereotype1"
        )
        antistereotype1 = gr.Textbox(
            label=labels["antistereotype1"], placeholder="e.g. poetry, dance", elem_id="spec-antistereotype1"
        )
    message = gr.Markdown("", elem_id="spec-message")
    return SpecInputs(library, group1, group2, stereotype1, antistereotype1, message)


def fill_from_library(name: str) -> tuple[str, str, str, str, str]:
    """Term boxes and message for a library entry (empty boxes for Custom)."""
    if not name or name == CUSTOM:
        return "", "", "", "", ""
    spec = get_spec(name)
    return (
        ", ".join(spec.group1),
        ", ".join(spec.group2),
        ", ".join(spec.attributes1),
        ", ".join(spec.attributes2),
        spec_summary(spec),
    )


def spec_from_inputs(library: str, group1: str, group2: str, stereotype1: str, antistereotype1: str) -> BiasSpec:
    """Build the spec from step 1; library names and lists are kept when unedited."""
    if library and library != CUSTOM:
        base = get_spec(library)
        edited = (
            ", ".join(base.group1) != (group1 or "").strip()
            or ", ".join(base.group2) != (group2 or "").strip()
            or ", ".join(base.attributes1) != (stereotype1 or "").strip()
            or ", ".join(base.attributes2) != (antistereotype1 or "").strip()
        )
        if not edited:
            return base
        return BiasSpec.from_terms(
            group1=group1,
            group2=group2,
            stereotype1=stereotype1,
            antistereotype1=antistereotype1,
            name=f"{base.name} (edited)",
            group1_name=base.group1_name,
            group2_name=base.group2_name,
            stereotype1_name=base.attribute1_name,
            antistereotype1_name=base.attribute2_name,
            source=f"edited from {base.name}",
            templates=base.templates,
        )
    return BiasSpec.from_terms(
        group1=group1, group2=group2, stereotype1=stereotype1, antistereotype1=antistereotype1
    ).check_testable()


def spec_summary(spec: BiasSpec) -> str:
    """One line saying the spec is valid and how big it is."""
    return MSG_SPEC_OK.format(
        n1=len(spec.group1), n2=len(spec.group2), a1=len(spec.attributes1), a2=len(spec.attributes2)
    )


def validate_message(library: str, group1: str, group2: str, stereotype1: str, antistereotype1: str) -> str:
    """Inline validation text (✅ or the user-facing problem), never an exception."""
    if not any((v or "").strip() for v in (group1, group2, stereotype1, antistereotype1)):
        return ""
    try:
        return spec_summary(spec_from_inputs(library, group1, group2, stereotype1, antistereotype1))
    except SpecError as exc:
        return f"⚠️ {exc.message}"


def wire_validation(inputs: SpecInputs, *, concurrency_id: str) -> None:
    """Validate the four boxes inline as the user leaves each one.

    One queued listener for every box, one event at a time and only the last
    pending one run, so answers cannot overtake each other (a stale
    "is empty" message after a valid spec was typed).
    """
    gr.on(
        [box.blur for box in inputs.term_boxes],
        user_errors(validate_message),
        [inputs.library, *inputs.term_boxes],
        inputs.message,
        concurrency_limit=1,
        concurrency_id=concurrency_id,
        show_progress="hidden",
        trigger_mode="always_last",
    )
