"""`check`: every rule that holds without the engine, then every record against the engine."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .anchors import AnchorError, Span, fingerprint, locate, python
from .anchors.lines import HASHED_KINDS, line_hashes
from .anchors.yaml_keys import node_at
from .claims import NoDefault, NotLiteral, same_value, source_default
from .findings import Finding, sort_findings, stale_schema, validation_findings
from .index import (
    INDEX_PATH,
    SCHEMA_PATH,
    EvidenceIndex,
    EvidenceRecord,
    UsePlace,
    label_disagrees,
    load_index,
    permalink,
    schema_json,
)
from .labels import Label, LabelError, parse_label
from .provenance import PROVENANCE_PATH, Provenance, load_provenance
from .skill import (
    REFERENCES,
    SKILL_FILE,
    WHOLE_PATH,
    SkillLabels,
    collect,
    collector_paused,
    control_findings,
    eval_files,
    read_once,
    read_text,
    unreadable_files,
    valid_labels,
)
from .source import BlobError, Source
from .writes import JOURNAL, journal_problem, pending
from .yamlcheck import construct, mapping, plain_data

SOURCE_CHECKS = (
    ("records", "every evidence record verified at the pinned revision (file, blob, anchor at its span, fingerprint)"),
    ("defaults", "claimed literal defaults and search-space types compared with the source"),
    ("tests", "pytest references point to test files and names that exist; test-map markers are the tests' own"),
    ("models", "models.yaml: every registry key has an entry and every entry a key; each claimed value holds"),
)


@dataclass
class CheckReport:
    verb: str
    root: str
    revision: str
    findings: list[Finding]
    ran: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    citations: int = 0
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings


def load_state(root: Path) -> tuple[EvidenceIndex | None, Provenance | None, list[Finding]]:
    findings: list[Finding] = []
    index = provenance = None
    for rel, loader in ((INDEX_PATH, load_index), (PROVENANCE_PATH, load_provenance)):
        try:
            loaded = loader(root)
        except ValidationError as exc:
            findings += validation_findings(rel, exc, "file-invalid")
            continue
        except ValueError as exc:
            findings.append(Finding(kind="file-invalid", file=rel, message=str(exc).splitlines()[0]))
            continue
        if loaded is None:
            findings.append(
                Finding(kind="file-missing", file=rel, message="missing: run `omni-skill resolve --source …`")
            )
        elif isinstance(loaded, EvidenceIndex):
            index = loaded
        else:
            provenance = loaded
    return index, provenance, findings


def check_definitions(collected: SkillLabels) -> list[Finding]:
    """Per Markdown file: each used label has exactly one definition, each definition a use."""
    findings: list[Finding] = []
    used = {(u.file, u.text) for u in collected.uses if u.file.endswith(".md")}
    defined: dict[tuple[str, str], list[str]] = {}
    for d in collected.definitions:
        defined.setdefault((d.file, d.text), []).append(d.url)
    for d in collected.definitions:
        urls = defined[(d.file, d.text)]
        if (d.file, d.text) not in used:
            findings.append(
                Finding(
                    kind="definition-unused",
                    file=d.file,
                    line=d.line,
                    message=f"{d.text} is defined but never cited in this file",
                    label=d.text,
                )
            )
        elif len(set(urls)) > 1:
            findings.append(
                Finding(
                    kind="definition-conflict",
                    file=d.file,
                    line=d.line,
                    message=f"{d.text} is defined {len(urls)} times with different URLs",
                    label=d.text,
                )
            )
        elif len(urls) > 1:
            findings.append(
                Finding(
                    kind="definition-duplicate",
                    file=d.file,
                    line=d.line,
                    message=f"{d.text} is defined {len(urls)} times",
                    label=d.text,
                )
            )
    for u in collected.uses:
        if u.file.endswith(".md") and (u.file, u.text) not in defined:
            findings.append(
                Finding(
                    kind="definition-missing",
                    file=u.file,
                    line=u.line,
                    message=f"{u.text} has no definition: run `omni-skill resolve`",
                    label=u.text,
                )
            )
    return findings


def _url_problem(url: str, expected: str, provenance: Provenance) -> str:
    prefix = f"{provenance.repository}/blob/"
    if not url.startswith(prefix):
        return f"URL points outside {provenance.repository}"
    if not url[len(prefix) :].startswith(provenance.revision + "/"):
        return f"URL points at another revision than {provenance.revision[:12]}"
    return f"URL is {url}, the index says {expected}"


def check_index(root: Path, collected: SkillLabels, index: EvidenceIndex, provenance: Provenance) -> list[Finding]:
    """The index matches the labels in use, the definitions match the index and provenance."""
    findings: list[Finding] = []
    if index.revision != provenance.revision:
        findings.append(
            Finding(
                kind="index-revision",
                file=INDEX_PATH,
                message=f"index is at {index.revision[:12]}, provenance pins {provenance.revision[:12]}",
            )
        )
    from .resolve import ENGINE_REVISION_RE

    pinned_in_skill = ENGINE_REVISION_RE.search(read_text(root, SKILL_FILE)) if (root / SKILL_FILE).exists() else None
    if pinned_in_skill and provenance.revision not in pinned_in_skill.group(0):
        findings.append(
            Finding(
                kind="metadata-revision",
                file=SKILL_FILE,
                message=f"metadata engine-revision differs from provenance ({provenance.revision[:12]}): "
                "run `omni-skill resolve`",
            )
        )
    if index.repository != provenance.repository:
        findings.append(
            Finding(
                kind="index-repository", file=INDEX_PATH, message="index and provenance name different repositories"
            )
        )
    records = index.by_label()
    grouped = valid_labels(collected.uses)
    for label, places in sorted(grouped.items()):
        record = records.get(label)
        if record is None:
            findings += [
                Finding(
                    kind="index-stale",
                    file=u.file,
                    line=u.line,
                    message=f"{label} is not in the evidence index: run `omni-skill resolve`",
                    label=label,
                )
                for u in places
            ]
            continue
        actual = sorted({(u.file, u.line) for u in places})
        if [(p.file, p.line) for p in record.uses] != actual:
            findings.append(
                Finding(
                    kind="index-stale",
                    file=INDEX_PATH,
                    message=f"{label}: recorded uses differ from the skill's citations: run `omni-skill resolve`",
                    label=label,
                )
            )
    for record in index.records:
        if record.label not in grouped:
            findings.append(
                Finding(
                    kind="index-unused",
                    file=INDEX_PATH,
                    message=f"{record.label} is in the index but cited nowhere",
                    label=record.label,
                )
            )
        try:
            disagrees = label_disagrees(record)
        except LabelError as exc:
            findings.append(Finding(kind="index-invalid", file=INDEX_PATH, message=str(exc), label=record.label))
            continue
        if disagrees or record.end < record.start:
            findings.append(
                Finding(
                    kind="index-invalid",
                    file=INDEX_PATH,
                    message=f"{record.label}: path, anchor, kind or span disagree with the label",
                    label=record.label,
                )
            )
    for d in collected.definitions:
        record = records.get(d.text)
        if record is None:
            continue
        expected = permalink(provenance.repository, provenance.revision, record)
        if d.url != expected:
            findings.append(
                Finding(
                    kind="url-mismatch",
                    file=d.file,
                    line=d.line,
                    message=_url_problem(d.url, expected, provenance),
                    label=d.text,
                )
            )
    return findings


def check_evals(root: Path, index: EvidenceIndex | None) -> list[Finding]:
    """Each eval file parses; each eval's labels are cited in its branch (a definition also through a sub-span)."""
    findings: list[Finding] = []
    records = index.by_label() if index else {}
    # A definition is cited where one of its sub-spans (`Symbol@L<a>-L<b>`) is: narrowing a page's
    # citation to the lines of a claim keeps the evals that name the definition.
    places: dict[str, list[UsePlace]] = {label: list(record.uses) for label, record in records.items()}
    for record in records.values():
        if record.kind == "subspan":
            places.setdefault(Label(record.path, parse_label(record.label).symbol).text, []).extend(record.uses)
    for rel in eval_files(root):
        data, problems = plain_data(read_text(root, rel))
        if problems:
            findings += [Finding(kind="eval-invalid", file=rel, line=n, message=m) for n, m in problems]
            continue
        try:
            from .datafiles import EvalFile

            evals = EvalFile.model_validate(data)
        except ValidationError as exc:
            findings += validation_findings(rel, exc, "eval-invalid")
            continue
        ids = [e.id for e in evals.evals]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            findings.append(Finding(kind="eval-invalid", file=rel, message=f"eval id {dup!r} is used twice"))
        branch = f"{REFERENCES}/{evals.branch}/"
        for item in evals.evals:
            for label in item.labels:
                uses = places.get(label)
                if uses is None:
                    findings.append(
                        Finding(
                            kind="eval-label",
                            file=rel,
                            message=f"{item.id}: {label} is not cited anywhere in the skill",
                            label=label,
                        )
                    )
                elif not any(u.file.startswith(branch) for u in uses):
                    findings.append(
                        Finding(
                            kind="eval-label",
                            file=rel,
                            message=f"{item.id}: {label} is not cited in {branch}",
                            label=label,
                        )
                    )
    return findings


