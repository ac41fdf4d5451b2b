"""Stimulus continua: the built-in name table and a user's CSV, refused with a message when hostile (issue 25)."""

from __future__ import annotations

import csv
from importlib import resources

import pytest

from biastest.continuum import (
    MAX_CONTINUUM_BYTES,
    MAX_STIMULI,
    MAX_STIMULUS_CHARS,
    MSG_CONTINUUM_BAD_ALPHA,
    MSG_CONTINUUM_BAD_CSV,
    MSG_CONTINUUM_BAD_GROUP,
    MSG_CONTINUUM_BAD_STIMULUS,
    MSG_CONTINUUM_COLUMNS,
    MSG_CONTINUUM_DUPLICATE,
    MSG_CONTINUUM_EMPTY,
    MSG_CONTINUUM_NOT_UTF8,
    MSG_CONTINUUM_TOO_FEW_LEVELS,
    MSG_CONTINUUM_TOO_LARGE,
    MSG_CONTINUUM_TOO_MANY,
    MSG_CONTINUUM_UNREADABLE,
    NAME_CONTINUUM_FILE,
    load_continuum_csv,
    name_continuum,
    parse_continuum_csv,
)
from biastest.errors import DataError

SRC = "the continuum file"
GOOD = "stimulus,alpha,group\nAnn,0.99,f\nSam,0.5,\nBob,0.01,m\n"


def _refused(data, source=SRC):
    with pytest.raises(DataError) as e:
        parse_continuum_csv(data, source=source)
    return e.value.message


def test_the_built_in_name_continuum_is_the_shipped_table_and_spans_the_range():
    c = name_continuum()
    with (resources.files("biastest") / "data" / NAME_CONTINUUM_FILE).open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(c) == len(rows) == 91
    for s, row in zip(c.stimuli, rows, strict=True):
        f, m = int(row["female"]), int(row["male"])
        assert s.text == row["stimulus"] and s.alpha == pytest.approx(f / (f + m), abs=5e-5)  # α = F/(F+M), 4 dp
        assert f + m >= 20_000
    alphas = sorted(c.alphas)
    assert alphas[0] < 0.01 and alphas[-1] > 0.99
    # spread: every fifth of [0, 1] holds at least 10 names
    for lo in (0.0, 0.2, 0.4, 0.6, 0.8):
        assert sum(lo <= a < lo + 0.2 + (lo == 0.8) for a in alphas) >= 10
    by_name = {s.text: s.alpha for s in c.stimuli}
    assert by_name["David"] < 0.01 and by_name["Mary"] > 0.99 and 0.3 < by_name["Casey"] < 0.5


def test_a_good_file_with_bom_blank_lines_extra_columns_and_crlf(tmp_path):
    c = parse_continuum_csv(GOOD)
    assert [(s.text, s.alpha, s.group) for s in c.stimuli] == [("Ann", 0.99, "f"), ("Sam", 0.5, None),
                                                               ("Bob", 0.01, "m")]
    p = tmp_path / "names.csv"
    p.write_bytes(b"\xef\xbb\xbf Alpha ,Stimulus,notes\r\n0,  Zo\xc3\xab  Lee ,x\r\n\r\n1,Max,y\r\n0.4,Kim,\r\n")
    c = load_continuum_csv(p)
    assert [(s.text, s.alpha, s.group) for s in c.stimuli] == [("Zoë Lee", 0.0, None), ("Max", 1.0, None),
                                                               ("Kim", 0.4, None)]
    assert c.source == "'names.csv'" and c.as_dict()["stimuli"][0]["stimulus"] == "Zoë Lee"


def test_hostile_files_are_refused_with_their_message(tmp_path):
    assert _refused("x" * (MAX_CONTINUUM_BYTES + 1)) == MSG_CONTINUUM_TOO_LARGE.format(
        source=SRC, limit_kb=MAX_CONTINUUM_BYTES // 1000)
    big = tmp_path / "big.csv"
    big.write_bytes(b"stimulus,alpha\n" + b"a,0.5\n" * (MAX_CONTINUUM_BYTES // 6 + 10))
    with pytest.raises(DataError) as e:
        load_continuum_csv(big)
    assert e.value.message == MSG_CONTINUUM_TOO_LARGE.format(source="'big.csv'", limit_kb=MAX_CONTINUUM_BYTES // 1000)
    with pytest.raises(DataError) as e:
        load_continuum_csv(tmp_path / "missing.csv")
    assert e.value.message.startswith(MSG_CONTINUUM_UNREADABLE.split("{problem}")[0].format(source="'missing.csv'"))
    assert _refused(b"stimulus,alpha\n\xff\xfe,0.5\n") == MSG_CONTINUUM_NOT_UTF8.format(source=SRC)
    assert _refused("stimulus,alpha\nA\x00,0.5\n").startswith(MSG_CONTINUUM_BAD_CSV.split("(")[0].format(source=SRC))
    assert _refused("") == MSG_CONTINUUM_COLUMNS.format(source=SRC, header="(none)")
    assert _refused("name,share\nAnn,1\n") == MSG_CONTINUUM_COLUMNS.format(source=SRC, header="'name', 'share'")
    assert _refused("stimulus,alpha\n\n \n") == MSG_CONTINUUM_EMPTY.format(source=SRC)
    too_many = "stimulus,alpha\n" + "".join(f"s{i},{i % 3 / 2}\n" for i in range(MAX_STIMULI + 1))
    assert _refused(too_many) == MSG_CONTINUUM_TOO_MANY.format(source=SRC, limit=MAX_STIMULI)
    bad_stimulus = MSG_CONTINUUM_BAD_STIMULUS.format(row=3, source=SRC, limit=MAX_STIMULUS_CHARS)
    assert _refused("stimulus,alpha\nAnn,0\n ,0.5\nBob,1\n") == bad_stimulus
    assert _refused("stimulus,alpha\nAnn,0\nA\x1bB,0.5\nBob,1\n") == bad_stimulus
    assert _refused(f"stimulus,alpha\nAnn,0\n{'x' * (MAX_STIMULUS_CHARS + 1)},0.5\n") == bad_stimulus
    assert _refused("stimulus,alpha,group\nAnn,0,a\u0085b\n") == MSG_CONTINUUM_BAD_GROUP.format(
        row=2, source=SRC, limit=100)
    for value in ("1.2", "-0.1", "nan", "inf", "half", "", "50%"):
        assert _refused(f"stimulus,alpha\nAnn,0\nSam,{value}\n") == MSG_CONTINUUM_BAD_ALPHA.format(
            row=3, source=SRC, value=repr(value))
    assert _refused("stimulus,alpha\nSam\n") == MSG_CONTINUUM_BAD_ALPHA.format(row=2, source=SRC, value="''")
    assert _refused("stimulus,alpha\nJordan,0.3\nBob,0\n jordan ,0.4\n") == MSG_CONTINUUM_DUPLICATE.format(
        stimulus="jordan", source=SRC, first=2, second=4)
    assert _refused("stimulus,alpha\nA,0\nB,1\nC,1\n") == MSG_CONTINUUM_TOO_FEW_LEVELS.format(
        source=SRC, count=2, need=3)
    huge_field = 'stimulus,alpha\n"' + "x" * 200_000 + '",0.5\n'
    assert _refused(huge_field).startswith(MSG_CONTINUUM_BAD_CSV.split("(")[0].format(source=SRC))
