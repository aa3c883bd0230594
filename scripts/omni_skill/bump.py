"""`bump --to REV` and `drift`: re-resolve every citation at another revision and classify it.

Never line arithmetic: each label is resolved afresh at the new revision. A label whose file or
symbol is gone is looked for elsewhere (git's rename detection, then every file that defines the
same qualified name); a line range is re-found by its fingerprinted text, and the lines of a
sub-span (`Symbol@L<a>-L<b>`) by theirs inside the definition, found first.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .anchors import AnchorError, Span, python
from .anchors.code import same_code
from .anchors.lines import align, file_hashes, line_hash
from .index import EvidenceIndex, EvidenceRecord, UsePlace
from .labels import Label, escape, heading_at, parse_label, split_subspan, subspan_anchor
from .resolve import Unresolved, resolve_label
from .skill import read_text
from .source import BlobError, EngineFiles, Source

Status = Literal["unchanged", "moved", "changed", "relocated", "missing", "not-shipped"]
GIT_STATUSES = ("unchanged", "moved", "changed", "relocated", "missing")
LINE_MATCH_FLOOR = 0.6  # below this similarity a line range counts as gone


class UseContext(BaseModel):
    file: str
    line: int
    heading: str


class BumpEntry(BaseModel):
    label: str
    status: Status
    new_label: str = Field(description="the label after the bump (differs when a path or line range moved)")
    old_span: str
    new_span: str = ""
    similarity: float | None = None
    candidates: list[str] = Field(default_factory=list)
    note: str = ""
    cosmetic: bool = Field(
        default=False, description="changed only in docstrings, comments or layout (same code fingerprint)"
    )
    uses: list[UseContext] = Field(default_factory=list)


class BumpReport(BaseModel):
    verb: str
    from_revision: str
    to_revision: str
    counts: dict[str, int]
    entries: list[BumpEntry]
    written: bool = False
    blocked: list[str] = Field(default_factory=list, description="why nothing was written")

    @property
    def affected(self) -> list[BumpEntry]:
        return [e for e in self.entries if e.status != "unchanged"]


@dataclass
class Classified:
    entry: BumpEntry
    record: EvidenceRecord | None  # the record at the new revision, when there is one


def _span(start: int, end: int) -> str:
    return f"L{start}-L{end}" if start != end else f"L{start}"


def _span_lines(source: EngineFiles, path: str, start: int, end: int) -> list[str]:
    return [line.rstrip() for line in source.lines(path)[start - 1 : end]]


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _old_text(record: EvidenceRecord, old: Source | None) -> list[str] | None:
    """The cited lines at the pinned revision, when that blob is available."""
    if old is None:
        return None
    try:
        return _span_lines(old, record.path, record.start, record.end)
    except (KeyError, BlobError):
        return None


WORD = re.compile(r"\w+")
CHAR_LEVEL_LIMIT = 400  # characters; above this, similarity is measured over lines (difflib is quadratic)


def _ratio(a: list[str], b: list[str]) -> float:
    """difflib's similarity: by characters for short texts, by lines for long ones (quadratic cost)."""
    left, right = "\n".join(a), "\n".join(b)
    if len(left) + len(right) <= CHAR_LEVEL_LIMIT:
        return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _similarity(a: list[str] | None, b: list[str]) -> float | None:
    return None if a is None else round(_ratio(a, b), 3)


def _refind_lines(
    record: EvidenceRecord, file_lines: list[str], old_lines: list[str] | None
) -> tuple[int, int, float] | None:
    """Where the cited lines are now in the file (see `refind`)."""
    width = record.end - record.start + 1
    return refind(file_lines, record.start, width, record.fingerprint, old_lines, record.line_hashes.split())


