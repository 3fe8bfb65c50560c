"""The public API follows docs/conventions.md (rules 1, 2, 4, 5 and 8).

Walks everything exported by ``jaxmetrics`` and by each family's ``__all__`` (and the public
methods of exported classes) and fails on:

1. a ``references`` / ``candidates`` (or ``reference`` / ``candidate``) argument that can be
   passed positionally;
2. a model argument not named ``model`` (``lm``, ``encoder``, ``model_name``, ... or an argument
   annotated as a loaded model), or a function taking ``model=`` without ``dtype=None``;
4. a ``key`` argument with a default, or a ``rng``/``random_state`` argument;
5. a public function without a return annotation, or returning a ``dict``, a ``tuple`` or a
   ``NamedTuple``; a ``Result`` subclass that is not a frozen pytree dataclass;
7. (masks) an argument ``<x>_mask`` whose ``x`` is not another argument;
8. a function named like its module, or a top-level export that shadows a sub-package;
9. (seams, parsed with ``ast``, imports inside functions included) a module under
   ``jaxmetrics/`` importing another top-level package's ``_private`` name, or library code
   (outside the CLI layer: ``commands/`` and ``cli.py``) importing the CLI layer;
10. (primitives, docs rule 7, parsed with ``ast``) a primitive written outside the module that owns it:
   squared distances, k-NN selection, soft assignment, a length capped at the model's positions,
   the resampling draws and p-values, the MAUVE frontier's grid, batches planned by hand in ``lm/``;
11. (a thin command line, docs rule 10) a ``matplotlib.use`` / ``pyplot.switch_backend`` outside the CLI layer,
   a ``json.dump`` / ``json.dumps`` in the CLI layer outside ``commands/_util.write_json``, and a
   command option whose choices are not a library constant (``LibraryChoices``) or a list of
   names in the CLI layer that copies one, and a resampling option (``--num-resamples``,
   ``--confidence``, ``--alpha``) declared outside the two helpers of ``commands/_util.py``.
12. (one name per concept, settings objects, docs rule 11) a public function with more than 16 parameters, or
    with one of the retired names of a concept (``mauve_scaling_factor``, ``num_bins``, ``p_features``,
    ...) in its signature, the compatibility functions excepted; and a check of MAUVE's ``c`` or
    ``m`` written anywhere but in ``FrontierSettings``.
13. (short functions) a function of the package over 100 code lines (its signature counted; its
    docstring, comments and blank lines not).
14. (folders) a folder of the package holding more than 15 modules.

Rule 5 also holds for classes: every ``jaxmetrics`` class that an exported function returns is
a ``Result``, except the metric states of rule 6, settings objects (``jaxmetrics.settings.Settings``)
and the loaded model.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import typing
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxmetrics
from jaxmetrics.results import Result
from jaxmetrics.settings import Settings

FAMILIES = ("mauve", "lm", "similarity", "mark_evaluate", "diversity", "models", "meta")
PACKAGES = ("jaxmetrics",) + tuple(f"jaxmetrics.{f}" for f in FAMILIES) + (
    "jaxmetrics.state", "jaxmetrics.sharding", "jaxmetrics.evaluation", "jaxmetrics.demo", "jaxmetrics.training")

# The compatibility functions keep their anchors' signatures (rule 1 exceptions).
COMPAT = {"compute_mauve", "bertscore"}
# Masks named after an axis or after the transformers argument (rule 7 exceptions).
MASK_EXCEPTIONS = {"attention_mask", "row_mask", "col_mask", "pair_mask", "key_mask"}
MODEL_LIKE_NAMES = {"lm", "encoder", "model_name", "model_path", "model_dir", "scorer", "name_or_path"}
# Methods that are part of Python / pytree / settings-object protocols rather than the metric API.
SKIP_METHODS = {"to_dict", "replace", "tree_flatten", "tree_unflatten", "signature_fields", "csv_rows", "to_csv",
                "write_json"}


def _exported(package: str):
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", None)
    assert names is not None, f"{package} has no __all__"
    for name in names:
        obj = getattr(mod, name)
        if inspect.ismodule(obj):
            continue
        yield f"{package}.{name}", obj


IMPORT_ERRORS = []


def _callables():
    seen = set()
    out = []
    for package in PACKAGES:
        try:
            exported = list(_exported(package))
        except Exception as e:  # reported by test_packages_import, not at collection
            IMPORT_ERRORS.append((package, f"{type(e).__name__}: {e}"))
            continue
        for qual, obj in exported:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                out.append((qual, obj, None))
                for mname, meth in inspect.getmembers(obj):
                    if mname.startswith("_") or mname in SKIP_METHODS:
                        continue
                    raw = inspect.getattr_static(obj, mname)
                    if isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
                        func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                        if getattr(func, "__module__", "").startswith("jaxmetrics"):
                            out.append((f"{qual}.{mname}", func, obj))
            elif callable(obj):
                out.append((qual, obj, None))
    return out


CALLABLES = _callables()
FUNCTIONS = [(q, f, c) for q, f, c in CALLABLES if not inspect.isclass(f)]
CLASSES = [(q, f) for q, f, c in CALLABLES if inspect.isclass(f)]


def test_packages_import():
    assert not IMPORT_ERRORS, IMPORT_ERRORS


def _params(func):
    sig = inspect.signature(func)
    return [p for p in sig.parameters.values() if p.name not in ("self", "cls")]


def _family(qual: str) -> str:
    for f in FAMILIES:
        if f".{f}." in qual + ".":
            return f
    return "top"


def _ids(items):
    return [q for q, *_ in items]


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_sets_are_keyword_only(qual, func, owner):
    name = qual.rsplit(".", 1)[-1]
    if name in COMPAT:
        return
    for p in _params(func):
        base = p.name
        if base in ("references", "candidates", "reference", "candidate"):
            assert p.kind == p.KEYWORD_ONLY, f"{qual}: {p.name} must be keyword-only (rule 1)"


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_model_argument_is_named_model(qual, func, owner):
    for p in _params(func):
        ann = str(p.annotation)
        assert p.name not in MODEL_LIKE_NAMES or qual.endswith(("load_model", "resolve_model_dir")), \
            f"{qual}: model argument {p.name!r} must be called model (rule 2)"
        if "LoadedModel" in ann:
            assert p.name == "model", f"{qual}: argument {p.name!r} takes a model; call it model (rule 2)"
        if p.name == "model" and owner is None and not func.__module__.startswith("jaxmetrics.models"):
            assert p.kind == p.KEYWORD_ONLY, f"{qual}: model= must be keyword-only (rule 2)"


# Functions with a ``model`` argument that load nothing: they read a loaded model's tokenizer or
# configuration, or only name it in a signature (rule 2's dtype exceptions).
LOADS_NOTHING = {"check_max_length", "resolve_layers", "resolve_pooling", "run_encoder", "tokenize",
                 "score_encoded"}


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_a_function_that_takes_a_model_takes_its_dtype(qual, func, owner):
    params = {p.name: p for p in _params(func)}
    name = qual.rsplit(".", 1)[-1]
    if "model" not in params or name in LOADS_NOTHING or name == "load_model":
        return
    assert "dtype" in params, f"{qual}: takes model= but no dtype= (rule 2)"
    p = params["dtype"]
    assert p.default is None, \
        f"{qual}: dtype must default to None (the model's own dtype, float32 for a path)"


def test_loads_nothing_exceptions_take_a_model_and_exist():
    names = {q.rsplit(".", 1)[-1]: f for q, f, _ in FUNCTIONS}
    for name in LOADS_NOTHING:
        assert name in names and "model" in {p.name for p in _params(names[name])}, name


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_keys_are_required(qual, func, owner):
    for p in _params(func):
        if p.name == "key":
            assert p.default is p.empty, f"{qual}: key must have no default (rule 4)"
        assert p.name not in ("rng", "random_state", "rng_key"), f"{qual}: randomness is key= or seed= (rule 4)"
        if p.name == "seed":
            assert p.default is p.empty or isinstance(p.default, int), f"{qual}: seed must be an int"


def _resolve_annotation(func, ann):
    if not isinstance(ann, str):
        return ann
    try:
        return typing.get_type_hints(func).get("return", ann)
    except Exception:
        return ann


_BAD_RETURN = re.compile(r"(^|[^A-Za-z_.])(dict|tuple|Dict|Tuple|NamedTuple)\b")


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_returns_are_results_not_dicts_or_tuples(qual, func, owner):
    if owner is not None and func.__name__ == "__init__":
        return
    sig = inspect.signature(func)
    ann = sig.return_annotation
    assert ann is not sig.empty, f"{qual}: public function without a return annotation (rule 5)"
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    assert not _BAD_RETURN.search(str(text)), f"{qual}: returns {text}; return a Result instead (rule 5)"
    resolved = _resolve_annotation(func, ann)
    if inspect.isclass(resolved):
        assert not issubclass(resolved, (dict, tuple)), f"{qual}: returns {resolved.__name__}, a dict/tuple"


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_masks_are_named_after_their_argument(qual, func, owner):
    names = [p.name for p in _params(func)]
    for n in names:
        if n == "mask":
            pytest.fail(f"{qual}: a bare 'mask' argument; name it <argument>_mask (rule 7)")
        if n.endswith("_mask") and n not in MASK_EXCEPTIONS:
            prefix = n[: -len("_mask")]
            ok = any(o == prefix or o.startswith(prefix + "_") for o in names if o != n)
            assert ok, f"{qual}: mask {n!r} is not named after an argument (rule 7)"


@pytest.mark.parametrize("qual,cls", CLASSES, ids=_ids(CLASSES))
def test_result_classes_are_frozen_pytrees(qual, cls):
    if cls is Result:
        return
    if not issubclass(cls, Result):
        assert not (issubclass(cls, tuple) and hasattr(cls, "_fields")), f"{qual}: a NamedTuple; use Result"
        return
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, qual
    fields = dataclasses.fields(cls)
    assert cls.__doc__ and "Attributes" in cls.__doc__ or not fields, f"{qual}: document the fields"


def test_result_base_behaviour():
    class Demo(Result):
        value: jax.Array
        curve: jax.Array
        label: str = dataclasses.field(default="x", metadata={"static": True})

    d = jax.jit(lambda x: Demo(x.sum(), x * 2))(np.arange(300.0, dtype=np.float32))
    assert repr(d) == "Demo(value=44850, curve=f32[300], label='x')"
    assert len(repr(d)) < 100
    leaves, tree = jax.tree.flatten(d)
    assert len(leaves) == 2 and jax.tree.unflatten(tree, leaves).label == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.value = 1
    assert d.to_dict()["curve"][:2] == [0.0, 2.0]


def _modules():
    out = []
    for info in pkgutil.walk_packages(jaxmetrics.__path__, "jaxmetrics."):
        out.append(info.name)
    return out


def test_no_function_shares_its_module_name():
    bad = []
    for name in _modules():
        if name.startswith("jaxmetrics.commands"):
            continue
        mod = importlib.import_module(name)
        last = name.rsplit(".", 1)[-1]
        fn = getattr(mod, last, None)
        if fn is not None and not inspect.ismodule(fn) and callable(fn) \
                and getattr(fn, "__module__", None) == name:
            bad.append(name)
    assert not bad, f"functions named like their module (rule 8): {bad}"
    for package in ("jaxmetrics",) + tuple(f"jaxmetrics.{f}" for f in FAMILIES):
        mod = importlib.import_module(package)
        subs = {i.name for i in pkgutil.iter_modules(mod.__path__)}
        clash = [n for n in getattr(mod, "__all__", []) if n in subs
                 and not inspect.ismodule(getattr(mod, n))]
        assert not clash, f"{package} exports {clash}, which shadow its sub-modules (rule 8)"


def test_top_level_exports_resolve_and_do_not_shadow():
    for name in jaxmetrics.__all__:
        assert getattr(jaxmetrics, name) is not None, name
    assert not set(jaxmetrics._EXPORTS) & set(jaxmetrics._SUBMODULES)


# Classes returned by exported functions that are not results: the metric states of rule 6
# (sufficient statistics with empty / update / merge / compute) and the loaded model.
_STATE_NAME = re.compile(r"(State|Buffer|Moments)$")
NOT_RESULTS = {"LoadedModel"}


def _returned_classes(func):
    try:
        ret = typing.get_type_hints(func).get("return")
    except Exception:
        return []
    out = []
    for c in [ret, *typing.get_args(ret)]:
        if inspect.isclass(c) and getattr(c, "__module__", "").startswith("jaxmetrics"):
            out.append(c)
    return out


def test_returned_classes_are_results():
    bad = []
    for qual, func, owner in FUNCTIONS:
        for c in _returned_classes(func):
            if issubclass(c, (Result, Settings)) or c.__name__ in NOT_RESULTS or _STATE_NAME.search(c.__name__):
                continue
            if dataclasses.is_dataclass(c) or (issubclass(c, tuple) and hasattr(c, "_fields")):
                bad.append(f"{qual} returns {c.__module__}.{c.__name__}")
    assert not bad, "data returned by public functions must be a jaxmetrics.results.Result (rule 5):\n" + \
        "\n".join(bad)


def test_evaluation_and_demo_are_covered():
    """The seams of the end-to-end layer are in the walk: its results, the report writer's and
    the demo's return values."""
    from jaxmetrics.demo import DemoResult, run_demo
    from jaxmetrics.evaluation import GenerationReport, ReportFiles, evaluate_generation, write_report

    walked = {id(f) for _, f, _ in CALLABLES}
    for obj in (evaluate_generation, write_report, GenerationReport, ReportFiles, run_demo, DemoResult):
        assert id(obj) in walked, obj.__qualname__

    assert _resolve_annotation(write_report, inspect.signature(write_report).return_annotation) is ReportFiles
    assert _resolve_annotation(run_demo, inspect.signature(run_demo).return_annotation) is DemoResult
    assert issubclass(GenerationReport, Result) and GenerationReport.__dataclass_params__.frozen


