"""One read of the skill for `find`: every page parsed once with markdown-it (headings, table rows,
list items, inline code spans, citation labels) and the three data files composed once.

Each naming of something on a page is a `Term`: a word of a code span, a word of a heading, or a
citation label (its anchor, and its path). A term records where it sits (file, line, the section
heading above it) and what role that place plays (a heading, a table row's first cell, the lead
of a list item, another cell, a list item, prose), which is what `find` ranks by. Names are
compared in one normalized form: case folded, `-` read as `_`, leading `--` and `$` dropped, so
`--max-num-seqs`, `max-num-seqs` and `max_num_seqs` are one name.

Imports only markdown-it, pyyaml and the skill's light readers (no pydantic): `find` answers in a
fraction of a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from .labels import CODE_SPAN, PREFIX, USE_RE, markdown_tokens, unescape
from .skill import markdown_files, read_text, yaml_document
from .yamlcheck import construct, mapping

# Copies of their owners' constants (tests/test_find.py compares them): importing the owners
# would load pydantic.
SEARCH_SPACE_PATH = "references/architecture-search/search-space.yaml"
MODELS_PATH = "references/architecture-search/models.yaml"
TEST_MAP_PATH = "references/extension-validation/test-map.yaml"

# A word of a code span: an identifier or dotted name (`StagePool.pick`, `stages[0].devices`),
# a flag (`--max-num-seqs`), an environment variable (`$VLLM_X`), a path or an endpoint.
WORD = re.compile(r"--?[A-Za-z][\w-]*|/[\w.{}/-]+|[\w$][\w.$\[\]{}/-]*")
HEADING_WORD = re.compile(r"[A-Za-z_][\w.-]*")
INDEX = re.compile(r"\[[^\]]*\]")
LEAD = re.compile(r"[\s*_\[]*")  # what may precede a list item's lead code span

ROLES = ("heading", "first-cell", "list-lead", "cell", "item", "prose")


def normalize(word: str) -> str:
    """The one spelling of a name: case folded, `-` as `_`, no leading `--` or `$`."""
    return word.strip().lstrip("-$").lower().replace("-", "_")


@cache
def name_key(word: str) -> tuple[str, ...]:
    """A name as compared: its dotted segments, normalized (`stages[0].devices` → stages, devices);
    a path or an endpoint is one segment."""
    word = word.strip().rstrip(".:,;").removesuffix("()")
    if "/" in word:
        return (normalize(word).rstrip("/"),)
    return tuple(part for part in (normalize(p) for p in INDEX.sub("", word).split(".")) if part)


@cache
def path_forms(path: str) -> tuple[str, ...]:
    """A path as a name matches it whole, by its file name, or by its file name's stem."""
    base = path.rstrip("/").rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base[1:] else base
    return tuple(dict.fromkeys(normalize(f) for f in (path.rstrip("/"), base, stem) if f))


class Term(NamedTuple):
    """One naming of something on a page (a tuple: a page holds hundreds, made in one pass)."""

    file: str
    line: int  # 1-based
    section: int  # line of the heading above it (0: before the first heading)
    role: str  # one of ROLES
    via: str  # code (a code span's word), word (a heading's plain word), label (an anchor), path (a label's path)
    text: str  # as written
    key: tuple[str, ...]  # normalized segments; for a path: its forms (see `path_forms`)
    label: str = ""  # the citation label, for via label and path


@dataclass
class Page:
    file: str
    headings: dict[int, str] = field(default_factory=dict)  # line -> title
    terms: list[Term] = field(default_factory=list)


@dataclass(frozen=True)
class SettingView:
    """A search-space.yaml entry, as `find` shows it."""

    line: int
    name: str
    scope: str
    source: str
    param: str
    default: str  # the literal, shown; "" when the entry has none
    default_note: str
    type: str
    read_by: tuple[str, ...]


@dataclass
class CatalogueEntry:
    """A models.yaml entry: the names it answers to, read from the composed file; the entry's data
    is constructed only when asked for (`find` shows the few entries that match)."""

    line: int
    kind: str  # pipeline or diffusion
    name: str  # the pipeline key or the diffusion architecture
    names: tuple[str, ...]  # every name it answers to: configs, architectures, the class
    deploys: tuple[str, ...]  # deploy files (paths), for a pipeline
    node: yaml.Node

    @cached_property
    def data(self) -> dict[str, Any]:
        value = construct(self.node)
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class NativeTestView:
    line: int
    pytest: str
    markers: tuple[str, ...]
    hardware: str


@dataclass(frozen=True)
class SubsystemView:
    line: int
    name: str
    source: str
    tests: tuple[NativeTestView, ...]


# ---------------------------------------------------------------- pages

DELIMITER_ROW = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
CELL_BORDER = re.compile(r"(?<!\\)\|")


