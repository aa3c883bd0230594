"""Per-release notes: for each release, what differs from the pinned revision that this skill
describes — the facts the skill mentions whose value or presence differs there, then a count of
everything else — as one short generated page an agent can read in a chat.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .facts import PIN, FactsFile, normalise

NOTES_DIR = "references/serving-tuning/releases"
NOTES_INDEX = "references/serving-tuning/release-notes.md"
MAX_ROWS = 26  # rows of differing facts per page (a page stays near 1.5k tokens)
CODE = re.compile(r"`([^`\n]{2,80})`")
# Kinds whose difference matters to a user's configuration, most asked first.
KIND_ORDER = (
    "flag",
    "config-field",
    "pipeline-wide-field",
    "reserved-key",
    "env",
    "pipeline",
    "deploy-file",
    "diffusion-model",
    "cache-backend",
    "connector",
    "attention-backend",
    "quantization-method",
    "endpoint",
    "entry-kwarg",
    "deep-merge-key",
    "cli-flag",
)


@dataclass(frozen=True)
class Difference:
    kind: str
    name: str
    there: str  # how it reads in the release ("absent", "= 300", ...)
    pinned: str
    where: str  # release path:line, or the pin's when absent in the release
    url: str
    mentioned: bool  # the skill's pages name it


def _state(kind: str, default: Any, attrs: dict[str, Any]) -> str:
    """How a fact reads in one engine: its literal default and the attributes a user sets by."""
    parts = []
    if kind in ("flag", "cli-flag", "config-field", "env", "entry-kwarg"):
        if default is not None:
            parts.append(f"= {_short(default)}")
        elif not ({"computed", "factory", "required"} & set(attrs)):
            parts.append("= None")
    for key in ("choices", "action", "value"):
        if key in attrs:
            parts.append(f"{key} {_short(attrs[key])}")
    return ", ".join(parts) or "present"


def _short(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


def mentioned_names(root: Path, pages: list[str]) -> set[str]:
    """Names the skill's pages write as inline code, normalised as facts match them."""
    found: set[str] = set()
    for rel in pages:
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except OSError:
            continue
        text = text.split("<!-- citations -->", 1)[0]
        for match in CODE.finditer(text):
            token = match.group(1).strip()
            for part in re.split(r"[\s=:,()]+", token):
                if part:
                    found.add(normalise(part))
    return found


def _mentioned(fact_name: str, names: set[str]) -> bool:
    candidates = {normalise(fact_name)}
    for separator in (".", ":", " "):
        if separator in fact_name:
            candidates.add(normalise(fact_name.rsplit(separator, 1)[1]))
    return bool(candidates & names)


def differences(facts: FactsFile, release: str, names: set[str]) -> list[Difference]:
    """The facts whose state differs between `release` and the pin, one pass over the timelines
    (an era both engines share is equal without comparing)."""
    from .factsverbs import blob_url

    found = []
    for item in facts.facts:
        old = next((era for era in item.eras if release in era.engines), None)
        new = next((era for era in item.eras if PIN in era.engines), None)
        if old is new:
            continue  # the same era (equal), or absent from both
        there = _state(item.kind, old.default, old.attrs) if old else "absent"
        pinned = _state(item.kind, new.default, new.attrs) if new else "absent"
        if there == pinned:
            continue
        engine, era = (release, old) if old is not None else (PIN, new)
        assert era is not None
        where = f"{era.path}:{era.lines[era.engines.index(engine)]}"
        found.append(
            Difference(
                kind=item.kind,
                name=item.name,
                there=there,
                pinned=pinned,
                where=where,
                url=blob_url(engine, facts.revision, where),
                mentioned=_mentioned(item.name, names),
            )
        )
    rank = {kind: i for i, kind in enumerate(KIND_ORDER)}
    return sorted(found, key=lambda d: (not d.mentioned, rank.get(d.kind, 99), d.name))