def holds(record: EvidenceRecord, source: Source) -> bool:
    """The fast proof for a record whose file is unchanged: same blob, the fingerprint of the
    recorded span, and the anchor found at that span (Python: from the span and its enclosing
    lines; other kinds: located in full). Anything else is decided by a full resolve."""
    entry = source.entry(record.path)
    if entry is None or entry.sha != record.blob:
        return False
    try:
        lines = source.lines(record.path)
    except BlobError:
        return False
    span = Span(record.start, record.end)
    if record.end > max(1, len(lines)) or fingerprint(lines, span) != record.fingerprint:
        return False
    if record.kind == "python":
        return python.verify_at(lines, record.anchor, span)
    if record.kind in HASHED_KINDS and record.line_hashes != line_hashes(lines, span):
        return False
    try:
        quick = record.kind == "subspan"  # its definition is proven from its own lines, as for python
        return locate(parse_label(record.label), source.text(record.path), quick, lines) == span
    except AnchorError:
        return False


def check_records(records: list[EvidenceRecord], source: Source) -> list[Finding]:
    findings: list[Finding] = []
    for record in records:
        if holds(record, source):
            continue
        where = record.uses[0] if record.uses else None
        file, line = (where.file, where.line) if where else (INDEX_PATH, 0)
        from .resolve import Unresolved, resolve_label  # (imported here: the forked side needs it rarely)

        result = resolve_label(record.label, source, code=True)
        if isinstance(result, Unresolved):
            findings.append(Finding(kind=result.kind, file=file, line=line, message=result.message, label=record.label))
            continue
        problems = []
        if result.blob != record.blob:
            problems.append(f"blob {result.blob[:12]} at the revision, index has {record.blob[:12]}")
        if (result.start, result.end) != (record.start, record.end):
            problems.append(
                f"span L{result.start}-L{result.end} at the revision, index has L{record.start}-L{record.end}"
            )
        if result.fingerprint != record.fingerprint:
            problems.append("fingerprint of the cited text differs from the index")
        elif result.line_hashes != record.line_hashes:
            problems.append("line hashes of the cited lines differ from the index")
        elif result.code_fingerprint != record.code_fingerprint:
            problems.append("code fingerprint of the cited span differs from the index")
        for problem in problems:
            findings.append(
                Finding(
                    kind="record-mismatch",
                    file=file,
                    line=line,
                    message=f"{record.label}: {problem}",
                    label=record.label,
                )
            )
    return findings


