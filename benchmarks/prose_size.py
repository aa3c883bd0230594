#!/usr/bin/env python3
"""How much an agent reads: prose characters per reference page (the text above the
`<!-- citations -->` line), approximate tokens (characters / 4), the same without the inline
citation labels, the total and the largest page;
which citation labels are cited on more than two pages (restatement candidates: one fact should
live in one place); and the set of labels the skill cites, to compare before and after an edit.

    python3 benchmarks/prose_size.py [--root .] [--repeats N] [--json]
    python3 benchmarks/prose_size.py --save-labels /tmp/labels.txt      # before an edit
    python3 benchmarks/prose_size.py --compare-labels /tmp/labels.txt   # after: exit 1 if any dropped

The generated release page (references/serving-tuning/versions.md) is listed but left out of the
total. Labels are read from the Markdown pages and the data files the skill cites from (every
label the evidence index holds), not from the index itself, so the comparison works before
`resolve` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from omni_skill.labels import scan_markdown  # noqa: E402
from omni_skill.readsection import USE  # noqa: E402
from omni_skill.structure import prose  # noqa: E402

GENERATED_PREFIXES = (
    "references/serving-tuning/versions.md",
    "references/serving-tuning/release-notes.md",
    "references/serving-tuning/releases/",
)


def generated(rel: str) -> bool:
    return rel.startswith(GENERATED_PREFIXES)


def pages(root: Path) -> list[str]:
    found = [p.relative_to(root).as_posix() for p in sorted((root / "references").rglob("*.md"))]
    return found


def page_sizes(root: Path) -> dict[str, int]:
    return {rel: len(prose((root / rel).read_text(encoding="utf-8"))) for rel in pages(root)}


def page_label_chars(root: Path, rel: str) -> int:
    """Characters of `][src:…]` / `][rel:…]` label text inside one page's prose, found as
    `omni-skill read` finds the uses it prints as `[n]` instead."""
    return sum(len(m[0]) - len(m[1]) - 1 for m in USE.finditer(prose((root / rel).read_text(encoding="utf-8"))))


def label_chars(root: Path) -> int:
    """Label characters over the counted (not generated) pages."""
    return sum(page_label_chars(root, rel) for rel in pages(root) if not generated(rel))


def label_pages(root: Path) -> dict[str, set[str]]:
    """label -> pages (SKILL.md and references/*.md) that cite it."""
    found: dict[str, set[str]] = defaultdict(set)
    for rel in ["SKILL.md", *pages(root)]:
        for use in scan_markdown(rel, (root / rel).read_text(encoding="utf-8")).uses:
            found[use.text].add(rel)
    return found


def all_labels(root: Path) -> set[str]:
    """Labels cited by the Markdown pages, plus the index's labels that a data file cites."""
    labels = set(label_pages(root))
    index = root / "evidence" / "index.json"
    for record in json.loads(index.read_text(encoding="utf-8"))["records"] if index.exists() else []:
        if any(not use["file"].endswith(".md") for use in record["uses"]):
            labels.add(record["label"])
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--repeats", type=int, default=2, help="report labels cited on more than N pages")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save-labels", metavar="FILE")
    parser.add_argument("--compare-labels", metavar="FILE")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.save_labels:
        Path(args.save_labels).write_text("".join(f"{label}\n" for label in sorted(all_labels(root))))
        return 0
    if args.compare_labels:
        before = set(Path(args.compare_labels).read_text().split())
        now = all_labels(root)
        dropped, added = sorted(before - now), sorted(now - before)
        for label in dropped:
            print(f"dropped {label}")
        for label in added:
            print(f"added   {label}")
        print(f"{len(before)} labels before, {len(now)} now: {len(dropped)} dropped, {len(added)} added")
        return 1 if dropped else 0
    sizes = page_sizes(root)
    counted = {rel: n for rel, n in sizes.items() if not generated(rel)}
    total = sum(counted.values())
    largest = max(counted, key=lambda rel: counted[rel])
    repeated = {
        label: sorted(where - {"SKILL.md"})
        for label, where in label_pages(root).items()
        if len(where - {"SKILL.md"}) > args.repeats
    }
    if args.json:
        report = {
            "pages": sizes,
            "total": total,
            "total_tokens": total // 4,
            "largest": {"page": largest, "chars": counted[largest]},
            "repeated_labels": repeated,
        }
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    for rel, n in sizes.items():
        note = "  (generated, not in total)" if generated(rel) else ""
        words = n - page_label_chars(root, rel)
        print(f"{n:7d} chars {n // 4:6d} tokens {words:7d} without labels  {rel}{note}")
    print(f"{total:7d} chars {total // 4:6d} tokens  total of {len(counted)} pages")
    labels = label_chars(root)
    print(f"{total - labels:7d} chars without the inline citation labels ({labels} chars of labels)")
    print(f"largest: {largest} {counted[largest]} chars (~{counted[largest] // 4} tokens)")
    print(f"\nlabels cited on more than {args.repeats} reference pages: {len(repeated)}")
    for label, where in sorted(repeated.items(), key=lambda item: (-len(item[1]), item[0])):
        short = ", ".join(p.removeprefix("references/") for p in where)
        print(f"  {len(where)}  {label}\n       {short}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
