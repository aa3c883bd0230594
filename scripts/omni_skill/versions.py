"""Which of the skill's citations hold in an engine it is not pinned to.

For a tree without git (an installed package, a folder, a wheel) each citation's anchor is
re-located in the tree's own files with the anchors code `check` uses, and its fingerprint is
compared with the pinned one. The release matrix (`evidence/releases.json`) is that result for
every release wheel, and the versions page is its reading for agents.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .bump import BumpEntry, UseContext, classify, counts, use_contexts
from .findings import Finding, stale_schema
from .index import EvidenceIndex, EvidenceRecord
from .pageclaims import PageClaim, citation_verdict, page_claims, verdicts
from .pageclaims import counts as claim_counts
from .safeio import read_json
from .trees import FileTree

RELEASES_PATH = "evidence/releases.json"
RELEASES_SCHEMA_PATH = "evidence/releases.schema.json"
VERSIONS_PAGE = "references/serving-tuning/versions.md"
TREE_STATUSES = ("unchanged", "moved", "changed", "missing", "not-shipped")
REFRESH = "omni-skill releases --wheel DIR (a folder of the release wheels; see README)"

TreeStatus = Literal["unchanged", "moved", "changed", "missing", "not-shipped"]
ClaimVerdict = Literal["changed-cosmetic", "changed", "missing", "not-shipped"]
Verdict = Literal["holds", "re-read", "not-shipped"]


def classify_tree(
    index: EvidenceIndex,
    tree: FileTree,
    contexts: Mapping[str, list[UseContext]] | Callable[[], Mapping[str, list[UseContext]]],
    meanwhile: Callable[[], object] | None = None,
) -> list[BumpEntry]:
    """Every record's status in the tree: bump's words, plus `not-shipped` for files the tree
    does not ship (tests/, docs/ in a wheel). A citation is judged from its own file alone, so on a
    second CPU every other cited file is judged in a forked process (its own handle on the tree).
    `contexts` (or the function that makes them) and `meanwhile` run here once this process has
    judged its share, while the other may still be judging."""
    from .parallel import BesideData

    theirs = _child_share(index)

    def beside() -> object:
        reopened = tree.reopened()
        return [classify_one(r, reopened).model_dump(mode="json") for r in index.records if r.path in theirs]

    found: dict[str, BumpEntry] = {}
    with BesideData(beside) as pending:
        for record in index.records:
            if record.path not in theirs:
                found[record.label] = classify_one(record, tree)
        if meanwhile is not None:
            meanwhile()
        if callable(contexts):
            contexts = contexts()
        for data in pending.result():  # type: ignore[attr-defined]
            entry = BumpEntry.model_validate(data)
            found[entry.label] = entry
    entries = []
    for record in index.records:
        entry = found[record.label]
        entry.uses = contexts.get(record.label, [])
        entries.append(entry)
    return entries


CHILD_SHARE = 0.55  # of the citations: the parent also reads the pages' claims meanwhile


def _child_share(index: EvidenceIndex) -> set[str]:
    """The cited files the forked process judges: about `CHILD_SHARE` of the citations, whole
    files each (a file is read once), dealt in turn from the busiest file down."""
    weight: dict[str, int] = {}
    for record in index.records:
        weight[record.path] = weight.get(record.path, 0) + 1
    theirs: set[str] = set()
    mine = taken = 0
    for path in sorted(weight, key=lambda p: (-weight[p], p)):
        if taken <= CHILD_SHARE / (1 - CHILD_SHARE) * mine:
            theirs.add(path)
            taken += weight[path]
        else:
            mine += weight[path]
    return theirs


def classify_one(record: EvidenceRecord, tree: FileTree) -> BumpEntry:
    span = f"L{record.start}-L{record.end}" if record.start != record.end else f"L{record.start}"
    if not tree.ships(record.path):
        return BumpEntry(
            label=record.label,
            status="not-shipped",
            new_label=record.label,
            old_span=span,
            note=f"{record.path.split('/', 1)[0]}/ is not part of the package",
        )
    entry = classify(record, tree, None).entry
    if entry.status == "relocated":  # no rename detection without git: a line range found in another file
        entry.status = "changed" if entry.similarity != 1.0 else "moved"
    return entry


def holds(status: str, similarity: float | None = None) -> bool:
    return status in ("unchanged", "moved") or (status == "relocated" and similarity == 1.0)


@dataclass
class Section:
    branch: str
    file: str
    heading: str
    verdict: Verdict
    counts: dict[str, int]
    labels: list[str]  # the citations that do not hold there (changed, missing, ambiguous)

    @property
    def title(self) -> str:
        return f"{self.file} § {self.heading}" if self.heading else self.file


def branch_of(file: str) -> str:
    parts = file.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "references" else "router"


class Cited(Protocol):
    """What a section verdict needs of a citation: a `BumpEntry`, or a `CitedIn` of a release."""

    @property
    def label(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def similarity(self) -> float | None: ...

    @property
    def uses(self) -> list[UseContext]: ...


@dataclass
class CitedIn:
    label: str
    status: str
    similarity: float | None
    uses: list[UseContext]


def sections(entries: Sequence[Cited]) -> list[Section]:
    """One verdict per skill section (page and heading): `re-read` when a citation there does not
    hold, `not-shipped` when none of its citations can be checked, else `holds`."""
    grouped: dict[tuple[str, str], dict[str, Cited]] = {}
    for entry in entries:
        for use in entry.uses:
            grouped.setdefault((use.file, use.heading), {})[entry.label] = entry
    found = []
    for (file, heading), by_label in sorted(grouped.items()):
        members = list(by_label.values())
        bad = sorted(e.label for e in members if e.status != "not-shipped" and not holds(e.status, e.similarity))
        statuses: list[str] = [e.status for e in members]
        verdict: Verdict = "re-read" if bad else "not-shipped" if set(statuses) == {"not-shipped"} else "holds"
        tally = {s: statuses.count(s) for s in sorted(set(statuses))}
        found.append(Section(branch_of(file), file, heading, verdict, tally, bad))
    return found


# --- the release matrix ---------------------------------------------------------------------


class Release(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = Field(description="the release version, from the wheel's METADATA")
    wheel: str = Field(description="file name of the wheel it was computed from")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of that wheel")
    counts: dict[str, int] = Field(description="citations per status")
    statuses: dict[str, TreeStatus] = Field(description="status of every citation label in this release")
    spans: dict[str, str] = Field(description="label to its span in this release (L<a>-L<b>), for moved and changed")
    blobs: dict[str, str] = Field(
        description="git blob id of every cited file the wheel holds: `drift` names the release whose files "
        "a tree has (and still verifies every citation)"
    )
    cosmetic: list[str] = Field(
        default_factory=list,
        description="changed citations whose code is the pinned code but for docstrings, comments and layout "
        "(same code fingerprint), sorted",
    )
    claim_counts: dict[str, int] = Field(
        default_factory=dict, description="claims of the pages per verdict (holds, changed-cosmetic, changed, ...)"
    )
    claims: dict[str, ClaimVerdict] = Field(
        default_factory=dict,
        description="claim id (page#section@hash of its labels) to its verdict, for every claim that does not hold",
    )


class ReleaseMatrix(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=1, description="format version of this file")
    revision: str = Field(pattern=r"^[0-9a-f]{40}$", description="the pinned engine revision compared against")
    citations: dict[str, str] = Field(description="label to its fingerprint at the pinned revision")
    releases: list[Release] = Field(description="one entry per release, oldest first")


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.findall(r"\d+|[A-Za-z]+", version))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def release_of(
    index: EvidenceIndex, tree: FileTree, contexts: dict[str, list[UseContext]], claims: list[PageClaim]
) -> Release:
    entries = sorted(classify_tree(index, tree, contexts), key=lambda e: e.label)
    statuses = {e.label: e.status for e in entries}
    cosmetic = sorted(e.label for e in entries if e.status == "changed" and e.cosmetic)
    found = claim_verdicts(claims, statuses, cosmetic)
    return Release(
        version=tree.version,
        wheel=tree.location.name,
        sha256=file_sha256(tree.location),
        counts=counts(entries, TREE_STATUSES),
        statuses=statuses,  # type: ignore[arg-type]
        spans={e.label: e.new_span for e in entries if e.status in ("moved", "changed") and e.new_span},
        blobs=cited_blobs(index, tree),
        cosmetic=cosmetic,
        claim_counts=claim_counts(found),
        claims={claim: verdict for claim, verdict in sorted(found.items()) if verdict != "holds"},  # type: ignore[misc]
    )


def claim_verdicts(claims: list[PageClaim], statuses: Mapping[str, str], cosmetic: Iterable[str]) -> dict[str, str]:
    """Claim id -> verdict, from each citation's status in an engine (and which changes are cosmetic)."""
    marked = set(cosmetic)
    by_label = {label: citation_verdict(status, label in marked) for label, status in statuses.items()}
    return verdicts(claims, by_label)