def _claimed_node(label_text: str, source: Source) -> ast.AST | yaml.Node:
    label = parse_label(label_text)
    text = source.text(label.path)
    if label.kind == "python":
        quick = python.quick_find(source.lines(label.path), label.anchor)
        return quick[1] if quick else python.find(text, label.anchor)[1]
    if label.kind == "yaml":
        return node_at(text, label.anchor)
    raise NoDefault(f"a {label.kind} citation cannot carry a default claim")


def check_claims(collected: SkillLabels, source: Source) -> list[Finding]:
    findings: list[Finding] = []
    for claim in collected.claims:
        try:
            node = _claimed_node(claim.label, source)
            if isinstance(node, yaml.Node):
                actual = construct(node)
            else:
                actual = source_default(node, claim.param).value
        except (LabelError, KeyError, BlobError, AnchorError):
            continue  # the citation itself is reported by the record checks
        except NotLiteral as exc:
            findings.append(
                Finding(
                    kind="default-not-literal",
                    file=claim.file,
                    line=claim.line,
                    message=f"{claim.label}: {exc}",
                    label=claim.label,
                )
            )
            continue
        except NoDefault as exc:
            findings.append(
                Finding(
                    kind="default-absent",
                    file=claim.file,
                    line=claim.line,
                    message=f"{claim.label}: {exc}",
                    label=claim.label,
                )
            )
            continue
        if not same_value(claim.default, actual):
            findings.append(
                Finding(
                    kind="default-mismatch",
                    file=claim.file,
                    line=claim.line,
                    message=f"{claim.label}: claims default {claim.default!r}, the source says {actual!r}",
                    label=claim.label,
                )
            )
    return findings