def refind(
    lines: list[str],
    start: int,
    width: int,
    digest: str,
    old_lines: list[str] | None,
    cited: list[str] | None = None,
    hashes: list[str] | None = None,
) -> tuple[int, int, float] | None:
    """(first, last, similarity), 1-based in `lines`, of the `width` cited lines whose fingerprint
    is `digest`, whose line hashes are `cited` (from the index) and that sat at line `start`: the
    exact text nearest that line first, else the lines aligned by their hashes (`anchors.lines.align`,
    any engine), else, with the pinned text `old_lines` at hand, the best unique match by characters
    of at least LINE_MATCH_FLOOR; None when none is found."""
    # The exact text nearest the recorded lines: search outwards from them (earlier first on a tie),
    # so a range that moved a little is found after a few windows, not after hashing them all.
    home = start - 1
    last = len(lines) - width
    # A window is compared by its lines' hashes (from the index, or from the old text), and only
    # where its first line matches; its fingerprint then decides.
    known = old_lines is not None and _digest(old_lines) == digest
    cited = cited or ([line_hash(line) for line in old_lines or []] if known else [])
    now = (hashes if hashes is not None else file_hashes(lines)) if cited else []
    for distance in range(0, max(home, last - home) + 1):
        for i in (home - distance, home + distance) if distance else (home,):
            if not 0 <= i <= last:
                continue
            if cited and (now[i] != cited[0] or now[i : i + width] != cited):
                continue
            if _digest([line.rstrip() for line in lines[i : i + width]]) == digest:
                return i + 1, i + width, 1.0
    aligned = align(cited, lines, now if cited else None)
    if aligned is not None:
        span, score = aligned
        return span.start, span.end, score
    if old_lines is None:
        return None
    # With the pinned text at hand, a short range edited within its lines is compared by characters.
    lines = [line.rstrip() for line in lines]
    wanted = set(old_lines)
    before = [0, *accumulate(line in wanted for line in lines)]  # lines so far that the old text has
    shared = [before[min(i + width, len(lines))] - before[i] for i in range(max(1, len(lines) - width + 1))]
    best_shared = max(shared, default=0)
    if best_shared == 0:
        return None
    # Only windows that share nearly as many lines as the best one are compared in full.
    candidates = sorted(range(len(shared)), key=lambda i: -shared[i])[:30]
    # Full similarity only where difflib's cheap upper bound could still reach the best so far
    # (or tie it, which makes the match ambiguous).
    scored: list[tuple[float, int]] = []
    best = LINE_MATCH_FLOOR
    for i in candidates:
        window = lines[i : i + width]
        if _upper_bound(old_lines, window) < best:
            continue
        ratio = _ratio(old_lines, window)
        scored.append((ratio, i))
        best = max(best, ratio)
    scored.sort(reverse=True)
    if not scored or scored[0][0] < LINE_MATCH_FLOOR:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None  # not unique
    ratio, i = scored[0]
    return i + 1, i + width, round(ratio, 3)


def _upper_bound(a: list[str], b: list[str]) -> float:
    """An upper bound of `_ratio(a, b)` (difflib's quick_ratio, at the same granularity)."""
    left, right = "\n".join(a), "\n".join(b)
    if len(left) + len(right) <= CHAR_LEVEL_LIMIT:
        return difflib.SequenceMatcher(None, left, right, autojunk=False).quick_ratio()
    return difflib.SequenceMatcher(None, a, b, autojunk=False).quick_ratio()


def renamed_paths(source: Source, old_revision: str | None, paths: set[str]) -> dict[str, str]:
    """Where git's rename detection says each of `paths` went. Only those paths and the files
    added since are compared, so the cost grows with what is missing, not with all history."""
    from git.exc import GitCommandError

    if old_revision is None or not paths:
        return {}
    try:
        added = source.git("diff", "--name-only", "--no-renames", "--diff-filter=A", "-z", old_revision, source.commit)
        candidates = [p for p in added.split("\0") if p]
        if not candidates:
            return {}
        output = source.git(
            "diff",
            "--name-status",
            "-M",
            "--no-ext-diff",
            "--no-textconv",
            old_revision,
            source.commit,
            "--",
            *sorted(paths),
            *candidates,
        )
    except GitCommandError:
        return {}
    renames: dict[str, str] = {}
    for row in output.splitlines():
        parts = row.split("\t")
        if len(parts) == 3 and parts[0].startswith("R"):
            renames[parts[1]] = parts[2]
    return renames


