"""A sentence-generation run for a bias specification.

:func:`plan_missing` decides how many sentences each attribute term still
needs (the original BiasTestGPT balanced every attribute up to the best
covered one); :func:`generate_sentences` generates exactly those (the run's
settings in one :class:`SentenceSettings` record), validates
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

__all__ = ["SentenceRun", "SentenceSettings", "plan_missing", "generate_sentences", "count_key"]

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


@dataclass(frozen=True)
class SentenceSettings:
    """The settings of one sentence-generation run (what to generate, and how).

    Checked by :func:`generate_sentences` before any request is sent.

    Attributes
    ----------
    seed : int
        Seeds the order, the context sampling, the backoff jitter and the
        per-request seeds.
    target_per_attribute, min_per_attribute, attributes :
        What to generate; see :func:`plan_missing`.
    prompt : str
        Name of a sentence prompt (:data:`~biastest.generate.prompts.SENTENCE_PROMPTS`).
    counterfactual : {"rules", "llm"}
        Build the counterfactual by rules, or ask a model for a minimal
        rewrite (validated; see :func:`~biastest.generate.counterfactual.check_rewrite`).
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
        Default: ``SentenceRules()``.
    limits : RunLimits, optional
        Default: ``RunLimits()``.
    retry : RetryPolicy, optional
        Default: ``RetryPolicy()``.
    """

    seed: int
    target_per_attribute: int | None = None
    min_per_attribute: int = 1
    attributes: Sequence[str] | None = None
    prompt: str = "with-context"
    counterfactual: Literal["rules", "llm"] = "rules"
    rewrite_slack: int = 2
    rewrite_fallback: bool = True
    agreement: bool = True
    pairing: Literal["positional", "all"] = "positional"
    rules: SentenceRules | None = None
    limits: RunLimits | None = None
    retry: RetryPolicy | None = None


def generate_sentences(
    spec: BiasSpec,
    generator: TextGenerator,
    settings: SentenceSettings,
    *,
    rewrite_generator: TextGenerator | None = None,
    existing_counts: Mapping[str, int] | None = None,
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
    settings : SentenceSettings
        The run's seed, what to generate, the prompt, the counterfactual
        method, the validation rules and the limits.
    rewrite_generator : TextGenerator, optional
        Model for rewrites (default: ``generator``).
    existing_counts : mapping, optional
        Items already available per attribute term; see :func:`plan_missing`.
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
    runner = _SentenceRunner(spec, generator, settings, rewrite_generator=rewrite_generator,
                             existing_counts=existing_counts, existing_texts=existing_texts,
                             progress=progress, cancel=cancel)
    return runner.run()


class _SentenceRunner:
    """The state of one :func:`generate_sentences` run, built in the order the seeded draws need.

    ``__init__`` checks the settings and plans the run (nothing is sent); :meth:`run` serves the
    attributes round-robin (:meth:`_item`: one item, up to ``attempts_per_item`` attempts), keeps
    each accepted sentence with its pair (:meth:`_keep`) and writes the report (:meth:`_report`).
    """

    def __init__(
        self,
        spec: BiasSpec,
        generator: TextGenerator,
        settings: SentenceSettings,
        *,
        rewrite_generator: TextGenerator | None,
        existing_counts: Mapping[str, int] | None,
        existing_texts: Iterable[str],
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> None:
        s = settings
        if isinstance(s.seed, bool) or not isinstance(s.seed, int):
            raise GenerationError(MSG_BAD_SEED.format(value=s.seed))
        if s.counterfactual not in ("rules", "llm"):
            raise GenerationError(MSG_BAD_COUNTERFACTUAL.format(value=s.counterfactual))
        self.spec, self.generator, self.settings = spec, generator, s
        self.rules = s.rules or SentenceRules()
        self.limits = s.limits or RunLimits()
        retry = s.retry or RetryPolicy()
        self.template = get_sentence_prompt(s.prompt)
        spec.check_testable()
        self.counterparts = _counterparts(spec, s.pairing)
        self.wanted = plan_missing(spec, existing_counts=existing_counts, target_per_attribute=s.target_per_attribute,
                                   min_per_attribute=s.min_per_attribute, attributes=s.attributes)
        self.rewriter = rewrite_generator or generator
        self.progress = progress

        self.rng = random.Random(s.seed)
        self.state = RunState(self.limits, retry, seed=s.seed, cancel=cancel)
        self.seen = {normalise_sentence(t) for t in existing_texts}
        self.total = sum(self.wanted.values())
        self.left = dict(self.wanted)
        self.accepted: dict[str, int] = dict.fromkeys(self.wanted, 0)
        self.rejected: dict[str, int] = {}
        rng = self.rng
        self.cycles = {a: (_Cycle(spec.group1, random.Random(rng.random())),
                           _Cycle(spec.group2, random.Random(rng.random())))
                       for a in self.wanted}
        self.turn = dict.fromkeys(self.wanted, 0)
        self.sentences: list[TestSentence] = []
        self.pairs: list[SentencePair] = []
        self.base_prov = provenance(
            method="sentence-generation", spec=spec.name, spec_fingerprint=spec.fingerprint(), run_seed=s.seed,
            prompt_name=self.template.name, counterfactual=s.counterfactual, rules=self.rules.to_dict(),
            limits=self.limits.to_dict(), **generator.describe(),
        )
        if s.counterfactual == "llm":
            self.base_prov["rewrite_generator"] = self.rewriter.describe()
        self.list_name = {t: spec.attribute1_name for t in spec.attributes1}
        self.list_name.update({t: spec.attribute2_name for t in spec.attributes2})
        self.done = 0
        self.gave_up = False

    def notify(self, message: str) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total, message)

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def run(self) -> SentenceRun:
        """Serve the attributes round-robin until each has its count; a stop or an error ends the run."""
        stop_reason = STOP_COMPLETED
        stop_error: GenerationError | None = None
        self.notify(MSG_PROGRESS_START.format(total=self.total, attributes=sum(1 for v in self.wanted.values() if v)))
        try:
            while any(v > 0 for v in self.left.values()):
                for attr in [a for a in self.wanted if self.left[a] > 0]:
                    self._item(attr)
        except RunStopped as stop:
            stop_reason = stop.reason
        except GenerationError as exc:
            stop_reason, stop_error = STOP_ERROR, exc
            log.warning("generation stopped: %s", type(exc).__name__)
        if stop_reason == STOP_COMPLETED and self.gave_up:
            stop_reason = STOP_ATTEMPTS
        report = self._report(stop_reason, stop_error)
        self.notify(MSG_PROGRESS_DONE.format(accepted=report.accepted))
        return SentenceRun(tuple(self.sentences), tuple(self.pairs), report)

    def _item(self, attr: str) -> None:
        """One item for ``attr``: the next group term, up to ``attempts_per_item`` attempts, then keep or give up."""
        spec = self.spec
        g1, g2 = self.cycles[attr]
        group_term = (g1 if self.turn[attr] % 2 == 0 else g2).next()
        self.turn[attr] += 1
        other_group = spec.group2 if spec.group_of(group_term) == 1 else spec.group1
        options = self.counterparts[group_term]
        counterpart = options[0] if len(options) == 1 else options[self.rng.randrange(len(options))]
        self.notify(MSG_PROGRESS_ITEM.format(done=self.done + 1, total=self.total, group_term=group_term,
                                             attribute_term=attr))
        result = None
        for attempt in range(1, self.limits.attempts_per_item + 1):
            result = self._attempt(group_term, counterpart, attr, other_group)
            if result is not None:
                result = (*result, attempt)
                break
        self.done += 1
        self.left[attr] -= 1
        if result is None:
            self.gave_up = True
            return
        self._keep(group_term, attr, *result)

    def _attempt(
        self, group_term: str, counterpart: str, attr: str, other_group: Sequence[str],
    ) -> tuple[str, str, int, Counterfactual] | None:
        """One request and its checks: (answer, prompt text, request seed, counterfactual), or None if rejected."""
        s = self.settings
        spec = self.spec
        text = self.template.render(group_term, attr, group_terms=spec.group_terms,
                                    attribute_terms=spec.attribute_terms, rng=self.rng)
        messages = self.template.messages(text)
        request_seed = self.rng.randrange(2**31)
        try:
            answer = clean_answer(self.generator.ask(messages, run=self.state, seed=request_seed))
        except MalformedAnswer as exc:
            self.reject(exc.reason)
            return None
        reason = self.rules.check(answer, group_term=group_term, attribute_term=attr,
                                  other_group_terms=other_group, seen=self.seen)
        if reason is not None:
            log.debug("rejected generation (%s) for %r / %r", reason, group_term, attr)
            self.reject(reason)
            return None
        if s.counterfactual == "rules":
            cf: Counterfactual | None = swap_counterfactual(answer, group_term, counterpart, agreement=s.agreement)
        else:
            cf = self._rewrite(answer, group_term, counterpart, attr)
        if cf is None:
            return None
        return answer, messages_text(messages), request_seed, cf

    def _keep(self, group_term: str, attr: str, answer: str, prompt_text: str, request_seed: int,
              cf: Counterfactual, attempt: int) -> None:
        """Record an accepted sentence and its stereotyped / anti-stereotyped pair."""
        spec = self.spec
        self.seen.add(normalise_sentence(answer))
        self.seen.add(normalise_sentence(cf.text))
        self.accepted[attr] += 1
        sentence = TestSentence(
            text=answer, group_term=group_term, attribute_term=attr, template=cf.template,
            source="generated", generator=self.generator.kind, model=self.generator.model, prompt=prompt_text,
            spec_name=spec.name, seed=request_seed,
            provenance={**self.base_prov, "seed": request_seed, "attempt": attempt},
        )
        stereotyped_first = spec.group_of(group_term) == spec.attribute_side(attr)
        st, anti = (answer, cf.text) if stereotyped_first else (cf.text, answer)
        gst, ganti = (group_term, cf.counterpart) if stereotyped_first else (cf.counterpart, group_term)
        self.pairs.append(SentencePair(
            stereotyped=st, anti_stereotyped=anti, attribute_term=attr, group_term_stereotyped=gst,
            group_term_anti=ganti, template=cf.template, category=self.list_name[attr],
            source="generated", spec_name=spec.name,
            provenance={**self.base_prov, "seed": request_seed, "sentence_id": sentence.id,
                        "generated_side": "stereotyped" if stereotyped_first else "anti_stereotyped",
                        "counterfactual": cf.to_dict()},
        ))
        self.sentences.append(sentence)

    def _report(self, stop_reason: str, stop_error: GenerationError | None) -> GenerationReport:
        wanted, run = self.wanted, self.state
        missing = {a: wanted[a] - self.accepted[a] for a in wanted}
        n_accepted = sum(self.accepted.values())
        message = report_message(stop_reason, accepted=n_accepted, missing=missing, rejected=self.rejected,
                                 items="sentences", unit="attribute", run=run, error=stop_error)
        return GenerationReport(
            accepted=n_accepted, rejected=self.rejected, requested=dict(wanted), missing=missing,
            requests_used=run.requests_used, max_requests=self.limits.max_requests,
            transient_failures=dict(run.transient), elapsed_s=round(run.elapsed, 3), stopped_because=stop_reason,
            message=message, items="sentences", seed=self.settings.seed, provenance=self.base_prov,
        )

    def _rewrite(self, answer: str, group_term: str, counterpart: str, attr: str) -> Counterfactual | None:
        """Ask the rewriter for a minimal counterfactual; on a rejection fall back to the rules (or give None)."""
        s = self.settings
        messages = rewrite_messages(answer, group_term, counterpart)
        request_seed = self.rng.randrange(2**31)
        try:
            raw = self.rewriter.ask(messages, run=self.state, seed=request_seed)
        except MalformedAnswer as exc:
            reason: str | None = "rewrite_" + (exc.reason or REJECT_MALFORMED)
            cf = None
        else:
            cf, reason = check_rewrite(answer, raw, group_term=group_term, counterpart=counterpart,
                                       attribute_term=attr, rules=self.rules, slack=s.rewrite_slack,
                                       agreement=s.agreement)
        if cf is not None:
            return Counterfactual(
                text=cf.text, template=cf.template, group_term=cf.group_term, counterpart=cf.counterpart,
                agreement=cf.agreement, method=cf.method, edits=cf.edits,
                provenance={**cf.provenance, "prompt": messages_text(messages), "seed": request_seed},
            )
        self.reject(reason or "rewrite_rejected")
        if s.rewrite_fallback:
            rule_cf = swap_counterfactual(answer, group_term, counterpart, agreement=s.agreement)
            return Counterfactual(
                text=rule_cf.text, template=rule_cf.template, group_term=rule_cf.group_term,
                counterpart=rule_cf.counterpart, agreement=rule_cf.agreement, method="rules",
                edits=rule_cf.edits, provenance={**rule_cf.provenance, "rewrite_rejected": reason},
            )
        return None
