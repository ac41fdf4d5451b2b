"""A 2AFC run without the app: the command line's ``run twoafc`` (``run 2afc``, ``run SPEC --kind embeddings``).

The perceptual noise of one model is ``--noise-sigma`` (default 0.05; 0 means none: a deterministic step); with
replicate embeddings (``--replicate`` files: the command line asks for at least two) the spread comes from the
replicates and no noise is added. Everything is checked with
:class:`~biastest.measures.twoafc.options.TwoAFCOptions` before an embedding loads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from biastest.errors import UsageError
from biastest.measures.base import Headless, Inputs
from biastest.measures.embedding_headless import embedding_name, trusted
from biastest.measures.twoafc import report
from biastest.measures.twoafc.options import TwoAFCOptions
from biastest.measures.twoafc.run import TwoAFCItems, run
from biastest.options import DEFAULT_NOISE_SIGMA, check_option

__all__ = ["MSG_BAD_SIGMA", "MSG_NOISE_WITH_REPLICATES", "headless", "noise_sigma", "prepare"]

MSG_BAD_SIGMA = (
    "The perceptual noise σ must be 0 (no noise: a deterministic step) or a positive number (e.g. 0.05); got {value!r}."
)
MSG_NOISE_WITH_REPLICATES = (
    "The option --noise-sigma does not apply to a run with replicates; it applies to one model. Leave it out."
)
RECORDED = ("source", "replicates", "noise_sigma", "seed", "sigmoid", "lapse", "n_bootstrap", "confidence")


def noise_sigma(value: float | None) -> float | None:
    """The noise of one model: the default when not given, ``None`` for 0, else checked (> 0, ≤ 1).

    Raises
    ------
    UsageError
        :data:`MSG_BAD_SIGMA` for a negative or non-finite value.
    """
    v = DEFAULT_NOISE_SIGMA if value is None else value
    if not math.isfinite(v) or v < 0:
        raise UsageError(MSG_BAD_SIGMA.format(value=value))
    return None if v == 0 else check_option("noise_sigma", v)


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms: the noise of one model (default 0.05, 0 for none), none
    with replicates (refused if given), and the lapse switch."""
    given = {k: v for k, v in values.items() if v is not None}
    replicates = tuple(given.get("replicates") or ()) or None
    if replicates is not None and "noise_sigma" in given:
        raise UsageError(MSG_NOISE_WITH_REPLICATES)
    given["replicates"] = replicates
    given["noise_sigma"] = noise_sigma(given.get("noise_sigma")) if replicates is None else None
    given["lapse"] = bool(given.get("lapse"))
    return given


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run 2AFC on the spec's targets and cue pairs with the options ``values``; see the module docstring."""
    given = dict(values)
    replicates = given.get("replicates")
    options = TwoAFCOptions.parse({k: v for k, v in given.items() if k != "replicates"} | {"replicates": replicates})
    recorded = {k: getattr(options, k) for k in RECORDED}
    recorded["replicates"] = list(replicates) if replicates else None
    trust = inputs.trust_pickle
    if trust:
        options = options.model_copy(update={
            "source": trusted(options.source, True),
            "replicates": tuple(trusted(r, True) for r in replicates) if replicates else None})
    name = embedding_name(recorded["source"], trust)
    result = run(options, TwoAFCItems(spec=inputs.spec), progress=progress)
    headline = (f"2AFC: PSE of {len(result.targets)} target words on {len(result.cue_pairs)} cue pairs, mode "
                f"{result.mode}, embedding {name} (seed {result.seed}).")
    return Headless("2afc", recorded, result, headline,
                    lambda: report.twoafc_exports(result, source=name, spec=inputs.spec.to_dict()))
