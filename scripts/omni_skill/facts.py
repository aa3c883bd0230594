"""Release facts: what an engine states as data, extracted by AST and YAML, never by importing.

A fact is a kind, a name, a literal default (or None) and a location (`path:line`), plus a few
literal attributes (a flag's type and choices, a registry value). Nothing else of the engine's
text is kept. `extract` reads any engine (git at a revision, a wheel, a folder); the facts of
every release and of the pin are shipped in `evidence/facts.json` (see `shipped`), so a user who
names a release can be answered without their machine.

Where each kind is looked for is the table `RULES` below: paths and constant names (where to
look), never the names or values the engine states (those are read).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .factkinds import FACTS_PATH, KINDS, PIN, matches, normalise

__all__ = ["FACTS_PATH", "KINDS", "PIN", "Fact", "FactsFile", "extract", "matches", "normalise", "timeline"]

MAX_DEFAULT_CHARS = 200  # a literal longer than this is recorded as None (too long to be a setting)
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{1,80}$")


class Files(Protocol):
    """What extraction needs of an engine: a git `Source` or a `FileTree`."""

    def text(self, path: str) -> str: ...


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    default: Any = None
    where: str = Field(description="path:line where the engine states it")
    attrs: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)

    @property
    def path(self) -> str:
        return self.where.rsplit(":", 1)[0]

    @property
    def line(self) -> int:
        return int(self.where.rsplit(":", 1)[1])


# ------------------------------------------------------------------ reading modules


class Modules:
    """Parsed modules of one engine, each parsed once."""

    def __init__(self, files: Files, paths: list[str]):
        self.files = files
        self.paths = paths
        self._set = set(paths)
        self._trees: dict[str, ast.Module | None] = {}

    def has(self, path: str) -> bool:
        return path in self._set

    def glob(self, pattern: str) -> list[str]:
        return [p for p in self.paths if fnmatch.fnmatchcase(p, pattern)]

    def containing(self, pattern: str, words: tuple[str, ...]) -> list[str]:
        """The paths of `glob(pattern)` whose text may hold one of `words`: a git engine answers
        with one search, so only those files are read; any other engine keeps them all."""
        paths = self.glob(pattern)
        search = getattr(self.files, "containing", None)
        if search is None:
            return paths
        found = search(words, pattern)
        return [p for p in paths if p in found]

    def text(self, path: str) -> str | None:
        if path not in self._set:
            return None
        try:
            return self.files.text(path)
        except (KeyError, OSError, ValueError, Exception):  # unreadable files state no facts
            return None

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self.text(path)
            try:
                self._trees[path] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]


def literal(node: ast.AST | None) -> Any:
    """A node's literal value (lists for tuples and sets, sorted sets), or None."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str) and len(value) > MAX_DEFAULT_CHARS:
        return None
    if isinstance(value, (bytes, complex)) or (isinstance(value, int) and abs(value) > 2**53):
        return None
    return value


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _name(node: ast.AST) -> str:
    """`a.b.c` of a Name/Attribute chain, else ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _type_name(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    name = _name(node)
    return name.rsplit(".", 1)[-1] if name else None


def _module_value(tree: ast.Module, name: str) -> tuple[ast.expr, int] | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value, stmt.lineno
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            if stmt.value is not None:
                return stmt.value, stmt.lineno
    return None


def _classes(tree: ast.Module) -> Iterator[ast.ClassDef]:
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            yield stmt


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([d.lineno for d in decorators] + [node.lineno])  # type: ignore[attr-defined]


# ------------------------------------------------------------------ one extractor per shape


def argparse_flags(mods: Modules, path: str, kind: str) -> Iterator[Fact]:
    """Every `*.add_argument("--x", …)` call of a module."""
    tree = mods.tree(path)
    if tree is None:
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        longs = [n for n in names if n.startswith("--")]
        if not longs:
            continue
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        attrs: dict[str, Any] = {}
        action = literal(keywords.get("action"))
        if action is None and "action" in keywords:
            action = _type_name(keywords["action"]) or "computed"
        if action is not None:
            attrs["action"] = action
        type_name = _type_name(keywords.get("type"))
        if type_name:
            attrs["type"] = type_name
        choices = literal(keywords.get("choices"))
        if choices is not None:
            attrs["choices"] = choices
        elif "choices" in keywords:
            attrs["choices"] = "computed"
        aliases = [n for n in names if n != longs[0]]
        if aliases:
            attrs["aliases"] = aliases
        if kind == "cli-flag":
            attrs["file"] = path
        default = literal(keywords.get("default")) if "default" in keywords else None
        if "default" in keywords and default is None and not _is_none(keywords["default"]):
            attrs["computed"] = True
        if "default" not in keywords and action in ("store_true", "store_false"):
            default = action == "store_false"
            attrs["implicit_default"] = True
        yield Fact(kind=kind, name=longs[0], default=default, where=f"{path}:{node.lineno}", attrs=attrs)


def _field_default(stmt: ast.AnnAssign | ast.Assign) -> tuple[Any, dict[str, Any]]:
    value = stmt.value
    attrs: dict[str, Any] = {}
    if isinstance(value, ast.Call) and _name(value.func).rsplit(".", 1)[-1] in ("field", "Field"):
        keywords = {kw.arg: kw.value for kw in value.keywords if kw.arg}
        if "default" in keywords:
            return literal(keywords["default"]), attrs
        factory = keywords.get("default_factory")
        if factory is not None:
            attrs["factory"] = _name(factory) or "computed"
            return None, attrs
        return None, {"required": True}
    if value is None:
        return None, {"required": True}
    found = literal(value)
    if found is None and not _is_none(value):
        attrs["computed"] = True
    return found, attrs


def config_fields(mods: Modules, pattern: str, suffix: str = "Config") -> Iterator[Fact]:
    """Annotated class attributes of the `*Config` classes of matching modules."""
    for path in mods.glob(pattern):
        tree = mods.tree(path)
        if tree is None:
            continue
        for cls in _classes(tree):
            if not cls.name.endswith(suffix) or cls.name.startswith("_"):
                continue
            for stmt in cls.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                field = stmt.target.id
                if field.startswith("_") or ast.unparse(stmt.annotation).startswith("ClassVar"):
                    continue
                default, attrs = _field_default(stmt)
                attrs["type"] = ast.unparse(stmt.annotation)[:80]
                yield Fact(
                    kind="config-field",
                    name=f"{cls.name}.{field}",
                    default=default,
                    where=f"{path}:{stmt.lineno}",
                    attrs=attrs,
                )


def collection_members(mods: Modules, path: str, constant: str, kind: str) -> Iterator[Fact]:
    """The string members of a module-level tuple, list, set or frozenset constant."""
    tree = mods.tree(path)
    found = _module_value(tree, constant) if tree else None
    if found is None:
        return
    node, line = found
    if isinstance(node, ast.Call) and node.args:  # frozenset({...}) / frozenset((...))
        node = node.args[0]
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return
    for element in node.elts:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            yield Fact(kind=kind, name=element.value, where=f"{path}:{element.lineno}", attrs={"in": constant})


def dict_keys(mods: Modules, path: str, constant: str, kind: str) -> Iterator[Fact]:
    """The string keys of a module-level dict literal, each with its literal value when it has one."""
    tree = mods.tree(path)
    found = _module_value(tree, constant) if tree else None
    if found is None or not isinstance(found[0], ast.Dict):
        return
    for key, value in zip(found[0].keys, found[0].values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        attrs: dict[str, Any] = {"in": constant}
        plain = literal(value)
        if plain is not None:
            attrs["value"] = plain
        yield Fact(kind=kind, name=key.value, where=f"{path}:{key.lineno}", attrs=attrs)


def enum_members(mods: Modules, path: str, cls_name: str, kind: str) -> Iterator[Fact]:
    tree = mods.tree(path)
    if tree is None:
        return
    for cls in _classes(tree):
        if cls.name != cls_name:
            continue
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                yield Fact(
                    kind=kind,
                    name=stmt.targets[0].id,
                    default=None,
                    where=f"{path}:{stmt.lineno}",
                    attrs={"in": cls_name},
                )


def call_names(mods: Modules, path: str, function: str, kind: str) -> Iterator[Fact]:
    """The first string argument of every call to `function` (e.g. a registration) in a module."""
    tree = mods.tree(path)
    if tree is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func).rsplit(".", 1)[-1] == function and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield Fact(kind=kind, name=first.value, where=f"{path}:{node.lineno}", attrs={"via": function})


def compared_values(mods: Modules, path: str, function: str, variable: str, kind: str) -> Iterator[Fact]:
    """String literals a function compares `variable` with (`== "x"`, `in ("x", "y")`)."""
    tree = mods.tree(path)
    if tree is None:
        return
    for func in ast.walk(tree):
        if not (isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name == function):
            continue
        for node in ast.walk(func):
            if not (isinstance(node, ast.Compare) and _name(node.left) == variable):
                continue
            for op, right in zip(node.ops, node.comparators, strict=True):
                values: list[ast.expr] = []
                if isinstance(op, ast.Eq):
                    values = [right]
                elif isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                    values = list(right.elts)
                for value in values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        yield Fact(kind=kind, name=value.value, where=f"{path}:{value.lineno}", attrs={"in": function})


def bundled_files(mods: Modules, pattern: str, kind: str) -> Iterator[Fact]:
    for path in mods.glob(pattern):
        name = path.rsplit("/", 1)[-1]
        if name.startswith("_") or name == "__init__.py":
            continue
        yield Fact(kind=kind, name=path.rsplit("/", 1)[-1], where=f"{path}:1", attrs={"dir": path.rsplit("/", 1)[0]})


HTTP_METHODS = ("get", "post", "put", "delete", "patch", "websocket", "api_route")
ROUTE_HINT = re.compile(
    r"""\.(?:get|post|put|delete|patch|websocket|api_route)\(\s*["']/|add_(?:api|websocket)_route\("""
)


def routes(mods: Modules, pattern: str) -> Iterator[Fact]:
    """`@router.post("/v1/x")`-style decorators and `add_api_route("/x", …, methods=[…])` calls."""
    for path in mods.glob(pattern):
        text = mods.text(path)
        tree = mods.tree(path) if text is not None and ROUTE_HINT.search(text) else None
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            if method not in HTTP_METHODS and method not in ("add_api_route", "add_websocket_route"):
                continue
            if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                continue
            route = node.args[0].value
            if not route.startswith("/"):
                continue
            if method in ("add_api_route", "api_route"):
                keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
                methods = literal(keywords.get("methods")) or ["GET"]
            elif method in ("websocket", "add_websocket_route"):
                methods = ["WEBSOCKET"]
            else:
                methods = [method.upper()]
            for verb in methods:
                yield Fact(kind="endpoint", name=f"{str(verb).upper()} {route}", where=f"{path}:{node.lineno}")


def signature_keywords(mods: Modules, path: str, qualname: str) -> Iterator[Fact]:
    """The keyword parameters (with literal defaults) of `Class.method` or `function`."""
    tree = mods.tree(path)
    if tree is None:
        return
    *owner, name = qualname.split(".")
    body: list[ast.stmt] = tree.body
    for part in owner:
        found = next((c for c in body if isinstance(c, ast.ClassDef) and c.name == part), None)
        if found is None:
            return
        body = found.body
    defs = [f for f in body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name]
    plain = [f for f in defs if not any(_name(d).rsplit(".", 1)[-1] == "overload" for d in f.decorator_list)]
    for func in plain[:1] or defs[:1]:  # the implementation, not its typing overloads
        args = func.args
        positional = args.posonlyargs + args.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(args.args, defaults[len(args.posonlyargs) :], strict=True))
        pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
        for arg, default in pairs:
            if arg.arg in ("self", "cls"):
                continue
            attrs: dict[str, Any] = {}
            if arg.annotation is not None:
                attrs["type"] = ast.unparse(arg.annotation)[:80]
            if default is None:
                attrs["required"] = True
            elif literal(default) is None and not _is_none(default):
                attrs["computed"] = True
            yield Fact(
                kind="entry-kwarg",
                name=f"{qualname}:{arg.arg}",
                default=literal(default),
                where=f"{path}:{arg.lineno}",
                attrs=attrs,
            )
        if args.kwarg is not None:
            yield Fact(
                kind="entry-kwarg",
                name=f"{qualname}:**{args.kwarg.arg}",
                where=f"{path}:{args.kwarg.lineno}",
                attrs={"variadic": True},
            )
        return


