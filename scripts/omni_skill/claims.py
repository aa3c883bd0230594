"""Value claims: a data file says `default: X` (and, in the search space, `type: T`) for a
`source:` label; the source must agree.

Literal defaults are read with `ast` from the node the label's anchor names:
- a class field or module constant: its assigned value, or `field(default=…)` /
  `Field(default=…)` / `Field(…)` (first positional argument);
- a function with `param`: the keyword default of that parameter, or, when `param` is a flag
  such as `--max-num-seqs`, the `default=` of the `add_argument` call that declares it, or, when
  `param` is an environment variable, the fallback of `os.getenv` / `os.environ.get` inside it.
`default_factory=…` and anything `ast.literal_eval` cannot evaluate is "not a literal".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

FIELD_CALLS = {"field", "Field", "dataclasses.field", "pydantic.Field", "msgspec.field"}
ENV_CALLS = {"os.getenv", "getenv", "os.environ.get", "environ.get"}


class NoDefault(Exception):
    """The source states no default for this claim."""


class NotLiteral(Exception):
    """The source states a default that is computed, a factory, or otherwise not a literal."""


@dataclass(frozen=True)
class SourceDefault:
    value: Any
    line: int


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_call_name(node.value)}.{node.attr}"
    return ""


def _literal(node: ast.expr) -> SourceDefault:
    try:
        return SourceDefault(ast.literal_eval(node), node.lineno)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NotLiteral(f"line {node.lineno}: `{ast.unparse(node)}` is not a literal") from None


def _field_value(value: ast.expr) -> SourceDefault:
    if isinstance(value, ast.Call) and _call_name(value.func) in FIELD_CALLS:
        keywords = {kw.arg: kw.value for kw in value.keywords if kw.arg}
        if "default_factory" in keywords:
            raise NotLiteral(f"line {value.lineno}: default_factory=`{ast.unparse(keywords['default_factory'])}`")
        if "default" in keywords:
            return _literal(keywords["default"])
        if value.args and _call_name(value.func).endswith("Field"):
            return _literal(value.args[0])
        raise NoDefault(f"line {value.lineno}: field() without a default")
    return _literal(value)


def _param_default(func: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> SourceDefault | None:
    args = func.args
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True)) + list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    for arg, default in pairs:
        if arg.arg == param:
            if default is None:
                raise NoDefault(f"parameter {param!r} has no default")
            return _literal(default)
    return None


def _argparse_default(func: ast.AST, flag: str) -> SourceDefault | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _call_name(node.func).endswith("add_argument"):
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if flag in names:
                for kw in node.keywords:
                    if kw.arg == "default":
                        return _literal(kw.value)
                raise NoDefault(f"line {node.lineno}: add_argument({flag!r}) has no default=")
    return None


def _env_default(func: ast.AST, name: str) -> SourceDefault | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _call_name(node.func) in ENV_CALLS:
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == name:
                if len(node.args) < 2:
                    return SourceDefault(None, node.lineno)
                return _literal(node.args[1])
    return None


def source_default(node: ast.AST, param: str | None) -> SourceDefault:
    """The literal default the source states at `node` (for `param`, when given)."""
    if param:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = _param_default(node, param)
            if found is not None:
                return found
        lookup = _argparse_default if param.startswith("-") else _env_default
        found = lookup(node, param)
        if found is not None:
            return found
        raise NoDefault(f"no parameter, flag or environment variable {param!r} in the cited definition")
    if isinstance(node, (ast.AnnAssign, ast.Assign)):
        if node.value is None:
            raise NoDefault("annotated without a value")
        return _field_value(node.value)
    raise NoDefault("the cited definition is not a field or constant; give `param`")


# The source types that agree with each type a setting may claim: a value the engine checks
# against a set of its own (`enum`) or opens as a file (`path`) is often annotated `str`.
TYPE_AGREES = {
    "int": {"int"},
    "float": {"float"},
    "bool": {"bool"},
    "str": {"str"},
    "enum": {"enum", "str"},
    "path": {"path", "str"},
    "dict": {"dict"},
    "list": {"list"},
}
ANNOTATED = {"int": "int", "float": "float", "bool": "bool", "str": "str", "dict": "dict", "Mapping": "dict"}
ANNOTATED |= {"list": "list", "tuple": "list", "Sequence": "list", "Path": "path"}


def _annotated_type(annotation: ast.expr | None) -> str | None:
    """`int`, `X | None`, `Optional[X]`, `dict[...]`, `Literal[...]` (enum) …; None for others."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        kept = [side for side in sides if not (isinstance(side, ast.Constant) and side.value is None)]
        return _annotated_type(kept[0]) if len(kept) == 1 else None
    if isinstance(annotation, ast.Subscript):
        outer = _call_name(annotation.value).rsplit(".", 1)[-1]
        if outer == "Optional":
            return _annotated_type(annotation.slice)
        if outer == "Literal":
            return "enum"
        annotation = annotation.value
    return ANNOTATED.get(_call_name(annotation).rsplit(".", 1)[-1])