def cited_blobs(index: EvidenceIndex, tree: FileTree) -> dict[str, str]:
    """Blob id of every cited file the tree ships and holds."""
    found = {}
    for path in sorted({r.path for r in index.records if tree.ships(r.path)}):
        entry = tree.entry(path)
        if entry is not None:
            found[path] = entry.sha
    return found


def matching_release(index: EvidenceIndex, tree: FileTree, found: ReleaseMatrix | None) -> Release | None:
    """The release whose cited files are exactly the tree's (same blobs, same absences), when the
    matrix describes the current index; None otherwise. `drift` still classifies every citation
    afresh and compares the result with the release's (`disagreements`): the matrix names the
    release, it never stands in for the verification."""
    if found is None or stale(found, index):
        return None
    blobs = cited_blobs(index, tree)
    return next((r for r in found.releases if r.blobs == blobs), None)


def disagreements(release: Release, entries: list[BumpEntry]) -> list[str]:
    """Labels whose fresh status or span differs from what the release records."""
    differ = []
    for entry in entries:
        status = release.statuses.get(entry.label)
        span = release.spans.get(entry.label, "")
        fresh = entry.new_span if entry.status in ("moved", "changed") else ""
        if status != entry.status or span != fresh:
            differ.append(entry.label)
    return differ