def behaviour_pages(root: Path, pages: list[str]) -> dict[str, list[str]]:
    """Release -> the hand-written pages on what that release does instead: those whose "Read this
    when:" paragraph names the release (`0.24.0`), in page order."""
    from .skill import read_text

    found: dict[str, list[str]] = {}
    for page in pages:
        if page.startswith(NOTES_DIR) or page == NOTES_INDEX:
            continue
        text = read_text(root, page)
        start = text.find("Read this when:")
        if start < 0:
            continue
        paragraph = text[start : text.find("\n\n", start) if "\n\n" in text[start:] else len(text)]
        for release in dict.fromkeys(re.findall(r"\b(\d+\.\d+\.\d+)\b", paragraph)):
            found.setdefault(release, []).append(page)
    return found


def render_notes(
    facts: FactsFile, release: str, names: set[str], counts: dict[str, int] | None, behaviour: list[str] | None = None
) -> str:
    from .report import render_page

    found = differences(facts, release, names)
    shown = [d for d in found if d.mentioned][:MAX_ROWS]
    by_kind: dict[str, int] = {}
    for d in found:
        if d not in shown:
            by_kind[d.kind] = by_kind.get(d.kind, 0) + 1
    order = facts.order()
    stamp = {e.id: e for e in facts.engines}
    return render_page(
        "release-notes.md.j2",
        release=release,
        revision=facts.revision,
        release_date=stamp[release].date[:10],
        pin_date=stamp[PIN].date[:10],
        newer=order.index(release) > order.index(PIN),
        rows=[_cell_row(d) for d in shown],
        total=len(found),
        rest=sorted(by_kind.items(), key=lambda kv: -kv[1]),
        counts=counts or {},
        behaviour=[posixpath.relpath(page, NOTES_DIR) for page in behaviour or []],
    )


def _cell_row(d: Difference) -> dict[str, str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")

    return {
        "kind": d.kind,
        "name": cell(d.name),
        "there": cell(d.there),
        "pinned": cell(d.pinned),
        "where": d.where.rsplit("/", 1)[-1],
        "url": d.url,
    }


def render_index(facts: FactsFile) -> str:
    from .report import render_page

    releases = [e for e in facts.engines if e.id != PIN]
    pin = next(e for e in facts.engines if e.id == PIN)
    return render_page("release-notes-index.md.j2", releases=releases, pin=pin).rstrip("\n") + "\n"


def notes_pages(root: Path, facts: FactsFile, pages: list[str], counts: dict[str, dict[str, int]]) -> dict[str, str]:
    """Every generated page by path: the index and one page per release."""
    names = mentioned_names(root, [p for p in pages if not p.startswith(NOTES_DIR) and p != NOTES_INDEX])
    behaviour = behaviour_pages(root, pages)
    contents = {NOTES_INDEX: render_index(facts)}
    for engine in facts.engines:
        if engine.id != PIN:
            page = render_notes(facts, engine.id, names, counts.get(engine.id), behaviour.get(engine.id))
            contents[f"{NOTES_DIR}/{engine.id}.md"] = page
    return contents


DRIFT_ROWS = 12  # facts that differ, shown by drift


def facts_block(
    root: Path, pages: list[str], release: str | None, files: Any = None, paths: Any = None
) -> dict[str, Any]:
    """For drift: the facts the skill names whose value or presence differs in the user's engine —
    from the shipped facts when its files are a release's, else extracted from its files."""
    from .facts import EngineStamp, extract, load_facts, timeline

    try:
        facts = load_facts(root)
    except ValueError:
        return {}
    if facts is None:
        return {}
    names = mentioned_names(root, [p for p in pages if not p.startswith(NOTES_DIR) and p != NOTES_INDEX])
    engine_id = release if release in facts.order() else None
    if engine_id is None:
        if files is None:
            return {}
        stamps = [EngineStamp(id="yours", date="0"), EngineStamp(id=PIN, date="1", revision=facts.revision)]
        facts = timeline(stamps, {"yours": extract(files, paths), PIN: facts.at(PIN)}, facts.revision)
        engine_id = "yours"
    found = [d for d in differences(facts, engine_id, names) if d.mentioned]
    return {
        "release": release or "",
        "rows": [
            {"kind": d.kind, "name": d.name, "there": d.there, "pinned": d.pinned, "where": d.where} for d in found
        ],
        "shown": DRIFT_ROWS,
        "page": f"{NOTES_DIR}/{release}.md" if release else "",
    }
