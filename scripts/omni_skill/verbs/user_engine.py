"""The verbs that read a user's engine against the skill: drift, show."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import git_if_present
from ..errors import UsageError
from .common import (
    DRIFT_CLAIM_LINES,
    ENV_VAR,
    RELEASES_PATH,
    cited_engine,
    common_options,
    engine_options,
    invalid,
    pinned_state,
    skill_root,
)

if TYPE_CHECKING:
    from ..source import Source


def register(verbs: Any) -> None:
    drift = verbs.add_parser(
        "drift",
        help="which skill sections hold for your engine: a checkout, the installed package, a folder or a wheel",
        description="Compare the skill's evidence with your engine and say, per skill section, whether its claims "
        "hold. The engine is a git checkout at any revision (--source, --revision), the installed vllm_omni package "
        "(--installed, git or not), an unpacked package or source tree (--engine-dir) or a wheel (--wheel). "
        "Read-only; never imports the engine.",
    )
    common_options(drift, source=False)
    engine_options(drift)
    drift.add_argument("--revision", default="HEAD", help="with --source: revision of your checkout (default: HEAD)")
    drift.add_argument("--verbose", action="store_true", help="list every claim that does not hold, with its citations")
    drift.set_defaults(run=cmd_drift)

    show = verbs.add_parser(
        "show",
        help="print a cited span as it reads in your engine, with its status and the pinned permalink",
        description="Print the span LABEL cites as it reads in the given engine (default: the pinned revision of "
        f"${ENV_VAR}), with line numbers, its status against the pinned text and the pinned permalink.",
    )
    common_options(show, source=False)
    show.add_argument("label", help="a citation label of the skill, e.g. src:vllm_omni/x.py::Class.method")
    engine_options(show)
    show.add_argument("--revision", help="with --source: the revision to read (default: the pinned one)")
    show.add_argument(
        "--diff",
        action="store_true",
        help=f"print the span's unified diff, pinned text -> your engine (needs the pinned source: --source or "
        f"${ENV_VAR})",
    )
    show.set_defaults(run=cmd_show)


def _pinned_files(files: object, args: argparse.Namespace, revision: str) -> Source | None:
    """The engine at the pinned revision: the user's own clone when it holds it, else the pinned
    source named by --source or the environment; None when neither has it."""
    from ..source import Source

    if isinstance(files, Source):
        return git_if_present(files.path, revision)
    return git_if_present(getattr(args, "source", None), revision)


def span_diff(before: list[str], after: list[str], old_name: str, new_name: str) -> list[str]:
    """A unified diff of a span's lines, pinned -> the engine's (every line as context when they agree)."""
    import difflib

    return list(difflib.unified_diff(before, after, old_name, new_name, n=3, lineterm=""))


def cmd_drift(args: argparse.Namespace) -> int:
    from ..skill import collector_paused, read_once

    with read_once(), collector_paused():
        return _drift(args)


def _drift(args: argparse.Namespace) -> int:
    from ..bump import GIT_STATUSES, classify_all, counts, use_contexts
    from ..facts import load_facts
    from ..pageclaims import PageClaim, by_page, citation_verdict, claim_items, page_claims, verdicts
    from ..pageclaims import counts as claim_counts
    from ..source import Source
    from ..versions import TREE_STATUSES, classify_tree, disagreements, load_matrix, matching_release, sections

    root = skill_root(args)
    index, provenance = pinned_state(root)
    engine = cited_engine(args, index, args.revision)
    if getattr(engine.files, "version_problem", ""):
        problem = engine.files.version_problem  # type: ignore[union-attr]
        print(f"omni-skill drift: note: {Path(engine.location).name}: {problem}", file=sys.stderr)
    release: dict[str, object] = {}
    ahead: dict[str, list[PageClaim]] = {}  # the page claims, when made while the engine was judged
    if isinstance(engine.files, Source):
        old = git_if_present(engine.files.path, provenance.revision)
        entries = [c.entry for c in classify_all(root, index, engine.files, old)]
        statuses: tuple[str, ...] = GIT_STATUSES
    else:

        def meanwhile() -> None:
            """What needs the pages and not the engine, while a second CPU judges its share."""
            ahead["claims"] = page_claims(root, index)
            import jinja2  # noqa: F401  # for the report, while the other process still judges

            for load in (load_matrix, load_facts):  # kept for below; a file that does not load raises there
                try:
                    load(root)
                except (OSError, ValueError):
                    pass

        entries = classify_tree(index, engine.files, lambda: use_contexts(root, index), meanwhile)
        statuses = TREE_STATUSES
        try:
            recorded = load_matrix(root)
        except ValueError as exc:
            listed = "`omni-skill check` lists every problem"
            raise UsageError(f"{invalid(root / RELEASES_PATH, exc)} ({listed})") from None
        matched = matching_release(index, engine.files, recorded)
        if matched is not None:  # verified afresh above; the matrix must agree
            release = {"version": matched.version, "disagreements": disagreements(matched, entries)}
    found = sections(entries)
    from ..releasenotes import facts_block
    from ..skill import markdown_files

    if isinstance(engine.files, Source):
        facts = {}  # a git engine: `facts --source` lists its facts
    else:
        version = str(release["version"]) if release else None
        facts = facts_block(root, markdown_files(root), version, engine.files, engine.paths())
    claims = ahead["claims"] if "claims" in ahead else page_claims(root, index)
    by_label = {e.label: citation_verdict(e.status, e.cosmetic, e.similarity) for e in entries}
    judged = verdicts(claims, by_label)
    items = claim_items(claims, judged, by_label)
    pages, hidden = by_page(items, None if args.verbose else DRIFT_CLAIM_LINES)
    data = {
        "verb": "drift",
        "from_revision": provenance.revision,
        "engine": engine.describe(),
        "release": release,
        "counts": counts(entries, statuses),
        "cosmetic": sum(1 for e in entries if e.status == "changed" and e.cosmetic),
        "claims": {"counts": claim_counts(judged), **({"items": items} if args.format == "json" else {})},
        "facts": facts,
        "sections": [
            {
                "branch": s.branch,
                "file": s.file,
                "heading": s.heading,
                "verdict": s.verdict,
                "counts": s.counts,
                "labels": s.labels,
            }
            for s in found
        ],
    }
    if args.format == "json":
        data["entries"] = [e.model_dump(mode="json") for e in entries]
    else:  # the text and Markdown reports show neither every entry nor every claim (JSON has both)
        data["status"] = {e.label: e.status for e in entries}
        data["pages"], data["hidden"], data["verbose"] = pages, hidden, args.verbose
    from ..report import render  # jinja2: imported after the engine was judged (see `meanwhile`)

    sys.stdout.write(render("drift", data, args.format))
    return 1 if any(v in ("changed", "missing") for v in judged.values()) else 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..bump import classify
    from ..index import permalink
    from ..labels import parse_label
    from ..report import render
    from ..source import Source
    from ..versions import classify_one, holds

    root = skill_root(args)
    index, provenance = pinned_state(root)
    record = index.by_label().get(args.label)
    if record is None:
        raise UsageError(f"{args.label} is not a citation of this skill (labels are listed in evidence/index.json)")
    engine = cited_engine(args, index, args.revision or provenance.revision)
    if isinstance(engine.files, Source):
        entry = classify(record, engine.files, git_if_present(engine.files.path, provenance.revision)).entry
    else:
        entry = classify_one(record, engine.files)
    lines: list[dict[str, object]] = []
    path = parse_label(entry.new_label).path
    if entry.new_span:
        first, _, last = entry.new_span[1:].partition("-L")
        start, end = int(first), int(last or first)
        text = engine.files.lines(path)
        lines = [{"number": n, "text": text[n - 1]} for n in range(start, min(end, len(text)) + 1)]
    diff: list[str] = []
    diff_note = ""
    if args.diff:
        pinned_files = _pinned_files(engine.files, args, provenance.revision)
        if pinned_files is None:
            diff_note = (
                f"the diff needs the pinned text, which the skill does not store: set {ENV_VAR} to an engine clone "
                f"that holds {provenance.revision[:12]} (or give --source); the span as your engine has it:"
            )
        else:
            before = [line.rstrip() for line in pinned_files.lines(record.path)[record.start - 1 : record.end]]
            after = [str(line["text"]).rstrip() for line in lines]
            diff = span_diff(
                before, after, f"{record.path} {entry.old_span} (pinned)", f"{path} {entry.new_span or '-'}"
            )
    data = {
        "verb": "show",
        "label": record.label,
        "status": entry.status,
        "cosmetic": entry.cosmetic,
        "diff": diff,
        "diff_asked": bool(args.diff),
        "diff_note": diff_note,
        "note": entry.note,
        "engine": engine.describe(),
        "path": path,
        "pinned_span": entry.old_span,
        "span": entry.new_span,
        "permalink": permalink(provenance.repository, provenance.revision, record),
        "lines": lines,
    }
    sys.stdout.write(render("show", data, args.format))
    return 0 if holds(entry.status, entry.similarity) else 1