def _defines(source: Source, path: str, name: str) -> bool:
    """Whether the module defines `name`, parsed in full (when scanning could not prove it)."""
    leaf = name.rsplit(".", 1)[-1]
    if not any(leaf in line for line in source.lines(path)):
        return False
    try:
        return name in python.definitions(source.text(path))
    except AnchorError:
        return False


def defining_files(source: Source, names: set[str]) -> dict[str, list[str]]:
    """Python files at the source's revision that define each qualified name: one `git grep` for
    the top-level names of all of them, then each matching file parsed once."""
    from git.exc import GitCommandError

    if not names:
        return {}
    tops = sorted({name.split(".", 1)[0] for name in names})
    alternatives = "|".join(re.escape(top) for top in tops)
    pattern = rf"^\s*((async\s+)?def|class)\s+({alternatives})\b|^\s*({alternatives})\s*[:=]"
    try:
        listing = source.git("grep", "-l", "-E", pattern, source.commit, "--", "*.py")
    except GitCommandError:
        return {}  # git grep exits 1 when nothing matches
    found: dict[str, list[str]] = {}
    wanted_tops = set(tops)
    by_top: dict[str, list[str]] = {}
    for name in sorted(names):
        by_top.setdefault(name.split(".", 1)[0], []).append(name)
    for row in sorted(listing.splitlines()):
        path = row.split(":", 1)[1] if ":" in row else row
        try:
            text, lines = source.text(path), source.lines(path)
        except (KeyError, BlobError):
            continue
        present = set(WORD.findall(text)) & wanted_tops  # the top-level names spelled out as whole words
        for name in (n for top in sorted(present) for n in by_top.get(top, [])):
            if any(part not in text for part in name.split(".")):
                continue
            if python.quick_span(lines, name) or _defines(source, path, name):
                found.setdefault(name, []).append(path)
    return found


def _elsewhere(
    entry: Callable[..., BumpEntry],
    candidates: list[str],
    found: tuple[str, EvidenceRecord] | None,
    message: str,
) -> Classified:
    """A citation whose file or definition is gone here: relocated to the one identical candidate
    (`found`: its label and record), else relocated by hand among the candidates, else missing."""
    if found is not None:
        new_label, moved = found
        span = _span(moved.start, moved.end)
        return Classified(
            entry("relocated", new_label=new_label, new_span=span, similarity=1.0, candidates=candidates), moved
        )
    if candidates:
        note = (
            "found elsewhere; rewrite by hand"
            if len(candidates) > 1
            else "found elsewhere with other text; re-read and rewrite by hand"
        )
        return Classified(entry("relocated", candidates=candidates, note=note), None)
    return Classified(entry("missing", note=message), None)


def classify(
    record: EvidenceRecord,
    new: EngineFiles,
    old: Source | None,
    definers: dict[str, list[str]] | None = None,
    renames: dict[str, str] | None = None,
    resolved: dict[str, EvidenceRecord | Unresolved] | None = None,
) -> Classified:
    """The citation's status at the new engine; a changed one is marked `cosmetic` when its code
    fingerprint is the pinned one (only docstrings, comments or layout differ)."""
    found = _classify(record, new, old, definers, renames, resolved)
    if found.entry.status == "changed" and found.record is not None and record.code_fingerprint:
        now = found.record
        label = parse_label(now.label)
        try:
            text, lines = new.text(now.path), new.lines(now.path)
        except (KeyError, BlobError):
            return found
        found.entry.cosmetic = same_code(label, record.code_fingerprint, text, lines, Span(now.start, now.end))
    return found


