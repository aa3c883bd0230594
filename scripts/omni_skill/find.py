"""`find NAME`: every place the skill discusses a name, most central first, and its data entries.

A name is a setting, a CLI flag, an environment variable, a symbol, a config key, a model (a
pipeline key, a diffusion architecture, a config or deploy file) or an endpoint path. Places
come from the skill's snapshot (`snapshot.Snapshot`): a term names the thing when its key is the
name's key, ends with it (`StagePool.pick` names `pick`) or holds it as a run of segments
(`StagePool.pick` mentions `StagePool`). Places are ranked by the role of the best term in their
section:

    a heading naming it                      100
    a table row whose first cell names it     90
    a list item led by it                     80
    a heading word equal to it                70
    a citation whose label anchor is it       60
    a citation of a member of it              45
    a code span naming it                     40
    a citation into the file it names         35
    a code span holding it                    30

One row per section (page, heading): its best line, its score and the other lines that name it.
The owning page comes first, then every other section by score. The owner is a content page (not
a branch entry page, which routes, nor a release comparison page) with the best place; a tie goes
to the page that cites the search-space `source` label of the named setting, then to the page
with more places.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError
from .labels import CODE_SPAN, USE_RE
from .skill import read_text
from .snapshot import (
    MODELS_PATH,
    SEARCH_SPACE_PATH,
    TEST_MAP_PATH,
    WORD,
    CatalogueEntry,
    SettingView,
    Snapshot,
    SubsystemView,
    Term,
    name_key,
    normalize,
    path_forms,
)

FACTS_PATH = "evidence/facts.json"
FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
DEFAULT_LIMIT = 10
ENTRY_LIMIT = 8
FILE_NAME = re.compile(r"\.(?:py|ya?ml|md|json|toml|txt|sh)$", re.IGNORECASE)
MAX_NAME = 200
MAX_TESTS = 3  # test-map tests shown per subsystem

# What a term's role and match make of a place (see the module docstring).
NAMES = {"heading": 100, "first-cell": 90, "list-lead": 80}
WHAT = {
    100: "heading",
    90: "table row",
    80: "list item",
    70: "heading",
    60: "citation",
    45: "citation of a member",
    40: "code",
    35: "citation into it",
    30: "code",
}


@dataclass(frozen=True)
class Query:
    text: str  # as given
    key: tuple[str, ...]  # normalized segments (a path: one segment)
    path: bool  # a path or an endpoint: compared whole, by file name or by stem

    @property
    def needle(self) -> str:
        """The longest segment: every place that names the query holds it in its folded text."""
        return max(self.key, key=len)


def parse_query(name: str) -> Query:
    text = name.strip()
    if not text:
        raise UsageError("give a name: a setting, flag, env var, symbol, config key, model or endpoint")
    if len(text) > MAX_NAME:
        raise UsageError(f"a name has at most {MAX_NAME} characters")
    path = "/" in text or bool(FILE_NAME.search(text))
    key = (normalize(text).rstrip("/"),) if path else name_key(text)
    if not key or not key[0]:
        raise UsageError(f"{name!r} holds no name to look for")
    return Query(text, key, path)


def match(query: Query, term: Term) -> str:
    """How the term names the query: exact, suffix (it ends with it), within (it holds it), or ""."""
    key = term.key
    if term.via == "path":  # a citation into a file: the file is named by its path, name or stem
        if query.path:
            return "within" if query.key[0] in key else ""
        return "within" if len(query.key) == 1 and query.key[0] == key[-1] else ""
    if query.path:
        return "exact" if query.key[0] in path_forms(".".join(key)) else ""
    size = len(query.key)
    if key == query.key:
        return "exact"
    if len(key) <= size or query.key[0] not in key:
        return ""
    if key[-size:] == query.key:
        return "suffix"
    for start in range(len(key) - size):
        if key[start : start + size] == query.key:
            return "within"
    return ""


def score(term: Term, how: str) -> int:
    if term.via == "path":
        return 35
    names = how in ("exact", "suffix")
    if term.via == "word":
        return 70 if names else 0
    if names and term.role in NAMES:
        return NAMES[term.role]
    if term.via == "label":
        return 60 if names else 45
    return 40 if names else 30


@dataclass
class Place:
    """A section of a page that names the thing."""

    file: str
    heading: str
    section: int  # the heading's line (0: before the first heading)
    line: int  # the best term's line
    score: int
    what: str
    lines: list[int] = field(default_factory=list)  # every line of the section that names it
    defines: bool = False  # the section cites the search-space source label of the named setting

    def data(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "heading": self.heading,
            "score": self.score,
            "what": self.what,
            "lines": self.lines,
        }


@dataclass
class DataEntry:
    """An entry of a data file about the thing: a search-space setting, a catalogue entry, tests."""

    file: str
    line: int
    kind: str  # setting, read-by, pipeline, diffusion, deploy, tests, fact
    name: str
    summary: str  # one line
    fields: dict[str, Any] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "name": self.name,
            "summary": self.summary,
            "fields": self.fields,
        }


@dataclass
class FindResult:
    name: str
    key: str
    places: list[Place] = field(default_factory=list)
    entries: list[DataEntry] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # data files that could not be read

    @property
    def found(self) -> bool:
        return bool(self.places or self.entries)

    @property
    def owner(self) -> str:
        return self.places[0].file if self.places else ""


# ---------------------------------------------------------------- places


def places(snapshot: Snapshot, query: Query) -> list[Place]:
    """Every section that names the query, ranked (see the module docstring)."""
    found: dict[tuple[str, int], Place] = {}
    sources = set()
    if not query.path and snapshot.holds(SEARCH_SPACE_PATH, query.needle):
        sources = {s.source for s in snapshot.settings if _names(query, s.name, s.param)}
    for page in snapshot.pages(query.needle):
        for term in page.terms:
            how = match(query, term)
            if not how:
                continue
            value = score(term, how)
            if not value:
                continue
            place = found.get((page.file, term.section))
            if place is None:
                heading = page.headings.get(term.section, "")
                place = found[(page.file, term.section)] = Place(
                    page.file, heading, term.section, term.line, value, WHAT[value]
                )
            elif value > place.score or (value == place.score and term.line < place.line):
                place.score, place.line, place.what = value, term.line, WHAT[value]
            if term.line not in place.lines:
                place.lines.append(term.line)
            place.defines = place.defines or term.label in sources
    return rank(list(found.values()))


# The release notes and their index never reach `find` (the snapshot leaves generated notes out).
RELEASE_PAGES = (
    "references/serving-tuning/earlier-releases.md",
    "references/serving-tuning/newest-releases.md",
    "references/serving-tuning/migration.md",
    "references/serving-tuning/versions.md",
)


def secondary(file: str) -> bool:
    """A page that routes (a branch entry page) or compares releases: it owns no pin fact, so its
    places rank after the content pages' (SKILL.md routes release questions to it directly)."""
    return file.endswith("/README.md") or file.startswith(RELEASE_PAGES)


