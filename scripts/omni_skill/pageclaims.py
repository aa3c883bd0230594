"""The claims the skill's pages make: the unit an audit judges, and what a release verdict is about.

A claim is a table row, a list item or a sentence of a paragraph (a heading counts as one
sentence) that carries citations; in a data file it is the list entry (a mapping inside a list)
that holds them, else the one line. Each citation use (file:line in the evidence index) belongs to
the innermost such unit around it, so a claim's citations are exactly the ones it rests on.

Per engine, a claim's verdict is the worst of its citations' (`VERDICTS`, best first):
`holds` (the cited code is identical, possibly on other lines), `changed-cosmetic` (it differs
only in docstrings, comments or layout: the same Python AST without docstrings, the same YAML
data), `changed`, `missing`; `not-shipped` when none of its citations can be checked there.

A claim's id is stable across edits of its words: the page, the slug of its section, and a hash of
the labels it cites (`~2`, `~3` for a repeat in the same section).
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .index import EvidenceIndex
from .labels import USE_RE, markdown_tokens, unescape

VERDICTS = ("holds", "changed-cosmetic", "changed", "missing", "not-shipped")
WORST = {verdict: rank for rank, verdict in enumerate(VERDICTS[:4])}
KINDS = ("row", "item", "sentence", "entry", "line")


@dataclass(frozen=True)
class PageClaim:
    id: str
    file: str
    line: int  # first line of the claim
    heading: str  # the section title (a data entry: the path of the list that holds it)
    kind: str  # one of KINDS
    text: str  # the claim as plain text, in the skill's own words
    labels: tuple[str, ...]  # sorted, distinct


def citation_verdict(status: str, cosmetic: bool = False, similarity: float | None = None) -> str:
    """A citation's verdict from its status (bump's or a tree's words)."""
    if status in ("unchanged", "moved") or (status == "relocated" and similarity == 1.0):
        return "holds"
    if status == "changed":
        return "changed-cosmetic" if cosmetic else "changed"
    if status == "not-shipped":
        return "not-shipped"
    return "missing" if status == "missing" else "changed"  # relocated elsewhere, with other text


def claim_verdict(verdicts: Iterable[str]) -> str:
    checked = [v for v in verdicts if v != "not-shipped"]
    return max(checked, key=WORST.__getitem__) if checked else "not-shipped"


def verdicts(claims: list[PageClaim], by_label: Mapping[str, str]) -> dict[str, str]:
    """Claim id -> verdict, from each citation's verdict."""
    return {c.id: claim_verdict(by_label.get(label, "missing") for label in c.labels) for c in claims}


def counts(found: Mapping[str, str]) -> dict[str, int]:
    values = list(found.values())
    return {verdict: values.count(verdict) for verdict in VERDICTS}


# --- deriving the claims -----------------------------------------------------------------------


def page_claims(root: Path, index: EvidenceIndex) -> list[PageClaim]:
    """Every claim of the skill's pages and data files, in file and line order."""
    from .skill import read_text

    by_file: dict[str, dict[int, set[str]]] = {}
    for record in index.records:
        for use in record.uses:
            by_file.setdefault(use.file, {}).setdefault(use.line, set()).add(record.label)
    claims: list[PageClaim] = []
    for rel in sorted(by_file):
        try:
            text = read_text(root, rel)
        except OSError:
            continue
        if rel.endswith(".md"):
            claims += markdown_claims(rel, text, by_file[rel])
        else:
            claims += data_claims(rel, text, by_file[rel])
    return claims


ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp|No|Fig)|\.\.)\.$")
SENTENCE_END = re.compile(r"[.!?][\"')\]*_]*\s+(?=[A-Z0-9\[`*_(\"'])")


def sentence_starts(text: str) -> list[int]:
    """Offsets where the sentences of a paragraph's text begin (the first is 0)."""
    starts = [0]
    for match in SENTENCE_END.finditer(text):
        before = text[: match.start() + 1]
        if ABBREVIATION.search(before) or before.count("`") % 2:  # an abbreviation, or inside code
            continue
        starts.append(match.end())
    return starts


def plain(text: str) -> str:
    """A claim's Markdown as plain text: link labels and targets, emphasis and table pipes dropped."""
    text = re.sub(r"\]\[(?:\\.|[^\]\\])*\]", "]", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = text.replace("[", "").replace("]", "").replace("**", "").replace("\\", "")
    text = text.strip().strip("|").replace(" | ", " · ").replace("|", " · ")
    text = re.sub(r"^([-*+]|\d+[.)])\s+", "", text.strip())
    return " ".join(text.split())


def _claim_id(file: str, section: str, labels: tuple[str, ...], seen: dict[str, int]) -> str:
    digest = hashlib.sha256("\n".join(labels).encode("utf-8")).hexdigest()[:8]
    base = f"{file}#{section}@{digest}"
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}~{seen[base]}"


