"""`omni-skill`: one command, one verb per task. Data on stdout, diagnostics on stderr.

Exit codes: 0 everything holds, 1 findings, 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .errors import UsageError
from .writes import ChangedMeanwhile

if TYPE_CHECKING:
    from .engine import Engine
    from .facts import FactsFile
    from .index import EvidenceIndex
    from .provenance import Provenance
    from .source import Source
    from .trees import WheelTree

# Argument parsing needs only the standard library; each verb imports what it uses, so a verb
# runs with only its own packages installed. tests/test_cli.py checks these copies against
# their owners (report.FORMATS, install.AGENT_DIRS, searchspace.STAGE_TYPES, source.ENV_VAR).
FORMATS = ("text", "json", "markdown")
AGENTS = ("claude", "codex", "cursor")
STAGE_TYPES = ("llm_ar", "llm_generation", "diffusion")
ENV_VAR = "VLLM_OMNI_SOURCE"
RELEASES_PATH = "evidence/releases.json"
DRIFT_CLAIM_LINES = 24  # claims drift's text lists without --verbose (with its other lines: about 60)
VERSIONS_PAGE = "references/serving-tuning/versions.md"
SKILL_FILE = "SKILL.md"
# Verbs that write the skill finish an interrupted write first; verbs that read pages refuse
# unreadable ones (check reports them as findings itself).
WRITERS = ("resolve", "bump", "releases")
PAGE_READERS = ("resolve", "bump", "drift", "show", "releases", "install", "package")
# import name -> the distribution to install
PACKAGES = {
    "yaml": "pyyaml",
    "pydantic": "pydantic",
    "jinja2": "jinja2",
    "markdown_it": "markdown-it-py",
    "git": "gitpython",
}


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
        help="which skill sections hold for your engine: a checkout, the installed package, a folder or a wheel",
        description="Compare the skill's evidence with your engine and say, per skill section, whether its claims "
        "hold. The engine is a git checkout at any revision (--source, --revision), the installed vllm_omni package "
        "(--installed, git or not), an unpacked package or source tree (--engine-dir) or a wheel (--wheel). "
        "Read-only; never imports the engine.",
    )
    _common(drift, source=False)
    _engine_options(drift)
    drift.add_argument("--revision", default="HEAD", help="with --source: revision of your checkout (default: HEAD)")
    drift.add_argument("--verbose", action="store_true", help="list every claim that does not hold, with its citations")

    show = verbs.add_parser(
        "show",
        help="print a cited span as it reads in your engine, with its status and the pinned permalink",
        description="Print the span LABEL cites as it reads in the given engine (default: the pinned revision of "
        f"${ENV_VAR}), with line numbers, its status against the pinned text and the pinned permalink.",
    )
    _common(show, source=False)
    show.add_argument("label", help="a citation label of the skill, e.g. src:vllm_omni/x.py::Class.method")
    _engine_options(show)
    show.add_argument("--revision", help="with --source: the revision to read (default: the pinned one)")
    show.add_argument(
        "--diff",
        action="store_true",
        help=f"print the span's unified diff, pinned text -> your engine (needs the pinned source: --source or "
        f"${ENV_VAR})",
    )

    rel = verbs.add_parser(
        "releases",
        help="compute the release matrix and the versions page from release wheels",
        description=f"For each release wheel, each citation's status (unchanged, moved, changed, missing, "
        f"not-shipped); writes {RELEASES_PATH}, its schema and {VERSIONS_PAGE}. Writes nothing on an error.",
    )
    _common(rel)
    rel.add_argument(
        "--wheel",
        action="append",
        required=True,
        type=Path,
        metavar="FILE_OR_DIR",
        help="a release wheel, or a folder of them; repeat for more",
    )
    rel.add_argument("--dry-run", action="store_true", help="report the matrix; write nothing")

    inst = verbs.add_parser(
        "install",
        help="copy the skill where an agent discovers skills",
        description="Copy the runtime files (SKILL.md, references, evidence, provenance.json, scripts) as real files "
        "into Claude Code's, Codex's or Cursor's skills folder, then check the installed copy.",
    )
    _common(inst, source=False)
    inst.add_argument("--agent", choices=AGENTS, required=True)
    inst.add_argument("--scope", choices=("user", "project"), default="user")
    inst.add_argument("--dest", type=Path, help="stands in for the home folder (user) or project folder (project)")
    inst.add_argument("--dry-run", action="store_true", help="say where and what; copy nothing")
    inst.add_argument("--force", action="store_true", help="replace whatever is at the destination")

    pack = verbs.add_parser("package", help="write vllm-omni.skill, a zip of the runtime files")
    _common(pack, source=False, fmt=False)
    pack.add_argument("--output", type=Path, default=Path("vllm-omni.skill"), help="default: ./vllm-omni.skill")

    models = verbs.add_parser(
        "models",
        help="print the model catalogue: every pipeline-registry key and diffusion model at the pin",
        description="Print references/architecture-search/models.yaml (all entries, or the one NAME names: a "
        "pipeline-registry key or a diffusion architecture, case-insensitive) as YAML or JSON.",
    )
    _common(models, source=False, fmt=False)
    models.add_argument("name", nargs="?", help="a pipeline key (e.g. qwen3_omni_moe) or a diffusion architecture")
    models.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")

    find = verbs.add_parser(
        "find",
        help="where the skill discusses a name: setting, flag, env var, symbol, config key, model, endpoint",
        description="Every section of the skill that names NAME (page, heading, line), most central first, and its "
        "entries in search-space.yaml, models.yaml and test-map.yaml. max_num_seqs, max-num-seqs and --max-num-seqs "
        "are one name; a symbol matches by its last segments (pick finds StagePool.pick). Exit 1 (with suggestions) "
        "when the skill names nothing by it.",
    )
    _common(find, source=False, fmt=False)
    find.add_argument("name", help="the name; one that begins with - goes after --: find -- --max-num-seqs")
    find.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    find.add_argument(
        "--limit", type=_positive, default=20, metavar="N", help="sections to list, most central first (default: 20)"
    )
    lint = verbs.add_parser(
        "lint-deploy",
        help="check a serve command and deploy file against your engine before you start it",
        description='Check a deploy YAML (FILE or --deploy-config) and/or a serve command (--serve "CMD") against '
        "the engine you run: flags, keys the engine drops, stage ids, devices and memory fractions, parallel sizes, "
        "async_chunk, connectors, settings without effect. Each finding cites the engine code that makes it true. "
        "Read-only; never imports the engine. Exit 1 on any error or warning.",
    )
    _common(lint, source=False, fmt=False)
    lint.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    _engine_options(lint, release=True)
    from .lint_options import add_arguments as lint_arguments

    lint_arguments(lint)

    space = verbs.add_parser(
        "search-space",
        help="print the engine search space",
        description="Print the settings of search-space.yaml, filtered, for a tuning loop.",
    )
    _common(space, source=False, fmt=False)
    space.add_argument(
        "--stage-type", choices=STAGE_TYPES, help="keep settings that apply to this stage execution type"
    )
    space.add_argument(
        "--scope", choices=("per-stage", "pipeline", "diffusion", "env", "cli"), help="keep settings of this scope"
    )
    space.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")

    from .factsverbs import add_arguments as facts_arguments

    facts_arguments(verbs)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _engine_options(parser: argparse.ArgumentParser, release: bool = False) -> None:
    from .engine import add_options

    add_options(parser, release)


def source_path(arg: str | None) -> Path | None:
    from .engine import source_path as path

    return path(arg)


def find_root() -> Path:
    """The skill these scripts belong to (scripts/omni_skill/ sits two levels below its root),
    else the current folder."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / SKILL_FILE).exists() else Path.cwd()