# ------------------------------------------------------------------------------ seams (rule 9)
_ROOT = Path(jaxmetrics.__file__).parent
#: the CLI layer: ``cli.py`` and the ``commands/`` package (its helpers in ``commands/_*.py``)
_CLI_FILES = ("cli.py",)
_CLI_PACKAGE = "commands"
_CLI_MODULES = ("jaxmetrics.cli", "jaxmetrics.commands")


def _own_package(path: Path) -> str:
    """``evaluation`` for jaxmetrics/evaluation/x.py, ``demo`` for jaxmetrics/demo.py."""
    rel = path.relative_to(_ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    if not node.level:
        return node.module or ""
    pkg = ["jaxmetrics", *path.relative_to(_ROOT).parent.parts]
    base = pkg[: len(pkg) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path):
    """``(line, module, names)`` of every import in ``path`` (inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.lineno, _absolute(node, path), [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []


def _top_level_private_modules() -> set[str]:
    return {p.stem if p.is_file() else p.name for p in _ROOT.iterdir()
            if p.name.startswith("_") and not p.name.startswith("__") and (p.suffix == ".py" or p.is_dir())}


def _library_files():
    return sorted(p for p in _ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _private_import_offenders(files) -> list[str]:
    shared = _top_level_private_modules()  # jaxmetrics._validation, _ops, ...: shared helpers
    bad = []
    for path in files:
        own = _own_package(path)
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "jaxmetrics":
                continue
            pkg = parts[1] if len(parts) > 1 else None
            for name in names:
                if not name.startswith("_") or name.startswith("__"):
                    continue
                if pkg is None and name in shared:
                    continue  # `from jaxmetrics import _validation`: a shared private module
                if pkg is not None and (pkg == own or pkg in shared and len(parts) == 2):
                    continue  # its own package, or a name of a shared private module
                bad.append(f"{path.relative_to(_ROOT.parent)}:{line}: from {module} import {name}")
    return bad


def _cli_import_offenders(files) -> list[str]:
    bad = []
    for path in files:
        rel = path.relative_to(_ROOT)
        if rel.parts[0] == _CLI_PACKAGE or str(rel) in _CLI_FILES:
            continue
        for line, module, names in _imports(path):
            targets = [module] + [f"{module}.{n}" for n in names]
            if any(t == m or t.startswith(m + ".") for t in targets for m in _CLI_MODULES):
                bad.append(f"{path.relative_to(_ROOT.parent)}:{line}: imports {module}"
                           + (f" ({', '.join(names)})" if names else ""))
    return bad


def test_seam_checks_catch_what_they_should(tmp_path, monkeypatch):
    """The two checks below on a fake tree: a private name of another package and the CLI
    layer, at module level and inside a function, are caught with file:line."""
    root = tmp_path / "jaxmetrics"
    (root / "mauve").mkdir(parents=True)
    (root / "commands").mkdir()
    (root / "_ops.py").write_text("")
    (root / "mauve" / "x.py").write_text(
        "from jaxmetrics.mauve.kmeans import _own\n"        # own package: fine
        "from jaxmetrics._ops import pairwise\n"             # shared private module: fine
        "from jaxmetrics import _ops\n"                      # fine
        "def f():\n"
        "    from jaxmetrics.models.loader import _secret\n"  # line 5: another package's private name
        "    from ..similarity import _centering\n"          # line 6: relative, same offence
        "    from jaxmetrics.commands._util import resolve\n")  # line 7: the CLI layer
    (root / "commands" / "c.py").write_text("from jaxmetrics.commands._util import x\n")  # the CLI layer itself
    (root / "demo.py").write_text("import sys\nif __name__ == '__main__':\n    import jaxmetrics.cli\n")
    monkeypatch.setattr(__import__(__name__), "_ROOT", root)
    files = sorted(root.rglob("*.py"))
    assert _private_import_offenders(files) == [
        "jaxmetrics/mauve/x.py:5: from jaxmetrics.models.loader import _secret",
        "jaxmetrics/mauve/x.py:6: from jaxmetrics.similarity import _centering"]
    assert _cli_import_offenders(files) == ["jaxmetrics/demo.py:3: imports jaxmetrics.cli",
                                            "jaxmetrics/mauve/x.py:7: imports jaxmetrics.commands._util (resolve)"]


def test_no_module_imports_another_packages_private_name():
    bad = _private_import_offenders(_library_files())
    assert not bad, "import another package's private name; make it a documented public function of its " \
                    "owner (docs/conventions.md, rule 9):\n" + "\n".join(bad)


def test_library_code_never_imports_the_cli_layer():
    bad = _cli_import_offenders(_library_files())
    assert not bad, "library code imports the CLI layer (jaxmetrics.cli / jaxmetrics.commands); move what " \
                    "it needs into the library (docs/conventions.md, rule 9):\n" + "\n".join(bad)


# ------------------------------------------------------------- one implementation per primitive (rule 10)
# Each primitive is written once, in the module that owns it; these checks (parsed with ``ast``)
# fail when one is written again elsewhere.
_PRIMITIVE_OWNERS = {
    "squared distance": ("_ops.py",),
    "k-NN selection": ("mark_evaluate/hyperspheres.py",),
    "soft assignment": ("mauve/quantize/quantizers.py",),
    "max_length cap": ("models/",),
    "resampling": ("confidence/",),
    "frontier grid": ("mauve/frontier/histograms.py",),
    "LM batch planning": ("models/batching.py",),
}


def _call_name(node: ast.AST) -> str:
    f = node.func if isinstance(node, ast.Call) else None
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _has_none_index(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Subscript) and any(isinstance(c, ast.Constant) and c.value is None
                                                    for c in ast.walk(n.slice)) for n in ast.walk(node))


def _is_self_product_sum(node: ast.AST) -> bool:
    """``sum(a * a, ...)``: a squared norm."""
    if not (isinstance(node, ast.Call) and _call_name(node) == "sum" and node.args):
        return False
    a = node.args[0]
    return isinstance(a, ast.BinOp) and isinstance(a.op, ast.Mult) and ast.dump(a.left) == ast.dump(a.right)


def _primitive_kinds(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, primitive)`` of every hand-written primitive in a parsed module."""
    found = []
    limit_names = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and "max_positions" in ast.dump(n.value)
                   for t in n.targets if isinstance(t, ast.Name)}
    for n in ast.walk(tree):
        # jnp.sum((a[:, None] - b[None]) ** 2): pairwise differences squared by broadcasting
        # (host-side NumPy in float64 is not the kernel's business)
        if isinstance(n, ast.Call) and _call_name(n) == "sum" and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "jnp" and n.args:
            a = n.args[0]
            if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Pow) and isinstance(a.left, ast.BinOp) \
                    and isinstance(a.left.op, ast.Sub) and _has_none_index(a.left):
                found.append((n.lineno, "squared distance"))
        # |x|^2 (+ |y|^2) - 2 x.y: the matmul expansion
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
            parts = list(ast.walk(n))
            two_dot = any(isinstance(p, ast.BinOp) and isinstance(p.op, ast.Mult) and isinstance(p.left, ast.Constant)
                          and p.left.value == 2 and _call_name(p.right) in ("matmul", "dot", "einsum")
                          for p in parts)
            if two_dot and any(_is_self_product_sum(p) for p in parts):
                found.append((n.lineno, "squared distance"))
        # top_k of negated values: the k smallest, i.e. a nearest-neighbour search
        if isinstance(n, ast.Call) and _call_name(n) == "top_k" and n.args \
                and isinstance(n.args[0], ast.UnaryOp) and isinstance(n.args[0].op, ast.USub):
            found.append((n.lineno, "k-NN selection"))
        # softmax(-distances / tau)
        if isinstance(n, ast.Call) and _call_name(n) == "softmax" and n.args and "squared_distances" in ast.dump(n.args[0]) \
                or isinstance(n, ast.Call) and _call_name(n) == "softmax" and n.args and isinstance(n.args[0], ast.BinOp) \
                and isinstance(n.args[0].left, ast.UnaryOp) and isinstance(n.args[0].left.op, ast.USub) \
                and "d2" in ast.dump(n.args[0].left):
            found.append((n.lineno, "soft assignment"))
        # the bootstrap's draw randint(k, (B, n), 0, n), a randomization swap bernoulli(k, 0.5, ...),
        # a resampling p-value (1 + count) / (B + 1)
        if isinstance(n, ast.Call) and _call_name(n) == "randint" and len(n.args) >= 4 \
                and isinstance(n.args[1], ast.Tuple) and n.args[1].elts \
                and ast.dump(n.args[1].elts[-1]) == ast.dump(n.args[3]):
            found.append((n.lineno, "resampling"))
        if isinstance(n, ast.Call) and _call_name(n) == "bernoulli" and len(n.args) >= 2 \
                and isinstance(n.args[1], ast.Constant) and n.args[1].value == 0.5:
            found.append((n.lineno, "resampling"))
        one = lambda x: isinstance(x, ast.Constant) and x.value == 1  # noqa: E731
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) \
                and isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Add) and one(n.left.left) \
                and isinstance(n.right, ast.BinOp) and isinstance(n.right.op, ast.Add) and one(n.right.right):
            found.append((n.lineno, "resampling"))
        # the frontier's mixture grid (mixture_weights) and end points (frontier_curve)
        if isinstance(n, ast.Call) and (_call_name(n) == "_paper_weights" or _call_name(n) == "linspace"
                                        and "_W_EPS" in ast.dump(n)):
            found.append((n.lineno, "frontier grid"))
        # a length compared with (or min-ed against) the model's positions
        if isinstance(n, (ast.Compare, ast.Call)) and (not isinstance(n, ast.Call) or _call_name(n) in ("min", "max")):
            names = {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} | \
                    {x.attr for x in ast.walk(n) if isinstance(x, ast.Attribute)}
            if any("max_length" in x for x in names) and (names & limit_names or names & {
                    "max_positions", "n_positions", "max_position_embeddings"}):
                found.append((n.lineno, "max_length cap"))
    return sorted(set(found))


