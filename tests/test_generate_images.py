"""Image generation: OpenAI protocol through the local stub, and a tiny local diffusers pipeline."""

from __future__ import annotations

import hashlib
import io
import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from biastest import remote
from biastest.errors import GenerationError, ModelKindError, ModelLoadError
from biastest.generate import base, make_image_generator
from biastest.generate.images import (
    REJECT_NOT_AN_IMAGE,
    LocalDiffusionGenerator,
    OpenAICompatibleImageGenerator,
    OpenAIImageGenerator,
    generate_images,
    plan_missing_images,
    to_png,
)
from biastest.models.diffusion import MSG_NOT_TEXT_TO_IMAGE, MSG_PIPELINE_HUB_UNAVAILABLE
from biastest.models.text_generation import MSG_PATH_NOT_FOUND
from biastest.remote import RetryPolicy, RunLimits
from tests.generate_helpers import build_tiny_diffusion, build_tiny_gpt2
from tests.openai_stub import Action, OpenAIStub, png_bytes

FAKE_KEY = "sk-img-DO-NOT-LEAK-77aa31c0"
FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05, max_retry_after=0.2, jitter=0.0)
IMAGES = "/v1/images/generations"


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


def bodies(stub: OpenAIStub) -> list[dict]:
    return [r["body"] for r in stub.requests if r["path"] == IMAGES]


def test_plan_missing_images() -> None:
    assert plan_missing_images(["nurse", "plumber", "nurse"], existing_counts={"Nurse": 2}) == {
        "nurse": 0, "plumber": 2}
    assert plan_missing_images(["nurse"], target_per_term=3, existing_counts={"nurse": 1}) == {"nurse": 2}
    with pytest.raises(GenerationError):
        plan_missing_images([" "])


def test_images_through_compatible_endpoint(stub: OpenAIStub) -> None:
    g = OpenAICompatibleImageGenerator(stub.base_url, "stub-image", size=(64, 64))
    progress: list[tuple[int, int, str]] = []
    run = generate_images(["nurse", "plumber"], g, seed=3, existing_counts={"nurse": 1}, target_per_term=2,
                          prompt="working", spec_name="jobs", retry=FAST_RETRY,
                          progress=lambda d, t, m: progress.append((d, t, m)))
    rep = run.report
    assert rep.requested == {"nurse": 1, "plumber": 2} and rep.accepted == 3 and rep.total_missing == 0
    assert rep.stopped_because == base.STOP_COMPLETED
    assert rep.message == base.MSG_RUN_COMPLETED.format(accepted=3, items="images", unit="term")
    assert [i.image_term for i in run.images] == ["nurse", "plumber", "plumber"]
    for img, body in zip(run.images, bodies(stub), strict=True):
        want = f"Generate a high definition portrait image of a {img.image_term} working"
        assert img.prompt == want == body["prompt"]
        assert body["response_format"] == "b64_json" and body["size"] == "64x64" and body["model"] == "stub-image"
        assert "seed" not in body and img.seed is None  # this server is not sent seeds
        assert hashlib.sha256(img.png).hexdigest() == img.sha256
        with Image.open(io.BytesIO(img.png)) as im:
            assert im.format == "PNG" and im.size == (img.width, img.height) == (8, 8)
        rec = img.to_test_image()
        assert rec.path == f"images/{img.sha256}.png" and rec.source == "generated" and rec.spec_name == "jobs"
        assert rec.generator == "openai-compatible-image" and rec.model == "stub-image"
        assert rec.provenance["run_seed"] == 3 and rec.provenance["prompt_name"] == "working"
    assert len({i.sha256 for i in run.images}) == 3
    assert progress[0][:2] == (0, 3) and progress[-1][:2] == (3, 3)
    json.dumps(run.to_dict())


def test_seed_is_sent_when_asked(stub: OpenAIStub) -> None:
    g = OpenAICompatibleImageGenerator(stub.base_url, "stub-image", size=(64, 64), send_seed=True)
    run = generate_images(["nurse"], g, seed=8, target_per_term=2)
    assert [b["seed"] for b in bodies(stub)] == [i.seed for i in run.images]
    assert all(isinstance(i.seed, int) for i in run.images)


def test_openai_models_request_base64_correctly(stub: OpenAIStub) -> None:
    for model, expect in (("gpt-image-1", None), ("dall-e-3", "b64_json")):
        g = OpenAIImageGenerator(model, api_key=FAKE_KEY, base_url=stub.base_url, quality="low")
        run = generate_images(["doctor"], g, seed=1, target_per_term=1)
        assert run.report.accepted == 1 and run.images[0].model == model
        body = bodies(stub)[-1]
        assert body.get("response_format") == expect and body["quality"] == "low" and body["size"] == "1024x1024"