def check_setting_types(document: yaml.Node | None, source: Source) -> list[Finding]:
    """Each search-space setting's `type` agrees with the type its source states (an annotation
    or an add_argument), where the source states one (`claims.source_type`)."""
    from .claims import TYPE_AGREES, source_type
    from .searchspace import SEARCH_SPACE_PATH

    settings = mapping(document).get("settings")
    findings: list[Finding] = []
    for item in settings.value if isinstance(settings, yaml.SequenceNode) else []:
        fields = mapping(item)
        values = {k: v.value for k, v in fields.items() if isinstance(v, yaml.ScalarNode)}
        claimed, label = values.get("type"), values.get("source")
        if claimed not in TYPE_AGREES or not label:
            continue  # the format check reports it
        try:
            node = _claimed_node(label, source)
        except (LabelError, KeyError, BlobError, AnchorError, NoDefault):
            continue  # the citation itself is reported by the record checks
        actual = source_type(node, values.get("param")) if isinstance(node, ast.AST) else None
        if actual is not None and actual not in TYPE_AGREES[claimed]:
            findings.append(
                Finding(
                    kind="type-mismatch",
                    file=SEARCH_SPACE_PATH,
                    line=fields["type"].start_mark.line + 1,
                    message=f"{values.get('name')}: claims type {claimed!r}, {label} states {actual!r}",
                    label=label,
                )
            )
    return findings


def check_tests(collected: SkillLabels, source: Source) -> list[Finding]:
    findings: list[Finding] = []
    for ref in collected.tests:
        try:
            text = source.text(ref.path)
        except KeyError:
            findings.append(
                Finding(
                    kind="test-missing",
                    file=ref.file,
                    line=ref.line,
                    message=f"test file {ref.path} does not exist at the revision",
                )
            )
            continue
        except BlobError as exc:
            findings.append(Finding(kind="test-missing", file=ref.file, line=ref.line, message=f"{ref.path} {exc}"))
            continue
        if not ref.names:
            continue
        name = ".".join(ref.names)
        if python.quick_span(source.lines(ref.path), name):
            continue
        try:
            defined = python.definitions(text)
        except AnchorError as exc:
            findings.append(Finding(kind="test-missing", file=ref.file, line=ref.line, message=f"{ref.path}: {exc}"))
            continue
        if name not in defined:
            findings.append(
                Finding(
                    kind="test-missing",
                    file=ref.file,
                    line=ref.line,
                    message=f"{ref.path}::{'::'.join(ref.names)} is not defined at the revision",
                )
            )
    return findings


def run_check(root: Path, source: Source | None, installed: bool, wheels: dict[str, Any] | None = None) -> CheckReport:
    """`wheels`: release wheels by version (`trees.WheelTree`) to re-verify `rel:` citations in."""
    with read_once(), collector_paused():
        return _run_check(root, source, installed, wheels)