def _root(args: argparse.Namespace) -> Path:
    root: Path = args.root if args.root is not None else find_root()
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    if not (root / SKILL_FILE).exists() and args.verb != "check":
        raise UsageError(f"{root}: no {SKILL_FILE} here (give --root)")
    if args.verb in PAGE_READERS:
        from .skill import unreadable_files

        unreadable = unreadable_files(root)
        if unreadable:
            raise UsageError(f"{unreadable[0].one_line()} (run `omni-skill check` for every such file)")
    if args.verb in WRITERS:
        from .writes import JOURNAL, pending, recover

        if pending(root):
            if getattr(args, "dry_run", False):
                raise UsageError(
                    f"{root / JOURNAL}: an interrupted write is pending: run `omni-skill {args.verb}` "
                    "without --dry-run to complete it first"
                )
            done = recover(root)
            print(f"omni-skill {args.verb}: completed an interrupted write of {len(done)} files", file=sys.stderr)
    return root


def cmd_check(args: argparse.Namespace) -> int:
    from .checks import run_check
    from .provenance import load_provenance
    from .source import Source

    root = _root(args)
    provenance = None
    try:
        provenance = load_provenance(root)
    except ValueError:
        pass  # reported as a finding by the check itself
    source = None
    path = source_path(args.source)
    if path is not None:
        if provenance is None:
            raise UsageError(f"{root / 'provenance.json'}: no valid pinned revision to check against")
        source = Source(path, provenance.revision)
    report = run_check(root, source, args.installed)
    from .report import check_data, render  # jinja2: loaded while the forked engine checks run

    sys.stdout.write(render("check", check_data(report), args.format))
    return 0 if report.ok else 1


