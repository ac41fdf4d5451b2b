"""A sentence-generation run for a bias specification.

:func:`plan_missing` decides how many sentences each attribute term still
needs (the original BiasTestGPT balanced every attribute up to the best
covered one); :func:`generate_sentences` generates exactly those, validates
each answer (:class:`~biastest.generate.base.SentenceRules`), turns every
accepted sentence into a template and a counterfactual
(:mod:`biastest.generate.counterfactual`) and returns the new
:class:`~biastest.records.TestSentence` and
:class:`~biastest.records.SentencePair` records with a
:class:`~biastest.generate.base.GenerationReport`. It does not write to the
store: the caller passes the records on.

Order and sampling are seeded: attributes are served round-robin (so a run
cut short leaves the attributes evenly covered), the group terms for an
attribute alternate between group 1 and group 2 (each group's terms in a
seeded shuffled cycle), and each request gets a seed drawn from the run's
generator (passed to the model; recorded on the sentence).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from biastest.errors import GenerationError
from biastest.generate.base import (
    STOP_ATTEMPTS,
    STOP_COMPLETED,
    STOP_ERROR,
    GenerationReport,
    ProgressCallback,
    SentenceRules,
    TextGenerator,
    clean_answer,
    normalise_sentence,
    report_message,
)
from biastest.generate.counterfactual import Counterfactual, check_rewrite, swap_counterfactual
from biastest.generate.prompts import get_sentence_prompt, messages_text, rewrite_messages
from biastest.provenance import provenance
from biastest.records import SentencePair, TestSentence
from biastest.remote import REJECT_MALFORMED, MalformedAnswer, RetryPolicy, RunLimits, RunState, RunStopped
from biastest.spec import BiasSpec

__all__ = ["SentenceRun", "plan_missing", "generate_sentences", "count_key"]

log = logging.getLogger(__name__)

MSG_PROGRESS_START = "Generating {total} sentences for {attributes} attributes…"
MSG_PROGRESS_ITEM = "Sentence {done} of {total}: '{group_term}' with '{attribute_term}'"
MSG_PROGRESS_DONE = "Done: {accepted} new sentences."
MSG_BAD_TARGET = "The number of sentences per attribute must be a whole number of at least 0, got {value!r}."
MSG_UNKNOWN_ATTRIBUTE = "'{term}' is not an attribute term of this specification. Choose from: {available}."
MSG_BAD_COUNTERFACTUAL = "Unknown counterfactual method '{value}'. Choose 'rules' or 'llm'."
MSG_BAD_SEED = "A generation run needs a whole-number seed so that it can be repeated, got {value!r}."
MSG_BAD_PAIRING = "Unknown pairing '{value}'. Choose 'positional' or 'all'."


def count_key(term: str) -> str:
    """Key under which counts are matched: case-folded, hyphens and runs of spaces as one space."""
    return " ".join(term.casefold().replace("-", " ").replace("_", " ").split())


@dataclass(frozen=True)
class SentenceRun:
    """The result of :func:`generate_sentences`.

    Attributes
    ----------
    sentences : tuple of TestSentence
        The accepted generated sentences (source ``generated``).
    pairs : tuple of SentencePair
        One stereotyped / anti-stereotyped pair per accepted sentence.
    report : GenerationReport
    """

    sentences: tuple[TestSentence, ...]
    pairs: tuple[SentencePair, ...]
    report: GenerationReport

    def to_dict(self) -> dict[str, Any]:
        return {
            "sentences": [s.to_row() for s in self.sentences],
            "pairs": [p.to_row() for p in self.pairs],
            "report": self.report.to_dict(),
        }


def _check_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GenerationError(MSG_BAD_TARGET.format(value=value), value=value)
    return value


def plan_missing(
    spec: BiasSpec,
    *,
    existing_counts: Mapping[str, int] | None = None,
    target_per_attribute: int | None = None,
    min_per_attribute: int = 1,
    attributes: Sequence[str] | None = None,
) -> dict[str, int]:
    """How many sentences each attribute term still needs.

    Parameters
    ----------
    spec : BiasSpec
    existing_counts : mapping, optional
        Items already available per attribute term (e.g. from retrieval);
        keys match case-insensitively, ignoring hyphens/underscores.
    target_per_attribute : int, optional
        Wanted items per attribute. Default: balance up to the best-covered
        attribute, but at least ``min_per_attribute``.
    min_per_attribute : int
    attributes : sequence of str, optional
        Restrict to these attribute terms (default: all of the spec).

    Returns
    -------
    dict
        Attribute term (as in the spec, spec order) → number missing.
    """
    spec.check_testable()
    counts = {count_key(k): _check_count(v) for k, v in (existing_counts or {}).items()}
    terms = list(spec.attribute_terms)
    if attributes is not None:
        index = {count_key(t): t for t in terms}
        chosen = []
        for a in attributes:
            if count_key(a) not in index:
                raise GenerationError(MSG_UNKNOWN_ATTRIBUTE.format(term=a, available=", ".join(terms)), term=a)
            chosen.append(index[count_key(a)])
        terms = [t for t in terms if t in chosen]
    have = {t: counts.get(count_key(t), 0) for t in terms}
    if target_per_attribute is None:
        target = max(max(have.values(), default=0), _check_count(min_per_attribute))
    else:
        target = _check_count(target_per_attribute)
    return {t: max(0, target - have[t]) for t in terms}


def _counterparts(spec: BiasSpec, pairing: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if pairing == "positional":
        if len(spec.group1) == len(spec.group2):
            for a, b in zip(spec.group1, spec.group2, strict=True):
                out[a] = [b]
                out[b] = [a]
            return out
        pairing = "all"  # unequal groups: every term of the other group is a counterpart
    if pairing != "all":
        raise GenerationError(MSG_BAD_PAIRING.format(value=pairing))
    for a in spec.group1:
        out[a] = list(spec.group2)
    for b in spec.group2:
        out[b] = list(spec.group1)
    return out


class _Cycle:
    """A seeded shuffled cycle over terms (reshuffled at each wrap)."""

    def __init__(self, terms: Sequence[str], rng: random.Random) -> None:
        self.terms = list(terms)
        self.rng = rng
        self.queue: list[str] = []

    def next(self) -> str:
        if not self.queue:
            self.queue = list(self.terms)
            self.rng.shuffle(self.queue)
        return self.queue.pop()


def generate_sentences(
    spec: BiasSpec,
    generator: TextGenerator,
    *,
    seed: int,
    existing_counts: Mapping[str, int] | None = None,
    target_per_attribute: int | None = None,
    min_per_attribute: int = 1,
    attributes: Sequence[str] | None = None,
    prompt: str = "with-context",
    counterfactual: Literal["rules", "llm"] = "rules",
    rewrite_generator: TextGenerator | None = None,
    rewrite_slack: int = 2,
    rewrite_fallback: bool = True,
    agreement: bool = True,
    pairing: Literal["positional", "all"] = "positional",
    rules: SentenceRules | None = None,
    limits: RunLimits | None = None,
    retry: RetryPolicy | None = None,
    existing_texts: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> SentenceRun:
    """Generate the sentences a specification is missing, validated and paired.

    Parameters
    ----------
    spec : BiasSpec
        A testable spec (two groups, two attribute lists).
    generator : TextGenerator
        OpenAI, OpenAI-compatible or local model.
    seed : int
        Seeds the order, the context sampling, the backoff jitter and the
        per-request seeds.
    existing_counts, target_per_attribute, min_per_attribute, attributes :
        What to generate; see :func:`plan_missing`.
    prompt : str
        Name of a sentence prompt (:data:`~biastest.generate.prompts.SENTENCE_PROMPTS`).
    counterfactual : {"rules", "llm"}
        Build the counterfactual by rules, or ask a model for a minimal
        rewrite (validated; see :func:`~biastest.generate.counterfactual.check_rewrite`).
    rewrite_generator : TextGenerator, optional
        Model for rewrites (default: ``generator``).
    rewrite_slack : int
        Extra tokens a rewrite may change beyond the rule-based swap.
    rewrite_fallback : bool
        When a rewrite is rejected, use the rule-based counterfactual
        (True) or reject the sentence (False).
    agreement : bool
        Swap agreeing gendered words for gender pairs (rule-based swap).
    pairing : {"positional", "all"}
        Counterpart of a group term: the term at the same position in the
        other group (default; groups of unequal length fall back to "all"),
        or a seeded choice among all terms of the other group.
    rules : SentenceRules, optional
    limits : RunLimits, optional
    retry : RetryPolicy, optional
    existing_texts : iterable of str
        Sentences already in the store (new ones may not duplicate them).
    progress : callable, optional
        ``progress(done, total, message)``; ``done`` counts finished items
        (accepted or given up).
    cancel : threading.Event, optional
        Set to stop the run early; what was produced is kept.

    Returns
    -------
    SentenceRun
        New sentences and pairs, and the report (what is still missing and
        why the run stopped, in ``report.message``).

    Raises
    ------
    GenerationError, SpecError
        For invalid settings (before any request is sent). Failures during
        the run never raise: they end the run and are described in the
        report.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GenerationError(MSG_BAD_SEED.format(value=seed))
    if counterfactual not in ("rules", "llm"):
        raise GenerationError(MSG_BAD_COUNTERFACTUAL.format(value=counterfactual))
    rules = rules or SentenceRules()
    limits = limits or RunLimits()
    retry = retry or RetryPolicy()
    template = get_sentence_prompt(prompt)
    spec.check_testable()
    counterparts = _counterparts(spec, pairing)
    wanted = plan_missing(spec, existing_counts=existing_counts, target_per_attribute=target_per_attribute,
                          min_per_attribute=min_per_attribute, attributes=attributes)
    rewriter = rewrite_generator or generator

    rng = random.Random(seed)
    run = RunState(limits, retry, seed=seed, cancel=cancel)
    seen = {normalise_sentence(t) for t in existing_texts}
    total = sum(wanted.values())
    left = dict(wanted)
    accepted: dict[str, int] = dict.fromkeys(wanted, 0)
    rejected: dict[str, int] = {}
    cycles = {a: (_Cycle(spec.group1, random.Random(rng.random())), _Cycle(spec.group2, random.Random(rng.random())))
              for a in wanted}
    turn = dict.fromkeys(wanted, 0)
    sentences: list[TestSentence] = []
    pairs: list[SentencePair] = []
    base_prov = provenance(
        method="sentence-generation", spec=spec.name, spec_fingerprint=spec.fingerprint(), run_seed=seed,
        prompt_name=template.name, counterfactual=counterfactual, rules=rules.to_dict(), limits=limits.to_dict(),
        **generator.describe(),
    )
    if counterfactual == "llm":
        base_prov["rewrite_generator"] = rewriter.describe()
    attribute_list_name = {t: spec.attribute1_name for t in spec.attributes1}
    attribute_list_name.update({t: spec.attribute2_name for t in spec.attributes2})

    done = 0
    gave_up = False
    stop_reason = STOP_COMPLETED
    stop_error: GenerationError | None = None

    def notify(message: str) -> None:
        if progress is not None:
            progress(done, total, message)

    def reject(reason: str) -> None:
        rejected[reason] = rejected.get(reason, 0) + 1

    notify(MSG_PROGRESS_START.format(total=total, attributes=sum(1 for v in wanted.values() if v)))
    try:
        while any(v > 0 for v in left.values()):
            for attr in [a for a in wanted if left[a] > 0]:
                g1, g2 = cycles[attr]
                group_term = (g1 if turn[attr] % 2 == 0 else g2).next()
                turn[attr] += 1
                other_group = spec.group2 if spec.group_of(group_term) == 1 else spec.group1
                options = counterparts[group_term]
                counterpart = options[0] if len(options) == 1 else options[rng.randrange(len(options))]
                notify(MSG_PROGRESS_ITEM.format(done=done + 1, total=total, group_term=group_term,
                                                attribute_term=attr))
                result = None
                for attempt in range(1, limits.attempts_per_item + 1):
                    text = template.render(group_term, attr, group_terms=spec.group_terms,
                                           attribute_terms=spec.attribute_terms, rng=rng)
                    messages = template.messages(text)
                    request_seed = rng.randrange(2**31)
                    try:
                        answer = clean_answer(generator.ask(messages, run=run, seed=request_seed))
                    except MalformedAnswer as exc:
                        reject(exc.reason)
                        continue
                    reason = rules.check(answer, group_term=group_term, attribute_term=attr,
                                         other_group_terms=other_group, seen=seen)
                    if reason is not None:
                        log.debug("rejected generation (%s) for %r / %r", reason, group_term, attr)
                        reject(reason)
                        continue
                    cf = _make_counterfactual(
                        answer, group_term, counterpart, attr, counterfactual=counterfactual, rewriter=rewriter,
                        run=run, rng=rng, rules=rules, slack=rewrite_slack, agreement=agreement, reject=reject,
                        fallback=rewrite_fallback,
                    )
                    if cf is None:
                        continue
                    result = (answer, messages_text(messages), request_seed, attempt, cf)
                    break
                done += 1
                left[attr] -= 1
                if result is None:
                    gave_up = True
                    continue
                answer, prompt_text, request_seed, attempt, cf = result
                seen.add(normalise_sentence(answer))
                seen.add(normalise_sentence(cf.text))
                accepted[attr] += 1
                sentence = TestSentence(
                    text=answer, group_term=group_term, attribute_term=attr, template=cf.template,
                    source="generated", generator=generator.kind, model=generator.model, prompt=prompt_text,
                    spec_name=spec.name, seed=request_seed,
                    provenance={**base_prov, "seed": request_seed, "attempt": attempt},
                )
                stereotyped_first = spec.group_of(group_term) == spec.attribute_side(attr)
                st, anti = (answer, cf.text) if stereotyped_first else (cf.text, answer)
                gst, ganti = (group_term, cf.counterpart) if stereotyped_first else (cf.counterpart, group_term)
                pairs.append(SentencePair(
                    stereotyped=st, anti_stereotyped=anti, attribute_term=attr, group_term_stereotyped=gst,
                    group_term_anti=ganti, template=cf.template, category=attribute_list_name[attr],
                    source="generated", spec_name=spec.name,
                    provenance={**base_prov, "seed": request_seed, "sentence_id": sentence.id,
                                "generated_side": "stereotyped" if stereotyped_first else "anti_stereotyped",
                                "counterfactual": cf.to_dict()},
                ))
                sentences.append(sentence)
    except RunStopped as stop:
        stop_reason = stop.reason
    except GenerationError as exc:
        stop_reason, stop_error = STOP_ERROR, exc
        log.warning("generation stopped: %s", type(exc).__name__)
    if stop_reason == STOP_COMPLETED and gave_up:
        stop_reason = STOP_ATTEMPTS
    missing = {a: wanted[a] - accepted[a] for a in wanted}
    n_accepted = sum(accepted.values())
    message = report_message(stop_reason, accepted=n_accepted, missing=missing, rejected=rejected,
                             items="sentences", unit="attribute", run=run, error=stop_error)
    report = GenerationReport(
        accepted=n_accepted, rejected=rejected, requested=dict(wanted), missing=missing,
        requests_used=run.requests_used, max_requests=limits.max_requests, transient_failures=dict(run.transient),
        elapsed_s=round(run.elapsed, 3), stopped_because=stop_reason, message=message, items="sentences",
        seed=seed, provenance=base_prov,
    )
    notify(MSG_PROGRESS_DONE.format(accepted=n_accepted))
    return SentenceRun(tuple(sentences), tuple(pairs), report)


