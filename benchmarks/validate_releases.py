#!/usr/bin/env python3
"""Check the release matrix (evidence/releases.json) against an independent re-computation.

    python3 benchmarks/validate_releases.py --wheels /work/wheels [--root REPO]

For every wheel in --wheels (read in place with zipfile, never extracted), EVERY citation of
evidence/index.json gets a status and a span computed here, from the rules alone:

- python anchors ("Name", "Class.attr", optionally "#n") are found by walking `ast.parse` output:
  module and class bodies, and the bodies of if/try/with blocks at the same prefix (never function
  bodies); a span runs from the first decorator (or the node) to its end_lineno;
- sub-spans ("Symbol@L<a>-L<b>", lines a..b of the definition): the definition as above, then the
  cited lines inside it (trailing whitespace stripped) as for a line range, offsets counted from
  the definition's first line; failing that, the same offsets when the definition still has them;
- yaml anchors ("a.b[0].c") are found by walking `yaml.compose` (SafeLoader) nodes;
- markdown anchors ("#slug") by ATX headings outside fenced code, GitHub slugs, "-1", "-2" for
  repeats; a section ends before the next heading of its level or above, blank lines trimmed;
- a whole file is lines 1..n;
- a line range: the window of the same width whose fingerprint is the pinned one, nearest the
  pinned place (earlier first on a tie); else the lines aligned by their hashes (the record's
  line_hashes: sha256 of each line stripped, first 8 hex): the longest run of consecutive cited
  lines in the file (earliest in the file on a tie, then earliest in the cited lines), found at
  exactly one place, not only blank lines; difflib's matching blocks of the cited lines against the
  file from (run - its offset - width) to (run + width - offset + width); the span from the first
  to the last matched line, widened by the unmatched cited lines before and after; kept when
  2*matched / (width + span) >= 0.6;
- status: not-shipped (path's first folder is not a top-level folder of the wheel), missing (no
  such file, not UTF-8, does not parse, anchor absent or ambiguous), unchanged (same span and
  fingerprint), moved (same fingerprint, other span), changed (fingerprint differs).

Statuses AND spans are compared with releases.json (a moved or changed citation's recorded span,
an unchanged one's pinned span); every disagreement is listed, per kind, and every citation the
matrix calls unchanged/moved whose recomputed fingerprint differs is counted separately.
This file shares no code with scripts/omni_skill (standard library and pyyaml only).
Wheels are matched to releases by METADATA version (sha256 checked too); each distinct Python text
is parsed once, over a process pool. Exit status: 1 on any disagreement, fingerprint mismatch or
wheel/release mismatch, else 0.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import sys
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("python", "subspan", "yaml", "markdown", "lines", "file")
GOOD = ("unchanged", "moved")


# ---------------------------------------------------------------- fingerprints


def fingerprint(lines: list[str], start: int, end: int) -> str:
    body = "\n".join(line.rstrip() for line in lines[start - 1 : end])
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- python


def _node_span(node: ast.AST) -> tuple[int, int]:
    first = node.lineno
    decorators = getattr(node, "decorator_list", None) or []
    if decorators:
        first = min(d.lineno for d in decorators)
    return first, node.end_lineno


Spans = list[tuple[tuple[int, int], tuple[int, int]]]  # [(sort key, span)]


def _py_definitions(body: list[ast.stmt], prefix: str, out: dict[str, Spans]) -> None:
    """Collect name -> [(sort key, span)] over a statement list."""

    def add(name: str, node: ast.AST) -> None:
        out.setdefault(prefix + name, []).append(((node.lineno, node.col_offset), _node_span(node)))

    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node.name, node)
        elif isinstance(node, ast.ClassDef):
            add(node.name, node)
            _py_definitions(node.body, prefix + node.name + ".", out)
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name):
                add(node.target.id, node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    add(target.id, node)
                elif isinstance(target, ast.Tuple):
                    for elt in target.elts:
                        if isinstance(elt, ast.Name):
                            add(elt.id, node)
        elif isinstance(node, ast.If):
            _py_definitions(node.body, prefix, out)
            _py_definitions(node.orelse, prefix, out)
        elif isinstance(node, ast.Try):
            _py_definitions(node.body, prefix, out)
            for handler in node.handlers:
                _py_definitions(handler.body, prefix, out)
            _py_definitions(node.orelse, prefix, out)
            _py_definitions(node.finalbody, prefix, out)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            _py_definitions(node.body, prefix, out)


def python_definitions(text: str) -> dict[str, list[tuple[int, int]]] | None:
    """Qualified name -> spans of its definitions in source order; None on a syntax error."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found: dict[str, list] = {}
    _py_definitions(tree.body, "", found)
    return {name: [span for _, span in sorted(hits)] for name, hits in found.items()}


