"""The shared dataset as users meet it: two real servers, a Hub outage in the middle, secrets kept out of everything.

The browser test runs the suite's server (``python -m biastest.ui.serve``, what ``make run`` starts) twice, each its
own process with its own empty store, both pointed at the Hub stand-in (tests/hub_stub.py, a real HTTP server in
this process) through ``HF_ENDPOINT`` with the same ``BIASTEST_HF_DATASET`` and ``HF_TOKEN``. Sentences come from the
OpenAI stand-in (tests/openai_stub.py). Server A's user generates while the hub is down (the panel says the files
are queued, the user keeps working), then after it is back (the queue drains, each row once); server B, started
afterwards, finds exactly those sentences in step 2, says they come from the shared dataset, and tests them. No file
either server wrote, no log line, no dataset row and no download holds the Hub token or the typed API key.

The other test is the fresh deployment of the issue: no dataset configured, the public BiasTestGPT dataset reachable
(the stand-in serving a sample of the real file from ``../shared/data/biastestgpt/``): step 2 finds the BiasTestGPT
sentences of a predefined specification without generating anything.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.browser_helpers import SCREENSHOTS, chromium_browser, free_port, open_details

REPO = "stub-user/shared-sentences"
HUB_TOKEN = "hf_stub_browser_sentences_token_0123456789"
API_KEY = "sk-stub-typed-generation-key-9876543210"
TERMS = (("spec-group1", "he, man"), ("spec-group2", "she, woman"), ("spec-stereotype1", "math, science"),
         ("spec-antistereotype1", "poetry, dance"))
SEED = 11

PANEL_HAS = "(text) => (document.querySelector('#dataset-panel')?.innerText || '').includes(text)"
PANEL_HAS_NOT = "(text) => !(document.querySelector('#dataset-panel')?.innerText || '').includes(text)"


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from tests.lm_helpers import build_tiny_gpt2

    return str(build_tiny_gpt2(tmp_path_factory.mktemp("shared-browser") / "tiny-gpt2", seed=SEED))


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(value)
    box.blur()


def _panel_says(page, text: str, timeout_s: float = 60) -> None:
    """Wait (bounded) until the "Shared dataset" panel (redrawn every few seconds) says ``text``."""
    page.wait_for_function(PANEL_HAS, arg=text, timeout=timeout_s * 1000)


def _step_2(page, url: str) -> None:
    page.set_default_timeout(30_000)
    page.goto(url, wait_until="domcontentloaded")
    page.locator("#spec-group1").wait_for(timeout=60_000)
    for elem_id, value in TERMS:
        _fill(page, elem_id, value)
    page.locator("#spec-message").get_by_text("Specification is valid").wait_for()
    page.click("#spec-next")
    page.locator("#data-testing").get_by_text("he, man vs she, woman").wait_for()
    _panel_says(page, f"Shared dataset {REPO}: pulled")  # the first pull has answered


def _generate(page, model: str, per_attribute: int) -> None:
    """Start a generation run (the caller waits for what it needs: the panel lists the run once it is stored)."""
    _fill(page, "gen-model", model)
    _fill(page, "gen-per-attribute", str(per_attribute))
    page.click("#gen-run")


def _secrets_in(folder: Path) -> list[str]:
    """Files under ``folder`` holding the Hub token or the typed API key."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
            and (HUB_TOKEN.encode() in p.read_bytes() or API_KEY.encode() in p.read_bytes())]


