"""A toy measure added in one place plus one registry line, and run through the audit (issue 23's "done when").

The toy is a measure of embeddings: the mean Euclidean norm of the specification's words in the embedding
(no model loads beyond the embedded GloVe the other embedding tests use). It has its own Options, Result and
``run``; ``MEASURES.registered`` adds it for the test, and an audit grid names it like any other method.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from pydantic import Field

from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.grid import MSG_OPTION_UNUSED
from biastest.audit.grid_common import GridError
from biastest.audit.uses import AuditUse
from biastest.cli import EXIT_OK, EXIT_USAGE, MSG_OPTION_NOT_FOR_RUN, main
from biastest.measures import MEASURES, Measure, OptionsBase, ResultBase
from biastest.measures.base import cli_flag
from biastest.models.embeddings import load_embeddings
from biastest.options import check_option
from tests.audit_helpers import SPEC_A

TOY = "vector-norm"


class ToyOptions(OptionsBase):
    """The embedding, the seed (recorded) and how many of each list's words to use at most."""

    source: str = Field("glove-6b-50d", json_schema_extra=cli_flag("--model", "embedding source"))
    seed: int = Field(0, json_schema_extra=cli_flag("--seed", "seed (recorded)"))
    max_words: int = Field(50, json_schema_extra=cli_flag("--max-words", "words of each list at most"))


class ToyResult(ResultBase):
    result_name = TOY
    mean_norm: float
    n_words: int
    n_missing: int
    provenance: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class ToyItems:
    spec: Any


def run_toy(options: ToyOptions, items: ToyItems, *, progress=None, cancel=None) -> ToyResult:
    """The mean norm of the spec's group and attribute words that the embedding has."""
    spec = items.spec
    words = [w for _, terms in (*spec.social_groups[:2], *spec.attributes[:2]) for w in terms[:options.max_words]]
    vectors, missing = load_embeddings(options.source).vectors(words)
    norms = np.linalg.norm(np.asarray(vectors, dtype=float), axis=1)
    return ToyResult(mean_norm=float(norms.mean()), n_words=len(norms), n_missing=len(missing),
                     provenance={"options": options.dump()})


def _toy_row(result: dict[str, Any], row: dict[str, Any]) -> None:
    row.update({"score": result["mean_norm"], "n": result["n_words"] + result["n_missing"],
                "n_scored": result["n_words"], "n_excluded": result["n_missing"], "model_kind": "embeddings"})


TOY_MEASURE = Measure(
    name=TOY, kind="embeddings", title="Mean norm of the specification's words (a toy)", Options=ToyOptions,
    run=run_toy, Result=ToyResult,
    extra={"audit": AuditUse(spec_type="bias", items=lambda records: ToyItems(spec=records["spec"]),
                             row=_toy_row, statistic="mean word-vector norm")},
)


@pytest.fixture
def toy() -> Iterator[Measure]:
    """The toy measure in :data:`MEASURES` for the test (the one registry line of a real measure)."""
    with MEASURES.registered(TOY_MEASURE) as measure:
        yield measure


def test_the_toy_options_are_checked_like_any_measures() -> None:
    assert ToyOptions.parse({"seed": 3}).seed == 3
    with pytest.raises(Exception) as info:
        ToyOptions.parse({"seed": -1})
    with pytest.raises(Exception) as bound:
        check_option("seed", -1)
    assert info.value.message == bound.value.message


def test_a_toy_measure_runs_through_the_audit(tmp_path, toy) -> None:
    doc = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC_A],
           "methods": [TOY, "weat"], "seeds": [5], "options": {"max_words": 3, "n_permutations": 200}}
    out = tmp_path / "out"
    summary = run_audit(parse_grid(doc, base=tmp_path), out, progress=False)
    assert (summary.cells, summary.computed, summary.failed) == (2, 2, 0)
    table = read_table(out).set_index("method")
    row = table.loc[TOY]
    direct = run_toy(ToyOptions.parse(source="glove-6b-50d", seed=5, max_words=3), ToyItems(spec=parse_grid(
        doc, base=tmp_path).specs[0].spec))
    assert row.status == "done" and row.statistic == "mean word-vector norm" and row.seed == 5
    assert row.score == pytest.approx(direct.mean_norm, rel=1e-12) and row.n_scored == direct.n_words
    assert json.loads(row.options) == {"max_words": 3}  # the toy's own options; weat's went to weat
    cell = json.loads((out / "cells" / f"{row.key}.json").read_text())
    assert cell["cell"]["measure"] == TOY and ToyResult.from_dict(cell["result"]).n_words == direct.n_words
    assert table.loc["weat", "status"] == "done"


def test_the_grid_checks_the_toy_options_before_anything_runs(tmp_path, toy) -> None:
    base = {"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC_A]}
    with pytest.raises(Exception) as info:
        parse_grid({**base, "methods": [TOY], "options": {"max_words": "many"}}, base=tmp_path)
    assert info.value.message.startswith("options")
    with pytest.raises(GridError) as info:  # the toy's option, and the grid runs no toy cell
        parse_grid({**base, "methods": ["weat"], "options": {"max_words": 3}}, base=tmp_path)
    assert info.value.message == MSG_OPTION_UNUSED.format(name="max_words", where="options",
                                                          applies=f"the {TOY} test (the embeddings)")


# --------------------------------------------------------------------------- the command line's half
def test_a_toy_measure_runs_through_the_command_line(tmp_path, toy, capsys) -> None:
    """``run vector-norm SPEC`` exists because the measure is registered: its flags come from its options."""
    spec_file = tmp_path / "spec.json"
    spec = parse_grid({"models": [{"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"}], "specs": [SPEC_A]},
                      base=tmp_path).specs[0].spec
    spec_file.write_text(spec.to_json(), encoding="utf-8")
    out = tmp_path / "toy.json"
    rc = main(["run", TOY, str(spec_file), "--model", "glove-6b-50d", "--max-words", "3", "--seed", "5",
               "--out", str(out), "--csv", str(tmp_path / "toy.csv")])
    stdout, stderr = capsys.readouterr()
    assert rc == EXIT_OK, stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    direct = run_toy(ToyOptions.parse(source="glove-6b-50d", seed=5, max_words=3), ToyItems(spec=spec))
    assert doc["test"] == TOY and doc["kind"] == "embeddings" and doc["seed"] == 5
    assert ToyResult.from_dict(doc["result"]).mean_norm == pytest.approx(direct.mean_norm, rel=1e-12)
    assert doc["options"] == {"source": "glove-6b-50d", "seed": 5, "max_words": 3}
    assert (tmp_path / "toy.csv").exists() and TOY in stdout
    # its flags belong to it: another measure's flag is refused naming the measures that take it, and back
    rc = main(["run", TOY, str(spec_file), "--permutations", "100", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and capsys.readouterr().err.strip().endswith(MSG_OPTION_NOT_FOR_RUN.format(
        option="--permutations", what=f"run {TOY}", applies="weat"))
    rc = main(["run", "weat", str(spec_file), "--max-words", "3", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and capsys.readouterr().err.strip().endswith(MSG_OPTION_NOT_FOR_RUN.format(
        option="--max-words", what="run weat", applies=TOY))
    rc = main(["run", TOY, str(spec_file), "--max-words", "0.5", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and not (tmp_path / "x.json").exists()


def test_without_the_registry_line_there_is_no_toy_subcommand(tmp_path, capsys) -> None:
    rc = main(["run", TOY, "x", "--out", str(tmp_path / "x.json")])
    assert rc == EXIT_USAGE and f"invalid choice: '{TOY}'" in capsys.readouterr().err
