"""``FrontierSettings``: the settings of MAUVE's divergence frontier, validated once.

The constant ``c`` (``scaling``), the number of interior points ``m`` (``num_points``), the
f-divergence whose frontier is summarised (``divergence``) and the grid of mixture weights
(``scoring``) travel together through every MAUVE function: each public function builds one
:class:`FrontierSettings` at its boundary (from ``frontier=`` or from its keyword arguments) and
passes only the object down. Its checks are the only checks of ``c`` and ``m`` in the package.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import is_concrete
from jaxmetrics.settings import Settings

__all__ = ["DIVERGENCES", "SCORINGS", "FrontierSettings", "MAUVE_TEXT_NAMES", "MIN_NUM_POINTS", "MIN_SCALING",
           "check_frontier"]

#: Divergence names of the f-divergence frontiers (``'kl'``: MAUVE as published).
DIVERGENCES = ("kl", "chi2", "hellinger", "tv", "js")
#: Scorings of the divergence curve: mauve-text >= 0.2 (default) and the NeurIPS 2021 paper's code.
SCORINGS = ("mauve-text", "paper")

#: How compute_mauve (mauve-text's signature) names the frontier's settings; also the names the
#: result signatures record, so that a signature stays the one mauve-text users know.
MAUVE_TEXT_NAMES = {"scaling": "mauve_scaling_factor", "num_points": "divergence_curve_discretization_size"}


#: The smallest c: below 1 the MAUVE of two distributions with disjoint supports, the floor of the
#: scale, is ``1 / C(2c, c) > 1/2`` (the curve ``((1 - w)^c, w^c)``: 0.986 at c = 0.1, 1/2 at c = 1,
#: 0.004 at mauve-text's 5), so unrelated texts would score like similar ones.
MIN_SCALING = 1.0
#: The fewest interior points of the curve: with 1 or 2 the grid (``linspace(1e-6, 1 - 1e-6, m)``, or
#: the paper's angular grid) holds only weights next to the end points, the curve is the two end
#: segments and disjoint distributions score 1/2 instead of ~0.
MIN_NUM_POINTS = 3


def _disjoint_mauve(c: float) -> float:
    """MAUVE of two distributions with disjoint supports at constant ``c``: ``Gamma(c+1)^2 / Gamma(2c+1)``."""
    from math import exp, lgamma

    return exp(2 * lgamma(c + 1.0) - lgamma(2 * c + 1.0))


class FrontierSettings(Settings):
    """How a MAUVE divergence frontier is drawn and scored.

    Attributes:
      scaling: the constant ``c >= 1`` of ``exp(-c KL)`` (mauve-text's ``mauve_scaling_factor``;
        :data:`MIN_SCALING`: below 1, texts with nothing in common score above 1/2).
      num_points: ``m >= 3``, the interior mixture weights of the curve (mauve-text's
        ``divergence_curve_discretization_size``); the curve has ``m + 2`` points
        (:data:`MIN_NUM_POINTS`: with 1 or 2 the curve is its two end segments).
      divergence: the f-divergence of the frontier (:data:`~jaxmetrics.mauve.frontier.divergences.DIVERGENCES`,
        default ``'kl'``, MAUVE as published); frontier integrals stay KL-based.
      scoring: ``'mauve-text'`` (uniform grid of weights, default) or ``'paper'`` (the NeurIPS 2021
        code's angular grid).

    Examples:
      >>> from jaxmetrics.mauve import FrontierSettings
      >>> FrontierSettings()
      FrontierSettings(scaling=5.0, num_points=25, divergence='kl', scoring='mauve-text')
      >>> FrontierSettings(scaling=0)
      Traceback (most recent call last):
      ...
      ValueError: scaling: must be finite and > 0, got 0
      >>> FrontierSettings(num_points=2)  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      ValueError: num_points: must be at least 3, got 2: ...
      >>> FrontierSettings.resolve(None, names={"scaling": "mauve_scaling_factor"}, scaling=-1.0)
      Traceback (most recent call last):
      ...
      ValueError: mauve_scaling_factor: must be finite and > 0, got -1.0
    """

    scaling: float = 5.0
    num_points: int = 25
    divergence: str = "kl"
    scoring: str = "mauve-text"

    def check(self) -> None:
        c = V.check_positive(self.scaling, "scaling")
        if c < MIN_SCALING:
            raise ValueError(f"scaling: must be at least {MIN_SCALING:g}, got {self.scaling!r}: below it two texts with "
                             f"nothing in common score above 1/2 (1/C(2c, c): {_disjoint_mauve(c):.3f} at c = {c:g}), "
                             "so the scale no longer tells unrelated texts from similar ones")
        object.__setattr__(self, "scaling", c)
        m = V.check_int(self.num_points, "num_points")
        if m < MIN_NUM_POINTS:
            raise ValueError(f"num_points: must be at least {MIN_NUM_POINTS}, got {m}: with {m} the mixture grid holds "
                             "only weights next to the end points (1e-6, 1 - 1e-6), the curve is its two end "
                             "segments and two texts with nothing in common score 1/2")
        object.__setattr__(self, "num_points", m)
        V.check_choice(self.divergence, "divergence", DIVERGENCES)
        V.check_choice(self.scoring, "scoring", SCORINGS)

    @classmethod
    def resolve(cls, frontier: "FrontierSettings | None" = None, *, names: Mapping[str, str] | None = None,
                none_is_default: bool = True, **values: Any) -> "FrontierSettings":
        """The settings of a public function: ``frontier`` as given, or built from the function's
        keyword arguments ``values`` (``None`` means the default, unless ``none_is_default=False``:
        a function whose arguments have real defaults). ``names`` maps a field to the argument the
        user passed (``{'scaling': 'mauve_scaling_factor'}``), so that an error names it.

        Examples:
          >>> from jaxmetrics.mauve import FrontierSettings
          >>> FrontierSettings.resolve(None, scaling=2.0, num_points=None)
          FrontierSettings(scaling=2.0, num_points=25, divergence='kl', scoring='mauve-text')
        """
        names = dict(names or {})
        given = {k: v for k, v in values.items() if v is not None or not none_is_default}
        if frontier is not None:
            if not isinstance(frontier, cls):
                raise TypeError(f"frontier: expected a {cls.__name__}, got {type(frontier).__name__}")
            if given:
                both = ", ".join(names.get(k, k) for k in given)
                raise ValueError(f"frontier: give the frontier's settings either as frontier= or as {both}, not both")
            return frontier
        try:
            return cls(**given)
        except (TypeError, ValueError) as e:
            field, sep, rest = str(e).partition(":")
            if sep and field in names:
                raise type(e)(f"{names[field]}:{rest}") from None
            raise

    def signature_fields(self) -> dict[str, Any]:
        """The entries of a MAUVE signature, under the names MAUVE signatures have always used
        (``mauve_scaling_factor``, ``divergence_curve_discretization_size``, ``scoring``;
        ``divergence`` only when it is not ``'kl'``)."""
        out: dict[str, Any] = {MAUVE_TEXT_NAMES["scaling"]: float(self.scaling),
                               MAUVE_TEXT_NAMES["num_points"]: int(self.num_points), "scoring": self.scoring}
        if self.divergence != "kl":
            out["divergence"] = self.divergence
        return out

    def _kwargs(self) -> dict[str, Any]:
        """``scaling``, ``num_points`` and ``scoring`` as the histogram kernels take them."""
        return dict(scaling=float(self.scaling), num_points=int(self.num_points), scoring=self.scoring)


def check_frontier(scaling: Any, num_points: Any, *, scoring: Any = "mauve-text",
                   divergence: Any = "kl") -> FrontierSettings:
    """The checks of an array kernel's ``c`` and ``m`` (and scoring, divergence): those of
    :class:`FrontierSettings`. A kernel's ``c`` may be traced (differentiable MAUVE): it is checked
    where it is concrete; the kernel computes with the value it was given.

    Examples:
      >>> from jaxmetrics.mauve.frontier.settings import check_frontier
      >>> check_frontier(2.0, 10).num_points
      10
    """
    concrete = is_concrete(scaling) and np.ndim(scaling) == 0
    return FrontierSettings(scaling=scaling if concrete else 5.0, num_points=num_points, divergence=divergence,
                            scoring=scoring)