def _run_check(root: Path, source: Source | None, installed: bool, wheels: dict[str, Any] | None) -> CheckReport:
    unreadable = unreadable_files(root)
    if unreadable:  # every other check reads these files: report them alone
        return CheckReport(verb="check", root=str(root), revision="", findings=sort_findings(unreadable), ran=["files"])
    index, provenance, findings = load_state(root)
    if source is None:
        offline = offline_checks(root, index, provenance, installed, wheels=wheels, beside=True)
        findings += offline.findings
        ran = offline.ran
        skipped = [(name, what) for name, what in SOURCE_CHECKS]
    else:
        from .catalogue_checks import check_models
        from .datafiles import TEST_MAP_PATH
        from .markers import check_test_markers
        from .parallel import Beside
        from .searchspace import SEARCH_SPACE_PATH

        records = index.records if index else []
        python_records = [r for r in records if r.kind in ("python", "subspan")]
        other_records = [r for r in records if r.kind not in ("python", "subspan")]

        def engine_checks(engine: Source) -> list[Finding]:
            """The pin's facts and the Python records (they read no page, and need neither
            markdown-it nor jinja2): beside the rest, on a second CPU when there is one."""
            from .facts import check_pin_facts

            facts = check_pin_facts(root, engine, sorted(engine.tree))
            return check_records(python_records, engine) + facts

        with Beside(engine_checks, source) as engine_side:
            offline = offline_checks(root, index, provenance, installed, catalogue=False, wheels=wheels)
            findings += offline.findings + check_records(other_records, source)
            findings += check_claims(offline.collected, source) + check_tests(offline.collected, source)
            findings += check_test_markers(offline.collected.documents.get(TEST_MAP_PATH), source)
            findings += check_setting_types(offline.collected.documents.get(SEARCH_SPACE_PATH), source)
            findings += check_models(root, source)  # the parent's side has the time to spare
            findings += engine_side.result()
        ran = [*offline.ran, *(name for name, _ in SOURCE_CHECKS)]
        skipped = []
    return CheckReport(
        verb="check",
        root=str(root),
        revision=provenance.revision if provenance else "",
        findings=sort_findings(findings),
        ran=ran,
        skipped=skipped,
        citations=len(index.records) if index else 0,
        files=len({r.path for r in index.records}) if index else 0,
    )


@dataclass
class Offline:
    findings: list[Finding]
    collected: SkillLabels
    ran: list[str]


def offline_checks(
    root: Path,
    index: EvidenceIndex | None,
    provenance: Provenance | None,
    installed: bool,
    catalogue: bool = True,
    wheels: dict[str, Any] | None = None,
    beside: bool = False,
) -> Offline:
    """Every check of the skill's own files, the labels collected, and the names of the checks run.
    `catalogue`: check models.yaml's format here (`check --source` has its catalogue check do it).
    `beside`: the checks of the shipped facts, release pages and lint models run in a forked
    process on a second CPU while the labels are collected and checked (see `parallel.Beside`)."""
    from contextlib import nullcontext
    from functools import partial

    from .facts import FACTS_PATH
    from .lintmodels import LINT_MODELS_PATH
    from .parallel import Beside
    from .versions import RELEASES_PATH, check_releases

    ran = ["structure", "labels", "definitions", "data", "evals"]
    release_checks: Callable[[object], list[Finding]] | None = None  # with an index and a pin
    has = {path: (root / path).exists() for path in (RELEASES_PATH, FACTS_PATH, LINT_MODELS_PATH)}
    pages: dict[str, str] = {}
    release_citations = False
    if index and provenance:
        from .relcite import REL_INDEX_PATH, uses_in
        from .skill import markdown_files

        pages = {rel: read_text(root, rel) for rel in markdown_files(root)}
        release_citations = (root / REL_INDEX_PATH).exists() or bool(uses_in(pages))
        ran += ["index", "spans"]
        ran += [name for name, path in (("releases", RELEASES_PATH), ("facts", FACTS_PATH)) if has[path]]
        ran += ["release-citations" + (" (wheels)" if wheels is not None else "")] if release_citations else []
        ran += ["lint-models"] if has[LINT_MODELS_PATH] else []
        release_checks = partial(_release_checks, root, provenance)
    # The release citations are checked here: the wheels they are re-verified in are open here.
    with Beside(release_checks, None) if beside and release_checks else nullcontext() as side:
        collected = collect(root)
        findings = _file_checks(root, installed, collected, index, provenance)
        if index and provenance and has[RELEASES_PATH]:
            findings += check_releases(root, index)
        if release_citations:
            from .relcite import check_release_citations

            findings += check_release_citations(root, pages, wheels)
        if side is not None:
            findings += side.result()
        elif release_checks is not None:
            findings += release_checks(None)
    findings += check_data_formats(root, collected.documents, catalogue)
    findings += check_evals(root, index)
    return Offline(findings, collected, ran)