def _classify(
    record: EvidenceRecord,
    new: EngineFiles,
    old: Source | None,
    definers: dict[str, list[str]] | None = None,
    renames: dict[str, str] | None = None,
    resolved: dict[str, EvidenceRecord | Unresolved] | None = None,
) -> Classified:
    label = parse_label(record.label)
    old_span = _span(record.start, record.end)
    entry_now = new.entry(label.path)
    if entry_now is not None and entry_now.sha == record.blob:
        # The same blob is the same text: resolution is a function of the text, so nothing moved.
        unchanged = record.model_copy(update={"uses": []})
        return Classified(
            BumpEntry(
                label=record.label,
                status="unchanged",
                new_label=record.label,
                old_span=old_span,
                new_span=old_span,
                similarity=1.0,
            ),
            unchanged,
        )
    old_lines = _old_text(record, old)

    def entry(
        status: Status,
        new_label: str | None = None,
        new_span: str = "",
        similarity: float | None = None,
        candidates: list[str] | None = None,
        note: str = "",
    ) -> BumpEntry:
        return BumpEntry(
            label=record.label,
            status=status,
            new_label=new_label or record.label,
            old_span=old_span,
            new_span=new_span,
            similarity=similarity,
            candidates=candidates or [],
            note=note,
        )

    if label.kind == "subspan":
        return _classify_subspan(record, label, new, old_lines, entry, definers, renames, resolved)
    if label.kind == "lines":
        try:
            text = new.text(label.path)
        except KeyError:
            text = None
        except BlobError as exc:
            return Classified(entry("missing", note=f"{label.path} {exc}"), None)
        path = label.path
        if text is None:
            path = (renames or {}).get(label.path, "")
            try:
                text = new.text(path) if path else None
            except (KeyError, BlobError) as exc:
                return Classified(entry("missing", note=f"{label.path} was renamed to {path}, which {exc}"), None)
        if text is None:
            return Classified(entry("missing", note=f"{label.path} is gone"), None)
        found = _refind_lines(record, new.lines(path), old_lines)
        if found is None:
            return Classified(entry("missing", note="the cited lines are not found"), None)
        start, end, ratio = found
        anchor = f"L{start}-L{end}" if start != end else f"L{start}"
        new_label = Label(path, anchor).text
        result = resolve_label(new_label, new, quick=True)
        assert not isinstance(result, Unresolved)
        status: Status = "unchanged"
        if result.fingerprint != record.fingerprint:
            status = "changed"
        elif path != label.path:
            status = "relocated"
        elif (start, end) != (record.start, record.end):
            status = "moved"
        return Classified(entry(status, new_label=new_label, new_span=_span(start, end), similarity=ratio), result)

    result = (resolved or {}).get(record.label) or resolve_label(record.label, new, quick=True)
    if isinstance(result, Unresolved):
        if result.kind == "anchor-ambiguous":
            return Classified(entry("missing", note=result.message), None)
        candidates: list[str] = []
        renamed = (renames or {}).get(label.path)
        if renamed:
            candidates.append(Label(renamed, label.anchor).text)
        if label.kind == "python":
            candidates += [
                Label(p, label.anchor).text
                for p in _defined_elsewhere(label, definers)
                if Label(p, label.anchor).text not in candidates
            ]
        identical = []
        for candidate in candidates:
            moved = resolve_label(candidate, new, quick=True)
            if isinstance(moved, EvidenceRecord) and moved.fingerprint == record.fingerprint:
                identical.append((candidate, moved))
        relocated = identical[0] if len(candidates) == 1 and len(identical) == 1 else None
        return _elsewhere(entry, candidates, relocated, result.message)
    new_lines = _span_lines(new, label.path, result.start, result.end)
    if result.fingerprint != record.fingerprint:
        return Classified(
            entry("changed", new_span=_span(result.start, result.end), similarity=_similarity(old_lines, new_lines)),
            result,
        )
    if (result.start, result.end) != (record.start, record.end):
        return Classified(entry("moved", new_span=_span(result.start, result.end), similarity=1.0), result)
    return Classified(entry("unchanged", new_span=old_span, similarity=1.0), result)


def _defined_elsewhere(label: Label, definers: dict[str, list[str]] | None) -> list[str]:
    """The other files that define the Python definition a label names."""
    return [p for p in (definers or {}).get(python.split_occurrence(label.symbol)[0], []) if p != label.path]


