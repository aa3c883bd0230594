"""Resolve labels at a revision into evidence records, and write the link definitions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .anchors import AnchorError, Span, fingerprint, locate
from .anchors.code import code_fingerprint
from .anchors.lines import HASHED_KINDS, line_hashes
from .findings import Finding
from .index import INDEX_PATH, SCHEMA_PATH, EvidenceIndex, EvidenceRecord, UsePlace, dump_json, permalink, schema_json
from .labels import DEF_RE, Use, code_lines, escape, parse_label, scan_markdown
from .provenance import PROVENANCE_PATH, Provenance, Verification, companion_requirement
from .skill import SKILL_FILE, collect, markdown_files, read_text, valid_labels
from .source import BlobError, EngineFiles, Source


@dataclass(frozen=True)
class Unresolved:
    kind: str  # path-missing, file-unreadable, anchor-missing, anchor-ambiguous, anchor-invalid
    message: str


def resolve_label(
    label_text: str, source: EngineFiles, quick: bool = False, code: bool = False
) -> EvidenceRecord | Unresolved:
    """The record of one label at the source's revision (without uses), or why it fails.
    `quick` (bump, drift): Python definitions are found without parsing whole modules when a
    single candidate can be proven from its own lines; otherwise the module is parsed. `code`:
    with the span's code fingerprint (what the index records; it costs a parse of the span)."""
    label = parse_label(label_text)
    entry = source.entry(label.path)
    if entry is None:
        return Unresolved("path-missing", f"{label.path} does not exist at {source.where}")
    try:
        text = source.text(label.path)
    except BlobError as exc:
        return Unresolved("file-unreadable", f"{label.path} {exc}")
    try:
        span = locate(label, text, quick, source.lines(label.path))
    except AnchorError as exc:
        return Unresolved(f"anchor-{exc.kind}", f"{label.path}: {exc}")
    lines = source.lines(label.path)
    return EvidenceRecord(
        label=label.text,
        path=label.path,
        anchor=label.anchor,
        kind=label.kind,
        start=span.start,
        end=span.end,
        blob=entry.sha,
        fingerprint=fingerprint(lines, span),
        uses=[],
        line_hashes=line_hashes(lines, span) if label.kind in HASHED_KINDS else "",
        code_fingerprint=code_fingerprint(label, text, lines, span) if code else "",
    )


def with_code_fingerprints(index: EvidenceIndex, source: EngineFiles) -> EvidenceIndex:
    """The index with each record's code fingerprint at the source (bump's records are found
    without them, as drift's are)."""
    records = []
    for record in index.records:
        label = parse_label(record.label)
        text, lines = source.text(record.path), source.lines(record.path)
        found = code_fingerprint(label, text, lines, Span(record.start, record.end))
        records.append(record.model_copy(update={"code_fingerprint": found}))
    return index.model_copy(update={"records": records})


def build_index(uses: list[Use], source: Source) -> tuple[EvidenceIndex, list[Finding]]:
    """One record per distinct label, sorted; a finding at every use of a label that fails."""
    records: list[EvidenceRecord] = []
    findings: list[Finding] = []
    for label, places in sorted(valid_labels(uses).items()):
        result = resolve_label(label, source, code=True)
        if isinstance(result, Unresolved):
            findings += [
                Finding(kind=result.kind, file=u.file, line=u.line, message=result.message, label=label) for u in places
            ]
            continue
        result.uses = sorted({UsePlace(file=u.file, line=u.line) for u in places}, key=lambda p: (p.file, p.line))
        records.append(result)
    return EvidenceIndex(revision=source.commit, records=records), findings


CITATIONS_MARKER = "<!-- citations -->"  # agents stop reading a page here: below are only link definitions


def with_definitions(text: str, definitions: list[str]) -> str:
    """The Markdown text with its `[src:…]: URL` lines replaced by one block at the bottom, after
    the citations marker line."""
    from .relcite import REL_DEF

    skip = code_lines(text)
    kept = [
        line
        for i, line in enumerate(text.splitlines())
        if line.strip() != CITATIONS_MARKER and (i in skip or not (DEF_RE.match(line) or REL_DEF.match(line)))
    ]
    while kept and not kept[-1].strip():
        kept.pop()
    body = "\n".join(kept)
    if definitions:
        body += f"\n\n{CITATIONS_MARKER}\n" + "\n".join(definitions)
    return body + "\n"