def python_span(defs: dict[str, list[tuple[int, int]]] | None, anchor: str) -> tuple[int, int] | None:
    if defs is None:
        return None
    name, sep, nth = anchor.partition("#")
    spans = defs.get(name, [])
    if not sep:
        return spans[0] if len(spans) == 1 else None
    if not nth.isdigit() or not 1 <= int(nth) <= len(spans):
        return None
    return spans[int(nth) - 1]


# ---------------------------------------------------------------- yaml


def _yaml_steps(anchor: str) -> list[int | str] | None:
    """'a.b[0].c' -> ['a', 'b', 0, 'c']; None when malformed."""
    steps: list[int | str] = []
    for part in anchor.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if not m:
            return None
        steps.append(m.group(1))
        steps.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return steps


def yaml_root(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def yaml_span(root: yaml.Node | None, lines: list[str], anchor: str) -> tuple[int, int] | None:
    steps = _yaml_steps(anchor)
    if steps is None or root is None:
        return None
    node = root
    start_node = node
    for step in steps:
        if isinstance(step, int):
            if not isinstance(node, yaml.SequenceNode) or len(node.value) <= step:
                return None
            node = node.value[step]
            start_node = node
        else:
            if not isinstance(node, yaml.MappingNode):
                return None
            hits = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step]
            if len(hits) != 1:
                return None
            start_node, node = hits[0]
    start = start_node.start_mark.line + 1
    mark = node.end_mark
    if mark.line >= len(lines) or not lines[mark.line][: mark.column].strip():
        end = mark.line
    else:
        end = mark.line + 1
    end = max(start, min(end, len(lines)))
    while end > start and (not lines[end - 1].strip() or lines[end - 1].strip().startswith("#")):
        end -= 1
    return start, end


# ---------------------------------------------------------------- markdown


def md_slug(title: str) -> str:
    text = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return text.replace(" ", "-")


def md_sections(lines: list[str]) -> dict[str, tuple[int, int]]:
    heads: list[tuple[int, int, str]] = []  # (level, 1-based line, title)
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if len(line) - len(stripped) < 4 and stripped[:3] in ("```", "~~~"):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence is None:
            m = re.match(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$", line)
            if m:
                title = re.sub(r"`([^`]*)`", r"\1", m.group(2) or "")
                heads.append((len(m.group(1)), number, title))
    found: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for k, (level, line, title) in enumerate(heads):
        end = next((other - 1 for lv, other, _ in heads[k + 1 :] if lv <= level), len(lines))
        while end > line and not lines[end - 1].strip():
            end -= 1
        base = md_slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found[base if n == 0 else f"{base}-{n}"] = (line, end)
    return found


# ---------------------------------------------------------------- line ranges


def line_hash(line: str) -> str:
    return hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:8]


def longest_run(now: list[str], cited: list[str]) -> tuple[int, int, int]:
    """(start in now, start in cited, length) of the longest common run of consecutive lines; on a
    tie the earliest in `now`, then in `cited`. Dynamic programming over the equal pairs only."""
    where: dict[str, list[int]] = {}
    for j, h in enumerate(cited):
        where.setdefault(h, []).append(j)
    best = (0, 0, 0)
    previous: dict[int, int] = {}
    for i, h in enumerate(now):
        current: dict[int, int] = {}
        for j in where.get(h, []):
            current[j] = previous.get(j - 1, 0) + 1
            size = current[j]
            key = (i - size + 1, j - size + 1)
            if size > best[2] or (size == best[2] and key < best[:2]):
                best = (key[0], key[1], size)
        previous = current
    return best


def align_lines(cited: list[str], lines: list[str]) -> tuple[tuple[int, int], float] | None:
    import difflib

    now = [line_hash(x) for x in lines]
    at, offset, size = longest_run(now, cited)
    if size == 0 or all(h == line_hash("") for h in cited[offset : offset + size]):
        return None
    run = cited[offset : offset + size]
    if sum(1 for i in range(len(now) - size + 1) if now[i : i + size] == run) != 1:
        return None
    width = len(cited)
    low, high = max(0, at - offset - width), min(len(now), at + width - offset + width)
    blocks = [
        b for b in difflib.SequenceMatcher(None, cited, now[low:high], autojunk=False).get_matching_blocks() if b.size
    ]
    matched = sum(b.size for b in blocks)
    start = max(0, low + blocks[0].b - blocks[0].a)
    end = min(len(now) - 1, low + blocks[-1].b + blocks[-1].size - 1 + (width - blocks[-1].a - blocks[-1].size))
    score = 2 * matched / (width + end - start + 1)
    return ((start + 1, end + 1), score) if score >= 0.6 else None


