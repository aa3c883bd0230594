"""Anchors per file kind: find the span a label's anchor names inside a file's text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..labels import Label


@dataclass(frozen=True)
class Span:
    start: int  # 1-based, inclusive
    end: int


class AnchorError(Exception):
    """The anchor is not in the file. `kind` is missing, ambiguous or invalid."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def fingerprint(lines: list[str], span: Span) -> str:
    """sha256 of the span's lines with trailing whitespace stripped, joined by newlines."""
    body = "\n".join(line.rstrip() for line in lines[span.start - 1 : span.end])
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def locate(label: Label, text: str, quick: bool = False, text_lines: list[str] | None = None) -> Span:
    """The span of a label's anchor in the text of its file. `quick`: for Python, first try to
    find the definition by scanning and proving it from its own lines, without parsing the module.
    `text_lines`: the text's lines, when the caller has them (`text.splitlines()`)."""
    from . import lines, markdown, python, yaml_keys

    kind = label.kind
    count = len(text_lines) if text_lines is not None else None
    if kind == "file":
        return Span(1, max(1, len(text.splitlines()) if count is None else count))
    if kind == "lines":
        return lines.locate(text, label.anchor, count)
    if kind == "subspan":
        from ..labels import split_subspan

        symbol, first, last = split_subspan(label.anchor)
        return python.sub_span(locate(Label(label.path, symbol), text, quick, text_lines), symbol, first, last)
    if kind == "python":
        if quick:
            name = python.split_occurrence(label.anchor)[0]
            if any(part not in text for part in name.split(".")):
                raise AnchorError("missing", f"no definition of {name!r}")  # every part must be spelled out
            found = python.quick_span(text_lines or text.splitlines(), label.anchor)
            if found:
                return found
        return python.locate(text, label.anchor)
    if kind == "yaml":
        return yaml_keys.locate(text, label.anchor)
    if kind == "markdown":
        return markdown.locate(text, label.anchor)
    raise AnchorError("invalid", f"no anchor kind for {label.text}")
