"""The command line's --debias: an embedding measure run on the hard-debiased embedding, recorded as such."""

from __future__ import annotations

import json

from biastest import cli
from biastest.cli.run import MSG_UNKNOWN_DEBIAS
from biastest.specs import get_spec
from tests.embedding_runs import run_weat

WEAT7 = "WEAT 7: Math vs arts, male vs female terms"
DEBIASED = "glove-6b-50d + hard-debias(bolukbasi2016)"


def _run(capsys, *argv: str):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def test_weat_on_the_debiased_embedding(tmp_path, capsys):
    out = tmp_path / "w.json"
    rc, stdout, _ = _run(capsys, "run", "weat", WEAT7, "--debias", "hard", "--permutations", "500", "--out", str(out))
    assert rc == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    direct = run_weat(spec=get_spec(WEAT7), source=DEBIASED, seed=0, n_permutations=500)
    assert doc["result"]["provenance"]["model_id"] == DEBIASED
    assert doc["result"]["effect_size"] == direct.effect_size
    assert f"d = {direct.effect_size:.3f}" in stdout
    # the form of earlier versions takes the flag too (its value is not read as the specification)
    out2 = tmp_path / "w2.json"
    rc, _, _ = _run(capsys, "run", "--kind", "embeddings", "--debias", "hard", WEAT7, "--permutations", "500",
                    "--out", str(out2))
    assert rc == 0 and json.loads(out2.read_text(encoding="utf-8"))["result"]["effect_size"] == direct.effect_size


def test_unknown_or_repeated_debiasing(tmp_path, capsys):
    rc, _, err = _run(capsys, "run", "weat", WEAT7, "--debias", "soft", "--out", str(tmp_path / "x.json"))
    assert rc == 2 and MSG_UNKNOWN_DEBIAS.format(value="soft", hint="", choices="hard") in err
    rc, _, err = _run(capsys, "run", "weat", WEAT7, "--model", "glove-6b-50d+hard-debias", "--debias", "hard",
                      "--out", str(tmp_path / "y.json"))
    assert rc == 2 and "already hard-debiased" in err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()