def kwargs_reads(mods: Modules, path: str) -> Iterator[Fact]:
    """Keywords an entry point takes through `**kwargs`: `kwargs.get("x", d)` / `kwargs.pop("x", d)` /
    `kwargs["x"]` in the methods of a module's classes, named `Class.method:x`."""
    tree = mods.tree(path)
    if tree is None:
        return
    for cls in _classes(tree):
        for func in cls.body:
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                name: str | None = None
                default: Any = None
                attrs: dict[str, Any] = {"via": "**kwargs"}
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "pop")
                    and _name(node.func.value) == "kwargs"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    name = node.args[0].value
                    default = literal(node.args[1]) if len(node.args) > 1 else None
                    if len(node.args) > 1 and default is None and not _is_none(node.args[1]):
                        attrs["computed"] = True
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and _name(node.value) == "kwargs"
                    and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str)
                ):
                    name, attrs = node.slice.value, {"via": "**kwargs", "required": True}
                if name:
                    yield Fact(
                        kind="entry-kwarg",
                        name=f"{cls.name}.{func.name}:{name}",
                        default=default,
                        where=f"{path}:{getattr(node, 'lineno', func.lineno)}",
                        attrs=attrs,
                    )


ENV_READERS = ("os.environ.get", "os.getenv", "environ.get", "getenv", "os.environ.setdefault")
# A scan proposes each read; the expression it starts is then parsed on its own to confirm it.
ENV_READ = re.compile(
    r"""(?:\b(?:os\.)?(?:getenv|environ\.get|environ\.setdefault)\(|\b(?:os\.)?environ\[|["'][A-Z][A-Z0-9_]+["']\s+in\s+(?:os\.)?environ\b)"""
)


