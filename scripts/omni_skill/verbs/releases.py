"""The verbs of release knowledge: releases (the shipped data), lint-deploy, facts, since."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import pinned_git
from ..errors import UsageError
from .common import (
    ENV_VAR,
    RELEASES_PATH,
    VERSIONS_PAGE,
    common_options,
    engine_options,
    pinned_state,
    skill_root,
)

if TYPE_CHECKING:
    from ..facts import FactsFile
    from ..trees import WheelTree


def register(verbs: Any) -> None:
    rel = verbs.add_parser(
        "releases",
        help="compute the release matrix and the versions page from release wheels",
        description=f"For each release wheel, each citation's status (unchanged, moved, changed, missing, "
        f"not-shipped); writes {RELEASES_PATH}, its schema and {VERSIONS_PAGE}. Writes nothing on an error.",
    )
    common_options(rel)
    rel.add_argument(
        "--wheel",
        action="append",
        required=True,
        type=Path,
        metavar="FILE_OR_DIR",
        help="a release wheel, or a folder of them; repeat for more",
    )
    rel.add_argument("--dry-run", action="store_true", help="report the matrix; write nothing")
    rel.set_defaults(run=cmd_releases)

    lint = verbs.add_parser(
        "lint-deploy",
        help="check a serve command and deploy file against your engine before you start it",
        description='Check a deploy YAML (FILE or --deploy-config) and/or a serve command (--serve "CMD") against '
        "the engine you run: flags, keys the engine drops, stage ids, devices and memory fractions, parallel sizes, "
        "async_chunk, connectors, settings without effect. Each finding cites the engine code that makes it true. "
        "Read-only; never imports the engine. Exit 1 on any error or warning.",
    )
    common_options(lint, source=False, fmt=False)
    lint.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    engine_options(lint, release=True)
    from ..lint_options import add_arguments as lint_arguments

    lint_arguments(lint)
    lint.set_defaults(run=cmd_lint_deploy)


def cmd_releases(args: argparse.Namespace) -> int:
    from ..bump import use_contexts
    from ..engine import release_wheels
    from ..index import dump_json
    from ..pageclaims import page_claims
    from ..report import render
    from ..trees import require_cited
    from ..versions import RELEASES_SCHEMA_PATH, matrix, release_of, render_page, schema_json
    from ..writes import write_files

    root = skill_root(args)
    index, provenance = pinned_state(root)
    contexts = use_contexts(root, index)
    claims = page_claims(root, index)
    releases = []
    trees = list(release_wheels(args.wheel).values())
    for tree in trees:
        require_cited(tree, [r.path for r in index.records])
        releases.append(release_of(index, tree, contexts, claims))
    found = matrix(index, releases)
    contents = {
        RELEASES_PATH: dump_json(found),
        RELEASES_SCHEMA_PATH: schema_json(),
        VERSIONS_PAGE: render_page(found, index, contexts),
    }
    facts = release_facts(root, args, trees)
    if facts is not None:
        from ..facts import FACTS_PATH, FACTS_SCHEMA_PATH, facts_json
        from ..facts import schema_json as facts_schema
        from ..lintmodels import LINT_MODELS_PATH
        from ..releasenotes import notes_pages
        from ..skill import markdown_files

        counts = {r.version: r.counts for r in found.releases}
        contents[FACTS_PATH] = facts_json(facts)
        contents[FACTS_SCHEMA_PATH] = facts_schema()
        contents.update(notes_pages(root, facts, markdown_files(root), counts))
        contents[LINT_MODELS_PATH] = lint_models(root, args, trees, facts.revision)
    contents.update(release_citations(root, index, provenance.repository, trees, contents))
    written = [] if args.dry_run else write_files(root, contents)
    data = {
        "verb": "releases",
        "revision": found.revision,
        "releases": [{"version": r.version, "wheel": r.wheel, "counts": r.counts} for r in found.releases],
        "dry_run": bool(args.dry_run),
        "written": written,
    }
    sys.stdout.write(render("releases", data, args.format))
    return 0


def release_citations(
    root: Path, index: Any, repository: str, trees: list[Any], contents: dict[str, str]
) -> dict[str, str]:
    """`rel:` citations resolved in their wheels: evidence/release-citations.json and every page
    with its definitions (nothing when no page cites a release and there is no such file)."""
    from ..index import dump_json
    from ..relcite import REL_INDEX_PATH, resolve_all, uses_in
    from ..resolve import definition_texts
    from ..skill import markdown_files, read_text

    pages = {rel: contents.get(rel) or read_text(root, rel) for rel in markdown_files(root)}
    if not uses_in(pages) and not (root / REL_INDEX_PATH).exists():
        return {}
    found, problems = resolve_all(pages, {tree.version: tree for tree in trees})
    if problems:
        raise UsageError(f"{problems[0].file}:{problems[0].line}: {problems[0].message} (nothing was written)")
    texts = definition_texts(root, index, repository, pages, releases=found)
    return {REL_INDEX_PATH: dump_json(found), **texts}


def lint_models(root: Path, args: argparse.Namespace, trees: list[WheelTree], revision: str) -> str:
    """evidence/lint-models.json: lint-deploy's engine model of every wheel and of the pin (from
    --source, else kept from the shipped file)."""
    from ..deploy_model import build
    from ..factkinds import PIN
    from ..lintmodels import LINT_MODELS_PATH, dump, entry_line, spans_of
    from ..safeio import read_text as safe_read_text

    entries = []
    for tree in trees:
        model = build(tree, tree.paths())
        entries.append(entry_line(tree.version, model, spans_of(model, tree)))
    source = pinned_git(args.source, revision)
    if source is not None:
        model = build(source, sorted(source.tree))
        entries.append(entry_line(PIN, model, spans_of(model, source)))
    else:
        kept = [
            line.rstrip(",")
            for line in safe_read_text(root / LINT_MODELS_PATH).splitlines()[1:]
            if f'"engine":"{PIN}"' in line
        ]
        entries += kept[:1]
    return dump(revision, entries)


def release_facts(root: Path, args: argparse.Namespace, trees: list[WheelTree]) -> FactsFile | None:
    """The facts of every wheel and of the pinned revision (read from --source when given, else kept
    from the facts file the skill ships); None when the pin's facts cannot be had."""
    from ..facts import FACTS_PATH, PIN, EngineStamp, extract, load_facts, timeline
    from ..provenance import load_provenance

    provenance = load_provenance(root)
    if provenance is None:
        raise UsageError(f"{root}: no provenance.json (run resolve first)")
    stamps, per_engine = [], {}
    for tree in trees:
        stamps.append(EngineStamp(id=tree.version, date=tree.built()))
        per_engine[tree.version] = extract(tree, tree.paths())
    source = pinned_git(args.source, provenance.revision)
    if source is not None:
        per_engine[PIN] = extract(source, sorted(source.tree))
    else:
        shipped = load_facts(root)
        if shipped is None or shipped.revision != provenance.revision:
            print(
                f"omni-skill releases: {FACTS_PATH} not written: the pinned revision's facts need the engine "
                f"(give --source or set {ENV_VAR})",
                file=sys.stderr,
            )
            return None
        per_engine[PIN] = shipped.at(PIN)
    stamps.append(EngineStamp(id=PIN, date=provenance.commit_date, revision=provenance.revision))
    return timeline(stamps, per_engine, provenance.revision)


def cmd_lint_deploy(args: argparse.Namespace) -> int:
    from ..lint_deploy import lint_from_args, render_json, render_text
    from ..provenance import load_provenance

    root = skill_root(args)
    provenance = load_provenance(root)
    if provenance is None:
        raise UsageError("the skill has no provenance.json: its pinned revision is unknown")
    report = lint_from_args(args, provenance.repository, provenance.revision, root)
    sys.stdout.write(render_json(report) if args.format == "json" else render_text(report))
    return 1 if report.failed() else 0


def register_facts(verbs: Any) -> None:
    from ..factsverbs import add_arguments

    facts, since = add_arguments(verbs)
    facts.set_defaults(run=cmd_facts)
    since.set_defaults(run=cmd_since)


def cmd_facts(args: argparse.Namespace) -> int:
    from ..factsverbs import cmd_facts as run

    return run(args, skill_root(args))


def cmd_since(args: argparse.Namespace) -> int:
    from ..factsverbs import cmd_since as run

    return run(args, skill_root(args))