def definition_texts(
    root: Path, index: EvidenceIndex, repository: str, texts: dict[str, str] | None = None, releases: Any = None
) -> dict[str, str]:
    """New text of every Markdown file: definitions for exactly the labels it uses (`src:` from the
    index, then `rel:` from `releases`, else from the shipped release citations)."""
    from .relcite import definitions as rel_definitions
    from .relcite import load as load_releases

    texts = texts or {}
    records = index.by_label()
    by_file: dict[str, set[str]] = {}
    for record in index.records:
        for use in record.uses:
            by_file.setdefault(use.file, set()).add(record.label)
    contents: dict[str, str] = {}
    pages = {rel: texts[rel] if rel in texts else read_text(root, rel) for rel in markdown_files(root)}
    rel_lines = rel_definitions(releases if releases is not None else load_releases(root), pages)
    for rel in markdown_files(root):
        lines = [
            f"[{escape(label)}]: {permalink(repository, index.revision, records[label])}"
            for label in sorted(by_file.get(rel, ()))
        ] + rel_lines.get(rel, [])
        text = pages[rel]
        if rel == SKILL_FILE:
            text = with_engine_revision(text, index.revision)
        contents[rel] = with_definitions(text, lines)
    return contents


ENGINE_REVISION_RE = re.compile(r'^(\s+engine-revision:\s*)"?[0-9a-f]{40}"?\s*$', re.MULTILINE)


def with_engine_revision(text: str, revision: str) -> str:
    """SKILL.md with its `metadata.engine-revision` set to the pinned revision."""
    return ENGINE_REVISION_RE.sub(lambda m: f'{m.group(1)}"{revision}"', text, count=1)


def verification(index: EvidenceIndex, findings: list[Finding]) -> Verification:
    return Verification(
        tool_version=__version__,
        citations=len(index.records),
        files=len({r.path for r in index.records}),
        result="verified" if not findings else "findings",
    )


def outputs(
    root: Path, index: EvidenceIndex, provenance: Provenance, texts: dict[str, str] | None = None
) -> dict[str, str]:
    """Every file `resolve` and `bump` write, by relative path (`texts`: edited file texts)."""
    contents = dict(texts or {})
    contents.update(definition_texts(root, index, provenance.repository, texts))
    contents[INDEX_PATH] = dump_json(with_page_uses(index, contents))
    contents[SCHEMA_PATH] = schema_json()
    contents[PROVENANCE_PATH] = dump_json(provenance)
    return contents


def with_page_uses(index: EvidenceIndex, contents: dict[str, str]) -> EvidenceIndex:
    """The index with each Markdown use at its line in the rewritten pages: moving the definitions
    to the bottom moves up any citation that sat below them."""
    pages = {rel: text for rel, text in contents.items() if rel.endswith(".md")}
    found: dict[str, set[tuple[str, int]]] = {}
    for rel, text in pages.items():
        for use in scan_markdown(rel, text).uses:
            found.setdefault(use.text, set()).add((use.file, use.line))
    records = []
    for record in index.records:
        kept = {(u.file, u.line) for u in record.uses if u.file not in pages}
        places = sorted(kept | found.get(record.label, set()))
        records.append(record.model_copy(update={"uses": [UsePlace(file=f, line=n) for f, n in places]}))
    return index.model_copy(update={"records": records})


@dataclass
class ResolveOutcome:
    index: EvidenceIndex
    provenance: Provenance
    findings: list[Finding]
    contents: dict[str, str]


def resolve(root: Path, source: Source, previous: Provenance | None) -> ResolveOutcome:
    collected = collect(root)
    index, findings = build_index(collected.uses, source)
    findings = collected.findings + findings
    provenance = pinned(source, previous, verification(index, findings))
    return ResolveOutcome(index, provenance, findings, outputs(root, index, provenance))


def pinned(source: Source, previous: Provenance | None, verified: Verification) -> Provenance:
    """Provenance for the source's revision."""
    return Provenance(
        repository=previous.repository if previous else Provenance.model_fields["repository"].default,
        revision=source.commit,
        commit_date=source.commit_date(),
        companion=companion_requirement(source),
        verification=verified,
    )