def _expression_at(text: str, start: int) -> tuple[ast.expr, int] | None:
    """The Python expression that begins at `start` (brackets balanced, strings skipped), parsed,
    and its length in characters."""
    import io
    import tokenize

    depth, seen = 0, False
    end = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text[start : start + 4000]).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth, seen = depth + 1, True
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth == 0 and seen:
                    end = token.end
                    break
            elif token.type in (tokenize.NEWLINE, tokenize.NL) and depth == 0:
                end = token.start
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if end is None:
        return None
    lines = text[start : start + 4000].splitlines(keepends=True)
    chunk = "".join(lines[: end[0] - 1]) + lines[end[0] - 1][: end[1]]
    try:
        body = ast.parse(chunk.strip().rstrip(":"), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return body, len(chunk)


def _env_read(node: ast.expr) -> tuple[str, Any, dict[str, Any]] | None:
    """(name, default, attrs) of one read of the environment by a literal name."""
    if isinstance(node, ast.Call) and _name(node.func) in ENV_READERS and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if len(node.args) > 1:
                return first.value, literal(node.args[1]), {}
            return first.value, None, {"unset": True}
    if isinstance(node, ast.Subscript) and _name(node.value) in ("os.environ", "environ"):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, None, {"required": True}
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
        if _name(node.comparators[0]) in ("os.environ", "environ"):
            left = node.left
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                return left.value, None, {"unset": True}
    return None


def environment(mods: Modules, pattern: str) -> Iterator[Fact]:
    """Environment variables read by a literal name: `os.getenv("X", d)`, `os.environ.get("X", d)`,
    `os.environ["X"]` (not an assignment to it), `"X" in os.environ`; one fact per read."""
    for path in mods.containing(pattern, ("environ", "getenv")):
        text = mods.text(path)
        if text is None or ("environ" not in text and "getenv" not in text):
            continue
        for match in ENV_READ.finditer(text):
            start = match.start()
            parsed = _expression_at(text, start)
            if parsed is None:
                continue
            node, length = parsed
            if isinstance(node, ast.Subscript):  # `os.environ["X"] = v` is a write
                after = text[start + length : start + length + 200].lstrip(" \t")
                if after.startswith("=") and not after.startswith("=="):
                    continue
            found = _env_read(node)
            if found is None or not ENV_NAME.match(found[0]):
                continue
            line = text.count("\n", 0, start) + 1
            yield Fact(kind="env", name=found[0], default=found[1], where=f"{path}:{line}", attrs=found[2])


# ------------------------------------------------------------------ where each kind is looked for


def each(mods: Modules, pattern: str, run: Callable[[Modules, str, str], Iterator[Fact]], kind: str) -> Iterator[Fact]:
    for path in mods.glob(pattern):
        yield from run(mods, path, kind)


@dataclass(frozen=True)
class Rule:
    kind: str
    run: Callable[[Modules], Iterator[Fact]]


SERVE = "vllm_omni/entrypoints/cli/serve.py"
STAGE_CONFIG = "vllm_omni/config/stage_config.py"

RULES: tuple[Rule, ...] = (
    Rule("flag", lambda m: argparse_flags(m, SERVE, "flag")),
    Rule("cli-flag", lambda m: argparse_flags(m, "vllm_omni/entrypoints/cli/main.py", "cli-flag")),
    Rule(
        "cli-flag",
        lambda m: (
            f for p in m.glob("vllm_omni/entrypoints/cli/benchmark/*.py") for f in argparse_flags(m, p, "cli-flag")
        ),
    ),
    Rule("cli-flag", lambda m: argparse_flags(m, "vllm_omni/engine/arg_utils.py", "cli-flag")),
    Rule("config-field", lambda m: config_fields(m, STAGE_CONFIG)),
    Rule("config-field", lambda m: config_fields(m, "vllm_omni/diffusion/data.py")),
    Rule("reserved-key", lambda m: collection_members(m, STAGE_CONFIG, "_STAGE_RESERVED_KEYS", "reserved-key")),
    Rule(
        "pipeline-wide-field",
        lambda m: collection_members(m, STAGE_CONFIG, "_PIPELINE_WIDE_ENGINE_FIELDS", "pipeline-wide-field"),
    ),
    Rule("deep-merge-key", lambda m: collection_members(m, STAGE_CONFIG, "_DEEP_MERGE_KEYS", "deep-merge-key")),
    Rule("env", lambda m: environment(m, "vllm_omni/*.py")),
    Rule("pipeline", lambda m: dict_keys(m, "vllm_omni/config/pipeline_registry.py", "OMNI_PIPELINES", "pipeline")),
    Rule(
        "diffusion-model",
        lambda m: dict_keys(m, "vllm_omni/diffusion/registry.py", "_DIFFUSION_MODELS", "diffusion-model"),
    ),
    Rule("deploy-file", lambda m: bundled_files(m, "vllm_omni/deploy/*.yaml", "deploy-file")),
    Rule("deploy-file", lambda m: bundled_files(m, "vllm_omni/model_executor/stage_configs/*.yaml", "deploy-file")),
    Rule("endpoint", lambda m: routes(m, "vllm_omni/entrypoints/openai/*.py")),
    Rule(
        "cache-backend",
        lambda m: compared_values(
            m, "vllm_omni/diffusion/cache/selector.py", "get_cache_backend", "cache_backend", "cache-backend"
        ),
    ),
    Rule(
        "connector",
        lambda m: call_names(m, "vllm_omni/distributed/omni_connectors/factory.py", "register_connector", "connector"),
    ),
    Rule(
        "attention-backend",
        lambda m: enum_members(
            m,
            "vllm_omni/diffusion/attention/backends/registry.py",
            "DiffusionAttentionBackendEnum",
            "attention-backend",
        ),
    ),
    Rule(
        "quantization-method",
        lambda m: dict_keys(m, "vllm_omni/quantization/factory.py", "_OVERRIDES", "quantization-method"),
    ),
    Rule("entry-kwarg", lambda m: signature_keywords(m, "vllm_omni/entrypoints/omni_base.py", "OmniBase.__init__")),
    Rule("entry-kwarg", lambda m: signature_keywords(m, "vllm_omni/entrypoints/omni.py", "Omni.__init__")),
    Rule("entry-kwarg", lambda m: signature_keywords(m, "vllm_omni/entrypoints/omni.py", "Omni.generate")),
    Rule("entry-kwarg", lambda m: signature_keywords(m, "vllm_omni/entrypoints/async_omni.py", "AsyncOmni.__init__")),
    Rule("entry-kwarg", lambda m: signature_keywords(m, "vllm_omni/entrypoints/async_omni.py", "AsyncOmni.generate")),
    Rule("entry-kwarg", lambda m: kwargs_reads(m, "vllm_omni/entrypoints/omni_base.py")),
    Rule("entry-kwarg", lambda m: kwargs_reads(m, "vllm_omni/entrypoints/omni.py")),
    Rule("entry-kwarg", lambda m: kwargs_reads(m, "vllm_omni/entrypoints/async_omni.py")),
)


def extract(files: Files, paths: list[str], kinds: set[str] | None = None) -> list[Fact]:
    """Every fact of one engine, one per (kind, name): the first place in path order states it."""
    mods = Modules(files, paths)
    found: dict[tuple[str, str], Fact] = {}
    reads: dict[tuple[str, str], int] = {}
    for rule in RULES:
        if kinds is not None and rule.kind not in kinds:
            continue
        for fact in rule.run(mods):
            reads[fact.key] = reads.get(fact.key, 0) + 1
            kept = found.get(fact.key)
            if kept is None or (fact.kind == "env" and kept.default is None and fact.default is not None):
                found[fact.key] = fact
    result = []
    for key, fact in found.items():
        if fact.kind == "env" and reads[key] > 1:
            fact = fact.model_copy(update={"attrs": {**fact.attrs, "reads": reads[key]}})
        result.append(fact)
    return sorted(result, key=lambda f: (f.kind, f.name))


# ------------------------------------------------------------------ the shipped timeline

FACTS_SCHEMA_PATH = "evidence/facts.schema.json"


class EngineStamp(BaseModel):
    """One column of the timeline: a release (by version) or the pinned revision."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="the release version, or 'pin'")
    date: str = Field(description="release: newest member date of its wheel; pin: the commit date")
    revision: str = ""


class Era(BaseModel):
    """Consecutive engines in which a fact reads the same (default, attributes, file)."""

    model_config = ConfigDict(extra="forbid")

    engines: list[str]
    default: Any = None
    attrs: dict[str, Any] = Field(default_factory=dict)
    path: str
    lines: list[int] = Field(description="the line in each engine of `engines`, in the same order")


class FactTimeline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    name: str
    eras: list[Era]


class FactsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    revision: str
    engines: list[EngineStamp] = Field(description="oldest first; the pin sits where its date puts it")
    facts: list[FactTimeline]

    def order(self) -> list[str]:
        return [e.id for e in self.engines]

    def at(self, engine: str, kinds: set[str] | None = None) -> list[Fact]:
        """The facts of one engine, as `extract` gave them."""
        found = []
        for timeline in self.facts:
            if kinds and timeline.kind not in kinds:
                continue
            for era in timeline.eras:
                if engine in era.engines:
                    line = era.lines[era.engines.index(engine)]
                    found.append(
                        Fact(
                            kind=timeline.kind,
                            name=timeline.name,
                            default=era.default,
                            where=f"{era.path}:{line}",
                            attrs=era.attrs,
                        )
                    )
        return found


def timeline(stamps: list[EngineStamp], per_engine: dict[str, list[Fact]], revision: str) -> FactsFile:
    """Merge each engine's facts into one timeline per fact; engines in date order."""
    stamps = sorted(stamps, key=lambda s: (s.date, s.id))
    keyed: dict[tuple[str, str], list[tuple[str, Fact]]] = {}
    for stamp in stamps:
        for fact in per_engine[stamp.id]:
            keyed.setdefault(fact.key, []).append((stamp.id, fact))
    facts = []
    for (kind, name), seen in sorted(keyed.items()):
        eras: list[Era] = []
        previous: str | None = None
        for engine, fact in seen:
            position = [s.id for s in stamps].index(engine)
            same = (
                eras
                and previous is not None
                and [s.id for s in stamps].index(previous) == position - 1
                and eras[-1].default == fact.default
                and eras[-1].attrs == fact.attrs
                and eras[-1].path == fact.path
            )
            if same:
                eras[-1].engines.append(engine)
                eras[-1].lines.append(fact.line)
            else:
                eras.append(
                    Era(engines=[engine], default=fact.default, attrs=fact.attrs, path=fact.path, lines=[fact.line])
                )
            previous = engine
        facts.append(FactTimeline(kind=kind, name=name, eras=eras))
    return FactsFile(revision=revision, engines=stamps, facts=facts)


def load_facts(root: Any) -> FactsFile | None:
    """The shipped timeline, or None when the skill has none (read by the strict JSON reader);
    within `check`, loaded once for the checks that read it."""
    from .skill import loaded_once

    return loaded_once("facts", root / FACTS_PATH, lambda: _load_facts(root))


def _load_facts(root: Any) -> FactsFile | None:
    from .safeio import read_json

    try:
        data = read_json(root / FACTS_PATH)
    except FileNotFoundError:
        return None
    return FactsFile.model_validate(data)


REFRESH = "omni-skill releases --wheel DIR --source ENGINE"


def check_facts(root: Any, revision: str, releases: list[str] | None) -> list[Any]:
    """The shipped facts: valid, at the pinned revision, over the same releases as the release
    matrix, each era's engines in timeline order with one line each; the schema current."""
    from pydantic import ValidationError

    from .findings import Finding, stale_schema, validation_findings

    try:
        found = load_facts(root)
    except ValidationError as exc:
        return validation_findings(FACTS_PATH, exc, "facts-invalid")
    except (ValueError, UnicodeDecodeError) as exc:
        return [Finding(kind="facts-invalid", file=FACTS_PATH, message=str(exc).splitlines()[0])]
    if found is None:
        return []
    findings = stale_schema(root, FACTS_SCHEMA_PATH, schema_json(), "facts", REFRESH)

    def add(message: str) -> None:
        findings.append(Finding(kind="facts-stale", file=FACTS_PATH, message=f"{message}: run `{REFRESH}`"))

    order = found.order()
    if found.revision != revision:
        add(f"computed at {found.revision[:12]}, the skill is pinned at {revision[:12]}")
    if PIN not in order or len(set(order)) != len(order):
        add("the engines must name the pin once and each release once")
    if releases is not None and sorted(set(order) - {PIN}) != sorted(releases):
        add(f"its releases ({', '.join(sorted(set(order) - {PIN}))}) differ from the release matrix's")
    for item in found.facts:
        seen = [e for era in item.eras for e in era.engines]
        if any(e not in order for e in seen) or seen != sorted(
            seen, key=lambda e: order.index(e) if e in order else -1
        ):
            add(f"{item.kind} {item.name}: its eras name unknown engines or are out of order")
            break
        if any(len(era.lines) != len(era.engines) for era in item.eras):
            add(f"{item.kind} {item.name}: an era's lines do not match its engines")
            break
    return findings


def check_pin_facts(root: Any, files: Files, paths: list[str]) -> list[Any]:
    """With the engine: the pin's shipped facts are what extraction finds at the pinned revision."""
    from .findings import Finding

    found = load_facts(root)
    if found is None:
        return []
    shipped = {f.key: f for f in found.at(PIN)}
    live = {f.key: f for f in extract(files, paths)}
    findings = []
    for key in sorted(set(shipped) | set(live)):
        if shipped.get(key) != live.get(key):
            what = (
                "missing from"
                if key not in shipped
                else "not at the revision, but in"
                if key not in live
                else "differs in"
            )
            findings.append(
                Finding(kind="facts-stale", file=FACTS_PATH, message=f"{key[0]} {key[1]}: {what} the shipped facts")
            )
    return findings[:50]


def facts_json(facts: FactsFile) -> str:
    """One timeline a line: compact, and a release that changes one fact changes one line."""
    import json

    head = facts.model_dump(mode="json", exclude={"facts"})
    lines = [json.dumps(t.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) for t in facts.facts]
    text = json.dumps(head, ensure_ascii=False, sort_keys=True)[:-1] + ', "facts": [\n'
    return text + ",\n".join(lines) + "\n]}\n"


def schema_json() -> str:
    import json

    return json.dumps(FactsFile.model_json_schema(), indent=2, sort_keys=True) + "\n"
