"""The similarity settings as one object: :class:`SimilaritySettings`, and the paper's defaults.

Every text path of the family (:func:`~jaxmetrics.similarity.compute_similarity`,
:func:`~jaxmetrics.similarity.token_alignments`, :func:`~jaxmetrics.similarity.bertscore`,
:func:`~jaxmetrics.similarity.correlation_sweep`) builds one :class:`SimilaritySettings` at its top
(from its keyword arguments, or takes ``settings=`` directly), and passes only it down to
:func:`~jaxmetrics.similarity.pipeline.score_texts` and
:func:`~jaxmetrics.similarity.score_encoded`. The object is validated once, when built (errors
name the argument), fills in the defaults that depend on other settings (:func:`default_centering`,
:func:`default_temperature`, the special-tokens policy), and gives the settings part of a
:class:`~jaxmetrics.similarity.SimilarityResult`'s signature (:meth:`SimilaritySettings.signature_fields`).
"""
from __future__ import annotations

import dataclasses
import inspect
import types
from dataclasses import KW_ONLY
from typing import Any, Callable

import numpy as np

from jaxmetrics.settings import Settings
from jaxmetrics.similarity.centering import CENTERING_METHODS
from jaxmetrics.similarity.chunks import CENTERING_BATCHES
from jaxmetrics.similarity.kernels import METRICS, TEMPERED

__all__ = ["SIMILARITY_METRICS", "SPECIAL_TOKENS", "SimilaritySettings", "default_centering", "default_layer",
           "default_temperature", "settings_from_keywords"]

#: every similarity of the text pipelines: BERTScore's greedy matching and the normalised family
SIMILARITY_METRICS = ("bertscore",) + METRICS
#: the special-tokens policies (``special_tokens=``): drop [CLS]/[SEP], keep a leading [CLS], keep all
SPECIAL_TOKENS = ("drop", "cls", "keep")

# Fields left None are filled from the others when built; replace() fills them again.
_DERIVED = ("centering", "temperature", "special_tokens")
# A model with no position limit: max_length is checked when built, clipped once the model is known.
_NO_MODEL = types.SimpleNamespace(max_positions=None)


def default_layer(num_layers: int) -> int:
    """The paper's layer: 10 for 12-layer (base) models, 19 for 24-layer (large) ones, else
    the last layer (``hidden_states`` numbering, 0 = embedding output).

    Examples:
      >>> [default_layer(n) for n in (12, 24, 6)]
      [10, 19, 6]
    """
    return {12: 10, 24: 19}.get(int(num_layers), int(num_layers))


def default_centering(metric: str) -> str:
    """The centering a metric gets by default: ``"none"`` for BERTScore, ``"batch"`` for the
    normalised family (Chen et al.'s recommendation for TWMD and its relatives).

    BERTScore's ``F = 2PR/(P+R)`` is only a mean of P and R when both have the same sign;
    after centering a pair can have ``P·R <= 0`` and an F outside ``[P, R]`` (even outside
    ``[-1, 1]``), so batch-centred BERTScore (the paper's figures) is opt-in:
    ``centering="batch"``.

    Examples:
      >>> default_centering("bertscore"), default_centering("twmd")
      ('none', 'batch')
    """
    return "none" if metric == "bertscore" else "batch"


def default_temperature(metric: str, centering: str) -> float | None:
    """The paper's temperatures: 0.10 (TWMD) / 0.15 (TRWMD) with centering, 0.02 without.

    Examples:
      >>> default_temperature("twmd", "batch"), default_temperature("trwmd", "none")
      (0.1, 0.02)
    """
    if metric not in TEMPERED:
        return None
    if centering == "none":
        return 0.02
    return 0.10 if metric == "twmd" else 0.15