def matrix(index: EvidenceIndex, releases: list[Release]) -> ReleaseMatrix:
    return ReleaseMatrix(
        revision=index.revision,
        citations={r.label: r.fingerprint for r in sorted(index.records, key=lambda r: r.label)},
        releases=sorted(releases, key=lambda r: version_key(r.version)),
    )


def schema_json() -> str:
    import json

    schema = ReleaseMatrix.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vllm-omni skill release matrix"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def load_matrix(root: Path) -> ReleaseMatrix | None:
    from .skill import loaded_once  # within `check`, the checks that read the matrix share one load

    return loaded_once("release matrix", root / RELEASES_PATH, lambda: _load_matrix(root))


def _load_matrix(root: Path) -> ReleaseMatrix | None:
    try:
        data = read_json(root / RELEASES_PATH)
    except FileNotFoundError:
        return None
    return ReleaseMatrix.model_validate(data)


def stale(found: ReleaseMatrix, index: EvidenceIndex) -> str:
    """Why the matrix does not describe the current index ("" when it does)."""
    if found.revision != index.revision:
        return f"computed against {found.revision[:12]}, the index is at {index.revision[:12]}"
    current = {r.label: r.fingerprint for r in index.records}
    if found.citations != current:
        added = len(current.keys() - found.citations.keys())
        gone = len(found.citations.keys() - current.keys())
        other = sum(1 for k in current.keys() & found.citations.keys() if current[k] != found.citations[k])
        return f"its citations differ from the index ({added} new, {gone} gone, {other} with other fingerprints)"
    for release in found.releases:
        if set(release.statuses) != set(current):
            return f"release {release.version} does not list every citation"
    return ""


# --- the versions page ----------------------------------------------------------------------


def ranges(versions: list[str], order: list[str]) -> str:
    """`0.14.0–0.20.0, 0.26.0`: runs of consecutive releases (in `order`) joined by a dash."""
    if not versions:
        return "—"
    chosen = set(versions)
    runs: list[list[str]] = []
    previous = False
    for version in order:
        if version in chosen:
            if previous:
                runs[-1].append(version)
            else:
                runs.append([version])
        previous = version in chosen
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)


