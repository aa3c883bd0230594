#!/usr/bin/env python3
"""lint-deploy's engine classifications added for deploy files and serve flags, against an
independent oracle over whole-module ASTs of the release wheels and the pinned engine:

- `bare_deploy_name`: `raises` when an engine class's `__init__` passes a name bound from
  `kwargs.get("deploy_config")` straight to `load_deploy_config`; else `lookup` when a config
  function both tests a path's `.parent` and joins `_DEPLOY_DIR / …`; else `ignored` when one
  warns "… pipeline defaults only"; else `lookup`. Only config modules some other module imports
  count (one merely re-exported by its package decides nothing at start-up).
- `rejection_set` / `rejection_set_filled`: the `getattr(args, NAME)` a comprehension over the
  refused-flags dict tests `dest in` against, and whether any module of the whole package stores
  NAME (an attribute or subscript store, or `setattr`).
- `other_top_level_keys`: `modes` / `runtime` read anywhere in the package as `getattr(x, KEY)` or
  `x.get(KEY)`, in a module that also names `load_yaml_config` or `stage_args` (a deploy reader).

The shipped lint models (evidence/lint-models.json) must agree on every engine. This parses the
engine's code; it runs none of it.

    python3 benchmarks/validate_deploy_behaviours.py --wheels DIR [--source /path/to/vllm-omni]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.lintmodels import load  # noqa: E402

CONFIG = ("vllm_omni/config/", "vllm_omni/engine/")


def _trees(files: dict[str, str]) -> dict[str, ast.Module]:
    trees = {}
    for path, text in files.items():
        try:
            trees[path] = ast.parse(text)
        except SyntaxError:
            continue
    return trees


def _is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
    )


def _const_arg(call: ast.Call, index: int) -> str | None:
    if len(call.args) > index and isinstance(call.args[index], ast.Constant):
        value = call.args[index].value
        return value if isinstance(value, str) else None
    return None


def _imported(path: str, trees: dict[str, ast.Module]) -> bool:
    """Whether a module other than itself and its package's `__init__` imports it: one only
    re-exported (a config no stage path builds) does not decide how start-up treats a name."""
    module = path[: -len(".py")].replace("/", ".")
    package_init = path.rsplit("/", 1)[0] + "/__init__.py"
    for other, tree in trees.items():
        if other in (path, package_init):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module == module:
                return True
            if isinstance(n, ast.Import) and any(a.name == module for a in n.names):
                return True
    return False


def bare_name(trees: dict[str, ast.Module]) -> str:
    for path, tree in trees.items():
        if not path.startswith("vllm_omni/engine/"):
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name.endswith("Engine")):
            for func in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"):
                raw = {
                    t.id
                    for n in ast.walk(func)
                    if isinstance(n, ast.Assign)
                    and any(_is_call(c, "get") and _const_arg(c, 0) == "deploy_config" for c in ast.walk(n.value))
                    for t in n.targets
                    if isinstance(t, ast.Name)
                }
                for call in (n for n in ast.walk(func) if _is_call(n, "load_deploy_config")):
                    if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in raw:
                        return "raises"
    functions = [
        f
        for path, tree in trees.items()
        if path.startswith(CONFIG) and _imported(path, trees)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
    ]
    for func in functions:
        nodes = list(ast.walk(func))
        tests_parent = any(
            isinstance(n, ast.Compare) and isinstance(n.left, ast.Attribute) and n.left.attr == "parent" for n in nodes
        )
        joins_dir = any(
            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and getattr(n.left, "id", "") == "_DEPLOY_DIR"
            for n in nodes
        )
        if tests_parent and joins_dir:
            return "lookup"
    for func in functions:
        if any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) and "pipeline defaults only" in n.value
            for n in ast.walk(func)
        ):
            return "ignored"
    return "lookup"


def rejection(trees: dict[str, ast.Module]) -> tuple[str, bool]:
    tree = trees.get("vllm_omni/entrypoints/cli/serve.py")
    name = ""
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "validate") if tree else ():
        bound = {
            n.target.id if isinstance(n, ast.AnnAssign) else n.targets[0].id: _const_arg(call, 1)
            for n in ast.walk(func)
            if isinstance(n, ast.AnnAssign | ast.Assign)
            and isinstance(n.target if isinstance(n, ast.AnnAssign) else n.targets[0], ast.Name)
            for call in [next((c for c in ast.walk(n.value) if _is_call(c, "getattr")), None) if n.value else None]
            if call is not None
        }
        for comp in (n for n in ast.walk(func) if isinstance(n, ast.ListComp | ast.GeneratorExp | ast.SetComp)):
            for gen in comp.generators:
                if not _is_call(gen.iter, "items"):
                    continue
                for test in gen.ifs:
                    for right in getattr(test, "comparators", []):
                        if isinstance(right, ast.Name) and bound.get(right.id):
                            name = bound[right.id] or ""
    if not name:
        return "", True
    for tree in trees.values():
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr == name and isinstance(n.ctx, ast.Store):
                return name, True
            if (
                isinstance(n, ast.Subscript)
                and isinstance(n.ctx, ast.Store)
                and getattr(n.slice, "value", None) == name
            ):
                return name, True
            if _is_call(n, "setattr") and _const_arg(n, 1) == name:
                return name, True
    return name, False


def other_keys(trees: dict[str, ast.Module], texts: dict[str, str]) -> set[str]:
    found = set()
    for path, tree in trees.items():
        if "load_yaml_config" not in texts[path] and "stage_args" not in texts[path]:
            continue
        for n in ast.walk(tree):
            if _is_call(n, "getattr") and _const_arg(n, 1) in ("modes", "runtime"):
                found.add(_const_arg(n, 1))
            if _is_call(n, "get") and isinstance(n.func, ast.Attribute) and _const_arg(n, 0) in ("modes", "runtime"):
                found.add(_const_arg(n, 0))
    return {k for k in found if k}


def engine_files(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        return {
            n: zf.read(n).decode("utf-8", "replace")
            for n in zf.namelist()
            if n.startswith("vllm_omni/") and n.endswith(".py")
        }


def pin_files(source: Path) -> dict[str, str]:
    revision = json.loads((ROOT / "provenance.json").read_text(encoding="utf-8"))["revision"]
    names = subprocess.run(
        ["git", "--git-dir", str(source), "ls-tree", "-r", "--name-only", revision, "vllm_omni/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = {}
    for name in (n for n in names if n.endswith(".py")):
        files[name] = subprocess.run(
            ["git", "--git-dir", str(source), "show", f"{revision}:{name}"], capture_output=True, text=True, check=True
        ).stdout
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--source", type=Path)
    args = parser.parse_args()
    engines = {w.name.split("-")[1]: (lambda w=w: engine_files(w)) for w in sorted(args.wheels.glob("vllm_omni-*.whl"))}
    if args.source:
        engines["pin"] = lambda: pin_files(args.source)
    disagreements = checked = 0
    for engine, read in engines.items():
        texts = read()
        trees = _trees(texts)
        model, _spans, _ = load(ROOT, engine)
        oracle_set, oracle_filled = rejection(trees)
        pairs = {
            "bare_deploy_name": (bare_name(trees), model.bare_deploy_name),
            "rejection_set": (oracle_set, model.rejection_set),
            "rejection_set_filled": (oracle_filled, model.rejection_set_filled),
            "other_top_level_keys": (sorted(other_keys(trees, texts)), sorted(model.other_top_level_keys)),
        }
        for what, (theirs, ours) in pairs.items():
            checked += 1
            ok = theirs == ours
            disagreements += not ok
            print(f"{engine:8} {what:22} oracle {theirs!s:28} lint {ours!s}{'' if ok else '  DISAGREES'}")
    print(f"disagreements: {disagreements} of {checked} checks over {len(engines)} engines")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