def rank(found: list[Place]) -> list[Place]:
    """The owning page's sections first, then the rest by score, secondary pages last (see the
    module docstring)."""
    if not found:
        return []
    for place in found:
        place.lines.sort()
    pages: dict[str, tuple[int, bool, int]] = {}
    for place in found:
        best, defines, count = pages.get(place.file, (0, False, 0))
        pages[place.file] = (max(best, place.score), defines or place.defines, count + len(place.lines))
    owner = min(pages, key=lambda f: (secondary(f), -pages[f][0], not pages[f][1], -pages[f][2], f))

    def order(place: Place) -> tuple[Any, ...]:
        return (
            place.file != owner,
            secondary(place.file),
            -place.score,
            not place.defines,
            -len(place.lines),
            place.file,
            place.line,
        )

    return sorted(found, key=order)


# ---------------------------------------------------------------- data entries


def _names(query: Query, *candidates: str) -> bool:
    """Whether one of the candidate names is the query or ends with it (dotted segments)."""
    for candidate in candidates:
        if not candidate:
            continue
        key = name_key(candidate)
        if key == query.key or (len(key) > len(query.key) and key[-len(query.key) :] == query.key):
            return True
    return False


def _anchor(label: str) -> str:
    return label.partition("::")[2].split("@", 1)[0].split("#", 1)[0]