def page_data(found: ReleaseMatrix, index: EvidenceIndex, contexts: dict[str, list[UseContext]]) -> dict[str, object]:
    """What the versions page shows: per release, counts; per skill section, the releases where
    its cited code holds, changed, or is missing."""
    from .anchors.markdown import slug

    order = [r.version for r in found.releases]
    per_section: dict[tuple[str, str], dict[str, list[str]]] = {}
    outside: dict[tuple[str, str], int] = {}
    held_sections: dict[str, int] = {}
    for release in found.releases:
        entries = [
            CitedIn(label, status, 1.0 if status in ("unchanged", "moved") else None, contexts.get(label, []))
            for label, status in release.statuses.items()
        ]
        verdicts = sections(entries)
        held_sections[release.version] = sum(1 for s in verdicts if s.verdict == "holds")
        for section in verdicts:
            key = (section.file, section.heading)
            row = per_section.setdefault(key, {"holds": [], "changed": [], "missing": []})
            outside[key] = section.counts.get("not-shipped", 0)
            if section.verdict == "holds":
                row["holds"].append(release.version)
            elif section.verdict == "re-read":
                statuses = {release.statuses[label] for label in section.labels}
                row["missing" if "missing" in statuses else "changed"].append(release.version)
    branches: dict[str, list[dict[str, object]]] = {}
    for (file, heading), row in sorted(per_section.items()):
        page = file.split("/")[-1]
        link = posixpath.relpath(file, posixpath.dirname(VERSIONS_PAGE))
        if heading and file.endswith(".md"):
            link += f"#{slug(heading)}"
        branches.setdefault(branch_of(file), []).append(
            {
                "title": f"{page} § {heading}" if heading else page,
                "link": link,
                "holds": ranges(row["holds"], order),
                "changed": ranges(row["changed"], order),
                "missing": ranges(row["missing"], order),
                "outside": outside[(file, heading)],
            }
        )
    return {
        "revision": found.revision,
        "releases": [
            {
                "version": r.version,
                "counts": r.counts,
                "holding": held_sections[r.version],
                "total": r.counts.get("unchanged", 0) + r.counts.get("moved", 0),
            }
            for r in found.releases
        ],
        "sections": len(per_section),
        "citations": len(found.citations),
        "branches": sorted(branches.items()),
        "order": order,
    }


def render_page(found: ReleaseMatrix, index: EvidenceIndex, contexts: dict[str, list[UseContext]]) -> str:
    from .report import render

    return render("versions", page_data(found, index, contexts), "markdown")


def check_releases(root: Path, index: EvidenceIndex) -> list[Finding]:
    """The release matrix describes the current index, its schema is current, and the versions
    page is its rendering. A skill without a matrix has nothing to check."""
    from pydantic import ValidationError

    from .findings import validation_findings

    try:
        found = load_matrix(root)
    except ValidationError as exc:
        return validation_findings(RELEASES_PATH, exc, "releases-invalid")
    except (ValueError, UnicodeDecodeError) as exc:
        return [Finding(kind="releases-invalid", file=RELEASES_PATH, message=str(exc).splitlines()[0])]
    if found is None:
        return []
    findings = []
    why = stale(found, index)
    if why:
        findings.append(Finding(kind="releases-stale", file=RELEASES_PATH, message=f"{why}: run `{REFRESH}`"))
    findings += stale_schema(root, RELEASES_SCHEMA_PATH, schema_json(), "release", REFRESH)
    if not why:
        findings += stale_claims(found, page_claims(root, index))
    page = root / VERSIONS_PAGE
    if not why:
        expected = render_page(found, index, use_contexts(root, index))
        if not page.exists() or page.read_text(encoding="utf-8") != expected:
            findings.append(
                Finding(
                    kind="versions-stale",
                    file=VERSIONS_PAGE,
                    message=f"the page differs from {RELEASES_PATH}: run `{REFRESH}`",
                )
            )
    return findings


def stale_claims(found: ReleaseMatrix, claims: list[PageClaim]) -> list[Finding]:
    """Each release's claim verdicts are those its statuses give the pages' claims as they are now."""
    for release in found.releases:
        expected = claim_verdicts(claims, release.statuses, release.cosmetic)
        recorded = {claim: verdict for claim, verdict in expected.items() if verdict != "holds"}
        if release.claims != recorded or release.claim_counts != claim_counts(expected):
            differ = len(set(recorded.items()) ^ set(release.claims.items()))
            message = (
                f"release {release.version}: its claim verdicts differ from the pages' claims ({differ} differ; "
                f"the pages changed since): run `{REFRESH}`"
            )
            return [Finding(kind="releases-stale", file=RELEASES_PATH, message=message)]
    return []
