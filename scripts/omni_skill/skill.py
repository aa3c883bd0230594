"""The skill's own files: which there are, their frontmatter, the labels and claims they hold."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from .errors import UsageError
from .labels import Definition, LabelError, Use, code_lines, parse_label, scan_markdown
from .safeio import SURROGATE, UnsafeFile, control_characters, printable, read_regular, regular_problem
from .yamlcheck import construct, mapping, plain_document

if TYPE_CHECKING:
    from .findings import Finding

SKILL_FILE = "SKILL.md"
REFERENCES = "references"
EVALS = "evals"
PYTEST_RE = re.compile(r"^\s*(?:\$\s+)?(?:python3?\s+-m\s+)?pytest\s+(.*)$")


MAX_WALK_ENTRIES = 20_000  # files and folders under references/; the skill has about a hundred


def _walk(root: Path, top: str, suffixes: tuple[str, ...]) -> list[str]:
    """Relative paths of the files under `top` ending in one of `suffixes`, sorted; folder links
    are not followed, and a walk of more than MAX_WALK_ENTRIES entries is a usage error."""
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root / top):
        seen += len(dirs) + len(files)
        if seen > MAX_WALK_ENTRIES:
            raise UsageError(f"{root / top}: more than {MAX_WALK_ENTRIES} entries; a skill holds far fewer")
        dirs.sort()
        for name in files:
            if name.endswith(suffixes):
                found.append((Path(folder) / name).relative_to(root).as_posix())
    return sorted(found)


def markdown_files(root: Path) -> list[str]:
    files = [SKILL_FILE] if (root / SKILL_FILE).exists() or (root / SKILL_FILE).is_symlink() else []
    return files + _walk(root, REFERENCES, (".md",))


def data_files(root: Path) -> list[str]:
    return _walk(root, REFERENCES, (".yaml", ".yml"))


def eval_files(root: Path) -> list[str]:
    found = [*(root / EVALS).glob("*.yaml"), *(root / EVALS).glob("*.yml")]
    return sorted(p.relative_to(root).as_posix() for p in found)


MAX_FILE_BYTES = 1024 * 1024  # a page or data file; the largest today is about 120 kB
WHOLE_PATH = "evidence/whole-definitions.yaml"


def unreadable_files(root: Path) -> list[Finding]:
    """Pages, data and eval files (and the list of whole-definition citations) that are not regular
    files inside the skill, too large, named or written in something other than UTF-8: every other
    check reads them, so these are reported alone (file and line of the first bad byte)."""
    from .findings import Finding  # pydantic: imported only where a finding is made

    findings: list[Finding] = []
    extra = [WHOLE_PATH] if (root / WHOLE_PATH).exists() or (root / WHOLE_PATH).is_symlink() else []
    for rel in [*markdown_files(root), *data_files(root), *eval_files(root), *extra]:
        path = root / rel
        if SURROGATE.search(rel):
            findings.append(Finding(kind="encoding", file=printable(rel), message="the file name is not valid UTF-8"))
            continue
        problem = regular_problem(path, root)
        if problem:
            findings.append(Finding(kind="file-unsafe", file=printable(rel), message=f"{problem}: not read"))
            continue
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            message = f"{size} bytes, over the {MAX_FILE_BYTES} a skill file may have"
            findings.append(Finding(kind="size-budget", file=rel, message=message))
            continue
        try:
            data = read_regular(path, MAX_FILE_BYTES, root)
        except (UnsafeFile, OSError) as exc:
            findings.append(Finding(kind="file-unsafe", file=printable(rel), message=f"{exc}: not read"))
            continue
        try:
            text = data.decode("utf-8")
            if _read is not None:
                _read[path] = text
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            findings.append(
                Finding(kind="encoding", file=rel, line=line, message=f"not valid UTF-8 (byte {exc.start})")
            )
    return findings


def control_findings(root: Path) -> list[Finding]:
    """A control character (NUL, ESC, BEL, the other C0 but tab, newline and carriage return, DEL,
    C1) in SKILL.md, a page, a data or eval file: the first on each line, with its line."""
    from .findings import Finding

    findings: list[Finding] = []
    extra = [WHOLE_PATH] if (root / WHOLE_PATH).exists() else []
    for rel in [*markdown_files(root), *data_files(root), *eval_files(root), *extra]:
        try:
            text = read_text(root, rel)
        except UsageError:
            continue  # reported by unreadable_files
        for line, char in control_characters(text):
            message = f"control character {char}: write it out or remove it (it can hide text from a reader)"
            findings.append(Finding(kind="control-character", file=rel, line=line, message=message))
    return findings


_read: dict[Path, str] | None = None  # the texts read so far, while `read_once` is active
_loaded: dict[tuple[str, Path], Any] | None = None  # what `loaded_once` loaded, while it is active
_composed: dict[str, yaml.Node] | None = None  # data file text -> its document, while it is active
T = TypeVar("T")


@contextmanager
def read_once() -> Iterator[None]:
    """Within the block each skill file is read from disk once: `check` reads pages in several of
    its checks, and they all see the same text (a file edited meanwhile is not half-seen); and each
    data file `loaded_once` loads (the release matrix, the facts) is parsed and validated once."""
    global _read, _loaded, _composed
    outer, _read = _read, {} if _read is None else _read
    outer_loaded, _loaded = _loaded, {} if _loaded is None else _loaded
    outer_composed, _composed = _composed, {} if _composed is None else _composed
    try:
        yield
    finally:
        _read, _loaded, _composed = outer, outer_loaded, outer_composed


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off within the block (as it was after). `check` and `drift` hold
    the index, the release matrix, the facts and every page's tokens at once: each full collection
    walks all of them again, about a tenth of their time, for a few thousand cyclic objects. On the
    way out they are frozen (`gc.freeze`): a verb's process ends soon after, and a full collection
    over them then would cost as much again (tens of milliseconds) to free nothing that matters."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.enable()


def loaded_once(what: str, path: Path, load: Callable[[], T]) -> T:
    """`load()`, once per (what, path) within `read_once` (every call outside it). A load that
    raises is not kept: the next call loads again and raises the same. The result is shared by
    the callers: they only read it."""
    if _loaded is None:
        return load()
    key = (what, path)
    if key not in _loaded:
        _loaded[key] = load()
    return _loaded[key]


def composed_document(text: str) -> yaml.Node | None:
    """The document `yaml_document` composed (with yamlcheck's loader) for a data file of this
    text within `read_once`, else None. Never one whose text holds a merge key (`<<`): building
    its data rewrites the mapping in place, so the tree would no longer be the text's."""
    if _composed is None or "<<" in text:
        return None
    return _composed.get(text)


def read_text(root: Path, rel: str) -> str:
    path = root / rel
    if _read is not None and path in _read:
        return _read[path]
    try:
        text = read_regular(path, MAX_FILE_BYTES, root).decode("utf-8")
    except UnsafeFile as exc:
        raise UsageError(f"{printable(rel)}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{printable(rel)}: not valid UTF-8 (byte {exc.start})") from None
    if _read is not None:
        _read[path] = text
    return text


@dataclass(frozen=True)
class Claim:
    """`default:` claimed in a data file for the value behind a `source:` label."""

    file: str
    line: int
    label: str
    default: Any
    param: str | None


@dataclass(frozen=True)
class TestReference:
    file: str
    line: int
    path: str
    names: tuple[str, ...]


@dataclass
class SkillLabels:
    uses: list[Use] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    tests: list[TestReference] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # Each data file's composed document (absent when it could not be read; its findings say why),
    # so the checks of its format read it from here rather than parsing it again.
    documents: dict[str, yaml.Node] = field(default_factory=dict)


def yaml_document(root: Path, rel: str) -> tuple[yaml.Node | None, list[Finding]]:
    """The composed document of a data file, or the findings that stop it from being read: YAML
    that does not parse, anchors or aliases, nesting too deep, a key twice in one mapping."""
    try:
        text = read_text(root, rel)
    except UsageError as exc:
        return None, [_yaml_invalid(rel, 0, str(exc).split(": ", 1)[-1])]
    try:
        node, problems = plain_document(text)
        if problems:
            return None, [_yaml_invalid(rel, n, message) for n, message in problems]
        if _composed is not None and node is not None:
            _composed[text] = node  # the page claims read its list entries from it
        return node, []
    except yaml.YAMLError:
        pass
    try:  # the pure-Python parser words its errors the same on every machine
        return yaml.compose(text, Loader=yaml.SafeLoader), []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, [_yaml_invalid(rel, mark.line + 1 if mark else 0, problem)]
    except RecursionError:
        return None, [_yaml_invalid(rel, 0, "nested too deeply to read")]


def _yaml_invalid(rel: str, line: int, message: str) -> Finding:
    from .findings import Finding  # pydantic: imported only where a finding is made

    return Finding(kind="yaml-invalid", file=rel, line=line, message=message)


def _walk_data(rel: str, node: yaml.Node, out: SkillLabels) -> None:
    if isinstance(node, yaml.ScalarNode):
        if node.tag.endswith(":str") and node.value.startswith("src:"):
            out.uses.append(Use(rel, node.start_mark.line + 1, node.value))
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk_data(rel, item, out)
    elif isinstance(node, yaml.MappingNode):
        keys = mapping(node)
        test = keys.get("pytest")
        if isinstance(test, yaml.ScalarNode) and test.tag.endswith(":str"):
            out.tests += _test_reference(rel, test.start_mark.line + 1, test.value)
        source = keys.get("source")
        if isinstance(source, yaml.ScalarNode) and "default" in keys:
            param = keys.get("param")
            out.claims.append(
                Claim(
                    file=rel,
                    line=keys["default"].start_mark.line + 1,
                    label=source.value,
                    default=construct(keys["default"]),
                    param=str(param.value) if isinstance(param, yaml.ScalarNode) else None,
                )
            )
        for _, value in node.value:
            _walk_data(rel, value, out)


def _tests_in(rel: str, text: str) -> list[TestReference]:
    code = code_lines(text)
    lines = text.splitlines()
    found: list[TestReference] = []
    for index in sorted(code):
        if index >= len(lines):
            continue
        match = PYTEST_RE.match(lines[index])
        if not match:
            continue
        for word in match.group(1).split():
            found += _test_reference(rel, index + 1, word)
    return found


def _test_reference(rel: str, line: int, word: str) -> list[TestReference]:
    """A pytest node id (`tests/x.py`, `tests/x.py::Class::test[param]`) as a test reference."""
    target = word.strip("'\"")
    path, _, rest = target.partition("::")
    if not path.endswith(".py"):
        return []
    names = tuple(re.sub(r"\[.*\]$", "", n) for n in rest.split("::")) if rest else ()
    return [TestReference(rel, line, path, names)]


def collect(root: Path) -> SkillLabels:
    """Every citation use, definition, value claim and test reference of the skill."""
    from .findings import Finding  # pydantic: imported only where a finding is made

    out = SkillLabels()
    for rel in markdown_files(root):
        text = read_text(root, rel)
        scanned = scan_markdown(rel, text)
        out.uses += scanned.uses
        out.definitions += scanned.definitions
        out.findings += [
            Finding(
                kind="label-invalid",
                file=m.file,
                line=m.line,
                message=f"label {m.text!r} does not close: write brackets inside a label as \\[ and \\]",
            )
            for m in scanned.malformed
        ]
        if rel.startswith(REFERENCES + "/"):
            out.tests += _tests_in(rel, text)
    for rel in data_files(root):
        node, problems = yaml_document(root, rel)
        out.findings += problems
        if node is not None:
            out.documents[rel] = node
            _walk_data(rel, node, out)
    items: list[Use | Definition] = [*out.uses, *out.definitions]
    for item in items:
        try:
            parse_label(item.text)
        except LabelError as exc:
            out.findings.append(Finding(kind="label-invalid", file=item.file, line=item.line, message=str(exc)))
    return out


def valid_labels(uses: list[Use]) -> dict[str, list[Use]]:
    """Uses grouped by label, leaving out labels that do not parse."""
    grouped: dict[str, list[Use]] = {}
    for use in uses:
        try:
            parse_label(use.text)
        except LabelError:
            continue
        grouped.setdefault(use.text, []).append(use)
    return grouped
