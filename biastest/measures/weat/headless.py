"""A WEAT run without the app: the command line's ``run weat`` (and ``run SPEC --kind embeddings --test weat``).

As in the app, the run gives WEAT's effect size and permutation test and, beside it, MAC on the same lists
(recorded under ``mac``). Everything is checked with :class:`~biastest.measures.weat.options.WEATOptions` before
the embedding loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.embedding_headless import embedding_name, trusted
from biastest.measures.weat import report
from biastest.measures.weat.options import MACOptions, WEATOptions
from biastest.measures.weat.run import MACItems, WEATItems, run, run_mac

__all__ = ["headless"]


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run WEAT (and MAC) on the spec's lists with the options ``values``; see the module docstring."""
    options = WEATOptions.parse({k: v for k, v in values.items() if v is not None})
    source = options.source
    recorded = {"source": source, "seed": options.seed, "n_permutations": options.n_permutations,
                "n_bootstrap": options.n_resamples, "confidence": options.confidence,
                "null_draws": options.null_draws, "null_from": options.null_from}
    loaded = trusted(source, inputs.trust_pickle)
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
