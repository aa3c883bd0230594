"""Release citations: `rel:<X.Y.Z>:<path>::<anchor>` cites a release's own code, for a page that
says what that release does instead of what the pinned commit does.

The anchor grammar is the one of `src:` labels. Each label is resolved in the wheel of release X
(never imported, read member by member), recorded in `evidence/release-citations.json` (span,
blob, fingerprint, uses: no engine text), and linked at the release tag:
`…/blob/vX.Y.Z/<path>#L<a>-L<b>`. `releases` writes the records and the definitions; `check`
verifies the definitions offline and, with `--wheels DIR`, every record against its wheel.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .findings import Finding
from .index import REPOSITORY_URL, UsePlace
from .labels import Label, LabelError, code_lines, parse_label

REL_INDEX_PATH = "evidence/release-citations.json"
REL_LABEL = re.compile(r"^rel:(\d{1,4}\.\d{1,4}\.\d{1,4}):(\S+)$")
REL_USE = re.compile(r"\]\[(rel:[^\]\s]+)\]")
REL_DEF = re.compile(r"^ {0,3}\[(rel:[^\]\s]+)\]:[ \t]*(\S*)[ \t]*$")


class ReleaseCitation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    release: str
    path: str
    anchor: str
    kind: str
    start: int = Field(ge=1)
    end: int = Field(ge=1)
    blob: str = Field(pattern=r"^[0-9a-f]{40}$", description="git blob SHA of the file in the release wheel")
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")
    uses: list[UsePlace]


class ReleaseCitations(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    repository: str = REPOSITORY_URL
    records: list[ReleaseCitation]

    def by_label(self) -> dict[str, ReleaseCitation]:
        return {r.label: r for r in self.records}


def parse_rel(text: str) -> tuple[str, Label]:
    """(release, label as if it were `src:`) of a `rel:` label; LabelError when it does not parse."""
    found = REL_LABEL.match(text)
    if not found:
        raise LabelError(f"release label {text[:80]!r} is not rel:<X.Y.Z>:<path>[::<anchor>]")
    return found.group(1), parse_label("src:" + found.group(2))


def url(repository: str, record: ReleaseCitation) -> str:
    base = f"{repository}/blob/v{record.release}/{record.path}"
    if record.kind == "file":
        return base
    return f"{base}#L{record.start}" if record.start == record.end else f"{base}#L{record.start}-L{record.end}"


def uses_in(pages: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    """Every `rel:` label used in the pages, with its places (code blocks left out)."""
    found: dict[str, list[tuple[str, int]]] = {}
    for rel, text in pages.items():
        skip = code_lines(text)
        for number, line in enumerate(text.split("\n")):
            if number in skip or REL_DEF.match(line):
                continue
            for match in REL_USE.finditer(line):
                found.setdefault(match.group(1), []).append((rel, number + 1))
    return found


def resolve_all(pages: dict[str, str], wheels: dict[str, Any]) -> tuple[ReleaseCitations, list[Finding]]:
    """Each label used in the pages, resolved in its release's wheel (a `trees.WheelTree`)."""
    from .resolve import Unresolved, resolve_label

    records: list[ReleaseCitation] = []
    findings: list[Finding] = []
    for text, places in sorted(uses_in(pages).items()):

        def fail(kind: str, message: str, places: list[tuple[str, int]] = places, text: str = text) -> None:
            findings.extend(Finding(kind=kind, file=f, line=n, message=message, label=text) for f, n in places)

        try:
            release, label = parse_rel(text)
        except LabelError as exc:
            fail("label-invalid", str(exc))
            continue
        wheel = wheels.get(release)
        if wheel is None:
            fail("rel-no-wheel", f"{text}: no wheel of release {release} was given (--wheel)")
            continue
        found = resolve_label(label.text, wheel, quick=True)  # as a `src:` label, in the release's files
        if isinstance(found, Unresolved):
            fail(found.kind, f"{text}: {found.message}")
            continue
        uses = [UsePlace(file=f, line=n) for f, n in sorted(set(places))]
        kept = set(ReleaseCitation.model_fields) - {"label", "release", "uses"}
        fields = {k: v for k, v in found.model_dump().items() if k in kept}
        records.append(ReleaseCitation(**fields, label=text, release=release, uses=uses))
    return ReleaseCitations(records=records), findings


