"""`omni-skill`: one command, one verb per task. Data on stdout, diagnostics on stderr.

Exit codes: 0 everything holds, 1 findings, 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from . import __version__
from .checks import run_check
from .errors import UsageError
from .provenance import load_provenance
from .report import FORMATS, check_data, render
from .resolve import resolve
from .searchspace import SEARCH_SPACE_PATH, STAGE_TYPES, load_search_space, select
from .skill import SKILL_FILE, find_root
from .source import ENV_VAR, Source, open_source, source_path
from .writes import write_files


def _common(parser: argparse.ArgumentParser, source: bool = True, fmt: bool = True) -> None:
    parser.add_argument("--root", type=Path, help="skill root (default: the skill these scripts belong to)")
    if source:
        parser.add_argument("--source", help=f"engine git repository, bare or not (default: ${ENV_VAR})")
    if fmt:
        parser.add_argument("--format", choices=FORMATS, default="text", help="report format (default: text)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omni-skill", description="Check, resolve and bump the vllm-omni skill's source citations."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    check = verbs.add_parser(
        "check",
        help="check the skill; with a source, re-verify every citation",
        description="Check structure, labels, definitions, index and data files; with --source, re-verify "
        "every evidence record, claimed default and test reference at the pinned revision.",
    )
    _common(check)
    check.add_argument(
        "--installed", action="store_true", help="treat the root as an installed copy (name must equal its folder)"
    )

    res = verbs.add_parser(
        "resolve",
        help="compute the evidence index and rewrite link definitions",
        description="Resolve every label at the pinned revision (or --revision), write evidence/index.json, "
        "its schema, provenance.json and every link definition. Writes nothing when a label does not resolve.",
    )
    _common(res)
    res.add_argument("--revision", help="pin this engine revision (default: the one in provenance.json)")
    res.add_argument(
        "--dry-run", action="store_true", help="report what does not resolve and what would change; write nothing"
    )

    space = verbs.add_parser(
        "search-space",
        help="print the engine search space",
        description="Print the settings of search-space.yaml, filtered, for a tuning loop.",
    )
    _common(space, source=False, fmt=False)
    space.add_argument(
        "--stage-type", choices=STAGE_TYPES[:-1], help="keep settings that apply to this stage execution type"
    )
    space.add_argument(
        "--scope", choices=("per-stage", "pipeline", "diffusion", "env", "cli"), help="keep settings of this scope"
    )
    space.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    return parser


def _root(args: argparse.Namespace) -> Path:
    root: Path = find_root(args.root)
    if not (root / SKILL_FILE).exists() and args.verb != "check":
        raise UsageError(f"{root}: no {SKILL_FILE} here (give --root)")
    return root


def cmd_check(args: argparse.Namespace) -> int:
    root = _root(args)
    provenance = None
    try:
        provenance = load_provenance(root)
    except ValueError:
        pass  # reported as a finding by the check itself
    source = None
    if source_path(args.source) is not None:
        if provenance is None:
            raise UsageError(f"{root / 'provenance.json'}: no valid pinned revision to check against")
        source = open_source(args.source, provenance.revision)
    report = run_check(root, source, args.installed)
    sys.stdout.write(render("check", check_data(report), args.format))
    return 0 if report.ok else 1


def cmd_resolve(args: argparse.Namespace) -> int:
    root = _root(args)
    path = source_path(args.source)
    if path is None:
        raise UsageError(f"resolve needs the engine: give --source PATH or set {ENV_VAR}")
    try:
        previous = load_provenance(root)
    except ValueError as exc:
        raise UsageError(f"{root / 'provenance.json'}: {str(exc).splitlines()[0]}") from None
    revision = args.revision or (previous.revision if previous else None)
    if revision is None:
        raise UsageError("no pinned revision yet: give --revision SHA")
    outcome = resolve(root, Source(path, revision), previous)
    if outcome.findings:
        report_findings = outcome.findings
        sys.stdout.write(
            render(
                "check",
                {
                    "verb": "resolve",
                    "ok": False,
                    "revision": outcome.index.revision,
                    "citations": len(outcome.index.records),
                    "files": len({r.path for r in outcome.index.records}),
                    "ran": ["resolve"],
                    "skipped": [],
                    "findings": [f.model_dump() for f in report_findings],
                },
                args.format,
            )
        )
        print("resolve: nothing written", file=sys.stderr)
        return 1
    if args.dry_run:
        changed = [
            rel
            for rel, text in sorted(outcome.contents.items())
            if not (root / rel).exists() or (root / rel).read_text(encoding="utf-8") != text
        ]
        if args.format == "json":
            print(
                json.dumps(
                    {
                        "verb": "resolve",
                        "dry_run": True,
                        "would_write": changed,
                        "citations": len(outcome.index.records),
                    },
                    indent=2,
                )
            )
        else:
            count = len(outcome.index.records)
            what = ", ".join(changed) or "nothing"
            print(f"resolve --dry-run: every label resolves ({count} citations); would write: {what}")
        return 0
    written = write_files(root, outcome.contents)
    if args.format == "json":
        print(json.dumps({"verb": "resolve", "written": written, "citations": len(outcome.index.records)}, indent=2))
    else:
        what = ", ".join(written) or "nothing (already current)"
        print(f"resolve: {len(outcome.index.records)} citations at {outcome.index.revision[:12]}; wrote: {what}")
    return 0


def cmd_search_space(args: argparse.Namespace) -> int:
    root = _root(args)
    space, findings = load_search_space(root)
    if space is None:
        if findings:
            for finding in findings:
                print(finding.one_line(), file=sys.stderr)
            return 1
        raise UsageError(f"{root / SEARCH_SPACE_PATH}: no search space in this skill")
    chosen = select(space, args.stage_type, args.scope)
    if args.format == "json":
        print(json.dumps(chosen, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(chosen, sort_keys=False, allow_unicode=True))
    return 0


COMMANDS = {"check": cmd_check, "resolve": cmd_resolve, "search-space": cmd_search_space}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.verb](args)
    except UsageError as exc:
        print(f"omni-skill {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"omni-skill {args.verb}: interrupted; nothing was half-written", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
