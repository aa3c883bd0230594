"""The skill's shape (SPEC §2–§3, Agent Skills specification): frontmatter, budgets, routing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import yaml

from .anchors.markdown import slug
from .findings import Finding
from .labels import CODE_SPAN, headings, markdown_tokens
from .skill import REFERENCES, SKILL_FILE, data_files, markdown_files, read_text
from .yamlcheck import yaml_problems

if TYPE_CHECKING:
    from markdown_it.token import Token

ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SKILL_NAME = "vllm-omni"
MAX_LINES = 500
MAX_TOKENS = 5000
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_PAGE_LINES = 300
MAX_PAGE_PROSE_TOKENS = 6000  # a page above its link definitions
MAX_ROUTE_TOKENS = 4000  # SKILL.md's prose plus a branch entry page's (README.md): what an agent loads to route
CONTENTS_OVER = 150


@dataclass
class Frontmatter:
    data: dict[str, Any]
    key_lines: dict[str, int]
    body_start: int  # 1-based line where the body starts


def parse_frontmatter(text: str) -> Frontmatter:
    """Split `---` YAML frontmatter from the body; ValueError (with a line) when malformed."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("1: SKILL.md must start with '---' frontmatter")
    try:
        close = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("1: frontmatter is not closed by '---'") from None
    block = "\n".join(lines[1:close])
    problems = yaml_problems(block, first_line=2)
    if problems:
        line, message = problems[0]
        raise ValueError(f"{line}: frontmatter: {message}")
    try:
        node = yaml.compose(block, Loader=yaml.SafeLoader)
        data = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark else 1
        raise ValueError(f"{line}: frontmatter is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise ValueError("2: frontmatter must be a YAML mapping")
    key_lines = {str(k.value): k.start_mark.line + 2 for k, _ in node.value}
    return Frontmatter(data=data, key_lines=key_lines, body_start=close + 2)


def approx_tokens(text: str) -> int:
    """About four characters a token, the estimate skill validators use."""
    return (len(text) + 3) // 4


def check_frontmatter(root: Path, installed: bool) -> list[Finding]:
    text = read_text(root, SKILL_FILE)
    try:
        front = parse_frontmatter(text)
    except ValueError as exc:
        line, _, message = str(exc).partition(": ")
        return [Finding(kind="frontmatter-invalid", file=SKILL_FILE, line=int(line), message=message)]
    data, at = front.data, front.key_lines
    findings: list[Finding] = []

    def add(kind: str, key: str, message: str) -> None:
        findings.append(Finding(kind=kind, file=SKILL_FILE, line=at.get(key, 1), message=message))

    for key in data:
        if key not in ALLOWED_KEYS:
            add("frontmatter-key", str(key), f"key {key!r} is not allowed (allowed: {', '.join(ALLOWED_KEYS)})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        add("frontmatter-name", "name", "name is required and must be a string")
    else:
        if len(name) > 64 or not NAME_RE.match(name):
            add(
                "frontmatter-name",
                "name",
                f"name {name!r} must be 1-64 of a-z0-9- without leading, trailing or doubled hyphens",
            )
        if name != SKILL_NAME:
            add("frontmatter-name", "name", f"name {name!r} must be {SKILL_NAME!r}")
        if installed and root.resolve().name != name:
            add("frontmatter-name", "name", f"name {name!r} differs from the folder {root.resolve().name!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        add("frontmatter-description", "description", "description is required and must be a string")
    else:
        if len(description) > MAX_DESCRIPTION:
            add(
                "frontmatter-description",
                "description",
                f"description has {len(description)} characters (max {MAX_DESCRIPTION})",
            )
        if "<" in description or ">" in description:
            add("frontmatter-description", "description", "description must not contain '<' or '>'")
    compatibility = data.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY):
        add(
            "frontmatter-compatibility",
            "compatibility",
            f"compatibility must be a string of at most {MAX_COMPATIBILITY} characters",
        )
    if "license" in data and not isinstance(data["license"], str):
        add("frontmatter-license", "license", "license must be a string")
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            add("frontmatter-metadata", "metadata", "metadata must be a mapping of strings to strings")
        else:
            for key, value in metadata.items():
                if not isinstance(key, str) or not isinstance(value, str):
                    add(
                        "frontmatter-metadata",
                        "metadata",
                        f"metadata {key!r}: keys and values must be strings (quote {value!r})",
                    )
    tools = data.get("allowed-tools")
    if tools is not None and not isinstance(tools, str):
        add("frontmatter-allowed-tools", "allowed-tools", "allowed-tools must be a space-separated string")
    lines = text.splitlines()
    if len(lines) >= MAX_LINES:
        findings.append(
            Finding(
                kind="size-budget",
                file=SKILL_FILE,
                line=MAX_LINES,
                message=f"SKILL.md has {len(lines)} lines (must stay under {MAX_LINES})",
            )
        )
    tokens = approx_tokens(text)
    if tokens > MAX_TOKENS:
        findings.append(
            Finding(
                kind="size-budget", file=SKILL_FILE, message=f"SKILL.md is about {tokens} tokens (budget {MAX_TOKENS})"
            )
        )
    return findings


INLINE_LINK = re.compile(r"(?<![!\\])\[(?:[^\[\]\\]|\\.)*\]\(\s*<?([^)\s>]*)")


def local_links(text: str) -> list[tuple[int, str]]:
    """(1-based line, href) of every relative inline link in a Markdown text, fragments kept
    (`page.md#slug`, or `#slug` for the same page). Blocks come from the cached block parse (so
    code blocks are skipped); inside a block, code spans are blanked and links read per line."""
    lines = text.splitlines()
    found: list[tuple[int, str]] = []
    for block in markdown_tokens(text):
        if block.type != "inline" or "](" not in block.content or not block.map:
            continue
        for index in range(block.map[0], min(block.map[1], len(lines))):
            line = lines[index]
            if "](" not in line:
                continue
            plain = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
            for match in INLINE_LINK.finditer(plain):
                href = match.group(1)
                if href and not re.match(r"^[a-z][a-z0-9+.-]*:|^/", href, re.IGNORECASE):
                    found.append((index + 1, href))
    return found


def _target(rel: str, href: str) -> str | None:
    parts: list[str] = []
    for part in (PurePosixPath(rel).parent / href).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


@lru_cache(maxsize=64)
def heading_slugs(text: str) -> frozenset[str]:
    """GitHub anchors of a skill page's headings (repeats get -1, -2 …), from the cached parse."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, title in headings(text):
        base = slug(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title))  # a link in a heading keeps its text
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def check_routing(root: Path) -> list[Finding]:
    """Links resolve; every reference file is reachable within two hops of SKILL.md."""
    findings: list[Finding] = []
    pages = markdown_files(root)
    links: dict[str, list[str]] = {}
    for rel in pages:
        targets: list[str] = []
        for line, href in local_links(read_text(root, rel)):
            path, _, fragment = href.partition("#")
            target = _target(rel, path) if path else rel
            if target is None or not (root / target).exists():
                findings.append(
                    Finding(kind="link-broken", file=rel, line=line, message=f"link target {href!r} does not exist")
                )
                continue
            targets.append(target)
            if fragment and target.endswith(".md") and unquote(fragment) not in heading_slugs(read_text(root, target)):
                findings.append(
                    Finding(kind="link-broken", file=rel, line=line, message=f"no heading #{fragment} in {target}")
                )
        links[rel] = targets
    entries = [t for t in links.get(SKILL_FILE, []) if t.startswith(REFERENCES + "/")]
    for target in entries:
        if target.count("/") != 2:
            findings.append(
                Finding(
                    kind="routing-depth",
                    file=SKILL_FILE,
                    message=f"{target} is not a branch entry page (references/<branch>/<page>)",
                )
            )
    reachable = set(entries)
    for entry in entries:
        reachable.update(links.get(entry, []))
    for rel in [p for p in pages if p != SKILL_FILE] + data_files(root):
        if rel not in reachable:
            findings.append(
                Finding(kind="orphan", file=rel, message="not linked from SKILL.md or from a branch entry page")
            )
    skill_prose = approx_tokens(prose(read_text(root, SKILL_FILE))) if SKILL_FILE in pages else 0
    for rel in pages:
        if rel == SKILL_FILE:
            continue
        text = read_text(root, rel)
        count = len(text.splitlines())
        if count > MAX_PAGE_LINES:
            findings.append(
                Finding(kind="size-budget", file=rel, message=f"page has {count} lines (max {MAX_PAGE_LINES})")
            )
        tokens = approx_tokens(prose(text))
        if tokens > MAX_PAGE_PROSE_TOKENS:
            message = f"page prose is about {tokens} tokens (max {MAX_PAGE_PROSE_TOKENS}): split it by decision"
            findings.append(Finding(kind="size-budget", file=rel, message=message))
        if rel in entries and rel.endswith("/README.md") and skill_prose + tokens > MAX_ROUTE_TOKENS:
            message = (
                f"SKILL.md and this entry page are about {skill_prose + tokens} tokens of prose together "
                f"(max {MAX_ROUTE_TOKENS}): an agent loads both to route"
            )
            findings.append(Finding(kind="size-budget", file=rel, message=message))
    return findings


def prose(text: str) -> str:
    """A page above its citations marker (the link definitions an agent need not read)."""
    from .resolve import CITATIONS_MARKER

    cut = text.find(f"\n{CITATIONS_MARKER}\n")
    return text if cut < 0 else text[:cut]


def check_structure(root: Path, installed: bool) -> list[Finding]:
    if not (root / SKILL_FILE).exists():
        return [Finding(kind="layout", file=SKILL_FILE, message=f"no {SKILL_FILE} in {root}")]
    return check_frontmatter(root, installed) + check_routing(root) + check_literal_conflicts(root)


_NAME = r"-{0,2}[A-Za-z_][\w.\[\]-]*"
_VALUE = r"-?\d[\d._]*|True|False|None|true|false"
STATED_LITERAL = (  # each yields (name, value): `name = value`, `name` = value, `name` (default value)
    re.compile(r"`(" + _NAME + r")\s*=\s*([^`=]+?)\s*`"),
    re.compile(r"`(" + _NAME + r")`\s*=\s*`?(" + _VALUE + r")\b`?"),
    re.compile(r"`(" + _NAME + r")`,?\s+(?:\(default|defaults? to|default)\s+`?(" + _VALUE + r")\b`?"),
)
SENTENCE_BREAK = re.compile(r"(?<=[.;])\s+(?=[A-Z`(\[])")


@dataclass(frozen=True)
class StatedLiteral:
    """A literal stated for a name (`name = value`, `name` = value, `name` (default value)) in a
    sentence or table row that cites exactly one label."""

    label: str
    name: str
    value: str
    file: str
    line: int


def prose_blocks(text: str) -> list[Token]:
    """The block tokens of `prose(text)` that hold inline text. When the page's own parse starts a
    top-level block on its citations marker line, every block above it closed there, as it does at
    the end of the prose: the page's cached parse gives them (the prose is not parsed again). A
    marker inside a block (an open fence or HTML block) leaves the prose to be parsed on its own."""
    from .resolve import CITATIONS_MARKER

    cut = text.find(f"\n{CITATIONS_MARKER}\n")
    if cut < 0:
        return [t for t in markdown_tokens(text) if t.type == "inline"]
    marker = text.count("\n", 0, cut) + 1  # its 0-based line
    tokens = markdown_tokens(text)
    if any(t.level == 0 and t.map and t.map[0] == marker for t in tokens):
        return [t for t in tokens if t.type == "inline" and t.map and t.map[0] < marker]
    return [t for t in markdown_tokens(text[:cut]) if t.type == "inline"]


def _segments(text: str) -> list[tuple[int, str]]:
    """(1-based line, text) of every sentence of a page's prose: a table row is one, paragraph text
    is split at sentence ends. Code blocks are skipped (block parse), as are link definitions."""
    found: list[tuple[int, str]] = []
    for block in prose_blocks(text):
        if block.type != "inline" or not block.map:
            continue
        paragraph: list[str] = []
        for offset, line in enumerate(block.content.split("\n")):
            if line.lstrip().startswith("|"):
                found.append((block.map[0] + offset + 1, line))
            else:
                paragraph.append(line)
        found.extend((block.map[0] + 1, part) for part in SENTENCE_BREAK.split(" ".join(paragraph)) if part)
    return found


def stated_literals(rel: str, text: str) -> list[StatedLiteral]:
    from .labels import USE_RE, unescape

    found: list[StatedLiteral] = []
    for line, segment in _segments(text):
        labels = {unescape(m.group(1)) for m in USE_RE.finditer(segment)}
        if len(labels) != 1:
            continue
        bare = USE_RE.sub("]", segment)  # the label text itself states nothing
        for pattern in STATED_LITERAL:
            for match in pattern.finditer(bare):
                found.append(StatedLiteral(next(iter(labels)), match.group(1), match.group(2), rel, line))
    return found


def check_literal_conflicts(root: Path) -> list[Finding]:
    """Two pages that cite the same label in a sentence stating `name = value` must agree on the
    value: one fact, one value (a restated fact that drifted is a contradiction)."""
    first: dict[tuple[str, str], StatedLiteral] = {}
    findings: list[Finding] = []
    for rel in markdown_files(root):
        for stated in stated_literals(rel, read_text(root, rel)):
            seen = first.setdefault((stated.label, stated.name), stated)
            if seen.file != stated.file and seen.value != stated.value:
                message = (
                    f"`{stated.name} = {stated.value}` next to this label, but {seen.file}:{seen.line} "
                    f"states `{seen.name} = {seen.value}` next to it: keep the fact in one page and link to it"
                )
                findings.append(
                    Finding(kind="literal-conflict", file=rel, line=stated.line, message=message, label=stated.label)
                )
    return findings