def _place_subspan(
    record: EvidenceRecord, path: str, whole: EvidenceRecord, new: EngineFiles, old_lines: list[str] | None
) -> tuple[EvidenceRecord, float | None] | None:
    """The record of a sub-span's lines inside the definition found at `whole` in `path`, and their
    similarity to the pinned lines: the exact text nearest the old offsets first, else the best
    unique fuzzy match inside the definition (as for a line range: by the lines' hashes the index
    keeps, in any engine). Failing those, without the pinned text to compare, the same offsets,
    when the definition still has them (similarity None: their text is not known to match). None
    when the lines are not found."""
    symbol, first, last = split_subspan(parse_label(record.label).anchor)
    inside = [line.rstrip() for line in new.lines(path)[whole.start - 1 : whole.end]]
    cited = record.line_hashes.split()
    hashes = file_hashes(new.lines(path))[whole.start - 1 : whole.end] if cited else None
    found: tuple[int, int, float | None] | None = refind(
        inside, first, last - first + 1, record.fingerprint, old_lines, cited, hashes
    )
    if found is None and old_lines is None and last <= len(inside):
        found = (first, last, None)
    if found is None:
        return None
    start, end, ratio = found
    result = resolve_label(Label(path, subspan_anchor(symbol, start, end)).text, new, quick=True)
    assert isinstance(result, EvidenceRecord), result  # the definition holds these lines
    return result, ratio


def _classify_subspan(
    record: EvidenceRecord,
    label: Label,
    new: EngineFiles,
    old_lines: list[str] | None,
    entry: Callable[..., BumpEntry],
    definers: dict[str, list[str]] | None,
    renames: dict[str, str] | None,
    resolved: dict[str, EvidenceRecord | Unresolved] | None,
) -> Classified:
    """A `Symbol@L<a>-L<b>` citation: the definition is found as a Python citation's is (here, else
    in the file git renamed it to or the one other file that defines it), then the cited lines are
    re-found inside it. The offsets are part of the label, so lines that moved inside the
    definition give a new label (bump rewrites the pages)."""
    symbol_label = Label(label.path, label.symbol).text
    whole = (resolved or {}).get(symbol_label) or resolve_label(symbol_label, new, quick=True)
    path = label.path
    if isinstance(whole, Unresolved):
        if whole.kind == "anchor-ambiguous":
            return Classified(entry("missing", note=whole.message), None)
        paths = [renames[label.path]] if renames and label.path in renames else []
        paths += [p for p in _defined_elsewhere(label, definers) if p not in paths]
        candidates = [Label(p, label.anchor).text for p in paths]
        placed = []
        for other in paths:
            moved = resolve_label(Label(other, label.symbol).text, new, quick=True)
            if isinstance(moved, EvidenceRecord):
                placed.append(_place_subspan(record, other, moved, new, old_lines))
        same = len(paths) == 1 and placed and placed[0] is not None and placed[0][0].fingerprint == record.fingerprint
        found = (placed[0][0].label, placed[0][0]) if same and placed[0] is not None else None
        return _elsewhere(entry, candidates, found, whole.message)
    placed_here = _place_subspan(record, path, whole, new, old_lines)
    if placed_here is None:
        note = f"the cited lines are not found inside {label.symbol} (L{whole.start}-L{whole.end})"
        return Classified(entry("missing", note=note), None)
    result, ratio = placed_here
    span = _span(result.start, result.end)
    # other offsets (not merely another spelling of the same ones, `@L1-L1` for `@L1`) are a new label
    relabelled = split_subspan(result.anchor)[1:] != split_subspan(label.anchor)[1:]
    if not relabelled:
        result = result.model_copy(update={"label": record.label, "anchor": record.anchor})
    note = f"the lines moved inside {label.symbol}: relabelled" if relabelled else ""
    if result.fingerprint != record.fingerprint:
        if ratio is None:
            note = "the cited text is not found: the same lines of the definition, to re-read"
        return Classified(entry("changed", new_label=result.label, new_span=span, similarity=ratio, note=note), result)
    if (result.start, result.end) != (record.start, record.end) or relabelled:
        return Classified(entry("moved", new_label=result.label, new_span=span, similarity=1.0, note=note), result)
    return Classified(entry("unchanged", new_span=span, similarity=1.0), result)


