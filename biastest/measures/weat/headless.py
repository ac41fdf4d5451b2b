"""A WEAT run without the app: the command line's ``run weat`` (and ``run SPEC --kind embeddings --test weat``).

As in the app, the run gives WEAT's effect size and permutation test and, beside it, MAC on the same lists
(recorded under ``mac``), with MAC per group where each group has its own stereotype list. A specification with
three or more groups (Manzini et al.'s religion and race lists) gets MAC per group alone (the document's ``test``
is ``mac``): WEAT compares two groups, and the headline says so (:data:`~biastest.spec.MSG_TWO_GROUPS_ONLY`).
Everything is checked with :class:`~biastest.measures.weat.options.WEATOptions` before
the embedding loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.errors import SpecError
from biastest.measures.base import Headless, Inputs
from biastest.measures.embedding_headless import embedding_name, trusted
from biastest.measures.weat import report
from biastest.measures.weat.options import MACOptions, WEATOptions
from biastest.measures.weat.run import MACItems, WEATItems, run, run_mac

__all__ = ["MSG_NO_GROUP_CONTRASTS", "headless"]

MSG_NO_GROUP_CONTRASTS = (
    "no contrast per group: each group needs its own stereotype attribute list, in the same order as the groups"
)


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run WEAT (and MAC) on the spec's lists with the options ``values``; see the module docstring."""
    options = WEATOptions.parse({k: v for k, v in values.items() if v is not None})
    source = options.source
    recorded = {"source": source, "seed": options.seed, "n_permutations": options.n_permutations,
                "n_bootstrap": options.n_resamples, "confidence": options.confidence,
                "null_draws": options.null_draws, "null_from": options.null_from}
    loaded = trusted(source, inputs.trust_pickle)
    if inputs.spec.n_groups > 2:
        return _mac_only(inputs, loaded, recorded, source)
    weat = run(options.model_copy(update={"source": loaded}), WEATItems(spec=inputs.spec), progress=progress)
    mac = run_mac(MACOptions(source=loaded), MACItems(spec=inputs.spec))
    name = embedding_name(source, inputs.trust_pickle)
    headline = (f"WEAT effect size d = {weat.effect_size:.3f} (one-sided p = {weat.p_one_sided:.4g}); MAC = "
                f"{mac.mac:.4f}; embedding {name} (seed {weat.seed}).")
    null = weat.null_simulation
    if null is not None:
        headline += (f" By chance ({null.n_valid:,} random word lists of the same sizes, {null.mode}): "
                     f"{100 * null.share_at_least:.1f} % had |d| ≥ {abs(weat.effect_size):.2f}.")
    elif weat.null_note:
        headline += f" No random word lists: {weat.null_note}"
    return Headless("weat", recorded, weat, headline,
                    lambda: report.weat_exports(weat, mac, source=name, spec=inputs.spec.to_dict()),
                    extra={"mac": mac.to_dict()})


def _mac_only(inputs: Inputs, loaded: Any, recorded: dict[str, Any], source: Any) -> Headless:
    """MAC per group for a spec with three or more groups (WEAT compares two; the headline says why it is absent)."""
    try:
        inputs.spec.check_two_groups("WEAT")
    except SpecError as exc:
        why = exc.message
    mac = run_mac(MACOptions(source=loaded), MACItems(spec=inputs.spec))
    name = embedding_name(source, inputs.trust_pickle)
    groups = "; ".join(f"{c['group']} {c['contrast']:+.3f}" for c in mac.group_contrasts if c["contrast"] is not None)
    per_group = (f"per group, own − other groups' stereotypes (negative = closer to its own): {groups}" if groups
                 else MSG_NO_GROUP_CONTRASTS)
    headline = f"{why} MAC = {mac.mac:.4f}; {per_group}; embedding {name}."
    return Headless("mac", {"source": recorded["source"]}, mac, headline,
                    lambda: report.mac_exports(mac, source=name, spec=inputs.spec.to_dict()))
