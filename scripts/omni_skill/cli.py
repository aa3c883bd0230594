"""`omni-skill`: one command, one verb per task. Data on stdout, diagnostics on stderr.

Exit codes: 0 everything holds, 1 findings, 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from . import __version__
from .checks import CheckReport, run_check
from .errors import UsageError, sort_findings
from .index import EvidenceIndex, load_index
from .install import AGENT_DIRS, destination, install, package
from .provenance import Provenance, load_provenance
from .report import FORMATS, check_data, render
from .resolve import outputs, pinned, resolve, verification
from .searchspace import SEARCH_SPACE_PATH, STAGE_TYPES, load_search_space, select
from .skill import SKILL_FILE, find_root
from .source import ENV_VAR, Source, open_source, source_path
from .writes import changed_files, write_files

if TYPE_CHECKING:
    from .bump import BumpReport
    from .installed import InstalledEngine


def find_installed() -> InstalledEngine | None:
    """The installed engine (a module-level name so tests can stand in for it)."""
    from .installed import find_installed as find

    return find()


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

    bump = verbs.add_parser(
        "bump",
        help="move the pinned revision, classifying every citation",
        description="Re-resolve every citation at REV and classify it unchanged, moved, changed, relocated or missing. "
        "Writes provenance, index and definitions together, only when nothing is missing and every changed "
        "citation is accepted.",
    )
    _common(bump)
    bump.add_argument("--to", required=True, metavar="REV", help="the engine revision to move to")
    bump.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    bump.add_argument("--accept", nargs="+", default=[], metavar="LABEL", help="accept these changed citations")
    bump.add_argument("--accept-changed", action="store_true", help="accept every changed citation")

    drift = verbs.add_parser(
        "drift",
        help="which skill sections differ for your engine checkout or installation (read-only)",
        description="Compare the skill's evidence with your engine: a checkout at any revision (--source, --revision) "
        "or the installed vllm_omni package (--installed). Reads git objects only; writes nothing.",
    )
    _common(drift)
    drift.add_argument("--revision", default="HEAD", help="revision of your checkout (default: HEAD)")
    drift.add_argument("--installed", action="store_true", help="use the installed vllm_omni package")

    inst = verbs.add_parser(
        "install",
        help="copy the skill where an agent discovers skills",
        description="Copy the runtime files (SKILL.md, references, evidence, provenance.json, scripts) as real files "
        "into Claude Code's, Codex's or Cursor's skills folder, then check the installed copy.",
    )
    _common(inst, source=False)
    inst.add_argument("--agent", choices=sorted(AGENT_DIRS), required=True)
    inst.add_argument("--scope", choices=("user", "project"), default="user")
    inst.add_argument("--dest", type=Path, help="stands in for the home folder (user) or project folder (project)")
    inst.add_argument("--dry-run", action="store_true", help="say where and what; copy nothing")
    inst.add_argument("--force", action="store_true", help="replace whatever is at the destination")

    pack = verbs.add_parser("package", help="write vllm-omni.skill, a zip of the runtime files")
    _common(pack, source=False, fmt=False)
    pack.add_argument("--output", type=Path, default=Path("vllm-omni.skill"), help="default: ./vllm-omni.skill")

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
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
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
        report = CheckReport(
            verb="resolve",
            root=str(root),
            revision=outcome.index.revision,
            findings=sort_findings(outcome.findings),
            ran=["resolve"],
            citations=len(outcome.index.records),
            files=len({r.path for r in outcome.index.records}),
        )
        sys.stdout.write(render("check", check_data(report), args.format))
        print("resolve: nothing written", file=sys.stderr)
        return 1
    if args.dry_run:
        changed = changed_files(root, outcome.contents)
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
    if findings:
        for finding in findings:
            print(finding.one_line(), file=sys.stderr)
        return 1
    if space is None:
        raise UsageError(f"{root / SEARCH_SPACE_PATH}: no search space in this skill")
    chosen = select(space, args.stage_type, args.scope)
    if args.format == "json":
        print(json.dumps(chosen, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(chosen, sort_keys=False, allow_unicode=True))
    return 0


def _pinned_state(root: Path) -> tuple[EvidenceIndex, Provenance]:
    try:
        index, provenance = load_index(root), load_provenance(root)
    except ValueError as exc:
        raise UsageError(f"{root}: evidence index or provenance is invalid: {str(exc).splitlines()[0]}") from None
    if index is None or provenance is None:
        raise UsageError(f"{root}: no evidence index or provenance yet: run `omni-skill resolve` first")
    return index, provenance


def _old_source(path: Path, revision: str) -> Source | None:
    try:
        return Source(path, revision)
    except UsageError:
        return None  # the pinned revision is not in this clone: fingerprints still decide


def cmd_bump(args: argparse.Namespace) -> int:
    from .bump import BumpReport, blockers, classify_all, counts, new_index, relabel

    root = _root(args)
    path = source_path(args.source)
    if path is None:
        raise UsageError(f"bump needs the engine: give --source PATH or set {ENV_VAR}")
    index, provenance = _pinned_state(root)
    new = Source(path, args.to)
    classified = classify_all(root, index, new, _old_source(path, provenance.revision))
    entries = [c.entry for c in classified]
    blocked = blockers(entries, set(args.accept), args.accept_changed)
    unknown = sorted(set(args.accept) - {e.label for e in entries})
    if unknown:
        raise UsageError(f"--accept names labels that are not in the index: {', '.join(unknown)}")
    report = BumpReport(
        verb="bump",
        from_revision=provenance.revision,
        to_revision=new.commit,
        counts=counts(entries),
        entries=entries,
        blocked=blocked,
    )
    if not args.dry_run and not blocked:
        renames = {c.entry.label: c.entry.new_label for c in classified if c.entry.new_label != c.entry.label}
        texts = relabel(root, renames, {r.label: r.uses for r in index.records})
        bumped = new_index(new.commit, classified)
        pinned_now = pinned(new, provenance, verification(bumped, []))
        write_files(root, outputs(root, bumped, pinned_now, texts))
        report.written = True
    sys.stdout.write(render("bump", report.model_dump(mode="json"), args.format))
    return 1 if blocked else 0


def _sections(report: BumpReport) -> list[dict[str, object]]:
    grouped: dict[tuple[str, str, str], set[str]] = {}
    for entry in report.entries:
        if entry.status in ("unchanged", "moved") or (entry.status == "relocated" and entry.similarity == 1.0):
            continue
        for use in entry.uses:
            parts = use.file.split("/")
            branch = parts[1] if len(parts) > 2 and parts[0] == "references" else "router"
            grouped.setdefault((branch, use.file, use.heading), set()).add(entry.label)
    return [
        {"branch": b, "file": f, "heading": h, "labels": sorted(labels), "title": f"{f} § {h}" if h else f}
        for (b, f, h), labels in sorted(grouped.items())
    ]


def cmd_drift(args: argparse.Namespace) -> int:
    from .bump import BumpReport, classify_all, counts

    root = _root(args)
    index, provenance = _pinned_state(root)
    version = ""
    revision = args.revision
    if args.installed:
        engine = find_installed()
        if engine is None:
            raise UsageError("no installed vllm_omni package found: give --source PATH to your engine checkout")
        version = engine.version
        if engine.git_dir is None:
            hint = (
                f"a clone of the engine with --revision {engine.commit}"
                if engine.commit
                else "--source PATH --revision TAG"
            )
            raise UsageError(
                f"vllm_omni {engine.version} at {engine.location} is not a git checkout, "
                f"so its commit is unknown: pass {hint}"
            )
        path = engine.git_dir
    else:
        found = source_path(args.source)
        if found is None:
            raise UsageError(f"drift needs your engine: give --source PATH, set {ENV_VAR}, or pass --installed")
        path = found
    user = Source(path, revision)
    classified = classify_all(root, index, user, _old_source(path, provenance.revision))
    entries = [c.entry for c in classified]
    report = BumpReport(
        verb="drift",
        from_revision=provenance.revision,
        to_revision=user.commit,
        counts=counts(entries),
        entries=entries,
    )
    data = report.model_dump(mode="json")
    data["sections"] = _sections(report)
    data["engine_version"] = version
    if args.format == "json":
        data["sections"] = [{k: v for k, v in s.items() if k != "title"} for s in data["sections"]]
    sys.stdout.write(render("drift", data, args.format))
    return 1 if data["sections"] else 0


def cmd_install(args: argparse.Namespace) -> int:
    root = _root(args)
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
    root = _root(args)
    files = package(root, args.output)
    print(f"package: {args.output} holds {len(files)} files under vllm-omni/")
    return 0


COMMANDS = {
    "install": cmd_install,
    "package": cmd_package,
    "check": cmd_check,
    "resolve": cmd_resolve,
    "bump": cmd_bump,
    "drift": cmd_drift,
    "search-space": cmd_search_space,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.verb](args)
    except UsageError as exc:
        print(f"omni-skill {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"omni-skill {args.verb}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"omni-skill {args.verb}: interrupted; nothing was half-written", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