def _argparse_type(func: ast.AST, flag: str) -> str | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _call_name(node.func).endswith("add_argument"):
            if flag not in [a.value for a in node.args if isinstance(a, ast.Constant)]:
                continue
            keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            action = keywords.get("action")
            if "choices" in keywords:
                return "enum"
            if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
                return "bool"
            if action is not None:
                return "bool" if _call_name(action).endswith("BooleanOptionalAction") else None
            kind = keywords.get("type")
            return "str" if kind is None else {"int": "int", "float": "float", "str": "str"}.get(_call_name(kind))
    return None


def source_type(node: ast.AST, param: str | None) -> str | None:
    """The type the source states for a setting: a field's or parameter's annotation, or what an
    `add_argument` declares (choices: enum; a store_true/false or boolean action: bool; type=;
    none: str). None when it states none that this reads (an environment variable, say)."""
    if param and param.startswith("-"):
        return _argparse_type(node, param)
    if param and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        return next((_annotated_type(a.annotation) for a in arguments if a.arg == param), None)
    if not param and isinstance(node, ast.AnnAssign):
        return _annotated_type(node.annotation)
    return None


def same_value(claimed: Any, actual: Any) -> bool:
    """Equal as literals: tuples and lists compare alike, bool is not 1."""
    if isinstance(claimed, bool) or isinstance(actual, bool):
        return type(claimed) is type(actual) and claimed == actual
    if isinstance(claimed, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(claimed) == len(actual) and all(same_value(a, b) for a, b in zip(claimed, actual, strict=True))
    if isinstance(claimed, dict) and isinstance(actual, dict):
        return claimed.keys() == actual.keys() and all(same_value(claimed[k], actual[k]) for k in claimed)
    return bool(claimed == actual)


# ---------------------------------------------------------------- registry entries (dict and set literals)


class NotRegistry(Exception):
    """The cited definition does not assign a dict or set literal."""


def assigned_value(node: ast.AST) -> ast.expr:
    """The value expression of a module constant or class field assignment."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return node.value
    raise NotRegistry("the cited definition is not an assignment")


def registry_entries(node: ast.AST) -> dict[Any, ast.expr]:
    """Key -> value node of the dict literal assigned at `node`; for a set literal, member -> member node.

    Keys must be literals; a `**other` spread or a computed key is reported as NotRegistry."""
    value = assigned_value(node)
    if isinstance(value, ast.Dict):
        entries: dict[Any, ast.expr] = {}
        for key, item in zip(value.keys, value.values, strict=True):
            if key is None:
                raise NotRegistry(f"line {item.lineno}: `**{ast.unparse(item)}` spread into the dict")
            entries[_literal(key).value] = item
        return entries
    if isinstance(value, ast.Set):
        return {_literal(member).value: member for member in value.elts}
    raise NotRegistry(f"line {value.lineno}: `{ast.unparse(value)[:60]}` is not a dict or set literal")


def expression_value(node: ast.expr) -> Any:
    """A literal as its value; a name or attribute (`PIPELINE`, `Enum.MEMBER`) as its source text."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def registry_entry(node: ast.AST, key: Any) -> SourceDefault:
    """The value key `key` maps to in the dict literal assigned at `node` (literal or source text)."""
    entries = registry_entries(node)
    if key not in entries:
        raise NoDefault(f"key {key!r} is not in the literal")
    item = entries[key]
    return SourceDefault(expression_value(item), item.lineno)