def _file_checks(
    root: Path, installed: bool, collected: SkillLabels, index: EvidenceIndex | None, provenance: Provenance | None
) -> list[Finding]:
    """The structure, the write journal, control characters, labels, definitions, index and spans."""
    from .structure import check_structure

    findings = check_structure(root, installed)
    refused = journal_problem(root)
    if refused:
        findings.append(Finding(kind="write-journal-refused", file=JOURNAL, message=refused.split(": ", 1)[1]))
    unfinished = [] if refused else pending(root)
    if unfinished:
        findings.append(
            Finding(
                kind="write-unfinished",
                file=JOURNAL,
                message=f"an interrupted write of {len(unfinished)} files: run `omni-skill resolve` (or the verb "
                "that was interrupted) to complete it",
            )
        )
    findings += collected.findings + control_findings(root)
    findings += check_definitions(collected)
    if index and provenance:
        findings += check_index(root, collected, index, provenance)
        findings += stale_schema(root, SCHEMA_PATH, schema_json(), "index", "omni-skill resolve")
        findings += check_spans(root, index)
    return findings


def _release_checks(root: Path, provenance: Provenance, _: object = None) -> list[Finding]:
    """The shipped facts and release pages, the lint models: none reads the pages' labels or
    Markdown (`_`: the engine `Beside` passes, none here)."""
    from .facts import FACTS_PATH, check_facts
    from .lintmodels import LINT_MODELS_PATH, check_lint_models

    findings: list[Finding] = []
    if (root / FACTS_PATH).exists():
        findings += check_facts(root, provenance.revision, release_versions(root))
        findings += check_release_notes(root)
    if (root / LINT_MODELS_PATH).exists():
        findings += check_lint_models(root, provenance.revision, release_versions(root))
    return findings


def check_release_notes(root: Path) -> list[Finding]:
    """The per-release pages are the rendering of the shipped facts and the release matrix."""
    from .facts import REFRESH, load_facts
    from .releasenotes import NOTES_DIR, notes_pages
    from .skill import markdown_files
    from .versions import load_matrix

    try:
        facts, found = load_facts(root), load_matrix(root)
    except (ValueError, UnicodeDecodeError):
        return []  # reported by the facts and releases checks
    if facts is None:
        return []
    counts = {r.version: r.counts for r in found.releases} if found else {}
    expected = notes_pages(root, facts, markdown_files(root), counts)
    findings = []
    for rel, text in sorted(expected.items()):
        page = root / rel
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            findings.append(
                Finding(
                    kind="release-notes-stale", file=rel, message=f"not the rendering of the facts: run `{REFRESH}`"
                )
            )
    for page in sorted((root / NOTES_DIR).glob("*.md")) if (root / NOTES_DIR).is_dir() else []:
        rel = page.relative_to(root).as_posix()
        if rel not in expected:
            findings.append(
                Finding(kind="release-notes-stale", file=rel, message="a page for a release the facts do not have")
            )
    return findings


def release_versions(root: Path) -> list[str] | None:
    """The releases of the release matrix (None when there is none or it does not load)."""
    from .versions import load_matrix

    try:
        found = load_matrix(root)
    except (ValueError, UnicodeDecodeError):
        return None
    return [r.version for r in found.releases] if found else None


def check_data_formats(root: Path, documents: dict[str, yaml.Node], catalogue: bool) -> list[Finding]:
    """The data files with a schema, validated from the documents `collect` composed (a file that
    did not parse is not there: its finding is `collect`'s)."""
    from .catalogue import MODELS_PATH
    from .catalogue import load as load_catalogue
    from .datafiles import TEST_MAP_PATH
    from .searchspace import SEARCH_SPACE_PATH, validate_search_space

    findings: list[Finding] = []
    if SEARCH_SPACE_PATH in documents:
        findings += validate_search_space(construct(documents[SEARCH_SPACE_PATH]))[1]
    if TEST_MAP_PATH in documents:
        findings += check_test_map(construct(documents[TEST_MAP_PATH]))
    if catalogue and MODELS_PATH in documents:
        findings += load_catalogue(root, documents[MODELS_PATH]).findings
    return findings


