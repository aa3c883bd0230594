"""Plain line ranges: `L12` or `L12-L20`."""

from __future__ import annotations

from ..labels import LINE_RANGE
from . import AnchorError, Span


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
