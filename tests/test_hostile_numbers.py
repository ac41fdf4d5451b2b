"""Whole numbers on the command line are whole numbers (issue 27): ``--seed 2.5`` exits 2, never runs as seed 2.

Every case failed on the commit before the fix, by being run (``2.5`` read as 2 by an earlier form), or by a
message that echoed a 5,000-digit value in full. The model ids are folders that do not exist: a late check would
show a model-loading message instead of the flag's. The value is read before any other check (argparse's
``type``), in the measures' form (``run <measure> SPEC``), the earlier form (``run SPEC --kind …``) and the audit.
"""

from __future__ import annotations

import argparse

import pytest

from biastest import cli
from biastest.cli.common import EXIT_USAGE
from biastest.cli.flags import (
    MAX_NUMBER_CHARS,
    MSG_FLAG_NOT_NUMBER,
    MSG_FLAG_NOT_WHOLE,
    QUOTED_CHARS,
    number,
    whole_number,
)

SPEC = "Math_Arts_vs_Male_Female"
WEAT = "WEAT 7: Math vs arts, male vs female terms"
NO_MODEL = "/nonexistent/biastest-model"
HUGE = "9" * 5000

NOT_WHOLE = ["2.5", "1e400", "1e3", "2.0", "0x10", "nan", "inf", "", " ", "1_000", "٣", "²", "--5", "5-", HUGE,
             "-" + HUGE, "9" * (MAX_NUMBER_CHARS + 1)]
NOT_NUMBER = ["abc", "1,5", "0.95x", "", HUGE, "0." + "9" * MAX_NUMBER_CHARS, "x" * 5000]

#: (how the command line is written, the flag) — one measure of each kind, both forms, and the audit.
FORMS = {
    "stereotype": (["run", "stereotype", SPEC, "--model", NO_MODEL], ["--seed", "--bootstrap", "--batch-size"]),
    "legacy-lm": (["run", SPEC, "--kind", "lm", "--model", NO_MODEL], ["--seed", "--bootstrap"]),
    "legacy-vlm": (["run", SPEC, "--kind", "vlm", "--model", NO_MODEL], ["--seed", "--max-new-tokens"]),
    "legacy-weat": (["run", WEAT, "--kind", "embeddings", "--test", "weat", "--model", f"file:{NO_MODEL}.txt"],
                    ["--seed", "--permutations"]),
}
CLI_CASES = [(form, flag, value) for form, (_, flags) in FORMS.items() for flag in flags
             for value in ("2.5", "1e400", HUGE)]


def _expected(flag: str, value: str, message: str) -> str:
    quoted = value if len(value) <= QUOTED_CHARS else value[:QUOTED_CHARS] + "…"
    return f"argument {flag}: " + message.format(value=quoted)


@pytest.mark.parametrize("text", NOT_WHOLE, ids=[repr(t[:12]) for t in NOT_WHOLE])
def test_a_whole_number_flag_refuses_what_is_not_a_whole_number(text):
    with pytest.raises(argparse.ArgumentTypeError) as e:
        whole_number(text)
    assert str(e.value) == MSG_FLAG_NOT_WHOLE.format(value=text if len(text) <= QUOTED_CHARS
                                                     else text[:QUOTED_CHARS] + "…")
    assert len(str(e.value)) < 200


@pytest.mark.parametrize("text", NOT_NUMBER, ids=[repr(t[:12]) for t in NOT_NUMBER])
def test_a_number_flag_refuses_what_is_not_a_number(text):
    with pytest.raises(argparse.ArgumentTypeError) as e:
        number(text)
    assert len(str(e.value)) < 200 and str(e.value).startswith(MSG_FLAG_NOT_NUMBER.split("{")[0])


@pytest.mark.parametrize(("text", "value"), [("42", 42), ("-1", -1), ("+7", 7), (" 3 ", 3), ("0", 0),
                                             ("9" * MAX_NUMBER_CHARS, int("9" * MAX_NUMBER_CHARS))])
def test_whole_numbers_are_read_as_given(text, value):
    assert whole_number(text) == value  # the option's bounds are checked afterwards, by its measure


@pytest.mark.parametrize(("text", "value"), [("0.95", 0.95), ("1e-3", 1e-3), ("-2", -2.0), ("1e400", float("inf"))])
def test_numbers_are_read_and_left_to_the_bounds(text, value):
    assert number(text) == value


@pytest.mark.parametrize(("form", "flag", "value"), CLI_CASES,
                         ids=[f"{c[0]}{c[1]}={c[2][:8]}" for c in CLI_CASES])
def test_cli_refuses_a_number_that_is_not_whole_with_exit_2(form, flag, value, tmp_path, capsys):
    out = tmp_path / "r.json"
    code = cli.main([*FORMS[form][0], "--out", str(out), f"{flag}={value}"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert _expected(flag, value, MSG_FLAG_NOT_WHOLE) in err
    assert "Unexpected" not in err and len(err) < 3000 and not out.exists()


@pytest.mark.parametrize("value", ["0.5x", "1,5", HUGE + "x"])
def test_cli_refuses_a_number_flag_that_is_not_a_number(value, tmp_path, capsys):
    code = cli.main(["run", "stereotype", SPEC, "--model", NO_MODEL, "--out", str(tmp_path / "r.json"),
                     f"--confidence={value}"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and _expected("--confidence", value, MSG_FLAG_NOT_NUMBER) in err and len(err) < 3000


@pytest.mark.parametrize("value", ["2.5", "1e400", HUGE])
def test_audit_ray_cpus_is_a_whole_number(value, tmp_path, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("models: [{name: g, kind: embeddings, id: glove-6b-50d}]\nspecs: ['" + WEAT + "']\n")
    code = cli.main(["audit", str(grid), "--out", str(tmp_path / "a"), "--ray", "local", f"--ray-cpus={value}"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and _expected("--ray-cpus", value, MSG_FLAG_NOT_WHOLE) in err
    assert not (tmp_path / "a").exists()