def _make_counterfactual(
    answer: str,
    group_term: str,
    counterpart: str,
    attr: str,
    *,
    counterfactual: str,
    rewriter: TextGenerator,
    run: RunState,
    rng: random.Random,
    rules: SentenceRules,
    slack: int,
    agreement: bool,
    reject: Any,
    fallback: bool,
) -> Counterfactual | None:
    if counterfactual == "rules":
        return swap_counterfactual(answer, group_term, counterpart, agreement=agreement)
    messages = rewrite_messages(answer, group_term, counterpart)
    request_seed = rng.randrange(2**31)
    try:
        raw = rewriter.ask(messages, run=run, seed=request_seed)
    except MalformedAnswer as exc:
        reason: str | None = "rewrite_" + (exc.reason or REJECT_MALFORMED)
        cf = None
    else:
        cf, reason = check_rewrite(answer, raw, group_term=group_term, counterpart=counterpart,
                                   attribute_term=attr, rules=rules, slack=slack, agreement=agreement)
    if cf is not None:
        return Counterfactual(
            text=cf.text, template=cf.template, group_term=cf.group_term, counterpart=cf.counterpart,
            agreement=cf.agreement, method=cf.method, edits=cf.edits,
            provenance={**cf.provenance, "prompt": messages_text(messages), "seed": request_seed},
        )
    reject(reason or "rewrite_rejected")
    if fallback:
        rule_cf = swap_counterfactual(answer, group_term, counterpart, agreement=agreement)
        return Counterfactual(
            text=rule_cf.text, template=rule_cf.template, group_term=rule_cf.group_term,
            counterpart=rule_cf.counterpart, agreement=rule_cf.agreement, method="rules",
            edits=rule_cf.edits, provenance={**rule_cf.provenance, "rewrite_rejected": reason},
        )
    return None
