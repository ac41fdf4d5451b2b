"""``python -m biastest report DIR``: the HTML results report of an audit folder.

Two real audits are run here (tiny GPT-2s on two specifications and two methods; GloVe and a noisy copy of it on
WEAT 7 and the paper's 2AFC specification), with model names that hold HTML and a spreadsheet formula. The report
must parse, embed plotly.js once (no network, no CDN), hold one forest plot per specification and statistic and
one comparison per group of cells on the same items, show the comparisons that :mod:`biastest.stats.compare`
computes from the cells, escape every text from the data, and list failed cells with their messages.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest

from biastest.audit import read_table, run_audit
from biastest.audit.report import MSG_NO_AUDIT, build_report, write_report
from biastest.cli import MSG_REPORT_NOT_FOLDER, main
from biastest.measures.stereotype.compare import compare_stereotype
from biastest.measures.weat.compare import compare_weat
from biastest.stats import compare as C
from tests.audit_helpers import SPEC_A, SPEC_B, build_models, write_crows
from tests.embeddings_helpers import write_noisy_glove
from tests.lm_helpers import planted_pairs

HOSTILE_A = "tiny <script>alert('a')</script> & co"
HOSTILE_B = "=HYPERLINK(\"x\") <img src=x onerror=alert(1)>"
PAPER = "Occupations vs gender (Liang & Acuna 2020)"


class _Parsed(HTMLParser):
    """Tags, their attributes and the text of a document (the standard library's tolerant parser)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "br", "img", "link", "input"):
            self.stack.append(tag)
        self.in_script = tag in ("script", "style")

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()
        self.in_script = False

    def handle_data(self, data):
        if not self.in_script:
            self.text.append(data)


def _parse(text: str) -> _Parsed:
    p = _Parsed()
    p.feed(text)
    p.close()
    assert p.stack == []  # every element closed, in order
    return p


@pytest.fixture(scope="module")
def lm_audit(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-lm")
    models = build_models(root / "models")
    pairs = planted_pairs()
    write_crows(root / "a.csv", pairs[:24])
    write_crows(root / "b.csv", pairs[-24:])
    grid = {
        "name": "report <test>",
        "models": [{"name": HOSTILE_A, "kind": "lm", "id": str(models["a"])},
                   {"name": HOSTILE_B, "kind": "lm", "id": str(models["b"])},
                   {"name": "broken", "kind": "lm", "id": str(root / "models")}],  # a folder with no model in it
        "specs": [{"spec": SPEC_A, "data": {"lm": {"from": "files", "files": ["a.csv"]}}},
                  {"spec": SPEC_B, "data": {"lm": {"from": "files", "files": ["b.csv"]}}}],
        "methods": ["causal-sum", "causal-diff-span"],
        "seeds": [1],
        "options": {"n_resamples": 200, "batch_size": 16},
    }
    (root / "grid.yaml").write_text(json.dumps(grid), encoding="utf-8")
    run_audit(root / "grid.yaml", root / "out", progress=False)
    return root / "out"


def test_report_parses_embeds_plotly_once_and_escapes_every_text(lm_audit):
    text = build_report(lm_audit)
    doc = _parse(text)
    scripts = [a for t, a in doc.tags if t == "script"]
    assert not any("src" in a for a in scripts)  # nothing loaded from elsewhere: no CDN, no server
    assert text.count("plotly.js v") == 1  # the library once, inline
    divs = [a["id"] for t, a in doc.tags if t == "div" and a.get("id", "").startswith("figure-")]
    # per spec: one forest of every cell (4 finished cells) and one comparison of the 4 on the same pairs
    assert len(divs) == 4 and len(set(divs)) == 4
    for name in (HOSTILE_A, HOSTILE_B, "report <test>"):
        assert name not in text  # never raw, anywhere: not in the page, not in the figures' data
    page = "".join(doc.text)
    assert HOSTILE_A in page and HOSTILE_B in page  # shown as text
    assert "Audit report: report <test>" in page
    assert "<script>alert" not in re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)


def test_report_comparisons_are_those_of_the_cells(lm_audit):
    table = read_table(lm_audit)
    page = "".join(_parse(build_report(lm_audit)).text)
    for spec in (SPEC_A, SPEC_B):
        rows = table[(table.spec == spec) & (table.status == "done")]
        docs = [json.loads((lm_audit / "cells" / f"{k}.json").read_text()) for k in rows.key]
        labels = C.model_labels([f"{r.model} · {r.method}" for r in rows.itertuples()])
        cmp = compare_stereotype([d["result"] for d in docs], seed=1, labels=labels,
                                   clusters=docs[0]["result"].get("clusters"))
        assert len(cmp.pairs) == 6
        for p in cmp.pairs:
            shown = p if p.difference >= 0 else p.flipped()
            # each pair's difference and Holm p in the table
            line = f"{shown.a}{shown.b}"
            assert line in page.replace("\n", "")
            assert f"{shown.difference:+.1f}" in page
        assert "Holm-adjusted" in page and f"on the same {cmp.n_items} sentence pairs" in page


def test_failed_cells_are_listed_with_their_message(lm_audit):
    table = read_table(lm_audit)
    failed = table[table.status == "failed"]
    assert len(failed) == 4  # the broken model, on both specs and both methods
    page = "".join(_parse(build_report(lm_audit)).text)
    assert "Failed cells" in page
    for error in failed.error:
        assert error in page


def test_embeddings_audit_compares_weat_and_2afc(tmp_path):
    from biastest.specs import get_spec, get_twoafc_spec

    weat, afc = get_spec("WEAT 7: Math vs arts, male vs female terms"), get_twoafc_spec(PAPER)
    words = [*weat.group_terms, *weat.attribute_terms, *afc.targets, *(c for p in afc.cue_pairs for c in p)]
    noisy = write_noisy_glove(words, tmp_path / "noisy.txt", sigma=0.3, seed=3)
    grid = {"name": "emb", "models": [{"name": "GloVe", "kind": "embeddings", "id": "glove-6b-50d"},
                                      {"name": "noisy", "kind": "embeddings", "id": str(noisy)}],
            "specs": ["WEAT 7: Math vs arts, male vs female terms", PAPER], "methods": ["weat", "2afc"],
            "seeds": [0], "options": {"n_permutations": 500, "n_bootstrap": 0}}
    (tmp_path / "g.yaml").write_text(json.dumps(grid), encoding="utf-8")
    out = tmp_path / "out"
    run_audit(tmp_path / "g.yaml", out, progress=False)
    text = build_report(out)
    doc = _parse(text)
    divs = [a for t, a in doc.tags if t == "div" and a.get("id", "").startswith("figure-")]
    # WEAT: forest of cells + comparison; 2AFC: no single score per cell (said), its comparison only
    assert len(divs) == 3
    page = "".join(doc.text)
    assert "WEAT effect size" in page and "bootstrap p" in page
    assert "no single score per cell" in page
    assert "target words sit further from no preference" in page
    table = read_table(out).set_index(["spec", "model"])
    key_g = table.loc[("WEAT 7: Math vs arts, male vs female terms", "GloVe"), "key"]
    key_n = table.loc[("WEAT 7: Math vs arts, male vs female terms", "noisy"), "key"]
    docs = [json.loads((out / "cells" / f"{k}.json").read_text())["result"] for k in (key_g, key_n)]
    cmp = compare_weat(docs, seed=0, labels=["GloVe", "noisy"])
    shown = cmp.pairs[0] if cmp.pairs[0].difference >= 0 else cmp.pairs[0].flipped()
    assert f"{shown.difference:+.3f}" in page


def test_command_line_writes_the_report_and_refuses_other_folders(lm_audit, tmp_path, capsys):
    target = tmp_path / "r.html"
    assert main(["report", str(lm_audit), "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out.strip().endswith(str(target))
    assert main(["report", str(lm_audit)]) == 0 and (lm_audit / "report.html").is_file()
    assert write_report(lm_audit) == lm_audit / "report.html"
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == MSG_REPORT_NOT_FOLDER.format(path=tmp_path / "nowhere")
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == MSG_NO_AUDIT.format(path=tmp_path)
    assert html.escape("<") == "&lt;"  # the escaping the checks above rely on
