"""The settings of :func:`~jaxmetrics.evaluation.evaluate_generation`, one object per stage.

* :class:`GenerationSettings` — what is generated: decodings, sampling seeds, lengths, EOS;
* :class:`FeatureSettings` — what the featurizer sees and how its vectors are pooled;
* :class:`ScoringSettings` — how runs are scored: :class:`MauveScoring` (MAUVE's seeds,
  c = ``scaling``, m = ``num_points``, k = ``num_buckets``, estimator, divergence, k-means),
  :class:`SimilarityScoring` (BERTScore / TWMD), Self-BLEU, ME-Petersen, ``ppl_evaluate``.

Each is a :class:`jaxmetrics.settings.Settings`: frozen, hashable, compared by value and checked
once when built (a ``ValueError`` / ``TypeError`` naming the field). Sequences are stored as
tuples and decoding names in their canonical form, so equal settings are equal objects.
:func:`~jaxmetrics.evaluation.evaluate_generation` builds its run config from their
:meth:`~jaxmetrics.settings.Settings.to_dict`, its signature from their ``signature_fields()``
and its cache keys from their ``cache_fields()``.

Examples:
    >>> from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings
    >>> GenerationSettings(decodings=["pure", "top_k=40"], seeds=[0, 1]).decodings
    ('sample', 'top_k=40')
    >>> ScoringSettings(mauve=MauveScoring(seeds=(25, 26))).mauve.seeds
    (25, 26)
    >>> MauveScoring(seeds=(3, 3))
    Traceback (most recent call last):
    ...
    ValueError: seeds: repeated seeds [3, 3]
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Mapping

from jaxmetrics import _validation as V
from jaxmetrics.settings import Settings

__all__ = ["FeatureSettings", "GenerationSettings", "MauveScoring", "ScoringSettings", "SimilarityScoring"]


def _set(obj: Settings, name: str, value: Any) -> None:
    """Store the normalised form of a field while the frozen object is being built."""
    object.__setattr__(obj, name, value)


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else V.check_int(value, name, minimum=1)


class _StageSettings(Settings):
    """A stage's settings: the signature names and cache-key names of its fields."""

    def signature_fields(self) -> Mapping[str, Any]:
        """The fields the report's signature records, under the names it writes."""
        return MappingProxyType({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def cache_fields(self) -> Mapping[str, Any]:
        """The fields the cached scores depend on, under the names of the cache's keys."""
        return MappingProxyType({})


class GenerationSettings(_StageSettings):
    """What :func:`~jaxmetrics.evaluation.evaluate_generation` generates.

    Attributes:
      decodings: decoding names (:func:`~jaxmetrics.evaluation.parse_decoding`), kept in their
        canonical form: ``greedy``, ``sample``, ``top_p=0.9``, ``top_k=40``, ``temperature=0.9``,
        ``typical_p=0.95``, ``entmax=1.2`` or comma-joined combinations.
      seeds: sampling seeds; each stochastic setting runs once per seed (greedy once). Row ``i``
        of seed ``s`` samples with ``fold_in(key(s), i)``.
      max_new_tokens: tokens generated per prompt (human continuations are cut to as many);
        ``None``: ``min(128, positions − longest prompt)``.
      prompt_tokens: prompts keep their last ``prompt_tokens`` tokens; with the split protocol
        (``load_prompt_dataset(..., prompt_field=None)``) the prompt is the first
        ``prompt_tokens`` tokens of each human text (the MAUVE paper: 35).
      eos_token_id: stop token (``'default'``: the model config's; ``None``: never stop).
    """

    decodings: tuple[str, ...] = ("greedy", "sample", "top_p=0.9")
    seeds: tuple[int, ...] = (0, 1, 2)
    max_new_tokens: int | None = None
    prompt_tokens: int | None = None
    eos_token_id: int | str | None = "default"

    def __post_init__(self) -> None:
        from jaxmetrics.evaluation.generation import _check_decodings, _check_seeds

        _set(self, "decodings", tuple(d.name for d in _check_decodings(self.decodings)))
        _set(self, "seeds", _check_seeds(self.seeds))
        _set(self, "max_new_tokens", _optional_int(self.max_new_tokens, "max_new_tokens"))
        _set(self, "prompt_tokens", _optional_int(self.prompt_tokens, "prompt_tokens"))
        if self.eos_token_id not in ("default", None):
            _set(self, "eos_token_id", V.check_int(self.eos_token_id, "eos_token_id", minimum=0))
        super().__post_init__()

    def signature_fields(self) -> Mapping[str, Any]:
        """As the fields, with ``max_new_tokens:auto`` for ``None``."""
        return MappingProxyType(dict(super().signature_fields(),
                                     max_new_tokens="auto" if self.max_new_tokens is None else self.max_new_tokens))


class FeatureSettings(_StageSettings):
    """The texts the encoders see and how the MAUVE / ME-Petersen features are pooled.

    Attributes:
      pooling: ``'auto'`` (last token for a causal featurizer, as mauve-text; L2-normalised mean
        for an encoder, as sentence-transformers), or a name of
        :data:`~jaxmetrics.models.POOLINGS`: ``'last'``, ``'mean'`` (L2-normalised) or ``'cls'``.
      max_length: featurizer truncation in tokens (``None``: 1024 capped by its positions).
      include_prompt: the features, ME-Petersen, BERTScore / TWMD and the n-gram statistics see
        prompt + continuation (as the MAUVE experiments' full texts) or the continuation only.
    """

    pooling: str = "auto"
    max_length: int | None = None
    include_prompt: bool = True

    def __post_init__(self) -> None:
        from jaxmetrics.models.pooling import POOLINGS

        V.check_choice(self.pooling, "pooling", ("auto", *POOLINGS))
        _set(self, "max_length", _optional_int(self.max_length, "max_length"))
        _set(self, "include_prompt", _check_bool(self.include_prompt, "include_prompt"))
        super().__post_init__()

    def signature_fields(self) -> Mapping[str, Any]:
        """``pooling``, ``include_prompt``, ``featurize_max_length``."""
        return MappingProxyType({"pooling": self.pooling, "include_prompt": self.include_prompt,
                                 "featurize_max_length": self.max_length})

    def cache_fields(self) -> Mapping[str, Any]:
        """``include_prompt``, ``featurize_max_length`` (the pooling enters resolved)."""
        return MappingProxyType({"include_prompt": self.include_prompt, "featurize_max_length": self.max_length})


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
    return value


#: MAUVE's k-means seeds of a setting's first run, by default (mauve-text's ``seed=25`` and on).
DEFAULT_MAUVE_SEEDS = (25, 26, 27, 28, 29)


class MauveScoring(_StageSettings):
    """How the ``mauve`` and ``frontier_integral`` columns are computed
    (:func:`~jaxmetrics.mauve.compute_mauve_seeds` of each run's features against the human ones).

    Attributes:
      seeds: k-means seeds (or the density-ratio ``estimator``'s seeds) of a setting's first run:
        distinct non-negative integers. Run ``j`` shifts them by ``j`` times their span
        (``max - min + 1``), so runs never share a seed: the default ``(25, ..., 29)`` gives
        30..34 for the second run (:func:`~jaxmetrics.evaluation.scores.run_seeds`).
      scaling: MAUVE's scaling constant c (mauve-text's ``mauve_scaling_factor``).
      num_points: m, the points of the divergence curve (mauve-text's
        ``divergence_curve_discretization_size``).
      num_buckets: k, the k-means clusters (``'auto'``: the number of texts / 10);
        ``estimator='quantized'`` only.
      scoring: ``'mauve-text'`` or ``'paper'`` (the NeurIPS 2021 code's angular grid and
        unsymmetrised area; see :func:`~jaxmetrics.mauve.compute_mauve`).
      estimator: ``'quantized'`` (k-means histograms, mauve-text's numbers) or a density-ratio
        estimator, ``'knn'``, ``'classifier'`` or ``'gaussian'`` (``num_buckets`` and the k-means
        settings then do not apply).
      divergence: the f-divergence whose frontier MAUVE summarises: ``'kl'``, ``'chi2'``,
        ``'hellinger'``, ``'tv'``, ``'js'``; the frontier integral stays KL-based.
      kmeans_num_redo, kmeans_max_iter: as in :func:`~jaxmetrics.mauve.compute_mauve`.
    """

    seeds: tuple[int, ...] = DEFAULT_MAUVE_SEEDS
    scaling: float = 5.0
    num_points: int = 25
    num_buckets: int | str = "auto"
    scoring: str = "mauve-text"
    estimator: str = "quantized"
    divergence: str = "kl"
    kmeans_num_redo: int = 5
    kmeans_max_iter: int = 500

    def __post_init__(self) -> None:
        from jaxmetrics.mauve.frontier.estimators import available_estimators

        _set(self, "seeds", _check_kmeans_seeds(self.seeds))
        frontier = self.frontier  # c, m, scoring and divergence: checked where MAUVE checks them
        _set(self, "scaling", frontier.scaling)
        _set(self, "num_points", frontier.num_points)
        if self.num_buckets != "auto":
            _set(self, "num_buckets", V.check_int(self.num_buckets, "num_buckets", minimum=1))
        V.check_choice(self.estimator, "estimator", available_estimators())
        if self.estimator != "quantized" and self.num_buckets != "auto":
            raise ValueError(f"num_buckets: applies to estimator='quantized' only, not to "
                             f"estimator={self.estimator!r} (a density-ratio estimator has no buckets)")
        _set(self, "kmeans_num_redo", V.check_int(self.kmeans_num_redo, "kmeans_num_redo", minimum=1))
        _set(self, "kmeans_max_iter", V.check_int(self.kmeans_max_iter, "kmeans_max_iter", minimum=1))
        super().__post_init__()

    @property
    def frontier(self) -> Any:
        """MAUVE's c, m, divergence and scoring as the one :class:`~jaxmetrics.mauve.FrontierSettings`."""
        from jaxmetrics.mauve.frontier.settings import FrontierSettings

        return FrontierSettings(scaling=self.scaling, num_points=self.num_points, divergence=self.divergence,
                                scoring=self.scoring)

    def options(self) -> Mapping[str, Any]:
        """The keyword arguments of :func:`~jaxmetrics.mauve.compute_mauve_seeds` (all but ``seeds``):
        the frontier as one settings object, the k-means settings as the quantizer (histogram
        estimator only)."""
        from jaxmetrics.mauve.quantize.quantizers import KMeansQuantizer

        out = dict(num_buckets=self.num_buckets, estimator=self.estimator, frontier=self.frontier)
        if self.estimator == "quantized":
            out["quantizer"] = KMeansQuantizer("auto", num_redo=self.kmeans_num_redo, max_iter=self.kmeans_max_iter)
        return MappingProxyType(out)

    def signature_fields(self) -> Mapping[str, Any]:
        """``kmeans_seeds``, ``mauve_scaling``, ``mauve_num_points``, ``num_buckets``,
        ``mauve_scoring``, ``mauve_estimator``, ``mauve_divergence``, ``kmeans_num_redo``,
        ``kmeans_max_iter``."""
        return MappingProxyType({
            "kmeans_seeds": self.seeds, "mauve_scaling": self.scaling, "mauve_num_points": self.num_points,
            "num_buckets": self.num_buckets, "mauve_scoring": self.scoring, "mauve_estimator": self.estimator,
            "mauve_divergence": self.divergence, "kmeans_num_redo": self.kmeans_num_redo,
            "kmeans_max_iter": self.kmeans_max_iter})

    def cache_fields(self) -> Mapping[str, Any]:
        """The scores' key: the seeds as a count and a first seed (the list itself when they are
        not consecutive), and the settings that were not always options (estimator, divergence,
        c, m) only when they differ from their defaults, so default runs keep older caches' keys."""
        seeds = self.seeds
        out = {"mauve_seeds": len(seeds), "mauve_seed": seeds[0], "mauve_scoring": self.scoring,
               "num_buckets": self.num_buckets, "kmeans_num_redo": self.kmeans_num_redo,
               "kmeans_max_iter": self.kmeans_max_iter}
        if seeds != tuple(range(seeds[0], seeds[0] + len(seeds))):
            out["kmeans_seeds"] = list(seeds)
        if (self.estimator, self.divergence) != ("quantized", "kl"):
            out.update(mauve_estimator=self.estimator, mauve_divergence=self.divergence)
        if (self.scaling, self.num_points) != (5.0, 25):
            out.update(mauve_scaling=self.scaling, mauve_num_points=self.num_points)
        return MappingProxyType(out)


def _check_kmeans_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        first = DEFAULT_MAUVE_SEEDS[0]
        raise TypeError(f"seeds: expected a sequence of seeds such as (25, 26), got {type(seeds).__name__} {seeds!r} "
                        f"(m seeds from {first}: tuple(range({first}, {first} + m)))")
    out = tuple(V.check_int(x, "seeds", minimum=0) for x in seeds)
    if not out:
        raise ValueError("seeds: at least one k-means seed is needed")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds: repeated seeds {list(out)}")
    return out


class SimilarityScoring(_StageSettings):
    """How the ``bertscore_f1`` and ``twmd_f1`` columns are computed (token embeddings of the
    similarity model at its paper layer, special tokens dropped; TWMD batch-centred).

    Attributes:
      max_length: the similarity model's truncation (``None``: 512 capped by its positions).
        When the similarity model is the featurizer with mean pooling and the same length, one
        encoder pass serves both.
      temperature: TWMD's temperature.
    """

    max_length: int | None = None
    temperature: float = 0.1

    def __post_init__(self) -> None:
        _set(self, "max_length", _optional_int(self.max_length, "max_length"))
        _set(self, "temperature", V.check_positive(self.temperature, "temperature"))
        super().__post_init__()

    def signature_fields(self) -> Mapping[str, Any]:
        """``similarity_max_length``, ``twmd_temperature``."""
        return MappingProxyType({"similarity_max_length": self.max_length, "twmd_temperature": self.temperature})

    def cache_fields(self) -> Mapping[str, Any]:
        """As :meth:`signature_fields`."""
        return self.signature_fields()


class ScoringSettings(_StageSettings):
    """How every run is scored.

    Attributes:
      mauve: :class:`MauveScoring` (the ``mauve`` and ``frontier_integral`` columns).
      similarity: :class:`SimilarityScoring` (``bertscore_f1``, ``twmd_f1``).
      self_bleu_samples: hypotheses sampled for Self-BLEU-4.
      mark_evaluate: add the ME-Petersen column (k = 3).
      hf_perplexity: add the ``ppl_evaluate`` column (Hugging Face ``evaluate``'s per-text
        perplexity; one more forward pass per run).
    """

    mauve: MauveScoring = MauveScoring()
    similarity: SimilarityScoring = SimilarityScoring()
    self_bleu_samples: int = 500
    mark_evaluate: bool = True
    hf_perplexity: bool = False

    def __post_init__(self) -> None:
        for name, cls in (("mauve", MauveScoring), ("similarity", SimilarityScoring)):
            if not isinstance(getattr(self, name), cls):
                raise TypeError(f"{name}: expected a {cls.__name__}, got {type(getattr(self, name)).__name__}")
        _set(self, "self_bleu_samples", V.check_int(self.self_bleu_samples, "self_bleu_samples", minimum=1))
        _set(self, "mark_evaluate", _check_bool(self.mark_evaluate, "mark_evaluate"))
        _set(self, "hf_perplexity", _check_bool(self.hf_perplexity, "hf_perplexity"))
        super().__post_init__()

    def signature_fields(self) -> Mapping[str, Any]:
        """MAUVE's and the similarity's fields, then ``self_bleu_samples``, ``mark_evaluate``,
        ``hf_perplexity``."""
        return MappingProxyType({**self.mauve.signature_fields(), **self.similarity.signature_fields(),
                                 "self_bleu_samples": self.self_bleu_samples, "mark_evaluate": self.mark_evaluate,
                                 "hf_perplexity": self.hf_perplexity})

    def cache_fields(self) -> Mapping[str, Any]:
        """MAUVE's and the similarity's cache fields and the other three."""
        return MappingProxyType({**self.mauve.cache_fields(), **self.similarity.cache_fields(),
                                 "self_bleu_samples": self.self_bleu_samples, "mark_evaluate": self.mark_evaluate,
                                 "hf_perplexity": self.hf_perplexity})
