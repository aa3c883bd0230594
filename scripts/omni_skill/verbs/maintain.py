"""The verbs that keep the skill itself: check, resolve, bump."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .common import (
    RELEASES_PATH,
    common_options,
    invalid,
    page_snapshot,
    pinned_state,
    skill_root,
    source_path,
)


def register(verbs: Any) -> None:
    check = verbs.add_parser(
        "check",
        help="check the skill; with a source, re-verify every citation",
        description="Check structure, labels, definitions, index and data files; with --source, re-verify "
        "every evidence record, claimed default and test reference at the pinned revision.",
    )
    common_options(check)
    check.add_argument(
        "--installed", action="store_true", help="treat the root as an installed copy (name must equal its folder)"
    )
    check.add_argument(
        "--wheels",
        action="append",
        type=Path,
        metavar="FILE_OR_DIR",
        help="release wheels (or a folder of them): re-verify every rel: citation in its release's wheel",
    )
    check.set_defaults(run=cmd_check)

    res = verbs.add_parser(
        "resolve",
        help="compute the evidence index and rewrite link definitions",
        description="Resolve every label at the pinned revision (or --revision), write evidence/index.json, "
        "its schema, provenance.json and every link definition. Writes nothing when a label does not resolve.",
    )
    common_options(res)
    res.add_argument("--revision", help="pin this engine revision (default: the one in provenance.json)")
    res.add_argument(
        "--dry-run", action="store_true", help="report what does not resolve and what would change; write nothing"
    )
    res.set_defaults(run=cmd_resolve)

    bump = verbs.add_parser(
        "bump",
        help="move the pinned revision, classifying every citation",
        description="Re-resolve every citation at REV and classify it unchanged, moved, changed, relocated or missing. "
        "Writes provenance, index and definitions together, only when nothing is missing and every changed "
        "citation is accepted.",
    )
    common_options(bump)
    bump.add_argument("--to", required=True, metavar="REV", help="the engine revision to move to")
    bump.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    bump.add_argument("--accept", nargs="+", default=[], metavar="LABEL", help="accept these changed citations")
    bump.add_argument("--accept-changed", action="store_true", help="accept every changed citation")
    bump.set_defaults(run=cmd_bump)


def cmd_check(args: argparse.Namespace) -> int:
    from ..checks import run_check
    from ..engine import pinned_git, release_wheels
    from ..provenance import load_provenance

    root = skill_root(args)
    provenance = None
    try:
        provenance = load_provenance(root)
    except ValueError:
        pass  # reported as a finding by the check itself
    if provenance is None and source_path(args.source) is not None:
        raise UsageError(f"{root / 'provenance.json'}: no valid pinned revision to check against")
    source = pinned_git(args.source, provenance.revision) if provenance is not None else None
    wheels = release_wheels(args.wheels) if args.wheels else None
    report = run_check(root, source, args.installed, wheels)
    from ..report import check_data, render  # jinja2: loaded while the forked engine checks run

    sys.stdout.write(render("check", check_data(report), args.format))
    return 0 if report.ok else 1


def cmd_resolve(args: argparse.Namespace) -> int:
    from ..checks import CheckReport
    from ..engine import require_git, require_source
    from ..findings import sort_findings
    from ..provenance import load_provenance
    from ..report import check_data, render
    from ..resolve import resolve
    from ..writes import changed_files, write_files

    root = skill_root(args)
    path = require_source(args.source, "resolve")
    try:
        previous = load_provenance(root)
    except ValueError as exc:
        raise UsageError(invalid(root / "provenance.json", exc)) from None
    revision = args.revision or (previous.revision if previous else None)
    if revision is None:
        raise UsageError("no pinned revision yet: give --revision SHA")
    before = page_snapshot(root)
    outcome = resolve(root, require_git(path, revision, "resolve"), previous)
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
    written = write_files(root, outcome.contents, before)
    if args.format == "json":
        print(json.dumps({"verb": "resolve", "written": written, "citations": len(outcome.index.records)}, indent=2))
    else:
        what = ", ".join(written) or "nothing (already current)"
        print(f"resolve: {len(outcome.index.records)} citations at {outcome.index.revision[:12]}; wrote: {what}")
    return 0


def cmd_bump(args: argparse.Namespace) -> int:
    from ..bump import BumpReport, blockers, classify_all, counts, new_index, relabel
    from ..checks import check_index, check_proposed
    from ..engine import git_if_present, require_git, require_source
    from ..report import render
    from ..resolve import outputs, pinned, verification, with_code_fingerprints
    from ..skill import collect
    from ..writes import write_files

    root = skill_root(args)
    path = require_source(args.source, "bump")
    before = page_snapshot(root)
    index, provenance = pinned_state(root)
    stale = [f for f in check_index(root, collect(root), index, provenance) if f.kind.startswith("index-")]
    if stale:
        raise UsageError(
            f"{stale[0].one_line()} — the pages changed since the last resolve: run `omni-skill resolve` first"
        )
    new = require_git(path, args.to, "bump")
    classified = classify_all(root, index, new, git_if_present(path, provenance.revision))
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
        bumped = with_code_fingerprints(new_index(new.commit, classified), new)
        pinned_now = pinned(new, provenance, verification(bumped, []))
        contents = outputs(root, bumped, pinned_now, texts)
        rejected = check_proposed(root, contents, new)
        if rejected:
            report.blocked = [f"the bumped skill would fail check: {f.one_line()}" for f in rejected]
            sys.stdout.write(render("bump", report.model_dump(mode="json"), args.format))
            return 1
        write_files(root, contents, before)
        report.written = True
        if (root / RELEASES_PATH).exists():
            print(
                f"omni-skill bump: note: {RELEASES_PATH} is stale after this bump: run `omni-skill releases "
                "--wheel DIR` with the release wheels (see README) before `check`",
                file=sys.stderr,
            )
    sys.stdout.write(render("bump", report.model_dump(mode="json"), args.format))
    return 1 if blocked else 0
