"""The pytest markers of the native test map (`test-map.yaml`), verified against the engine's test
modules: what a test carries as its module states it — the module's `pytestmark`, each enclosing
class's `pytestmark` and decorators, the function's decorators — with `hardware_test(res=...,
num_cards=...)` expanded as `tests/helpers/mark.py` does at the pinned revision (`gpu`, the
resource, its platform, and `distributed_<platform>` for more than one card; the `skipif` it adds
only when run on that platform is not a static marker). pytest's argument marks (`parametrize`,
`usefixtures`, `filterwarnings`) are left out: the map lists the markers used to select tests."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

import yaml

from .anchors import AnchorError, python
from .datafiles import TEST_MAP_PATH, NativeTestMap
from .findings import Finding
from .source import BlobError, EngineFiles
from .yamlcheck import construct, mapping

ARGUMENT_MARKS = frozenset({"parametrize", "usefixtures", "filterwarnings"})
# tests/helpers/mark.py: for a cuda, rocm or xpu key, gpu_marks adds `gpu` and picks the platform
# from the resource; a musa or npu key has marks of its own, without `gpu`.
GPU_RESOURCES = {"L4": "cuda", "H100": "cuda", "MI325": "rocm", "B60": "xpu", "S5000": "musa"}
NPU_RESOURCES = ("A2", "A3")


class Unreadable(Exception):
    """A marker expression whose markers cannot be read from the source alone."""


def _mark_name(node: ast.expr) -> str | None:
    """`X` of `pytest.mark.X` or `pytest.mark.X(...)`; None for any other expression."""
    target = node.func if isinstance(node, ast.Call) else node
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
        and isinstance(target.value.value, ast.Name)
        and target.value.value.id == "pytest"
    ):
        return target.attr
    return None


def _hardware(call: ast.Call) -> list[str]:
    keywords = {k.arg: k.value for k in call.keywords}
    try:
        res = ast.literal_eval(keywords["res"])
        cards = ast.literal_eval(keywords["num_cards"]) if "num_cards" in keywords else 1
    except (KeyError, ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise Unreadable(f"`{ast.unparse(call)[:80]}` has no literal res= and num_cards=") from None
    counts = cards if isinstance(cards, dict) else dict.fromkeys(res if isinstance(res, dict) else (), cards)
    if not isinstance(res, dict) or not all(isinstance(v, str) for v in res.values()):
        raise Unreadable(f"`{ast.unparse(call)[:80]}`: res is not a dict of platform to resource names")
    if not all(type(n) is int for n in counts.values()):
        raise Unreadable(f"`{ast.unparse(call)[:80]}`: num_cards is not a whole number (per platform)")
    marks: list[str] = []
    for key, resource in res.items():
        count = counts.get(key, 1)
        if key in ("cuda", "rocm", "xpu") and resource in GPU_RESOURCES:
            platform = GPU_RESOURCES[resource]
            marks += ["gpu", resource, platform]
        elif key == "musa" and resource == "S5000":
            platform = "musa"
            marks += [resource, platform]
        elif key == "npu":
            platform = "npu"
            marks += ["npu", *([resource] if resource in NPU_RESOURCES else [])]
        else:
            raise Unreadable(f"hardware_test resource {key}={resource!r} is not one tests/helpers/mark.py knows")
        if count > 1:
            marks.append(f"distributed_{platform}")
    return marks


def _marks(expressions: Sequence[ast.expr]) -> list[str]:
    found: list[str] = []
    for expression in expressions:
        name = _mark_name(expression)
        if name is not None:
            found.append(name)
        elif isinstance(expression, ast.Call) and getattr(expression.func, "id", None) == "hardware_test":
            found += _hardware(expression)
    return found  # other decorators (mock.patch, staticmethod, ...) carry no marker


class _Module:
    """The definitions of one test module, each found by scanning (`python.quick_find`) and the
    module parsed whole only when scanning cannot prove one."""

    def __init__(self, text: str, lines: list[str]):
        self.text, self.lines = text, lines
        self._own: dict[str, list[str] | None] = {}
        self._module: list[str] | None = None

    def node(self, name: str) -> ast.AST | None:
        """The last definition of a qualified name (pytest collects the last one), None if absent."""
        if name.rsplit(".", 1)[-1] not in self.text:
            return None
        quick = python.quick_find(self.lines, name)
        if quick is not None:
            return quick[1]
        found = python.definitions(self.text).get(name)
        return found[-1][1] if found else None

    def own_markers(self, name: str, is_class: bool) -> list[str] | None:
        """The markers a class or function states itself (decorators; for a class also its
        `pytestmark`), read from its head rather than its whole body; None when the module does
        not define it."""
        if name in self._own:
            return self._own[name]
        leaf = name.rsplit(".", 1)[-1]
        span = python.quick_span(self.lines, name) if leaf in self.text else None
        head = python.head_node(self.lines, span, leaf) if span else None
        found: list[str] | None
        if span is None or head is None:
            node = self.node(name)  # scanning could not prove it: read the whole definition
            if node is None:
                found = None
            else:
                assigned = python.members(node).get("pytestmark") if isinstance(node, ast.ClassDef) else None
                found = _marks(getattr(node, "decorator_list", []))
                found += self._pytestmark(f"{name}.pytestmark", assigned[-1][1] if assigned else None)
        else:
            found = _marks(getattr(head, "decorator_list", []))
            block = self.lines[span.start - 1 : span.end]
            if is_class and any(line.lstrip().startswith("pytestmark") for line in block):
                found += self._pytestmark(f"{name}.pytestmark", self.node(f"{name}.pytestmark"))
        self._own[name] = found
        return found

    def module_markers(self) -> list[str]:
        if self._module is None:
            found = re.search(r"^pytestmark\b", self.text, re.MULTILINE)  # (class-level ones are indented)
            self._module = self._pytestmark("pytestmark", self.node("pytestmark")) if found else []
        return self._module

    @staticmethod
    def _pytestmark(name: str, node: ast.AST | None) -> list[str]:
        """The markers of a `pytestmark = ...` assignment."""
        if node is None:
            return []
        value = getattr(node, "value", None)
        if isinstance(value, (ast.List, ast.Tuple)):
            if any(isinstance(item, ast.Starred) for item in value.elts):
                raise Unreadable(f"`{name} = {ast.unparse(value)[:80]}` is built from other values")
            return _marks(value.elts)
        if value is not None and _mark_name(value) is not None:
            return _marks([value])
        raise Unreadable(f"`{name} = ...` is not a list of pytest.mark markers")


def carried_markers(module: _Module, names: Sequence[str]) -> set[str] | None:
    """The markers of the test `names` (classes, then the function) of a test module, or None when
    the module does not define it. AnchorError when the module does not parse."""
    found = list(module.module_markers())
    for depth in range(1, len(names) + 1):
        own = module.own_markers(".".join(names[:depth]), is_class=depth < len(names))
        if own is None:
            return None
        found += own
    return set(found) - ARGUMENT_MARKS


def _entries(node: yaml.Node) -> Iterator[yaml.Node]:
    """The mapping node of every test entry, in the file's order."""
    for subsystem in mapping(node)["subsystems"].value:
        yield from mapping(subsystem)["tests"].value


