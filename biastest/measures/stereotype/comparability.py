"""Whether stereotype scores can be compared: scores from text a server split are not in-process scores.

A model behind an endpoint is scored on token-id prompts when its tokenizer loads here (the scores then equal the
same weights' in-process scores), else on text that the server splits into tokens itself, which scores other
tokens (the first token of each sentence has no log-probability, and the server's split may differ): those scores
are not comparable with in-process scores, nor with token-id ones, of the same model. The endpoint model records
which it sent in the result's ``provenance["model"]["prompts"]``
(:data:`biastest.models.endpoint_lm.causal.PROMPTS_TEXT`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from biastest.models.endpoint_lm import PROMPTS_TEXT

__all__ = [
    "MSG_COMPARE_NOT_COMPARABLE",
    "MSG_NOT_COMPARABLE",
    "PROMPTS_PROCESS",
    "PROMPTS_TEXT",
    "comparable",
    "prompts_sent",
    "server_split_text",
]

#: What :func:`prompts_sent` says of a model scored in this process.
PROMPTS_PROCESS = "process"
MSG_NOT_COMPARABLE = (
    "⚠️ **Not comparable with in-process scores of the same model:** the endpoint split the sentences into tokens "
    "itself (no tokenizer was used here), so it scored other tokens than this server would. Give the served model's "
    "tokenizer to get comparable scores."
)
MSG_COMPARE_NOT_COMPARABLE = (
    "⚠️ **Not comparable:** {models} scored text that the endpoint split into tokens itself, and the other models "
    "were scored on the model's own tokens; a difference between them may come from the split, not the model."
)


def _result_provenance(result: Any) -> dict[str, Any]:
    prov = result.get("provenance") if isinstance(result, dict) else getattr(result, "provenance", None)
    return prov if isinstance(prov, dict) else {}


def prompts_sent(result: Any) -> str:
    """``"text"`` (server-split text), ``"token-ids"`` (an endpoint given token ids) or ``"process"`` (in process).

    ``result`` is a :class:`~biastest.measures.stereotype.result.StereotypeResult` or its ``to_dict()``.
    """
    info = _result_provenance(result).get("model")
    if not isinstance(info, dict) or info.get("served_by") != "endpoint":
        return PROMPTS_PROCESS
    return str(info.get("prompts") or PROMPTS_TEXT)


def server_split_text(result: Any) -> bool:
    """Whether ``result``'s scores come from text the endpoint split into tokens itself."""
    return prompts_sent(result) == PROMPTS_TEXT


def comparable(results: Sequence[Any]) -> bool:
    """Whether the results' scores can be compared: all from server-split text, or none of them."""
    split = {server_split_text(r) for r in results}
    return len(split) <= 1