def _short(text: str, size: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def setting_entries(snapshot: Snapshot, query: Query) -> list[DataEntry]:
    if query.path or not snapshot.holds(SEARCH_SPACE_PATH, query.needle):
        return []
    entries: list[DataEntry] = []
    readers: list[SettingView] = []
    for setting in snapshot.settings:
        if _names(query, setting.name, setting.param, _anchor(setting.source)):
            default = (
                f"default {setting.default}" if setting.default else f"default: {_short(setting.default_note, 70)}"
            )
            parts = [setting.scope, setting.type, default, f"owner {setting.source}"]
            if setting.param and normalize(setting.param) != normalize(setting.name):
                parts.insert(1, f"param {setting.param}")
            entries.append(
                DataEntry(
                    SEARCH_SPACE_PATH,
                    setting.line,
                    "setting",
                    setting.name,
                    f"setting {setting.name} · " + " · ".join(parts),
                    {
                        "scope": setting.scope,
                        "type": setting.type,
                        "default": setting.default or None,
                        "default_note": setting.default_note or None,
                        "param": setting.param or None,
                        "source": setting.source,
                    },
                )
            )
        elif any(_names(query, _anchor(label)) for label in setting.read_by):
            readers.append(setting)
    if readers:
        names = [s.name for s in readers]
        shown = ", ".join(names[:8]) + (f" (+{len(names) - 8})" if len(names) > 8 else "")
        entries.append(
            DataEntry(
                SEARCH_SPACE_PATH,
                readers[0].line,
                "read-by",
                query.text,
                f"reads the settings {shown}",
                {"settings": names},
            )
        )
    return entries


def _deploy_name(deploy: dict[str, Any]) -> str:
    return str(deploy.get("source", "")).partition("::")[0].rsplit("/", 1)[-1]


def _pipeline_summary(entry: CatalogueEntry) -> str:
    data = entry.data
    value, alias = data.get("value", ""), data.get("alias_of")
    if alias:
        return f"pipeline {entry.name} → {value} (alias of {alias})"
    configs = [c for c in data.get("configs") or [] if isinstance(c, dict)]
    parts = []
    for config in configs[:2]:
        stages = [s for s in config.get("stages") or [] if isinstance(s, dict)]
        chain = " → ".join(f"{s.get('model_stage')} ({s.get('execution_type')})" for s in stages)
        deploy = [d for d in config.get("deploy") or [] if isinstance(d, dict)]
        default = [_deploy_name(d) for d in deploy if d.get("role") == "default"]
        platforms = {p.get("platform") for d in deploy for p in d.get("platforms") or [] if isinstance(p, dict)}
        text = f"{config.get('name')}: {chain}"
        if default:
            text += f"; deploy {default[0]}"
        if len(deploy) > len(default):
            text += f" +{len(deploy) - len(default)} variants"
        if platforms:
            text += f"; platform sections {', '.join(sorted(str(p) for p in platforms))}"
        parts.append(text)
    more = f" (+{len(configs) - 2} configs)" if len(configs) > 2 else ""
    return f"pipeline {entry.name} → " + " | ".join(parts) + more


def _diffusion_summary(entry: CatalogueEntry) -> str:
    data = entry.data
    parts = [f"diffusion model {entry.name}"]
    if data.get("class"):
        parts.append(f"class {data['class']}")
    for flag, what in (("request_batch", "request batching"), ("audio_output", "audio output")):
        value = data.get(flag)
        if isinstance(value, dict) and "value" in value:
            parts.append(f"{what} {'yes' if value['value'] else 'no'}")
    return " · ".join(parts)


def model_entries(snapshot: Snapshot, query: Query) -> list[DataEntry]:
    if not snapshot.holds(MODELS_PATH, query.needle):
        return []
    entries: list[DataEntry] = []
    hint = "(`models {}` prints it)"
    for entry in snapshot.catalogue:
        if not query.path and _names(query, *entry.names):
            summary = _pipeline_summary(entry) if entry.kind == "pipeline" else _diffusion_summary(entry)
            entries.append(
                DataEntry(MODELS_PATH, entry.line, entry.kind, entry.name, f"{summary} {hint.format(entry.name)}")
            )
        elif any(query.key[0] in path_forms(path.partition("::")[0]) for path in entry.deploys if path):
            what = f"deploy file of pipeline {entry.name} {hint.format(entry.name)}"
            entries.append(DataEntry(MODELS_PATH, entry.line, "deploy", entry.name, what))
    return entries


def test_entries(snapshot: Snapshot, query: Query) -> list[DataEntry]:
    if not snapshot.holds(TEST_MAP_PATH, query.needle):
        return []
    entries: list[DataEntry] = []
    wrapped = f"_{query.needle}_"
    for subsystem in snapshot.subsystems:
        owner = not query.path and _names(query, _anchor(subsystem.source))
        tests = [t for t in subsystem.tests if _test_names(query, t.pytest, wrapped)]
        if not owner and not tests:
            continue
        entries.append(_tests_entry(subsystem, tests, owner))
    return entries


def _test_names(query: Query, node: str, wrapped: str) -> bool:
    path, _, rest = node.partition("::")
    if query.path:
        return query.key[0] in path_forms(path)
    if len(query.key) > 1:
        return False
    return any(wrapped in f"_{normalize(part)}_" for part in [path.rsplit("/", 1)[-1], *rest.split("::")])


def _tests_entry(subsystem: SubsystemView, tests: list[Any], owner: bool) -> DataEntry:
    shown = tests or list(subsystem.tests)
    listed = ", ".join(f"{t.pytest} [{' '.join(t.markers)}]" for t in shown[:MAX_TESTS])
    more = f" (+{len(shown) - MAX_TESTS})" if len(shown) > MAX_TESTS else ""
    what = "its source names it" if owner else f"{len(tests)} test{' names' if len(tests) == 1 else 's name'} it"
    return DataEntry(
        TEST_MAP_PATH,
        (tests[0].line if tests else subsystem.line),
        "tests",
        subsystem.name,
        f'tests "{subsystem.name}" ({what}): {listed}{more}',
        {"subsystem": subsystem.name, "source": subsystem.source, "tests": [t.pytest for t in shown]},
    )


def release_facts(root: Path, query: Query, limit: int = 6) -> list[DataEntry]:
    """What the engine states about the name at the pin and across releases, from
    `evidence/facts.json` (one timeline a line: only lines holding the name are parsed)."""
    from .factkinds import FACTS_PATH, PIN, matches
    from .safeio import parse_json, read_text

    if query.path:
        return []
    try:
        lines = read_text(root / FACTS_PATH).splitlines()
    except (OSError, ValueError):
        return []
    head = lines[0] if lines else ""
    try:  # the first line holds every field but the facts: `{…, "facts": [`
        order = [str(e["id"]) for e in parse_json(head[: head.index(', "facts": [')] + "}").get("engines", [])]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []  # not a facts file as `releases` writes it (check reports it)
    needle = query.needle.replace("_", "")
    entries: list[DataEntry] = []
    for number, line in enumerate(lines[1:], start=2):
        if needle not in line.lower().replace("_", "").replace("-", ""):
            continue
        try:
            item = parse_json(line.rstrip(","))
        except ValueError:
            continue
        if not isinstance(item, dict) or not matches(str(item.get("name", "")), query.text):
            continue
        eras = item.get("eras") or []
        present = [e for era in eras for e in era.get("engines", [])]
        if not present:
            continue
        at_pin = next((era for era in eras if PIN in era.get("engines", [])), None)
        parts = [f"pin: {_fact_value(at_pin)}" if at_pin else "absent at the pin"]
        parts.append(f"first {present[0]}")
        last = max(order.index(e) for e in present) if order else 0
        if order and last < len(order) - 1:
            parts.append(f"removed after {order[last]}")
        if len(eras) > 1:
            parts.append("changes in " + ", ".join(era["engines"][0] for era in eras[1:]))
        entries.append(
            DataEntry(
                FACTS_PATH,
                number,
                "fact",
                item["name"],
                f"fact {item['kind']} {item['name']} · " + " · ".join(parts),
                {"kind": item["kind"], "engines": present},
            )
        )
        if len(entries) >= limit:
            break
    return entries


def _fact_value(era: dict[str, Any]) -> str:
    default, attrs = era.get("default"), era.get("attrs") or {}
    where = f"{era.get('path', '')}:{era.get('lines', [0])[-1]}"
    if default is None and {"computed", "factory", "required"} & set(attrs):
        return where
    return f"= {json.dumps(default)} {where}"


def data_entries(snapshot: Snapshot, query: Query) -> list[DataEntry]:
    return [
        *setting_entries(snapshot, query),
        *model_entries(snapshot, query),
        *test_entries(snapshot, query),
        *release_facts(snapshot.root, query),
    ]


# ---------------------------------------------------------------- suggestions


def known_names(snapshot: Snapshot) -> dict[str, str]:
    """Every name the skill may know, normalized -> as written: the words of code spans and the
    anchors of citation labels (and their last segment) in the pages' raw text, settings, model
    keys and architectures, tests. Read from the raw text, fenced code blocks left out, without
    parsing the pages (which is what an unknown name would otherwise cost)."""
    names: dict[str, str] = {}

    def add(name: str) -> None:
        key = normalize(name)
        if len(key) > 2 and not key.isdigit() and "[" not in key and not key.endswith(("/", "_", ".")):
            names.setdefault(key, name)

    for rel in snapshot.files:
        text = FENCED.sub("", read_text(snapshot.root, rel))
        words = [w for span in CODE_SPAN.finditer(text) for w in WORD.findall(span.group(0).strip("`"))]
        words += [m.group(1).split("::", 1)[-1] for m in USE_RE.finditer(text) if "::" in m.group(1)]
        for word in words:
            add(word)
            if "." in word:
                add(word.rsplit(".", 1)[-1])
    for setting in snapshot.settings:
        add(setting.name)
    for entry in snapshot.catalogue:
        add(entry.name)
    for subsystem in snapshot.subsystems:
        for test in subsystem.tests:
            add(test.pytest.rsplit("::", 1)[-1])
    return names


def suggestions(snapshot: Snapshot, query: Query, count: int = 5) -> list[str]:
    """The known names closest to the query."""
    import difflib  # only when the name is not found

    names = known_names(snapshot)
    wanted = normalize(query.text)
    return [names[n] for n in difflib.get_close_matches(wanted, list(names), n=count, cutoff=0.6)]


# ---------------------------------------------------------------- the verb


def find(root: Path, name: str) -> FindResult:
    """Where the skill discusses `name` and its data entries; suggestions when it names nothing."""
    query = parse_query(name)
    snapshot = Snapshot(root)
    result = FindResult(name=query.text, key=".".join(query.key))
    result.places = places(snapshot, query)
    result.entries = data_entries(snapshot, query)
    if not result.found:
        result.suggestions = suggestions(snapshot, query)
    result.notes = list(snapshot.unreadable)
    return result


def result_data(result: FindResult, limit: int) -> dict[str, Any]:
    return {
        "verb": "find",
        "name": result.name,
        "key": result.key,
        "found": result.found,
        "owner": result.owner,
        "entries": [e.data() for e in result.entries],
        "places": [p.data() for p in result.places[:limit]],
        "total_places": len(result.places),
        "suggestions": result.suggestions,
        "notes": result.notes,
    }


def _count(number: int, one: str, many: str = "") -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


def _short_path(file: str) -> str:
    """A page or data file as `read` takes it: `references/` left out."""
    return file.removeprefix("references/")


def render_text(result: FindResult, limit: int) -> str:
    """At most about `limit` + 15 lines: a header, the data entries, the places."""
    out: list[str] = []
    if not result.found:
        out.append(f"{result.name}: the skill names nothing by this name")
        if result.suggestions:
            out.append("did you mean: " + ", ".join(result.suggestions))
        return "\n".join(out + [f"note: {n}" for n in result.notes]) + "\n"
    pages = len({p.file for p in result.places})
    where = f"{_count(len(result.places), 'section')} on {_count(pages, 'page')} (owner: {result.owner})"
    entries = _count(len(result.entries), "data entry", "data entries")
    out.append(f"{result.name}: {entries}; {where if pages else 'no page names it'}")
    for entry in result.entries[:ENTRY_LIMIT]:
        out.append(f"  {_short_path(entry.file)}:{entry.line}  {entry.summary}")
    if len(result.entries) > ENTRY_LIMIT:
        out.append(f"  … {len(result.entries) - ENTRY_LIMIT} more entries (--format json lists them)")
    if result.places:
        first = result.places[0]
        out.append(f"places, most central first (read one: omni-skill read {_short_path(first.file)}:{first.line}):")
    for place in result.places[:limit]:
        heading = _short(place.heading, 60) or "(top of page)"
        others = [n for n in place.lines if n != place.line]
        also = f"; also {', '.join(map(str, others[:6]))}{' …' if len(others) > 6 else ''}" if others else ""
        out.append(f"  {_short_path(place.file)}:{place.line}  § {heading} — {place.what}{also}")
    if len(result.places) > limit:
        out.append(f"  … {len(result.places) - limit} more sections (--limit N, or --format json)")
    out += [f"note: {n}" for n in result.notes]
    return "\n".join(out) + "\n"