@pytest.mark.browser
def test_two_servers_share_generated_sentences_through_a_hub_outage(tiny_gpt2, tmp_path):
    from biastest.store import DatasetStore
    from biastest.store import shared as S
    from biastest.store.retrieval import retrieve_pairs, retrieve_sentences
    from biastest.ui import gpt as app
    from tests.hub_stub import StubHub
    from tests.openai_stub import OpenAIStub
    from tests.test_serve import running

    def env(name: str, port: int) -> dict[str, str]:
        out = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "OPENAI_API_KEY")}
        (tmp_path / f"tmp_{name}").mkdir()
        out.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
                   HF_HOME=str(tmp_path / f"hf_home_{name}"), HF_ENDPOINT=hub.url, BIASTEST_HF_DATASET=REPO,
                   HF_TOKEN=HUB_TOKEN, BIASTEST_DATA_DIR=str(tmp_path / f"store_{name}"),
                   TMPDIR=str(tmp_path / f"tmp_{name}"), GRADIO_TEMP_DIR=str(tmp_path / f"tmp_{name}" / "gradio"))
        return out

    def serve(name: str):
        port = free_port()
        cmd = [sys.executable, "-m", "biastest.ui.serve", "--host", "127.0.0.1", "--port", str(port)]
        url = f"http://127.0.0.1:{port}/gpt/"
        return url, running(cmd, env(name, port), url, tmp_path / f"{name}.log")

    with StubHub() as hub, OpenAIStub() as stub, chromium_browser() as browser:
        # ---- server A: an empty store; its user generates while the hub is down, then after it is back
        url_a, server_a = serve("a")
        with server_a:
            page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
            _step_2(page, url_a)
            _panel_says(page, "What users generate here is saved locally first and then shared", 10)
            assert "cannot be reached" not in page.locator("#dataset-panel").inner_text()  # only not created yet
            page.get_by_text("Generate new sentences with a language model").click()
            page.get_by_label("Any OpenAI-compatible server (vLLM, Ollama, LM Studio) by address").check()
            _fill(page, "gen-base-url", stub.base_url)
            _fill(page, "gen-api-key", API_KEY)

            hub.down = 503  # the hub goes down mid-session
            _generate(page, "stub-model-a", 1)
            page.locator("#gen-message").get_by_text("new sentences").first.wait_for(timeout=90_000)
            down_item = app.MSG_PANEL_ITEM.format(sentences=4, pairs=4, model="stub-model-a", state=S.ITEM_FAILED)
            _panel_says(page, down_item, 90)  # every try failed: kept, and said so
            panel = page.locator("#dataset-panel").inner_text()
            assert "file(s) are queued here" in panel and "nothing is lost" in panel, panel
            page.click("#dataset-refresh")  # a pull now: it cannot reach the dataset, and says so
            _panel_says(page, "The dataset cannot be reached right now", 60)
            page.screenshot(path=str(SCREENSHOTS / "gpt_shared_dataset_outage.png"), full_page=True)
            page.click("#data-find")  # the user keeps working with what this server has
            page.locator("#data-find-message").get_by_text("Found 4 sentence pairs").wait_for()
            assert S.MSG_FOUND_LINE.format(n=4, what="sentences", parts=S.MSG_FROM_HERE.format(n=4)) in \
                page.locator("#data-find-message").inner_text()
            assert ("dataset", REPO) not in hub.repos  # nothing reached the hub (not even the dataset's creation)

            hub.down = None  # back: "Refresh from the dataset" pulls and sends the queue now
            page.click("#dataset-refresh")
            _panel_says(page, app.MSG_PANEL_ITEM.format(sentences=4, pairs=4, model="stub-model-a",
                                                        state=S.ITEM_PUSHED) + " in commit ", 60)
            page.wait_for_function(PANEL_HAS_NOT, arg="cannot be reached", timeout=30_000)
            _generate(page, "stub-model-b", 2)  # and the next run is shared as usual
            _panel_says(page, app.MSG_PANEL_SAVED_HEAD.format(n=2, counts=f"2 {S.ITEM_PUSHED}"), 60)
            assert page.locator("#dataset-panel").inner_text().count(f": {S.ITEM_PUSHED} in commit ") == 2
            page.screenshot(path=str(SCREENSHOTS / "gpt_shared_dataset_a.png"), full_page=True)
            page.context.close()
            chats = [r for r in stub.requests if r["path"].endswith("/chat/completions")]
            assert chats and {r["headers"].get("authorization") for r in chats} == {f"Bearer {API_KEY}"}  # used …
            assert list((tmp_path / "store_a").rglob("*.parquet")) and list((tmp_path / "store_a").rglob("*.txt"))
            assert _secrets_in(tmp_path) == []  # … and, like the token, is in no file while the server runs

        made = DatasetStore(tmp_path / "store_a")
        sentences_a = {s.id: s for s in made.sentences()}
        pairs_a = {p.id: p for p in made.pairs()}
        assert len(sentences_a) == 8 and len(pairs_a) == 8
        assert {s.model for s in sentences_a.values()} == {"stub-model-a", "stub-model-b"}
        # on the hub: every row exactly once, the card beside them; no secret in any file there
        assert Counter(r["id"] for r in hub.parquet_rows(REPO, "sentences")) == Counter(list(sentences_a))
        assert Counter(r["id"] for r in hub.parquet_rows(REPO, "pairs")) == Counter(list(pairs_a))
        files = hub.repo(REPO).files
        assert "README.md" in files
        assert [p for p, data in files.items() if HUB_TOKEN.encode() in data or API_KEY.encode() in data] == []
        commits = len(hub.repo(REPO).commits)
        spec = app.spec_from_inputs(app.CUSTOM, *(v for _, v in TERMS))
        n_pairs = len(retrieve_pairs(made, spec, sentences=retrieve_sentences(made, spec)).pairs)

        # ---- server B: started afterwards, empty; it finds exactly those sentences, from the shared dataset
        url_b, server_b = serve("b")
        with server_b:
            ctx = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 1400})
            page = ctx.new_page()
            _step_2(page, url_b)
            page.click("#data-find")
            message = page.locator("#data-find-message")
            message.get_by_text(f"Found {n_pairs} sentence pairs").wait_for()
            where = S.MSG_FOUND_LINE.format(n=8, what="sentences", parts=S.MSG_FROM_DATASET.format(
                n=8, repo=REPO, pulled="pulled "))
            assert message.inner_text().startswith(where.split("pulled ")[0] + "pulled "), message.inner_text()
            page.locator("#model-id input").first.fill(tiny_gpt2)
            page.locator("#model-id input").first.press("Enter")
            page.click("#data-run")
            page.locator("#results-reading").get_by_text("Verdict:").first.wait_for(timeout=180_000)
            open_details(page, "results-details")  # issue 28: the score's summary is in the closed Details
            page.locator("#results-summary").get_by_text("Stereotype score").wait_for(timeout=60_000)
            page.screenshot(path=str(SCREENSHOTS / "gpt_shared_dataset_b.png"), full_page=True)
            downloads = []
            for button in ("#download-csv", "#download-json"):
                with page.expect_download() as dl:
                    page.click(button)
                downloads.append(tmp_path / "downloads" / dl.value.suggested_filename)
                dl.value.save_as(downloads[-1])  # kept under tmp_path: the secrets check reads them too
            assert list((tmp_path / "tmp_b").rglob("biastest-gpt-*.csv")), "B's exports are not where it is searched"
            assert _secrets_in(tmp_path) == []  # B's files, its working folder and exports, while it runs
            ctx.close()
        with open(downloads[0], newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("row_type", "pair") == "pair"]  # not the summary rows
        fields = ("stereotyped", "anti_stereotyped", "attribute_term", "group_term_stereotyped", "group_term_anti",
                  "source")
        tested = Counter(tuple(r[f] for f in fields) for r in rows)
        assert tested == Counter(tuple(getattr(p, f) for f in fields) for p in pairs_a.values())  # those, once
        assert {r["source"] for r in rows} == {"generated"}
        result = json.loads(downloads[1].read_text(encoding="utf-8"))
        assert len(result["pairs"]) == 8
        assert [p.suffix for p in downloads] == [".csv", ".json"]
        for path in downloads:
            assert HUB_TOKEN.encode() not in path.read_bytes() and API_KEY.encode() not in path.read_bytes()

        got = DatasetStore(tmp_path / "store_b")
        assert Counter(s.id for s in got.sentences()) == Counter(list(sentences_a))  # exactly those, no duplicates
        for s in got.sentences():  # provenance intact: every field, the provenance mapping and the time included
            assert s.to_row() == sentences_a[s.id].to_row()
            assert s.source == "generated" and s.prompt and s.generator
        assert {p.id: p.to_row() for p in got.pairs()} == {i: p.to_row() for i, p in pairs_a.items()}
        assert len(hub.repo(REPO).commits) == commits  # B wrote nothing back: still each row once
        assert Counter(r["id"] for r in hub.parquet_rows(REPO, "sentences")) == Counter(list(sentences_a))
        logs = (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()
        assert "biastest.store" in logs or "Shared dataset" in logs  # the logs were captured …
        assert HUB_TOKEN not in logs and API_KEY not in logs  # … and hold no secret
        assert _secrets_in(tmp_path) == []  # nor anything left after both servers ended
        assert not any(HUB_TOKEN in path or API_KEY in path for _, path in hub.requests)


def test_a_fresh_deployment_finds_the_biastestgpt_sentences_of_a_predefined_spec(tmp_path, hub, shared_data,
                                                                                  monkeypatch):
    """No dataset of its own, the public BiasTestGPT dataset reachable (a sample of the real file on the stand-in):
    step 2 of the app finds the spec's BiasTestGPT sentences with nothing generated, and says where they are from."""
    import pandas as pd

    from biastest.runner import services
    from biastest.specs import get_spec
    from biastest.store import shared as S
    from biastest.store.importers import PUBLIC_BIASTESTGPT_REPO
    from biastest.ui import gpt as app
    from biastest.ui.common import escape
    from tests.store_helpers import wait_until

    real = shared_data / "biastestgpt" / "gpt-3.5-shots-5-1_sentences.csv"
    sample = b"\n".join(real.read_bytes().splitlines()[:201]) + b"\n"  # the header and 200 real rows
    hub.add_file(PUBLIC_BIASTESTGPT_REPO, real.name, sample)
    monkeypatch.setenv("BIASTEST_DATA_DIR", str(tmp_path / "fresh"))  # a fresh deployment: an empty store
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setattr(services, "_stores", {})
    monkeypatch.setattr(services, "_datasets", {})
    name = get_spec("Math_Arts_vs_Male_Female").name  # the readable name the library dropdown offers
    state, msg, *_ = app.confirm_spec(name, *app.fill_from_library(name)[:4], app._fresh_state())
    assert msg.startswith("✅")
    service = services.shared_dataset()  # what the server starts with
    try:
        assert service.mode == S.MODE_PUBLIC
        wait_until(lambda: service.pulls.at is not None and service.wait_pulled(0), 60, "the first pull")
        assert service.pulls.ok, service.pulls.to_dict()
        table, found, *_ = app.find_sentences(state, None)  # the process's service, as the app calls it
        spec = app._spec(state)
        rows = pd.read_csv(real, nrows=200)
        own = rows[(rows["Bias Name"] == "Math_Arts_vs_Male_Female") & rows["Group Term"].isin(spec.group_terms)
                   & rows["Attribute word"].isin(spec.attribute_terms)]

        def has(text: str, terms) -> bool:
            return any(re.search(rf"\b{re.escape(t)}\b", text, re.IGNORECASE) for t in terms)

        # retrieval leaves out a sentence that names both groups, or attributes of both lists (it cannot say which
        # side it tests): the rest of the spec's own rows must all be found
        mine = {t for t in own["Generated sentence"]
                if not (has(t, spec.group1) and has(t, spec.group2))
                and not (has(t, spec.attributes1) and has(t, spec.attributes2))}
        assert len(mine) >= 10, "the sample should hold sentences of this spec"
        ids = services.retrieve_pairs(spec).sentence_ids
        texts = {s.text for s in service.store.sentences() if s.id in set(ids)}
        assert mine <= texts, sorted(mine - texts)  # the spec's own BiasTestGPT sentences are found
        assert texts <= set(rows["Generated sentence"])  # and nothing that is not in the dataset
        assert len(table) > 0
        where = S.MSG_FOUND_LINE.format(n=len(ids), what="sentences", parts=S.MSG_FROM_PUBLIC.format(
            n=len(ids), repo=PUBLIC_BIASTESTGPT_REPO, pulled="pulled just now"))
        assert found.startswith(app.md_escape(where)), found
        panel = app.panel_handler(state)
        assert panel.startswith(escape(S.MSG_SUMMARY_PUBLIC.format(repo=PUBLIC_BIASTESTGPT_REPO,
                                                                    pulled="pulled just now")))
        assert "cannot be reached" not in panel
        assert service.sync.pending() == [] and not service.sync.enabled  # nothing generated, nothing to push
    finally:
        service.stop()
