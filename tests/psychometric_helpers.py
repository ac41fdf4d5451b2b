"""A planted psychometric subject for the black-box psychophysics tests (issue 25).

:class:`PlantedPsychometricResponder` answers a two-alternative question about a
stimulus (e.g. a first name whose α is the share of women with that name) the
way a model with a known psychometric curve and a position habit would:

* with probability ``q`` it names the option shown **first**, whatever the
  stimulus (position bias);
* otherwise it answers by content: cue 2 with probability
  ``Ψ(α) = F(rate·(α − PSE))`` (F logistic or cumulative normal), the PSE and
  rate depending on the context the question is asked in;
* with probability ``refusal_rate`` (before either) it refuses.

So a design that asks every stimulus equally often in both orders observes
``P(cue 2) = q/2 + (1 − q)·Ψ(α)`` among the answers that name a cue.

The question is a chat request whose user message follows :data:`TEMPLATE`;
the responder reads the stimulus, the context and the option order back from
that text, so it works as a :class:`~biastest.models.dummy.DummyChatLM` rule
(``DummyChatLM(responder)``). Its random draws are seeded by ``seed`` and the
request's digest (which holds the request's ``seed`` and ``sample``): the same
request gets the same answer, another sample of it an independent one.

:func:`balanced_requests` builds the requests of a balanced design and
:func:`count_answers` counts cue-2 answers per stimulus with a deliberately
naive exact-word match (the tests' own counting, not the product's parser).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from biastest.models.chat_records import ChatRequest

#: The user message of a question: the context sentence (with the stimulus in it), then the question.
TEMPLATE = "{context}\nQuestion: is {stimulus} a {first} or a {second}? Answer with one word: {first} or {second}."
#: How the responder finds the parts of :data:`TEMPLATE` again.
TEMPLATE_RE = re.compile(
    r"\A(?P<context>[^\n]*)\nQuestion: is (?P<stimulus>.+?) a (?P<first>\S+) or a (?P<second>\S+)\? "
    r"Answer with one word: (?P=first) or (?P=second)\.\Z"
)
#: A context is a sentence with the slot ``{name}`` (or ``{stimulus}``, the measure's slot) for the stimulus.
NEUTRAL_CONTEXT = "{name} is a person."
REFUSAL = "I cannot tell that from a name."
UNKNOWN_ANSWER = "I do not know this question."


def _fill(context: str, stimulus: str) -> str:
    """The context with its slot (``{name}`` or ``{stimulus}``) filled."""
    return context.replace("{name}", stimulus).replace("{stimulus}", stimulus)


def question(stimulus: str, context: str, first: str, second: str) -> str:
    """The user message asking about ``stimulus`` in ``context`` with ``first`` shown first."""
    return TEMPLATE.format(context=_fill(context, stimulus), stimulus=stimulus, first=first, second=second)


def planted_choice(alpha: float, *, first: str, second: str, cue2: str, pse: float, rate: float, q: float,
                   u_position: float, u_content: float, sigmoid: str = "logistic") -> str:
    """The option a planted subject names, given two uniform draws.

    With ``u_position < q`` the first-shown option; else cue 2 when ``u_content < Ψ(α)``,
    ``Ψ(α) = F(rate·(α − pse))``, and the other option otherwise.
    """
    if u_position < q:
        return first
    z = rate * (alpha - pse)
    p_cue2 = special.expit(z) if sigmoid == "logistic" else special.ndtr(z)
    cue1 = first if second == cue2 else second
    return cue2 if u_content < p_cue2 else cue1


@dataclass
class PlantedPsychometricResponder:
    """A :class:`~biastest.models.dummy.DummyChatLM` rule with a planted psychometric curve per context.

    Parameters
    ----------
    alphas : mapping
        Stimulus → α.
    contexts : mapping
        Context sentence (with ``{name}``) → (PSE, rate): Ψ(α) = F(rate·(α − PSE)).
    cues : (cue1, cue2)
        The two answers; α = 1 is all cue 2.
    q : float
        Share of answers given by position (the first-shown option).
    seed : int
    refusal_rate : float
    sigmoid : {"logistic", "norm"}
    """

    alphas: Mapping[str, float]
    contexts: Mapping[str, tuple[float, float]]
    cues: tuple[str, str] = ("man", "woman")
    q: float = 0.0
    seed: int = 0
    refusal_rate: float = 0.0
    sigmoid: str = "logistic"
    asked: list[str] = field(default_factory=list)

    def _context_key(self, context_line: str, stimulus: str) -> str | None:
        for key in self.contexts:
            if _fill(key, stimulus) == context_line:
                return key
        return None

    def __call__(self, request: ChatRequest) -> str:
        text = request.messages[-1][1]
        self.asked.append(text)
        m = TEMPLATE_RE.match(text)
        if m is None:
            return UNKNOWN_ANSWER
        stimulus, first, second = m["stimulus"], m["first"], m["second"]
        key = self._context_key(m["context"], stimulus)
        if key is None or stimulus not in self.alphas or {first, second} != set(self.cues):
            return UNKNOWN_ANSWER
        digest = hashlib.sha256(f"{self.seed}|{request.digest()}".encode()).digest()
        u = np.random.default_rng(int.from_bytes(digest[:8], "little")).random(3)
        if u[0] < self.refusal_rate:
            return REFUSAL
        pse, rate = self.contexts[key]
        return planted_choice(self.alphas[stimulus], first=first, second=second, cue2=self.cues[1], pse=pse,
                              rate=rate, q=self.q, u_position=u[1], u_content=u[2], sigmoid=self.sigmoid)


def balanced_requests(stimuli: Sequence[str], context: str, cues: tuple[str, str], *, samples: int = 1,
                      seed: int = 0, temperature: float = 1.0) -> list[tuple[str, int, ChatRequest]]:
    """Every stimulus asked in both orders, ``samples`` times each: (stimulus, order, request) rows.

    Order 0 shows cue 1 first, order 1 shows cue 2 first.
    """
    rows = []
    for stimulus in stimuli:
        for order, (first, second) in enumerate((cues, cues[::-1])):
            for sample in range(samples):
                req = ChatRequest.ask(question(stimulus, context, first, second), temperature=temperature,
                                      seed=seed, sample=sample, max_tokens=8)
                rows.append((stimulus, order, req))
    return rows


def count_answers(rows: Sequence[tuple[str, int, ChatRequest]], answers: Sequence[str | None],
                  stimuli: Sequence[str], cues: tuple[str, str]) -> dict[str, np.ndarray]:
    """Per stimulus: cue-2 answers ``k``, cue answers ``n``, other answers, and cue-2 answers shown first.

    An answer counts as a cue only when it is exactly the cue word (the tests' naive count).
    """
    index = {s: i for i, s in enumerate(stimuli)}
    out = {name: np.zeros(len(stimuli), dtype=np.int64) for name in ("k", "n", "other", "first", "n_first")}
    for (stimulus, order, _), answer in zip(rows, answers, strict=True):
        i = index[stimulus]
        if answer not in cues:
            out["other"][i] += 1
            continue
        out["n"][i] += 1
        out["k"][i] += answer == cues[1]
        first = cues[order]
        out["first"][i] += answer == first
    return out


def simulate_counts(alpha: np.ndarray, *, pse: float, rate: float, q: float, n_per_order: int,
                    rng: np.random.Generator, sigmoid: str = "logistic") -> tuple[np.ndarray, np.ndarray]:
    """Cue-2 counts of the planted subject under a balanced design, drawn answer by answer (no chat requests).

    Each level is asked ``n_per_order`` times with cue 1 first and as often with cue 2 first; every answer
    goes through :func:`planted_choice`. Returns (k, n).
    """
    k = np.zeros(alpha.size, dtype=np.int64)
    for i, a in enumerate(alpha):
        for first, second in (("c1", "c2"), ("c2", "c1")):
            u = rng.random((n_per_order, 2))
            for up, uc in u:
                k[i] += planted_choice(float(a), first=first, second=second, cue2="c2", pse=pse, rate=rate, q=q,
                                       u_position=up, u_content=uc, sigmoid=sigmoid) == "c2"
    return k, np.full(alpha.size, 2 * n_per_order)
