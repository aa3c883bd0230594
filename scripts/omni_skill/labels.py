"""Citation labels: the grammar of SPEC §4 and where labels are used and defined."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

PREFIX = "src:"
LINE_RANGE = re.compile(r"^L(\d{1,9})(?:-L(\d{1,9}))?$")  # a line number has at most 9 digits
PY_ANCHOR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:#[1-9][0-9]{0,5})?$")
YAML_ANCHOR = re.compile(
    r"^(?:[^.\[\]\s]+|\[\d{1,9}\])(?:\.[^.\[\]\s]+|\[\d{1,9}\])*$"
)  # an index has at most 9 digits
MD_ANCHOR = re.compile(r"^#[^\s#]+$")
# `Symbol@L<a>` or `Symbol@L<a>-L<b>` in a Python file: lines of a definition counted from its first
# line (1 = the first decorator or `def`/`class` line). The offsets are part of the identity: bump
# rewrites them when the cited lines move inside the definition.
SUB_SPAN = re.compile(r"^(?P<symbol>[^@]*)@L(?P<first>[0-9]+)(?:-L(?P<last>[0-9]+))?$")
SUB_SPAN_DIGITS = 6  # an offset inside one definition has at most 6 digits

# `[text][src:...]` (full reference link) and `[src:...]: URL` (definition). CommonMark link
# labels cannot hold unescaped brackets, so a YAML list index is written `stages\[0\]` in Markdown.
LABEL_BODY = r"src:(?:\\[\[\]]|[^\[\]\s\\]|\\(?![\[\]]))*"
USE_START = re.compile(r"\]\[src:")
WORD = re.compile(r"\S*")
USE_RE = re.compile(r"\]\[(" + LABEL_BODY + r")\]")
DEF_RE = re.compile(r"^ {0,3}\[(" + LABEL_BODY + r")\]:[ \t]*(\S*)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")  # an inline code span on one line


def unescape(text: str) -> str:
    return re.sub(r"\\([\[\]])", r"\1", text)


def escape(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


class LabelError(ValueError):
    """A label that does not follow the grammar."""


@dataclass(frozen=True, order=True)
class Label:
    path: str
    anchor: str  # "" for the whole file

    @property
    def text(self) -> str:
        return f"{PREFIX}{self.path}::{self.anchor}" if self.anchor else f"{PREFIX}{self.path}"

    @property
    def kind(self) -> str:
        """How the anchor is resolved: python, subspan (lines inside a Python definition), yaml,
        markdown, lines or file."""
        if not self.anchor:
            return "file"
        if LINE_RANGE.match(self.anchor):
            return "lines"
        kind = file_kind(self.path)
        return "subspan" if kind == "python" and "@" in self.anchor else kind

    @property
    def symbol(self) -> str:
        """The definition a Python anchor names (without a sub-span's `@L…`)."""
        return self.anchor.partition("@")[0]

    def __str__(self) -> str:
        return self.text


FILE_KINDS = {"py": "python", "yaml": "yaml", "yml": "yaml", "md": "markdown"}


def file_kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    stem, dot, suffix = name.rpartition(".")
    return FILE_KINDS.get(suffix.lower(), "other") if dot and stem else "other"


def check_path(path: str) -> None:
    if not path:
        raise LabelError("empty path")
    if "\\" in path:
        raise LabelError(f"backslash in path {path!r}")
    if path.startswith("/"):
        raise LabelError(f"absolute path {path!r}")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise LabelError(f"path {path!r} has an empty, '.' or '..' segment")


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@lru_cache(maxsize=8192)
def parse_label(text: str) -> Label:
    """Parse `src:<path>` or `src:<path>::<anchor>`; raise LabelError when it does not parse."""
    control = CONTROL.search(text)
    if control:
        shown = text[: control.start()] + f"\\x{ord(control.group()):02x}"
        raise LabelError(f"label {shown!r}… has a control character")
    if not text.startswith(PREFIX):
        raise LabelError(f"label {text!r} does not start with {PREFIX!r}")
    body = text[len(PREFIX) :]
    path, sep, anchor = body.partition("::")
    check_path(path)
    if sep and not anchor:
        raise LabelError(f"label {text!r} has an empty anchor")
    if "::" in anchor:
        raise LabelError(f"label {text!r} has more than one '::'")
    label = Label(path, anchor)
    if anchor:
        if re.match(r"^L\d+(?:-L\d+)?$", anchor) and not LINE_RANGE.match(anchor):
            raise LabelError(f"label {text[:80]!r}…: a line number has at most 9 digits")
        line_range = LINE_RANGE.match(anchor)
        if line_range:
            start, end = int(line_range.group(1)), int(line_range.group(2) or line_range.group(1))
            if start < 1 or end < start:
                raise LabelError(f"label {text!r} has an empty or reversed line range")
            return label
        kind = file_kind(path)
        if kind == "python" and "@" in anchor:
            split_subspan(anchor, text)
            return label
        pattern = {"python": PY_ANCHOR, "yaml": YAML_ANCHOR, "markdown": MD_ANCHOR}.get(kind)
        if pattern is None:
            raise LabelError(f"label {text!r}: a {kind} file takes only a line range or no anchor")
        if not pattern.match(anchor):
            raise LabelError(f"label {text!r}: malformed {kind} anchor {anchor!r}")
    return label


def split_subspan(anchor: str, text: str = "") -> tuple[str, int, int]:
    """(symbol, first, last) of a `Symbol@L<a>[-L<b>]` anchor, offsets 1-based inside the
    definition; LabelError when it does not follow the grammar (`text`: the label, for messages)."""
    shown = repr(text or anchor)
    match = SUB_SPAN.match(anchor)
    if not match:
        raise LabelError(f"label {shown}: a sub-span is Symbol@L<a> or Symbol@L<a>-L<b>")
    symbol, first, last = match.group("symbol"), match.group("first"), match.group("last") or match.group("first")
    if not PY_ANCHOR.match(symbol):
        raise LabelError(f"label {shown}: malformed python anchor {symbol!r} before '@'")
    if max(len(first), len(last)) > SUB_SPAN_DIGITS:
        raise LabelError(f"label {shown[:80]}: a sub-span offset has at most {SUB_SPAN_DIGITS} digits")
    if first.startswith("0") or last.startswith("0"):
        raise LabelError(f"label {shown}: sub-span offsets start at L1 (the definition's first line), no leading 0")
    if int(last) < int(first):
        raise LabelError(f"label {shown} has a reversed sub-span")
    return symbol, int(first), int(last)


def subspan_anchor(symbol: str, first: int, last: int) -> str:
    """The anchor of lines `first`..`last` of a definition (`Symbol@L3` for one line)."""
    return f"{symbol}@L{first}" if first == last else f"{symbol}@L{first}-L{last}"


@dataclass(frozen=True)
class Use:
    """A place where a label is cited: a Markdown reference link or a data-file value."""

    file: str
    line: int
    text: str


@dataclass(frozen=True)
class Definition:
    file: str
    line: int
    text: str
    url: str


@dataclass
class MarkdownLabels:
    uses: list[Use]
    definitions: list[Definition]
    malformed: list[Use]  # `][src:` that does not close as a label


@lru_cache(maxsize=1)
def markdown_parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """(full, block-level) CommonMark parsers, built on first use: the label grammar needs neither."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark"), MarkdownIt("commonmark").disable("inline")


@lru_cache(maxsize=256)
def markdown_tokens(source: str) -> list[Token]:
    """Block-level markdown-it tokens of a Markdown text (inline content left unparsed; see
    `inline_tokens`), parsed once per text. Citation definition lines are blanked first (line
    numbers stay): they are read with DEF_RE, and they are most of the parsing cost."""
    lines = source.split("\n")
    return markdown_parsers()[1].parse("\n".join("" if DEF_RE.match(line) else line for line in lines))


@lru_cache(maxsize=256)
def code_lines(source: str) -> frozenset[int]:
    """0-based line numbers that are inside fenced or indented code blocks or HTML blocks."""
    lines: set[int] = set()
    for token in markdown_tokens(source):
        if token.type in ("fence", "code_block", "html_block") and token.map:
            lines.update(range(token.map[0], token.map[1]))
    return frozenset(lines)


def scan_markdown(rel: str, source: str) -> MarkdownLabels:
    """Collect citation uses and definitions of one Markdown file (1-based lines)."""
    skip = code_lines(source)
    uses: list[Use] = []
    definitions: list[Definition] = []
    malformed: list[Use] = []
    for index, line in enumerate(source.splitlines()):
        if index in skip:
            continue
        match = DEF_RE.match(line)
        if match:
            definitions.append(Definition(rel, index + 1, unescape(match.group(1)), match.group(2)))
            continue
        for start in USE_START.finditer(line):
            use = USE_RE.match(line, start.start())
            if use:
                uses.append(Use(rel, index + 1, unescape(use.group(1))))
            else:  # the label as far as it goes, for the message (bounded: a line may hold thousands)
                word = WORD.match(line, start.start() + 2, start.start() + 202)
                malformed.append(Use(rel, index + 1, word.group(0) if word else ""))
    return MarkdownLabels(uses, definitions, malformed)


@lru_cache(maxsize=64)
def headings(source: str) -> tuple[tuple[int, str], ...]:
    """(1-based line, raw title) of every ATX or setext heading, in order."""
    tokens = markdown_tokens(source)
    found = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            found.append((token.map[0] + 1, tokens[index + 1].content.strip()))
    return tuple(found)


def heading_at(source: str, line: int) -> str:
    """The title of the nearest Markdown heading at or above a 1-based line ("" when none)."""
    found = headings(source)
    position = bisect.bisect_right([number for number, _ in found], line)
    return found[position - 1][1] if position else ""