def _batch_planning(tree: ast.AST) -> list[tuple[int, str]]:
    """Batches cut by hand: ``range(0, n, <batch>)`` or ``-(-n // <batch>)`` with a batch-size
    name (``bs``, ``batch_size``, ...). Checked in ``lm/``, whose passes the engine's planner lays out."""
    batchy = lambda x: any(isinstance(v, ast.Name) and ("bs" in v.id or "batch" in v.id)  # noqa: E731
                           for v in ast.walk(x))
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and _call_name(n) == "range" and len(n.args) == 3 and batchy(n.args[2]):
            found.append((n.lineno, "LM batch planning"))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.BinOp) \
                and isinstance(n.operand.op, ast.FloorDiv) and isinstance(n.operand.left, ast.UnaryOp) \
                and batchy(n.operand.right):
            found.append((n.lineno, "LM batch planning"))
    return found


def _primitive_offenders(files) -> list[str]:
    bad = []
    for path in files:
        rel = path.relative_to(_ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        kinds = _primitive_kinds(tree) + (_batch_planning(tree) if rel.startswith("lm/") else [])
        for line, kind in sorted(set(kinds)):
            if not any(rel == o or (o.endswith("/") and rel.startswith(o)) for o in _PRIMITIVE_OWNERS[kind]):
                bad.append(f"{path.relative_to(_ROOT.parent)}:{line}: {kind}")
    return bad


def test_primitive_checks_catch_what_they_should(tmp_path, monkeypatch):
    root = tmp_path / "jaxmetrics"
    (root / "mauve").mkdir(parents=True)
    (root / "lm").mkdir()
    (root / "_ops.py").write_text("d = jnp.sum((x[:, None, :] - y[None]) ** 2, -1)\n")  # the owner: fine
    (root / "lm" / "y.py").write_text("n_batches = -(-n // bs)\nfor b in range(0, n, bs_eff):\n    pass\n")
    (root / "mauve" / "x.py").write_text(
        "d = jnp.sum((x[:, None, :] - y[None]) ** 2, -1)\n"                                  # 1
        "d = jnp.sum(x * x, 1)[:, None] + s[None] - 2.0 * jnp.matmul(x, y.T)\n"              # 2
        "_, i = jax.lax.top_k(-d, k)\n"                                                     # 3
        "a = jax.nn.softmax(-squared_distances(z, c) / t, axis=-1)\n"                        # 4
        "limit = getattr(lm, 'max_positions', None)\n"
        "if max_length > limit:\n"                                                          # 6
        "    pass\n"
        "idx = jax.random.randint(k, (B, n), 0, n)\n"                                       # 8
        "p = (1.0 + extreme) / (B + 1.0)\n"                                                 # 9
        "w = jnp.linspace(_W_EPS, 1.0 - _W_EPS, m)\n"                                       # 10
        "v, i = jax.lax.top_k(a, r)\n"                                                      # largest: fine
        "u = jnp.sum((a - b) ** 2, -1)\n")                                                  # paired: fine
    monkeypatch.setattr(__import__(__name__), "_ROOT", root)
    assert _primitive_offenders(sorted(root.rglob("*.py"))) == [
        "jaxmetrics/lm/y.py:1: LM batch planning", "jaxmetrics/lm/y.py:2: LM batch planning",
        "jaxmetrics/mauve/x.py:1: squared distance", "jaxmetrics/mauve/x.py:2: squared distance",
        "jaxmetrics/mauve/x.py:3: k-NN selection", "jaxmetrics/mauve/x.py:4: soft assignment",
        "jaxmetrics/mauve/x.py:6: max_length cap", "jaxmetrics/mauve/x.py:8: resampling",
        "jaxmetrics/mauve/x.py:9: resampling", "jaxmetrics/mauve/x.py:10: frontier grid"]


def test_each_primitive_is_written_once():
    bad = _primitive_offenders(_library_files())
    assert not bad, "a primitive written again; call its one implementation (squared distances: " \
                    "jaxmetrics._ops.squared_distances; k-NN: mark_evaluate.hyperspheres.knn_hyperspheres; soft " \
                    "assignment: mauve.quantize.quantizers.soft_assignment; a length against the model's positions: " \
                    "jaxmetrics.models.check_max_length; resampling draws and p-values: bootstrap_indices, randomization_draws, " \
                    "resampling_p_values of jaxmetrics.confidence; the frontier's grid and end points: mixture_weights, " \
                    "frontier_curve of mauve.frontier.histograms; LM batches: plan_batches / plan_rows of models.batching) (docs/conventions.md, rule 7):\n" + "\n".join(bad)


# ------------------------------------------------------------------ a thin command line (rule 11)
def _aliases(tree: ast.AST, module: str) -> set[str]:
    """The names ``module`` is bound to in ``tree`` (``import matplotlib as mpl`` -> ``mpl``)."""
    return {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
            for a in n.names if a.name == module}


def _module_calls(path: Path, module: str, names: tuple[str, ...]):
    """``(line, enclosing function or None, name)`` of each call of ``module.<name>`` (or of
    ``<name>`` imported from ``module``) in ``path``, for ``name`` in ``names``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    mods = _aliases(tree, module)
    direct = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
              and n.module == module for a in n.names if a.name in names}

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Attribute) and f.attr in names and isinstance(f.value, ast.Name) \
                        and f.value.id in mods:
                    yield child.lineno, func, f.attr
                elif isinstance(f, ast.Name) and f.id in direct:
                    yield child.lineno, func, direct[f.id]
            yield from visit(child, inner)

    yield from visit(tree, None)


def _is_cli(path: Path) -> bool:
    rel = path.relative_to(_ROOT)
    return rel.parts[0] == _CLI_PACKAGE or str(rel) in _CLI_FILES


def _backend_offenders(files) -> list[str]:
    """Library code that switches matplotlib's backend (``matplotlib.use``, ``pyplot.switch_backend``)."""
    bad = []
    for path in files:
        if _is_cli(path):
            continue
        calls = list(_module_calls(path, "matplotlib", ("use",)))
        calls += list(_module_calls(path, "matplotlib.pyplot", ("switch_backend",)))
        bad += [f"{path.relative_to(_ROOT.parent)}:{line}: {name}()" for line, _, name in calls]
    return bad


#: the one JSON writer of the commands: (file under jaxmetrics/, function)
_JSON_WRITER = ("commands/_util.py", "write_json")


def _json_offenders(files) -> list[str]:
    """``json.dump`` / ``json.dumps`` in the CLI layer outside the one writer."""
    bad = []
    for path in files:
        if not _is_cli(path):
            continue
        rel = str(path.relative_to(_ROOT))
        for line, func, name in _module_calls(path, "json", ("dump", "dumps")):
            if (rel, func) != _JSON_WRITER:
                bad.append(f"{path.relative_to(_ROOT.parent)}:{line}: json.{name}()")
    return bad


def _literal_strings(node: ast.AST) -> tuple[str, ...] | None:
    """The strings of a literal tuple / list / set of at least two strings, else ``None``."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


def _choice_offenders(files, library_lists) -> list[str]:
    """In the CLI layer: a literal ``choices=``, or a literal list of names equal (as a set) to one
    of ``library_lists`` (a copy of a library constant)."""
    bad = []
    for path in files:
        if not _is_cli(path):
            continue
        where = path.relative_to(_ROOT.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "choices" and _literal_strings(kw.value) is not None:
                        bad.append(f"{where}:{node.lineno}: choices={ast.unparse(kw.value)}")
            names = _literal_strings(node)
            if names is not None and any(set(names) == set(lib) for lib in library_lists):
                bad.append(f"{where}:{node.lineno}: {ast.unparse(node)} copies a library list")
    return sorted(set(bad))


def _command_choices():
    """``(command, option, choices)`` of every option with choices, from the real parser."""
    from jaxmetrics.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return [(name, a.option_strings[0] if a.option_strings else a.dest, a.choices)
            for name, p in sorted(sub.choices.items()) for a in p._actions if a.choices is not None]


def _library_lists(choices) -> list[tuple[str, ...]]:
    """The library constants behind the commands' choices (without the options' own additions)."""
    from jaxmetrics.commands._util import LibraryChoices

    out = []
    for _, _, c in choices:
        if isinstance(c, LibraryChoices):
            value = getattr(importlib.import_module(c.module), c.name)
            out.append(tuple(value() if callable(value) else value))
    return out


def test_thin_cli_checks_catch_what_they_should(tmp_path, monkeypatch):
    """The three checks below on a fake tree, with file:line."""
    root = tmp_path / "jaxmetrics"
    (root / "commands").mkdir(parents=True)
    (root / "mauve").mkdir()
    (root / "mauve" / "plot.py").write_text(
        "import matplotlib as mpl\n"
        "def f():\n"
        "    mpl.use('Agg')\n"                                  # line 3: switches the backend
        "    import matplotlib.pyplot as plt\n"
        "    plt.switch_backend('svg')\n")                      # line 5
    (root / "commands" / "_util.py").write_text(
        "import json\n"
        "def write_json(path, obj):\n"
        "    return json.dumps(obj)\n")                         # the one writer: fine
    (root / "commands" / "x.py").write_text(
        "from json import dump\n"
        "NAMES = ('kl', 'js')\n"                                # line 2: a copy of a library list
        "def run(p, f):\n"
        "    dump({}, f)\n"                                     # line 4: JSON by hand
        "    p.add_argument('--m', choices=('a', 'b'))\n")      # line 5: literal choices
    (root / "cli.py").write_text("import matplotlib\nmatplotlib.use('Agg')\n")   # the CLI may
    monkeypatch.setattr(__import__(__name__), "_ROOT", root)
    files = sorted(root.rglob("*.py"))
    assert _backend_offenders(files) == ["jaxmetrics/mauve/plot.py:3: use()",
                                         "jaxmetrics/mauve/plot.py:5: switch_backend()"]
    assert _json_offenders(files) == ["jaxmetrics/commands/x.py:4: json.dump()"]
    assert _choice_offenders(files, [("js", "kl", "tv")]) == ["jaxmetrics/commands/x.py:5: choices=('a', 'b')"]
    assert _choice_offenders(files, [("js", "kl")]) == ["jaxmetrics/commands/x.py:2: ('kl', 'js') copies a library list",
                                                        "jaxmetrics/commands/x.py:5: choices=('a', 'b')"]


def test_plots_never_switch_the_backend():
    bad = _backend_offenders(_library_files())
    assert not bad, "library code switches matplotlib's backend; draw on a Figure (or the user's backend) " \
                    "and leave the choice to the user or the CLI entry (docs/conventions.md, rule 10):\n" + \
                    "\n".join(bad)


def test_commands_write_json_through_the_one_writer():
    bad = _json_offenders(_library_files())
    assert not bad, "a command writes JSON by hand; call jaxmetrics.commands._util.write_json with the " \
                    "result (docs/conventions.md, rule 10):\n" + "\n".join(bad)


def test_command_choices_come_from_the_library():
    """Every option with choices reads a library constant (:class:`LibraryChoices`, resolved when
    first needed); no command spells out a list of names the library defines."""
    from jaxmetrics.commands._util import LibraryChoices

    choices = _command_choices()
    literal = [f"jaxmetrics {cmd} {opt}" for cmd, opt, c in choices if not isinstance(c, LibraryChoices)]
    assert not literal, "choices spelled out in the command line; offer the library's constant through " \
                        "LibraryChoices (docs/conventions.md, rule 10):\n" + "\n".join(literal)
    for cmd, opt, c in choices:
        assert len(c) >= 2 and all(isinstance(x, str) for x in c), (cmd, opt, c)
    bad = _choice_offenders(_library_files(), _library_lists(choices))
    assert not bad, "the command line copies a list of names the library defines (docs/conventions.md, " \
                    "rule 10):\n" + "\n".join(bad)


#: the resampling options of the commands, declared only by the helpers of commands/_util.py
#: (``add_confidence_options``: an interval of one set, off unless asked; ``add_significance_options``:
#: comparisons of systems, settings or metrics)
_RESAMPLING_OPTIONS = ("--num-resamples", "--confidence", "--alpha")
_RESAMPLING_HELPERS = "commands/_util.py"


def _resampling_option_offenders(files) -> list[str]:
    """In the CLI layer outside the helpers' module: an ``add_argument`` of a resampling option."""
    bad = []
    for path in files:
        if not _is_cli(path) or str(path.relative_to(_ROOT)) == _RESAMPLING_HELPERS:
            continue
        where = path.relative_to(_ROOT.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                for a in node.args:
                    if isinstance(a, ast.Constant) and a.value in _RESAMPLING_OPTIONS:
                        bad.append(f"{where}:{node.lineno}: {a.value}")
    return bad


def test_resampling_options_are_declared_once(tmp_path, monkeypatch):
    """Every command's ``--num-resamples`` / ``--confidence`` / ``--alpha`` comes from one of the two
    helpers of ``commands/_util.py`` (one set of names, defaults, help and checks), and every
    command that resamples has the whole set of its helper: the real parser's defaults are those
    of one helper or the other."""
    bad = _resampling_option_offenders(_library_files())
    assert not bad, "a command declares a resampling option by hand; use add_confidence_options or " \
                    "add_significance_options (docs/conventions.md, rule 10):\n" + "\n".join(bad)
    from jaxmetrics.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    families = {(None, None, None): "add_confidence_options", (1000, 0.95, 0.05): "add_significance_options"}
    seen = set()
    for name, parser in sorted(sub.choices.items()):
        opts = {o: a for a in parser._actions for o in a.option_strings}
        if "--num-resamples" not in opts:
            continue
        alpha = opts["--alpha"].default if "--alpha" in opts else None
        key = (opts["--num-resamples"].default, opts["--confidence"].default, alpha)
        assert key in families, (name, key)
        seen.add(families[key])
    assert seen == set(families.values())
    # the check itself, on a fake tree
    root = tmp_path / "jaxmetrics"
    (root / "commands").mkdir(parents=True)
    (root / "commands" / "_util.py").write_text("def add(p):\n    p.add_argument('--alpha')\n")
    (root / "commands" / "x.py").write_text("def reg(p):\n    p.add_argument('--seed')\n"
                                             "    p.add_argument('--alpha', type=float)\n")
    monkeypatch.setattr(__import__(__name__), "_ROOT", root)
    assert _resampling_option_offenders(sorted(root.rglob("*.py"))) == ["jaxmetrics/commands/x.py:3: --alpha"]


# --------------------------------------------------------------------------- rule 12: one name per concept

#: The most parameters a public function takes; settings that travel together are one settings
#: object instead (``FrontierSettings``, a quantizer instance). The compatibility functions keep
#: their anchors' signatures.
MAX_PARAMETERS = 16
#: Retired names of a concept and the names that replace them (docs/conventions.md, "One name per
#: concept"): c, m, k, randomness and the two sets.
RETIRED_NAMES = {
    "mauve_scaling_factor": "scaling",
    "divergence_curve_discretization_size": "num_points",
    "num_bins": "num_buckets",
    "num_clusters": "num_buckets",
    "p_features": "references",
    "q_features": "candidates",
    "eval_seed": "seed",
    "mauve_seed": "seed / seeds",
}


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_at_most_16_parameters(qual, func, owner):
    if qual.rsplit(".", 1)[-1] in COMPAT:
        return
    n = len(_params(func))
    assert n <= MAX_PARAMETERS, (f"{qual}: {n} parameters (at most {MAX_PARAMETERS}); pass the settings that "
                                 "travel together as one settings object (rule 12)")


@pytest.mark.parametrize("qual,func,owner", FUNCTIONS, ids=_ids(FUNCTIONS))
def test_no_retired_names_of_a_concept(qual, func, owner):
    if qual.rsplit(".", 1)[-1] in COMPAT:
        return
    for p in _params(func):
        if p.name in RETIRED_NAMES:
            pytest.fail(f"{qual}: argument {p.name!r} is a retired name; call it {RETIRED_NAMES[p.name]} (rule 12)")


#: MAUVE's c and m under every name they are passed by.
_FRONTIER_ARGUMENTS = {"scaling", "mauve_scaling_factor", "num_points", "divergence_curve_discretization_size"}


def _frontier_check_offenders(files) -> list[str]:
    """``check_positive`` / ``check_int`` calls on c or m (by the argument name they report)."""
    bad = []
    for path in files:
        rel = path.relative_to(_ROOT.parent).as_posix()
        if rel == "jaxmetrics/mauve/frontier/settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn not in ("check_positive", "check_int") or len(node.args) < 2:
                continue
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value in _FRONTIER_ARGUMENTS:
                bad.append(f"{rel}:{node.lineno}: {fn}(..., {name.value!r})")
    return bad


def test_mauve_c_and_m_are_checked_once():
    """c and m are checked by ``FrontierSettings`` only; every public function reports its error,
    naming the argument the user passed."""
    from jaxmetrics.mauve import (FrontierSettings, compare_mauve, compute_mauve, compute_mauve_seeds,
                                  estimate_mauve, mauve_attribution, mauve_shared_codebook, mauve_sweep)

    bad = _frontier_check_offenders([p for p in _library_files() if "/mauve/" in p.as_posix()])
    assert not bad, "a check of c or m outside FrontierSettings:\n" + "\n".join(bad)
    with pytest.raises(ValueError) as e:
        FrontierSettings(scaling=0.0)
    message = str(e.value)
    assert message.startswith("scaling: ")
    x = np.random.default_rng(0).normal(size=(40, 4))
    calls = {
        "compute_mauve_seeds": lambda: compute_mauve_seeds(references=x, candidates=x, scaling=0.0),
        "compare_mauve": lambda: compare_mauve(references=x, systems={"a": x, "b": x}, key=jax.random.key(0),
                                               scaling=0.0),
        "mauve_attribution": lambda: mauve_attribution(references=x, candidates=x, scaling=0.0),
        "mauve_shared_codebook": lambda: mauve_shared_codebook([(x, x)], scaling=0.0),
        "estimate_mauve": lambda: estimate_mauve(references=x, candidates=x, key=jax.random.key(0), scaling=0.0),
        "mauve_sweep": lambda: mauve_sweep(references=x, candidates={"a": x}, over="k", scaling=0.0),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == message, f"{name}: {e.value}"
    with pytest.raises(ValueError) as e:
        compute_mauve(p_features=x, q_features=x, mauve_scaling_factor=0.0)
    assert str(e.value) == "mauve_scaling_factor: " + message[len("scaling: "):]


# ------------------------------------------------------------------ function length (rule 13)
MAX_CODE_LINES = 100


def _code_lines(node: ast.AST, source_lines: list[str]) -> int:
    """Lines of a function holding code, its signature included: the docstring, comments and
    blank lines are not counted."""
    lines = set(range(node.lineno, node.end_lineno + 1))
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= set(range(first.lineno, first.end_lineno + 1))
    return sum(1 for i in lines if source_lines[i - 1].strip() and not source_lines[i - 1].strip().startswith("#"))


def _long_functions(files, limit: int = MAX_CODE_LINES) -> list[str]:
    bad = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(node, lines)
                if n > limit:
                    bad.append(f"{path.relative_to(_ROOT.parent)}:{node.lineno}: {node.name} has {n} code lines")
    return bad


def test_the_length_rule_counts_code_only(tmp_path):
    src = tmp_path / "f.py"
    src.write_text('def f(a,\n      b):\n    """Doc.\n\n    more doc\n    """\n    # a comment\n\n'
                   '    x = (a +\n         b)\n    return x\n')
    tree = ast.parse(src.read_text())
    assert _code_lines(tree.body[0], src.read_text().splitlines()) == 5


def test_no_function_is_over_100_code_lines():
    bad = _long_functions(_library_files())
    assert not bad, f"split these into named steps (at most {MAX_CODE_LINES} code lines a function):\n" + "\n".join(bad)


# ------------------------------------------------------------------ folders a reader can scan (rule 14)
MAX_MODULES_PER_FOLDER = 15


def test_no_folder_holds_over_15_modules():
    """Each folder of the package holds at most 15 modules (``__init__.py`` not counted): a
    family that grows splits into sub-packages named after what they hold, as MAUVE's stages do."""
    bad = []
    for folder in [_ROOT, *(p for p in _ROOT.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            bad.append(f"{folder.relative_to(_ROOT.parent)}: {len(modules)} modules")
    assert not bad, f"split these folders (at most {MAX_MODULES_PER_FOLDER} modules each):\n" + "\n".join(bad)
