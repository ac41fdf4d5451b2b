"""A Bayesian estimate without the app: the command line's ``run bayes`` (and ``--kind embeddings --test bayes``).

Everything is checked with :class:`~biastest.measures.bayes.options.BayesOptions` before the embedding loads; the
headline says whether the sampler converged (on which run), its largest R-hat, the divergent transitions and the
intervals' mass; with three or more groups (Manzini et al.'s religion and race lists), each group's contrast
with the other groups' stereotypes too (the result holds every group contrast).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.bayes import report
from biastest.measures.bayes.options import BayesOptions
from biastest.measures.bayes.run import BayesItems, run
from biastest.measures.embedding_headless import embedding_name, trusted

__all__ = ["headless"]

RECORDED = ("source", "model", "seed", "draws", "tune", "chains", "hdi_prob", "time_limit")


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the Bayesian estimate on the spec's lists with the options ``values``; see the module docstring."""
    options = BayesOptions.given({**BayesOptions.defaults(), **{k: v for k, v in values.items() if v is not None}})
    recorded = {k: getattr(options, k) for k in RECORDED}
    if not inputs.spec.is_group_spec:
        inputs.spec.check_testable()  # two groups and two attribute lists, or one stereotype list per group
    loaded = trusted(options.source, inputs.trust_pickle)
    result = run(options.model_copy(update={"source": loaded}), BayesItems.from_spec(inputs.spec), progress=progress)
    name = embedding_name(recorded["source"], inputs.trust_pickle)
    d = result.diagnostics
    state = "converged" if d.get("converged") else f"NOT CONVERGED ({'; '.join(d.get('problems', ()))})"
    headline = (
        f"Bayesian estimate ({result.model['name']} model, {d.get('attempts')} sampler run(s)): {state}; largest "
        f"R-hat {d.get('max_rhat')}, {d.get('divergences')} divergent transitions, intervals "
        f"{getattr(result, 'level_label', '')}; embedding {name} (seed {result.seed})."
    )
    if not d.get("converged") and d.get("stop_message"):
        headline += " " + d["stop_message"]
    if len(result.data.get("group_names") or ()) > 2:
        headline += " Per group (associated − different, vs the other groups' stereotypes): " + "; ".join(
            f"{r['group']} {r['mean']:+.3f} [{r['hdi_low']:+.3f}, {r['hdi_high']:+.3f}] {r['verdict']}"
            for r in getattr(result, "group_contrasts", ()) if r["contrast"] == "associated − different") + "."
    return Headless("bayes", recorded, result, headline, lambda: report.bayes_exports(result, source=name))
