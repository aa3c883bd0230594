"""The verbs that print the skill's data or copy it: install, package, models, find, read, search-space."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .common import (
    AGENTS,
    STAGE_TYPES,
    common_options,
    positive,
    skill_root,
)


def register(verbs: Any) -> None:
    inst = verbs.add_parser(
        "install",
        help="copy the skill where an agent discovers skills",
        description="Copy the runtime files (SKILL.md, references, evidence, provenance.json, scripts) as real files "
        "into Claude Code's, Codex's or Cursor's skills folder, then check the installed copy.",
    )
    common_options(inst, source=False)
    inst.add_argument("--agent", choices=AGENTS, required=True)
    inst.add_argument("--scope", choices=("user", "project"), default="user")
    inst.add_argument("--dest", type=Path, help="stands in for the home folder (user) or project folder (project)")
    inst.add_argument("--dry-run", action="store_true", help="say where and what; copy nothing")
    inst.add_argument("--force", action="store_true", help="replace whatever is at the destination")
    inst.set_defaults(run=cmd_install)

    pack = verbs.add_parser("package", help="write vllm-omni.skill, a zip of the runtime files")
    common_options(pack, source=False, fmt=False)
    pack.add_argument("--output", type=Path, default=Path("vllm-omni.skill"), help="default: ./vllm-omni.skill")
    pack.set_defaults(run=cmd_package)

    models = verbs.add_parser(
        "models",
        help="print the model catalogue: every pipeline-registry key and diffusion model at the pin",
        description="Print references/architecture-search/models.yaml (all entries, or the one NAME names: a "
        "pipeline-registry key or a diffusion architecture, case-insensitive) as YAML or JSON.",
    )
    common_options(models, source=False, fmt=False)
    models.add_argument("name", nargs="?", help="a pipeline key (e.g. qwen3_omni_moe) or a diffusion architecture")
    models.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    models.set_defaults(run=cmd_models)

    find = verbs.add_parser(
        "find",
        help="where the skill discusses a name: setting, flag, env var, symbol, config key, model, endpoint",
        description="Every section of the skill that names NAME (page, heading, line), most central first, and its "
        "entries in search-space.yaml, models.yaml and test-map.yaml. max_num_seqs, max-num-seqs and --max-num-seqs "
        "are one name; a symbol matches by its last segments (pick finds StagePool.pick). Exit 1 (with suggestions) "
        "when the skill names nothing by it.",
    )
    common_options(find, source=False, fmt=False)
    find.add_argument("name", help="the name; one that begins with - goes after --: find -- --max-num-seqs")
    find.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    find.add_argument(
        "--limit", type=positive, default=10, metavar="N", help="sections to list, most central first (default: 10)"
    )
    find.set_defaults(run=cmd_find)

    read = verbs.add_parser(
        "read",
        help="print one section of a page (PAGE:LINE as find prints it, or PAGE#anchor), citations numbered",
        description="Print the section of a skill page under the nearest heading at or above LINE, or the one an "
        "anchor names, or the whole page's prose. Citations become their link text with a number, and each number "
        "is listed once below as the cited path and lines: the same facts in fewer characters than the page.",
    )
    common_options(read, source=False, fmt=False)
    read.add_argument("target", help="PAGE:LINE, PAGE#anchor or PAGE (references/ may be left out)")
    read.add_argument(
        "--toc", action="store_true", help="a page's opening summary and its sections (anchor, line, size) only"
    )
    read.set_defaults(run=cmd_read)

    space = verbs.add_parser(
        "search-space",
        help="print the engine search space",
        description="Print the settings of search-space.yaml, filtered, for a tuning loop.",
    )
    common_options(space, source=False, fmt=False)
    space.add_argument(
        "--stage-type", choices=STAGE_TYPES, help="keep settings that apply to this stage execution type"
    )
    space.add_argument(
        "--scope", choices=("per-stage", "pipeline", "diffusion", "env", "cli"), help="keep settings of this scope"
    )
    space.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    space.set_defaults(run=cmd_search_space)


def cmd_install(args: argparse.Namespace) -> int:
    from ..checks import run_check
    from ..install import destination, install
    from ..report import check_data, render

    root = skill_root(args)
    target = destination(args.agent, args.scope, args.dest)
    files = install(root, target, args.force, args.dry_run)
    if args.dry_run:
        print(f"install --dry-run: would copy {len(files)} files to {target}")
        return 0
    print(f"install: copied {len(files)} files to {target}", file=sys.stderr)
    report = run_check(target, None, installed=True)
    sys.stdout.write(render("check", check_data(report), args.format))
    return 0 if report.ok else 1


def cmd_package(args: argparse.Namespace) -> int:
    from ..checks import run_check
    from ..install import package, runtime_files

    root = skill_root(args)
    runtime_files(root)  # a symbolic link or a missing part first: that is what to fix
    report = run_check(root, None, installed=False)  # a package is what `check` accepts, nothing less
    if not report.ok:
        first = report.findings[0].one_line()
        more = f" (and {len(report.findings) - 1} more)" if len(report.findings) > 1 else ""
        raise UsageError(f"{root}: the skill fails `omni-skill check`: {first}{more}; nothing was packaged")
    files = package(root, args.output)
    print(f"package: {args.output} holds {len(files)} files under vllm-omni/")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    import yaml

    from ..catalogue import models_data

    data = models_data(skill_root(args), args.name)
    if args.format == "json":
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return 0


def cmd_find(args: argparse.Namespace) -> int:
    from ..find import find, render_text, result_data

    result = find(skill_root(args), args.name)
    if args.format == "json":
        print(json.dumps(result_data(result, args.limit), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(render_text(result, args.limit))
    return 0 if result.found else 1


def cmd_read(args: argparse.Namespace) -> int:
    from ..readsection import outline, read_section, render, render_outline

    root = skill_root(args)
    try:
        revision = str(json.loads((root / "provenance.json").read_text(encoding="utf-8"))["revision"])
    except (OSError, ValueError, KeyError, TypeError):
        revision = "the pinned revision"
    if args.toc:
        sys.stdout.write(render_outline(outline(root, args.target, revision), revision))
    else:
        sys.stdout.write(render(read_section(root, args.target), revision))
    return 0


def cmd_search_space(args: argparse.Namespace) -> int:
    import yaml

    from ..searchspace import SEARCH_SPACE_PATH, read_search_space, select, validate_search_space

    root = skill_root(args)
    data, problem = read_search_space(root)
    if problem is not None:
        print(f"{SEARCH_SPACE_PATH}:{problem[0]}: yaml-invalid: {problem[1]}", file=sys.stderr)
        return 1
    if data is None:
        raise UsageError(f"{root / SEARCH_SPACE_PATH}: no search space in this skill")
    try:
        _, findings = validate_search_space(data)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "pydantic":
            raise
        print(
            f"omni-skill search-space: note: pydantic is not installed, so {SEARCH_SPACE_PATH} was not "
            "validated against its schema (`check` does that)",
            file=sys.stderr,
        )
        findings = []
    if findings:
        for finding in findings:
            print(finding.one_line(), file=sys.stderr)
        return 1
    chosen = select(data, args.stage_type, args.scope)
    if args.format == "json":
        print(json.dumps(chosen, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(chosen, sort_keys=False, allow_unicode=True))
    return 0