def check_test_map(data: object) -> list[Finding]:
    from .datafiles import TEST_MAP_PATH, NativeTestMap

    try:
        test_map = NativeTestMap.model_validate(data)
    except ValidationError as exc:
        return validation_findings(TEST_MAP_PATH, exc, "test-map-invalid")
    findings = []
    names = [s.name for s in test_map.subsystems]
    tests = [t.pytest for s in test_map.subsystems for t in s.tests]
    for what, values in (("subsystem", names), ("test", tests)):
        for value in sorted({v for v in values if values.count(v) > 1}):
            findings.append(
                Finding(kind="test-map-invalid", file=TEST_MAP_PATH, message=f"{what} {value!r} is listed twice")
            )
    return findings


LONG_SPAN = 60  # lines; a longer citation in a page must be a claim about the whole definition
# (benchmarks/long_spans.py lists what is over). Data files name symbols (a setting's owner, a test's
# source), so their uses are not judged.


def check_spans(root: Path, index: EvidenceIndex) -> list[Finding]:
    """A Python or YAML citation over LONG_SPAN lines used on a page must be listed in WHOLE_PATH
    with the reason its claims need the whole definition (a registry, a whole interface, an absence
    only the whole body shows); otherwise the claim should cite the lines that perform the behaviour."""
    allowed: dict[str, str] = {}
    path = root / WHOLE_PATH
    findings: list[Finding] = []
    if path.exists():
        data, problems = plain_data(read_text(root, WHOLE_PATH))
        if problems or not isinstance(data, dict) or not all(isinstance(v, str) and v for v in data.values()):
            line, message = problems[0] if problems else (0, "must map each label to a non-empty reason")
            return [Finding(kind="spans-invalid", file=WHOLE_PATH, line=line, message=message)]
        allowed = {str(k): v for k, v in data.items()}
    records = index.by_label()
    for record in index.records:
        length = record.end - record.start + 1
        if record.kind not in ("python", "subspan", "yaml") or length <= LONG_SPAN or record.label in allowed:
            continue
        for use in record.uses:
            if not use.file.endswith(".md"):
                continue
            findings.append(
                Finding(
                    kind="span-long",
                    file=use.file,
                    line=use.line,
                    message=f"{record.label} cites {length} lines: cite the method or branch that performs the "
                    f"behaviour, or list the label in {WHOLE_PATH} with why the claim needs the whole definition",
                    label=record.label,
                )
            )
    for label in sorted(allowed):
        listed = records.get(label)
        if listed is None:
            message = f"{label} is not cited anywhere: remove it"
        elif listed.end - listed.start + 1 <= LONG_SPAN:
            message = f"{label} cites {listed.end - listed.start + 1} lines, within {LONG_SPAN}: remove it"
        else:
            continue
        findings.append(Finding(kind="spans-stale", file=WHOLE_PATH, message=message, label=label))
    return findings


EXPECTED_AFTER_BUMP = ("releases-stale", "versions-stale")  # a bump always outdates the release matrix


def check_proposed(root: Path, contents: dict[str, str], source: Source) -> list[Finding]:
    """The full check of the skill as it would be with `contents` written, on a scratch copy
    (symbolic links copied as links), against `source`. The skill itself is not touched."""
    import shutil
    import tempfile

    ignore = shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".*_cache", "*.egg-info", "node_modules")
    with tempfile.TemporaryDirectory(prefix="omni-skill-") as tmp:
        scratch = Path(tmp) / root.name
        shutil.copytree(root, scratch, symlinks=True, ignore=ignore)
        for rel, text in contents.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_text(text, encoding="utf-8")
        report = run_check(scratch, source, installed=False)
    return [f for f in report.findings if f.kind not in EXPECTED_AFTER_BUMP]
