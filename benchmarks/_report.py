"""Shared ending of every benchmark script: print the Markdown table and save it under
``benchmarks/results/`` (or wherever ``--out`` points), with the machine it was measured on.

Every results file a benchmark writes goes through :func:`save_table` (Markdown) or
:func:`save_json` (JSON), and both record :func:`machine`: the CPU model, its core count and the
flags that decide how fast matrix products run (AMX tiles for bfloat16, avx512_bf16, avx512f,
avx2), plus the JAX device when one other than the CPU ran the work. A speed figure read without
its machine means little: on an Intel Xeon with AMX, XLA was reported to multiply bfloat16
operands accumulated in float32 about 5x faster than float32 (2048² products); on a CPU without
AMX or avx512_bf16 it runs no faster (``benchmarks/results/mixed_precision.md``).
"""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

#: the CPU flags recorded beside every figure (``/proc/cpuinfo`` names)
CPU_FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512f", "avx2")


def _cpuinfo(path: str | Path = "/proc/cpuinfo") -> tuple[str | None, set[str]]:
    """``(model name, flags)`` of the first processor in a Linux ``/proc/cpuinfo`` (``(None,
    set())`` where there is none)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None, set()
    model, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return model, flags


def machine(cpuinfo: str | Path = "/proc/cpuinfo") -> dict:
    """The machine a benchmark runs on: ``{"cpu", "cores", "flags": {flag: bool}, "device"}``.

    ``cpu`` is the model name of ``/proc/cpuinfo`` (else ``platform.processor()``); ``flags`` says
    for each of :data:`CPU_FLAGS` whether the CPU has it (``None`` where the flags cannot be read);
    ``device`` is JAX's first device (``"cpu"``, or e.g. ``"gpu: NVIDIA H100"``) when JAX is
    already imported, else ``None`` (this never imports JAX)."""
    model, flags = _cpuinfo(cpuinfo)
    device = None
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            dev = jax.devices()[0]
            device = dev.platform if dev.platform == "cpu" else f"{dev.platform}: {dev.device_kind}"
        except Exception:  # noqa: BLE001 -- a backend that fails to start is reported as unknown
            device = "unknown"
    return {"cpu": model or platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "flags": {f: (f in flags) if flags else None for f in CPU_FLAGS}, "device": device}


def machine_line(info: dict | None = None) -> str:
    """One line naming the machine, e.g. ``Machine: AMD EPYC, 2 cores; amx_bf16 no, amx_tile no,
    avx512_bf16 no, avx512f no, avx2 yes; JAX device cpu.``"""
    info = machine() if info is None else info
    flags = ", ".join(f"{f} {'unknown' if v is None else ('yes' if v else 'no')}" for f, v in info["flags"].items())
    device = f"; JAX device {info['device']}" if info.get("device") else ""
    return f"Machine: {info['cpu']}, {info['cores']} cores; {flags}{device}."


def with_machine_line(table: str, info: dict | None = None) -> str:
    """``table`` with :func:`machine_line` as its own paragraph after the title (a first line
    starting with ``#``), or first when it has no title."""
    line = machine_line(info)
    head, _, rest = table.partition("\n")
    if head.startswith("#"):
        return f"{head}\n\n{line}\n" + (rest if rest.startswith("\n") else "\n" + rest)
    return f"{line}\n\n{table}"


def save_table(table: str, out: str | Path) -> str:
    """Print ``table`` with the machine line (:func:`with_machine_line`), write it to ``out``
    (parents created) and return what was written."""
    table = with_machine_line(table)
    print(table)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table)
    return table


def save_json(record: dict, out: str | Path, *, indent: int = 1) -> dict:
    """Write ``record`` as JSON to ``out`` (parents created) with ``"machine": machine()`` first;
    returns what was written."""
    record = {"machine": machine(), **{k: v for k, v in record.items() if k != "machine"}}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=indent) + "\n")
    return record


def save_lines(lines: list[str], out: str | Path) -> Path:
    """Write ``lines`` one per line (UTF-8) to ``out`` (parents created): an input file that a
    benchmark prepares for a command it runs, not a result (results go through
    :func:`save_table` / :func:`save_json`, which record the machine)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def causal_models(spec: str, tmp: str | Path) -> list[tuple[str, str, str]]:
    """``(key, label, directory)`` of the causal models named in ``spec`` (comma-separated:
    ``demo`` -- the bundled demo GPT-2, linked under a name containing "gpt2" because mauve-text
    loads only such names --, ``gpt2`` -- a random GPT-2-small-sized model written to ``tmp``)."""
    from featurize_vs_torch import gpt2_small_dir

    from jaxmetrics.data import demo_model_dir

    out = []
    for m in spec.split(","):
        if m == "demo":
            link = Path(tmp) / "demo-gpt2"
            if not link.exists():
                link.symlink_to(demo_model_dir())
            out.append((m, "bundled demo GPT-2", str(link)))
        elif m == "gpt2":
            out.append((m, "GPT-2-small-sized (random)", gpt2_small_dir(Path(tmp))))
        else:
            raise SystemExit(f"--models: unknown model {m!r} (demo, gpt2)")
    return out
