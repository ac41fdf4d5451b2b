"""The command line (``python -m biastest``) against the runners called directly.

For each kind, the JSON the CLI writes holds exactly the runner's result (same
seed, same tiny model; only the ``created_at`` time stamps and the Bayes
sampler's wall-clock ``seconds`` may differ) and the CSV is the app's
download byte for byte. Usage errors exit 2 and run-time failures exit 1,
each with the library's message constant on stderr and no traceback.
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from biastest import cli, inputs
from biastest.errors import DataError, EmbeddingError, ModelLoadError, UsageError
from biastest.measures.stereotype.score import METHODS, MSG_METHOD_NOT_FOR_KIND, MSG_UNKNOWN_METHOD
from biastest.measures.stereotype.summary import MSG_NOTHING_SCORED
from biastest.records import SentencePair, TestImage
from biastest.report.export import _jsonable, round_cell
from biastest.spec import BiasSpec, TwoAFCSpec
from biastest.specs import MSG_DID_YOU_MEAN, MSG_UNKNOWN_SPEC, list_specs
from tests import lm_helpers, vlm_helpers

SEED = 7
print(f"test seed: {SEED}")
REPO = Path(__file__).resolve().parents[1]

LM_SPEC = BiasSpec.from_terms(
    group1="she, woman", group2="he, man", stereotype1="nurse, teacher", antistereotype1="engineer, pilot",
    name="cli gender",
)
VLM_SPEC = BiasSpec.from_terms(
    group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse, teacher", name="colours"
)
WEAT7 = "WEAT 7: Math vs arts, male vs female terms"
FAKE_TOKEN = "hf_cliTestSecretToken123"


def _crows_rows() -> list[dict[str, str]]:
    rows = []
    for g1, g2 in (("she", "he"), ("woman", "man")):
        for a in ("nurse", "teacher", "engineer", "pilot"):
            rows.append({"sent_more": f"the {g1} is a {a} .", "sent_less": f"the {g2} is a {a} .",
                         "stereo_antistereo": "stereo", "bias_type": "gender"})
    rows.append({"sent_more": "=she said no .", "sent_less": "=he said no .", "stereo_antistereo": "stereo",
                 "bias_type": "gender"})  # a formula-looking cell: neutralised in the CSV
    return rows


def _write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _strip_volatile(value):
    """JSON form without time stamps and wall-clock durations (the only fields that may differ)."""
    if isinstance(value, dict):
        return {k: _strip_volatile(v) for k, v in value.items() if k not in ("created_at", "seconds")}
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


def _same(doc_result: dict, direct: dict) -> None:
    assert _strip_volatile(doc_result) == _strip_volatile(json.loads(json.dumps(_jsonable(direct))))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("cli")
    out = {
        "gpt2": lm_helpers.build_tiny_gpt2(base / "gpt2", seed=SEED),
        "pairs": _write_csv(base / "crows.csv", _crows_rows()),
        "lm_spec": base / "lm_spec.json",
        "vlm_spec": base / "vlm_spec.json",
        "clip": vlm_helpers.save_tiny_clip(base / "clip"),
        "images": base / "images",
    }
    out["lm_spec"].write_text(LM_SPEC.to_json(), encoding="utf-8")
    out["vlm_spec"].write_text(VLM_SPEC.to_json(), encoding="utf-8")
    imgs = vlm_helpers.colour_images(base / "scratch", per_term=3, seed=SEED)
    for img in imgs:  # one subfolder per image term
        (out["images"] / img.image_term).mkdir(parents=True, exist_ok=True)
        (out["images"] / img.image_term / Path(img.path).name).write_bytes((base / "scratch" / img.path).read_bytes())
    return out


# ----------------------------------------------------------------------------- language models
def test_lm_pairs_file_equals_runner_and_csv_is_the_apps(files, tmp_path, capsys):
    from biastest.measures.stereotype.report import export_files
    from biastest.runner.services import import_pairs
    from tests.lm_helpers import run_pairs

    out, rows = tmp_path / "r.json", tmp_path / "r.csv"
    rc, stdout, _ = _run(capsys, "run", str(files["lm_spec"]), "--kind", "lm", "--model", str(files["gpt2"]),
                         "--pairs", str(files["pairs"]), "--out", str(out), "--csv", str(rows),
                         "--bootstrap", "500", "--batch-size", "4", "--device", "cpu")
    assert rc == 0, stdout
    doc = json.loads(out.read_text(encoding="utf-8"))
    pairs = import_pairs(files["pairs"], fmt="auto", spec=LM_SPEC)
    direct = run_pairs(pairs=pairs, model_id=str(files["gpt2"]), method="causal-sum", seed=0,
                                 spec=LM_SPEC, n_resamples=500, batch_size=4, device="cpu")
    _same(doc["result"], direct.to_dict())
    assert doc["seed"] == 0 == doc["result"]["provenance"]["seed"]  # the default seed, recorded
    assert doc["options"]["method"] == "causal-sum" and doc["data"] == {
        "from": "files", "files": ["crows.csv"], "format": "auto", "n_pairs": 9}
    assert doc["spec"] == LM_SPEC.to_dict()
    app_csv, _ = export_files(direct, directory=tmp_path)

    def undated(path):  # the summary rows carry each run's own date (its provenance), all else is the same
        return [{k: v for k, v in r.items() if k != "date"} for r in csv.DictReader(path.open(encoding="utf-8-sig"))]

    assert undated(rows) == undated(app_csv) and rows.read_text(encoding="utf-8-sig").startswith("row_type,")
    every = list(csv.DictReader(rows.open(encoding="utf-8-sig")))
    cells = [r["stereotyped"] for r in every if r["row_type"] == "pair"]  # after the summary rows
    assert "'=she said no ." in cells and len(cells) == 9
    assert every[0]["row_type"] == "summary" and every[0]["method"] == "causal-sum" and every[0]["seed"] == "0"
    assert doc["options"]["clusters"] == "auto" and doc["result"]["clusters"] == "pair"  # CrowS rows: no templates
    assert f"{direct.overall.score:.1f}%" in stdout and f"Wrote {out}" in stdout


def test_lm_store_retrieval_equals_runner(files, tmp_path, capsys):
    from biastest.store import DatasetStore, retrieve_pairs
    from tests.lm_helpers import run_pairs

    store = DatasetStore(tmp_path / "store")
    stored = [
        SentencePair(stereotyped=f"the {g1} is a {a} .", anti_stereotyped=f"the {g2} is a {a} .", attribute_term=a,
                     group_term_stereotyped=g1, group_term_anti=g2, source="test")
        for g1, g2 in (("she", "he"), ("woman", "man")) for a in ("nurse", "teacher")
    ]
    store.add([], stored)
    out = tmp_path / "r.json"
    rc, _, err = _run(capsys, "run", str(files["lm_spec"]), "--kind", "lm", "--model", str(files["gpt2"]),
                      "--store", str(store.root), "--method", "causal-diff-span", "--seed", str(SEED),
                      "--bootstrap", "300", "--out", str(out), "--progress")
    assert rc == 0
    assert "[1/1] Done: 4 of 4 pairs scored." in err  # --progress prints the runner's messages
    pairs = retrieve_pairs(DatasetStore(store.root), LM_SPEC).pairs
    direct = run_pairs(pairs=pairs, model_id=str(files["gpt2"]), method="causal-diff-span", seed=SEED,
                                 spec=LM_SPEC, n_resamples=300)
    doc = json.loads(out.read_text(encoding="utf-8"))
    _same(doc["result"], direct.to_dict())
    assert doc["data"]["from"] == "store" and doc["data"]["n_pairs"] == 4
    assert doc["result"]["provenance"]["seed"] == SEED


# ----------------------------------------------------------------------------- vision-language models
def test_vlm_image_folder_and_manifest_equal_runner(files, tmp_path, capsys):
    from biastest.measures.vlm.report import write_exports
    from tests.vlm_helpers import run_vlm

    common = ["--kind", "vlm", "--model", str(files["clip"]), "--bootstrap", "300", "--batch-size", "2",
              "--prompt-template", "a photo of a {term}", "--prompt-template", "a portrait of a {term}",
              "--seed", str(SEED), "--device", "cpu"]
    out, rows = tmp_path / "v.json", tmp_path / "v.csv"
    rc, _, _ = _run(capsys, "run", str(files["vlm_spec"]), *common, "--images", str(files["images"]),
                    "--out", str(out), "--csv", str(rows))
    assert rc == 0
    root = files["images"].resolve()
    images = []  # naive: term folders and files in name order
    for term in ("blue", "red"):
        for f in sorted((root / term).iterdir()):
            data = f.read_bytes()
            images.append(TestImage(path=f"{term}/{f.name}", sha256=hashlib.sha256(data).hexdigest(),
                                    image_term=term, generator="upload", source="upload"))
    direct = run_vlm(images=images, image_root=root, spec=VLM_SPEC, model_id=str(files["clip"]),
                          prompt_template=["a photo of a {term}", "a portrait of a {term}"], seed=SEED,
                          batch_size=2, n_resamples=300, device="cpu")
    doc = json.loads(out.read_text(encoding="utf-8"))
    _same(doc["result"], direct.to_dict())
    assert doc["result"]["provenance"]["seed"] == SEED and doc["data"]["n_images"] == 6
    app_csv, _ = write_exports(direct, folder=tmp_path)

    def undated(path):  # the summary rows carry each run's own date (its provenance), all else is the same
        return [{k: v for k, v in r.items() if k != "date"} for r in csv.DictReader(path.open(encoding="utf-8-sig"))]

    assert undated(rows) == undated(app_csv) and rows.read_text(encoding="utf-8-sig").startswith("row_type,")
    assert doc["options"]["clusters"] == "auto" and doc["result"]["clusters"] == "image"  # folders: no prompts

    manifest = root / "manifest.csv"  # the same images listed in a manifest give the same result
    _write_csv(manifest, [{"path": i.path, "image_term": i.image_term} for i in images])
    out2 = tmp_path / "m.json"
    rc, _, _ = _run(capsys, "run", str(files["vlm_spec"]), *common, "--images", str(manifest), "--out", str(out2))
    manifest.unlink()
    assert rc == 0
    _same(json.loads(out2.read_text(encoding="utf-8"))["result"], direct.to_dict())


# ----------------------------------------------------------------------------- word embeddings
def test_weat_on_default_glove_equals_runner(tmp_path, capsys):
    from biastest.measures.weat.report import weat_exports
    from biastest.specs import get_spec
    from tests.embedding_runs import run_mac, run_weat

    out, rows = tmp_path / "w.json", tmp_path / "w.csv"
    rc, stdout, _ = _run(capsys, "run", WEAT7, "--kind", "embeddings", "--permutations", "2000",
                         "--out", str(out), "--csv", str(rows))
    assert rc == 0
    spec = get_spec(WEAT7)
    weat = run_weat(spec=spec, source="glove-6b-50d", seed=0, n_permutations=2000)
    mac = run_mac(spec=spec, source="glove-6b-50d")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "weat" and doc["seed"] == 0 == doc["result"]["provenance"]["seed"]
    _same(doc["result"], weat.to_dict())
    _same(doc["mac"], mac.to_dict())
    app_csv, _ = weat_exports(weat, mac, source="glove-6b-50d", spec=spec.to_dict())

    def undated(path):  # the summary rows carry each run's own date (its provenance), all else is the same
        return [{k: v for k, v in r.items() if k != "date"} for r in csv.DictReader(path.open(encoding="utf-8-sig"))]

    assert undated(rows) == undated(app_csv) and rows.read_text(encoding="utf-8-sig").startswith("row_type,")
    assert f"d = {weat.effect_size:.3f}" in stdout


def test_embedding_interval_defaults_are_the_apps_and_their_flags_reach_the_runners(tmp_path, capsys):
    """The 2AFC command line drew 200 resamples where the app draws 1,000; WEAT had no flag for the resamples of the
    words nor for the level. One default each (biastest.options), and --bootstrap / --confidence for both tests."""
    from biastest.options import (
        DEFAULT_BOOTSTRAP,
        DEFAULT_CONFIDENCE,
        DEFAULT_TWOAFC_BOOTSTRAP,
        DEFAULT_WEAT_BOOTSTRAP,
    )
    from biastest.specs import get_spec
    from biastest.ui import psychophysics as app
    from tests.embedding_runs import run_twoafc, run_weat

    demo = app.build_demo(allow_server_paths=False)
    shown = {b.elem_id: getattr(b, "value", None) for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    assert (shown["n-bootstrap"], shown["n-bootstrap-d"]) == (DEFAULT_TWOAFC_BOOTSTRAP, DEFAULT_WEAT_BOOTSTRAP)
    assert DEFAULT_BOOTSTRAP["2afc"] == DEFAULT_TWOAFC_BOOTSTRAP == 1_000
    assert DEFAULT_BOOTSTRAP["weat"] == DEFAULT_WEAT_BOOTSTRAP and DEFAULT_CONFIDENCE == 0.95

    spec = TwoAFCSpec(name="tiny 2afc", targets=("nurse", "pilot", "cook"), cue_pairs=(("she", "he"), ("woman", "man")),
                      cue1_name="female", cue2_name="male")
    spec_file = tmp_path / "twoafc.json"
    spec_file.write_text(json.dumps(spec.to_dict()), encoding="utf-8")
    vectors = _vector_file(tmp_path / "vec.txt", [*spec.targets, "she", "he", "woman", "man"], seed=SEED)
    base = ["run", str(spec_file), "--kind", "embeddings", "--model", str(vectors), "--noise-sigma", "0.1"]
    rc, _, _ = _run(capsys, *base, "--out", str(tmp_path / "default.json"))
    assert rc == 0
    doc = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert (doc["result"]["n_bootstrap"], doc["result"]["ci_level"]) == (1_000, 0.95)
    assert (doc["options"]["n_bootstrap"], doc["options"]["confidence"]) == (1_000, 0.95)
    rc, _, _ = _run(capsys, *base, "--bootstrap", "300", "--confidence", "0.8", "--out", str(tmp_path / "set.json"))
    assert rc == 0
    doc = json.loads((tmp_path / "set.json").read_text(encoding="utf-8"))
    direct = run_twoafc(spec=spec, source=f"file:{vectors}", noise_sigma=0.1, seed=0, n_bootstrap=300, confidence=0.8)
    assert (doc["result"]["n_bootstrap"], doc["result"]["ci_level"]) == (300, 0.8)
    _same(doc["result"], direct.to_dict())

    out = tmp_path / "w.json"
    rc, _, _ = _run(capsys, "run", WEAT7, "--kind", "embeddings", "--permutations", "1000", "--bootstrap", "300",
                    "--confidence", "0.9", "--out", str(out))
    assert rc == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    direct = run_weat(spec=get_spec(WEAT7), source="glove-6b-50d", seed=0, n_permutations=1000, n_bootstrap=300,
                      confidence=0.9)
    assert (doc["result"]["n_bootstrap"], doc["result"]["ci_level"]) == (300, 0.9)
    assert (doc["options"]["n_bootstrap"], doc["options"]["confidence"]) == (300, 0.9)
    _same(doc["result"], direct.to_dict())
    wider = run_weat(spec=get_spec(WEAT7), source="glove-6b-50d", seed=0, n_permutations=1000, n_bootstrap=300)
    low, high = doc["result"]["effect_size_ci"]
    assert wider.effect_size_ci[0] < low < high <= wider.effect_size_ci[1]  # 0.9 is narrower (d is clipped at 2)

    rc, _, err = _run(capsys, "run", WEAT7, "--kind", "embeddings", "--test", "bayes", "--confidence", "0.9",
                      "--out", str(tmp_path / "b.json"))
    assert rc == 2 and err.strip().endswith(cli.MSG_OPTION_NOT_FOR_RUN.format(
        option="--confidence", what="--kind embeddings --test bayes",
        applies=", ".join(["lm", "vlm", "--test 2afc", "--test weat", *newer_measures_taking("--confidence")])))


def _vector_file(path: Path, words: list[str], *, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    lines = [f"{len(words)} 8"] + [" ".join([w, *(f"{x:.6f}" for x in rng.normal(size=8))]) for w in words]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_2afc_spec_file_and_vector_file_equal_runner(tmp_path, capsys):
    from biastest.measures.twoafc.report import twoafc_csv_rows
    from tests.embedding_runs import run_twoafc

    spec = TwoAFCSpec(name="tiny 2afc", targets=("nurse", "pilot", "cook", "judge"),
                      cue_pairs=(("she", "he"), ("woman", "man")), cue1_name="female", cue2_name="male")
    spec_file = tmp_path / "twoafc.json"
    spec_file.write_text(json.dumps(spec.to_dict()), encoding="utf-8")
    vectors = _vector_file(tmp_path / "vec.txt", [*spec.targets, "she", "he", "woman", "man"], seed=SEED)
    out, rows = tmp_path / "a.json", tmp_path / "a.csv"
    rc, _, _ = _run(capsys, "run", str(spec_file), "--kind", "embeddings", "--model", str(vectors),
                    "--noise-sigma", "0.1", "--seed", str(SEED), "--out", str(out), "--csv", str(rows))
    assert rc == 0
    direct = run_twoafc(spec=spec, source=f"file:{vectors}", noise_sigma=0.1, seed=SEED)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["test"] == "2afc" and doc["result"]["provenance"]["seed"] == SEED
    _same(doc["result"], direct.to_dict())
    every = list(csv.DictReader(rows.open(encoding="utf-8-sig")))
    got = [r for r in every if r["row_type"] == "target"]  # after the summary rows the CSV starts with
    assert every[0]["row_type"] == "summary" and every[0]["seed"] == str(SEED)
    want = twoafc_csv_rows(direct, source=f"file:{vectors.resolve()}")
    assert [r["target"] for r in got] == [r["target"] for r in want] and len(got) == 4
    assert [float(r["pse"]) for r in got] == pytest.approx([round_cell("pse", r["pse"], r) for r in want])


class _SamplerSpy:
    """Stands in for the sampler (``fit_bayes``): records exactly what it was given and echoes it as the result.

    Sampling itself is tested in ``test_bayes.py``; running it twice here (CLI and direct) would take ~30 s of
    JAX compilation, so this checks that the command line hands the sampler the same data and settings as a
    direct :func:`~biastest.measures.bayes.run.run` call, and writes what the sampler returns.
    """

    def __init__(self):
        self.calls = []

    def __call__(self, data, **kw):
        self.calls.append((data, kw))
        settings = {k: v for k, v in kw.items() if k not in ("progress", "provenance_fields")}
        record = {"model": {"name": kw["model"]}, "seed": kw["seed"], "settings": settings,
                  "provenance": dict(kw["provenance_fields"]), "words": list(data.protected_words),
                  "attributes": list(data.attributes), "distance": [round(float(x), 12) for x in data.distance],
                  "call": len(self.calls)}
        diagnostics = {"max_rhat": 1.2, "converged": False, "divergences": 7, "attempts": 2,
                       "problems": ["largest R-hat 1.2 > 1.01", "7 divergent transitions"],
                       "stop_message": "Sampling stopped at the time limit."}
        return SimpleNamespace(
            model=record["model"], seed=kw["seed"], diagnostics=diagnostics, to_dict=lambda: record,
            interval_records=lambda: [{"word": w, "mean": float(i)} for i, w in enumerate(data.protected_words)],
            provenance={}, level_label="90% HPDI", hdi_prob=0.9, contrasts=(), attempts=({"attempt": 1},),
            data={"n_rows": data.n_rows}, draws=kw["draws"], tune=kw["tune"], chains=kw["chains"],
            target_accept=0.95, seconds=0.0,
        )


def test_bayes_hands_the_sampler_what_a_direct_call_does(tmp_path, capsys, monkeypatch):
    from biastest.measures.bayes import BayesItems
    from biastest.specs import get_spec

    runner = importlib.import_module("biastest.measures.bayes.run")  # the module; the package's run is its function

    spy = _SamplerSpy()
    monkeypatch.setattr(runner, "fit_bayes", spy)
    out, rows = tmp_path / "b.json", tmp_path / "b.csv"
    settings = ["--draws", "100", "--tune", "100", "--chains", "1", "--bayes-model", "additive", "--hdi-prob", "0.9",
                "--sampling-time-limit", "30"]
    rc, stdout, _ = _run(capsys, "run", WEAT7, "--kind", "embeddings", "--test", "bayes", *settings,
                         "--seed", str(SEED), "--out", str(out), "--csv", str(rows))
    assert rc == 0
    # the headline says what the sampler said: not converged, why, divergences, the interval's own level
    assert ("NOT CONVERGED (largest R-hat 1.2 > 1.01; 7 divergent transitions)" in stdout
            and "7 divergent transitions, intervals 90% HPDI" in stdout
            and "Sampling stopped at the time limit." in stdout)
    spec = get_spec(WEAT7)
    direct = runner.run({"source": "glove-6b-50d", "model": "additive", "seed": SEED, "draws": 100, "tune": 100,
                         "chains": 1, "hdi_prob": 0.9, "time_limit": 30},
                        BayesItems(groups=dict(spec.social_groups), attributes=dict(spec.attributes),
                                   spec_name=spec.name))
    doc = json.loads(out.read_text(encoding="utf-8"))
    got, want = doc["result"], json.loads(json.dumps(_jsonable(direct.to_dict())))
    assert want.pop("call") == 2 and got.pop("call") == 1
    assert _strip_volatile(got) == _strip_volatile(want)
    assert got["settings"] == {"model": "additive", "seed": SEED, "draws": 100, "tune": 100, "chains": 1,
                               "hdi_prob": 0.9, "time_limit": 30, "max_attempts": 4}
    table = list(csv.DictReader(rows.open(encoding="utf-8-sig")))
    assert [r["word"] for r in table if r["row_type"] == "interval"] == got["words"]
    assert table[0]["row_type"] == "sampler attempt" and {r["interval"] for r in table[1:]} == {"90% HPDI"}


# ----------------------------------------------------------------------------- list commands
def test_list_specs_and_list_methods(capsys):
    rc, out, _ = _run(capsys, "list-specs")
    assert rc == 0 and out.splitlines() == list_specs()
    rc, out, _ = _run(capsys, "list-specs", "--kind", "lm")
    assert rc == 0 and out.splitlines() == list_specs(("bias", "weat"))
    assert not set(out.splitlines()) & set(list_specs("twoafc"))
    rc, out, _ = _run(capsys, "list-specs", "--kind", "vlm")
    assert rc == 0 and out.splitlines() == list_specs(("image", "bias", "weat"))
    assert out.splitlines()[0].startswith("Pictures: ")
    rc, out, _ = _run(capsys, "list-methods", "--kind", "lm")
    lines = [line.split("\t") for line in out.splitlines()]
    assert rc == 0 and [x[1] for x in lines] == list(METHODS) and {x[0] for x in lines} == {"lm"}
    rc, out, _ = _run(capsys, "list-methods")
    names = [line.split("\t")[1] for line in out.splitlines()]
    assert rc == 0 and {"clip-zero-shot", "vqa-answer-softmax", "generative-answer-logprob", "chat-answer", "2afc",
                        "weat", "bayes", *METHODS} == set(names)


# ----------------------------------------------------------------------------- exit status 2 and 1
def test_lm_clusters_option_is_checked_before_any_model_loads(files, tmp_path, capsys):
    from biastest.measures.stereotype.clusters import CLUSTERINGS, MSG_BAD_CLUSTERS

    rc, _, err = _run(capsys, "run", str(files["lm_spec"]), "--kind", "lm", "--model", str(tmp_path / "no-model"),
                      "--pairs", str(files["pairs"]), "--out", str(tmp_path / "r.json"), "--clusters", "authors")
    assert rc == 2 and MSG_BAD_CLUSTERS.format(value="authors", choices=", ".join(CLUSTERINGS)) in err
    assert not (tmp_path / "r.json").exists()


def _usage_cases(files, tmp):
    lm = ["--kind", "lm", "--model", str(files["gpt2"]), "--pairs", str(files["pairs"]), "--out", str(tmp / "x.json")]
    spec = str(files["lm_spec"])
    return [
        (["run", "WEAT 7: Math vs arts, male vs femal terms", *lm],
         MSG_UNKNOWN_SPEC.format(name="WEAT 7: Math vs arts, male vs femal terms",
                                 hint=MSG_DID_YOU_MEAN.format(suggestion=WEAT7))),
        (["run", spec, *lm[:1], "lmm", *lm[2:]],
         cli.MSG_UNKNOWN_KIND.format(value="lmm", hint=cli.MSG_DID_YOU_MEAN.format(suggestion="lm"),
                                     choices="lm, vlm, embeddings")),
        (["run", spec, *lm, "--method", "causal-summ"],
         MSG_UNKNOWN_METHOD.format(name="causal-summ", hint=" Did you mean 'causal-sum'?", choices=", ".join(METHODS))),
        (["run", spec, *lm, "--method", "pll-unmodified"],
         MSG_METHOD_NOT_FOR_KIND.format(method="pll-unmodified", method_kinds="masked", model_id=str(files["gpt2"]),
                                        kind="causal", choices="causal-sum, causal-diff-span")),
        (["run", str(tmp / "nope.json"), *lm],
         inputs.MSG_FILE_NOT_FOUND.format(what="specification file", path=str(tmp / "nope.json"))),
        (["run", spec, *lm[:4], "--pairs", str(tmp / "nope.csv"), *lm[6:]],
         inputs.MSG_FILE_NOT_FOUND.format(what="pairs file", path=str(tmp / "nope.csv"))),
        (["run", spec, *lm, "--images", str(tmp)],
         cli.MSG_OPTION_NOT_FOR_RUN.format(option="--images", what="--kind lm", applies="vlm")),
        (["run", "Occupations vs gender (Liang & Acuna 2020)", *lm],
         cli.MSG_SPEC_NOT_FOR_KIND.format(name="Occupations vs gender (Liang & Acuna 2020)")),
        (["run", WEAT7, "--kind", "embeddings", "--test", "2afc", "--out", str(tmp / "x.json")],
         cli.MSG_2AFC_NEEDS_TWOAFC_SPEC.format(name=WEAT7)),
        (["run", WEAT7, "--kind", "embeddings", "--test", "weet", "--out", str(tmp / "x.json")],
         cli.MSG_UNKNOWN_TEST.format(value="weet", hint=cli.MSG_DID_YOU_MEAN.format(suggestion="weat"),
                                     choices="2afc, weat, bayes")),
        (["run", WEAT7, "--kind", "vlm", "--model", str(files["clip"]), "--images", str(tmp / "none"),
          "--out", str(tmp / "x.json")],
         inputs.MSG_FILE_NOT_FOUND.format(what="image folder", path=str(tmp / "none"))),
        (["run", spec, *lm[:-1], str(tmp / "no" / "x.json")],
         cli.MSG_NO_OUTPUT_FOLDER.format(path=tmp / "no")),
    ]


def test_bad_usage_exits_2_with_the_message(files, tmp_path, capsys):
    for argv, message in _usage_cases(files, tmp_path):
        rc, out, err = _run(capsys, *argv)
        assert (rc, err.strip().splitlines()[-1]) == (2, message), argv
        assert not (tmp_path / "x.json").exists() and out == ""
    rc, _, err = _run(capsys, "run", "x", "--kind", "lm")  # argparse: --out is required
    assert rc == 2 and "the following arguments are required: --out" in err and err.startswith("usage:")


def test_run_time_failures_exit_1_with_the_load_message(files, tmp_path, capsys):
    missing = tmp_path / "no-such-model"
    rc, _, err = _run(capsys, "run", str(files["lm_spec"]), "--kind", "lm", "--model", str(missing),
                      "--pairs", str(files["pairs"]), "--method", "causal-sum", "--out", str(tmp_path / "x.json"))
    from biastest.models.base import MSG_FOLDER_NOT_FOUND
    from biastest.models.embeddings import MSG_FILE_NOT_FOUND

    examples = "'gpt2' or 'bert-base-uncased'"  # the language-model app's own kind of model
    assert (rc, err.strip()) == (1, MSG_FOLDER_NOT_FOUND.format(path=str(missing), examples=examples))
    vec = tmp_path / "missing.txt"
    rc, _, err = _run(capsys, "run", WEAT7, "--kind", "embeddings", "--model", str(vec), "--out",
                      str(tmp_path / "x.json"))
    assert (rc, err.strip()) == (1, MSG_FILE_NOT_FOUND.format(name="missing.txt"))
    assert not (tmp_path / "x.json").exists()


def test_exit_code_mapping():
    assert cli.exit_code_for(DataError(MSG_NOTHING_SCORED.format(n=3, reasons="x"))) == 1
    assert cli.exit_code_for(DataError("bad data")) == 2
    assert cli.exit_code_for(ModelLoadError("no model")) == 1
    assert cli.exit_code_for(EmbeddingError("no vectors")) == 1
    assert cli.exit_code_for(UsageError("bad option")) == 2


# ----------------------------------------------------------------------------- the entry point, as a process
def test_entry_point_as_a_process_without_gradio_and_without_secrets(files, tmp_path):
    env = {**os.environ, "HF_TOKEN": FAKE_TOKEN, "OPENAI_API_KEY": FAKE_TOKEN, "PYTHONPATH": str(REPO)}
    helped = subprocess.run([sys.executable, "-m", "biastest", "--help"], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=120)
    assert helped.returncode == 0 and "list-specs" in helped.stdout and "run" in helped.stdout
    out, rows = tmp_path / "p.json", tmp_path / "p.csv"
    argv = ["biastest", "run", str(files["lm_spec"]), "--kind", "lm", "--model", str(files["gpt2"]),
            "--pairs", str(files["pairs"]), "--bootstrap", "200", "--out", str(out), "--csv", str(rows)]
    code = (
        "import runpy, sys\n"
        f"sys.argv = {argv!r}\n"
        "try:\n"
        "    runpy.run_module('biastest', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as e:\n"
        "    assert 'gradio' not in sys.modules, 'the command line imported gradio'\n"
        "    raise\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "Stereotype score" in ran.stdout and "Traceback" not in ran.stderr
    for text in (out.read_text(encoding="utf-8"), rows.read_text(encoding="utf-8"), ran.stdout, ran.stderr):
        assert FAKE_TOKEN not in text
    bare = subprocess.run([sys.executable, "-c", "import biastest.cli, sys; assert 'gradio' not in sys.modules"],
                          env=env, cwd=REPO, timeout=120)
    assert bare.returncode == 0


def test_a_library_name_with_a_slash_is_a_name_not_a_path(tmp_path, monkeypatch):
    # "Occupations vs love/hate (…)" was read as a file path ("specification file does not exist").
    monkeypatch.chdir(tmp_path)
    names = [n for n in list_specs() if "/" in n]
    assert names, "the library has no name with a slash any more: this test checks nothing"
    for name in names:
        assert inputs.load_spec(name).name == name
        assert inputs.load_spec(name.upper()).name == name
    with pytest.raises(UsageError):
        inputs.load_spec("no-such-folder/spec.json")


def newer_measures_taking(flag: str) -> list[str]:
    """``run <m>`` for every measure the earlier ``run SPEC --kind`` form never had that takes ``flag``: the end of
    a "does not apply" message, which grows with every new measure (so it is read from the registry)."""
    from biastest.cli.run import KINDS, _flag_names, cli_measures

    return [f"run {m.name}" for m in cli_measures() if m.kind not in KINDS and flag in _flag_names(m)]