def _code_terms(page: Page, content: str, first: int, section: int, role: str, lead: str = "") -> None:
    """Terms of an inline text's code spans and citation labels. `first`: the 1-based line of the
    text's first line; `lead`: the role of its first code span when nothing but emphasis or a link
    bracket comes before it (the lead of a list item)."""
    for number, match in enumerate(CODE_SPAN.finditer(content)):
        line = first + content.count("\n", 0, match.start())
        fence = len(match.group(1))
        span = match.group(0)[fence:-fence].strip()
        where = lead if number == 0 and lead and LEAD.fullmatch(content, 0, match.start()) else role
        for word in WORD.findall(span):
            key = name_key(word)
            if key and not word.isdigit():
                page.terms.append(Term(page.file, line, section, where, "code", word.rstrip(".:,;"), key))
    if "][src:" not in content:
        return
    for match in USE_RE.finditer(content):
        line = first + content.count("\n", 0, match.start())
        label = unescape(match.group(1))
        path, _, anchor = label[len(PREFIX) :].partition("::")
        page.terms.append(Term(page.file, line, section, role, "path", path, path_forms(path), label))
        anchor = anchor.split("@", 1)[0].split("#", 1)[0]  # `Symbol@L3-L5` and `name#2` name Symbol, name
        if anchor and not re.fullmatch(r"L\d+(?:-L\d+)?", anchor):
            key = name_key(anchor)
            if key:
                page.terms.append(Term(page.file, line, section, role, "label", anchor, key, label))


def table_rows(lines: list[str]) -> dict[int, bool]:
    """Which lines of an inline block are rows of a pipe table (GitHub's table extension, which
    the CommonMark block parse leaves inside a paragraph): index -> True for a body row, False for
    the header row. A table is a header row, a delimiter row, then the rows that hold a `|`."""
    rows: dict[int, bool] = {}
    index = 1
    while index < len(lines):
        line = lines[index]
        if "-" in line and "|" in lines[index - 1] and index - 1 not in rows and DELIMITER_ROW.match(line):
            rows[index - 1] = False
            index += 1
            while index < len(lines) and "|" in lines[index]:
                rows[index] = True
                index += 1
            continue
        index += 1
    return rows


def cells(row: str) -> list[str]:
    """A table row's cells: split at pipes that are not escaped, outer pipes dropped (as GFM does,
    a pipe inside a code span splits too unless escaped)."""
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return CELL_BORDER.split(row)


def _inline_terms(page: Page, content: str, first: int, section: int, role: str, lead: str) -> None:
    """Terms of one inline block: table rows cell by cell, the other lines as `role` text."""
    lines = content.split("\n")
    rows = table_rows(lines) if "|" in content else {}
    if not rows:
        _code_terms(page, content, first, section, role, lead)
        return
    delimiters = {index + 1 for index, body in rows.items() if not body}
    prose: list[int] = []

    def flush() -> None:
        if prose:
            text = "\n".join(lines[prose[0] : prose[-1] + 1])
            _code_terms(page, text, first + prose[0], section, role, lead if prose[0] == 0 else "")
            prose.clear()

    for index, line in enumerate(lines):
        if index in rows:
            flush()
            for number, cell in enumerate(cells(line)):
                where = "first-cell" if number == 0 and rows[index] else "cell"
                _code_terms(page, cell, first + index, section, where)
        elif index in delimiters:
            flush()
        else:
            prose.append(index)
    flush()


def read_page(file: str, text: str) -> Page:
    """A page's headings and terms, from the skill's one block parse of it (`labels.markdown_tokens`:
    CommonMark, code blocks and citation definitions left out); pipe tables are read from the
    paragraphs that hold them."""
    page = Page(file)
    section = 0
    items: list[bool] = []  # per open list item: whether its lead paragraph is still to come
    tokens = markdown_tokens(text)
    for index, token in enumerate(tokens):
        kind = token.type
        if kind == "heading_open" and token.map:
            section = token.map[0] + 1
            title = tokens[index + 1].content.strip()
            page.headings[section] = title
            _code_terms(page, title, section, section, "heading")
            for word in HEADING_WORD.findall(CODE_SPAN.sub(" ", title)):
                if len(word) > 2:
                    page.terms.append(Term(file, section, section, "heading", "word", word, name_key(word)))
        elif kind == "list_item_open":
            items.append(True)
        elif kind == "list_item_close":
            items.pop()
        elif kind == "inline" and token.map and tokens[index - 1].type != "heading_open":
            lead = ""
            if items and items[-1]:
                items[-1] = False
                lead = "list-lead"
            _inline_terms(page, token.content, token.map[0] + 1, section, "item" if items else "prose", lead)
    return page


# ---------------------------------------------------------------- data files


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _entries(node: yaml.Node | None, key: str) -> list[tuple[int, yaml.Node, Any]]:
    """(1-based line, node, data) of each mapping in the list under `key` of a mapping node; the
    data constructed from the whole list at once (one constructor for the file, not one per item)."""
    found = mapping(node).get(key)
    if not isinstance(found, yaml.SequenceNode):
        return []
    data = construct(found)
    return [
        (item.start_mark.line + 1, item, value)
        for item, value in zip(found.value, data, strict=True)
        if isinstance(value, dict)
    ]


