"""Reading an engine's Python modules without importing them: each module parsed once (function
bodies left out, see `skeleton`), module constants, imports made absolute, classes as a module
sees them and their method resolution order over the engine's own classes."""

from __future__ import annotations

import ast
import re
from functools import cache
from typing import Any

from .anchors import AnchorError, python
from .claims import (
    NotLiteral,
    assigned_value,
)
from .labels import LabelError, parse_label
from .source import BlobError, Source

# ---------------------------------------------------------------- reading the engine


DEF_START = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]")


CANDIDATE = re.compile(r"^[^\S\n]*(?:@|(?:async[ \t]+)?def[ \t])", re.MULTILINE)  # a decorator or a `def`


def skeleton(text: str) -> str:
    """The module with every function definition (decorators, signature, body) blanked and a
    `pass` in its place, line numbers kept. The catalogue checks read only imports, assignments,
    class headers and class-level fields, which parse the same from this at a fraction of the cost
    (benchmarks/validate_skeleton.py compares both parses over the engine). A text whose
    blanking does not parse (a `def` inside a string, say) is parsed whole by the caller.

    Regular-expression searches find each decorator or `def` line and the end of each body, so
    only the lines around a definition's head are looked at one by one."""

    def line_at(offset: int) -> tuple[str, int]:
        """The line starting at `offset`, and the offset of the next line."""
        stop = text.find("\n", offset)
        stop = len(text) if stop < 0 else stop
        return text[offset:stop], stop + 1

    def is_code(line: str) -> bool:
        stripped = line.strip()
        return bool(stripped) and not stripped.startswith("#")

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip())

    pieces: list[str] = []
    emitted = 0  # text before this offset is in `pieces`
    position = 0
    while (found := CANDIDATE.search(text, position)) is not None:
        first = found.start()
        line, following = line_at(first)
        margin = indent(line)
        head, head_line = first, line  # past the decorators, which may run over several lines
        while not DEF_START.match(head_line):
            if head > first and is_code(head_line) and indent(head_line) <= margin:
                if not head_line.strip().startswith(("@", ")", "]", "}")):
                    break
            head = following
            if head > len(text):
                break
            head_line, following = line_at(head)
        if head > len(text) or not DEF_START.match(head_line) or indent(head_line) != margin:
            position = line_at(first)[1]  # a decorated class, or something else: kept
            continue
        # The body ends before the next line of code indented no deeper than the `def` (a closing
        # bracket continues it).
        after = _statement_at_or_above(margin).search(text, following) if following <= len(text) else None
        stop = after.start() if after else len(text)
        pieces += [text[emitted:first], " " * margin + "pass", "\n" * text.count("\n", first, stop)]
        emitted = position = stop
        if after is None:
            break
    pieces.append(text[emitted:])
    return "".join(pieces)


@cache
def _statement_at_or_above(margin: int) -> re.Pattern[str]:
    """A line whose code starts within `margin` characters of whitespace: not blank, not a
    comment, not a closing bracket."""
    return re.compile(r"^[^\S\n]{0,%d}[^\s#)\]}]" % margin, re.MULTILINE)  # noqa: UP031


class Unavailable(Exception):
    """A cited definition the checker cannot read (the record checks report the label itself)."""


