#!/usr/bin/env python3
"""List the long Python citations the pages use, with each use, to drive narrowing them.

    python3 benchmarks/long_spans.py [--over 100] [--root SKILL] [--format text|json|tsv]

Reads only the skill (evidence/index.json, the pages and evidence/whole-definitions.yaml); needs
no engine. A citation counts when its kind is python or subspan, a Markdown page uses it, and its
span has more than --over lines. Each use is printed as `file:line` with the sentence (or table
cell) that holds it, citations reduced to their link text and the long one marked with «…».
Narrow such a claim to the method or branch that performs it, or to a sub-span
(`Symbol@L<a>-L<b>`); or, when the claim is about the whole definition, list the label in
evidence/whole-definitions.yaml with the reason. The summary line is the measure issue 20 sets:
of the Python citations the pages use, the share over 100 lines (whole-definition reasons included).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.checks import LONG_SPAN, WHOLE_PATH  # noqa: E402
from omni_skill.index import load_index  # noqa: E402
from omni_skill.labels import LABEL_BODY, code_lines, unescape  # noqa: E402

KINDS = ("python", "subspan")
CITATION = re.compile(r"\[((?:[^\[\]]|\\[\[\]])*)\]\[(" + LABEL_BODY + r")\]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])")


@dataclass
class UseText:
    file: str
    line: int
    sentence: str


@dataclass
class LongCitation:
    label: str
    lines: int
    start: int
    end: int
    whole: str  # the reason listed in whole-definitions.yaml, "" when not listed
    uses: list[UseText]


def block_of(lines: list[str], index: int, skip: frozenset[int]) -> str:
    """The text a use sits in: its table cell (a table row), else its paragraph or list item."""
    line = lines[index]
    if line.lstrip().startswith("|"):
        return line
    first = index
    while first > 0 and lines[first - 1].strip() and first - 1 not in skip and not is_item(lines[first]):
        if lines[first - 1].lstrip().startswith(("|", "#")):
            break
        first -= 1
    last = index
    while last + 1 < len(lines) and lines[last + 1].strip() and last + 1 not in skip and not is_item(lines[last + 1]):
        last += 1
    return " ".join(part.strip() for part in lines[first : last + 1])


def is_item(line: str) -> bool:
    return bool(re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line))


def sentence_of(block: str, label: str) -> str:
    """The sentence (or table cell) of `block` that cites `label`, citations reduced to their
    text, the cited one marked «…»."""
    marker = "\0"
    found = []

    def reduce(match: re.Match[str]) -> str:
        text = match.group(1)
        if unescape(match.group(2)) == label and not found:
            found.append(True)
            return f"«{text}»{marker}"
        return text

    reduced = CITATION.sub(reduce, block)
    if reduced.lstrip().startswith("|"):
        parts = [cell.strip() for cell in reduced.strip().strip("|").split("|")]
    else:
        parts = SENTENCE_END.split(reduced)
    chosen = next((part for part in parts if marker in part), reduced)
    if reduced.lstrip().startswith("|") and parts and chosen != parts[0]:
        chosen = f"{parts[0]} | … {chosen}"  # a table cell, after the row's first cell (what the row is about)
    return re.sub(r"\s+", " ", chosen.replace(marker, "")).strip()


def whole_reasons(root: Path) -> dict[str, str]:
    import yaml

    path = root / WHOLE_PATH
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in data.items()}


def collect(root: Path, over: int) -> tuple[list[LongCitation], dict[str, int]]:
    index = load_index(root)
    if index is None:
        raise SystemExit(f"{root}: no evidence/index.json")
    whole = whole_reasons(root)
    pages: dict[str, list[str]] = {}
    skips: dict[str, frozenset[int]] = {}
    found: list[LongCitation] = []
    python = [r for r in index.records if r.kind in KINDS]
    used = [r for r in python if any(u.file.endswith(".md") for u in r.uses)]
    for record in used:
        length = record.end - record.start + 1
        if length <= over:
            continue
        uses = []
        for use in (u for u in record.uses if u.file.endswith(".md")):
            if use.file not in pages:
                text = (root / use.file).read_text(encoding="utf-8")
                pages[use.file], skips[use.file] = text.splitlines(), code_lines(text)
            block = block_of(pages[use.file], use.line - 1, skips[use.file])
            uses.append(UseText(use.file, use.line, sentence_of(block, record.label)))
        found.append(LongCitation(record.label, length, record.start, record.end, whole.get(record.label, ""), uses))
    found.sort(key=lambda c: (-c.lines, c.label))
    md_uses = sum(1 for r in used for u in r.uses if u.file.endswith(".md"))
    summary = {
        "over": over,
        "check_threshold": LONG_SPAN,
        "python_citations": len(python),
        "used_in_markdown": len(used),
        "markdown_uses": md_uses,
        "long": len(found),
        "long_listed_whole": sum(1 for c in found if c.whole),
        "long_uses": sum(len(c.uses) for c in found),
        "long_over_check_threshold": sum(1 for c in found if c.lines > LONG_SPAN),
    }
    return found, summary


def render_text(found: list[LongCitation], summary: dict[str, int]) -> str:
    share = 100 * summary["long"] / max(1, summary["used_in_markdown"])
    out = [
        f"{summary['long']} of {summary['used_in_markdown']} Python citations used in Markdown span more than "
        f"{summary['over']} lines ({share:.1f} %), {summary['long_listed_whole']} of them listed in {WHOLE_PATH}; "
        f"{summary['long_uses']} of {summary['markdown_uses']} Markdown uses; "
        f"{summary['long_over_check_threshold']} over the check's {summary['check_threshold']}-line limit.",
        "",
    ]
    for citation in found:
        listed = " [whole: listed]" if citation.whole else ""
        out.append(f"{citation.lines:4d} lines  {citation.label}  (L{citation.start}-L{citation.end}){listed}")
        for use in citation.uses:
            out.append(f"      {use.file}:{use.line}: {use.sentence}")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="the skill root (default: this repository)")
    parser.add_argument("--over", type=int, default=100, help="list citations longer than this many lines")
    parser.add_argument("--unlisted", action="store_true", help="only citations not in whole-definitions.yaml")
    parser.add_argument("--format", choices=("text", "json", "tsv"), default="text")
    args = parser.parse_args()
    found, summary = collect(args.root.resolve(), args.over)
    if args.unlisted:
        found = [c for c in found if not c.whole]
    if args.format == "json":
        print(json.dumps({"summary": summary, "citations": [asdict(c) for c in found]}, indent=2, ensure_ascii=False))
    elif args.format == "tsv":
        print("lines\tlabel\tlisted\tuse\tsentence")
        for c in found:
            for u in c.uses:
                print(f"{c.lines}\t{c.label}\t{'yes' if c.whole else 'no'}\t{u.file}:{u.line}\t{u.sentence}")
    else:
        sys.stdout.write(render_text(found, summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