@dataclass
class _Unit:
    kind: str
    start: int  # 0-based first line
    end: int  # 0-based, exclusive
    labels: set[str]
    text: str = ""


def markdown_claims(rel: str, text: str, uses: Mapping[int, set[str]]) -> list[PageClaim]:
    from .anchors.markdown import slug

    lines = text.splitlines()
    tokens = markdown_tokens(text)  # CommonMark blocks, parsed once per text (shared with the headings)
    titles: list[tuple[int, str]] = []
    rows: list[tuple[int, int]] = []
    items: list[tuple[int, int]] = []
    paragraphs: list[tuple[int, int]] = []
    for position, token in enumerate(tokens):
        if token.map is None:
            continue
        if token.type == "heading_open":
            titles.append((token.map[0] + 1, tokens[position + 1].content.strip()))
        if token.type == "tr_open":
            rows.append((token.map[0], token.map[1]))
        elif token.type == "list_item_open":
            items.append((token.map[0], token.map[1]))
        elif token.type == "paragraph_open" and _is_table(lines, token.map[0], token.map[1]):
            rows += [(row, row + 1) for row in range(token.map[0], token.map[1]) if row != token.map[0] + 1]
        elif token.type in ("paragraph_open", "heading_open"):
            paragraphs.append((token.map[0], token.map[1]))
    units: dict[tuple[str, int, int], _Unit] = {}
    for number in sorted(uses):
        here = number - 1
        wanted = uses[number]
        found = [(label, match.start()) for label, match in _labels_on(lines, here) if label in wanted]
        row = _innermost(rows, here)
        item = _innermost(items, here)
        block = row or item
        if block is not None:
            kind = "row" if row else "item"
            unit = units.setdefault((kind, *block), _Unit(kind, *block, set()))
            unit.labels.update(label for label, _ in found)
            continue
        paragraph = _innermost(paragraphs, here)
        if paragraph is None:
            unit = units.setdefault(("line", here, here + 1), _Unit("line", here, here + 1, set()))
            unit.labels.update(label for label, _ in found)
            continue
        first, last = paragraph
        body = "\n".join(lines[first:last])
        starts = sentence_starts(body)
        line_offset = sum(len(line) + 1 for line in lines[first:here])
        for label, column in found:
            at = bisect_right(starts, line_offset + column) - 1
            begin = starts[at]
            finish = starts[at + 1] if at + 1 < len(starts) else len(body)
            key = ("sentence", first, begin)
            unit = units.setdefault(key, _Unit("sentence", first, last, set(), body[begin:finish]))
            unit.start = first + body.count("\n", 0, begin)
            unit.labels.add(label)
    claims: list[PageClaim] = []
    seen: dict[str, int] = {}
    numbers = [n for n, _ in titles]
    for _, unit in sorted(units.items(), key=lambda kv: (kv[1].start, kv[0])):
        if not unit.labels:
            continue
        position = bisect_right(numbers, unit.start + 1)
        heading = titles[position - 1][1] if position else ""
        words = unit.text or "\n".join(lines[unit.start : unit.end])
        labels = tuple(sorted(unit.labels))
        claim_id = _claim_id(rel, slug(heading), labels, seen)
        claims.append(PageClaim(claim_id, rel, unit.start + 1, heading, unit.kind, plain(words), labels))
    return claims


TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _is_table(lines: list[str], first: int, last: int) -> bool:
    """A paragraph (to CommonMark) that is a GitHub table: a header row, then a delimiter row; each
    of its lines is then one row. (The parser shared with the rest of the scripts is plain
    CommonMark; reading tables from its paragraphs costs nothing more.)"""
    return last - first >= 2 and "|" in lines[first] and bool(TABLE_DELIMITER.match(lines[first + 1]))


def _labels_on(lines: list[str], index: int) -> list[tuple[str, re.Match[str]]]:
    if index >= len(lines):
        return []
    return [(unescape(m.group(1)), m) for m in USE_RE.finditer(lines[index])]