class ModuleReader:
    """Parsed modules of one `Source`, and the definitions labels name."""

    def __init__(self, source: Source):
        self.source = source
        self._trees: dict[str, ast.Module] = {}
        self._constants: dict[str, dict[str, ast.expr]] = {}
        self._classes: dict[tuple[str, str], tuple[str, ast.ClassDef] | None] = {}
        self._mros: dict[tuple[str, int], list[tuple[str, ast.ClassDef]]] = {}

    def module(self, path: str) -> ast.Module:
        """The module's imports, assignments and classes (function bodies left out, see `skeleton`)."""
        if path not in self._trees:
            try:
                text = self.source.text(path)
                try:
                    self._trees[path] = ast.parse(skeleton(text))
                except SyntaxError:
                    self._trees[path] = ast.parse(text)
            except (KeyError, BlobError, SyntaxError, RecursionError, MemoryError) as exc:
                raise Unavailable(f"{path}: cannot be read at the revision ({type(exc).__name__})") from None
        return self._trees[path]

    def exists(self, path: str) -> bool:
        return self.source.entry(path) is not None

    def node(self, label_text: str) -> ast.AST:
        try:
            label = parse_label(label_text)
            quick = python.quick_find(self.source.lines(label.path), label.anchor)  # else parse the module
            return quick[1] if quick else python.find(self.source.text(label.path), label.anchor)[1]
        except (LabelError, KeyError, BlobError, AnchorError) as exc:
            raise Unavailable(f"{label_text}: {exc}") from None

    def module_file(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self.exists(candidate):
                return candidate
        return None

    def constants(self, path: str) -> dict[str, ast.expr]:
        """Module-level `NAME = value` assignments of a module."""
        if path in self._constants:
            return self._constants[path]
        found: dict[str, ast.expr] = {}
        for stmt in self.module(path).body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                found[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                found[stmt.target.id] = stmt.value
        self._constants[path] = found
        return found

    def constant(self, path: str, name: str, depth: int = 0) -> ast.expr | None:
        """The value of module constant `name` as module `path` sees it (defined or imported)."""
        found = self.constants(path).get(name)
        if found is not None or depth > 4:
            return found
        origin = self.imported(path, name)
        target = self.module_file(origin[0]) if origin else None
        return self.constant(target, origin[1], depth + 1) if origin and target else None

    def imported(self, path: str, name: str) -> tuple[str, str] | None:
        """(module, name) a module imports `name` from, relative imports made absolute."""
        package = path.rsplit("/", 1)[0].replace("/", ".") if "/" in path else ""
        for stmt in self.module(path).body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            for alias in stmt.names:
                if (alias.asname or alias.name) != name:
                    continue
                module = stmt.module or ""
                if stmt.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - stmt.level + 1])
                    module = f"{base}.{module}" if module else base
                return module, alias.name
        return None

    def find_class(self, path: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
        """The class `name` as module `path` sees it: defined there or imported from the engine."""
        if depth == 0:
            if (path, name) not in self._classes:
                self._classes[(path, name)] = self.find_class(path, name, 1)
            return self._classes[(path, name)]
        if depth > 9:
            return None
        for stmt in self.module(path).body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                return path, stmt
        alias = self.constants(path).get(name)
        if isinstance(alias, ast.Name):  # `Alias = OtherClass`
            return self.find_class(path, alias.id, depth + 1)
        origin = self.imported(path, name)
        if origin is None:
            return None
        target = self.module_file(origin[0])
        if target is None:
            return None  # a class from outside the engine (torch, diffusers, ...)
        return self.find_class(target, origin[1], depth + 1)

    def bases(self, path: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
        found = []
        for base in cls.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                resolved = self.find_class(path, base.id)
                if resolved is not None:
                    found.append(resolved)
        return found

    def mro(self, path: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
        """C3 linearisation over the engine's own classes (bases from outside the engine dropped)."""
        if (path, id(cls)) in self._mros:  # the trees are kept, so a class node's id stays its own
            return self._mros[(path, id(cls))]
        self._mros[(path, id(cls))] = self._mro(path, cls)
        return self._mros[(path, id(cls))]

    def _mro(self, path: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
        key = (path, cls)
        sequences = [self.mro(p, c) for p, c in self.bases(path, cls)]
        sequences.append(self.bases(path, cls))
        result = [key]
        sequences = [list(s) for s in sequences if s]
        while sequences:
            for seq in sequences:
                head = seq[0]
                if not any(head in other[1:] for other in sequences):
                    break
            else:
                raise Unavailable(f"{path}::{cls.name}: inconsistent base classes")
            result.append(head)
            sequences = [[item for item in s if item != head] for s in sequences]
            sequences = [s for s in sequences if s]
        return result


def _class_field(cls: ast.ClassDef, name: str) -> ast.Assign | ast.AnnAssign | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            if stmt.value is not None:
                return stmt
    return None


def class_attribute(engine: ModuleReader, path: str, cls: ast.ClassDef, name: str) -> tuple[str, Any] | None:
    """(label of the defining field, literal value) of a class attribute as the class resolves it."""
    for where, klass in engine.mro(path, cls):
        stmt = _class_field(klass, name)
        if stmt is not None:
            value = assigned_value(stmt)
            try:
                literal = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError):
                raise NotLiteral(f"{where}::{klass.name}.{name}: `{ast.unparse(value)}` is not a literal") from None
            return f"src:{where}::{klass.name}.{name}", literal
    return None
