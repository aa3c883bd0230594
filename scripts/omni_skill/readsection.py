"""`read`: one section of a skill page, as an agent needs it, in fewer characters than the page.

A target is what `find` prints (`PAGE:LINE`, the section under the nearest heading at or above that line) or a link
(`PAGE#anchor`); a bare `PAGE` is the page up to its link definitions. PAGE is relative to the
skill root; `references/` may be left out. Citations are printed as their link text with a number
(`StagePool.pick[3]`), and each number once below as its path and lines, read from the page's own
link definitions: the facts and their locations, without the long labels written inline.

`read PAGE --toc` prints the page's opening summary (the text above its first section) and its
sections, each with its anchor, line and size as `read` prints it: stop at the summary, or read
only the sections the question needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .labels import LabelError, check_path
from .skill import data_files, markdown_files, read_text

CITATIONS_MARK = "<!-- citations -->"
# `[text][src:…]` or `[text][rel:…]`; the text may hold a code span with brackets in it.
USE = re.compile(r"\[((?:`[^`]*`|[^\[\]])*)\]\[((?:src|rel):(?:\\[\[\]]|[^\[\]\s\\])*)\]")
DEFINITION = re.compile(r"^ {0,3}\[((?:src|rel):[^\s]*)\]:[ \t]*(\S+)[ \t]*$")
PERMALINK = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/([^/]+)/(.+?)(?:#(L\d+(?:-L\d+)?))?$")
TARGET = re.compile(r"^(?P<page>[^:#]+?)(?::(?P<line>\d{1,7})|#(?P<anchor>[^\s#]+))?$")


@dataclass
class PageSection:
    page: str
    start: int  # 1-based, inclusive
    end: int
    text: str  # the section with citations numbered
    notes: list[tuple[str, str]]  # (label, where: path#Lx-Ly @ revision) in number order


def parse_target(root: Path, target: str) -> tuple[str, int | None, str | None]:
    """(page, line, anchor) of a target; a usage error names what is wrong with it."""
    match = TARGET.match(target.strip())
    if not match:
        raise UsageError(f"{target!r}: not PAGE, PAGE:LINE or PAGE#anchor")
    page = match["page"]
    try:
        check_path(page)
    except LabelError as exc:
        raise UsageError(f"{target!r}: {exc}") from None
    pages = markdown_files(root) + data_files(root)
    for candidate in (page, f"references/{page}"):
        if candidate in pages:
            line = int(match["line"]) if match["line"] else None
            if candidate.endswith((".yaml", ".yml")) and (line is None or match["anchor"]):
                raise UsageError(f"{target!r}: give a data file as FILE:LINE (a line find printed)")
            return candidate, line, match["anchor"]
    raise UsageError(f"{page}: not a page of this skill (SKILL.md, references/**/*.md or a references/ data file)")


def read_section(root: Path, target: str) -> PageSection:
    from .anchors.markdown import sections

    page, line, anchor = parse_target(root, target)
    text = read_text(root, page)
    lines = text.splitlines()
    if page.endswith((".yaml", ".yml")) and line is not None:
        return data_item(page, lines, line)
    prose_end = prose_end_of(lines)
    spans = sections(text)
    if anchor is not None:
        span = spans.get(anchor)
        if span is None:
            raise UsageError(f"{page}: no heading #{anchor} (headings: {', '.join(list(spans)[:12])} …)")
        start, end = span.start, span.end
    elif line is not None:
        if not 1 <= line <= prose_end:
            raise UsageError(f"{page}:{line}: the page's prose has lines 1-{prose_end}")
        above = [s for s in spans.values() if s.start <= line]  # the section of the nearest heading above
        start, end = max(((s.start, s.end) for s in above), default=(1, prose_end))
    else:
        start, end = 1, prose_end
    return numbered(page, lines, start, end, definitions(lines[prose_end:]))


def prose_end_of(lines: list[str]) -> int:
    """The number of prose lines: those above the `<!-- citations -->` line."""
    return next((n for n, t in enumerate(lines) if t.strip() == CITATIONS_MARK), len(lines))


def numbered(page: str, lines: list[str], start: int, end: int, where: dict[str, str]) -> PageSection:
    """Lines start..end of a page (trailing blanks and the link definitions left out), each
    citation printed as its link text and a number, the numbers' places from `where`."""
    end = min(end, prose_end_of(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        label = match[2]
        if label not in numbers:
            numbers[label] = len(numbers) + 1
        return f"{match[1]}[{numbers[label]}]"

    body = "\n".join(USE.sub(number, t) for t in lines[start - 1 : end])
    notes = [(label, where.get(label, "(no link definition)")) for label in numbers]
    return PageSection(page, start, end, body, notes)


@dataclass
class OutlineEntry:
    anchor: str
    line: int
    level: int  # 2 for `##`, 3 for `###` …
    title: str
    chars: int  # the section as `read PAGE#anchor` prints it


@dataclass
class Outline:
    summary: PageSection  # the lines above the first section heading
    chars: int  # the whole page as `read PAGE` prints it
    entries: list[OutlineEntry]


def outline(root: Path, target: str, revision: str) -> Outline:
    """The summary and section list of a Markdown page named bare (no `:LINE`, no `#anchor`)."""
    from .anchors.markdown import sections

    page, line, anchor = parse_target(root, target)
    if line is not None or anchor is not None or not page.endswith(".md"):
        raise UsageError(f"{target!r}: --toc takes a Markdown page named bare (PAGE, no :LINE or #anchor)")
    text = read_text(root, page)
    lines = text.splitlines()
    prose_end = prose_end_of(lines)
    where = definitions(lines[prose_end:])
    entries = []
    for slug, span in sections(text).items():
        if span.start > prose_end or span.start == 1:
            continue
        heading = lines[span.start - 1]
        level = len(heading) - len(heading.lstrip("#"))
        size = len(render(numbered(page, lines, span.start, span.end, where), revision))
        entries.append(OutlineEntry(slug, span.start, level, heading.lstrip("#").strip(), size))
    first = min((e.line for e in entries), default=prose_end + 1)
    summary = numbered(page, lines, 1, first - 1, where)
    whole = numbered(page, lines, 1, prose_end, where)
    return Outline(summary, len(render(whole, revision)), entries)


def render_outline(found: Outline, revision: str) -> str:
    page = found.summary.page
    out = [render(found.summary, revision).rstrip("\n")] if found.summary.text else [page]
    whole = f"{found.chars:,} characters as `read` prints it whole"
    out.append(f"\n{page}: {whole}; its sections (anchor, line, characters; read PAGE#anchor):")
    for entry in found.entries:
        indent = "  " * (entry.level - 1)
        out.append(f"{indent}#{entry.anchor}  line {entry.line}  {entry.chars:,}")
    return "\n".join(out) + "\n"


def data_item(page: str, lines: list[str], line: int) -> PageSection:
    """The YAML list item holding a line of a data file (a setting, a model, a test), whole."""
    if not 1 <= line <= len(lines):
        raise UsageError(f"{page}:{line}: the file has lines 1-{len(lines)}")

    def indent(text: str) -> int:
        return len(text) - len(text.lstrip(" "))

    start, depth = line - 1, indent(lines[line - 1])
    while start > 0 and not (lines[start].lstrip().startswith("- ") and indent(lines[start]) <= depth):
        start -= 1
    depth = indent(lines[start])
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or indent(lines[end]) > depth):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return PageSection(page, start + 1, end, "\n".join(lines[start:end]), [])


def definitions(lines: list[str]) -> dict[str, str]:
    """Label -> `path#Lx-Ly` (with `@ vX.Y.Z` for a release) from a page's link definitions."""
    found: dict[str, str] = {}
    for line in lines:
        match = DEFINITION.match(line)
        if not match:
            continue
        url = PERMALINK.match(match[2])
        if url is None:
            found[match[1]] = match[2]
            continue
        ref, path, lines_part = url.groups()
        place = f"{path}#{lines_part}" if lines_part else path
        found[match[1]] = f"{place} @ {ref}" if ref.startswith("v") else place
    return found


def render(section: PageSection, revision: str) -> str:
    """The section, then its citations grouped by file: `path: [1] L10-L20, [4] L88`."""
    out = [f"{section.page}:{section.start}-{section.end}", section.text]
    if section.notes:
        by_file: dict[str, list[str]] = {}
        for number, (_, where) in enumerate(section.notes, 1):
            place, _, release = where.partition(" @ ")
            path, _, lines = place.partition("#")
            key = f"{path} @ {release}" if release else path
            by_file.setdefault(key, []).append(f"[{number}] {lines}" if lines else f"[{number}]")
        out.append(f"\ncited (engine at {revision[:12]} unless marked @ vX.Y.Z):")
        out += [f"{path}: {', '.join(items)}" for path, items in by_file.items()]
    return "\n".join(out) + "\n"
