"""A stereotype-score run without the app: the command line's ``run stereotype`` (and ``run SPEC --kind lm``).

:func:`headless` takes the options as the user gave them (a mapping: name → value, flags left out are absent)
and the sentence pairs the command line loaded, fills the defaults that depend on other options (the seed of
the app, 42; the scoring method: ``causal-sum`` through an endpoint, else the first method for the model's
kind), checks everything with :class:`~biastest.measures.stereotype.options.StereotypeOptions` before any model
loads, runs :func:`~biastest.measures.stereotype.run.run` and says what to record: the options (the endpoint
without credentials, the key as ``***``), a one-line headline and the app's CSV/JSON export.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from biastest.measures.base import Headless, Inputs
from biastest.measures.stereotype.options import StereotypeOptions
from biastest.measures.stereotype.report import export_files
from biastest.measures.stereotype.run import StereotypeItems, run
from biastest.measures.stereotype.score import methods_for_kind
from biastest.models.lm import detect_model_kind
from biastest.options import DEFAULT_SEED
from biastest.remote import mask_secret, safe_base_url
from biastest.words import plural

__all__ = ["DEFAULT_SEED", "ENDPOINT_METHOD", "headless", "prepare"]

#: The seed of the language-model app's seed box.
#: A model behind an endpoint is scored as a causal language model.
ENDPOINT_METHOD = "causal-sum"
#: What a run records of its options in process (through an endpoint: without device and dtype, with the
#: endpoint's settings the user gave).
RECORDED = ("model_id", "method", "seed", "revision", "batch_size", "device", "dtype", "n_resamples", "confidence",
            "tie_tolerance", "clusters", "keep_non_minimal")
ENDPOINT_RECORDED = ("concurrency", "max_requests", "time_limit")


def _tokenizer(value: Any) -> Any:
    """``--tokenizer none`` sends text for the server to tokenize (``False``)."""
    return False if isinstance(value, str) and value.strip().lower() == "none" else value


def prepare(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's values in the options' terms: the app's seed, ``--tokenizer none`` as ``False``."""
    given = {k: v for k, v in values.items() if v is not None}
    given.setdefault("seed", DEFAULT_SEED)
    if "model_id" in given:
        given["model_id"] = str(given["model_id"]).strip()
    if "tokenizer" in given:
        given["tokenizer"] = _tokenizer(given["tokenizer"])
    return given


def headless(values: Mapping[str, Any], inputs: Inputs, *, api_key: str | None = None,
             progress: Callable[[int, int, str], None] | None = None) -> Headless:
    """Run the stereotype score on ``inputs.pairs`` with the options ``values``; see the module docstring."""
    given = prepare(values)
    endpoint = given.get("endpoint")
    if "method" not in given:
        # every other option is checked before the model's configuration is read for its kind
        StereotypeOptions.parse({**given, "method": ENDPOINT_METHOD})
        given["method"] = ENDPOINT_METHOD if endpoint else methods_for_kind(
            detect_model_kind(given["model_id"], revision=given.get("revision")))[0]
    options = StereotypeOptions.parse(given)
    dumped = options.model_dump()
    recorded = {k: dumped[k] for k in RECORDED}
    where, notices = "", []
    if endpoint:
        where = safe_base_url(options.endpoint)
        del recorded["device"], recorded["dtype"]
        recorded["tokenizer"] = dumped["tokenizer"]
        recorded.update({k: dumped[k] for k in ENDPOINT_RECORDED if k in given})
        recorded.update({"endpoint": where, "api_key": mask_secret(api_key)})
    result = run(options, StereotypeItems(list(inputs.pairs), inputs.spec), progress=progress, api_key=api_key)
    if endpoint:
        served = result.provenance.get("model") or {}
        notices = [*served.get("notes", []), *([served["stop_message"]] if served.get("stop_message") else [])]
    return Headless("stereotype-score", recorded, result, _headline(result, where), lambda: export_files(result),
                    notices=notices)


def _headline(result: Any, where: str) -> str:
    o, c = result.overall, result.overall_clustered
    if result.cluster_aware and c is not None:
        interval = (f"{c.low:.1f}–{c.high:.1f}" if c.interval_shown else "no interval") + (
            f", {plural(c.n_clusters, 'cluster')} by {c.cluster_by}")
    else:
        interval = f"{o.ci_low:.1f}–{o.ci_high:.1f}"
    return (
        f"Stereotype score {o.score:.1f}% ({interval}), {result.n_scored} of {plural(result.n_pairs, 'pair')} "
        f"scored with {result.method} on {result.model_id}{f' at {where}' if where else ''} "
        f"(seed {result.seed})."
    )
