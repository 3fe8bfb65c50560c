"""A persistent XLA compilation cache, on by default, so a new process does not compile again
what an earlier one compiled.

Every jaxmetrics pipeline compiles one program per input shape (length bucket, batch rows,
pair chunk, sample-size bucket) on its first call in a process: seconds for MAUVE, tens of
seconds for an encoder over a corpus with many length buckets, paid again by every new script
or command. With the cache on, compiled programs are written to disk and later processes load
them instead of compiling (same JAX version, backend, flags, program and options; anything
else compiles afresh).

The default: the first import of a jaxmetrics module that uses JAX turns the cache on in
:func:`default_compilation_cache_dir` (``$XDG_CACHE_HOME/jaxmetrics/xla``), unless

* ``JAXMETRICS_COMPILATION_CACHE=off`` (the environment variable may also name another
  folder; the command line's ``--compilation-cache DIR|off`` does the same per run);
* JAX's own cache is already set up (``jax_compilation_cache_dir`` set, by the user or
  ``JAX_COMPILATION_CACHE_DIR``) or turned off (``jax_enable_compilation_cache=False``):
  jaxmetrics leaves it as it is;
* the folder cannot be created or written, or its disk has less than
  :data:`MIN_FREE_BYTES` free: then one warning says so and the process runs without a cache.

JAX keeps every program it writes (no size cap: JAX's size-capped cache scans the whole folder
on every write, which costs more than it saves for jaxmetrics' many small programs); delete the
folder to reclaim the space. The cache is trusted code: never point it at a folder others can
write to.
"""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

__all__ = [
    "apply_default_compilation_cache",
    "cache_turned_off",
    "default_compilation_cache_dir",
    "disable_compilation_cache",
    "enable_compilation_cache",
]

#: Environment variable naming the cache folder, or ``off`` (also ``0``, ``false``, ``no``,
#: ``none``) to run without the default cache.
ENV_VAR = "JAXMETRICS_COMPILATION_CACHE"
OFF_VALUES = ("off", "0", "false", "no", "none")
#: Below this much free space on the cache's disk the default cache stays off (one warning).
MIN_FREE_BYTES = 256 * 2**20


def cache_turned_off(value: str | None) -> bool:
    """Whether an ``--compilation-cache`` / ``$JAXMETRICS_COMPILATION_CACHE`` value means "off".

    Examples:
      >>> cache_turned_off("off"), cache_turned_off("OFF"), cache_turned_off("/tmp/xla"), cache_turned_off(None)
      (True, True, False, False)
    """
    return value is not None and value.strip().lower() in OFF_VALUES


def default_compilation_cache_dir() -> Path:
    """``$JAXMETRICS_COMPILATION_CACHE`` if it names a folder, else
    ``$XDG_CACHE_HOME/jaxmetrics/xla`` (``XDG_CACHE_HOME`` defaults to ``~/.cache``).

    Examples:
      >>> default_compilation_cache_dir().name in ("xla", os.path.basename(os.environ.get(ENV_VAR, "")))
      True
    """
    value = os.environ.get(ENV_VAR, "").strip()
    if value and not cache_turned_off(value):
        return Path(value).expanduser()
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

    path = _usable_folder(default_compilation_cache_dir() if directory is None else directory)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path


def disable_compilation_cache() -> None:
    """Turn JAX's persistent compilation cache off for this process (call before the first
    metric: JAX opens its cache once, at the first compilation).

    Examples (not run by the doctests: the setting lasts for the whole process):
      >>> disable_compilation_cache()  # doctest: +SKIP
    """
    import jax

    jax.config.update("jax_enable_compilation_cache", False)


_default_applied: list[Path | None] = []


def apply_default_compilation_cache(setting: str | None = None, *, strict: bool = False) -> Path | None:
    """Turn on the default cache unless the user chose otherwise (see the module's docstring).

    Called once per process by the first jaxmetrics module that imports JAX (later calls without
    ``setting`` return the first answer), and by the command line with its
    ``--compilation-cache`` value before it imports anything else.

    Args:
      setting: a folder or ``"off"``, replacing ``$JAXMETRICS_COMPILATION_CACHE`` and taking
        precedence over JAX's own settings; ``None`` → the default rules.
      strict: raise ``ValueError`` (naming ``directory``) for a folder that cannot be used,
        instead of one warning and no cache.

    Returns:
      The cache folder, or ``None`` when this process runs without jaxmetrics' cache.
    """
    if setting is None and _default_applied:
        return _default_applied[0]
    import jax

    folder: Path | None = None
    value = os.environ.get(ENV_VAR) if setting is None else setting
    try:
        if cache_turned_off(value):
            if setting is not None:
                disable_compilation_cache()
        elif setting is not None or (jax.config.jax_enable_compilation_cache
                                     and jax.config.jax_compilation_cache_dir is None):
            try:
                folder = enable_compilation_cache(None if setting is None else setting.strip())
            except ValueError as e:
                if strict:
                    raise
                warnings.warn(f"running without a compilation cache: {str(e).split(': ', 1)[-1]} "
                              f"(set {ENV_VAR} to another folder, or to 'off')", RuntimeWarning, stacklevel=2)
    finally:
        _default_applied[:] = [folder]
    return folder


def _usable_folder(directory: str | os.PathLike) -> Path:
    """The folder as an absolute path, created if missing; ``ValueError`` naming ``directory`` if
    it is a file, cannot be created or written, or its disk is nearly full."""
    path = Path(os.fspath(directory)).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"directory: {os.fspath(path)!r} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ValueError(f"directory: {os.fspath(path)!r} is not writable: {e.strerror}") from None
    free = shutil.disk_usage(path).free
    if free < MIN_FREE_BYTES:
        raise ValueError(f"directory: {os.fspath(path)!r} is on a disk with only {free / 2**20:.0f} MiB "
                         f"free (at least {MIN_FREE_BYTES // 2**20} MiB needed)")
    return path.resolve()