def use_contexts(root: Path, index: EvidenceIndex) -> dict[str, list[UseContext]]:
    """Every record's uses with the heading each sits under; each page is read once."""
    texts: dict[str, str] = {}
    contexts: dict[str, list[UseContext]] = {}
    for record in index.records:
        for use in record.uses:
            if use.file not in texts:
                try:
                    texts[use.file] = read_text(root, use.file)
                except OSError:
                    texts[use.file] = ""
            heading = heading_at(texts[use.file], use.line) if use.file.endswith(".md") else ""
            contexts.setdefault(record.label, []).append(UseContext(file=use.file, line=use.line, heading=heading))
    return contexts


def classify_all(root: Path, index: EvidenceIndex, new: Source, old: Source | None) -> list[Classified]:
    from concurrent.futures import ThreadPoolExecutor

    old_revision = old.commit if old else None
    wanted: set[str] = set()
    resolved: dict[str, EvidenceRecord | Unresolved] = {}
    gone = {r.path for r in index.records if new.entry(r.path) is None}
    # git's rename detection runs in its own process while the labels are resolved here (the
    # thread only waits for it; each git call is a process of its own).
    with ThreadPoolExecutor(max_workers=1) as pool:
        detecting = pool.submit(renamed_paths, new, old_revision, gone)
        for record in index.records:
            entry = new.entry(record.path)
            if record.kind not in ("python", "subspan") or (entry is not None and entry.sha == record.blob):
                continue
            symbol = parse_label(record.label).symbol  # a sub-span is found through its definition
            target = Label(record.path, symbol).text
            result = resolved[target] = resolve_label(target, new, quick=True)
            if isinstance(result, Unresolved) and result.kind in ("path-missing", "anchor-missing"):
                wanted.add(python.split_occurrence(symbol)[0])
        definers = defining_files(new, wanted)
        renames = detecting.result()
    contexts = use_contexts(root, index)
    results = []
    for record in index.records:
        classified = classify(record, new, old, definers, renames, resolved)
        classified.entry.uses = contexts.get(record.label, [])
        results.append(classified)
    return results


def counts(entries: list[BumpEntry], statuses: tuple[str, ...] = GIT_STATUSES) -> dict[str, int]:
    return {status: sum(1 for e in entries if e.status == status) for status in statuses}


def relabel(root: Path, renames: dict[str, str], uses: dict[str, list[UsePlace]]) -> dict[str, str]:
    """File texts with each renamed label rewritten at the lines that cite it."""
    edits: dict[str, dict[int, list[tuple[str, str]]]] = {}
    for old, new in renames.items():
        for use in uses[old]:
            edits.setdefault(use.file, {}).setdefault(use.line, []).append((old, new))
    texts: dict[str, str] = {}
    for rel, by_line in edits.items():
        lines = read_text(root, rel).split("\n")
        for number, pairs in by_line.items():
            for old, new in pairs:
                if rel.endswith(".md"):
                    old, new = f"][{escape(old)}]", f"][{escape(new)}]"
                lines[number - 1] = lines[number - 1].replace(old, new)
        texts[rel] = "\n".join(lines)
    return texts


def new_index(revision: str, classified: list[Classified]) -> EvidenceIndex:
    """The index at the new revision: records under their new labels, uses merged."""
    merged: dict[str, EvidenceRecord] = {}
    for item in classified:
        assert item.record is not None
        old_uses = {(u.file, u.line) for u in item.entry.uses}
        record = item.record.model_copy()
        if record.label in merged:
            old_uses |= {(u.file, u.line) for u in merged[record.label].uses}
        record.uses = [UsePlace(file=f, line=n) for f, n in sorted(old_uses)]
        merged[record.label] = record
    return EvidenceIndex(revision=revision, records=[merged[label] for label in sorted(merged)])


def blockers(entries: list[BumpEntry], accept: set[str], accept_changed: bool) -> list[str]:
    reasons = []
    for e in entries:
        if e.status == "missing":
            reasons.append(f"{e.label} is missing")
        elif e.status == "relocated" and e.new_label == e.label:
            reasons.append(f"{e.label} is relocated ambiguously or with other text: edit the label by hand")
        elif e.status == "changed" and not (accept_changed or e.label in accept):
            reasons.append(f"{e.label} changed: re-read the claim, then --accept it (or --accept-changed)")
    return reasons