def test_url_answers_are_downloaded(stub: OpenAIStub) -> None:
    stub.script("images", Action("url"))
    g = OpenAICompatibleImageGenerator(stub.base_url, "stub-image")
    run = generate_images(["nurse"], g, seed=1, target_per_term=1)
    assert run.report.accepted == 1 and stub.count("/files/img0.png") == 1


def test_image_faults_and_rejections(stub: OpenAIStub) -> None:
    stub.script("images", Action("status", 500), Action("text", text="not an image"), Action("empty"),
                Action("status", 429, headers={"Retry-After": "0.01"}))
    g = OpenAICompatibleImageGenerator(stub.base_url, "stub-image")
    run = generate_images(["nurse"], g, seed=1, target_per_term=1, retry=FAST_RETRY)
    rep = run.report
    assert rep.accepted == 1 and rep.rejected == {REJECT_NOT_AN_IMAGE: 1, base.REJECT_EMPTY: 1}
    assert rep.transient_failures == {"server_error": 1, "rate_limit": 1} and rep.requests_used == 5
    stub.always("images", Action("status", 429))
    run = generate_images(["nurse", "judge"], g, seed=1, target_per_term=1, retry=FAST_RETRY)
    assert run.report.stopped_because == remote.STOP_RATE_LIMITED
    assert run.report.message == base.MSG_RUN_RATE_LIMITED.format(tries=3, accepted=0, items="images", missing=2)


def test_image_budget_and_key_hygiene(stub: OpenAIStub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    g = make_image_generator("openai-image", {"model": "gpt-image-1", "api_key": FAKE_KEY, "base_url": stub.base_url})
    run = generate_images(["nurse", "judge"], g, seed=1, target_per_term=3, limits=RunLimits(max_requests=4))
    assert run.report.stopped_because == remote.STOP_BUDGET and run.report.accepted == 4
    assert {i.image_term for i in run.images} == {"nurse", "judge"}
    assert any(r["headers"].get("authorization") == f"Bearer {FAKE_KEY}" for r in stub.requests)
    for h in (caplog.text, repr(g), json.dumps(run.to_dict()),
              *[json.dumps(i.to_test_image().to_row()) for i in run.images]):
        assert FAKE_KEY not in h


def test_to_png_converts_and_rejects() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (5, 4), (1, 2, 3)).save(buf, format="JPEG")
    png, w, h = to_png(buf.getvalue())
    assert png.startswith(b"\x89PNG") and (w, h) == (5, 4)
    raw = png_bytes()
    assert to_png(raw)[0] == raw
    with pytest.raises(remote.MalformedAnswer) as e:
        to_png(b"GIF89a-not-really")
    assert e.value.reason == REJECT_NOT_AN_IMAGE


# ------------------------------------------------------------ local diffusers
@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_diffusion(tmp_path_factory.mktemp("tiny_sd"))


def test_local_diffusion_pipeline(tiny_pipeline: Path) -> None:
    g = LocalDiffusionGenerator(str(tiny_pipeline), size=(16, 16), num_inference_steps=2, guidance_scale=1.0)
    assert g.describe()["pipeline"] == "StableDiffusionPipeline"
    run = generate_images(["nurse"], g, seed=4, target_per_term=2, prompt="face")
    assert run.report.accepted == 2
    for img in run.images:
        assert img.seed is not None and img.generator == "local-diffusers" and (img.width, img.height) == (16, 16)
        assert img.prompt == "Generate a high definition image of the face of a nurse"
    again = generate_images(["nurse"], g, seed=4, target_per_term=2, prompt="face")
    assert [i.sha256 for i in again.images] == [i.sha256 for i in run.images]  # seeded
    assert [i.seed for i in again.images] == [i.seed for i in run.images]
    one = g._generate("Generate a high definition image of the face of a nurse", seed=run.images[0].seed,
                      timeout=1.0)
    assert hashlib.sha256(one).hexdigest() == run.images[0].sha256


def test_diffusion_load_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError) as e:
        LocalDiffusionGenerator(str(tmp_path / "missing"))
    assert e.value.message == MSG_PATH_NOT_FOUND.format(path=str(tmp_path / "missing"))
    lm = build_tiny_gpt2(tmp_path / "lm", n_positions=64)
    with pytest.raises(ModelKindError) as e:
        LocalDiffusionGenerator(str(lm))
    assert e.value.message == MSG_NOT_TEXT_TO_IMAGE.format(model=str(lm), problem="the folder has no model_index.json")
    with pytest.raises(ModelLoadError) as e:
        LocalDiffusionGenerator("biastest-tests/no-such-pipeline")
    assert e.value.message == MSG_PIPELINE_HUB_UNAVAILABLE.format(model="biastest-tests/no-such-pipeline")
