"""Python anchors: dotted qualified names found with `ast`.

Classes, functions, async functions, methods, nested classes, class fields (annotated or
assigned) and module constants. Definitions under `if`/`try`/`with` blocks at module or class
level count (e.g. `if TYPE_CHECKING:`); a name defined more than once is ambiguous unless the
anchor picks one with a 1-based `#n` suffix in source order.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from . import AnchorError, Span

Definitions = dict[str, list[tuple[Span, ast.AST]]]


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign):
        names: list[str] = []
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [e.id for e in elements if isinstance(e, ast.Name)]
        return names
    return []


def _span(node: ast.stmt) -> Span:
    start = node.lineno
    decorators = getattr(node, "decorator_list", [])
    if decorators:
        start = min(start, *(d.lineno for d in decorators))
    return Span(start, node.end_lineno or node.lineno)


def _walk(body: list[ast.stmt], prefix: str, found: Definitions) -> None:
    for node in body:
        for name in _names(node):
            found.setdefault(prefix + name, []).append((_span(node), node))
        if isinstance(node, ast.ClassDef):
            _walk(node.body, f"{prefix}{node.name}.", found)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [handler.body for handler in getattr(node, "handlers", [])]
            for block in blocks:
                _walk(block, prefix, found)


@lru_cache(maxsize=256)
def definitions(text: str) -> Definitions:
    """Every qualified name defined in the module, in source order."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise AnchorError("invalid", f"file does not parse as Python (line {exc.lineno})") from None
    found: Definitions = {}
    _walk(tree.body, "", found)
    return found


def split_occurrence(anchor: str) -> tuple[str, int | None]:
    name, sep, nth = anchor.partition("#")
    return name, int(nth) if sep else None


def find(text: str, anchor: str) -> tuple[Span, ast.AST]:
    name, nth = split_occurrence(anchor)
    candidates = definitions(text).get(name)
    if not candidates:
        raise AnchorError("missing", f"no definition of {name!r}")
    if nth is None:
        if len(candidates) > 1:
            lines = ", ".join(str(span.start) for span, _ in candidates)
            raise AnchorError(
                "ambiguous", f"{name!r} is defined {len(candidates)} times (lines {lines}); add #1..#{len(candidates)}"
            )
        return candidates[0]
    if nth > len(candidates):
        raise AnchorError("missing", f"{name!r} is defined {len(candidates)} time(s), not {nth}")
    return candidates[nth - 1]


def locate(text: str, anchor: str) -> Span:
    return find(text, anchor)[0]