def cmd_resolve(args: argparse.Namespace) -> int:
    from .checks import CheckReport
    from .findings import sort_findings
    from .provenance import load_provenance
    from .report import check_data, render
    from .resolve import resolve
    from .source import Source
    from .writes import changed_files, write_files

    root = _root(args)
    path = source_path(args.source)
    if path is None:
        raise UsageError(f"resolve needs the engine: give --source PATH or set {ENV_VAR}")
    try:
        previous = load_provenance(root)
    except ValueError as exc:
        raise UsageError(_invalid(root / "provenance.json", exc)) from None
    revision = args.revision or (previous.revision if previous else None)
    if revision is None:
        raise UsageError("no pinned revision yet: give --revision SHA")
    before = _page_snapshot(root)
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
    written = write_files(root, outcome.contents, before)
    if args.format == "json":
        print(json.dumps({"verb": "resolve", "written": written, "citations": len(outcome.index.records)}, indent=2))
    else:
        what = ", ".join(written) or "nothing (already current)"
        print(f"resolve: {len(outcome.index.records)} citations at {outcome.index.revision[:12]}; wrote: {what}")
    return 0


def cmd_search_space(args: argparse.Namespace) -> int:
    import yaml

    from .searchspace import SEARCH_SPACE_PATH, read_search_space, select, validate_search_space

    root = _root(args)
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


def cmd_models(args: argparse.Namespace) -> int:
    import yaml

    from .catalogue import models_data

    data = models_data(_root(args), args.name)
    if args.format == "json":
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return 0