def _innermost(blocks: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    holding = [b for b in blocks if b[0] <= line < b[1]]
    return min(holding, key=lambda b: b[1] - b[0]) if holding else None


# --- data files -------------------------------------------------------------------------------

NAME_KEYS = ("name", "key", "arch", "what", "class", "platform", "stage_id", "source")


@lru_cache(maxsize=16)
def _entries(text: str) -> tuple[tuple[int, int, str, str], ...]:
    """(first line, last line, list path, name) of every mapping that is a list item, 1-based."""
    import yaml

    from .anchors.yaml_keys import LOADER
    from .skill import composed_document

    root = composed_document(text)  # within `check`, the tree its data checks composed (same loader)
    try:
        if root is None:
            root = yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError:
        return ()
    found: list[tuple[int, int, str, str]] = []

    def walk(node: yaml.Node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                walk(value, f"{path}.{name}" if path else name)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                if isinstance(item, yaml.MappingNode):
                    values = {k.value: v for k, v in item.value if isinstance(k, yaml.ScalarNode)}
                    key = next((k for k in NAME_KEYS if isinstance(values.get(k), yaml.ScalarNode)), "")
                    label = f"{key}: {values[key].value}" if key else ""
                    end = item.end_mark.line + (1 if item.end_mark.column else 0)
                    found.append((item.start_mark.line + 1, max(item.start_mark.line + 1, end), path, label))
                walk(item, path)

    if root is not None:
        walk(root, "")
    return tuple(found)


@lru_cache(maxsize=16)
def _innermost_entries(text: str) -> dict[int, tuple[int, int, str, str]]:
    """1-based line -> the shortest entry holding it (the first in document order of equal ones)."""
    found: dict[int, tuple[int, int, str, str]] = {}
    for entry in _entries(text):
        first, last = entry[0], entry[1]
        for number in range(first, last + 1):
            held = found.get(number)
            if held is None or last - first < held[1] - held[0]:
                found[number] = entry
    return found


def data_claims(rel: str, text: str, uses: Mapping[int, set[str]]) -> list[PageClaim]:
    innermost = _innermost_entries(text)
    lines = text.splitlines()
    units: dict[tuple[int, int], tuple[str, str, set[str]]] = {}
    for number, labels in uses.items():
        holding = innermost.get(number)
        if holding:
            first, last, path, name = holding
            text_of = name or (lines[first - 1].strip().lstrip("- ") if first <= len(lines) else "")
            units.setdefault((first, last), (path, text_of, set()))[2].update(labels)
        else:
            line = lines[number - 1].strip() if number <= len(lines) else ""
            units.setdefault((number, number), ("", line.split(":", 1)[0], set()))[2].update(labels)
    claims: list[PageClaim] = []
    seen: dict[str, int] = {}
    for (first, last), (path, name, labels) in sorted(units.items()):
        ordered = tuple(sorted(labels))
        kind = "entry" if last > first or path else "line"
        claims.append(PageClaim(_claim_id(rel, path, ordered, seen), rel, first, path, kind, name, ordered))
    return claims


# --- what drift shows -------------------------------------------------------------------------

SHOWN_FIRST = ("missing", "changed", "changed-cosmetic")


def claim_items(
    claims: list[PageClaim], found: Mapping[str, str], by_label: Mapping[str, str]
) -> list[dict[str, object]]:
    """Every claim with its verdict and its citations' verdicts (drift's JSON)."""
    return [
        {
            "id": c.id,
            "file": c.file,
            "line": c.line,
            "heading": c.heading,
            "kind": c.kind,
            "text": c.text,
            "verdict": found[c.id],
            "labels": {label: by_label.get(label, "missing") for label in c.labels},
        }
        for c in claims
    ]


def by_page(items: list[dict[str, object]], budget: int | None) -> tuple[list[dict[str, object]], int]:
    """The claims that do not hold, grouped by page in page order, each page with its counts; with a
    `budget` (lines), at most that many claims are listed: missing before changed before cosmetic,
    taken one page at a time in turn so that every page shows its worst. (pages, claims not listed)"""
    pages: dict[str, list[dict[str, object]]] = {}
    for item in items:
        if item["verdict"] in SHOWN_FIRST:
            pages.setdefault(str(item["file"]), []).append(item)
    for members in pages.values():
        members.sort(key=lambda i: (SHOWN_FIRST.index(str(i["verdict"])), int(str(i["line"]))))
    shown: dict[str, int] = dict.fromkeys(pages, 0)
    total = sum(len(m) for m in pages.values())
    room = total if budget is None else max(0, budget)
    while room > 0 and any(shown[f] < len(m) for f, m in pages.items()):
        for file, members in pages.items():
            if room > 0 and shown[file] < len(members):
                shown[file] += 1
                room -= 1
    result = []
    for file, members in pages.items():
        tally = {v: sum(1 for m in members if m["verdict"] == v) for v in SHOWN_FIRST}
        listed = sorted(members[: shown[file]], key=lambda i: int(str(i["line"])))
        result.append({"file": file, "counts": tally, "claims": listed, "more": len(members) - shown[file]})
    return result, total - sum(shown.values())
