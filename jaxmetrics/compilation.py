"""A persistent XLA compilation cache, so a new process does not compile again what an
earlier one compiled.

Every jaxmetrics pipeline compiles one program per input shape (length bucket, batch rows,
pair chunk) on its first call in a process: tens of seconds for an encoder over a corpus with
many length buckets, paid again by every new script or command. With the cache on, compiled
programs are written to disk and later processes load them instead of compiling (same JAX
version, same backend, same program and options; anything else compiles afresh).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_compilation_cache_dir", "enable_compilation_cache"]

#: Environment variable naming the cache directory (read by :func:`default_compilation_cache_dir`
#: and by the ``jaxmetrics`` command line, which turns the cache on when it is set).
ENV_VAR = "JAXMETRICS_COMPILATION_CACHE"


def default_compilation_cache_dir() -> Path:
    """``$JAXMETRICS_COMPILATION_CACHE`` if set, else ``$XDG_CACHE_HOME/jaxmetrics/xla`` (``XDG_CACHE_HOME``
    defaults to ``~/.cache``).

    Examples:
      >>> default_compilation_cache_dir().name in ("xla", os.path.basename(os.environ.get(ENV_VAR, "")))
      True
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxmetrics" / "xla"


def enable_compilation_cache(directory: str | os.PathLike | None = None) -> Path:
    """Turn on JAX's persistent compilation cache in ``directory`` for this process.

    Sets ``jax_compilation_cache_dir`` and caches every compiled program, however quick its
    compilation (``jax_persistent_cache_min_compile_time_secs = 0``: jaxmetrics compiles many
    programs of a second or less each, one per shape, which JAX's default threshold of one
    second would not keep). Programs compiled earlier in the process are not written;
    call this before the first metric.

    The cache is trusted code: do not point it at a directory others can write to.

    Args:
      directory: where to keep compiled programs (created if missing); ``None`` →
        :func:`default_compilation_cache_dir`.

    Returns:
      The directory, as an absolute :class:`~pathlib.Path`.

    Examples (not run by the doctests: the setting lasts for the whole process):
      >>> import jax, jax.numpy as jnp
      >>> d = enable_compilation_cache("/tmp/jaxmetrics-xla")  # doctest: +SKIP
      >>> _ = jax.jit(lambda x: jnp.cos(x) * 3.0)(jnp.ones(5))  # doctest: +SKIP
      >>> any(d.iterdir())  # a compiled program was written  # doctest: +SKIP
      True
    """
    import jax

    path = default_compilation_cache_dir() if directory is None else Path(os.fspath(directory)).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"directory: {os.fspath(path)!r} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"directory: cannot create {os.fspath(path)!r}: {e.strerror}") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"directory: {os.fspath(path)!r} is not writable")
    path = path.resolve()
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path
