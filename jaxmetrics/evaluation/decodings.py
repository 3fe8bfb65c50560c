"""Decoding settings by name: ``greedy``, ``sample``, ``top_p=0.9``, ``top_k=40``,
``temperature=0.9``, ``typical_p=0.95``, ``entmax=1.2``, or a comma-joined combination such as
``top_k=40,temperature=0.7``.

Each parses to a :class:`Decoding` with the keyword arguments of
:func:`jaxmetrics.lm.generate` and a canonical name (keys sorted, numbers normalised), so
``"temperature=0.70,top_k=40"`` and ``"top_k=40,temperature=0.7"`` are the same setting and
share their cached generations.
"""
from __future__ import annotations

from dataclasses import field

from jaxmetrics.results import Result, static_field

__all__ = ["Decoding", "parse_decoding"]

# name -> (generate keyword, type, check)
_PARAMS = {
    "top_p": ("top_p", float, lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    "top_k": ("top_k", int, lambda v: v >= 1, "an integer >= 1"),
    "temperature": ("temperature", float, lambda v: v > 0.0, "> 0"),
    "typical_p": ("typical_p", float, lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    "entmax": ("entmax_alpha", float, lambda v: v >= 1.0, ">= 1 (1 = softmax, 2 = sparsemax)"),
}
_ALIASES = {"sample": "sample", "pure": "sample", "ancestral": "sample", "greedy": "greedy"}


class Decoding(Result):
    """One decoding setting.

    Attributes:
      name: canonical name (``'greedy'``, ``'sample'`` or sorted ``key=value`` pairs).
      kwargs: keyword arguments of :func:`jaxmetrics.lm.generate`.
      stochastic: False for greedy decoding (one run whatever the number of seeds).
    """

    name: str = static_field()
    kwargs: dict = field(default_factory=dict)
    stochastic: bool = static_field(default=True)


def _fmt(v) -> str:
    return str(int(v)) if isinstance(v, int) else repr(float(v))


def parse_decoding(spec: str) -> Decoding:
    """Parse one decoding name (see the module docstring).

    Examples:
      >>> parse_decoding("greedy")
      Decoding(name='greedy', kwargs={'greedy': True}, stochastic=False)
      >>> parse_decoding("temperature=0.70,top_k=40").name
      'temperature=0.7,top_k=40'
      >>> parse_decoding("entmax=1.2").kwargs
      {'entmax_alpha': 1.2}
      >>> parse_decoding("beam=4")
      Traceback (most recent call last):
      ...
      ValueError: decodings: unknown setting 'beam' in 'beam=4'; known: greedy, sample, top_p=P, top_k=K, temperature=T, typical_p=P, entmax=ALPHA
    """
    known = "greedy, sample, top_p=P, top_k=K, temperature=T, typical_p=P, entmax=ALPHA"
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"decodings: expected a non-empty decoding name such as 'top_p=0.9', got {spec!r}")
    s = spec.strip().lower().replace(" ", "")
    if s in _ALIASES:
        alias = _ALIASES[s]
        return Decoding("greedy", {"greedy": True}, False) if alias == "greedy" else Decoding("sample", {}, True)
    values: dict[str, float | int] = {}
    for part in s.split(","):
        if "=" not in part:
            raise ValueError(f"decodings: unknown setting {part!r} in {spec!r}; known: {known}")
        k, _, v = part.partition("=")
        if k not in _PARAMS:
            raise ValueError(f"decodings: unknown setting {k!r} in {spec!r}; known: {known}")
        if k in values:
            raise ValueError(f"decodings: {k!r} given twice in {spec!r}")
        _, typ, ok, what = _PARAMS[k]
        try:
            num = typ(v) if typ is float else int(v)
        except ValueError:
            raise ValueError(f"decodings: {k} in {spec!r} must be {what}, got {v!r}") from None
        if not ok(num):
            raise ValueError(f"decodings: {k} in {spec!r} must be {what}, got {v!r}")
        values[k] = num
    if "entmax" in values and ({"top_p", "top_k", "typical_p"} & set(values)):
        raise ValueError(f"decodings: entmax in {spec!r} cannot be combined with top_p, top_k or typical_p "
                         "(entmax already truncates the distribution)")
    name = ",".join(f"{k}={_fmt(values[k])}" for k in sorted(values))
    kwargs = {_PARAMS[k][0]: values[k] for k in sorted(values)}
    return Decoding(name, kwargs, True)
