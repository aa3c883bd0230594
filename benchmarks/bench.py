#!/usr/bin/env python3
"""Speed of the helper scripts against a real engine clone, beside the floor.

    python3 benchmarks/bench.py check --source /path/to/vllm-omni [--repeat 5]
    python3 benchmarks/bench.py bump --source /path/to/vllm-omni [--months 6]
    python3 benchmarks/bench.py commands --source /path/to/vllm-omni --wheels DIR [--repeat 5] [--only find]

`check`: generates a citation for every class and function under vllm_omni/ at the pinned
revision, then times `resolve` and `check --source` on that synthetic skill, and the floor: the
same blobs read through one `git cat-file --batch` and each parsed once. It also times
`check --source` on the skill's own citations, in process and as a command.
`bump`: times `bump --dry-run` of the skill's own citations to the commit N months before the
pinned revision and back.
`commands`: each verb as a user runs it (a new interpreter, bytecode caching on), best of N
rounds that each run every row once, beside a calibration row and the floors: interpreter start
alone, and interpreter start plus reading the cited blobs (from git, or from the newest wheel) —
against the targets of the issues that set them.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.anchors import python as py_anchors  # noqa: E402
from omni_skill.checks import run_check  # noqa: E402
from omni_skill.cli import main  # noqa: E402
from omni_skill.provenance import load_provenance  # noqa: E402
from omni_skill.source import Source  # noqa: E402

PAGE_LINES = 250


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def git(source: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(source), *args], capture_output=True, text=True, check=True).stdout


def synthetic_skill(source: Path, revision: str, dest: Path) -> int:
    """A skill citing every unambiguous class and function under vllm_omni/."""
    listing = git(source, "ls-tree", "-r", revision, "--", "vllm_omni")
    labels: list[str] = []
    for row in listing.splitlines():
        meta, path = row.split("\t", 1)
        if not path.endswith(".py") or meta.split()[0] != "100644":
            continue
        text = git(source, "cat-file", "blob", meta.split()[2])
        try:
            found = py_anchors.definitions(text)
        except Exception:
            continue
        for name, nodes in found.items():
            if len(nodes) == 1 and isinstance(nodes[0][1], (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                labels.append(f"src:{path}::{name}")
    pages = [labels[i : i + PAGE_LINES] for i in range(0, len(labels), PAGE_LINES)]
    branch = dest / "references/bench"
    branch.mkdir(parents=True)
    entry = ["# Bench", ""] + [f"- [page {n}](p{n}.md)" for n in range(len(pages))]
    (branch / "README.md").write_text("\n".join(entry) + "\n")
    for n, chunk in enumerate(pages):
        (branch / f"p{n}.md").write_text(f"# Page {n}\n\n" + "\n".join(f"[x][{label}]" for label in chunk) + "\n")
    (dest / "SKILL.md").write_text(
        "---\nname: vllm-omni\ndescription: bench\n---\n\n[bench](references/bench/README.md)\n"
    )
    return len(labels)


def floor(source: Path, revision: str, paths: list[str]) -> None:
    """Read the blobs in one `git cat-file --batch` and parse each once."""
    shas = {}
    for row in git(source, "ls-tree", "-r", revision).splitlines():
        meta, path = row.split("\t", 1)
        shas[path] = meta.split()[2]
    request = "".join(f"{shas[p]}\n" for p in paths).encode()
    out = subprocess.run(
        ["git", "--git-dir", str(source), "cat-file", "--batch"], input=request, capture_output=True, check=True
    ).stdout
    stream = io.BytesIO(out)
    for path in paths:
        size = int(stream.readline().split()[2])
        text = stream.read(size).decode("utf-8")
        stream.read(1)
        if path.endswith(".py"):
            ast.parse(text)
        elif path.endswith((".yaml", ".yml")):
            import yaml

            yaml.compose(text)
        else:
            text.splitlines()


def quiet(argv: list[str]) -> int:
    with redirect_stdout(io.StringIO()):
        return main(argv)


def cmd_check(args: argparse.Namespace) -> None:
    source = Path(args.source)
    provenance = load_provenance(ROOT)
    revision = args.revision or provenance.revision
    with tempfile.TemporaryDirectory() as tmp:
        skill = Path(tmp) / "skill"
        count = synthetic_skill(source, revision, skill)
        resolve_s = best(
            lambda: quiet(["resolve", "--root", str(skill), "--source", str(source), "--revision", revision]),
            args.repeat,
        )
        index = json.loads((skill / "evidence/index.json").read_text())
        paths = sorted({r["path"] for r in index["records"]})

        def check_once() -> None:
            py_anchors.definitions.cache_clear()
            run_check(skill, Source(source, revision), installed=False)

        check_s = best(check_once, args.repeat)
        floor_s = best(lambda: floor(source, revision, paths), args.repeat)
        cli = [sys.executable, str(ROOT / "scripts/omni-skill"), "check", "--root", str(skill), "--source", str(source)]
        cli_s = best(lambda: subprocess.run(cli, capture_output=True), max(1, args.repeat // 2))
    own = [sys.executable, str(ROOT / "scripts/omni-skill"), "check", "--root", str(ROOT), "--source", str(source)]
    own_cli_s = best(lambda: subprocess.run(own, capture_output=True), args.repeat)
    own_index = json.loads((ROOT / "evidence/index.json").read_text())

    def own_check() -> None:
        py_anchors.definitions.cache_clear()
        run_check(ROOT, Source(source, provenance.revision), installed=False)

    own_s = best(own_check, args.repeat)
    print(f"synthetic skill: {count} citations in {len(paths)} files at {revision[:12]}")
    print(f"  resolve (in process)           {resolve_s:7.3f} s")
    print(f"  check --source (in process)    {check_s:7.3f} s")
    print(f"  floor: cat-file --batch + parse {floor_s:6.3f} s")
    print(f"  ratio check / floor            {check_s / floor_s:7.2f}x")
    print(f"  check --source (command)       {cli_s:7.3f} s")
    print(
        f"skill's own citations: {len(own_index['records'])} in {len({r['path'] for r in own_index['records']})} files"
    )
    print(f"  check --source (in process)    {own_s:7.3f} s")
    print(f"  check --source (command)       {own_cli_s:7.3f} s")


def cmd_bump(args: argparse.Namespace) -> None:
    source = Path(args.source)
    provenance = load_provenance(ROOT)
    pinned = provenance.revision
    date = git(source, "show", "-s", "--format=%cI", pinned).strip()
    cutoff = datetime.fromisoformat(date) - timedelta(days=round(args.months * 30.44))
    before = git(source, "rev-list", "-1", f"--before={cutoff.isoformat()}", pinned).strip()
    with tempfile.TemporaryDirectory() as tmp:
        skill = Path(tmp) / "skill"
        shutil.copytree(
            ROOT, skill, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "tests", "benchmarks")
        )
        argv = ["bump", "--root", str(skill), "--source", str(source), "--to", before, "--dry-run", "--format", "json"]
        out = io.StringIO()
        start = time.perf_counter()
        with redirect_stdout(out):
            main(argv)
        elapsed = time.perf_counter() - start
        report = json.loads(out.getvalue())
        cli = [sys.executable, str(ROOT / "scripts/omni-skill"), *argv]
        cli_s = best(lambda: subprocess.run(cli, capture_output=True), 3)
    span = git(source, "show", "-s", "--format=%cI", before).strip()
    print(f"bump --dry-run {pinned[:12]} ({date}) -> {before[:12]} ({span})")
    print(f"  counts: {report['counts']}")
    print(f"  in process {elapsed:.3f} s; as a command (best of 3) {cli_s:.3f} s")


COMMAND_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VLLM_OMNI_SOURCE")}


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], capture_output=True, env=COMMAND_ENV)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr.decode()[-300:]}")
    return elapsed


def command_times(argvs: list[list[str]], repeat: int) -> list[float]:
    """Best of `repeat` per command, the rounds interleaved (each round runs every command once),
    so that a slow spell of the machine costs one round of every row, not every run of one row."""
    for argv in argvs:
        run_once(argv)  # warms the bytecode cache
    times = [[run_once(argv) for argv in argvs] for _ in range(repeat)]
    return [min(column) for column in zip(*times, strict=True)]


WHEEL_FLOOR = r"""
import sys, zipfile, json
paths = {r["path"] for r in json.load(open(sys.argv[1]))["records"]}
with zipfile.ZipFile(sys.argv[2]) as archive:
    names = set(archive.namelist())
    for path in sorted(paths & names):
        archive.read(path).decode("utf-8")