class SimilaritySettings(Settings):
    """The settings of a text similarity, validated once, when built (keyword-only).

    ``None`` in ``centering``, ``temperature`` or ``special_tokens`` means the default that the
    other fields imply, filled in when the object is built: :func:`default_centering` of the metric
    (``"none"`` with ``bert_score_compat``), :func:`default_temperature` of the metric and
    centering, ``"drop"`` (``"keep"`` with ``bert_score_compat``). :meth:`replace` fills such
    fields again from the new values (``SimilaritySettings().replace(metric="bertscore")`` is
    uncentred BERTScore). ``layer`` and ``max_length`` stay ``None`` until a model is known.

    Attributes:
      metric: the similarity, one of :data:`SIMILARITY_METRICS` (default ``"twmd"``).
      layer: ``hidden_states`` index (0 = embedding output); ``None``: :func:`default_layer` of the
        model, or bert_score's tuned layer with ``bert_score_compat``.
      centering: ``none | dimension | sentence | corpus | batch``.
      temperature: T of the tempered metrics (``twmd``, ``trwmd``, ``trwmd_lse``).
      num_iterations: Sinkhorn iterations of ``twmd`` (the paper: 1).
      center_batch_size: pairs per centering batch of ``centering="batch"``.
      centering_batches: how ``centering="batch"`` forms its batches (:data:`CENTERING_BATCHES`):
        ``"consecutive"`` (default, the paper's): ``center_batch_size`` consecutive pairs in input
        order, so a pair's score depends on its neighbours in the file and shuffling the pairs
        changes the scores (and a little their correlation with human scores; the authors'
        STS/WMT figures were made this way); ``"hashed"``: the pairs sorted by a stable hash of
        their tokens (:func:`~jaxmetrics.similarity.chunks.pair_keys`) and then cut into batches,
        so a pair gets the same partners whatever the order of the file: the scores do not depend
        on input order. Any other centering has no batches: ``"hashed"`` raises there.
      idf: idf token weights over the references.
      baseline: ``(P, R, F)`` for BERTScore's rescaling ``(s - b) / (1 - b)``, or ``None``.
      special_tokens: ``drop | cls | keep`` (:data:`SPECIAL_TOKENS`).
      bert_score_compat: BERTScore as the ``bert_score`` package computes it (see
        :func:`~jaxmetrics.similarity.compute_similarity`).
      compat_batch_size: ``bert_score``'s ``batch_size`` (pairs per padding group).
      max_length: truncation in tokens; ``None``: 512 or the model's positions (bert_score's
        ``model_max_length`` with ``bert_score_compat``).
      batch_size: texts per forward pass (speed only).
      pair_chunk: pairs per kernel call (speed only); ``None``: the pipeline's own, 512
        (:func:`~jaxmetrics.similarity.compute_similarity`), 128
        (:func:`~jaxmetrics.similarity.correlation_sweep`, which scores every setting of a chunk at
        once).

    Examples:
      >>> s = SimilaritySettings(metric="twmd")
      >>> s.centering, s.temperature, s.special_tokens
      ('batch', 0.1, 'drop')
      >>> s.replace(centering="none").temperature
      0.02
      >>> SimilaritySettings(metric="bertscore") == SimilaritySettings(metric="bertscore", centering="none")
      True
      >>> SimilaritySettings(num_iterations=0)
      Traceback (most recent call last):
      ...
      ValueError: num_iterations: must be >= 1, got 0
    """

    _: KW_ONLY
    metric: str = "twmd"
    layer: int | None = None
    centering: str | None = None
    temperature: float | None = None
    num_iterations: int = 1
    center_batch_size: int = 32
    centering_batches: str = "consecutive"
    idf: bool = False
    baseline: tuple[float, float, float] | None = None
    special_tokens: str | None = None
    bert_score_compat: bool = False
    compat_batch_size: int = 64
    max_length: int | None = None
    batch_size: int = 64
    pair_chunk: int | None = None

    def check(self) -> None:
        from jaxmetrics._validation import check_choice, check_int, check_positive
        from jaxmetrics.models import check_batch_size, check_max_length
        from jaxmetrics.similarity.greedy import check_baseline

        def put(name, value):
            object.__setattr__(self, name, value)

        object.__setattr__(self, "_derived", frozenset(n for n in _DERIVED if getattr(self, n) is None))
        metric, centering, special = self.metric, self.centering, self.special_tokens
        check_choice(metric, "metric", SIMILARITY_METRICS)
        if centering is not None:
            check_choice(centering, "centering", CENTERING_METHODS)
        if special is not None:
            check_choice(special, "special_tokens", SPECIAL_TOKENS)
        if not isinstance(self.idf, (bool, np.bool_)):
            raise TypeError(f"idf: expected a bool, got {type(self.idf).__name__}")
        if not isinstance(self.bert_score_compat, (bool, np.bool_)):
            raise TypeError(f"bert_score_compat: expected a bool, got {type(self.bert_score_compat).__name__}")
        put("idf", bool(self.idf))
        put("bert_score_compat", bool(self.bert_score_compat))
        if self.bert_score_compat:
            if metric != "bertscore":
                raise ValueError("bert_score_compat: only applies to metric='bertscore'")
            if centering not in (None, "none"):
                raise ValueError(f"centering: bert_score_compat=True scores as bert_score does, without "
                                 f"centering; got {centering!r} (leave centering unset or 'none')")
            if special is not None:
                raise ValueError("special_tokens: bert_score_compat=True matches [CLS]/[SEP] with weight 0 as "
                                 "bert_score does; leave special_tokens unset")
            centering, special = "none", "keep"
        elif centering is None:
            centering = default_centering(metric)
        put("centering", centering)
        check_choice(self.centering_batches, "centering_batches", CENTERING_BATCHES)
        if self.centering_batches != "consecutive" and centering != "batch":
            raise ValueError(f"centering_batches: {self.centering_batches!r} forms the batches of centering='batch'; "
                             f"centering is {centering!r}, which has none (leave centering_batches unset)")
        put("special_tokens", "drop" if special is None else special)
        if self.baseline is not None and metric != "bertscore":
            raise ValueError("baseline: rescaling applies to metric='bertscore' only")
        put("num_iterations", check_int(self.num_iterations, "num_iterations", minimum=1))
        put("center_batch_size", check_int(self.center_batch_size, "center_batch_size", minimum=1))
        if self.pair_chunk is not None:
            put("pair_chunk", check_int(self.pair_chunk, "pair_chunk", minimum=1))
        put("compat_batch_size", check_int(self.compat_batch_size, "compat_batch_size", minimum=1))
        put("batch_size", check_batch_size(self.batch_size))
        if self.temperature is None:
            put("temperature", default_temperature(metric, centering))
        elif metric in TEMPERED:
            put("temperature", check_positive(self.temperature, "temperature"))
        check_baseline(self.baseline)
        if self.baseline is not None:
            put("baseline", tuple(float(b) for b in np.ravel(self.baseline)))
        if self.layer is not None:
            if isinstance(self.layer, (bool, np.bool_)) or not isinstance(self.layer, (int, np.integer)):
                raise TypeError(f"layer: expected an integer or None, got {type(self.layer).__name__}")
            put("layer", int(self.layer))
        if self.max_length is not None:  # the engine's own check; clipped to a model's positions later
            put("max_length", check_max_length(_NO_MODEL, self.max_length, 512))

    def replace(self, **changes: Any) -> "SimilaritySettings":
        """A validated copy with some fields changed; the fields that were filled in from the
        others (given as ``None``) are filled in again unless ``changes`` sets them."""
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        kw.update({name: None for name in getattr(self, "_derived", ())})
        kw.update(changes)
        return type(self)(**kw)

    def signature_fields(self) -> dict[str, Any]:
        """The settings a :class:`~jaxmetrics.similarity.SimilarityResult`'s signature records:
        ``layer`` and ``max_length`` as given (the scorer writes the resolved ones), ``centering``,
        ``special_tokens``, ``idf``, ``bert_score_compat``; ``baseline`` for BERTScore,
        ``temperature`` for the tempered metrics, ``num_iterations`` for TWMD, ``center_batch_size``
        and ``centering_batches`` for batch centering, ``compat_batch_size`` with ``bert_score_compat``. Speed-only fields
        (``batch_size``, ``pair_chunk``) are left out."""
        out: dict[str, Any] = dict(layer=self.layer, centering=self.centering, special_tokens=self.special_tokens,
                                   idf=self.idf, bert_score_compat=self.bert_score_compat,
                                   max_length=self.max_length)
        if self.metric == "bertscore":
            out["baseline"] = self.baseline
        if self.metric in TEMPERED:
            out["temperature"] = self.temperature
        if self.metric == "twmd":
            out["num_iterations"] = self.num_iterations
        if self.centering == "batch":
            out["center_batch_size"] = self.center_batch_size
            out["centering_batches"] = self.centering_batches
        if self.bert_score_compat:
            out["compat_batch_size"] = self.compat_batch_size
        return out


def settings_from_keywords(func: Callable, settings: SimilaritySettings | None, **keywords: Any) -> SimilaritySettings:
    """The :class:`SimilaritySettings` of a public function's call: built from its keyword
    settings (``keywords``, each a field of :class:`SimilaritySettings`) when ``settings`` is
    ``None``; else ``settings`` itself, and a keyword setting given beside it (not at ``func``'s
    default) raises ``ValueError`` naming it, so each setting is set in one place."""
    if settings is None:
        return SimilaritySettings(**keywords)
    if not isinstance(settings, SimilaritySettings):
        raise TypeError(f"settings: expected SimilaritySettings, got {type(settings).__name__}")
    params = inspect.signature(func).parameters
    for name, value in keywords.items():
        default = params[name].default
        if value is not default and not (isinstance(value, (str, int, float)) and value == default
                                         and type(value) is type(default)):
            raise ValueError(f"{name}: given both as {name}= and in settings=; set it in one place "
                             f"(settings.replace({name}=...))")
    return settings
