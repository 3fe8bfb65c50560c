"""benchmarks/_report.py: every results file a benchmark writes names the machine it was measured
on (CPU model, cores, the flags that decide matrix-product speed: AMX, avx512_bf16, avx512f, avx2),
and every benchmark script writes its results through that one helper."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import _report  # noqa: E402

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2
"""
EPYC = """processor\t: 0
model name\t: AMD EPYC
flags\t\t: fpu sse2 fma avx2 vaes
"""


@pytest.mark.parametrize("text, expected", [
    (XEON, {"amx_bf16": True, "amx_tile": True, "avx512_bf16": True, "avx512f": True, "avx2": True}),
    (EPYC, {"amx_bf16": False, "amx_tile": False, "avx512_bf16": False, "avx512f": False, "avx2": True}),
])
def test_the_machine_names_the_cpu_and_its_matmul_flags(tmp_path, text, expected):
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    m = _report.machine(info)
    assert m["cpu"] == text.split("model name\t: ")[1].splitlines()[0]
    assert m["flags"] == expected
    assert m["cores"] >= 1
    line = _report.machine_line(m)
    assert line.startswith(f"Machine: {m['cpu']}, {m['cores']} cores; ")
    for flag, has in expected.items():
        assert f"{flag} {'yes' if has else 'no'}" in line


def test_unreadable_flags_are_unknown_not_absent(tmp_path):
    m = _report.machine(tmp_path / "missing")
    assert m["cpu"] and set(m["flags"].values()) == {None}
    assert "amx_bf16 unknown" in _report.machine_line(m)


def test_every_results_file_carries_the_machine(tmp_path, capsys):
    line = _report.machine_line()
    titled = _report.save_table("# A benchmark\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", tmp_path / "r" / "t.md")
    assert (tmp_path / "r" / "t.md").read_text() == titled
    assert titled.splitlines()[:3] == ["# A benchmark", "", line] and titled.splitlines()[4] == "| a | b |"
    untitled = _report.save_table("| a |\n|---|\n", tmp_path / "u.md")
    assert untitled.splitlines()[:3] == [line, "", "| a |"]
    capsys.readouterr()
    _report.save_json({"rows": [1], "machine": "stale"}, tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["machine"] == _report.machine() and doc["rows"] == [1]


def _direct_writes(path: Path) -> list[str]:
    """Calls in a benchmark script that write a file without the shared helper."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        mode = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)] + \
               [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
        if name in ("write_text", "write_bytes", "dump") or (name == "open" and any("w" in str(m) for m in mode)):
            bad.append(f"{path.name}:{node.lineno}: {name}(...)")
    return bad


def test_every_benchmark_writes_its_results_through_the_helper(tmp_path):
    scripts = sorted(p for p in BENCH.glob("*.py") if p.name != "_report.py")
    assert len(scripts) > 10
    bad = [b for p in scripts for b in _direct_writes(p)]
    assert not bad, "write results with _report.save_table / save_json (they add the machine):\n" + "\n".join(bad)
    probe = tmp_path / "probe.py"
    probe.write_text("import json\nopen('x', 'w')\nPath('y').write_text('')\njson.dump({}, f)\nopen('z')\n")
    assert [b.split(":")[1] for b in _direct_writes(probe)] == ["2", "3", "4"]
