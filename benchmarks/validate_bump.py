#!/usr/bin/env python3
"""Check `bump`'s classifications on real engine history against an independent resolver.

    python3 benchmarks/validate_bump.py --source /path/to/vllm-omni --to REV [--to REV ...]

For each REV, both directions are checked:
- backward: the skill's index (at the pinned revision) classified at REV;
- forward: an index built at REV (every label that resolves there) classified at the pinned revision.
The independent resolver shares no code with the package's anchors: Python spans come from a
fresh `ast.walk` with a parent map, YAML spans from `yaml.compose` walked here, Markdown spans from
a line scan. From it each citation gets an expected status, compared with bump's; and every
citation bump calls unchanged or moved has its old and new text compared byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.bump import classify_all  # noqa: E402
from omni_skill.index import EvidenceIndex, load_index  # noqa: E402
from omni_skill.provenance import load_provenance  # noqa: E402
from omni_skill.resolve import resolve_label  # noqa: E402
from omni_skill.source import Source  # noqa: E402


def show(repo: Path, rev: str, path: str) -> str | None:
    done = subprocess.run(["git", "--git-dir", str(repo), "show", f"{rev}:{path}"], capture_output=True)
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def py_span(text: str, anchor: str) -> tuple[int, int] | None | str:
    name, _, nth = anchor.partition("#")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    hits = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                names += [e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(e, ast.Name)]
        if not names:
            continue
        chain, up = [], parents.get(node)
        inside_function = False
        while up is not None and not isinstance(up, ast.Module):
            if isinstance(up, ast.ClassDef):
                chain.append(up.name)
            elif isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inside_function = True
            up = parents.get(up)
        if inside_function:
            continue
        qual = ".".join([*reversed(chain), ""])
        for n in names:
            if qual + n == name:
                start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                hits.append((start, node.end_lineno))
    hits.sort()
    if not hits:
        return None
    if nth:
        return hits[int(nth) - 1] if int(nth) <= len(hits) else None
    return hits[0] if len(hits) == 1 else "ambiguous"


def yaml_span(text: str, anchor: str) -> tuple[int, int] | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    first = None
    for step in re.findall(r"\[\d+\]|[^.\[\]]+", anchor):
        if step.startswith("["):
            index = int(step[1:-1])
            if not isinstance(node, yaml.SequenceNode) or index >= len(node.value):
                return None
            node = first = node.value[index]
        else:
            if not isinstance(node, yaml.MappingNode):
                return None
            pairs = [(k, v) for k, v in node.value if getattr(k, "value", None) == step]
            if len(pairs) != 1:
                return None
            first, node = pairs[0]
    lines = text.splitlines()
    end = (
        node.end_mark.line + (0 if not lines[node.end_mark.line][: node.end_mark.column].strip() else 1)
        if node.end_mark.line < len(lines)
        else len(lines)
    )
    while end > first.start_mark.line + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return first.start_mark.line + 1, end


def md_span(text: str, anchor: str) -> tuple[int, int] | None:
    lines = text.splitlines()
    heads, fence, seen = [], False, {}
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"`", "", m.group(2))
            slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            heads.append((len(m.group(1)), i + 1, slug if n == 0 else f"{slug}-{n}"))
    for k, (level, line, slug) in enumerate(heads):
        if "#" + slug == anchor:
            end = next((l2 - 1 for lv, l2, _ in heads[k + 1 :] if lv <= level), len(lines))
            while end > line and not lines[end - 1].strip():
                end -= 1
            return line, end
    return None


def span_of(text: str, path: str, anchor: str) -> tuple[int, int] | None | str:
    if not anchor:
        return 1, max(1, len(text.splitlines()))
    if re.match(r"^L\d+(-L\d+)?$", anchor):
        return None  # line ranges are re-found by text; checked through the text comparison below
    if path.endswith(".py"):
        return py_span(text, anchor)
    if path.endswith((".yaml", ".yml")):
        return yaml_span(text, anchor)
    if path.endswith(".md"):
        return md_span(text, anchor)
    return None


def body(text: str, span: tuple[int, int]) -> list[str]:
    return [line.rstrip() for line in text.splitlines()[span[0] - 1 : span[1]]]


def expected(repo: Path, old_rev: str, new_rev: str, record) -> str:
    old_text = show(repo, old_rev, record.path)
    new_text = show(repo, new_rev, record.path)
    old_body = body(old_text, (record.start, record.end)) if old_text else None
    if new_text is None:
        return "missing-or-relocated"
    if record.kind in ("lines", "subspan"):  # re-found by text: only the text check below applies
        return "lines"
    span = span_of(new_text, record.path, record.anchor)
    if span is None or span == "ambiguous":
        return "missing-or-relocated"
    if body(new_text, span) != old_body:
        return "changed"
    return "unchanged" if span == (record.start, record.end) else "moved"


def compare(repo: Path, root: Path, index: EvidenceIndex, old_rev: str, new_rev: str) -> tuple[str, list[str]]:
    new, old = Source(repo, new_rev), Source(repo, old_rev)
    results = classify_all(root, index, new, old)
    problems = []
    for item, record in zip(results, index.records, strict=True):
        entry = item.entry
        want = expected(repo, old.commit, new.commit, record)
        got = entry.status
        if entry.status in ("unchanged", "moved", "relocated") and item.record is not None:
            new_label_path = item.record.path
            new_text = show(repo, new.commit, new_label_path)
            old_text = show(repo, old.commit, record.path)
            if body(new_text, (item.record.start, item.record.end)) != body(old_text, (record.start, record.end)):
                problems.append(f"TEXT DIFFERS but bump says {got}: {record.label}")
        if want == "lines":
            continue
        agree = want == got or (want == "missing-or-relocated" and got in ("missing", "relocated"))
        if not agree:
            problems.append(f"{record.label}: bump {got}, independent {want}")
    tally: dict[str, int] = {}
    for item in results:
        tally[item.entry.status] = tally.get(item.entry.status, 0) + 1
    return f"{len(results)} citations {tally}", problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--to", action="append", required=True)
    args = parser.parse_args()
    provenance = load_provenance(ROOT)
    index = load_index(ROOT)
    pinned = provenance.revision
    for rev in args.to:
        target = Source(args.source, rev)
        count, problems = compare(args.source, ROOT, index, pinned, target.commit)
        print(f"backward {pinned[:12]} -> {target.commit[:12]}: {count}, {len(problems)} disagreements")
        for p in problems:
            print("   ", p)
        records = []
        for record in index.records:
            res = resolve_label(record.label, target)
            if hasattr(res, "fingerprint"):
                res.uses = record.uses
                records.append(res)
        forward = EvidenceIndex(revision=target.commit, records=records)
        count, problems = compare(args.source, ROOT, forward, target.commit, pinned)
        print(f"forward  {target.commit[:12]} -> {pinned[:12]}: {count}, {len(problems)} disagreements")
        for p in problems:
            print("   ", p)


if __name__ == "__main__":
    main()