def range_span(lines: list[str], home: int, width: int, digest: str, cited: list[str]) -> tuple[int, int] | None:
    """Where a `width`-line range that sat at 1-based `home` is in `lines` (see the module doc)."""
    stripped = [x.rstrip() for x in lines]
    order = sorted(range(0, len(lines) - width + 1), key=lambda i: (abs(i - (home - 1)), i))
    for i in order:
        if hashlib.sha256("\n".join(stripped[i : i + width]).encode("utf-8")).hexdigest() == digest:
            return i + 1, i + width
    found = align_lines(cited, lines) if cited else None
    return found[0] if found else None


# ---------------------------------------------------------------- wheels


class Wheel:
    def __init__(self, path: Path):
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        self.tops = {n.split("/", 1)[0] for n in self.names if "/" in n}
        self.version = None
        for n in self.names:
            if n.count("/") == 1 and n.endswith(".dist-info/METADATA"):
                for line in self.zip.read(n).decode("utf-8").splitlines():
                    if line.startswith("Version:"):
                        self.version = line.split(":", 1)[1].strip()
                        break
        self.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()

    def text(self, member: str) -> str | None:
        if member not in self.names:
            return None
        try:
            return self.zip.read(member).decode("utf-8")
        except UnicodeDecodeError:
            return None


