"""Progress reporting: one bar on a terminal, plain periodic lines in a log, nothing when off.

Every long loop of the library (featurization, generation, scoring, sweeps, perplexity) reports
through :func:`progress_bar`, on stderr (stdout carries only results):

* stderr is a terminal: a tqdm bar, erased when done;
* stderr is a file or a pipe (a log, CI, ``2> run.log``): no carriage-return redraws, which would
  flood the log, but one plain line at most every :data:`LOG_INTERVAL` seconds and one when the
  loop ends (unless the last periodic line already showed the final count), e.g.
  ``jaxmetrics: featurize: 1200/4000 texts (30%, 12 s)``, ``jaxmetrics: perplexity: 3/8 batches (38%, 2 s)``;
* ``enabled=False`` (``--quiet`` on the command line): nothing.

Examples:
    >>> with progress_bar(3, desc="demo", unit="item", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    >>> bar.n
    3
"""
from __future__ import annotations

import sys
import time

__all__ = ["LOG_INTERVAL", "progress_bar"]

#: seconds between two plain progress lines when stderr is not a terminal
LOG_INTERVAL = 10.0


class _Lines:
    """Plain progress lines for logs (the tqdm methods the library uses: update, set_postfix_str,
    close, context manager)."""

    def __init__(self, total: int | None, desc: str, unit: str, *, enabled: bool, stream=None):
        self.total, self.desc, self.unit, self.enabled = total, desc, unit, enabled
        self.n = 0
        self.stream = stream
        self._postfix = ""
        self._start = self._last = time.monotonic()
        self._closed = False
        self._written = -1   # the count the last line showed: close() does not repeat it

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.enabled and time.monotonic() - self._last >= LOG_INTERVAL:
            self._write()

    def set_postfix_str(self, s: str) -> None:
        self._postfix = str(s)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.enabled and self.n and self.n != self._written:
                self._write()

    def _write(self) -> None:
        self._last = time.monotonic()
        self._written = self.n
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        pct = f"{100 * self.n / self.total:.0f}%, " if self.total else ""
        extra = f" [{self._postfix}]" if self._postfix else ""
        stream = self.stream or sys.stderr
        print(f"jaxmetrics: {self.desc}: {done} {plural(self.unit, self.total or self.n)} ({pct}{self._last - self._start:.0f} s){extra}",
              file=stream, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def plural(unit: str, n: int) -> str:
    """``unit`` for ``n`` of them: ``text`` / ``texts``, ``batch`` / ``batches``, ``run`` / ``runs``.

    Examples:
        >>> [plural(u, 2) for u in ("text", "batch", "prompt", "pass", "box")], plural("batch", 1)
        (['texts', 'batches', 'prompts', 'passes', 'boxes'], 'batch')
    """
    if n == 1:
        return unit
    return unit + ("es" if unit.endswith(("s", "x", "z", "ch", "sh")) else "s")


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_bar(total: int | None, *, desc: str, unit: str = "it", enabled: bool = True, leave: bool = False):
    """A progress reporter for a loop of ``total`` steps (see the module docstring for what it
    shows where). Use ``bar.update(n)`` per step and ``bar.close()`` (or ``with``) at the end.

    Args:
      total: number of steps (``None`` when unknown).
      desc: what the loop does (``"featurize"``, ``"perplexity"``, ...).
      unit: the name of one step (``"text"``, ``"batch"``, ...).
      enabled: ``False`` shows nothing.
      leave: keep the terminal bar on screen when done.
    """
    if enabled and _is_terminal(sys.stderr):
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr)
    return _Lines(total, desc, unit, enabled=enabled)
