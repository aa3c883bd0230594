#!/usr/bin/env python3
"""lint-deploy over every bundled deploy file of an engine: the findings, and the time per file.

    python3 benchmarks/lint_deploy_corpus.py --source /path/to/vllm-omni      # the pinned revision
    python3 benchmarks/lint_deploy_corpus.py --wheel DIR/vllm_omni-0.30.0-py3-none-any.whl
    python3 benchmarks/lint_deploy_corpus.py --source P --commands 5            # also N files as a user runs it

Each file is linted as `lint-deploy --deploy-config NAME` does (a bare name is the engine's own
file), with the pipeline inferred as the verb infers it. `--commands N` times N whole commands
(a new interpreter each: engine read, model built, file linted, citations resolved).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.deploy_model import build  # noqa: E402
from omni_skill.engine import Engine  # noqa: E402
from omni_skill.lint_deploy import LintInput, run_lint  # noqa: E402
from omni_skill.provenance import load_provenance  # noqa: E402


def open_files(args: argparse.Namespace) -> Engine:
    if args.wheel:
        from omni_skill.trees import WheelTree

        tree = WheelTree(Path(args.wheel))
        return Engine(tree, "wheel", args.wheel, tree.version)
    from omni_skill.source import Source

    return Engine(Source(Path(args.source), load_provenance(ROOT).revision), "git", args.source)


def main() -> int:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--source")
    group.add_argument("--wheel")
    parser.add_argument("--commands", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    engine = open_files(args)
    paths = engine.paths()
    model = build(engine.files, paths)
    built = time.perf_counter() - start
    # The corpus checks what the bundled files hold, named bare as the engine's own default lookup
    # does (by its deploy folder), not how an engine takes a bare --deploy-config name.
    model.bare_deploy_name = "lookup"
    names = sorted(model.deploy_files)
    failing = 0
    lint_start = time.perf_counter()
    for name in names:
        if "/" in name:
            continue
        report = run_lint(model, LintInput(deploy=name, cwd=Path("/nonexistent")), engine.files, engine.describe())
        flagged = [f for f in report.findings if f.severity != "note"]
        failing += bool(flagged)
        print(f"{name}: pipeline {report.pipeline or '-'} ({report.pipeline_from or 'not inferred'})")
        for finding in flagged:
            print(f"  {finding.one_line()}")
    linted = time.perf_counter() - lint_start
    print(f"\n{len(names)} files, {failing} with errors or warnings")
    print(f"engine model built in {built:.3f} s; lint {linted / max(1, len(names)) * 1000:.1f} ms per file")
    if args.commands:
        engine_option = ["--wheel", args.wheel] if args.wheel else ["--source", args.source]
        times = []
        for name in names[: args.commands]:
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "scripts/omni-skill"),
                    "lint-deploy",
                    *engine_option,
                    "--deploy-config",
                    name,
                ],
                capture_output=True,
                check=False,
            )
            times.append(time.perf_counter() - t)
        print(f"whole command: best {min(times):.3f} s, worst {max(times):.3f} s over {len(times)} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