class Parsed:
    """One file text, parsed at most once per kind (shared by every wheel holding the same text)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines()
        self.python: dict | None = None
        self.python_done = False
        self._yaml = None
        self._yaml_done = False

    def python_spans(self) -> dict | None:
        if not self.python_done:
            self.python, self.python_done = python_definitions(self.text), True
        return self.python

    def span(self, record: dict) -> tuple[int, int] | None:
        kind, anchor = record["kind"], record["anchor"]
        if kind == "file":
            return 1, max(1, len(self.lines))
        if kind == "python":
            return python_span(self.python_spans(), anchor)
        if kind == "subspan":
            symbol, _, offsets = anchor.partition("@")
            whole = python_span(self.python_spans(), symbol)
            if whole is None:
                return None
            first, _, last = offsets[1:].partition("-L")
            first_n, last_n = int(first), int(last or first)
            inside = self.lines[whole[0] - 1 : whole[1]]
            width = last_n - first_n + 1
            found = range_span(inside, first_n, width, record["fingerprint"], record.get("line_hashes", "").split())
            if found is None and last_n <= len(inside):
                found = (first_n, last_n)
            return None if found is None else (whole[0] + found[0] - 1, whole[0] + found[1] - 1)
        if kind == "lines":
            width = record["end"] - record["start"] + 1
            cited = record.get("line_hashes", "").split()
            return range_span(self.lines, record["start"], width, record["fingerprint"], cited)
        if kind == "markdown":
            return md_sections(self.lines).get(anchor.lstrip("#"))
        if not self._yaml_done:
            self._yaml, self._yaml_done = yaml_root(self.text), True
        return yaml_span(self._yaml, self.lines, anchor)


def parse_python_texts(docs: list[Parsed]) -> None:
    """Fill in the definitions of every text, over a process pool when there is more than one CPU."""
    texts = [d.text for d in docs]
    workers = min(os.cpu_count() or 1, 8)
    if workers > 1 and len(texts) > 16:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(python_definitions, texts, chunksize=8))
    else:
        results = [python_definitions(t) for t in texts]
    for doc, defs in zip(docs, results, strict=True):
        doc.python, doc.python_done = defs, True


def load(wheel: Wheel, path: str, files: dict[str, Parsed | None], parsed: dict[str, Parsed]) -> Parsed | None:
    if path not in files:
        text = wheel.text(path)
        if text is not None and text not in parsed:
            parsed[text] = Parsed(text)
        files[path] = None if text is None else parsed[text]
    return files[path]


def status_of(
    wheel: Wheel, record: dict, files: dict[str, Parsed | None], parsed: dict[str, Parsed]
) -> tuple[str, str | None, str]:
    """(status, recomputed fingerprint or None, span "L<a>-L<b>" or ""). files: this wheel's
    path -> Parsed; parsed: text -> Parsed."""
    path = record["path"]
    if "/" not in path or path.split("/", 1)[0] not in wheel.tops:
        return "not-shipped", None, ""
    doc = load(wheel, path, files, parsed)
    if doc is None:
        return "missing", None, ""
    span = doc.span(record)
    if span is None:
        return "missing", None, ""
    fp = fingerprint(doc.lines, *span)
    shown = f"L{span[0]}-L{span[1]}" if span[0] != span[1] else f"L{span[0]}"
    if fp != record["fingerprint"]:
        return "changed", fp, shown
    if span == (record["start"], record["end"]) and not offsets_moved(doc, record, span):
        return "unchanged", fp, shown
    return "moved", fp, shown


def offsets_moved(doc: Parsed, record: dict, span: tuple[int, int]) -> bool:
    """A sub-span's lines sit at other offsets of its definition (its label changes), even where
    their line numbers in the file are the same."""
    if record["kind"] != "subspan":
        return False
    symbol, _, offsets = record["anchor"].partition("@")
    whole = python_span(doc.python_spans(), symbol)
    first = int(offsets[1:].partition("-L")[0])
    return whole is not None and span[0] - whole[0] + 1 != first


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", required=True, type=Path, help="folder holding the release wheels (*.whl)")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    records = json.loads((args.root / "evidence/index.json").read_text())["records"]
    matrix = json.loads((args.root / "evidence/releases.json").read_text())
    releases = {r["version"]: r for r in matrix["releases"]}
    cited = [r for r in records if r["kind"] in KINDS]
    wheels = sorted(args.wheels.glob("*.whl"))
    if not wheels:
        print(f"no wheels in {args.wheels}", file=sys.stderr)
        return 2

    rows, disagreements, fp_bad, problems = [], [], [], []
    by_kind: dict[str, list[int]] = {}  # kind -> [compared, disagreeing] over every release
    seen_versions = set()
    parsed: dict[str, Parsed] = {}
    loaded = []
    for wpath in wheels:  # read every cited file once, then parse each distinct Python text once
        wheel = Wheel(wpath)
        seen_versions.add(wheel.version)
        files: dict[str, Parsed | None] = {}
        for rec in cited:
            if "/" in rec["path"] and rec["path"].split("/", 1)[0] in wheel.tops:
                load(wheel, rec["path"], files, parsed)
        loaded.append((wheel, files))
    python_paths = {r["path"] for r in cited if r["kind"] in ("python", "subspan")}
    python_docs = {id(d): d for _, files in loaded for p, d in files.items() if d is not None and p in python_paths}
    parse_python_texts(list(python_docs.values()))

    for wheel, files in loaded:
        rel = releases.get(wheel.version)
        if rel is None:
            problems.append(f"{wheel.path.name}: version {wheel.version} not in releases.json")
            continue
        if rel.get("sha256") != wheel.sha256:
            problems.append(f"{wheel.path.name}: sha256 differs from releases.json ({rel.get('sha256')})")
        n = agree = ours_good = theirs_good = 0
        for rec in cited:
            label = rec["label"]
            theirs = rel["statuses"].get(label)
            ours, fp, span = status_of(wheel, rec, files, parsed)
            pinned = f"L{rec['start']}-L{rec['end']}" if rec["start"] != rec["end"] else f"L{rec['start']}"
            their_span = pinned if theirs == "unchanged" else rel["spans"].get(label, "")
            our_span = span if ours in ("unchanged", "moved", "changed") else ""
            n += 1
            ours_good += ours in GOOD
            theirs_good += theirs in GOOD
            by_kind.setdefault(rec["kind"], [0, 0])[0] += 1
            if ours == theirs and our_span == their_span:
                agree += 1
            else:
                by_kind[rec["kind"]][1] += 1
                disagreements.append((wheel.version, label, f"{ours} {our_span}", f"{theirs} {their_span}"))
            if theirs in GOOD and fp != rec["fingerprint"]:
                fp_bad.append((wheel.version, label, ours, theirs))
        rows.append((wheel.version, n, agree, n - agree, ours_good, theirs_good))
    for version in sorted(set(releases) - seen_versions):
        problems.append(f"release {version} in releases.json has no wheel in {args.wheels}")
    elapsed = time.perf_counter() - t0

    head = ("release", "compared", "agree", "disagree", "u+m ours", "u+m theirs")
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    fmt = "  ".join(("{:<%d}" if i == 0 else "{:>%d}") % w for i, w in enumerate(widths))
    print(f"citations: {len(cited)} (of {len(records)} records), wheels: {len(wheels)}; statuses and spans compared")
    print(
        "per kind (over every release): "
        + ", ".join(f"{k} {v[0]} compared, {v[1]} disagree" for k, v in sorted(by_kind.items()))
    )
    print(fmt.format(*head))
    for row in rows:
        print(fmt.format(*row))
    total = [sum(r[i] for r in rows) for i in range(1, 6)]
    print(fmt.format("total", *total))
    print(f"\ndisagreements: {len(disagreements)}")
    for version, label, ours, theirs in disagreements:
        print(f"  {version}  {label}  ours={ours}  theirs={theirs}")
    print(f"\nmatrix says unchanged/moved but recomputed fingerprint differs: {len(fp_bad)}")
    for version, label, ours, theirs in fp_bad:
        print(f"  {version}  {label}  ours={ours}  theirs={theirs}")
    for p in problems:
        print(f"problem: {p}")
    print(f"\ntime: {elapsed:.2f}s")
    return 1 if disagreements or fp_bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
