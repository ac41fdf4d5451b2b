"""Vision-language adapters and the runner on tiny models built from configs.

Each scoring path is checked against a deliberately naive re-implementation:
one image and one prompt (or one answer token) at a time, through the
processor's own __call__ and the model's own forward/generate.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from biastest.errors import DataError, MethodError, ModelKindError, ModelLoadError, OptionError, SpecError
from biastest.measures import vlm as V
from biastest.measures.vlm.run import (
    MSG_IMAGE_OUTSIDE_ROOT,
    MSG_IMAGE_UNREADABLE,
    MSG_NO_IMAGES_FOR_TERM,
    MSG_NOT_AN_IMAGE_RECORD,
)
from biastest.models import images as IM
from biastest.models import kinds as K
from biastest.models import vlm as M
from biastest.models.cache import ModelCache
from biastest.options import MSG_BAD_WHOLE
from biastest.spec import BiasSpec
from tests import vlm_helpers as H

SEED = 4321
#: float32 results summed in another order (another CPU, another batch): eps 1.2e-7 times the ~10 terms summed,
#: relative (issue 23: a percent score differed by 1.6e-6 between two CPUs).
F32_RTOL = 1e-5
#: ... and absolute, for probabilities near 0.
F32_ATOL = 1e-6
print(f"test seed: {SEED}")

SPEC = BiasSpec.from_terms(
    group1="red", group2="blue", stereotype1="doctor", antistereotype1="nurse, teacher", name="colours"
)
VILT_LABELS = ["doctor", "nurse", "teacher", "yes", "no"]
QUESTION = "Is this person a {T1} or a {T2}?"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("store")
    return root, H.colour_images(root, per_term=5, seed=SEED)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("models")
    out = {
        "clip": H.save_tiny_clip(base / "clip"),
        "vilt": H.save_tiny_vilt(base / "vilt", VILT_LABELS),
        "blip": H.save_tiny_blip_vqa(base / "blip"),
        "git": H.save_tiny_git(base / "git"),
        "blipcap": H.save_tiny_blip_caption(base / "blipcap"),
        "bert": H.save_tiny_bert(base / "bert"),
    }
    # a ViLT whose top answer is always "yes" (neither target group), and a GIT that always says "doctor"
    vilt_yes = H.save_tiny_vilt(base / "vilt_yes", VILT_LABELS)
    from transformers import GitForCausalLM, ViltForQuestionAnswering

    m = ViltForQuestionAnswering.from_pretrained(vilt_yes)
    with torch.no_grad():
        m.classifier[-1].bias[VILT_LABELS.index("yes")] += 100.0
    m.save_pretrained(vilt_yes)
    out["vilt_yes"] = vilt_yes
    git_doc = H.copy_model(out["git"], base / "git_doctor")
    g = GitForCausalLM.from_pretrained(git_doc)
    doctor_id = H.bert_tokenizer().convert_tokens_to_ids("doctor")
    with torch.no_grad():
        g.output.bias[doctor_id] += 100.0
    g.save_pretrained(git_doc)
    out["git_doctor"] = git_doc
    return out


def _pil(store):
    root, imgs = store
    return [IM.load_image(root / i.path) for i in imgs]


def _run(models, store, name, **kw):
    root, imgs = store
    args = dict(images=imgs, image_root=root, spec=SPEC, model_id=str(models[name]), seed=SEED, batch_size=3)
    args.update(n_resamples=300, cache=ModelCache(2), device="cpu")
    args.update(kw)
    return H.run_vlm(**args)


def _naive_formula(result, store, p_t1):
    _, imgs = store
    total = 0.0
    for img, p in zip(imgs, p_t1, strict=True):
        total += p if img.image_term == "red" else 1 - p
    return 100 * total / len(imgs)


# ----------------------------------------------------------------------------- kinds and loading
@pytest.mark.parametrize(
    ("name", "kind", "cls"),
    [
        ("clip", "clip", M.ClipLikeModel),
        ("vilt", "vqa-classifier", M.VQAClassifierModel),
        ("blip", "generative", M.GenerativeVLM),
        ("git", "generative", M.GenerativeVLM),
        ("blipcap", "generative", M.GenerativeVLM),
    ],
)
def test_kind_from_config(models, name, kind, cls):
    model = M.load_vlm(str(models[name]), device="cpu", cache=ModelCache(1))
    assert model.kind == kind and isinstance(model, cls)
    assert model.info.kind == kind and model.info.dtype == "float32" and model.info.device == "cpu"
    assert model.info.to_dict()["model_id"] == str(models[name])
    if name == "blip":
        assert model.family == "blip-vqa"
    if name in ("git", "blipcap"):
        assert model.family == "causal"


def test_detect_kind_without_architectures():
    from transformers import CLIPConfig, ViltConfig

    kind, cls = K.detect_vlm_kind(CLIPConfig())
    assert kind == "clip" and cls.__name__ == "CLIPModel"
    kind, cls = K.detect_vlm_kind(ViltConfig())
    assert kind == "vqa-classifier" and cls.__name__ == "ViltForQuestionAnswering"
    from transformers import BertConfig, CLIPVisionConfig

    assert K.detect_vlm_kind(BertConfig()) is None
    cfg = CLIPVisionConfig()
    cfg.architectures = ["CLIPVisionModel"]
    assert K.detect_vlm_kind(cfg) is None


def test_text_model_is_refused(models):
    with pytest.raises(ModelKindError) as e:
        M.load_vlm(str(models["bert"]), device="cpu", cache=ModelCache(1))
    assert e.value.message == M.MSG_NOT_A_VLM.format(model_id=str(models["bert"]), architecture="BertForMaskedLM")


def test_missing_processor_and_missing_folder(models, tmp_path):
    bare = tmp_path / "bare_clip"
    from transformers import CLIPModel

    CLIPModel.from_pretrained(models["clip"]).save_pretrained(bare)  # weights and config, no processor
    with pytest.raises(ModelLoadError) as e:
        M.load_vlm(str(bare), device="cpu", cache=ModelCache(1))
    assert e.value.message == M.MSG_NO_PROCESSOR.format(model_id=str(bare))
    with pytest.raises(ModelLoadError):
        M.load_vlm(str(tmp_path / "does" / "not" / "exist"), device="cpu", cache=ModelCache(1))


def test_model_loads_once_through_the_cache(models):
    cache = ModelCache(2)
    a = M.load_vlm(str(models["clip"]), device="cpu", cache=cache)
    b = M.load_vlm(str(models["clip"]), device="cpu", cache=cache)
    assert a is b and cache.hits == 1 and cache.misses == 1


def test_cache_hit_reads_no_configuration(models, monkeypatch):
    """A second user asking for a loaded model waits for a lookup, not for config.json to be parsed."""
    cache = ModelCache(2)
    a = M.load_vlm(str(models["clip"]), device="cpu", cache=cache)

    def refuse(*args, **kwargs):
        raise AssertionError("the configuration was read on a cache hit")

    monkeypatch.setattr(M, "load_config", refuse)
    assert M.load_vlm(str(models["clip"]), device="cpu", cache=cache) is a
    with pytest.raises(AssertionError, match="read on a cache hit"):
        M.load_vlm(str(models["clip"]), device="cpu", cache=ModelCache(1))  # a miss does read it


# ----------------------------------------------------------------------------- CLIP
def _naive_clip_p1(model_dir, pil, prompts_by_side):
    """One image and one prompt at a time, cosine and softmax by hand."""
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(model_dir).eval()
    proc = CLIPProcessor.from_pretrained(model_dir)
    scale = math.exp(float(model.logit_scale.detach()))
    out = []
    with torch.no_grad():
        text = []
        for prompt, side in prompts_by_side:
            t = model.get_text_features(**proc.tokenizer([prompt], return_tensors="pt")).pooler_output[0]
            text.append((t.double().tolist(), side))
        for img in pil:
            f = model.get_image_features(**proc.image_processor(images=[img], return_tensors="pt")).pooler_output[0]
            f = f.double().tolist()
            logits = []
            for t, _ in text:
                dot = sum(a * b for a, b in zip(f, t, strict=True))
                cos = dot / math.sqrt(sum(a * a for a in f)) / math.sqrt(sum(b * b for b in t))
                logits.append(scale * cos)
            m = max(logits)
            e = [math.exp(x - m) for x in logits]
            p1 = sum(x for x, (_, side) in zip(e, text, strict=True) if side == 1) / sum(e)
            out.append(p1)
    return np.array(out)


def test_clip_sum_prob_equals_naive(models, store):
    templates = ["a photo of a {term}", "a {}"]
    r = _run(models, store, "clip", prompt_template=templates)
    prompts = [
        (t.replace("{}", "{term}").format(term=term), SPEC.attribute_side(term))
        for term in SPEC.attribute_terms
        for t in templates
    ]
    naive = _naive_clip_p1(models["clip"], _pil(store), prompts)
    ours = np.array([x.p_t1 for x in r.images])
    np.testing.assert_allclose(ours, naive, rtol=F32_RTOL, atol=F32_ATOL)
    assert r.soft.score == pytest.approx(_naive_formula(r, store, naive), rel=F32_RTOL)
    assert r.method == "clip-zero-shot" and r.combine == "sum-prob"
    assert r.prompt_templates == ("a photo of a {term}", "a {term}") and r.question is None
    assert r.prompts[:2] == ("a photo of a doctor", "a doctor") and len(r.prompts) == 6
    for x in r.images:
        assert sum(x.term_probabilities.values()) == pytest.approx(1.0, rel=F32_RTOL)
        assert x.verdict == ("T1" if x.p_t1 > 0.5 else "T2")
        assert x.answer == max(x.term_probabilities, key=x.term_probabilities.get)
    assert r.n_neither == 0


def test_clip_logits_match_model_forward(models, store):
    model = M.load_vlm(str(models["clip"]), device="cpu", cache=ModelCache(1))
    pil = _pil(store)[:4]
    prompts = ["a photo of a doctor", "a photo of a nurse"]
    ours = model.logit_scale() * (model.encode_images(pil) @ model.encode_text(prompts).T)
    with torch.no_grad():
        enc = model.processor(images=pil, text=prompts, return_tensors="pt", padding=True)
        ref = model.model(**enc).logits_per_image
    torch.testing.assert_close(torch.from_numpy(ours), ref, rtol=1e-5, atol=1e-5)


def test_clip_mean_embedding_equals_naive(models, store):
    r = _run(models, store, "clip", combine="mean-embedding")
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(models["clip"]).eval()
    proc = CLIPProcessor.from_pretrained(models["clip"])
    with torch.no_grad():

        def unit(v):
            return v / v.norm()

        emb = {
            t: unit(
                model.get_text_features(**proc.tokenizer([f"a photo of a {t}"], return_tensors="pt"))
                .pooler_output[0]
                .double()
            )
            for t in SPEC.attribute_terms
        }
        c1 = unit(sum(emb[t] for t in SPEC.attributes1) / len(SPEC.attributes1))
        c2 = unit(sum(emb[t] for t in SPEC.attributes2) / len(SPEC.attributes2))
        scale = model.logit_scale.exp().double()
        nurse_total = 0.0
        for x, img in zip(r.images, _pil(store), strict=True):
            f = unit(
                model.get_image_features(**proc.image_processor(images=[img], return_tensors="pt"))
                .pooler_output[0]
                .double()
            )
            l1, l2 = float(scale * f @ c1), float(scale * f @ c2)
            assert x.p_t1 == pytest.approx(1 / (1 + math.exp(l2 - l1)), rel=F32_RTOL, abs=F32_ATOL)
            # target term "nurse" alone against group 1's class embedding
            ln = float(scale * f @ emb["nurse"])
            q = 1 / (1 + math.exp(l1 - ln))
            nurse_total += q if x.image_term == "blue" else 1 - q
    assert r.combine == "mean-embedding"
    per = {t.term: t for t in r.per_target_term}
    assert set(per) == {"doctor", "nurse", "teacher"}
    # float32 text embeddings in the adapter, float64 here
    assert per["nurse"].soft.score == pytest.approx(100 * nurse_total / r.n_images, rel=F32_RTOL)


def test_clip_bad_combine(models, store):
    with pytest.raises(MethodError) as e:
        _run(models, store, "clip", combine="max")
    assert e.value.message == V.MSG_BAD_COMBINE.format(value="max", choices="sum-prob, mean-embedding")


# ----------------------------------------------------------------------------- ViLT
def test_vilt_equals_naive(models, store):
    r = _run(models, store, "vilt", question=QUESTION)
    from transformers import ViltForQuestionAnswering, ViltProcessor

    model = ViltForQuestionAnswering.from_pretrained(models["vilt"]).eval()
    proc = ViltProcessor.from_pretrained(models["vilt"])
    asked = "Is this person a doctor or a nurse or teacher?"
    assert r.prompts == (asked,) and r.question == QUESTION and r.method == "vqa-answer-softmax"
    naive_p1 = []
    with torch.no_grad():
        for x, img in zip(r.images, _pil(store), strict=True):
            logits = model(**proc(images=img, text=asked, return_tensors="pt")).logits[0].double()
            z = [float(logits[VILT_LABELS.index(t)]) for t in ("doctor", "nurse", "teacher")]
            e = [math.exp(v - max(z)) for v in z]
            naive_p1.append(e[0] / sum(e))
            top = VILT_LABELS[int(logits.argmax())]
            assert x.answer == top
            assert x.verdict == {"doctor": "T1", "nurse": "T2", "teacher": "T2"}.get(top, "neither")
    np.testing.assert_allclose([x.p_t1 for x in r.images], naive_p1, rtol=F32_RTOL, atol=F32_ATOL)
    assert r.soft.score == pytest.approx(_naive_formula(r, store, naive_p1), rel=F32_RTOL)
    naive_hard = sum(
        (x.verdict == "T1" and x.image_term == "red") or (x.verdict == "T2" and x.image_term == "blue")
        for x in r.images
    )
    assert r.hard.score == pytest.approx(100 * naive_hard / len(r.images))


def test_vilt_neither_is_counted(models, store):
    r = _run(models, store, "vilt_yes")
    assert r.n_neither == r.n_images == 10
    assert all(x.answer == "yes" and x.verdict == "neither" and x.outcome == "tie" for x in r.images)
    assert r.hard.score == 0.0 and r.hard.p_value is None and r.hard.n_ties == 10
    assert 0 < r.soft.score < 100  # the restricted softmax still reads the target terms


def test_vilt_refuses_terms_outside_its_answers(models, store):
    spec = BiasSpec.from_terms(group1="red", group2="blue", stereotype1="doctor", antistereotype1="pilot, nurse")
    with pytest.raises(MethodError) as e:
        _run(models, store, "vilt", spec=spec)
    assert e.value.message == V.MSG_TERMS_NOT_IN_VOCABULARY.format(model_id=str(models["vilt"]), missing="pilot")


# ----------------------------------------------------------------------------- generative
def _naive_blip_logprob(model, proc, img, question, answer):
    """log P(answer tokens, [SEP] | image, question), one decoder step at a time."""
    enc = proc(images=img, text=question, return_tensors="pt")
    tok = proc.tokenizer
    target = tok(answer, add_special_tokens=False)["input_ids"] + [model.config.text_config.sep_token_id]
    prefix = [model.config.text_config.bos_token_id]
    total = 0.0
    with torch.no_grad():
        image_embeds = model.vision_model(pixel_values=enc["pixel_values"]).last_hidden_state
        q = model.text_encoder(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            encoder_hidden_states=image_embeds,
        ).last_hidden_state
        for t in target:
            logits = model.text_decoder(input_ids=torch.tensor([prefix]), encoder_hidden_states=q).logits[0, -1]
            total += float(torch.log_softmax(logits.double(), -1)[t])
            prefix.append(t)
    return total


def _naive_causal_logprob(model, proc, img, context_ids, answer, eos):
    target = proc.tokenizer(answer, add_special_tokens=False)["input_ids"] + [eos]
    prefix = list(context_ids)
    pix = proc.image_processor(images=[img], return_tensors="pt")["pixel_values"]
    total = 0.0
    with torch.no_grad():
        for t in target:
            logits = model(input_ids=torch.tensor([prefix]), pixel_values=pix).logits[0, -1]
            total += float(torch.log_softmax(logits.double(), -1)[t])
            prefix.append(t)
    return total


def _softmax_p1(logps):
    m = max(logps)
    e = [math.exp(v - m) for v in logps]
    return e[0] / sum(e)


def test_blip_vqa_equals_naive(models, store):
    r = _run(models, store, "blip", question=QUESTION, max_new_tokens=4)
    from transformers import BlipForQuestionAnswering, BlipProcessor

    model = BlipForQuestionAnswering.from_pretrained(models["blip"]).eval()
    proc = BlipProcessor.from_pretrained(models["blip"])
    asked = r.prompts[0]
    assert r.method == "generative-answer-logprob"
    pil = _pil(store)
    for x, img in list(zip(r.images, pil, strict=True))[:4]:
        logps = [_naive_blip_logprob(model, proc, img, asked, t) for t in SPEC.attribute_terms]
        assert x.p_t1 == pytest.approx(_softmax_p1(logps), rel=F32_RTOL, abs=F32_ATOL)
        with torch.no_grad():
            gen = model.generate(**proc(images=img, text=asked, return_tensors="pt"), max_new_tokens=4)
        assert x.answer == proc.tokenizer.decode(gen[0], skip_special_tokens=True).strip()
        assert x.verdict == V.answer_side(x.answer, SPEC)
    assert r.soft.score == pytest.approx(_naive_formula(r, store, [x.p_t1 for x in r.images]), abs=1e-9)


def test_git_equals_naive(models, store):
    r = _run(models, store, "git", question="what is this person's job?")
    from transformers import GitForCausalLM, GitProcessor

    model = GitForCausalLM.from_pretrained(models["git"]).eval()
    proc = GitProcessor.from_pretrained(models["git"])
    ctx = [proc.tokenizer.cls_token_id] + proc.tokenizer("what is this person's job?", add_special_tokens=False)[
        "input_ids"
    ]
    for x, img in list(zip(r.images, _pil(store), strict=True))[:3]:
        logps = [
            _naive_causal_logprob(model, proc, img, ctx, t, proc.tokenizer.sep_token_id) for t in SPEC.attribute_terms
        ]
        assert x.p_t1 == pytest.approx(_softmax_p1(logps), rel=F32_RTOL, abs=F32_ATOL)
        probs = np.exp(np.array(logps) - max(logps))
        probs /= probs.sum()
        assert list(x.term_probabilities.values()) == pytest.approx(list(probs), rel=F32_RTOL, abs=F32_ATOL)


def test_blip_captioner_equals_naive(models, store):
    r = _run(models, store, "blipcap", question="a picture of a", max_new_tokens=3)
    from transformers import BlipForConditionalGeneration, BlipProcessor

    model = BlipForConditionalGeneration.from_pretrained(models["blipcap"]).eval()
    proc = BlipProcessor.from_pretrained(models["blipcap"])
    ctx = [model.config.text_config.bos_token_id] + proc.tokenizer("a picture of a", add_special_tokens=False)[
        "input_ids"
    ]
    sep = model.config.text_config.sep_token_id
    for x, img in list(zip(r.images, _pil(store), strict=True))[:2]:
        logps = [_naive_causal_logprob(model, proc, img, ctx, t, sep) for t in SPEC.attribute_terms]
        assert x.p_t1 == pytest.approx(_softmax_p1(logps), rel=F32_RTOL, abs=F32_ATOL)
        with torch.no_grad():
            gen = model.generate(**proc(images=img, text="a picture of a", return_tensors="pt"), max_new_tokens=3)
        expected = proc.tokenizer.decode(gen[0][len(ctx) :], skip_special_tokens=True).strip()
        assert x.answer == expected


def test_generative_own_answer_decides_the_verdict(models, store):
    r = _run(models, store, "git_doctor", max_new_tokens=3)
    assert all(x.answer.startswith("doctor") and x.verdict == "T1" for x in r.images)
    assert r.n_neither == 0 and r.hard.score == 50.0  # red images stereotyped, blue anti-stereotyped
    r2 = _run(models, store, "git", max_new_tokens=3)  # random weights babble: no target term
    assert r2.n_neither == sum(x.verdict == "neither" for x in r2.images) > 0


# ----------------------------------------------------------------------------- runner
def test_runner_progress_and_provenance(models, store):
    calls = []
    r = _run(models, store, "clip", progress=lambda d, n, m: calls.append((d, n, m)))
    scoring = [c for c in calls if c[2] == "Scoring images"]
    assert [c[0] for c in scoring] == [3, 6, 9, 10] and calls[-1] == (10, 10, "Scoring images")
    assert calls[0][2] == "Checking images"
    assert r.provenance["model_id"] == str(models["clip"]) and r.provenance["seed"] == SEED
    assert r.provenance["device"] == "cpu" and r.provenance["architecture"] == "CLIPModel"
    assert r.batch_size == 3 and r.architecture == "CLIPModel"
    assert [t.term for t in r.per_image_term] == ["red", "blue"]
    assert all(t.n_images == 5 for t in r.per_image_term)


def test_runner_batch_size_does_not_change_scores(models, store):
    a = _run(models, store, "vilt", batch_size=1)
    b = _run(models, store, "vilt", batch_size=10)
    np.testing.assert_allclose([x.p_t1 for x in a.images], [x.p_t1 for x in b.images], rtol=F32_RTOL, atol=F32_ATOL)


def test_runner_refuses_bad_input(models, store):
    _, imgs = store
    reds = [i for i in imgs if i.image_term == "red"]
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=reds)
    assert e.value.message == MSG_NO_IMAGES_FOR_TERM.format(terms="'blue'", group="Social group 2")
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=[])
    assert e.value.message == V.MSG_NO_IMAGES
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=[*imgs, "not a record"])
    assert e.value.message == MSG_NOT_AN_IMAGE_RECORD.format(index=10, type_name="str")
    with pytest.raises(OptionError) as e:
        _run(models, store, "clip", batch_size=0)
    assert e.value.message == MSG_BAD_WHOLE.format(label="The batch size", low=1, high=1024, value=0)
    with pytest.raises(OptionError) as e:
        _run(models, store, "clip", seed="x")
    assert e.value.message == MSG_BAD_WHOLE.format(label="The seed", low=0, high=2**32 - 1, value="x")
    with pytest.raises(MethodError) as e:
        _run(models, store, "clip", prompt_template="a photo")
    assert e.value.message == V.MSG_BAD_TEMPLATE.format(template="a photo")
    with pytest.raises(ModelKindError) as e:
        _run(models, store, "bert")
    assert e.value.message == M.MSG_NOT_A_VLM.format(model_id=str(models["bert"]), architecture="BertForMaskedLM")
    three = BiasSpec(
        name="three",
        social_groups=(("g1", ("red",)), ("g2", ("blue",))),
        attributes=(("a", ("doctor",)), ("b", ("nurse",)), ("c", ("teacher",))),
    )
    with pytest.raises(SpecError):
        _run(models, store, "clip", spec=three)


def test_runner_refuses_unreadable_and_escaping_images(models, store, tmp_path):
    import dataclasses

    root, imgs = store
    bad_root = tmp_path / "badstore"
    (bad_root / "images").mkdir(parents=True)
    for img in imgs:
        (bad_root / img.path).write_bytes((root / img.path).read_bytes())
    broken = dataclasses.replace(imgs[0], path="images/broken.png")
    (bad_root / broken.path).write_bytes(b"<html>not an image</html>")
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=[broken, *imgs[1:]], image_root=bad_root)
    assert e.value.message == MSG_IMAGE_UNREADABLE.format(
        path="images/broken.png", term="red", reason=IM.MSG_NOT_AN_IMAGE.format(name="images/broken.png")
    )
    escaping = dataclasses.replace(imgs[0], path="../outside.png")
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=[escaping, *imgs[1:]], image_root=bad_root)
    assert e.value.message == MSG_IMAGE_OUTSIDE_ROOT.format(path="../outside.png")
    missing = dataclasses.replace(imgs[0], path="images/missing.png")
    with pytest.raises(DataError) as e:
        _run(models, store, "clip", images=[missing, *imgs[1:]], image_root=bad_root)
    assert e.value.message == MSG_IMAGE_UNREADABLE.format(
        path="images/missing.png", term="red", reason=IM.MSG_IMAGE_NOT_FOUND.format(name="images/missing.png")
    )


def test_runner_accepts_grayscale_rgba_and_cmyk_images(models, store, tmp_path):
    import hashlib
    import io

    from biastest.records import TestImage

    root = tmp_path / "modes"
    (root / "images").mkdir(parents=True)
    records = []
    rng = np.random.default_rng(SEED)
    for term, colour in (("red", "red"), ("blue", "blue")):
        base = H.shape_image(colour, "square", rng=rng)
        for mode, fmt in (("L", "PNG"), ("RGBA", "PNG"), ("CMYK", "JPEG"), ("P", "GIF")):
            buf = io.BytesIO()
            base.convert(mode).save(buf, format=fmt)
            data = buf.getvalue()
            digest = hashlib.sha256(data).hexdigest()
            rel = f"images/{digest}.{fmt.lower()}"
            (root / rel).write_bytes(data)
            records.append(TestImage(path=rel, sha256=digest, image_term=term))
    r = _run(models, store, "clip", images=records, image_root=root)
    assert r.n_images == 8 and all(0 <= x.p_t1 <= 1 for x in r.images)


def test_adapter_guards(models, store):
    clip = M.load_vlm(str(models["clip"]), device="cpu", cache=ModelCache(1))
    with pytest.raises(MethodError) as e:
        clip.encode_text([])
    assert e.value.message == M.MSG_EMPTY_TEXTS.format(what="prompts")
    blip = M.load_vlm(str(models["blip"]), device="cpu", cache=ModelCache(1))
    with pytest.raises(MethodError) as e:
        blip.prepare("who is this?", ["doctor", "   "], _pil(store)[0])
    assert e.value.message == M.MSG_EMPTY_CANDIDATE.format(candidate="   ")
    t = torch.ones(2, 3)
    assert M._features(t) is t
    assert M._features((t, None)) is t


def test_progress_for_vqa_and_generative(models, store):
    for name in ("vilt", "blip"):
        calls: list[tuple[int, int, str]] = []
        _run(models, store, name, batch_size=4, max_new_tokens=2, progress=lambda d, n, m, c=calls: c.append((d, n, m)))
        assert [c[0] for c in calls if c[2] == "Scoring images"] == [4, 8, 10]
