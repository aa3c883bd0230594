"""Plain line ranges: `L12` or `L12-L20`, and how a range whose text was edited is found again.

A line range has no name to look for, so it is re-found by its lines. The index keeps a short hash
of each cited line (never the text), so this works in any engine, with or without the pinned
source: the longest run of cited lines that the file still has, found exactly once, marks the
place; the cited lines are aligned with the file around it; the new range runs from the first to
the last aligned line, widened by the cited lines before and after them (edited in place). It is
taken when its similarity, 2·matched / (cited lines + new lines), reaches `FLOOR`.
"""

from __future__ import annotations

import difflib
import hashlib

from ..labels import LINE_RANGE
from . import AnchorError, Span

FLOOR = 0.6
HASHED_KINDS = ("lines", "subspan")  # citations re-found by their lines, whose records keep line hashes
HASH_CHARS = 8  # 32 bits: enough to tell a file's lines apart, too few to stand for their text


def locate(text: str, anchor: str, count: int | None = None) -> Span:
    """The range, when the file (`count` lines, counted from `text` when not given) has it."""
    match = LINE_RANGE.match(anchor)
    if not match:
        raise AnchorError("invalid", f"malformed line range {anchor!r}")
    start = int(match.group(1))
    end = int(match.group(2) or start)
    if count is None:
        count = len(text.splitlines())
    if end > count:
        raise AnchorError("missing", f"line range {anchor} is past the end of the file ({count} lines)")
    return Span(start, end)


def line_hash(line: str) -> str:
    """A line's hash, indentation and trailing whitespace ignored."""
    return hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:HASH_CHARS]


def line_hashes(lines: list[str], span: Span) -> str:
    """The hashes of the span's lines, space-separated (what the index records)."""
    return " ".join(line_hash(line) for line in lines[span.start - 1 : span.end])


BLANK = line_hash("")
_FILE_HASHES: dict[int, tuple[list[str], list[str]]] = {}


def file_hashes(lines: list[str]) -> list[str]:
    """Every line's hash, remembered for the last few line lists (by identity)."""
    cached = _FILE_HASHES.get(id(lines))
    if cached is not None and cached[0] is lines:
        return cached[1]
    found = [line_hash(line) for line in lines]
    if len(_FILE_HASHES) >= 64:
        _FILE_HASHES.pop(next(iter(_FILE_HASHES)))
    _FILE_HASHES[id(lines)] = (lines, found)
    return found


def align(cited: list[str], lines: list[str], hashes: list[str] | None = None) -> tuple[Span, float] | None:
    """Where the cited lines (their hashes) are in `lines` after edits, and the similarity; None
    when no run of them is found exactly once or the best alignment is below `FLOOR`. `hashes`:
    the lines' hashes, when the caller has them."""
    if not cited:
        return None
    now = hashes if hashes is not None else file_hashes(lines)
    # the longest run of consecutive cited lines in the file (earliest in the file on a tie)
    found = difflib.SequenceMatcher(None, now, cited, autojunk=False).find_longest_match(0, len(now), 0, len(cited))
    at, size, first_cited = found.a, found.size, found.b
    if size == 0 or all(h == BLANK for h in cited[first_cited : first_cited + size]):
        return None
    block = cited[first_cited : first_cited + size]
    if sum(1 for j in range(len(now) - size + 1) if now[j] == block[0] and now[j : j + size] == block) != 1:
        return None  # the longest surviving run is in several places: no one place to point at
    width = len(cited)
    low = max(0, at - first_cited - width)
    high = min(len(now), at + (width - first_cited) + width)
    region = difflib.SequenceMatcher(None, cited, now[low:high], autojunk=False)
    blocks = [b for b in region.get_matching_blocks() if b.size]
    matched = sum(b.size for b in blocks)
    first, last = blocks[0], blocks[-1]
    start = max(0, low + first.b - first.a)
    end = min(len(now) - 1, low + last.b + last.size - 1 + (width - last.a - last.size))
    score = 2 * matched / (width + end - start + 1)
    if score < FLOOR:
        return None
    return Span(start + 1, end + 1), round(score, 3)