def load(root: Path) -> ReleaseCitations | None:
    from .safeio import read_json

    path = root / REL_INDEX_PATH
    if not path.exists():
        return None
    return ReleaseCitations.model_validate(read_json(path))


def definitions(found: ReleaseCitations | None, pages: dict[str, str]) -> dict[str, list[str]]:
    """The `[rel:…]: URL` lines each page needs: one per label it uses that has a record."""
    if found is None:
        return {}
    records = found.by_label()
    lines: dict[str, list[str]] = {}
    for text, places in uses_in(pages).items():
        record = records.get(text)
        if record is None:
            continue
        for rel in {f for f, _ in places}:
            lines.setdefault(rel, []).append(f"[{text}]: {url(found.repository, record)}")
    return {rel: sorted(set(v)) for rel, v in lines.items()}


def check_release_citations(root: Path, pages: dict[str, str], wheels: dict[str, Any] | None) -> list[Finding]:
    """Offline: every `rel:` use has a record and one definition with the record's URL, and every
    record is used. With wheels: every record re-verified (blob or span and fingerprint)."""
    from pydantic import ValidationError

    from .findings import validation_findings

    try:
        found = load(root)
    except ValidationError as exc:
        return validation_findings(REL_INDEX_PATH, exc, "rel-invalid")
    except (ValueError, UnicodeDecodeError) as exc:
        return [Finding(kind="rel-invalid", file=REL_INDEX_PATH, message=str(exc).splitlines()[0])]
    used = uses_in(pages)
    if found is None:
        return [
            Finding(kind="rel-unresolved", file=f, line=n, message=f"{t}: run `omni-skill releases`", label=t)
            for t, places in used.items()
            for f, n in places
        ]
    findings = []
    records = found.by_label()
    defined: dict[tuple[str, str], list[str]] = {}
    for rel, text in pages.items():
        for line in text.split("\n"):
            match = REL_DEF.match(line)
            if match:
                defined.setdefault((rel, match.group(1)), []).append(match.group(2))
    for text, places in sorted(used.items()):
        record = records.get(text)
        for page in sorted({f for f, _ in places}):
            first = min(n for f, n in places if f == page)
            urls = defined.get((page, text), [])
            if record is None:
                message = f"{text}: no record in {REL_INDEX_PATH}: run `omni-skill releases`"
                findings.append(Finding(kind="rel-unresolved", file=page, line=first, message=message, label=text))
            elif urls != [url(found.repository, record)]:
                message = f"{text}: {len(urls)} definitions, expected one with {url(found.repository, record)}"
                findings.append(Finding(kind="rel-definition", file=page, line=first, message=message, label=text))
    for text in sorted(set(records) - set(used)):
        message = f"{text}: recorded but cited nowhere: run `omni-skill releases`"
        findings.append(Finding(kind="rel-unused", file=REL_INDEX_PATH, message=message, label=text))
    if wheels is not None:
        fresh, problems = resolve_all(pages, wheels)
        findings += problems
        now = fresh.by_label()
        for text, record in records.items():
            new = now.get(text)
            if new is not None and (new.start, new.end, new.fingerprint) != (
                record.start,
                record.end,
                record.fingerprint,
            ):
                message = (
                    f"{text}: the {record.release} wheel reads L{new.start}-L{new.end} with other text than "
                    f"recorded (L{record.start}-L{record.end})"
                )
                findings.append(Finding(kind="rel-stale", file=REL_INDEX_PATH, message=message, label=text))
    return findings
