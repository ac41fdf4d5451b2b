"""The vision-language measure (BiasTestVQA): does a model see the stereotype in pictures of people?

Images of the two social groups' terms are classified into two target lists (T1, the stereotype of group 1,
and T2); the score is the share of images whose model answer — soft (probabilities) or hard (verdicts) — is
their group's stereotype (50% = no preference). CLIP-like, VQA-classifier and generative models run in this
process; models behind an OpenAI-compatible chat endpoint are asked the question there, in both orders, with
refusals and unparseable answers counted apart (never as a side) and the position bias reported.

* :mod:`~biastest.measures.vlm.options` — :class:`VLMOptions` (defaults, choices, checks);
* :mod:`~biastest.measures.vlm.score` — the formulas (with the reference) and the model-driven scorers;
* :mod:`~biastest.measures.vlm.summary` — :func:`summarize_vlm`, the statistics;
* :mod:`~biastest.measures.vlm.chat` — the chat path's outcomes: share among parseable answers, refusal,
  unparseable, position and consistency rates;
* :mod:`~biastest.measures.vlm.clusters` — clusters of images and the cluster-aware parts;
* :mod:`~biastest.measures.vlm.result` — :class:`VLMResult` and its records;
* :mod:`~biastest.measures.vlm.run` — :func:`run` (``run(options, items, *, progress, cancel)``);
* :mod:`~biastest.measures.vlm.report` and :mod:`~biastest.measures.vlm.report_figures` — words, tables,
  CSV/JSON, figures;
* :mod:`~biastest.measures.vlm.compare` — :func:`compare_vlm`, several models on the same images.
"""

from __future__ import annotations

from biastest.measures.base import Measure
from biastest.measures.vlm import report
from biastest.measures.vlm.clusters import (
    DESIGN_NOTES,
    cluster_keys,
    resolve_clusters,
)
from biastest.measures.vlm.compare import compare_vlm
from biastest.measures.vlm.headless import headless
from biastest.measures.vlm.options import (
    CLUSTER_LABELS,
    CLUSTERINGS,
    COMBINE_CHOICES,
    DEFAULT_BATCH_SIZE,
    DEFAULT_CLUSTERS,
    DEFAULT_PROMPT_TEMPLATE,
    DEFAULT_QUESTION,
    METHODS,
    MSG_BAD_CLUSTERS,
    MSG_BAD_COMBINE,
    MSG_BAD_QUESTION,
    MSG_BAD_TEMPLATE,
    MSG_EMPTY_QUESTION,
    MSG_NO_TEMPLATES,
    PROMPT_TEMPLATES,
    QUESTIONS,
    VLMOptions,
    check_clusters,
    check_prompt_template,
    check_question,
    check_templates,
    method_for_kind,
)
from biastest.measures.vlm.result import (
    MSG_BAD_RESULT_FILE,
    ImageScore,
    VLMResult,
    VLMTermSummary,
)
from biastest.measures.vlm.run import (
    VLMItems,
    run,
)
from biastest.measures.vlm.score import (
    LOG_ODDS_EPS,
    MSG_IMAGE_TERM_NOT_IN_SPEC,
    MSG_TERMS_NOT_IN_VOCABULARY,
    TermScores,
    answer_side,
    clip_term_scores,
    generative_term_scores,
    image_groups,
    log_odds,
    vqa_classifier_term_scores,
)
from biastest.measures.vlm.summary import (
    MSG_BAD_PROBABILITIES,
    MSG_BAD_VERDICT,
    MSG_NO_IMAGES,
    MSG_SHAPE,
    ImageAnswers,
    ModelSettings,
    summarize_vlm,
)
from biastest.models.vlm_question import (
    VERDICT_NEITHER,
    VERDICT_T1,
    VERDICT_T2,
    VERDICT_TIE,
    fill_question,
)

__all__ = [
    "MEASURE",
    "CLUSTERINGS",
    "CLUSTER_LABELS",
    "COMBINE_CHOICES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CLUSTERS",
    "DEFAULT_PROMPT_TEMPLATE",
    "DEFAULT_QUESTION",
    "ImageAnswers",
    "ImageScore",
    "LOG_ODDS_EPS",
    "METHODS",
    "ModelSettings",
    "MSG_BAD_CLUSTERS",
    "MSG_BAD_COMBINE",
    "MSG_BAD_PROBABILITIES",
    "MSG_BAD_QUESTION",
    "MSG_BAD_RESULT_FILE",
    "MSG_BAD_TEMPLATE",
    "MSG_BAD_VERDICT",
    "MSG_EMPTY_QUESTION",
    "MSG_IMAGE_TERM_NOT_IN_SPEC",
    "MSG_NO_IMAGES",
    "MSG_NO_TEMPLATES",
    "MSG_SHAPE",
    "MSG_TERMS_NOT_IN_VOCABULARY",
    "PROMPT_TEMPLATES",
    "QUESTIONS",
    "TermScores",
    "VERDICT_NEITHER",
    "VERDICT_T1",
    "VERDICT_T2",
    "VERDICT_TIE",
    "VLMItems",
    "VLMOptions",
    "VLMResult",
    "VLMTermSummary",
    "answer_side",
    "check_clusters",
    "check_prompt_template",
    "check_question",
    "check_templates",
    "clip_term_scores",
    "DESIGN_NOTES",
    "cluster_keys",
    "compare_vlm",
    "fill_question",
    "generative_term_scores",
    "image_groups",
    "log_odds",
    "method_for_kind",
    "resolve_clusters",
    "run",
    "summarize_vlm",
    "vqa_classifier_term_scores",
]

MEASURE = Measure(
    name="vlm",
    kind="vlm",
    title="Vision-language bias score (BiasTestVQA): stereotyped answers about pictures of people",
    Options=VLMOptions,
    run=run,
    Result=VLMResult,
    report=report,
    compare=compare_vlm,
    aliases=("vqa",),
    card="docs/measures/vlm.md",
    headless=headless,
    label="Vision-language bias score",
    choices={"combine": tuple(COMBINE_CHOICES)},
)