def check_test_markers(document: yaml.Node | None, source: EngineFiles) -> list[Finding]:
    """Each test map entry's markers are exactly those its test carries at the revision. A map
    whose format is invalid, or a test that is missing, is reported by other checks."""
    if document is None:
        return []
    try:
        test_map = NativeTestMap.model_validate(construct(document))
    except ValueError:
        return []
    tests = [test for subsystem in test_map.subsystems for test in subsystem.tests]
    modules: dict[str, _Module] = {}
    findings: list[Finding] = []
    for node, test in zip(_entries(document), tests, strict=True):
        line = mapping(node)["markers"].start_mark.line + 1
        path, *names = test.pytest.split("::")
        if not names:
            continue
        try:
            if path not in modules:
                modules[path] = _Module(source.text(path), source.lines(path))
            carried = carried_markers(modules[path], [name.split("[", 1)[0] for name in names])
        except (KeyError, BlobError, AnchorError):
            continue  # the test reference check reports it
        except Unreadable as exc:
            findings.append(_finding(line, f"{test.pytest}: markers cannot be read from the source: {exc}"))
            continue
        if carried is None:
            continue
        listed = set(test.markers)
        for what, differing in (("does not carry", listed - carried), ("also carries", carried - listed)):
            if differing:
                findings.append(_finding(line, f"{test.pytest} {what} {', '.join(sorted(differing))} at the revision"))
    return findings


def _finding(line: int, message: str) -> Finding:
    return Finding(kind="test-markers", file=TEST_MAP_PATH, line=line, message=message)
