"""The WEAT and MAC results, typed (:class:`~biastest.measures.base.ResultBase`).

``to_dict()`` gives the keys the JSON files have always had, and files written
by earlier versions load with ``load_json``. The permutation test inside a
WEAT result is a :class:`~biastest.stats.permutation.PermutationResult`
statistics record, kept as it is and written with its own ``to_dict``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainSerializer, PlainValidator, model_serializer

from biastest.measures.base import ResultBase
from biastest.measures.weat.null_sim import WEATNull
from biastest.stats.permutation import PermutationResult

__all__ = ["MACResult", "WEATResult"]


def _permutation_from(value: Any) -> PermutationResult:
    """The permutation test as it is, or rebuilt from its ``to_dict()`` form (a saved result)."""
    return value if isinstance(value, PermutationResult) else PermutationResult(**dict(value))


PermutationField = Annotated[PermutationResult, PlainValidator(_permutation_from),
                             PlainSerializer(lambda perm: perm.to_dict())]
"""The permutation test inside a result, written and read in its own ``to_dict`` form."""


class WEATResult(ResultBase):
    """A WEAT outcome.

    Attributes
    ----------
    effect_size : float
        Caliskan's d (ddof=1 over X ∪ Y).
    test_statistic : float
        s(X, Y, A, B) (a sum, not the effect size).
    p_value : float
        For ``alternative`` (one-sided "greater" by default, as Caliskan).
    p_one_sided, p_two_sided : float
    permutation : PermutationResult
    word_scores : tuple of dict
        Per target word: ``word``, ``set`` ("X"/"Y"), ``s`` = s(w,A,B),
        ``mean_cos_A``, ``mean_cos_B``.
    x, y, a, b : tuple of str
        The words used (with vectors).
    missing : dict
        Words without vectors, per role.
    effect_size_ci : (float, float) or None
        Interval of d over the words at ``ci_level``, made as ``interval_kind`` says; None when none was asked
        or it is undefined.
    ci_level : float
    n_bootstrap, n_bootstrap_valid : int
        Resamples of the words: for ``"percentile"`` those drawn for the interval and those with a defined d;
        for ``"jackknife"`` (which draws nothing) the resamples a comparison's interval of Δd draws, and 0.
    interval_kind : {"jackknife", "percentile"}
        ``"jackknife"``: d ± z·SE with the leave-one-word-out jackknife over X, Y, A and B (results since issue
        28, :func:`~biastest.measures.weat.score.weat_jackknife_interval`); ``"percentile"``: the percentile
        word bootstrap of results saved before it (files without the field read so).
    null_simulation : WEATNull or None
        d over random word lists of the same sizes ("How much can d vary by chance?",
        :mod:`biastest.measures.weat.null_sim`); None when none were asked for or they could not be drawn.
    null_note : str or None
        Why there is no simulation although one was asked for (for example an encoder has no vocabulary).
    """

    effect_size: float
    test_statistic: float
    p_value: float
    p_one_sided: float
    p_two_sided: float
    alternative: str
    permutation: PermutationField
    word_scores: tuple[dict[str, Any], ...]
    x: tuple[str, ...]
    y: tuple[str, ...]
    a: tuple[str, ...]
    b: tuple[str, ...]
    missing: dict[str, tuple[str, ...]]
    names: dict[str, str]
    seed: int | None
    provenance: dict[str, Any]
    effect_size_ci: tuple[float, float] | None = None
    ci_level: float = 0.95
    n_bootstrap: int = 0
    n_bootstrap_valid: int = 0
    null_simulation: WEATNull | None = None
    null_note: str | None = None
    interval_kind: str = "percentile"

    result_name: ClassVar[str] = "WEAT"

    #: How each kind of interval of d is made, in words (the JSON, the CSV and the app say it).
    INTERVAL_METHODS: ClassVar[dict[str, str]] = {
        "jackknife": ("jackknife interval over the words: d ± z·SE, SE from leaving each word of X, Y, A and B out "
                      "in turn (Efron & Stein 1981), clipped to ±2"),
        "percentile": ("percentile bootstrap over the words: X, Y, A and B each resampled with replacement, "
                       "independently"),
    }

    @property
    def interval_method(self) -> str:
        """How this result's interval of d was made (:data:`INTERVAL_METHODS`)."""
        return self.INTERVAL_METHODS.get(self.interval_kind, self.INTERVAL_METHODS["percentile"])

    def records(self) -> list[dict[str, Any]]:
        """Per-word rows for a table."""
        return [dict(r) for r in self.word_scores]

    @model_serializer(mode="wrap")
    def _with_interval_method(self, handler: Any) -> dict[str, Any]:
        """Today's keys, with ``interval_method`` (None when no resamples were drawn).

        The null simulation's keys are written only when one was asked for, so files of runs without one keep the
        keys they always had.
        """
        out = handler(self)
        out["interval_method"] = self.interval_method if self.n_bootstrap else None
        if out.get("null_simulation") is None and out.get("null_note") is None:
            out.pop("null_simulation", None)
            out.pop("null_note", None)
        if out.get("interval_kind") == "percentile":  # files before issue 28 have no such key: write them unchanged
            out.pop("interval_kind")
        return out


class MACResult(ResultBase):
    """A MAC outcome.

    Attributes
    ----------
    mac : float
        Mean over protected words and attribute classes of the mean cosine
        distance (Manzini et al. 2019).
    per_word_class : tuple of dict
        One row per (protected word, class): ``word``, ``class``,
        ``mean_distance``, ``sd_distance`` (ddof=1; None for one word),
        ``n_attributes``.
    per_word : tuple of dict
        Per protected word: mean over classes.
    per_class : tuple of dict
        Per class: mean over protected words.
    distances : tuple of dict
        Every (protected word, class, attribute word, distance).
    groups : dict
        Group name → its protected words with vectors (empty when no groups were given; results written
        before groups existed load with it empty).
    stereotypes : dict
        Group name → the name of its stereotype attribute class.
    per_group : tuple of dict
        Per (group, class): ``group``, ``class``, ``connection`` (``associated``: the group's own stereotype;
        ``different``: another group's), ``mean_distance`` = mean over the group's words of S(t, A_j),
        ``n_words``.
    group_contrasts : tuple of dict
        Per group: ``own_class``, ``own_distance``, ``other_classes``, ``others_distance`` (mean over the
        other groups' classes), ``contrast`` = own − others (negative: the group's words sit closer to their
        own stereotype), ``group_mac`` (mean over all classes), ``n_words``.
    """

    mac: float
    per_word_class: tuple[dict[str, Any], ...]
    per_word: tuple[dict[str, Any], ...]
    per_class: tuple[dict[str, Any], ...]
    distances: tuple[dict[str, Any], ...]
    words: tuple[str, ...]
    classes: dict[str, tuple[str, ...]]
    missing: dict[str, tuple[str, ...]]
    provenance: dict[str, Any]
    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    stereotypes: dict[str, str] = Field(default_factory=dict)
    per_group: tuple[dict[str, Any], ...] = ()
    group_contrasts: tuple[dict[str, Any], ...] = ()

    result_name: ClassVar[str] = "MAC"

    @model_serializer(mode="wrap")
    def _without_empty_groups(self, handler: Any) -> dict[str, Any]:
        """Today's keys; the group fields only where groups were given (files of earlier versions round-trip)."""
        out = handler(self)
        for key in ("groups", "stereotypes", "per_group", "group_contrasts"):
            if not out.get(key):
                out.pop(key, None)
        return out

    def records(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.per_word_class]
