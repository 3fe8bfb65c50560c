"""How many points a MAUVE needs: the number of buckets, its minimums and the few-points warning.

MAUVE compares two histograms over ``k`` buckets fitted on ``[Q; P]``. Two minimums follow from
the estimator itself; below them the number says nothing about the texts, so they raise a
``ValueError`` naming the argument:

* **at least 2 buckets** (:data:`MIN_NUM_BUCKETS`): with one bucket both histograms are ``[1]``
  and MAUVE is 1 whatever the texts.
* **at least as many points as buckets on each side**: k-means leaves no bucket empty, so a
  side with ``n < k`` points has at least ``k - n`` buckets that hold only the other side's
  points, and MAUVE is below 1 even for two samples of the same text -- the value then measures
  the sample size. With mauve-text's ``'auto'`` rule (``k = max(2, round(n / 10))``) this is 2
  points per side: MAUVE of one text against one text is refused.

Above them a MAUVE can still rest on too few points per bucket: it is biased downwards and
scatters from seed to seed. :func:`resolve_num_buckets` warns (``UserWarning``, one line) when the
smaller side holds fewer than :data:`MIN_POINTS_PER_BUCKET` points per bucket, i.e.
``min(n_p, n_q) / k < 7.5``. mauve-text's ``'auto'`` rule puts about 10 points of the smaller side
in a bucket, so it warns exactly where its floor of 2 buckets takes over: fewer than 15 points
on a side. The warning quotes the spread measured on real text (:data:`MEASURED_SPREAD`).

Examples:
    >>> from jaxmetrics.mauve.sizes import auto_num_buckets, resolve_num_buckets
    >>> auto_num_buckets(1000, 5000), resolve_num_buckets("auto", (200, 300))
    (100, 20)
    >>> resolve_num_buckets(1, (100, 100))
    Traceback (most recent call last):
    ...
    ValueError: num_buckets: MAUVE needs at least 2 buckets (with 1 both histograms are [1] and MAUVE is 1 whatever the texts), got 1
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Sequence

from jaxmetrics import _validation as V

__all__ = [
    "MEASURED_SPREAD",
    "MIN_NUM_BUCKETS",
    "MIN_POINTS_PER_BUCKET",
    "auto_num_buckets",
    "bucket_size",
    "check_num_buckets",
    "check_sample_sizes",
    "default_sample_sizes",
    "few_points_message",
    "resolve_num_buckets",
]

#: The fewest buckets a MAUVE can have (one bucket makes MAUVE 1 for any inputs).
MIN_NUM_BUCKETS = 2

#: Below this many points of the smaller side per bucket a MAUVE warns (mauve-text's ``'auto'``
#: rule gives about 10; at 5 the bias and the seed spread are several tenths, see
#: :data:`MEASURED_SPREAD`).
MIN_POINTS_PER_BUCKET = 7.5

#: MAUVE of two samples of the same text, mean ± s.d. over 20 draws (each with its own k-means
#: seed): all-MiniLM-L6-v2 mean-pooled features of sentences of the bundled held-out Shakespeare
#: text (8-30 words), P and Q disjoint random samples of n sentences each. The ideal value is 1.
#: Reproduced by ``tests/mauve/test_mauve_sizes.py::test_measured_spread_matches_the_quoted_figures``
#: (slow). ``(n per side, buckets): (mean, s.d.)``.
MEASURED_SPREAD = {
    (5, 2): (0.710, 0.293),
    (10, 2): (0.913, 0.168),
    (100, 40): (0.615, 0.100),
    (100, 10): (0.974, 0.024),
}


def bucket_size(n: int) -> int:
    """The size a MAUVE computation is compiled for when it holds ``n`` rows or ``n`` clusters.

    ``n`` itself up to 32, then sixteen sizes per octave (``n`` rounded up to a multiple of
    ``2**(bit_length(n - 1) - 5)``): padding adds less than 1/16 (about 3 % on average) of
    rows or cluster slots, and every sample size of a session within the same sixteenth of an
    octave reuses one compiled k-means, PCA and histogram program (masked padding rows and
    inactive slots change nothing: the k-means draws its random stream over the valid rows).

    Examples:
      >>> from jaxmetrics.mauve.sizes import bucket_size
      >>> [bucket_size(n) for n in (10, 32, 33, 500, 4987, 5000, 10000)]
      [10, 32, 34, 512, 5120, 5120, 10240]
    """
    n = V.check_int(n, "n", minimum=1)
    step = 1 << max(0, (n - 1).bit_length() - 5)
    return -(-n // step) * step


def auto_num_buckets(*sizes: int) -> int:
    """mauve-text's ``'auto'`` rule: ``max(2, round(min(sizes) / 10))`` (Python rounding).

    Examples:
      >>> from jaxmetrics.mauve.pipeline.compute import auto_num_buckets
      >>> auto_num_buckets(1000, 5000), auto_num_buckets(15, 15), auto_num_buckets(25, 30)
      (100, 2, 2)
    """
    return max(MIN_NUM_BUCKETS, int(round(min(sizes) / 10)))


def few_points_message(smallest: int, k: int, name: str = "num_buckets") -> str | None:
    """The one-line warning for ``k`` buckets when the smaller side has ``smallest`` points, or
    ``None`` when it has at least :data:`MIN_POINTS_PER_BUCKET` per bucket.

    Examples:
      >>> few_points_message(1000, 100) is None
      True
      >>> few_points_message(5, 2)[:60]
      'num_buckets: 2 buckets but one side has only 5 points (2.5 p'
    """
    if smallest >= MIN_POINTS_PER_BUCKET * k:
        return None
    m = MEASURED_SPREAD
    return (f"{name}: {k} buckets but one side has only {smallest} points ({smallest / k:.1f} per bucket; "
            f"below {MIN_POINTS_PER_BUCKET:g} MAUVE is biased low and scatters): two samples of the same "
            f"sentences (MiniLM, demo text; ideal 1) scored {m[(5, 2)][0]:.2f} ± {m[(5, 2)][1]:.2f} at 5 vs 5, "
            f"{m[(10, 2)][0]:.2f} ± {m[(10, 2)][1]:.2f} at 10 vs 10 and {m[(100, 40)][0]:.2f} ± "
            f"{m[(100, 40)][1]:.2f} at 100 vs 100 with 40 buckets, against {m[(100, 10)][0]:.2f} ± "
            f"{m[(100, 10)][1]:.2f} with mauve-text's 10 (mean ± s.d., 20 draws); use more texts or fewer buckets")


def check_num_buckets(k: Any, name: str = "num_buckets") -> int:
    """An integer number of buckets ``k >= MIN_NUM_BUCKETS``, or a ``ValueError`` naming ``name``
    (with one bucket both histograms are ``[1]`` and MAUVE is 1 whatever the texts).

    Examples:
      >>> check_num_buckets(2)
      2
      >>> check_num_buckets(1, "num_bins")
      Traceback (most recent call last):
      ...
      ValueError: num_bins: MAUVE needs at least 2 buckets (with 1 both histograms are [1] and MAUVE is 1 whatever the texts), got 1
    """
    k = V.check_int(k, name)
    if k < MIN_NUM_BUCKETS:
        raise ValueError(f"{name}: MAUVE needs at least {MIN_NUM_BUCKETS} buckets (with 1 both histograms "
                         f"are [1] and MAUVE is 1 whatever the texts), got {k}")
    return k


def check_sample_sizes(sizes: Sequence[int], k: int, names: Sequence[str] | None = None, *,
                       blame_buckets: bool = False) -> None:
    """Raise ``ValueError`` below MAUVE's minimum sizes: ``k >= 2`` and every set at least ``k``
    points (see the module docstring); the error names the set, ``names[i]`` (default
    ``p_features``, ``q_features`` for two sets, else ``sets[i]``), or with ``blame_buckets`` (``k``
    was given explicitly) ``num_buckets``.

    Examples:
      >>> check_sample_sizes((1, 1), 2)
      Traceback (most recent call last):
      ...
      ValueError: p_features: 1 point(s) for 2 buckets; MAUVE needs at least as many points as buckets on each side (num_buckets='auto' needs 2): with fewer, buckets hold the other side's points only and MAUVE is below 1 even for identical texts
    """
    check_num_buckets(k)
    if names is None:
        names = ("p_features", "q_features") if len(sizes) == 2 else [f"sets[{i}]" for i in range(len(sizes))]
    for n, name in zip(sizes, names):
        if int(n) < k and blame_buckets:
            raise ValueError(f"num_buckets: {k} buckets but {name} has only {int(n)} point(s); MAUVE needs at "
                             f"least as many points as buckets on each side: with fewer, buckets hold the other "
                             f"side's points only and MAUVE is below 1 even for identical texts")
        if int(n) < k:
            raise ValueError(f"{name}: {int(n)} point(s) for {k} buckets; MAUVE needs at least as many points as "
                             f"buckets on each side (num_buckets='auto' needs {MIN_NUM_BUCKETS}): with fewer, "
                             f"buckets hold the other side's points only and MAUVE is below 1 even for "
                             f"identical texts")


def resolve_num_buckets(num_buckets: Any, sizes: Sequence[int], names: Sequence[str] | None = None, *,
                        warn: bool = True) -> int:
    """The number of k-means buckets for sets of ``sizes`` rows: ``'auto'`` is
    :func:`auto_num_buckets`, an integer is checked; then :func:`check_sample_sizes` (``k >= 2``,
    every set at least ``k`` rows, else ``ValueError``) and, with ``warn``, a ``UserWarning``
    naming ``num_buckets`` when the smallest set has fewer than :data:`MIN_POINTS_PER_BUCKET`
    rows per bucket (:func:`few_points_message`).

    Examples:
      >>> resolve_num_buckets("auto", (1000, 5000)), resolve_num_buckets(20, (150, 150))
      (100, 20)
    """
    if isinstance(num_buckets, str):
        if num_buckets != "auto":
            raise ValueError(f"num_buckets: expected 'auto' or an integer, got {num_buckets!r}")
        k = auto_num_buckets(*sizes)
    else:
        k = V.check_int(num_buckets, "num_buckets")
    check_sample_sizes(sizes, k, names, blame_buckets=not isinstance(num_buckets, str))
    msg = few_points_message(min(int(n) for n in sizes), k) if warn else None
    if msg:
        _warn_at_caller(msg)
    return k


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn_at_caller(message: str, category: type = UserWarning) -> None:
    """``warnings.warn`` (of ``category``) attributed to the first frame outside jaxmetrics (the user's call)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def default_sample_sizes(n_min: int) -> tuple[int, ...]:
    """The sample sizes ``mauve_sweep(over="n")`` sweeps when no ``values`` are given: ``n_min / 8,
    / 4, / 2`` and ``n_min`` (each at least 20, or ``n_min`` when smaller), for the smallest set's
    ``n_min`` rows.

    Examples:
      >>> from jaxmetrics.mauve.sizes import default_sample_sizes
      >>> default_sample_sizes(1000), default_sample_sizes(100), default_sample_sizes(12)
      ((125, 250, 500, 1000), (20, 25, 50, 100), (12,))
    """
    n_min = V.check_int(n_min, "n_min", minimum=1)
    return tuple(sorted({max(min(20, n_min), n_min // d) for d in (8, 4, 2, 1)}))
