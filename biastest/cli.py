"""Command line for headless and batch bias tests, on the same runners as the apps.

Five commands::

    python -m biastest run SPEC --kind lm|vlm|embeddings --model MODEL --out result.json [--csv rows.csv]
    python -m biastest list-specs [--kind lm|vlm|embeddings]
    python -m biastest list-methods [--kind lm|vlm|embeddings]
    python -m biastest audit GRID.yaml --out DIR [--ray ADDRESS|local]   (see biastest.audit)
    python -m biastest report DIR [--out report.html]                     (see biastest.audit.report)

``SPEC`` is the name of a predefined specification (``list-specs``; a typo
gets "did you mean …") or the path of a JSON specification file (BiasTestGPT
form, or a 2AFC form with ``targets`` and ``cue_pairs``).

Where the test data come from, per kind:

- ``lm`` — sentence pairs imported from one or more ``--pairs`` files
  (BiasTestGPT pairs or sentences CSV, CrowS-Pairs CSV, StereoSet JSON; as the
  app's import) or, without ``--pairs``, found in the local dataset store
  (``--store DIR``, default ``$BIASTEST_DATA_DIR`` or
  ``~/.cache/biastest/store``, as the app's "Find sentences").
- ``vlm`` — ``--images DIR`` with one subfolder per image term
  (``DIR/woman/1.png``), or a manifest CSV/JSON with the columns ``path`` and
  ``image_term`` (paths relative to the manifest); without ``--images``, the
  images of the dataset store for the spec's group terms.
- ``embeddings`` — the words of the specification; ``--model`` is an
  embedding source (default the embedded GloVe 6B 50d), a word-vector file or
  a sentence-encoder folder; ``--test 2afc|weat|bayes``.

The JSON written by ``--out`` holds the result's ``to_dict()`` (with its
provenance, seed included), the specification and the effective options; the
CSV written by ``--csv`` is the app's download (text cells neutralised against
formula injection). Nothing else is written, and no key or token is ever
written anywhere.

Exit status: 0 success; 1 the test started but failed at run time (the model
or embedding cannot be loaded, nothing could be scored, a file cannot be
written); 2 bad usage or input (unknown spec, kind, method or option, a
missing file, unusable data). Errors are one user-facing message on stderr
(the library's ``MSG_*`` constants), never a traceback.

This module never imports gradio.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from biastest import settings
from biastest.errors import BiastestError, DataError, MethodError, OptionError, PolicyError, SpecError, UsageError
from biastest.inputs import (
    MSG_FILE_NOT_FOUND,
    MSG_FILE_UNREADABLE,
    embedding_source,
    images_from_folder,
    images_from_store,
    load_spec,
    pairs_from_files,
    pairs_from_store,
)
from biastest.measures.bayes import BayesItems, BayesOptions
from biastest.measures.bayes import report as bayes_report
from biastest.measures.bayes import run as run_bayes
from biastest.options import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_CONFIDENCE,
    DEFAULT_NOISE_SIGMA,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEEDS,
    DEFAULT_TWOAFC_BOOTSTRAP,
    DEFAULT_WEAT_BOOTSTRAP,
)

__all__ = [
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "KINDS",
    "TESTS",
    "build_parser",
    "exit_code_for",
    "main",
]

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2

KINDS = ("lm", "vlm", "embeddings")
TESTS = ("2afc", "weat", "bayes")

BAYES_DEFAULTS = {"bayes_model": "hierarchical"}  # sampler defaults: biastest.measures.bayes.BayesOptions


MSG_UNKNOWN_KIND = "Unknown kind of test '{value}'.{hint} Choose one of: {choices}."
MSG_UNKNOWN_TEST = "Unknown embedding test '{value}'.{hint} Choose one of: {choices}."
MSG_DID_YOU_MEAN = " Did you mean '{suggestion}'?"
MSG_NO_MODEL = "Give the model to test with --model (a Hugging Face Hub id such as {example}, or a local folder)."
MSG_SPEC_NOT_FOR_KIND = (
    "'{name}' is a 2AFC (psychophysics) specification of target words and cue pairs; it can only be run with "
    "--kind embeddings (test 2afc)."
)
MSG_TEST_NEEDS_BIAS_SPEC = (
    "The {test} test needs a bias specification with two social groups and two attribute lists, but '{name}' is a "
    "2AFC specification. Use --test 2afc, or choose another specification (list-specs --kind embeddings)."
)
MSG_2AFC_NEEDS_TWOAFC_SPEC = (
    "The 2afc test needs target words and cue pairs, but '{name}' is a bias specification. Use --test weat or "
    "--test bayes, or choose a 2AFC specification (list-specs --kind embeddings)."
)
MSG_OPTION_NOT_FOR_RUN = "The option {option} does not apply to {what}; it applies to {applies}. Leave it out."
MSG_SAME_OUTPUT = "--out and --csv name the same file '{path}'. Give two different files."
MSG_NO_OUTPUT_FOLDER = "The folder '{path}' for the output file does not exist. Create it first."
MSG_CANNOT_WRITE = "The file '{path}' cannot be written ({problem})."
MSG_BAD_SIGMA = (
    "The perceptual noise σ must be 0 (no noise: a deterministic step) or a positive number (e.g. 0.05); got {value!r}."
)
MSG_TOO_FEW_REPLICATES = "Give at least two replicate embedding files (--replicate FILE, once per file); got {count}."
MSG_UNEXPECTED = (
    "Unexpected error ({type_name}). Nothing was written. If it happens again, report it with the command you ran."
)
MSG_INTERRUPTED = "Interrupted."
MSG_WROTE = "Wrote {path}"
MSG_NEEDS_ENDPOINT = (
    "The option {option} applies only to a model behind an endpoint; give --endpoint URL too, or leave it out."
)
MSG_NOT_WITH_ENDPOINT = (
    "The option {option} does not apply to a model behind an endpoint (the server decides where and how it runs). "
    "Leave it out."
)
MSG_NO_ENDPOINT_MODEL = (
    "Give the name of the model the endpoint serves with --model (for example meta-llama/Llama-3.1-8B; the server's "
    "model list shows it)."
)
MSG_BAD_KEY_ENV = (
    "--api-key-env takes the name of an environment variable that holds the key (such as MY_ENDPOINT_KEY), not the "
    "key itself: keys never go on the command line."
)
MSG_KEY_ENV_UNSET = (
    "The environment variable named by --api-key-env is not set or is empty. Set it to the endpoint's key first "
    "(export NAME=…), then run again."
)

#: Options that apply only with --endpoint; options that do not apply with it.
ENDPOINT_ONLY = ("api_key_env", "tokenizer", "concurrency", "max_requests", "time_limit")
NOT_WITH_ENDPOINT = ("device", "dtype")
#: Options of a vision-language model in this process that a model behind an endpoint does not take (it is asked
#: one image per request, with the question).
NOT_WITH_VLM_ENDPOINT = ("batch_size", "prompt_template", "combine", "revision")

#: Which runs each kind- or test-specific option applies to ("lm", "vlm", or an embedding test).
OPTION_SCOPES: dict[str, tuple[str, ...]] = {
    "method": ("lm",),
    "pairs": ("lm",),
    "format": ("lm",),
    "pairing": ("lm",),
    "tie_tolerance": ("lm",),
    "clusters": ("lm", "vlm"),
    "store": ("lm", "vlm"),
    "batch_size": ("lm", "vlm"),
    "confidence": ("lm", "vlm", "2afc", "weat"),
    "revision": ("lm", "vlm"),
    "device": ("lm", "vlm"),
    "dtype": ("lm", "vlm"),
    "images": ("vlm",),
    "prompt_template": ("vlm",),
    "question": ("vlm",),
    "combine": ("vlm",),
    "max_new_tokens": ("vlm",),
    "bootstrap": ("lm", "vlm", "2afc", "weat"),
    "test": ("2afc", "weat", "bayes"),
    "noise_sigma": ("2afc",),
    "replicate": ("2afc",),
    "sigmoid": ("2afc",),
    "lapse": ("2afc",),
    "permutations": ("weat",),
    "bayes_model": ("bayes",),
    "draws": ("bayes",),
    "tune": ("bayes",),
    "chains": ("bayes",),
    "hdi_prob": ("bayes",),
    "sampling_time_limit": ("bayes",),
    "trust_gensim_file": ("2afc", "weat", "bayes"),
    "endpoint": ("lm", "vlm"),
    "api_key_env": ("lm", "vlm"),
    "tokenizer": ("lm",),
    "concurrency": ("lm", "vlm"),
    "max_requests": ("lm", "vlm"),
    "time_limit": ("lm", "vlm"),
}

EMBEDDING_TESTS = {
    "2afc": "2AFC psychophysics (Liang & Acuna 2020): PSE of each target word on cue pairs; a 2AFC specification.",
    "weat": "WEAT (Caliskan et al. 2017) effect size and permutation test, with MAC (Manzini et al. 2019).",
    "bayes": "Bayesian cosine model with control groups (posterior intervals per word and contrast).",
}


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises instead of exiting, so :func:`main` returns the status."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", usage=self.format_usage())


# --------------------------------------------------------------------------- errors and exit codes
def _nothing_scored_prefix() -> str:
    from biastest.measures.stereotype.summary import MSG_NOTHING_SCORED

    return MSG_NOTHING_SCORED.split("{", 1)[0]


def exit_code_for(exc: BaseException) -> int:
    """The exit status for an error: 2 for bad usage or input, 1 for a failure at run time.

    Parameters
    ----------
    exc : BaseException

    Returns
    -------
    int
        :data:`EXIT_USAGE` for :class:`UsageError`, :class:`SpecError`,
        :class:`MethodError`, :class:`OptionError`, :class:`PolicyError` and
        :class:`DataError` (except "none of the pairs
        could be scored", a run-time outcome); :data:`EXIT_RUN_FAILED` for
        everything else (model or embedding that cannot be loaded or is the
        wrong kind, store, generation and unexpected errors). An embedding file
        refused as unsafe (pickle-based, without ``--trust-gensim-file``) is bad
        input: :data:`EXIT_USAGE`.
    """
    from biastest.errors import EmbeddingError

    if isinstance(exc, EmbeddingError) and exc.details.get("unsafe"):
        return EXIT_USAGE
    if isinstance(exc, DataError) and exc.message.startswith(_nothing_scored_prefix()):
        return EXIT_RUN_FAILED
    if isinstance(exc, (UsageError, SpecError, MethodError, DataError, OptionError, PolicyError)):
        return EXIT_USAGE
    return EXIT_RUN_FAILED


def _suggest(value: str, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(str(value).strip().lower(), list(choices), n=1, cutoff=0.5)
    return MSG_DID_YOU_MEAN.format(suggestion=match[0]) if match else ""


def _check_choice(value: str, choices: Sequence[str], message: str) -> str:
    v = str(value).strip().lower()
    if v in choices:
        return v
    raise UsageError(message.format(value=value, hint=_suggest(value, choices), choices=", ".join(choices)))


# --------------------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m biastest`` (raises :class:`UsageError` on bad arguments)."""
    parser = _Parser(
        prog="python -m biastest",
        description="Test social bias in language, vision-language and embedding models, headless.",
        epilog="Exit status: 0 success, 1 the test failed at run time, 2 bad usage or input.",
    )
    from biastest import __version__

    parser.add_argument("--version", action="version", version=f"biastest {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    ls = sub.add_parser("list-specs", help="names of the predefined specifications, one a line")
    ls.add_argument("--kind", help="only those that run with this kind: lm, vlm or embeddings")
    lm_ = sub.add_parser("list-methods", help="scoring methods and tests, per kind")
    lm_.add_argument("--kind", help="only this kind: lm, vlm or embeddings")
    au = sub.add_parser(
        "audit",
        help="run a grid of models × specifications × methods × seeds (resumable)",
        description="Run every cell of an audit grid (YAML) with the apps' runners; write one result file per cell "
        "and the results table (Parquet and CSV). A rerun skips the finished cells.",
    )
    au.add_argument("grid", metavar="GRID", help="the grid file (YAML; see the README's 'Audits' section)")
    au.add_argument("--out", required=True, metavar="DIR", help="the audit folder (created if missing; reused)")
    au.add_argument("--ray", metavar="ADDRESS",
                    help="run the cells on Ray: 'local' starts Ray on this machine, host:port joins a running "
                    "cluster (needs the optional extra: pip install -r requirements-ray.txt)")
    au.add_argument("--ray-cpus", type=int, metavar="N", help="CPUs of a --ray local instance (default: all)")
    au.add_argument("--no-progress", action="store_true", help="no progress bar")
    rp = sub.add_parser(
        "report",
        help="write the HTML results report of an audit folder",
        description="Write one self-contained HTML file (figures embedded, no server or network needed) with the "
        "forest plots per specification and the model comparisons of an audit folder.",
    )
    rp.add_argument("folder", metavar="DIR", help="the audit folder (python -m biastest audit … --out DIR)")
    rp.add_argument("--out", metavar="FILE", help="the HTML file to write (default DIR/report.html)")

    run = sub.add_parser(
        "run",
        help="run one bias test and write the result",
        description="Run one bias test with the same runner as the app and write the result as JSON (and CSV).",
    )
    run.add_argument("spec", metavar="SPEC", help="predefined specification name (list-specs) or JSON file path")
    run.add_argument("--kind", required=True, help="lm, vlm or embeddings")
    run.add_argument("--model", help="model: Hub id or local folder (lm, vlm); embedding source or file (embeddings)")
    run.add_argument("--out", required=True, help="result JSON file to write")
    run.add_argument("--csv", help="also write the per-item table as CSV (as the app's download)")
    run.add_argument("--seed", type=int, help="seed (default: lm 42, vlm 0, embeddings 0, as the apps); recorded")
    run.add_argument("--progress", action="store_true", help="print progress to stderr")
    run.add_argument("--bootstrap", type=int, metavar="N",
                     help=f"bootstrap resamples: lm, vlm (default 10000); 2afc, of the cue pairs or replicate models "
                     f"behind the PSE intervals and refits of the psychometric functions (default "
                     f"{DEFAULT_TWOAFC_BOOTSTRAP}); weat, of the words behind the interval of d (default "
                     f"{DEFAULT_WEAT_BOOTSTRAP})")
    run.add_argument("--confidence", type=float, metavar="LEVEL",
                     help=f"level of the intervals of lm, vlm, 2afc and weat (default {DEFAULT_CONFIDENCE})")

    g = run.add_argument_group("language models (--kind lm)")
    g.add_argument("--method", help="scoring method (list-methods --kind lm; default: the first for the model kind)")
    g.add_argument("--pairs", action="append", metavar="FILE",
                   help="sentence pairs file (BiasTestGPT CSV, CrowS-Pairs CSV, StereoSet JSON); repeatable")
    g.add_argument("--format", help="format of the --pairs files (default auto)")
    g.add_argument("--pairing", help="counterparts when building pairs from stored sentences: positional or all")
    g.add_argument("--tie-tolerance", type=float, help="score differences within this (nats) are ties")
    g.add_argument("--clusters", help="items that lean together, for the cluster-aware interval and test; lm: "
                   "auto (default: template, else attribute-term, else pair), template, attribute-term or pair; "
                   "vlm: auto (default: image-prompt for generated images, else image-term), image-prompt, "
                   "image-term or image")

    g = run.add_argument_group("models behind an endpoint (--kind lm or vlm --endpoint URL)")
    g.add_argument("--endpoint", metavar="URL",
                   help="API root of an OpenAI-compatible server that serves --model (vLLM: http://localhost:8000/v1): "
                   "lm through its completions (causal-sum and causal-diff-span only), vlm through its chat with "
                   "images (the question, the target terms as the allowed answers)")
    g.add_argument("--api-key-env", metavar="VAR",
                   help="name of the environment variable that holds the endpoint's key (never the key itself)")
    g.add_argument("--tokenizer", metavar="ID_OR_FOLDER",
                   help="the served model's tokenizer (Hub id or folder): token-id prompts, scores equal to "
                   "in-process ones (default: try --model; 'none' sends text for the server to tokenize)")
    g.add_argument("--concurrency", type=int, help="requests in flight at once (default 4)")
    g.add_argument("--max-requests", type=int, help="request budget, retries included (default 2000)")
    g.add_argument("--time-limit", type=float, metavar="SECONDS", help="overall time limit (default 3600)")

    g = run.add_argument_group("language and vision-language models (--kind lm or vlm)")
    g.add_argument("--store", metavar="DIR", help="dataset store folder (default: $BIASTEST_DATA_DIR or the apps')")
    g.add_argument("--batch-size", type=int, help="items per forward pass (default lm 32, vlm 16)")
    g.add_argument("--revision", help="Hub revision (branch, tag or commit)")
    g.add_argument("--device", help="auto, cpu, cuda … (default auto)")
    g.add_argument("--dtype", help="auto, float32, float16, bfloat16 (default auto)")

    g = run.add_argument_group("vision-language models (--kind vlm)")
    g.add_argument("--images", metavar="DIR", help="folder with one subfolder per image term, or a manifest CSV/JSON")
    g.add_argument("--prompt-template", action="append", metavar="TEMPLATE",
                   help="CLIP-like models: prompt with {term}; repeatable (default 'a photo of a {term}')")
    g.add_argument("--question", help="VQA and generative models: the question, with {T1} and {T2}")
    g.add_argument("--combine", help="CLIP-like models with several prompts: sum-prob or mean-embedding")
    g.add_argument("--max-new-tokens", type=int, help="generative models: length of the model's own answer")

    g = run.add_argument_group("word embeddings (--kind embeddings)")
    g.add_argument("--test", help="2afc, weat (with MAC) or bayes (default: 2afc for a 2AFC spec, else weat)")
    g.add_argument("--noise-sigma", type=float, help="2afc: perceptual noise σ of one model (default 0.05; 0 = none)")
    g.add_argument("--replicate", action="append", metavar="FILE", help="2afc: replicate embedding file; repeatable")
    g.add_argument("--sigmoid", help="2afc: psychometric function, norm or logistic")
    g.add_argument("--lapse", action="store_true", default=None, help="2afc: fit a lapse rate")
    g.add_argument("--permutations", type=int, help="weat: permutations for the p-value (default 10000)")
    g.add_argument("--bayes-model", help="bayes: hierarchical or additive")
    g.add_argument("--draws", type=int, help="bayes: draws per chain of the first sampler run (default 2000)")
    g.add_argument("--tune", type=int, help="bayes: tuning steps per chain of the first sampler run (default 1000)")
    g.add_argument("--chains", type=int, help="bayes: chains (default 2)")
    g.add_argument("--hdi-prob", type=float, help="bayes: mass of the highest-posterior-density intervals "
                   "(default 0.89)")
    g.add_argument("--sampling-time-limit", type=float, metavar="SECONDS",
                   help="bayes: an unconverged sampler runs again with more tuning only if the next run is "
                   "expected to end within this many seconds (default 120)")
    g.add_argument(
        "--trust-gensim-file",
        action="store_true",
        default=None,
        help="also open gensim .kv/.model/.wv files (--model, --replicate). They are pickles: opening one RUNS "
        "THE CODE IN THE FILE. Only for files you made yourself or fully trust",
    )
    return parser


# --------------------------------------------------------------------------- list commands
def _specs_for_kind(kind: str | None) -> list[str]:
    from biastest.specs import list_specs

    if kind is None or kind == "embeddings":
        return list_specs()
    return list_specs(("bias", "weat"))


def _cmd_list_specs(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    kind = _check_choice(args.kind, KINDS, MSG_UNKNOWN_KIND) if args.kind else None
    for name in _specs_for_kind(kind):
        out(name)
    return EXIT_OK


def _cmd_list_methods(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    kind = _check_choice(args.kind, KINDS, MSG_UNKNOWN_KIND) if args.kind else None
    if kind in (None, "lm"):
        from biastest.measures.stereotype.score import METHODS

        for m in METHODS.values():
            out(f"lm\t{m.name}\t{'/'.join(m.kinds)} models\t{m.title}")
    if kind in (None, "vlm"):
        from biastest.measures.vlm.options import COMBINE_CHOICES
        from biastest.measures.vlm.options import METHODS as VLM_METHODS

        notes = {"clip": f"--combine {'|'.join(COMBINE_CHOICES)}, --prompt-template",
                 "vqa-classifier": "--question", "generative": "--question, --max-new-tokens"}
        for model_kind, name in VLM_METHODS.items():
            out(f"vlm\t{name}\t{model_kind} models (chosen from the model)\t{notes[model_kind]}")
        from biastest.models.endpoint_vlm import ENDPOINT_METHOD

        out(f"vlm\t{ENDPOINT_METHOD}\tmodels behind an endpoint (--endpoint URL)\t--question, --max-new-tokens")
    if kind in (None, "embeddings"):
        for name, text in EMBEDDING_TESTS.items():
            out(f"embeddings\t{name}\t--test {name}\t{text}")
    return EXIT_OK


# --------------------------------------------------------------------------- run
@dataclass
class _Run:
    """What one ``run`` produced: the document to write and how to write the CSV."""

    document: dict[str, Any]
    write_csv: Callable[[Path], None]
    headline: str
    notices: list[str] = field(default_factory=list)


def _check_scopes(args: argparse.Namespace, scope: str, what: str) -> None:
    for option, scopes in OPTION_SCOPES.items():
        if getattr(args, option, None) is not None and scope not in scopes:
            raise UsageError(
                MSG_OPTION_NOT_FOR_RUN.format(
                    option="--" + option.replace("_", "-"),
                    what=what,
                    applies=", ".join(s if s in KINDS else f"--test {s}" for s in scopes),
                )
            )


#: The run options checked by :func:`biastest.options.check_option`, per flag: (option name per scope).
_CHECKED_FLAGS: dict[str, dict[str, str]] = {
    "seed": {"*": "seed"},
    "bootstrap": {"lm": "n_resamples", "vlm": "n_resamples", "2afc": "n_bootstrap", "weat": "n_resamples"},
    "confidence": {"*": "confidence"},
    "batch_size": {"*": "batch_size"},
    "tie_tolerance": {"*": "tie_tolerance"},
    "max_new_tokens": {"*": "max_new_tokens"},
    "permutations": {"*": "n_permutations"},
    "draws": {"*": "draws"},
    "tune": {"*": "tune"},
    "concurrency": {"*": "concurrency"},
    "max_requests": {"*": "max_requests"},
    "time_limit": {"*": "time_limit"},
    "chains": {"*": "chains"},
    "hdi_prob": {"*": "hdi_prob"},
    "sampling_time_limit": {"*": "time_limit"},
}


def _check_options(args: argparse.Namespace, scope: str) -> None:
    """Validate every numeric option given, before anything is loaded (:mod:`biastest.options`)."""
    from biastest.options import check_option

    for flag, names in _CHECKED_FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        name = names.get(scope, names.get("*"))
        if name is not None:
            check_option(name, value)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _progress(enabled: bool, err: Callable[[str], None]):
    if not enabled:
        return None

    def report(done: int, total: int, message: str) -> None:
        err(f"[{done}/{total}] {message}")

    return report


def _with_trusted_files(options: dict[str, Any], trust: bool | None) -> dict[str, Any]:
    """The runner arguments: with ``--trust-gensim-file``, the embedding sources loaded with the opt-in.

    The runners then receive loaded embeddings; ``options`` (what the result
    JSON records) keeps the source names. Without the flag, unchanged.
    """
    if not trust:
        return options
    from biastest.models.embeddings import load_embeddings

    out = dict(options)
    out["source"] = load_embeddings(options["source"], trust_pickle=True)
    if options.get("replicates"):
        out["replicates"] = [load_embeddings(r, trust_pickle=True) for r in options["replicates"]]
    return out


def _copy_export(make: Callable[[], tuple[Path, Path]]) -> Callable[[Path], None]:
    """A CSV writer that runs the app's export and copies its CSV (the temporary folder is removed)."""

    def write(target: Path) -> None:
        csv_path, _ = make()
        try:
            shutil.copyfile(csv_path, target)
        finally:
            shutil.rmtree(csv_path.parent, ignore_errors=True)

    return write


def _endpoint_args(args, kind: str = "lm") -> dict[str, Any] | None:
    """The runner's endpoint arguments (None without ``--endpoint``), checked before anything is read or sent.

    The key comes only from the environment variable named by ``--api-key-env``; no message quotes it.
    ``kind`` ``vlm`` also refuses the in-process image options (:data:`NOT_WITH_VLM_ENDPOINT`) and takes no
    tokenizer.
    """
    from biastest.models.endpoint_lm import check_endpoint_url

    if args.endpoint is None:
        for option in ENDPOINT_ONLY:
            if getattr(args, option, None) is not None:
                raise UsageError(MSG_NEEDS_ENDPOINT.format(option="--" + option.replace("_", "-")))
        return None
    for option in NOT_WITH_ENDPOINT + (NOT_WITH_VLM_ENDPOINT if kind == "vlm" else ()):
        if getattr(args, option, None) is not None:
            raise UsageError(MSG_NOT_WITH_ENDPOINT.format(option="--" + option.replace("_", "-")))
    if not args.model or not args.model.strip():
        raise UsageError(MSG_NO_ENDPOINT_MODEL)
    key = None
    if args.api_key_env is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", args.api_key_env.strip()):
            raise UsageError(MSG_BAD_KEY_ENV)
        key = settings.secret_from(args.api_key_env.strip())
        if key is None:
            raise UsageError(MSG_KEY_ENV_UNSET)
    tokenizer: str | bool | None = args.tokenizer
    if isinstance(tokenizer, str) and tokenizer.strip().lower() == "none":
        tokenizer = False
    out: dict[str, Any] = {"endpoint": check_endpoint_url(args.endpoint), "api_key": key}
    if kind == "lm":
        out["tokenizer"] = tokenizer
    for option in ("concurrency", "max_requests", "time_limit"):
        if getattr(args, option) is not None:
            out[option] = getattr(args, option)
    return out


def _run_lm(args, spec, progress) -> _Run:
    from biastest.measures.stereotype.clusters import DEFAULT_CLUSTERS, check_clusters
    from biastest.measures.stereotype.options import StereotypeOptions
    from biastest.measures.stereotype.report import export_files
    from biastest.measures.stereotype.run import StereotypeItems, run
    from biastest.measures.stereotype.score import DEFAULT_BATCH_SIZE, DEFAULT_TIE_TOLERANCE, methods_for_kind
    from biastest.models.lm import detect_model_kind

    endpoint = _endpoint_args(args)
    clusters = check_clusters(_or(args.clusters, DEFAULT_CLUSTERS))
    if not args.model or not args.model.strip():
        raise UsageError(MSG_NO_MODEL.format(example="gpt2"))
    model_id = args.model.strip()
    if args.pairs:
        pairs, names = pairs_from_files(args.pairs, _or(args.format, "auto"), spec)
        data = {"from": "files", "files": names, "format": _or(args.format, "auto")}
    else:
        pairs, data = pairs_from_store(args.store, spec, _or(args.pairing, "positional"))
    data["n_pairs"] = len(pairs)
    method = args.method
    if method is None and endpoint is not None:
        method = "causal-sum"  # a model behind an endpoint is scored as a causal LM
    if method is None:  # the app's default is a choice in a dropdown; here: the first method for the model kind
        method = methods_for_kind(detect_model_kind(model_id, revision=args.revision))[0]
    options = {
        "model_id": model_id,
        "method": method,
        "seed": _or(args.seed, DEFAULT_SEEDS["lm"]),
        "revision": args.revision,
        "batch_size": _or(args.batch_size, DEFAULT_BATCH_SIZE),
        "device": _or(args.device, "auto"),
        "dtype": _or(args.dtype, "auto"),
        "n_resamples": _or(args.bootstrap, DEFAULT_BOOTSTRAP["lm"]),
        "confidence": _or(args.confidence, DEFAULT_CONFIDENCE),
        "tie_tolerance": _or(args.tie_tolerance, DEFAULT_TIE_TOLERANCE),
        "clusters": clusters,
    }
    runner_options = dict(options)
    where, notices = "", []
    if endpoint is not None:
        from biastest.remote import mask_secret, safe_base_url

        for option in ("device", "dtype"):
            del options[option], runner_options[option]
        runner_options.update(endpoint)  # the address as given and the key go to the runner only
        where = safe_base_url(endpoint["endpoint"])
        options.update({k: v for k, v in endpoint.items() if k not in ("endpoint", "api_key")})
        options.update({"endpoint": where, "api_key": mask_secret(endpoint["api_key"])})
    api_key = runner_options.pop("api_key", None)
    result = run(StereotypeOptions.parse(runner_options), StereotypeItems(pairs, spec), progress=progress,
                 api_key=api_key)
    if endpoint is not None:
        served = result.provenance.get("model") or {}
        notices = [*served.get("notes", []), *([served["stop_message"]] if served.get("stop_message") else [])]
    o, c = result.overall, result.overall_clustered
    if result.cluster_aware and c is not None:
        interval = (f"{c.low:.1f}–{c.high:.1f}" if c.interval_shown else "no interval") + (
            f", {c.n_clusters} clusters by {c.cluster_by}")
    else:
        interval = f"{o.ci_low:.1f}–{o.ci_high:.1f}"
    headline = (
        f"Stereotype score {o.score:.1f}% ({interval}), {result.n_scored} of {result.n_pairs} "
        f"pairs scored with {result.method} on {result.model_id}{f' at {where}' if where else ''} "
        f"(seed {result.seed})."
    )
    doc = _document("lm", "stereotype-score", spec, options, data, result.to_dict())

    write = _copy_export(lambda: export_files(result))
    return _Run(doc, write, headline, notices)


def _run_vlm(args, spec, progress) -> _Run:
    from biastest.measures.vlm.options import (
        COMBINE_CHOICES,
        DEFAULT_BATCH_SIZE,
        DEFAULT_CLUSTERS,
        DEFAULT_PROMPT_TEMPLATE,
        DEFAULT_QUESTION,
        VLMOptions,
        check_clusters,
    )
    from biastest.measures.vlm.report import write_exports
    from biastest.measures.vlm.run import VLMItems, run

    endpoint = _endpoint_args(args, "vlm")
    clusters = check_clusters(_or(args.clusters, DEFAULT_CLUSTERS))
    if not args.model or not args.model.strip():
        raise UsageError(MSG_NO_MODEL.format(example="openai/clip-vit-base-patch32"))
    if args.images:
        images, root = images_from_folder(args.images)
        data = {"from": "images", "images": str(args.images), "n_images": len(images)}
    else:
        images, root = images_from_store(args.store, spec)
        data = {"from": "store", "store": str(root), "n_images": len(images)}
    options = {
        "model_id": args.model.strip(),
        "prompt_template": list(args.prompt_template or [DEFAULT_PROMPT_TEMPLATE]),
        "question": _or(args.question, DEFAULT_QUESTION),
        "combine": _or(args.combine, COMBINE_CHOICES[0]),
        "seed": _or(args.seed, DEFAULT_SEEDS["vlm"]),
        "batch_size": _or(args.batch_size, DEFAULT_BATCH_SIZE),
        "n_resamples": _or(args.bootstrap, DEFAULT_BOOTSTRAP["vlm"]),
        "confidence": _or(args.confidence, DEFAULT_CONFIDENCE),
        "max_new_tokens": _or(args.max_new_tokens, 8),
        "revision": args.revision,
        "device": _or(args.device, "auto"),
        "dtype": _or(args.dtype, "auto"),
        "clusters": clusters,
    }
    runner_options = dict(options)
    where = ""
    if endpoint is not None:
        from biastest.remote import mask_secret, safe_base_url

        for option in ("prompt_template", "combine", "batch_size", "revision", "device", "dtype"):
            del options[option], runner_options[option]
        runner_options.update(endpoint)  # the address as given and the key go to the runner only
        where = safe_base_url(endpoint["endpoint"])
        options.update({k: v for k, v in endpoint.items() if k not in ("endpoint", "api_key")})
        options.update({"endpoint": where, "api_key": mask_secret(endpoint["api_key"])})
    api_key = runner_options.pop("api_key", None)
    result = run(VLMOptions.parse(runner_options), VLMItems(images, root, spec), progress=progress, api_key=api_key)
    at = f" at {where}" if where else ""
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
    headline = (
        f"{what} {plain.score:.1f}% ({interval}) over {n} images with {result.method} on {result.model_id}{at} "
        f"(seed {result.seed})."
    )
    doc = _document("vlm", "vlm", spec, options, data, result.to_dict())

    write = _copy_export(lambda: write_exports(result))
    return _Run(doc, write, headline, list(result.notes))


def _sigma(value: float | None) -> float | None:
    from biastest.options import check_option

    v = DEFAULT_NOISE_SIGMA if value is None else value
    if not math.isfinite(v) or v < 0:
        raise UsageError(MSG_BAD_SIGMA.format(value=value))
    return None if v == 0 else check_option("noise_sigma", v)


def _run_embeddings(args, spec, progress) -> _Run:
    from biastest.models.embeddings import load_embeddings
    from biastest.spec import TwoAFCSpec

    is_2afc_spec = isinstance(spec, TwoAFCSpec)
    test = _check_choice(args.test, TESTS, MSG_UNKNOWN_TEST) if args.test else ("2afc" if is_2afc_spec else "weat")
    _check_scopes(args, test, f"--kind embeddings --test {test}")
    _check_options(args, test)
    if test == "2afc" and not is_2afc_spec:
        raise SpecError(MSG_2AFC_NEEDS_TWOAFC_SPEC.format(name=spec.name))
    if test != "2afc" and is_2afc_spec:
        raise SpecError(MSG_TEST_NEEDS_BIAS_SPEC.format(test=test, name=spec.name))
    source = embedding_source(args.model)
    seed = _or(args.seed, DEFAULT_SEEDS["embeddings"])
    data = {"from": "specification"}
    if test == "2afc":
        from biastest.measures import twoafc as twoafc_measure

        replicates = None
        if args.replicate:
            if len(args.replicate) < 2:
                raise UsageError(MSG_TOO_FEW_REPLICATES.format(count=len(args.replicate)))
            for f in args.replicate:
                if not Path(f).expanduser().is_file():
                    raise UsageError(MSG_FILE_NOT_FOUND.format(what="replicate embedding file", path=f))
            replicates = [f"file:{f}" for f in args.replicate]
            if args.noise_sigma is not None:
                raise UsageError(MSG_OPTION_NOT_FOR_RUN.format(
                    option="--noise-sigma", what="a run with replicates", applies="one model"))
        options = {
            "source": source,
            "replicates": replicates,
            "noise_sigma": _sigma(args.noise_sigma) if replicates is None else None,
            "seed": seed,
            "sigmoid": _or(args.sigmoid, "norm"),
            "lapse": bool(args.lapse),
            "n_bootstrap": _or(args.bootstrap, DEFAULT_BOOTSTRAP["2afc"]),
            "confidence": _or(args.confidence, DEFAULT_CONFIDENCE),
        }
        name = load_embeddings(source, trust_pickle=bool(args.trust_gensim_file)).name
        run_options = _with_trusted_files(options, args.trust_gensim_file)
        result = twoafc_measure.run(
            twoafc_measure.TwoAFCOptions.parse({**run_options, "replicates": tuple(run_options["replicates"] or ())
                                                or None}),
            twoafc_measure.TwoAFCItems(spec=spec), progress=progress)
        headline = (
            f"2AFC: PSE of {len(result.targets)} target words on {len(result.cue_pairs)} cue pairs, mode "
            f"{result.mode}, embedding {name} (seed {result.seed})."
        )
        doc = _document("embeddings", "2afc", spec, options, data, result.to_dict())
        write = _copy_export(lambda: twoafc_measure.report.twoafc_exports(result, source=name, spec=spec.to_dict()))
        return _Run(doc, write, headline)
    if test == "weat":
        from biastest.measures import weat as weat_measure

        options = {"source": source, "seed": seed, "n_permutations": _or(args.permutations, DEFAULT_PERMUTATIONS),
                   "n_bootstrap": _or(args.bootstrap, DEFAULT_BOOTSTRAP["weat"]),
                   "confidence": _or(args.confidence, DEFAULT_CONFIDENCE)}
        runner_options = _with_trusted_files(options, args.trust_gensim_file)
        weat_options = {**runner_options, "n_resamples": runner_options["n_bootstrap"]}
        del weat_options["n_bootstrap"]
        weat = weat_measure.run(weat_measure.WEATOptions.parse(weat_options), weat_measure.WEATItems(spec=spec),
                                progress=progress)
        mac = weat_measure.run_mac(weat_measure.MACOptions(source=runner_options["source"]),
                                   weat_measure.MACItems(spec=spec))
        name = load_embeddings(source, trust_pickle=bool(args.trust_gensim_file)).name
        headline = (
            f"WEAT effect size d = {weat.effect_size:.3f} (one-sided p = {weat.p_one_sided:.4g}); MAC = "
            f"{mac.mac:.4f}; embedding {name} (seed {weat.seed})."
        )
        doc = _document("embeddings", "weat", spec, options, data, weat.to_dict())
        doc["mac"] = mac.to_dict()
        write = _copy_export(lambda: weat_measure.report.weat_exports(weat, mac, source=name, spec=spec.to_dict()))
        return _Run(doc, write, headline)
    bayes_defaults = BayesOptions.defaults()
    options = {
        "source": source,
        "model": _or(args.bayes_model, BAYES_DEFAULTS["bayes_model"]),
        "seed": seed,
        "draws": _or(args.draws, bayes_defaults["draws"]),
        "tune": _or(args.tune, bayes_defaults["tune"]),
        "chains": _or(args.chains, bayes_defaults["chains"]),
        "hdi_prob": _or(args.hdi_prob, bayes_defaults["hdi_prob"]),
        "time_limit": _or(args.sampling_time_limit, bayes_defaults["time_limit"]),
    }
    spec.check_testable()
    result = run_bayes(BayesOptions.given(_with_trusted_files(options, args.trust_gensim_file)),
                       BayesItems.from_spec(spec), progress=progress)
    name = load_embeddings(source, trust_pickle=bool(args.trust_gensim_file)).name
    d = result.diagnostics
    state = "converged" if d.get("converged") else f"NOT CONVERGED ({'; '.join(d.get('problems', ()))})"
    headline = (
        f"Bayesian estimate ({result.model['name']} model, {d.get('attempts')} sampler run(s)): {state}; largest "
        f"R-hat {d.get('max_rhat')}, {d.get('divergences')} divergent transitions, intervals "
        f"{getattr(result, 'level_label', '')}; embedding {name} (seed {result.seed})."
    )
    if not d.get("converged") and d.get("stop_message"):
        headline += " " + d["stop_message"]
    doc = _document("embeddings", "bayes", spec, options, data, result.to_dict())
    write = _copy_export(lambda: bayes_report.bayes_exports(result, source=name))
    return _Run(doc, write, headline)


def _document(kind: str, test: str, spec, options: dict[str, Any], data: dict[str, Any], result: dict) -> dict:
    from biastest import __version__

    return {
        "format": "biastest-cli-result",
        "biastest_version": __version__,
        "kind": kind,
        "test": test,
        "seed": options.get("seed"),
        "spec": spec.to_dict(),
        "options": options,
        "data": data,
        "result": result,
    }


def _output_path(value: str, what: str) -> Path:
    path = Path(value).expanduser()
    if not path.parent.is_dir():
        raise UsageError(MSG_NO_OUTPUT_FOLDER.format(path=path.parent))
    if path.is_dir():
        raise UsageError(MSG_FILE_UNREADABLE.format(what=what, path=value, problem="it is a folder"))
    try:  # find out now, not after the model ran, whether the folder takes a new file
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(MSG_CANNOT_WRITE.format(path=value, problem=exc.strerror or type(exc).__name__)) from None
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(MSG_CANNOT_WRITE.format(path=value, problem="it is read-only"))
    return path


def _write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise BiastestError(MSG_CANNOT_WRITE.format(path=target, problem=exc.strerror or exc)) from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    except OSError as exc:
        raise BiastestError(MSG_CANNOT_WRITE.format(path=target, problem=exc.strerror or exc)) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _cmd_run(args: argparse.Namespace, out: Callable[[str], None], err: Callable[[str], None]) -> int:
    from biastest.report.export import write_json
    from biastest.spec import TwoAFCSpec

    kind = _check_choice(args.kind, KINDS, MSG_UNKNOWN_KIND)
    if kind != "embeddings":
        _check_scopes(args, kind, f"--kind {kind}")
        _check_options(args, kind)
    out_path = _output_path(args.out, "output file")
    csv_path = _output_path(args.csv, "CSV file") if args.csv else None
    if csv_path is not None and csv_path.resolve() == out_path.resolve():
        raise UsageError(MSG_SAME_OUTPUT.format(path=args.out))
    spec = load_spec(args.spec)
    if kind != "embeddings" and isinstance(spec, TwoAFCSpec):
        raise SpecError(MSG_SPEC_NOT_FOR_KIND.format(name=spec.name))
    progress = _progress(args.progress, err)
    run = {"lm": _run_lm, "vlm": _run_vlm, "embeddings": _run_embeddings}[kind](args, spec, progress)
    _write_atomic(out_path, lambda p: write_json(run.document, p))
    if csv_path is not None:
        _write_atomic(csv_path, run.write_csv)
    out(run.headline)
    for notice in run.notices:  # e.g. a model behind an endpoint: how it was scored, or why it stopped early
        err(notice)
    out(MSG_WROTE.format(path=out_path))
    if csv_path is not None:
        out(MSG_WROTE.format(path=csv_path))
    return EXIT_OK


# --------------------------------------------------------------------------- audit
MSG_RAY_MISSING = (
    "--ray needs Ray, an optional extra that is not installed here: pip install -r requirements-ray.txt (or "
    "pip install 'biastest[ray]'), then run again. Without --ray the audit runs in this process."
)
MSG_RAY_CPUS_WITHOUT_LOCAL = "--ray-cpus applies to --ray local only (a running cluster has its own CPUs)."
MSG_BAD_RAY_CPUS = "--ray-cpus must be a whole number from 1 to 4096, got {value}."


def _cmd_audit(args: argparse.Namespace, out: Callable[[str], None], err: Callable[[str], None]) -> int:
    """``audit GRID --out DIR [--ray ADDRESS|local]``: exit 0 when every cell finished, 1 when some failed."""
    import importlib.util

    from biastest.audit import GridError, load_grid, run_audit

    ray = args.ray.strip() if args.ray else None
    if args.ray_cpus is not None:
        if ray != "local":
            raise UsageError(MSG_RAY_CPUS_WITHOUT_LOCAL)
        if not 1 <= args.ray_cpus <= 4096:
            raise UsageError(MSG_BAD_RAY_CPUS.format(value=args.ray_cpus))
    if ray is not None and importlib.util.find_spec("ray") is None:
        raise UsageError(MSG_RAY_MISSING)
    try:  # a mistake in the grid is bad input (exit 2), whatever its type; nothing has run yet
        grid = load_grid(args.grid)
    except BiastestError as exc:
        raise UsageError(exc.message) from None
    try:
        summary = run_audit(grid, args.out, ray=ray, ray_cpus=args.ray_cpus, progress=not args.no_progress,
                            report=err)
    except GridError as exc:
        raise UsageError(exc.message) from None
    out(summary.message())
    out(MSG_WROTE.format(path=summary.table))
    if summary.failed:
        from biastest.audit.run import MSG_RERUN

        err(MSG_RERUN)
        return EXIT_RUN_FAILED
    return EXIT_OK


# --------------------------------------------------------------------------- report
MSG_REPORT_NOT_FOLDER = "'{path}' is not a folder: give the audit folder (python -m biastest audit … --out DIR)."


def _cmd_report(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """``report DIR [--out FILE]``: the audit's HTML report (exit 2 when DIR is not an audit folder)."""
    from biastest.audit.report import write_report

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(MSG_REPORT_NOT_FOLDER.format(path=args.folder))
    target = _output_path(args.out, "report file") if args.out else None
    try:
        path = write_report(folder, target)
    except DataError as exc:  # not an audit folder, or an empty one: bad input
        raise UsageError(exc.message) from None
    out(MSG_WROTE.format(path=path))
    return EXIT_OK


# --------------------------------------------------------------------------- entry point
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (never raises, never prints a traceback).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        :data:`EXIT_OK` (0), :data:`EXIT_RUN_FAILED` (1) or :data:`EXIT_USAGE` (2).
    """

    def out(line: str) -> None:
        print(line, file=sys.stdout, flush=True)

    try:
        return _main(argv, out)
    except BrokenPipeError:  # the reader went away (`list-specs | head -3`): stop quietly, as Unix tools do
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK


def _main(argv: Sequence[str] | None, out: Callable[[str], None]) -> int:

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command == "list-specs":
            return _cmd_list_specs(args, out)
        if args.command == "list-methods":
            return _cmd_list_methods(args, out)
        if args.command == "audit":
            return _cmd_audit(args, out, err)
        if args.command == "report":
            return _cmd_report(args, out)
        return _cmd_run(args, out, err)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except BiastestError as exc:
        usage = exc.details.get("usage") if isinstance(exc, UsageError) else None
        if usage:
            err(usage.rstrip())
        err(exc.message)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        err(MSG_INTERRUPTED)
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        err(MSG_UNEXPECTED.format(type_name=type(exc).__name__))
        return EXIT_RUN_FAILED
