"""A vision-language run without the app: the command line's ``run vlm`` (and ``run SPEC --kind vlm``).

:func:`headless` takes the options as the user gave them and the pictures the command line found, checks them
with :class:`~biastest.measures.vlm.options.VLMOptions` before any model loads, runs
:func:`~biastest.measures.vlm.run.run` and says what to record: the options (through an endpoint: without the
in-process ones, the endpoint without credentials, the key as ``***``), a headline and the app's export.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.vlm.options import VLMOptions
from biastest.measures.vlm.report import write_exports
from biastest.measures.vlm.run import VLMItems, run
from biastest.remote import mask_secret, safe_base_url
from biastest.words import plural

__all__ = ["headless"]

#: What a run records of its options in process.
RECORDED = ("model_id", "prompt_template", "question", "combine", "seed", "batch_size", "n_resamples", "confidence",
            "max_new_tokens", "revision", "device", "dtype", "clusters")
#: Options of a model in this process that a model behind an endpoint does not take (it is asked one picture per
#: request, with the question).
IN_PROCESS_ONLY = ("prompt_template", "combine", "batch_size", "revision", "device", "dtype")
ENDPOINT_RECORDED = ("concurrency", "max_requests", "time_limit")


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the vision-language score on ``inputs.images`` with the options ``values``; see the module docstring."""
    given = {k: v for k, v in values.items() if v is not None}
    given["model_id"] = str(given.get("model_id", "")).strip()
    options = VLMOptions.parse(given)
    dumped = options.model_dump()
    recorded = {k: dumped[k] for k in RECORDED}
    recorded["prompt_template"] = list(recorded["prompt_template"])
    where = ""
    if options.endpoint:
        where = safe_base_url(options.endpoint)
        for k in IN_PROCESS_ONLY:
            del recorded[k]
        recorded.update({k: dumped[k] for k in ENDPOINT_RECORDED if k in given})
        recorded.update({"endpoint": where, "api_key": mask_secret(api_key)})
    result = run(options, VLMItems(list(inputs.images), inputs.image_root, inputs.spec), progress=progress,
                 api_key=api_key)
    return Headless("vlm", recorded, result, _headline(result, where), lambda: write_exports(result),
                    notices=list(result.notes))


def _headline(result: Any, where: str) -> str:
    # the headline score: from probabilities, else (a model behind an endpoint that gave none) the single answers
    plain = result.soft if result.soft is not None else result.hard
    c = result.headline_clustered
    if result.cluster_aware and c is not None:
        interval = (f"{c.low:.1f}–{c.high:.1f}" if c.interval_shown else "no interval") + (
            f", {c.n_clusters} clusters by {c.cluster_by}")
    else:
        interval = f"{plain.ci_low:.1f}–{plain.ci_high:.1f}"
    what = "Bias score" if result.soft is not None else "Bias score (single answers)"
    n = result.n_soft if result.soft is not None else result.n_images
    at = f" at {where}" if where else ""
    line = (f"{what} {plain.score:.1f}% ({interval}) over {plural(n, 'image')} with {result.method} on "
            f"{result.model_id}{at} (seed {result.seed}).")
    if result.orders:  # a chat model asked in both orders: what was left out of the share, and the order effect
        line += (f" Of {result.n_answers} answers (both orders), {result.n_refused} refused and "
                 f"{result.n_unparseable} unparseable, left out of the stereotyped share; position bias "
                 f"{_pct(result.position_bias)}, order consistency {_pct(result.order_consistency)}.")
    return line


def _pct(rate: Any) -> str:
    return "—" if rate is None or rate.estimate is None else f"{rate.estimate:.1f}%"
