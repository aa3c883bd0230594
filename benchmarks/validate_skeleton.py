#!/usr/bin/env python3
"""The model-catalogue checks parse engine modules with their function bodies left out
(`omni_skill.engine_modules.skeleton`). This compares, for every Python file under vllm_omni/ at a
revision, what those checks read — imports, module and class-level assignments, class names,
bases and keywords, through if/try/with blocks — from the full parse and from the skeleton.

    python3 benchmarks/validate_skeleton.py --source /path/to/vllm-omni [--revision REV]

Exit 1 when any file differs; a skeleton that does not parse is counted (the checks then parse
the whole file).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from omni_skill.engine_modules import skeleton  # noqa: E402


def read(body: list[ast.stmt], prefix: str, out: list[object]) -> None:
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
            out.append((prefix, ast.dump(stmt)))
        elif isinstance(stmt, ast.ClassDef):
            bases = ast.dump(ast.Tuple(elts=stmt.bases, ctx=ast.Load()))
            out.append((prefix, "class", stmt.name, bases, [ast.dump(k) for k in stmt.keywords]))
            read(stmt.body, f"{prefix}{stmt.name}.", out)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
            blocks = [stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
            blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
            for block in blocks:
                read(block, prefix, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True)
    parser.add_argument("--revision", default="HEAD")
    args = parser.parse_args()
    git = ["git", "--git-dir", args.source]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", args.revision, "--", "vllm_omni"],
        capture_output=True,
        text=True,
        check=True,
    )
    files = [f for f in listing.stdout.split() if f.endswith(".py")]
    same, differ, unparsed, full_s, skeleton_s = 0, [], 0, 0.0, 0.0
    for path in files:
        text = subprocess.run(
            [*git, "show", f"{args.revision}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        start = time.perf_counter()
        full = ast.parse(text)
        middle = time.perf_counter()
        try:
            short = ast.parse(skeleton(text))
        except SyntaxError:
            unparsed += 1
            continue
        end = time.perf_counter()
        full_s, skeleton_s = full_s + middle - start, skeleton_s + end - middle
        wanted: list[object] = []
        got: list[object] = []
        read(full.body, "", wanted)
        read(short.body, "", got)
        if wanted == got:
            same += 1
        else:
            differ.append(path)
    print(f"{len(files)} files: {same} read the same, {len(differ)} differ, {unparsed} skeletons do not parse")
    print(f"parse time: full {full_s:.2f} s, skeleton (built and parsed) {skeleton_s:.2f} s")
    for path in differ:
        print(f"  differs: {path}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
