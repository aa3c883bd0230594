"""Claims that name something none of their cited spans contain: a worklist for precision.

    python3 benchmarks/claim_tokens.py --source /path/to/vllm-omni [--wheels DIR] [--page PAGE] [--limit N]

A claim (a sentence, table row or list item with citations, as `drift` and the audits count them)
is supported only when its cited spans show everything it asserts. This report checks the part a
program can: every code span in the claim (`--flag`, `name`, `Class.method`, `7680`, `/v1/path`,
`file.yaml`) should appear in the text of at least one of the claim's cited spans at the pinned
revision (a dotted name by its last segment, a flag also in its `snake_case` form, a path by its
file name). A claim with a missing token is not necessarily wrong, but an auditor reading only
the cited lines cannot see that part. Prints each such claim with its missing tokens, then the
count. Release citations (`rel:`) on a claim's first line are read from the release wheels when
`--wheels DIR` is given; links to other pages are not followed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.index import load_index  # noqa: E402
from omni_skill.pageclaims import page_claims  # noqa: E402
from omni_skill.source import Source  # noqa: E402

CODE = re.compile(r"`([^`]+)`")
SKIP = re.compile(r"^(omni-skill|python3?|vllm|pip|git|pytest)\b|\s{2,}|\$")  # commands, not engine names
FILLER = {"true", "false", "none", "null", "0", "1", "2", "...", "…"}


def forms(token: str) -> list[str]:
    """The spellings that count as the token appearing in code."""
    token = token.strip().strip("\"'").rstrip(":,.;()").removesuffix("()")
    if not token or token.lower() in FILLER:
        return []
    found = [token]
    if token.startswith("--"):
        found.append(token[2:].replace("-", "_"))
    if "/" in token and "." in token.rsplit("/", 1)[-1]:
        found.append(token.rsplit("/", 1)[-1])
    if "." in token and "/" not in token and not re.fullmatch(r"[\d.]+", token):
        found.append(token.rsplit(".", 1)[-1])
    if "=" in token:
        found += [part for part in re.split(r"\s*=\s*", token) if part]
    return found


WORDS = re.compile(r"--?[A-Za-z][\w-]*|[A-Za-z_][\w.]*|\d{2,}")


def pieces(token: str) -> list[str]:
    """A quoted message with elisions, or a comparison, is checked piece by piece; an expression
    (a call, a key with a value, a template) by its words."""
    parts = [p.strip() for p in re.split(r"…|\.\.\.|\s[<>]=?\s|\s==\s", token)]
    parts = [p for p in parts if len(p) > 3 or p.startswith("-")] or [token]
    if any(c in token for c in "(){}<>:@*"):
        parts = [w for p in parts for w in WORDS.findall(p) if len(w) > 2]
    return parts


def tokens(text: str) -> list[str]:
    words = []
    for span in CODE.findall(text):
        if SKIP.search(span):
            continue
        words += [w for w in re.split(r"\s*[,|]\s*|\s+(?:or|and|/)\s+", span) if w]
    return list(dict.fromkeys(words))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--wheels", type=Path, help="a folder of release wheels, for rel: citations")
    parser.add_argument("--page", help="only claims on this page (substring of its path)")
    parser.add_argument("--limit", type=int, default=0, help="print at most N claims (0: all)")
    args = parser.parse_args(argv)
    index = load_index(ROOT)
    source = Source(args.source, index.revision)
    records = {r.label: r for r in index.records}
    claims = [c for c in page_claims(ROOT, index) if c.file.endswith(".md")]
    if args.page:
        claims = [c for c in claims if args.page in c.file]
    releases: dict[str, dict] = {}
    wheels: dict[str, object] = {}
    if args.wheels:
        import json

        from omni_skill.engine import release_wheels

        wheels = release_wheels([args.wheels])
        data = json.loads((ROOT / "evidence/release-citations.json").read_text(encoding="utf-8"))
        releases = {r["label"]: r for r in data["records"]}
    flagged = 0
    shown = 0
    for claim in claims:
        text = ""
        first = (ROOT / claim.file).read_text(encoding="utf-8").splitlines()[claim.line - 1]
        for label in dict.fromkeys(re.findall(r"\]\[(rel:[^\]\s]+)\]", first)):
            rel = releases.get(label)
            if rel is not None and rel["release"] in wheels:
                lines = wheels[rel["release"]].lines(rel["path"])
                text += "\n".join(lines[rel["start"] - 1 : rel["end"]]) + f"\n{rel['path']}\n{rel['anchor']}\n"
        for label in claim.labels:
            record = records.get(label)
            if record is not None:
                lines = source.lines(record.path)
                text += "\n".join(lines[record.start - 1 : record.end]) + "\n"
                # the citation's own name and path: its link text names the cited definition
                text += f"{record.path}\n{record.anchor.split('@', 1)[0]}\n"
        missing = [
            t
            for t in tokens(claim.text)
            if any((f := forms(piece)) and not any(x in text for x in f) for piece in pieces(t))
        ]
        if missing:
            flagged += 1
            if not args.limit or shown < args.limit:
                shown += 1
                print(f"{claim.file}:{claim.line}  missing: {', '.join(missing)}")
    print(f"{flagged} of {len(claims)} claims name something none of their cited spans contain")
    return 0


if __name__ == "__main__":
    sys.exit(main())