"""

GIT_FLOOR = r"""
import subprocess, sys, json
paths = sorted({r["path"] for r in json.load(open(sys.argv[1]))["records"]})
source, revision = sys.argv[2], sys.argv[3]
listing = subprocess.run(
    ["git", "--git-dir", source, "ls-tree", "-r", revision], capture_output=True, text=True, check=True
).stdout
shas = {row.split("\t", 1)[1]: row.split()[2] for row in listing.splitlines()}
request = "".join(shas[p] + "\n" for p in paths if p in shas).encode()
out = subprocess.run(["git", "--git-dir", source, "cat-file", "--batch"], input=request, capture_output=True)
if out.returncode or len(out.stdout) < 100000:
    raise SystemExit(2)
"""


LINT_SAMPLE = Path(tempfile.gettempdir()) / "omni-skill-bench-deploy.yaml"


def cmd_commands(args: argparse.Namespace) -> None:
    LINT_SAMPLE.write_text(
        "pipeline: qwen3_omni_moe\nstages:\n  - stage_id: 0\n    devices: '0'\n    gpu_memory_utilization: 0.5\n"
        "  - stage_id: 1\n    devices: '1'\n    max_num_seq: 8\n",
        encoding="utf-8",
    )
    source = str(args.source)
    wheels = sorted(Path(args.wheels).glob("*.whl"))
    newest = str(wheels[-1])
    tool = str(ROOT / "scripts/omni-skill")
    index = str(ROOT / "evidence/index.json")
    revision = load_provenance(ROOT).revision
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site-packages"
        import zipfile

        with zipfile.ZipFile(newest) as archive:
            archive.extractall(site)
        rows = [
            # The same pure-Python work every run: this shared machine's speed drifts by up to half
            # between runs, so read the rows below against it (0.50-0.55 s on a quiet run).
            ("calibration: sum(range(3*10**7)), no I/O", ["-c", "sum(range(3 * 10**7))"], None),
            ("interpreter start (floor)", ["-c", "pass"], None),
            ("start + read cited blobs from git (floor)", ["-c", GIT_FLOOR, index, source, revision], None),
            ("start + read cited members of a wheel (floor)", ["-c", WHEEL_FLOOR, index, newest], None),
            ("check (offline)", [tool, "check"], 0.6),
            ("search-space", [tool, "search-space"], 0.3),
            # find: a setting (many pages), a symbol, a model key, a flag, and a miss (every page parsed)
            ("find max_num_seqs", [tool, "find", "max_num_seqs"], 0.3),
            ("find StagePool.pick", [tool, "find", "StagePool.pick"], 0.3),
            ("find qwen3_omni_moe", [tool, "find", "qwen3_omni_moe"], 0.3),
            ("find -- --stage-overrides", [tool, "find", "--", "--stage-overrides"], 0.3),
            ("find max_num_seq (unknown: suggestions)", [tool, "find", "max_num_seq"], 0.3),
            # release facts and lint-deploy, from the shipped data (no engine)
            ("facts --release 0.24.0 --kind flag", [tool, "facts", "--release", "0.24.0", "--kind", "flag"], 0.3),
            ("since -- --stage-configs-path", [tool, "since", "--", "--stage-configs-path"], 0.3),
            ("lint-deploy (pin, shipped model)", [tool, "lint-deploy", str(LINT_SAMPLE), "--gpus", "2"], 0.5),
            ("lint-deploy --release 0.24.0", [tool, "lint-deploy", str(LINT_SAMPLE), "--release", "0.24.0"], 0.5),
            ("check --source", [tool, "check", "--source", source], 1.0),
            (f"drift --wheel {Path(newest).name}", [tool, "drift", "--wheel", newest], 1.0),
            ("drift --engine-dir (installed layout)", [tool, "drift", "--engine-dir", str(site)], 1.0),
            (f"releases --dry-run ({len(wheels)} wheels)", [tool, "releases", "--dry-run", "--wheel", args.wheels], 10),
        ]
        if args.only:  # the calibration and floor rows, and the rows whose name holds the text
            rows = [row for row in rows if row[2] is None or args.only in row[0]]
        print(f"as commands, best of {args.repeat} interleaved rounds (bytecode caching on):")
        seconds_per_row = command_times([argv for _, argv, _ in rows], args.repeat)
        for (name, _, target), seconds in zip(rows, seconds_per_row, strict=True):
            verdict = "" if target is None else f"target <= {target:.1f} s: {'met' if seconds <= target else 'MISSED'}"
            print(f"  {name:<48} {seconds:6.3f} s  {verdict}")


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    check = sub.add_parser("check")
    check.add_argument("--source", required=True)
    check.add_argument("--revision")
    check.add_argument("--repeat", type=int, default=3)
    bump = sub.add_parser("bump")
    bump.add_argument("--source", required=True)
    bump.add_argument("--months", type=int, default=6)
    commands = sub.add_parser("commands")
    commands.add_argument("--source", required=True)
    commands.add_argument("--wheels", required=True, help="folder of release wheels")
    commands.add_argument("--repeat", type=int, default=5)
    commands.add_argument("--only", help="time only the rows whose name holds this text (e.g. find)")
    args = parser.parse_args()
    {"check": cmd_check, "bump": cmd_bump, "commands": cmd_commands}[args.what](args)


if __name__ == "__main__":
    main_bench()