def cmd_find(args: argparse.Namespace) -> int:
    from .find import find, render_text, result_data

    result = find(_root(args), args.name)
    if args.format == "json":
        print(json.dumps(result_data(result, args.limit), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(render_text(result, args.limit))
    return 0 if result.found else 1


def _invalid(path: Path, exc: ValueError) -> str:
    """One line: the file, the field path and the reason (pydantic), or the JSON error."""
    from pydantic import ValidationError

    from .findings import validation_message

    if isinstance(exc, ValidationError):
        found = exc.errors()
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return f"{path}: {validation_message(found[0])}{more}"
    return f"{path}: {str(exc).splitlines()[0]}"


def _pinned_state(root: Path) -> tuple[EvidenceIndex, Provenance]:
    from .index import load_index
    from .provenance import load_provenance

    try:
        index = load_index(root)
    except ValueError as exc:
        raise UsageError(_invalid(root / "evidence/index.json", exc)) from None
    try:
        provenance = load_provenance(root)
    except ValueError as exc:
        raise UsageError(_invalid(root / "provenance.json", exc)) from None
    if index is None or provenance is None:
        raise UsageError(f"{root}: no evidence index or provenance yet: run `omni-skill resolve` first")
    from .index import label_disagrees
    from .labels import LabelError

    for number, record in enumerate(index.records):
        try:
            disagrees = label_disagrees(record)
        except LabelError as exc:
            raise UsageError(f"{root / 'evidence/index.json'}: records.{number}.label: {exc}") from None
        if disagrees:
            raise UsageError(
                f"{root / 'evidence/index.json'}: records.{number}: path, anchor or kind disagree with the label "
                f"{record.label!r}: run `omni-skill resolve`"
            )
    return index, provenance


def _page_snapshot(root: Path) -> dict[str, str | None]:
    """The pages and data files as a writing verb read them, so it writes over none edited meanwhile."""
    from .skill import data_files, markdown_files
    from .writes import snapshot

    return snapshot(root, markdown_files(root) + data_files(root))


def _old_source(path: Path, revision: str) -> Source | None:
    from .source import Source

    try:
        return Source(path, revision)
    except UsageError:
        return None  # the pinned revision is not in this clone: fingerprints still decide


def cmd_bump(args: argparse.Namespace) -> int:
    from .bump import BumpReport, blockers, classify_all, counts, new_index, relabel
    from .checks import check_index, check_proposed
    from .report import render
    from .resolve import outputs, pinned, verification, with_code_fingerprints
    from .skill import collect
    from .source import Source
    from .writes import write_files

    root = _root(args)
    path = source_path(args.source)
    if path is None:
        raise UsageError(f"bump needs the engine: give --source PATH or set {ENV_VAR}")
    before = _page_snapshot(root)
    index, provenance = _pinned_state(root)
    stale = [f for f in check_index(root, collect(root), index, provenance) if f.kind.startswith("index-")]
    if stale:
        raise UsageError(
            f"{stale[0].one_line()} — the pages changed since the last resolve: run `omni-skill resolve` first"
        )
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


def _engine(args: argparse.Namespace, index: EvidenceIndex, revision: str) -> Engine:
    from .engine import open_engine

    return open_engine(args, revision, [r.path for r in index.records])


def cmd_drift(args: argparse.Namespace) -> int:
    from .bump import GIT_STATUSES, classify_all, counts, use_contexts
    from .pageclaims import by_page, citation_verdict, claim_items, page_claims, verdicts
    from .pageclaims import counts as claim_counts
    from .report import render
    from .source import Source
    from .versions import TREE_STATUSES, classify_tree, disagreements, load_matrix, matching_release, sections

    root = _root(args)
    index, provenance = _pinned_state(root)
    engine = _engine(args, index, args.revision)
    if getattr(engine.files, "version_problem", ""):
        problem = engine.files.version_problem  # type: ignore[union-attr]
        print(f"omni-skill drift: note: {Path(engine.location).name}: {problem}", file=sys.stderr)
    release: dict[str, object] = {}
    if isinstance(engine.files, Source):
        old = _old_source(engine.files.path, provenance.revision)
        entries = [c.entry for c in classify_all(root, index, engine.files, old)]
        statuses: tuple[str, ...] = GIT_STATUSES
    else:
        entries = classify_tree(index, engine.files, use_contexts(root, index))
        statuses = TREE_STATUSES
        try:
            recorded = load_matrix(root)
        except ValueError as exc:
            listed = "`omni-skill check` lists every problem"
            raise UsageError(f"{_invalid(root / RELEASES_PATH, exc)} ({listed})") from None
        matched = matching_release(index, engine.files, recorded)
        if matched is not None:  # verified afresh above; the matrix must agree
            release = {"version": matched.version, "disagreements": disagreements(matched, entries)}
    found = sections(entries)
    from .releasenotes import facts_block
    from .skill import markdown_files

    if isinstance(engine.files, Source):
        facts = {}  # a git engine: `facts --source` lists its facts
    else:
        version = str(release["version"]) if release else None
        facts = facts_block(root, markdown_files(root), version, engine.files, engine.paths())
    claims = page_claims(root, index)
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
        "claims": {"counts": claim_counts(judged), "items": items},
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
        "entries": [e.model_dump(mode="json") for e in entries],
    }
    if args.format != "json":
        data["status"] = {e.label: e.status for e in entries}
        data["pages"], data["hidden"], data["verbose"] = pages, hidden, args.verbose
    sys.stdout.write(render("drift", data, args.format))
    return 1 if any(v in ("changed", "missing") for v in judged.values()) else 0


def cmd_show(args: argparse.Namespace) -> int:
    from .bump import classify
    from .index import permalink
    from .labels import parse_label
    from .report import render
    from .source import Source
    from .versions import classify_one, holds

    root = _root(args)
    index, provenance = _pinned_state(root)
    record = index.by_label().get(args.label)
    if record is None:
        raise UsageError(f"{args.label} is not a citation of this skill (labels are listed in evidence/index.json)")
    engine = _engine(args, index, args.revision or provenance.revision)
    if isinstance(engine.files, Source):
        entry = classify(record, engine.files, _old_source(engine.files.path, provenance.revision)).entry
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


def _pinned_files(files: object, args: argparse.Namespace, revision: str) -> Source | None:
    """The engine at the pinned revision: the user's own clone when it holds it, else the pinned
    source named by --source or the environment; None when neither has it."""
    from .source import Source

    if isinstance(files, Source):
        return _old_source(files.path, revision)
    path = source_path(getattr(args, "source", None))
    return _old_source(path, revision) if path is not None else None


def span_diff(before: list[str], after: list[str], old_name: str, new_name: str) -> list[str]:
    """A unified diff of a span's lines, pinned -> the engine's (every line as context when they agree)."""
    import difflib

    return list(difflib.unified_diff(before, after, old_name, new_name, n=3, lineterm=""))


def _wheel_files(given: list[Path]) -> list[Path]:
    """The wheels named, folders expanded; a wheel named twice is a usage error."""
    found: list[Path] = []
    for item in given:
        if item.is_dir():
            wheels = sorted(item.glob("*.whl"))
            if not wheels:
                raise UsageError(f"{item}: no .whl files in this folder")
            found += wheels
        elif item.exists():
            found.append(item)  # a FIFO or device is refused when it is opened, without blocking
        else:
            raise UsageError(f"{item}: no such wheel or folder")
    seen: dict[Path, Path] = {}
    for wheel in found:
        real = wheel.resolve()
        if real in seen:
            raise UsageError(f"{wheel}: given twice (also as {seen[real]})")
        seen[real] = wheel
    return found


def cmd_releases(args: argparse.Namespace) -> int:
    from .bump import use_contexts
    from .index import dump_json
    from .pageclaims import page_claims
    from .report import render
    from .trees import WheelTree, require_cited
    from .versions import RELEASES_SCHEMA_PATH, matrix, release_of, render_page, schema_json
    from .writes import write_files

    root = _root(args)
    index, _ = _pinned_state(root)
    contexts = use_contexts(root, index)
    claims = page_claims(root, index)
    releases = []
    versions: dict[str, Path] = {}
    trees = []
    for path in _wheel_files(args.wheel):
        tree = WheelTree(path)
        if tree.version_problem:
            raise UsageError(f"{path}: {tree.version_problem} (a release is named by its wheel file)")
        if tree.version in versions:
            raise UsageError(f"{path}: version {tree.version} is also {versions[tree.version]}; give one wheel each")
        versions[tree.version] = path
        require_cited(tree, [r.path for r in index.records])
        releases.append(release_of(index, tree, contexts, claims))
        trees.append(tree)
    found = matrix(index, releases)
    contents = {
        RELEASES_PATH: dump_json(found),
        RELEASES_SCHEMA_PATH: schema_json(),
        VERSIONS_PAGE: render_page(found, index, contexts),
    }
    facts = release_facts(root, args, trees)
    if facts is not None:
        from .facts import FACTS_PATH, FACTS_SCHEMA_PATH, facts_json
        from .facts import schema_json as facts_schema
        from .lintmodels import LINT_MODELS_PATH
        from .releasenotes import notes_pages
        from .skill import markdown_files

        counts = {r.version: r.counts for r in found.releases}
        contents[FACTS_PATH] = facts_json(facts)
        contents[FACTS_SCHEMA_PATH] = facts_schema()
        contents.update(notes_pages(root, facts, markdown_files(root), counts))
        contents[LINT_MODELS_PATH] = lint_models(root, args, trees, facts.revision)
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


def lint_models(root: Path, args: argparse.Namespace, trees: list[WheelTree], revision: str) -> str:
    """evidence/lint-models.json: lint-deploy's engine model of every wheel and of the pin (from
    --source, else kept from the shipped file)."""
    from .deploy_model import build
    from .factkinds import PIN
    from .lintmodels import LINT_MODELS_PATH, dump, entry_line, spans_of
    from .safeio import read_text as safe_read_text

    entries = []
    for tree in trees:
        model = build(tree, tree.paths())
        entries.append(entry_line(tree.version, model, spans_of(model, tree)))
    path = source_path(args.source)
    if path is not None:
        from .source import Source

        source = Source(path, revision)
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
    from .facts import FACTS_PATH, PIN, EngineStamp, extract, load_facts, timeline
    from .provenance import load_provenance

    provenance = load_provenance(root)
    if provenance is None:
        raise UsageError(f"{root}: no provenance.json (run resolve first)")
    stamps, per_engine = [], {}
    for tree in trees:
        stamps.append(EngineStamp(id=tree.version, date=tree.built()))
        per_engine[tree.version] = extract(tree, tree.paths())
    path = source_path(args.source)
    if path is not None:
        from .source import Source

        source = Source(path, provenance.revision)
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


def cmd_install(args: argparse.Namespace) -> int:
    from .checks import run_check
    from .install import destination, install
    from .report import check_data, render

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
    from .checks import run_check
    from .install import package, runtime_files

    root = _root(args)
    runtime_files(root)  # a symbolic link or a missing part first: that is what to fix
    report = run_check(root, None, installed=False)  # a package is what `check` accepts, nothing less
    if not report.ok:
        first = report.findings[0].one_line()
        more = f" (and {len(report.findings) - 1} more)" if len(report.findings) > 1 else ""
        raise UsageError(f"{root}: the skill fails `omni-skill check`: {first}{more}; nothing was packaged")
    files = package(root, args.output)
    print(f"package: {args.output} holds {len(files)} files under vllm-omni/")
    return 0


def cmd_lint_deploy(args: argparse.Namespace) -> int:
    from .lint_deploy import lint_from_args, render_json, render_text
    from .provenance import load_provenance

    root = _root(args)
    provenance = load_provenance(root)
    if provenance is None:
        raise UsageError("the skill has no provenance.json: its pinned revision is unknown")
    report = lint_from_args(args, provenance.repository, provenance.revision, root)
    sys.stdout.write(render_json(report) if args.format == "json" else render_text(report))
    return 1 if report.failed() else 0


def cmd_facts(args: argparse.Namespace) -> int:
    from .factsverbs import cmd_facts as run

    return run(args, _root(args))


def cmd_since(args: argparse.Namespace) -> int:
    from .factsverbs import cmd_since as run

    return run(args, _root(args))


COMMANDS = {
    "facts": cmd_facts,
    "since": cmd_since,
    "install": cmd_install,
    "package": cmd_package,
    "check": cmd_check,
    "resolve": cmd_resolve,
    "bump": cmd_bump,
    "drift": cmd_drift,
    "show": cmd_show,
    "releases": cmd_releases,
    "search-space": cmd_search_space,
    "models": cmd_models,
    "find": cmd_find,
    "lint-deploy": cmd_lint_deploy,
}


def main(argv: Sequence[str] | None = None) -> int:
    # The file formats are validated by the skill's own models alone: pydantic plugins installed
    # in the environment are not loaded (nor is every installed package's metadata scanned for them).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _safe_streams()
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("omni-skill: interrupted before starting; nothing was written", file=sys.stderr)
        return 2
    try:
        return COMMANDS[args.verb](args)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in PACKAGES:
            return _internal(args.verb, exc)
        print(
            f"omni-skill {args.verb}: needs the Python package '{PACKAGES[top]}' — python3 -m pip install "
            f"{PACKAGES[top]} (or: uv run scripts/omni-skill {args.verb} …)",
            file=sys.stderr,
        )
        return 2
    except UsageError as exc:
        print(f"omni-skill {args.verb}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except ChangedMeanwhile as exc:
        print(
            f"omni-skill {args.verb}: error: {exc} changed while {args.verb} ran; nothing was written: run it again",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError as exc:
        if _stdout_closed():
            return 1  # the reader went away (`| head`): nothing to say, and nowhere to say it
        return _internal(args.verb, exc)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"omni-skill {args.verb}: error: {where}{_one_line(exc.strerror or str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"omni-skill {args.verb}: interrupted; {_after_interrupt(args)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last resort: each known cause has its own handling
        return _internal(args.verb, exc)


def _one_line(text: str) -> str:
    from .safeio import printable

    return printable(" ".join(text.split()))[:2000]


def _safe_streams() -> None:
    """Output never dies on the encoding of stdout or stderr (LANG=C, an ASCII or cp1252 console):
    what they cannot encode is written as a backslash escape. A closed stream writes to nowhere."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 (lives as long as the process)
            continue
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def _stdout_closed() -> bool:
    """Whether stdout's reader is gone (a pipe without readers polls as an error); if so, stdout
    goes to the null device from now on, so the interpreter's last flush does not complain either."""
    try:
        import select

        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if not any(events & select.POLLERR for _, events in poller.poll(0)):
            return False
    except (AttributeError, ValueError, OSError):
        pass  # no poll here, or no file behind stdout: take the broken pipe to be stdout's
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return True


def _internal(verb: str, exc: BaseException) -> int:
    print(
        f"omni-skill {verb}: internal error: {type(exc).__name__}: {_one_line(str(exc))[:300]} "
        "(please report it with the command that caused it)",
        file=sys.stderr,
    )
    return 2


def _after_interrupt(args: argparse.Namespace) -> str:
    from .writes import JOURNAL, journal_problem, pending

    root = args.root if args.root is not None else find_root()
    if args.verb in WRITERS and not journal_problem(root) and pending(root):
        return f"the last renames of a write are recorded in {JOURNAL}: run the same command again to complete them"
    return "no write was left half-done"


if __name__ == "__main__":
    raise SystemExit(main())
