"""Settings objects: the settings that travel together, validated once, hashed once.

A metric's settings (a MAUVE frontier's c and m, a similarity's layer and temperature, one stage
of a generation evaluation) are declared once as a subclass of :class:`Settings`, built at the
public boundary and passed down whole. A subclass is declared like a dataclass; :class:`Settings`
turns it into

* a **frozen, hashable dataclass** (so it can be a static argument of ``jax.jit`` and a
  dictionary key), compared by value;
* **validated when built**: ``__post_init__`` calls :meth:`Settings.check`, which a subclass
  overrides to raise ``ValueError`` / ``TypeError`` naming the argument;
* with :meth:`Settings.to_dict` (JSON), :meth:`Settings.fingerprint` (a short hash of every
  field, for cache keys) and :meth:`Settings.signature_fields` (the fields a result's signature
  records, by default all of them).

Examples:
    >>> from jaxmetrics.settings import Settings
    >>> class Demo(Settings):
    ...     scaling: float = 5.0
    ...     num_points: int = 25
    ...     def check(self):
    ...         if not self.scaling > 0:
    ...             raise ValueError(f"scaling must be > 0, got {self.scaling}")
    >>> Demo()
    Demo(scaling=5.0, num_points=25)
    >>> Demo() == Demo(5.0, 25) and hash(Demo()) == hash(Demo(5.0, 25))
    True
    >>> Demo().replace(num_points=50).to_dict()
    {'scaling': 5.0, 'num_points': 50}
    >>> len(Demo().fingerprint())
    16
    >>> Demo(scaling=0)
    Traceback (most recent call last):
    ...
    ValueError: scaling must be > 0, got 0
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

__all__ = ["Settings"]


def _plain(v: Any) -> Any:
    if isinstance(v, Settings):
        return v.to_dict()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    name = getattr(v, "name", None) or getattr(v, "__name__", None)  # dtypes, callables
    return str(name) if name is not None else repr(v)


class Settings:
    """Base class of every settings object: a frozen, hashable, validated dataclass."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True, eq=True)(cls)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``ValueError`` / ``TypeError`` naming the argument if a field is out of range."""

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python, ready for JSON (nested settings become dicts)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def signature_fields(self) -> dict[str, Any]:
        """The fields a result's signature records (``make_signature(..., **fields)``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def fingerprint(self) -> str:
        """16 hex digits of SHA-256 over the class name and every field: equal settings, equal
        fingerprints, in any process (a cache key)."""
        text = json.dumps([type(self).__name__, self.to_dict()], sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def replace(self, **changes: Any) -> "Settings":
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)
