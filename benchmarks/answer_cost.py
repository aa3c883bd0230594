"""What an agent reads to answer a question that names a thing, by the route SKILL.md gives.

    python3 benchmarks/answer_cost.py [--names N] [--sections K]

For each name (every search-space setting, plus a fixed list of flags, symbols and env vars the
pages discuss), the characters of: SKILL.md, `find NAME`, then `read PAGE:LINE` of the first K
places `find` ranks (default 2) — against reading the same places' page files whole, as an agent
that opens the files `find` names would. Prints the median and the 90th percentile of each route,
and for the route without a name (entry page, then one page) `read PAGE` against the page file.
For a task without a name, each row of a branch entry page's task table: SKILL.md, `read` of the
entry page, then `read` of the first reference the row links, and of every one (a `PAGE#anchor`
link reads that section, a bare page link the whole page; data files and entry pages left out);
and the route SKILL.md gives: `read PAGE --toc` of a bare first link (a section link is read as
is), plus the median section of the reference pages, the price of one section chosen from it.
Runs the verbs in process (no interpreter start), so it measures characters, not time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from omni_skill.cli import main  # noqa: E402
from omni_skill.find import find  # noqa: E402
from omni_skill.readsection import outline  # noqa: E402

EXTRA = [
    "--deploy-config",
    "--stage-overrides",
    "--stage-init-timeout",
    "StagePool.pick",
    "Orchestrator",
    "async_chunk",
    "diffusion_batch_size",
    "gpu_memory_utilization",
    "devices",
    "qwen3_omni_moe",
    "VLLM_OMNI_INPUT_WAIT_TIMEOUT_S",
    "/v1/audio/speech",
    "OmniConnectorBase",
    "enable_prefix_caching",
    "cache_backend",
]


def output(argv: list[str]) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    return buffer.getvalue()


def names(limit: int) -> list[str]:
    import yaml

    space = yaml.safe_load((ROOT / "references/architecture-search/search-space.yaml").read_text())
    settings = [s["name"] for s in space.get("settings", []) if isinstance(s, dict) and "name" in s]
    return (settings[:limit] if limit else settings) + EXTRA


LINK = re.compile(r"\]\((?P<target>[^)\s]+\.md(?:#[^)\s]+)?)\)")


def task_rows(entry: Path) -> list[list[str]]:
    """For each row of the entry page's task table, the page targets (`PAGE` or `PAGE#anchor`,
    relative to the skill root) its links name; rows that link only entry pages are left out."""
    rows = []
    for line in entry.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|") or line.startswith(("| task", "|---")):
            continue
        targets = []
        for match in LINK.finditer(line):
            page, _, anchor = match["target"].partition("#")
            rel = (entry.parent / page).resolve().relative_to(ROOT).as_posix()
            if not rel.endswith("/README.md"):
                targets.append(f"{rel}#{anchor}" if anchor else rel)
        if targets:
            rows.append(list(dict.fromkeys(targets)))
    return rows


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=0, help="search-space settings to take (0: all)")
    parser.add_argument("--sections", type=int, default=2, help="places read per name (default 2)")
    args = parser.parse_args(argv)
    skill_md = len((ROOT / "SKILL.md").read_text(encoding="utf-8"))
    routed, whole, unanswered = [], [], []
    for name in names(args.names):
        result = find(ROOT, name)
        if not result.found:
            unanswered.append(name)
            continue
        found = len(output(["find", "--root", str(ROOT), "--", name]))  # data entries alone may answer
        places = result.places[: args.sections]
        sections = sum(len(output(["read", "--root", str(ROOT), f"{p.file}:{p.line}"])) for p in places)
        files = sum(len((ROOT / f).read_text(encoding="utf-8")) for f in dict.fromkeys(p.file for p in places))
        routed.append(skill_md + found + sections)
        whole.append(skill_md + found + files)

    def line(what: str, values: list[int]) -> str:
        values = sorted(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        return f"  {what:<44} median {statistics.median(values):>8,.0f}   p90 {p90:>8,}"

    print(f"{len(routed)} names found ({len(unanswered)} not: {', '.join(unanswered) or '-'})")
    print(f"characters read per name (SKILL.md {skill_md:,} included):")
    print(line(f"find + read of the first {args.sections} places", routed))
    print(line(f"find + the first {args.sections} places' page files", whole))
    print(line("the same, without SKILL.md", [v - skill_md for v in routed]))
    entries = sorted((ROOT / "references").glob("*/README.md"))
    first, every, toc = [], [], []
    revision = json.loads((ROOT / "provenance.json").read_text(encoding="utf-8"))["revision"]
    section_sizes = [
        entry.chars
        for page in sorted((ROOT / "references").rglob("*.md"))
        if page.parent.name != "releases"
        for entry in outline(ROOT, page.relative_to(ROOT).as_posix(), revision).entries
    ]
    median_section = int(statistics.median(section_sizes))
    for entry in entries:
        entry_read = skill_md + len(output(["read", "--root", str(ROOT), str(entry.relative_to(ROOT))]))
        for targets in task_rows(entry):
            sizes = [len(output(["read", "--root", str(ROOT), t])) for t in targets]
            first.append(entry_read + sizes[0])
            every.append(entry_read + sum(sizes))
            head = targets[0]
            toc_chars = len(output(["read", "--root", str(ROOT), head, "--toc"])) if "#" not in head else 0
            route = sizes[0] if "#" in head else toc_chars + median_section
            toc.append(entry_read + route)
    print(f"a task from an entry page's table (SKILL.md, read entry), {len(first)} rows of {len(entries)} entries:")
    print(line("+ read the row's first link", first))
    print(line("+ read every link of the row", every))
    print(line(f"+ --toc of the first link + one section ({median_section:,})", toc))
    pages = [p for p in sorted((ROOT / "references").rglob("*.md")) if p.parent.name != "releases"]
    print(f"a whole page, over {len(pages)} pages (generated release pages left out):")
    print(line("read PAGE", [len(output(["read", "--root", str(ROOT), str(p.relative_to(ROOT))])) for p in pages]))
    print(line("the page file", [len(p.read_text(encoding="utf-8")) for p in pages]))
    return 0


if __name__ == "__main__":
    sys.exit(main_())