def _settings(node: yaml.Node | None) -> list[SettingView]:
    found = []
    for line, _, data in _entries(node, "settings"):
        if not isinstance(data.get("name"), str):
            continue
        found.append(
            SettingView(
                line=line,
                name=data["name"],
                scope=str(data.get("scope", "")),
                source=str(data.get("source", "")),
                param=str(data.get("param") or ""),
                default=_shown(data["default"]) if "default" in data else "",
                default_note=str(data.get("default_note") or ""),
                type=str(data.get("type", "")),
                read_by=tuple(str(r) for r in data.get("read_by") or ()),
            )
        )
    return found


def _scalar(node: yaml.Node | None) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else ""


def _sequence(node: yaml.Node | None) -> list[yaml.Node]:
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _catalogue(node: yaml.Node | None) -> list[CatalogueEntry]:
    """The catalogue's entries, their names read from the nodes (no data constructed)."""
    found: list[CatalogueEntry] = []
    top = mapping(node)
    for item in _sequence(top.get("pipelines")):
        fields = mapping(item)
        names = [_scalar(fields.get("key")), _scalar(fields.get("value"))]
        deploys: list[str] = []
        for config in _sequence(fields.get("configs")):
            values = mapping(config)
            names += [_scalar(values.get("name")), _scalar(values.get("model_arch"))]
            names += [_scalar(n) for n in _sequence(values.get("hf_architectures"))]
            deploys += [_scalar(mapping(d).get("source")) for d in _sequence(values.get("deploy"))]
        if names[0]:
            line = item.start_mark.line + 1
            found.append(CatalogueEntry(line, "pipeline", names[0], tuple(n for n in names if n), tuple(deploys), item))
    for item in _sequence(top.get("diffusion")):
        fields = mapping(item)
        arch = _scalar(fields.get("arch"))
        if arch:
            known = (arch, _scalar(fields.get("class")).partition("::")[2])
            found.append(CatalogueEntry(item.start_mark.line + 1, "diffusion", arch, known, (), item))
    return found


def _subsystems(node: yaml.Node | None) -> list[SubsystemView]:
    found = []
    for line, item, data in _entries(node, "subsystems"):
        tests_node = mapping(item).get("tests")
        test_items = tests_node.value if isinstance(tests_node, yaml.SequenceNode) else []
        tests = tuple(
            NativeTestView(
                test_node.start_mark.line + 1,
                test["pytest"],
                tuple(str(m) for m in test.get("markers") or ()),
                str(test.get("hardware", "")),
            )
            for test_node, test in zip(test_items, data.get("tests") or [], strict=False)
            if isinstance(test, dict) and isinstance(test.get("pytest"), str)
        )
        found.append(SubsystemView(line, str(data.get("name", "")), str(data.get("source", "")), tests))
    return found


class Snapshot:
    """The skill as `find` reads it. Each file is read once and parsed at most once, when first
    asked for: `pages(needle)` parses only the pages whose folded text holds the needle (a page
    without it cannot name the thing: every term's key is a piece of its folded text), and a data
    file is composed only when `holds(rel, needle)`; `pages()` parses every page."""

    def __init__(self, root: Path):
        self.root = root
        # generated pages that restate data (release notes, the versions matrix) are not places
        # that discuss a thing: their data comes back as fact entries instead
        generated = ("references/serving-tuning/releases/", "references/serving-tuning/release-notes.md")
        self.files = [rel for rel in markdown_files(root) if not rel.startswith(generated)]
        self.unreadable: list[str] = []  # data files that could not be read, and why
        self._pages: dict[str, Page] = {}
        self._folded: dict[str, str] = {}

    def folded(self, rel: str) -> str:
        """The file's text as names are compared: case folded, `-` as `_` ("" when absent)."""
        if rel not in self._folded:
            path = self.root / rel
            self._folded[rel] = read_text(self.root, rel).lower().replace("-", "_") if path.exists() else ""
        return self._folded[rel]

    def holds(self, rel: str, needle: str | None) -> bool:
        return needle is None or needle in self.folded(rel)

    def page(self, rel: str) -> Page:
        if rel not in self._pages:
            self._pages[rel] = read_page(rel, read_text(self.root, rel))
        return self._pages[rel]

    def pages(self, needle: str | None = None) -> list[Page]:
        return [self.page(rel) for rel in self.files if self.holds(rel, needle)]

    def _document(self, rel: str) -> yaml.Node | None:
        if not (self.root / rel).exists():
            return None
        node, problems = yaml_document(self.root, rel)
        if problems:
            self.unreadable.append(problems[0].one_line())
        return node

    @cached_property
    def settings(self) -> list[SettingView]:
        return _settings(self._document(SEARCH_SPACE_PATH))

    @cached_property
    def catalogue(self) -> list[CatalogueEntry]:
        return _catalogue(self._document(MODELS_PATH))

    @cached_property
    def subsystems(self) -> list[SubsystemView]:
        return _subsystems(self._document(TEST_MAP_PATH))
