"""Markdown anchors: `#heading-slug` with GitHub's slug rules; the span is the section."""

from __future__ import annotations

import re
from functools import lru_cache

from . import AnchorError, Span


def slug(title: str) -> str:
    """GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens."""
    text = title.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=128)
def sections(text: str) -> dict[str, Span]:
    """Every heading's slug (deduplicated with -1, -2 …) and the span of its section."""
    from ..labels import markdown_parsers  # markdown-it, loaded on first use

    tokens = markdown_parsers()[0].parse(text)
    headings: list[tuple[int, int, str]] = []  # (level, 1-based line, title)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            inline = tokens[index + 1]
            title = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
            headings.append((int(token.tag[1]), token.map[0] + 1, title))
    lines = text.splitlines()
    result: dict[str, Span] = {}
    seen: dict[str, int] = {}
    for position, (level, line, title) in enumerate(headings):
        end = len(lines)
        for other_level, other_line, _ in headings[position + 1 :]:
            if other_level <= level:
                end = other_line - 1
                break
        while end > line and not lines[end - 1].strip():
            end -= 1
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result[base if count == 0 else f"{base}-{count}"] = Span(line, end)
    return result


def locate(text: str, anchor: str) -> Span:
    found = sections(text).get(anchor.lstrip("#"))
    if found is None:
        raise AnchorError("missing", f"no heading with slug {anchor!r}")
    return found
