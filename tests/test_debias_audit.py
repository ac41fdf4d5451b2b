"""The audit grid's ``debias: hard``: an embedding model entry tested after hard debiasing."""

from __future__ import annotations

import pytest

from biastest.audit import parse_grid, read_table, run_audit
from biastest.audit.grid_common import GridError
from biastest.audit.grid_models import MSG_UNKNOWN_DEBIAS
from biastest.measures import weat as weat_measure
from biastest.specs import get_spec

WEAT8 = "WEAT 8: Science vs arts, male vs female terms"
DEBIASED = "glove-6b-50d + hard-debias(bolukbasi2016)"


def _grid(*models):
    return {"models": list(models), "specs": [WEAT8], "methods": ["weat"], "seeds": [0],
            "options": {"n_permutations": 200}}


def test_a_debiased_entry_runs_beside_the_original(tmp_path):
    grid = parse_grid(_grid({"name": "glove", "kind": "embeddings", "id": "glove-6b-50d"},
                            {"name": "glove debiased", "kind": "embeddings", "id": "glove-6b-50d", "debias": "hard"}),
                      base=tmp_path)
    assert [m.ref for m in grid.models] == ["glove-6b-50d", DEBIASED]
    run_audit(grid, tmp_path / "out", progress=False)
    table = read_table(tmp_path / "out")
    direct = weat_measure.run(weat_measure.WEATOptions.parse(source=DEBIASED, seed=0, n_permutations=200),
                              weat_measure.WEATItems(spec=get_spec(WEAT8)))
    rows = table[table["model"] == "glove debiased"]
    assert list(rows["status"]) == ["done"] and list(rows["model_ref"]) == [DEBIASED]
    assert rows.iloc[0]["score"] == pytest.approx(direct.effect_size, abs=1e-12)


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "g", "kind": "embeddings", "id": "glove-6b-50d", "debias": "soft"},
     MSG_UNKNOWN_DEBIAS.format(where="model 1 ('g')", value="soft", hint="", choices="hard")),
    ({"name": "g", "kind": "lm", "id": "gpt2", "debias": "hard"},
     "model 1 ('g'): 'debias' applies only to embeddings. Leave it out."),
])
def test_bad_debias_entries(tmp_path, entry, message):
    with pytest.raises(GridError) as err:
        parse_grid(_grid(entry), base=tmp_path)
    assert str(err.value) == message
