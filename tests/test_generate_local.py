"""Local transformers generation with a tiny random GPT-2 (gibberish; the code path is tested)."""

from __future__ import annotations

from pathlib import Path

import pytest

from biastest.errors import GenerationError, ModelKindError, ModelLoadError
from biastest.generate import SentenceSettings, base, generate_sentences, make_text_generator
from biastest.generate.local import MSG_PROMPT_TOO_LONG, LocalTextGenerator
from biastest.models.cache import MODEL_CACHE
from biastest.models.text_generation import (
    MSG_HUB_UNAVAILABLE,
    MSG_NOT_A_MODEL_FOLDER,
    MSG_NOT_TEXT_GENERATION,
    MSG_PATH_NOT_FOUND,
)
from biastest.remote import RunLimits
from tests.generate_helpers import build_tiny_bert_config, build_tiny_gpt2, small_spec, with_chat_template

CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
MESSAGES = [{"role": "user", "content": 'Write a sentence including target term "man" and attribute term "math".'}]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_lm")
    plain = build_tiny_gpt2(root / "plain", n_positions=256)
    return {"plain": plain, "chat": with_chat_template(plain, root / "chat", CHAT_TEMPLATE)}


def test_local_run_rejects_gibberish_and_says_so(tiny_models: dict[str, Path]) -> None:
    g = LocalTextGenerator(str(tiny_models["plain"]), max_new_tokens=8)
    run = generate_sentences(small_spec(), g, SentenceSettings(seed=0, target_per_attribute=1, prompt="plain",
                                                               limits=RunLimits(attempts_per_item=2)))
    rep = run.report
    assert rep.requests_used == 8 and rep.accepted + sum(rep.rejected.values()) == 8
    # a random model does not write valid sentences: the run says what is missing and why
    assert rep.accepted == 0 and rep.stopped_because == base.STOP_ATTEMPTS
    top = max(rep.rejected.items(), key=lambda kv: (kv[1], kv[0]))[0].replace("_", " ")
    assert rep.message == base.MSG_RUN_ATTEMPTS.format(
        rejected=8, top_reason=top, accepted=0, items="sentences", missing=4, missing_terms="math, algebra, poetry, art"
    )
    assert rep.provenance["generator"] == "local-transformers" and rep.provenance["model_type"] == "gpt2"


def test_local_generation_is_seeded(tiny_models: dict[str, Path]) -> None:
    import torch

    for name in ("plain", "chat"):
        g = LocalTextGenerator(str(tiny_models[name]), max_new_tokens=6, temperature=1.0)
        before = torch.random.get_rng_state()
        a = g._complete(MESSAGES, seed=1, timeout=1.0)
        b = g._complete(MESSAGES, seed=1, timeout=1.0)
        c = [g._complete(MESSAGES, seed=s, timeout=1.0) for s in range(2, 4)]
        assert a == b and any(x != a for x in c)
        assert torch.equal(before, torch.random.get_rng_state())  # global RNG untouched
    assert LocalTextGenerator(str(tiny_models["chat"]))._bundle.has_chat_template
    assert not LocalTextGenerator(str(tiny_models["plain"]))._bundle.has_chat_template


def test_model_is_loaded_once(tiny_models: dict[str, Path]) -> None:
    path = str(tiny_models["plain"])
    LocalTextGenerator(path)
    misses = MODEL_CACHE.misses
    g = make_text_generator("local-transformers", {"model": path, "max_new_tokens": 4})
    assert MODEL_CACHE.misses == misses and isinstance(g, LocalTextGenerator)


def test_prompt_longer_than_context_is_a_clear_error(tiny_models: dict[str, Path]) -> None:
    path = str(tiny_models["plain"])
    g = LocalTextGenerator(path, max_new_tokens=250)
    with pytest.raises(GenerationError) as e:
        g._complete(MESSAGES, seed=0, timeout=1.0)
    n_prompt = len(g._bundle.tokenizer(MESSAGES[0]["content"] + "\n")["input_ids"])
    assert n_prompt + 250 > 256
    assert e.value.message == MSG_PROMPT_TOO_LONG.format(n_prompt=n_prompt, n_new=250, model=path, limit=256)
    run = generate_sentences(small_spec(), g, SentenceSettings(seed=0, target_per_attribute=1))
    assert run.report.stopped_because == base.STOP_ERROR and run.report.requests_used == 1
    assert run.report.message.startswith("The prompt is ")
    assert run.report.message.endswith(" 0 new sentences were kept; still missing: 4.")


def test_load_errors_are_typed(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError) as e:
        LocalTextGenerator(str(tmp_path / "nowhere"))
    assert e.value.message == MSG_PATH_NOT_FOUND.format(path=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError) as e:
        LocalTextGenerator(str(tmp_path / "empty"))
    assert e.value.message == MSG_NOT_A_MODEL_FOLDER.format(path=str(tmp_path / "empty"))
    bert = build_tiny_bert_config(tmp_path / "bert")
    with pytest.raises(ModelKindError) as e:
        LocalTextGenerator(str(bert))
    assert e.value.message == MSG_NOT_TEXT_GENERATION.format(model=str(bert), model_type="bert")
    # a Hub id that is not cached, offline (HF_HUB_OFFLINE=1 in the test session)
    with pytest.raises(ModelLoadError) as e:
        LocalTextGenerator("biastest-tests/no-such-model")
    assert e.value.message == MSG_HUB_UNAVAILABLE.format(model="biastest-tests/no-such-model")
    with pytest.raises(GenerationError):
        LocalTextGenerator(str(tiny_models["plain"]), max_new_tokens=0)
    with pytest.raises(GenerationError) as e:
        make_text_generator("local_transformers", {"model": "x"})
    assert "Did you mean 'local-transformers'?" in e.value.message
