"""Audits in one process: the grid's checks, the cells against direct runner calls, resume, failures, frozen data.

Tiny GPT-2s are built from configs (tests/lm_helpers.py) and saved to a temp folder; the pairs are the planted
pairs written as CrowS-Pairs files. Runner calls are counted by wrapping ``biastest.measures.stereotype.run.run``
(the audit calls the runner through its module). Seeds: models 0 and 1, cells seed 1 (printed by the builders'
defaults in tests/audit_helpers.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from biastest.audit import grid as g
from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.cells import MSG_NO_ITEMS, STATISTICS
from biastest.audit.plan import MSG_SKIP_METHOD_KIND, MSG_SKIP_TWOAFC_SPEC, make_plan
from biastest.audit.run import CellStore
from biastest.errors import OptionError, SpecError
from biastest.options import MSG_BAD_WHOLE
from tests.audit_helpers import METHODS, SPEC_A, SPEC_B, build_models, without_time, write_lm_grid

REPO_ROOT = Path(__file__).resolve().parents[1]
GPT_MATH = "BiasTestGPT: Male vs female terms, math vs arts (WEAT 7's words, groups and attributes swapped)"


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    return build_models(tmp_path_factory.mktemp("audit-models"))


def _journal(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cells.log").read_text().splitlines()]


def _count_calls(monkeypatch, *, interrupt_at: int | None = None) -> list[dict]:
    """Wrap the language-model runner; the list grows by one per call (``KeyboardInterrupt`` at call ``n``)."""
    from biastest.measures.stereotype import run as lm_runner

    real = lm_runner.run
    calls: list[dict] = []

    def counted(options, items, **kwargs):
        calls.append({"options": options, "items": items, **kwargs})
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise KeyboardInterrupt
        return real(options, items, **kwargs)

    monkeypatch.setattr(lm_runner, "run", counted)
    return calls


# --------------------------------------------------------------------------- the grid's checks
def _grid(**over):
    doc = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC_A]}
    doc.update(over)
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([1, 2], g.MSG_GRID_NOT_MAPPING.format(path="(grid)", what="a list")),
        ({"specs": [SPEC_A]}, g.MSG_MISSING_KEY.format(where="The grid", key="models",
                                                       what="a list of the models to test")),
        (_grid(model=[]), g.MSG_UNKNOWN_KEY.format(key="model", where="the grid", hint=" Did you mean 'models'?",
                                                   choices=", ".join(g.GRID_KEYS))),
        (_grid(models=[]), g.MSG_EMPTY_LIST.format(key="models", where="the grid")),
        (_grid(models=[{"kind": "llm", "id": "gpt2"}]),
         g.MSG_MODEL_KIND.format(where="model 1", value="llm", hint=" Did you mean 'lm'?")),
        (_grid(models=[{"name": "x", "kind": "lm"}]), g.MSG_MODEL_NO_ID.format(where="model 1 ('x')")),
        (_grid(models=[{"kind": "lm", "id": "gpt2", "endpoint": "http://127.0.0.1:1/v1"}]),
         g.MSG_MODEL_ID_AND_ENDPOINT.format(where="model 1")),
        (_grid(models=[{"kind": "embeddings", "endpoint": "http://127.0.0.1:1/v1", "model": "m"}]),
         g.MSG_ENDPOINT_NOT_EMBEDDINGS.format(where="model 1")),
        (_grid(models=[{"kind": "vlm", "endpoint": "http://127.0.0.1:1/v1", "model": "m", "tokenizer": "gpt2"}]),
         g.MSG_KEY_NOT_FOR_MODEL.format(where="model 1", key="tokenizer",
                                        applies="a language model behind an endpoint")),
        (_grid(models=[{"kind": "lm", "endpoint": "http://127.0.0.1:1/v1", "model": "m", "api_key_env": "sk-abc!"}]),
         g.MSG_BAD_KEY_ENV.format(where="model 1")),
        (_grid(models=[{"kind": "lm", "endpoint": "http://127.0.0.1:1/v1", "model": "m",
                        "api_key_env": "BIASTEST_AUDIT_TEST_UNSET_KEY"}]),
         g.MSG_KEY_ENV_UNSET.format(var="BIASTEST_AUDIT_TEST_UNSET_KEY", where="model 1")),
        (_grid(models=[{"kind": "lm", "id": "./no/such/folder"}]),
         g.MSG_MODEL_FOLDER_MISSING.format(where="model 1", path="./no/such/folder")),
        (_grid(models=[{"kind": "embeddings", "id": "glove-6b-50d"}, {"name": "glove-6b-50d", "kind": "embeddings",
                                                                       "id": "minilm-l6-v2"}]),
         g.MSG_DUPLICATE_NAME.format(name="glove-6b-50d")),
        (_grid(models=[{"name": "a", "kind": "embeddings", "id": "glove-6b-50d"},
                       {"name": "b", "kind": "embeddings", "id": "GloVe-6B-50d"}]),
         g.MSG_DUPLICATE_MODEL.format(first="a", second="b", identity="glove-6b-50d")),
        (_grid(specs=[SPEC_A, SPEC_A]), g.MSG_DUPLICATE_SPEC.format(name=SPEC_A)),
        (_grid(specs=[{"data": {}}]), g.MSG_MISSING_KEY.format(where="specification 1", key="spec",
                                                                what="a library name or a file path")),
        (_grid(specs=[3]), g.MSG_SPEC_ENTRY.format(where="specification 1", what="int '3'")),
        (_grid(specs=["missing.json"]), g.MSG_FILE_NOT_FOUND.format(what="specification file", path="missing.json",
                                                                      where="specification 1")),
        (_grid(methods=["causal_sum"]), g.MSG_UNKNOWN_METHOD.format(
            value="causal_sum", where="the grid's methods", hint=" Did you mean 'causal-sum'?",
            choices="pll-unmodified, mean-logprob-modified, template-mask, causal-sum, causal-diff-span, vlm, 2afc, "
                    "weat, forced-choice, bbq, twoafc-chat, psychometric-chat, classifier-2afc, twoafc-classifier")),
        (_grid(methods=["bayes"]), g.MSG_BAYES_NOT_IN_AUDIT.format(where="the grid's methods")),
        (_grid(methods=["weat", "weat"]), g.MSG_DUPLICATE_ITEM.format(value="weat", key="methods",
                                                                       where="the grid's methods")),
        (_grid(models=[{"name": "g", "kind": "embeddings", "id": "glove-6b-50d", "methods": ["causal-sum"]}]),
         g.MSG_METHOD_NOT_FOR_KIND.format(where="model 1 ('g')", method="causal-sum", method_kind="lm",
                                          kind="embeddings")),
        (_grid(seeds=[1, 1]), g.MSG_DUPLICATE_ITEM.format(value=1, key="seeds", where="the grid")),
        (_grid(options={"n_permutation": 100}), g.MSG_UNKNOWN_OPTION.format(
            name="n_permutation", where="options", hint=" Did you mean 'n_permutations'?",
            choices=", ".join(g.option_names()))),
        (_grid(options={"tie_tolerance": 0.01}), g.MSG_OPTION_UNUSED.format(
            name="tie_tolerance", where="options", applies="the stereotype test (the language models)")),
        (_grid(options={"sigmoid": "probit"}), g.MSG_BAD_CHOICE.format(name="sigmoid", where="options",
                                                                        choices="norm, logistic", value="probit")),
        (_grid(options={"lapse": "yes"}), g.MSG_BAD_FLAG.format(name="lapse", where="options", value="yes")),
        (_grid(options={"noise_sigma": -1}), g.MSG_BAD_SIGMA.format(where="options", value=-1)),
        (_grid(resources={"num_gpus": -1}), g.MSG_BAD_RESOURCE.format(name="num_gpus", where="resources", high=64.0,
                                                                      value=-1)),
        (_grid(resources={"memory": "lots"}), g.MSG_BAD_MEMORY.format(where="resources", value="lots")),
        (_grid(resources={"max_retries": 1.5}), g.MSG_BAD_WHOLE_RESOURCE.format(
            name="max_retries", where="resources", low=0, high=100, value=1.5)),
        (_grid(data={"embeddings": {}}), g.MSG_DATA_KIND.format(kind="embeddings", hint="")),
        (_grid(data={"lm": {"from": "web"}}), g.MSG_DATA_FROM.format(where="data.lm", choices="files, store, generate",
                                                                     value="web")),
        (_grid(data={"lm": {"from": "files"}}), g.MSG_DATA_NO_FILES.format(where="data.lm")),
        (_grid(data={"lm": {"from": "files", "files": ["nope.csv"]}}),
         g.MSG_FILE_NOT_FOUND.format(what="pairs file", path="nope.csv", where="data.lm")),
        (_grid(data={"vlm": {"from": "images", "images": "pics", "pairing": "all"}}), g.MSG_UNKNOWN_KEY.format(
            key="pairing", where="data.vlm", hint="", choices="from, images")),
    ],
)
def test_grid_mistakes_get_their_message(doc, message, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("BIASTEST_AUDIT_TEST_UNSET_KEY", raising=False)
    with pytest.raises(g.GridError) as info:
        parse_grid(doc, base=tmp_path)
    assert info.value.message == message


def test_option_and_spec_mistakes_keep_the_library_message_and_say_where(tmp_path) -> None:
    with pytest.raises(OptionError) as info:
        parse_grid(_grid(options={"n_permutations": 5}), base=tmp_path)
    assert info.value.message == g.MSG_IN_ENTRY.format(where="options", message=MSG_BAD_WHOLE.format(
        label="The number of permutations", low=100, high=1_000_000, value=5))
    with pytest.raises(OptionError) as info:
        parse_grid(_grid(seeds=[-1]), base=tmp_path)
    assert info.value.message.startswith("seeds: The seed must be a whole number")
    with pytest.raises(SpecError) as info:
        parse_grid(_grid(specs=["WEAT 77"]), base=tmp_path)
    assert info.value.message.startswith("specification 1: ")
    with pytest.raises(OptionError) as info:
        parse_grid(_grid(models=[{"kind": "lm", "endpoint": "ftp://x", "model": "m"}]), base=tmp_path)
    assert info.value.message.startswith("model 1: ")
    from biastest.measures import vlm as vlm_score
    from biastest.measures.stereotype import clusters as lm_clusters

    both = [{"name": "l", "kind": "lm", "id": "org/lm"}, {"name": "v", "kind": "vlm", "id": "org/vlm"}]
    with pytest.raises(OptionError) as info:  # a clustering of pairs that images do not have
        parse_grid(_grid(models=both, options={"clusters": "template"}), base=tmp_path)
    assert info.value.message == g.MSG_IN_ENTRY.format(
        where="options (for the vision-language models)", message=vlm_score.MSG_BAD_CLUSTERS.format(
            value="template", choices=", ".join(vlm_score.CLUSTERINGS)))
    with pytest.raises(OptionError) as info:
        parse_grid(_grid(models=[{**both[0], "options": {"clusters": "image-term"}}]), base=tmp_path)
    assert info.value.message == g.MSG_IN_ENTRY.format(
        where="model 1 ('l') options (for the stereotype test)", message=lm_clusters.MSG_BAD_CLUSTERS.format(
            value="image-term", choices=", ".join(lm_clusters.CLUSTERINGS)))
    mixed = parse_grid(_grid(models=[{**both[0], "options": {"clusters": "template"}}, both[1]],
                             options={"clusters": "image"}), base=tmp_path)  # each model's own wins
    assert mixed.options == {"clusters": "image"} and mixed.models[0].options == {"clusters": "template"}


def test_a_grid_file_is_yaml_read_safely(tmp_path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("models: [a\n", encoding="utf-8")
    with pytest.raises(g.GridError) as info:
        g.load_grid(path)
    assert info.value.message.startswith(g.MSG_GRID_YAML.format(path=path, problem="")[:-1])
    path.write_text("!!python/object/apply:os.system ['echo pwned']\n", encoding="utf-8")
    with pytest.raises(g.GridError) as info:  # safe_load refuses the tag: nothing runs
        g.load_grid(path)
    assert "could not determine a constructor" in info.value.message
    with pytest.raises(g.GridError) as info:
        g.load_grid(tmp_path / "none.yaml")
    assert info.value.message == g.MSG_GRID_NOT_FOUND.format(path=tmp_path / "none.yaml")
    assert g.parse_memory("2GiB") == 2 * 2**30 and g.parse_memory("512MB") == 512 * 10**6 and g.parse_memory(7) == 7


def test_the_plan_leaves_out_what_does_not_apply_and_says_why(tmp_path, models) -> None:
    from tests.lm_helpers import build_tiny_bert

    bert = build_tiny_bert(tmp_path / "bert")
    grid = parse_grid({
        "models": [{"name": "bert", "kind": "lm", "id": str(bert)},
                   {"name": "gpt", "kind": "lm", "id": str(models["a"])},
                   {"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}],
        "specs": [SPEC_A, "Occupations vs gender (Liang & Acuna 2020)"],
        "data": {"lm": {"from": "files", "files": [str(write_lm_grid(tmp_path / "g", models).parent / "a.csv")]}},
        "methods": ["pll-unmodified", "causal-sum"],
        "seeds": [3, 4],
    }, base=tmp_path)
    plan = make_plan(grid, tmp_path / "out")
    got = sorted((c.model.name, c.spec.name, c.method, c.seed) for c in plan.cells)
    occ = "Occupations vs gender (Liang & Acuna 2020)"
    assert got == sorted([("bert", SPEC_A, "pll-unmodified", 3), ("bert", SPEC_A, "pll-unmodified", 4),
                          ("gpt", SPEC_A, "causal-sum", 3), ("gpt", SPEC_A, "causal-sum", 4),
                          ("glove", SPEC_A, "weat", 3), ("glove", SPEC_A, "weat", 4),  # default test per spec type
                          ("glove", occ, "2afc", 3), ("glove", occ, "2afc", 4)])
    reasons = {(s["model"], s["spec"], s["method"]): s["reason"] for s in plan.skipped}
    assert reasons[("bert", SPEC_A, "causal-sum")] == MSG_SKIP_METHOD_KIND.format(
        method="causal-sum", method_kinds="causal", model="bert", kind="masked")
    assert reasons[("gpt", SPEC_A, "pll-unmodified")] == MSG_SKIP_METHOD_KIND.format(
        method="pll-unmodified", method_kinds="masked", model="gpt", kind="causal")
    assert reasons[("gpt", occ, "causal-sum")] == MSG_SKIP_TWOAFC_SPEC.format(spec=occ)
    assert len({c.key for c in plan.cells}) == len(plan.cells)
    lm_items = {c.items.sha256 for c in plan.cells if c.model.kind == "lm"}
    assert len(lm_items) == 1  # frozen once, the same items for both language models


def test_the_shipped_example_grid_is_valid(tmp_path) -> None:
    grid = g.load_grid(REPO_ROOT / "examples" / "audit-embeddings.yaml")
    plan = make_plan(grid, tmp_path)
    assert [m.ref for m in grid.models] == ["glove-6b-50d", "minilm-l6-v2"]
    assert len(plan.cells) == 2 * 12 and {c.method for c in plan.cells} == {"weat", "2afc"}
    assert sum(c.method == "2afc" for c in plan.cells) == 4


def test_keys_follow_the_content_not_the_labels_or_the_spelling_of_defaults(tmp_path, models) -> None:
    path = write_lm_grid(tmp_path / "g", models)
    doc = json.loads(path.read_text())
    base = make_plan(parse_grid(doc, base=path.parent), tmp_path / "o1")
    renamed = json.loads(path.read_text())
    renamed["models"][0]["name"] = "another label"
    renamed["options"]["confidence"] = 0.95  # the default, written out
    same = make_plan(parse_grid(renamed, base=path.parent), tmp_path / "o2")
    assert [c.key for c in same.cells] == [c.key for c in base.cells]
    changed = json.loads(path.read_text())
    changed["options"]["n_resamples"] = 300
    other = make_plan(parse_grid(changed, base=path.parent), tmp_path / "o3")
    assert not {c.key for c in other.cells} & {c.key for c in base.cells}


# --------------------------------------------------------------------------- the cell files
def test_a_finished_cell_is_written_once_and_whole_and_a_failure_never_hides_it(tmp_path) -> None:
    import threading

    store = CellStore(tmp_path)
    done = {"key": "k1", "status": "done", "result": {"x": 1}}
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def save(i: int) -> None:
        barrier.wait()
        results.append(store.save({**done, "result": {"x": i}}))

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == [False] * 7 + [True]  # eight writers of one cell: one file, never replaced
    first = store.load("k1")["result"]["x"]
    assert store.save({**done, "result": {"x": 99}}) is False and store.load("k1")["result"]["x"] == first
    assert store.save({"key": "k1", "status": "failed", "error": "late"}) is False
    assert not store.error_path("k1").exists()
    assert store.save({"key": "k2", "status": "failed", "error": "e1"}) is True
    assert store.save({"key": "k2", "status": "failed", "error": "e2"}) is True and store.load("k2")["error"] == "e2"
    assert store.save({"key": "k2", "status": "done", "result": {}}) is True
    assert not store.error_path("k2").exists() and store.load("k2")["status"] == "done"
    assert [e["key"] for e in _journal(tmp_path)] == ["k1", "k2", "k2", "k2"]
    assert sorted(p.name for p in store.cells.iterdir()) == ["k1.json", "k2.json"]  # no temporary file left


# --------------------------------------------------------------------------- running
def test_an_audit_in_process_equals_direct_runner_calls(tmp_path, models, monkeypatch) -> None:
    from biastest.runner.services import import_pairs
    from biastest.specs import get_spec
    from tests.lm_helpers import run_pairs

    path = write_lm_grid(tmp_path / "g", models)
    out = tmp_path / "out"
    calls = _count_calls(monkeypatch)
    summary = run_audit(path, out, progress=False)
    assert (summary.cells, summary.computed, summary.failed, summary.reused) == (8, 8, 0, 0)
    assert len(calls) == 8
    table = read_table(out)
    assert len(table) == 8 and table["key"].is_unique and set(table["status"]) == {"done"}
    csv_rows = (out / "results.csv").read_text(encoding="utf-8").splitlines()
    assert len(csv_rows) == 9 and csv_rows[0].startswith("key,status,error,model,")
    monkeypatch.undo()
    for spec_name, pairs_file in ((SPEC_A, "a.csv"), (SPEC_B, "b.csv")):
        spec = get_spec(spec_name)
        pairs = import_pairs(path.parent / pairs_file, fmt="auto", spec=spec)
        for name, folder in (("tiny-a", models["a"]), ("tiny-b", models["b"])):
            for method in METHODS:
                row = table[(table.model == name) & (table.spec == spec_name) & (table.method == method)]
                assert len(row) == 1
                doc = json.loads((out / "cells" / f"{row.key.iloc[0]}.json").read_text())
                direct = run_pairs(pairs=pairs, spec=spec, model_id=str(folder), method=method, seed=1,
                                             n_resamples=200, batch_size=16)
                assert without_time(doc["result"]) == without_time(direct.to_dict())
                r = row.iloc[0]
                assert (r.score, r.ci_low, r.ci_high, r.p_value) == (direct.overall.score, direct.overall.ci_low,
                                                                     direct.overall.ci_high, direct.overall.p_value)
                assert (r.n, r.n_scored, r.n_excluded) == (24, direct.n_scored, direct.n_excluded)
                assert r.statistic == STATISTICS["lm"] and r.seed == 1 and r.model_ref == str(folder)
    assert len(_journal(out)) == 8
    plan = json.loads((out / "audit.json").read_text())
    assert len(plan["cells"]) == 8 and plan["versions"]["biastest"]


def test_the_row_follows_the_cluster_aware_headline_of_pairs_that_share_templates(tmp_path, models) -> None:
    from biastest.measures.stereotype.summary import with_clusters
    from biastest.runner.services import import_pairs
    from biastest.specs import get_spec
    from tests.audit_helpers import write_biastestgpt_pairs
    from tests.lm_helpers import planted_pairs, run_pairs

    pairs_file = write_biastestgpt_pairs(tmp_path / "pairs.csv", planted_pairs()[:112])  # 4 pairs a template
    doc = {"models": [{"name": "a", "kind": "lm", "id": str(models["a"])}],
           "specs": [SPEC_A], "data": {"lm": {"from": "files", "files": ["pairs.csv"]}}, "methods": ["causal-sum"],
           "seeds": [3], "options": {"n_resamples": 200}}
    doc_pair = json.loads(json.dumps(doc))
    doc_pair["options"]["clusters"] = "pair"
    for grid_doc, out in ((doc, tmp_path / "auto"), (doc_pair, tmp_path / "pair")):
        run_audit(parse_grid(grid_doc, base=tmp_path), out, progress=False)
    auto, pair = read_table(tmp_path / "auto").iloc[0], read_table(tmp_path / "pair").iloc[0]
    spec = get_spec(SPEC_A)
    direct = run_pairs(pairs=import_pairs(pairs_file, fmt="auto", spec=spec), spec=spec,
                                 model_id=str(models["a"]), method="causal-sum", seed=3, n_resamples=200)
    c = direct.overall_clustered
    assert direct.cluster_aware and c.n_clusters < direct.n_scored
    assert (auto.score, auto.ci_low, auto.ci_high, auto.p_value) == (direct.overall.score, c.low, c.high, c.p_value)
    assert (auto.clusters, auto.n_clusters, auto.design_effect, auto.ci_method) == (
        c.cluster_by, c.n_clusters, c.design_effect, c.interval_method)
    # clusters: pair → pairs independent within attribute terms (strata, issue 28), as the result's headline
    independent = with_clusters(direct, "pair")
    assert independent.cluster_aware and independent.overall_clustered.n_strata > 1
    assert (pair.score, pair.ci_low, pair.ci_high) == pytest.approx((direct.overall.score,
                                                                     *independent.headline_interval))
    assert pair.key != auto.key


def test_a_rerun_after_an_interruption_computes_only_the_missing_cells(tmp_path, models, monkeypatch) -> None:
    path = write_lm_grid(tmp_path / "g", models)
    out = tmp_path / "out"
    calls = _count_calls(monkeypatch, interrupt_at=4)
    with pytest.raises(KeyboardInterrupt):
        run_audit(path, out, progress=False)
    assert len(calls) == 4
    assert len(list((out / "cells").glob("*.json"))) == 3  # the cells before the interruption, each whole
    assert not list((out / "cells").glob(".*.tmp"))
    monkeypatch.undo()
    calls = _count_calls(monkeypatch)
    summary = run_audit(path, out, progress=False)
    assert len(calls) == 5 and (summary.reused, summary.computed) == (3, 5)
    calls.clear()
    summary = run_audit(path, out, progress=False)
    assert calls == [] and summary.reused == 8
    keys = [e["key"] for e in _journal(out)]
    assert len(keys) == 8 and len(set(keys)) == 8  # every cell written exactly once over the three runs
    assert len(read_table(out)) == 8


def test_a_failed_cell_is_recorded_the_others_go_on_and_a_rerun_retries_it(tmp_path, models, monkeypatch) -> None:
    from biastest.cli import main

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    path = write_lm_grid(tmp_path / "g", models)
    doc = json.loads(path.read_text())
    doc["models"].append({"name": "broken", "kind": "lm", "id": str(broken)})
    doc["methods"] = ["causal-sum"]
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    calls = _count_calls(monkeypatch)
    assert main(["audit", str(path), "--out", str(out), "--no-progress"]) == 1
    table = read_table(out)
    assert len(table) == 6 and len(calls) == 6
    failed = table[table.status == "failed"]
    assert list(failed.model) == ["broken", "broken"] and failed.score.isna().all()
    assert all(e and "broken" in e for e in failed.error)
    for key in failed.key:
        assert (out / "cells" / f"{key}.error.json").is_file() and not (out / "cells" / f"{key}.json").exists()
    assert (table[table.status == "done"].score.notna()).all()
    calls.clear()
    assert main(["audit", str(path), "--out", str(out), "--no-progress"]) == 1
    assert len(calls) == 2  # only the failed cells run again


def test_test_data_that_cannot_be_drawn_fail_their_cells_only(tmp_path, models) -> None:
    path = write_lm_grid(tmp_path / "g", models)
    doc = json.loads(path.read_text())
    (tmp_path / "g" / "empty.csv").write_text("sent_more,sent_less,stereo_antistereo,bias_type\n", encoding="utf-8")
    doc["specs"][1]["data"]["lm"]["files"] = ["empty.csv"]
    doc["models"] = doc["models"][:1]
    doc["methods"] = ["causal-sum"]
    summary = run_audit(parse_grid(doc, base=path.parent), tmp_path / "out", progress=False)
    table = read_table(tmp_path / "out")
    assert (summary.computed, summary.failed) == (1, 1)
    bad = table[table.spec == SPEC_B].iloc[0]
    assert bad.status == "failed" and bad.error.startswith(MSG_NO_ITEMS.format(problem="")[:-1])


def test_test_data_are_frozen_once_for_the_whole_grid(tmp_path) -> None:
    """Pairs found in the store are written into the audit once; later store changes do not reach the audit."""
    from biastest.inputs import pairs_from_store
    from biastest.records import SentencePair
    from biastest.specs import get_spec
    from biastest.store import DatasetStore

    spec = get_spec(GPT_MATH)
    store_dir = tmp_path / "store"
    store = DatasetStore(store_dir, writer="test")
    made = [SentencePair(stereotyped=f"The man loves math number {i}.", anti_stereotyped=f"The woman loves math "
                         f"number {i}.", attribute_term="math", group_term_stereotyped="man",
                         group_term_anti="woman", source="test", spec_name=spec.name) for i in range(3)]
    store.add([], made)
    doc = {"models": [{"name": "m1", "kind": "lm", "id": "org/m1"}, {"name": "m2", "kind": "lm", "id": "org/m2"}],
           "specs": [GPT_MATH], "data": {"lm": {"from": "store", "store": str(store_dir)}}, "methods": ["causal-sum"]}
    first = make_plan(parse_grid(doc, base=tmp_path), tmp_path / "out")
    items = first.items[0]
    assert items.file and items.count == 3 and len({c.items.sha256 for c in first.cells}) == 1
    expected, _ = pairs_from_store(str(store_dir), spec, "positional")
    frozen = json.loads((tmp_path / "out" / items.file).read_text())
    assert [p["id"] for p in frozen["pairs"]] == [p.id for p in expected]
    store.add([], [SentencePair(stereotyped="The man adores algebra.", anti_stereotyped="The woman adores algebra.",
                                attribute_term="algebra", group_term_stereotyped="man", group_term_anti="woman",
                                source="test", spec_name=spec.name)])
    assert len(pairs_from_store(str(store_dir), spec, "positional")[0]) == 4
    again = make_plan(parse_grid(doc, base=tmp_path), tmp_path / "out")
    assert again.items[0].sha256 == items.sha256 and again.items[0].count == 3
    assert [c.key for c in again.cells] == [c.key for c in first.cells]
    fresh = make_plan(parse_grid(doc, base=tmp_path), tmp_path / "other")
    assert fresh.items[0].count == 4  # a new audit folder draws the items anew


def test_generated_sentences_are_drawn_once_and_the_key_never_written(tmp_path, monkeypatch) -> None:
    from tests.generate_helpers import small_spec
    from tests.openai_stub import OpenAIStub

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(small_spec().to_dict()), encoding="utf-8")
    secret = "sk-audit-secret-123456"
    monkeypatch.setenv("AUDIT_GEN_KEY", secret)
    with OpenAIStub() as stub:
        doc = {"models": [{"name": "m1", "kind": "lm", "id": "org/m1"}], "specs": ["spec.json"],
               "data": {"lm": {"from": "generate", "generator": "openai-compatible", "base_url": stub.base_url,
                               "model": "stub-chat", "api_key_env": "AUDIT_GEN_KEY", "per_attribute": 1,
                               "seed": 5}},
               "methods": ["causal-sum"]}
        plan = make_plan(parse_grid(doc, base=tmp_path), tmp_path / "out")
        n_requests = len(stub.requests)
        assert n_requests > 0 and plan.items[0].count > 0 and plan.items[0].error is None
        again = make_plan(parse_grid(doc, base=tmp_path), tmp_path / "out")
        assert len(stub.requests) == n_requests  # frozen: not generated again
        assert again.items[0].sha256 == plan.items[0].sha256
    frozen = (tmp_path / "out" / plan.items[0].file).read_text()
    assert secret not in frozen and json.loads(frozen)["data"]["generator"] == "openai-compatible"


def test_embeddings_cells_equal_the_runners(tmp_path) -> None:
    from biastest.specs import get_spec, get_twoafc_spec
    from tests.embedding_runs import run_mac, run_twoafc, run_weat

    occ = "Occupations vs gender (Liang & Acuna 2020)"
    doc = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC_A, occ],
           "seeds": [7], "options": {"n_permutations": 500, "n_bootstrap": 0}}
    out = tmp_path / "out"
    assert run_audit(parse_grid(doc, base=tmp_path), out, progress=False).computed == 2
    table = read_table(out).set_index("method")
    weat_doc = json.loads((out / "cells" / f"{table.loc['weat', 'key']}.json").read_text())
    spec = get_spec(SPEC_A)
    weat = run_weat(spec=spec, source="glove-6b-50d", seed=7, n_permutations=500)
    assert without_time(weat_doc["result"]) == without_time(weat.to_dict())
    assert without_time(weat_doc["mac"]) == without_time(run_mac(spec=spec, source="glove-6b-50d").to_dict())
    assert table.loc["weat", "score"] == weat.effect_size and table.loc["weat", "p_value"] == weat.p_value
    assert (table.loc["weat", "ci_low"], table.loc["weat", "ci_high"]) == tuple(weat.effect_size_ci)
    afc_doc = json.loads((out / "cells" / f"{table.loc['2afc', 'key']}.json").read_text())
    afc = run_twoafc(spec=get_twoafc_spec(occ), source="glove-6b-50d", noise_sigma=0.05, seed=7, n_bootstrap=0)
    assert without_time(afc_doc["result"]) == without_time(afc.to_dict())
    assert table.loc["2afc", "n_scored"] == len(afc.targets) and bool(table.isna().loc["2afc", "score"])


def test_vision_language_cells_equal_the_runner_in_process_and_behind_an_endpoint(tmp_path, monkeypatch) -> None:
    from biastest.inputs import images_from_folder
    from biastest.spec import BiasSpec
    from tests import vlm_helpers
    from tests.chat_images_stub import ChatImagesStub
    from tests.vlm_helpers import run_vlm

    spec = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse, teacher",
                               name="colours")
    (tmp_path / "spec.json").write_text(spec.to_json(), encoding="utf-8")
    clip = vlm_helpers.save_tiny_clip(tmp_path / "clip")
    scratch, images = tmp_path / "scratch", tmp_path / "images"
    for img in vlm_helpers.colour_images(scratch, per_term=3, seed=11):  # one subfolder per image term
        (images / img.image_term).mkdir(parents=True, exist_ok=True)
        (images / img.image_term / Path(img.path).name).write_bytes((scratch / img.path).read_bytes())
    secret = "sk-vlm-audit-secret-5555"
    monkeypatch.setenv("AUDIT_VLM_KEY", secret)
    out = tmp_path / "out"
    recs, root = images_from_folder(images)
    with ChatImagesStub(clip, served_name="tiny-llava") as stub:
        doc = {"models": [{"name": "clip", "kind": "vlm", "id": "clip"},
                          {"name": "served", "kind": "vlm", "endpoint": stub.base_url, "model": "tiny-llava",
                           "api_key_env": "AUDIT_VLM_KEY", "options": {"concurrency": 2}}],
               "specs": ["spec.json"], "data": {"vlm": {"from": "images", "images": "images"}}, "seeds": [2],
               "options": {"n_resamples": 200}}
        assert run_audit(parse_grid(doc, base=tmp_path), out, progress=False).computed == 2
        assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {secret}"}
        served = run_vlm(images=recs, image_root=root, spec=spec, model_id="tiny-llava", seed=2,
                              n_resamples=200, endpoint=stub.base_url, api_key=secret, concurrency=2)
    here = run_vlm(images=recs, image_root=root, spec=spec, model_id=str(clip), seed=2, n_resamples=200)
    table = read_table(out).set_index("model")
    assert table.loc["clip", "items_sha256"] == table.loc["served", "items_sha256"]  # the same frozen images
    for name, direct in (("clip", here), ("served", served)):
        cell = json.loads((out / "cells" / f"{table.loc[name, 'key']}.json").read_text())
        got, want = without_time(cell["result"]), without_time(direct.to_dict())
        for r in (got, want):  # records made twice carry their own creation time
            for img in r["images"]:
                img.pop("created_at", None)
        assert got == want
        summary = direct.soft if direct.soft is not None else direct.hard
        assert (table.loc[name, "score"], table.loc[name, "n"]) == (summary.score, 6)
        c = direct.headline_clustered
        # auto (issue 28): pictures independent within their image terms (red, blue are strata, not clusters)
        assert direct.cluster_aware and c.n_clusters == 6 and c.n_strata == 2 and c.interval_shown
        assert (table.loc[name, "ci_low"], table.loc[name, "ci_high"]) == pytest.approx((c.low, c.high))
        assert pd.isna(table.loc[name, "note"]) and table.loc[name, "p_value"] == c.p_value
    assert table.loc["clip", "statistic"] == STATISTICS["vlm"]
    frozen = json.loads((out / table.loc["clip", "items_file"]).read_text())
    assert sorted(i["sha256"] for i in frozen["images"]) == sorted(r.sha256 for r in recs)
    for f in out.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_a_model_behind_an_endpoint_runs_and_its_key_stays_in_the_environment(tmp_path, models, monkeypatch) -> None:
    from biastest.runner.services import import_pairs
    from biastest.specs import get_spec
    from tests.completions_stub import CompletionsStub
    from tests.lm_helpers import run_pairs

    secret = "sk-endpoint-secret-987654"
    monkeypatch.setenv("AUDIT_ENDPOINT_KEY", secret)
    path = write_lm_grid(tmp_path / "g", models, n_pairs=8)
    with CompletionsStub(models["a"], served_name="served-a") as stub:
        doc = json.loads(path.read_text())
        doc["models"] = [{"name": "served", "kind": "lm", "endpoint": stub.base_url, "model": "served-a",
                          "api_key_env": "AUDIT_ENDPOINT_KEY", "tokenizer": str(models["a"])}]
        doc["specs"], doc["methods"] = doc["specs"][:1], ["causal-sum", "pll-unmodified"]
        out = tmp_path / "out"
        summary = run_audit(parse_grid(doc, base=path.parent), out, progress=False)
        assert (summary.computed, summary.failed, summary.skipped) == (1, 0, 1)
        assert {r["headers"].get("authorization") for r in stub.requests} == {f"Bearer {secret}"}
        direct = run_pairs(pairs=import_pairs(path.parent / "a.csv", fmt="auto", spec=get_spec(SPEC_A)),
                                     spec=get_spec(SPEC_A), model_id="served-a", method="causal-sum", seed=1,
                                     n_resamples=200, batch_size=16, endpoint=stub.base_url, api_key=secret,
                                     tokenizer=str(models["a"]))
    table = read_table(out)
    cell = json.loads((out / "cells" / f"{table.key.iloc[0]}.json").read_text())
    assert without_time(cell["result"]) == without_time(direct.to_dict())
    for f in out.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_the_in_process_path_never_imports_ray_and_ray_lives_in_one_module(tmp_path) -> None:
    from tests.test_architecture import _source_files, violations

    bad = violations(_source_files(), frozenset({"ray"}), allowed=(REPO_ROOT / "biastest/audit/ray_runner.py",))
    assert bad == []
    code = ("import sys; import biastest.audit, biastest.audit.run, biastest.audit.cells, biastest.cli\n"
            "from biastest.cli import main\n"
            f"main(['audit', {str(tmp_path / 'none.yaml')!r}, '--out', {str(tmp_path / 'o')!r}])\n"
            "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_command_line_reports_grid_mistakes_with_exit_status_2(tmp_path, capsys, monkeypatch) -> None:
    import importlib.util

    from biastest.cli import MSG_RAY_CPUS_WITHOUT_LOCAL, MSG_RAY_MISSING, main

    path = tmp_path / "g.yaml"
    path.write_text("models: []\nspecs: [x]\n", encoding="utf-8")
    assert main(["audit", str(path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith(g.MSG_EMPTY_LIST.format(key="models", where="the grid"))
    assert main(["audit", str(path), "--out", str(tmp_path / "o"), "--ray-cpus", "2"]) == 2
    assert capsys.readouterr().err.strip().endswith(MSG_RAY_CPUS_WITHOUT_LOCAL)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert main(["audit", str(path), "--out", str(tmp_path / "o"), "--ray", "local"]) == 2  # the extra is missing
    assert capsys.readouterr().err.strip().endswith(MSG_RAY_MISSING)


def test_options_for_a_model_in_this_process_do_not_reach_one_behind_an_endpoint(tmp_path) -> None:
    """device/dtype apply to a model in this process, concurrency to one behind an endpoint (the option's own
    rule, as the command line reads it): a grid's options reach the cells they apply to; a model's own options
    that cannot apply to it are refused."""
    from biastest.audit import parse_grid
    from biastest.audit.grid_options import cell_options
    from biastest.errors import BiastestError
    from biastest.measures import MEASURES

    stereotype = MEASURES["stereotype"]
    base = {"model_id": "gpt2", "seed": 1, "method": "causal-sum"}
    local = cell_options(stereotype, {"device": "cpu", "concurrency": 2}, base)
    served = cell_options(stereotype, {"device": "cpu", "concurrency": 2},
                          {**base, "endpoint": "http://127.0.0.1:9/v1"})
    assert local["device"] == "cpu" and local["concurrency"] == stereotype.Options.defaults()["concurrency"]
    assert served["concurrency"] == 2 and served["device"] == "auto"
    doc = {"models": [{"name": "served", "kind": "lm", "endpoint": "http://127.0.0.1:9/v1", "model": "m",
                       "options": {"device": "cpu"}}], "specs": ["WEAT 7: Math vs arts, male vs female terms"]}
    with pytest.raises(BiastestError) as info:
        parse_grid(doc, base=tmp_path)
    assert "'device' applies only to a model in this process" in info.value.message
