"""The model catalogue (`references/architecture-search/models.yaml`): every pipeline-registry key
and diffusion-registry model at the pinned revision, each fact with its citation.

`check_models` proves the catalogue against the engine source:
- completeness: every key of every registry literal named in `registries` has an entry, and every
  entry names a key that is there;
- registry entries: the value each key maps to (a dict-entry value claim, `claims.registry_entry`);
- pipeline configs: each cited `PipelineConfig(...)` constant's fields and stages, keyword by
  keyword, with `StagePipelineConfig` field defaults for what a stage leaves out, and the names a
  variant resolver returns;
- deploy files: `stages[n].<field>` of each cited deploy YAML, matched by `stage_id`;
- diffusion classes: the module the registry tuple names holds the class, and the class attributes
  `supports_request_batch` / `support_audio_output` as the class resolves them (its bases followed
  through the engine's imports), else the `getattr` fallback of the engine function that reads them.
"""

from __future__ import annotations

import ast
import copy
import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, partial
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .anchors import AnchorError, python
from .anchors.yaml_keys import LOADER
from .claims import (
    NoDefault,
    NotLiteral,
    NotRegistry,
    assigned_value,
    expression_value,
    registry_entries,
    same_value,
)
from .deploy_platforms import PlatformSection, compare_sections
from .errors import UsageError
from .findings import Finding, validation_findings
from .labels import LabelError, parse_label
from .source import BlobError, Source
from .yamlcheck import construct, plain_document

MODELS_PATH = "references/architecture-search/models.yaml"
STAGE_CLASS = "src:vllm_omni/config/stage_config.py::StagePipelineConfig"
STAGE_FIELDS = (
    "stage_id",
    "model_stage",
    "execution_type",
    "final_output",
    "final_output_type",
    "sampling_constraints",
)
CONFIG_FIELDS = ("model_type", "model_arch", "default_deploy_config_name", "hf_architectures", "diffusers_class_name")
DEPLOY_FIELDS = ("devices", "gpu_memory_utilization", "num_replicas", "max_num_seqs")
DIFFUSION_PACKAGE = "vllm_omni.diffusion.models"
CLASS_FLAGS = {"request_batch": "supports_request_batch", "audio_output": "support_audio_output"}
SIDE_REGISTRIES = ("post_process", "pre_process", "ir_op_priority", "no_cache_acceleration")

Path_ = tuple[str | int, ...]


# ---------------------------------------------------------------- the format


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Label(_Model):
    source: str = Field(pattern=r"^src:")


class Registration(Label):
    what: str = Field(min_length=1)


class Registries(_Model):
    pipelines: str = Field(pattern=r"^src:.*\.py::")
    diffusion: str = Field(pattern=r"^src:.*\.py::")
    post_process: str = Field(pattern=r"^src:.*\.py::")
    pre_process: str = Field(pattern=r"^src:.*\.py::")
    ir_op_priority: str = Field(pattern=r"^src:.*\.py::")
    no_cache_acceleration: str = Field(pattern=r"^src:.*\.py::")


class Resolver(Label):
    returns: list[str] = Field(min_length=1)


class PipelineStage(_Model):
    stage_id: int
    model_stage: str
    execution_type: str
    final_output: bool
    final_output_type: str | None = None
    sampling_constraints: dict[str, Any] | None = None


class DeployStage(_Model):
    stage_id: int
    devices: Any = None
    gpu_memory_utilization: Any = None
    num_replicas: Any = None
    max_num_seqs: Any = None


class DeployFile(Label):
    role: Literal["default", "variant"]
    base_config: str | None = None
    stages: list[DeployStage] = Field(default_factory=list)
    platforms: list[PlatformSection] = Field(default_factory=list)  # deploy_platforms.py


class PipelineConfigEntry(Label):
    name: str
    model_type: str
    model_arch: str | None = None
    default_deploy_config_name: str | None = None
    hf_architectures: list[str] | None = None
    diffusers_class_name: str | None = None
    stages: list[PipelineStage] = Field(min_length=1)
    deploy: list[DeployFile] = Field(default_factory=list)


class PipelineEntry(Label):
    key: str
    value: str = Field(description="the expression the registry maps the key to")
    alias_of: str | None = None
    resolver: Resolver | None = None
    configs: list[PipelineConfigEntry] = Field(default_factory=list)


class Flag(Label):
    value: bool


class Mapped(Label):
    value: Any


class DiffusionEntry(_Model):
    arch: str
    source: str | None = Field(default=None, pattern=r"^src:")
    value: list[str] | None = None
    class_: str | None = Field(default=None, alias="class", pattern=r"^src:.*\.py::")
    request_batch: Flag | None = None
    audio_output: Flag | None = None
    post_process: Mapped | None = None
    pre_process: Mapped | None = None
    ir_op_priority: Mapped | None = None
    no_cache_acceleration: Label | None = None
    note: str | None = None


class Catalogue(_Model):
    version: Literal[1]
    registries: Registries
    registration: list[Registration] = Field(default_factory=list)
    facts: list[Registration] = Field(default_factory=list)
    pipelines: list[PipelineEntry]
    diffusion: list[DiffusionEntry]


# ---------------------------------------------------------------- loading


@dataclass
class Loaded:
    catalogue: Catalogue | None
    text: str = ""  # the file, composed for line numbers only when a finding needs one
    findings: list[Finding] = field(default_factory=list)
    node: yaml.Node | None = None  # the composed file, when the caller had it

    @cached_property
    def lines(self) -> dict[Path_, int]:
        found: dict[Path_, int] = {}
        node = self.node if self.node is not None or not self.text else yaml.compose(self.text, Loader=LOADER)
        if node is not None:
            _node_lines(node, (), found)
        return found

    def line(self, *path: str | int) -> int:
        """The models.yaml line of `path`, else of its nearest listed parent."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 0


def _node_lines(node: yaml.Node, path: Path_, out: dict[Path_, int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                _node_lines(value, (*path, key.value), out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _node_lines(item, (*path, index), out)


def _duplicates(catalogue: Catalogue) -> list[Finding]:
    findings = []
    for what, names in (
        ("pipeline key", [p.key for p in catalogue.pipelines]),
        ("diffusion arch", [d.arch for d in catalogue.diffusion]),
    ):
        for name in sorted({n for n in names if names.count(n) > 1}):
            findings.append(
                Finding(kind="models-invalid", file=MODELS_PATH, message=f"{what} {name!r} is listed twice")
            )
    return findings


def load(root: Path, node: yaml.Node | None = None) -> Loaded:
    """The catalogue and what is wrong with its format. `node`: the file already composed (by
    `check`'s read of the skill), else the file is read and parsed here."""
    if node is not None:
        return _validated(construct(node), Loaded(None, node=node))
    path = root / MODELS_PATH
    if not path.exists():
        return Loaded(None)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return Loaded(
            None,
            findings=[Finding(kind="yaml-invalid", file=MODELS_PATH, message=f"not valid UTF-8 (byte {exc.start})")],
        )
    try:
        node, problems = plain_document(text)
        if problems:
            return Loaded(
                None, findings=[Finding(kind="yaml-invalid", file=MODELS_PATH, line=n, message=m) for n, m in problems]
            )
        data = construct(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        finding = Finding(
            kind="yaml-invalid", file=MODELS_PATH, line=mark.line + 1 if mark else 0, message="not valid YAML"
        )
        return Loaded(None, findings=[finding])
    return _validated(data, Loaded(None, text, node=node))


def _validated(data: Any, loaded: Loaded) -> Loaded:
    try:
        loaded.catalogue = Catalogue.model_validate(data)
    except ValidationError as exc:
        loaded.findings = validation_findings(MODELS_PATH, exc, "models-invalid")
        return loaded
    loaded.findings = _duplicates(loaded.catalogue)
    return loaded


def load_models(root: Path) -> tuple[Catalogue | None, list[Finding]]:
    """The catalogue (None when absent or invalid) and what is wrong with its format."""
    loaded = load(root)
    return loaded.catalogue, loaded.findings


# ---------------------------------------------------------------- lookups


def select(catalogue: Catalogue, name: str) -> PipelineEntry | DiffusionEntry | None:
    """The pipeline entry for a registry key or the diffusion entry for an architecture;
    exact match first, then case-insensitive."""
    entries: list[PipelineEntry | DiffusionEntry] = [*catalogue.pipelines, *catalogue.diffusion]
    for exact in (True, False):
        for entry in entries:
            key = entry.key if isinstance(entry, PipelineEntry) else entry.arch
            if key == name or (not exact and key.lower() == name.lower()):
                return entry
    return None


def _dump(entry: BaseModel) -> dict[str, Any]:
    return entry.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


def models_data(root: Path, name: str | None) -> dict[str, Any]:
    """What the `models` verb prints: the whole catalogue, or the one entry `name` names."""
    catalogue, findings = load_models(root)
    if catalogue is None:
        problem = findings[0].one_line() if findings else f"{MODELS_PATH} is missing"
        raise UsageError(problem)
    if name is None:
        return _dump(catalogue)
    entry = select(catalogue, name)
    if entry is None:
        known = [p.key for p in catalogue.pipelines] + [d.arch for d in catalogue.diffusion]
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UsageError(f"no pipeline key or diffusion model named {name!r}{hint}")
    if isinstance(entry, PipelineEntry):
        return {"pipelines": [_dump(entry)]}
    return {"diffusion": [_dump(entry)]}


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


class Engine:
    """Parsed modules of one `Source`, and the definitions labels name."""

    def __init__(self, source: Source):
        self.source = source
        self._trees: dict[str, ast.Module] = {}
        self._constants: dict[str, dict[str, ast.expr]] = {}
        self._classes: dict[tuple[str, str], tuple[str, ast.ClassDef] | None] = {}
        self._mros: dict[tuple[str, int], list[tuple[str, ast.ClassDef]]] = {}
        self._stage_defaults: dict[str, Any] | None = None

    def stage_defaults(self) -> dict[str, Any]:
        if self._stage_defaults is None:
            self._stage_defaults = _stage_defaults(self)
        return self._stage_defaults

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


def class_attribute(engine: Engine, path: str, cls: ast.ClassDef, name: str) -> tuple[str, Any] | None:
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


# ---------------------------------------------------------------- checking


@dataclass
class Checker:
    engine: Engine
    loaded: Loaded
    findings: list[Finding] = field(default_factory=list)

    def add(self, kind: str, path: Path_, message: str, label: str = "") -> None:
        self.findings.append(
            Finding(kind=kind, file=MODELS_PATH, line=self.loaded.line(*path), message=message, label=label)
        )

    def compare(self, path: Path_, what: str, claimed: Any, actual: Any, label: str) -> None:
        if not same_value(claimed, actual):
            self.add(
                "models-mismatch", path, f"{what}: the catalogue says {claimed!r}, the source says {actual!r}", label
            )

    def registry(self, label: str, path: Path_) -> dict[Any, ast.expr] | None:
        try:
            return registry_entries(self.engine.node(label))
        except Unavailable:
            return None  # reported by the record checks
        except (NotRegistry, NotLiteral) as exc:
            self.add("models-unresolved", path, f"{label}: {exc}", label)
            return None


def _completeness(check: Checker, label: str, keys: set[Any], listed: Mapping[Any, Path_], what: str) -> None:
    for key in sorted(keys - set(listed), key=str):
        check.add("models-missing", ("registries",), f"{what} {key!r} of {label} has no entry in the catalogue", label)
    for key in sorted(set(listed) - keys, key=str):
        check.add("models-extra", listed[key], f"{what} {key!r} is not a key of {label} at the revision", label)


# --- pipelines


def _stage_defaults(engine: Engine) -> dict[str, Any]:
    node = engine.node(STAGE_CLASS)
    defaults: dict[str, Any] = {}
    if not isinstance(node, ast.ClassDef):
        return defaults
    for name in STAGE_FIELDS:
        stmt = _class_field(node, name)
        if stmt is None or stmt.value is None:
            continue
        value = stmt.value
        if isinstance(value, ast.Call):  # field(default_factory=dict) / field(default=...)
            keywords = {kw.arg: kw.value for kw in value.keywords}
            if "default" in keywords:
                value = keywords["default"]
            elif "default_factory" in keywords and ast.unparse(keywords["default_factory"]) in ("dict", "list"):
                defaults[name] = {} if ast.unparse(keywords["default_factory"]) == "dict" else []
                continue
            else:
                continue
        defaults[name] = _value(value, lambda _name: None)
    return defaults


class _Inline(ast.NodeTransformer):
    """Replaces names of module constants that hold literals by those literals."""

    def __init__(self, lookup: Callable[[str], ast.expr | None]):
        self.lookup = lookup

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.lookup(node.id)
        if value is None:
            return node
        try:
            return ast.copy_location(ast.Constant(ast.literal_eval(value)), node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return node


def _value(node: ast.expr, lookup: Callable[[str], ast.expr | None]) -> Any:
    """A keyword's value: a literal (module constants inside it inlined); an enum member's name;
    else its source text."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id[:1].isupper():
        return node.attr
    inlined = _Inline(lookup).visit(copy.deepcopy(node))
    value = expression_value(inlined)
    return tuple(value) if isinstance(value, list) and isinstance(node, ast.Tuple) else value


def _keywords(call: ast.Call) -> dict[str, ast.expr]:
    return {kw.arg: kw.value for kw in call.keywords if kw.arg}


def _stages_node(engine: Engine, path: str, call: ast.Call, depth: int = 0) -> list[ast.expr] | None:
    node = _keywords(call).get("stages")
    if isinstance(node, (ast.Tuple, ast.List)):
        return list(node.elts)
    if isinstance(node, ast.Attribute) and node.attr == "stages" and isinstance(node.value, ast.Name) and depth < 4:
        other = engine.constants(path).get(node.value.id)  # stages=OTHER_PIPELINE.stages
        if isinstance(other, ast.Call):
            return _stages_node(engine, path, other, depth + 1)
    return None


def _check_stages(check: Checker, where: Path_, config: PipelineConfigEntry, call: ast.Call, path: str) -> None:
    constants = partial(check.engine.constant, path)
    nodes = _stages_node(check.engine, path, call)
    if nodes is None:
        check.add("models-unresolved", where, f"{config.source}: stages are not a literal tuple", config.source)
        return
    if len(nodes) != len(config.stages):
        check.add(
            "models-mismatch",
            (*where, "stages"),
            f"{config.source}: {len(nodes)} stages in the source, {len(config.stages)} in the catalogue",
            config.source,
        )
        return
    defaults = check.engine.stage_defaults()
    for index, (node, stage) in enumerate(zip(nodes, config.stages, strict=True)):
        if not isinstance(node, ast.Call):
            check.add("models-unresolved", (*where, "stages", index), f"{config.source}: stage {index} is not a call")
            continue
        keywords = _keywords(node)
        claimed = stage.model_dump()
        for name in STAGE_FIELDS:
            actual = _value(keywords[name], constants) if name in keywords else defaults.get(name)
            mine = claimed[name]
            if name == "sampling_constraints" and mine is None:
                mine = {}
            check.compare(
                (*where, "stages", index, name), f"{config.name} stages[{index}].{name}", mine, actual, config.source
            )


def _check_config(check: Checker, where: Path_, config: PipelineConfigEntry, expected_path: str | None) -> None:
    label = parse_label(config.source)
    if label.anchor != config.name:
        check.add("models-mismatch", (*where, "name"), f"{config.source} does not cite {config.name}", config.source)
    if expected_path is not None and label.path != expected_path:
        check.add(
            "models-mismatch",
            (*where, "source"),
            f"{config.name} is imported from {expected_path}, the catalogue cites {label.path}",
            config.source,
        )
    try:
        value = assigned_value(check.engine.node(config.source))
    except Unavailable:
        return
    except NotRegistry as exc:
        check.add("models-unresolved", (*where, "source"), f"{config.source}: {exc}", config.source)
        return
    if not isinstance(value, ast.Call):
        check.add("models-unresolved", (*where, "source"), f"{config.source}: not a PipelineConfig(...) call")
        return
    keywords = _keywords(value)
    constants = partial(check.engine.constant, label.path)
    claimed = config.model_dump()
    for name in CONFIG_FIELDS:
        actual = _value(keywords[name], constants) if name in keywords else None
        check.compare((*where, name), f"{config.name}.{name}", claimed[name], actual, config.source)
    _check_stages(check, where, config, value, label.path)
    defaults = [d for d in config.deploy if d.role == "default"]
    named = [parse_label(d.source).path.rsplit("/", 1)[-1] for d in defaults]
    wanted = [config.default_deploy_config_name] if config.default_deploy_config_name else []
    if named != wanted:
        check.add(
            "models-mismatch",
            (*where, "deploy"),
            f"{config.name}: default deploy file {wanted or 'none'} in the source, {named or 'none'} in the catalogue",
            config.source,
        )
    for index, deploy in enumerate(config.deploy):
        _check_deploy(check, (*where, "deploy", index), deploy)


def _check_deploy(check: Checker, where: Path_, deploy: DeployFile) -> None:
    label = parse_label(deploy.source)
    try:
        data = yaml.load(check.engine.source.text(label.path), Loader=LOADER)
    except (KeyError, BlobError):
        return  # reported by the record checks
    except yaml.YAMLError:
        check.add("models-unresolved", where, f"{label.path} is not valid YAML at the revision", deploy.source)
        return
    data = data if isinstance(data, dict) else {}
    check.compare(
        (*where, "base_config"), f"{label.path} base_config", deploy.base_config, data.get("base_config"), deploy.source
    )
    stages = data.get("stages") or []
    by_id = {s.get("stage_id"): (i, s) for i, s in enumerate(stages) if isinstance(s, dict)}
    listed = {s.stage_id for s in deploy.stages}
    for stage_id in sorted(set(by_id) - listed, key=str):
        check.add(
            "models-missing", (*where, "stages"), f"{label.path}: stage_id {stage_id} has no entry", deploy.source
        )
    for index, stage in enumerate(deploy.stages):
        if stage.stage_id not in by_id:
            check.add(
                "models-extra",
                (*where, "stages", index),
                f"{label.path}: no stage with stage_id {stage.stage_id}",
                deploy.source,
            )
            continue
        position, actual = by_id[stage.stage_id]
        claimed = stage.model_dump()
        for name in DEPLOY_FIELDS:
            check.compare(
                (*where, "stages", index, name),
                f"{label.path} stages[{position}].{name}",
                claimed[name],
                actual.get(name),
                deploy.source,
            )
    for kind, path, message in compare_sections(deploy.platforms, data):
        check.add(kind, (*where, *path), f"{label.path}: {message}", deploy.source)


def _resolver_returns(node: ast.AST) -> list[str]:
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    return [ast.unparse(n.value) for n in sorted(returns, key=lambda n: (n.lineno, n.col_offset)) if n.value]


def _check_pipelines(check: Checker, catalogue: Catalogue) -> None:
    label = catalogue.registries.pipelines
    entries = check.registry(label, ("registries", "pipelines"))
    if entries is None:
        return
    registry_path = parse_label(label).path
    listed = {p.key: ("pipelines", i, "key") for i, p in enumerate(catalogue.pipelines)}
    _completeness(check, label, set(entries), listed, "pipeline key")
    by_key = {p.key: p for p in catalogue.pipelines}
    for i, entry in enumerate(catalogue.pipelines):
        where: Path_ = ("pipelines", i)
        if entry.source != label:
            check.add("models-mismatch", (*where, "source"), f"{entry.key}: cite the registry {label}", entry.source)
        if entry.key not in entries:
            continue
        actual = expression_value(entries[entry.key])
        check.compare((*where, "value"), f"{label} [{entry.key!r}]", entry.value, actual, label)
        _check_alias(check, where, entry, by_key)
        imported = check.engine.imported(registry_path, entry.value)
        expected = check.engine.module_file(imported[0]) if imported else None
        if entry.resolver is not None:
            _check_resolver(check, where, entry, expected)
            continue
        for j, config in enumerate(entry.configs):
            _check_config(check, (*where, "configs", j), config, expected)


def _check_alias(check: Checker, where: Path_, entry: PipelineEntry, by_key: dict[str, PipelineEntry]) -> None:
    same = sorted(k for k, other in by_key.items() if other.value == entry.value and k != entry.key)
    if entry.alias_of is not None:
        target = by_key.get(entry.alias_of)
        if target is None or target.value != entry.value or target.alias_of is not None:
            check.add(
                "models-mismatch", (*where, "alias_of"), f"{entry.key}: alias_of {entry.alias_of!r} maps elsewhere"
            )
        if entry.configs or entry.resolver:
            check.add("models-invalid", (*where, "alias_of"), f"{entry.key}: an alias lists no configs of its own")
    elif same and all(by_key[k].alias_of is None for k in same):
        check.add(
            "models-mismatch",
            where,
            f"{entry.key} maps to the same {entry.value} as {', '.join(same)}: mark one alias_of",
        )
    elif not entry.configs and entry.resolver is None:
        check.add("models-invalid", where, f"{entry.key}: neither configs, a resolver nor alias_of")


def _check_resolver(check: Checker, where: Path_, entry: PipelineEntry, expected: str | None) -> None:
    resolver = entry.resolver
    assert resolver is not None
    label = parse_label(resolver.source)
    if label.anchor != entry.value or (expected is not None and label.path != expected):
        check.add("models-mismatch", (*where, "resolver"), f"{entry.key}: {resolver.source} is not {entry.value}")
    try:
        returns = _resolver_returns(check.engine.node(resolver.source))
    except Unavailable:
        return
    check.compare((*where, "resolver", "returns"), f"{entry.value} returns", resolver.returns, returns, resolver.source)
    names = [c.name for c in entry.configs]
    if sorted(names) != sorted(set(returns)):
        check.add("models-missing", (*where, "configs"), f"{entry.key}: configs must be exactly {sorted(set(returns))}")
    for j, config in enumerate(entry.configs):
        _check_config(check, (*where, "configs", j), config, label.path)


# --- diffusion


def _check_diffusion(check: Checker, catalogue: Catalogue) -> None:
    registries = catalogue.registries
    models = check.registry(registries.diffusion, ("registries", "diffusion"))
    if models is not None:
        listed = {d.arch: ("diffusion", i, "arch") for i, d in enumerate(catalogue.diffusion) if d.source is not None}
        _completeness(check, registries.diffusion, set(models), listed, "diffusion model")
    for side in SIDE_REGISTRIES:
        label = getattr(registries, side)
        entries = check.registry(label, ("registries", side))
        if entries is None:
            continue
        listed = {d.arch: ("diffusion", i, side) for i, d in enumerate(catalogue.diffusion) if getattr(d, side)}
        _completeness(check, label, set(entries), listed, f"{side} key")
        for i, entry in enumerate(catalogue.diffusion):
            claim = getattr(entry, side)
            if claim is None:
                continue
            if claim.source != label:
                check.add("models-mismatch", ("diffusion", i, side), f"{entry.arch}: cite {label}", claim.source)
            if isinstance(claim, Mapped) and entry.arch in entries:
                actual = expression_value(entries[entry.arch])
                check.compare(("diffusion", i, side, "value"), f"{label} [{entry.arch!r}]", claim.value, actual, label)
    for i, entry in enumerate(catalogue.diffusion):
        if entry.source is not None:
            _check_diffusion_model(check, ("diffusion", i), entry, registries.diffusion, models or {})
        elif entry.class_ or entry.request_batch or entry.audio_output:
            check.add(
                "models-invalid", ("diffusion", i), f"{entry.arch}: not in {registries.diffusion}, so no class facts"
            )


def _check_diffusion_model(
    check: Checker, where: Path_, entry: DiffusionEntry, label: str, models: dict[Any, ast.expr]
) -> None:
    if entry.source != label:
        check.add("models-mismatch", (*where, "source"), f"{entry.arch}: cite the registry {label}", entry.source or "")
    if entry.arch not in models:
        return
    actual = expression_value(models[entry.arch])
    check.compare((*where, "value"), f"{label} [{entry.arch!r}]", entry.value, actual, label)
    if entry.class_ is None or entry.request_batch is None or entry.audio_output is None:
        check.add("models-invalid", where, f"{entry.arch}: class, request_batch and audio_output are required")
        return
    if not isinstance(actual, tuple) or len(actual) != 3:
        return
    folder, relname, class_name = actual
    module = f"{DIFFUSION_PACKAGE}.{folder}.{relname}" if relname else folder
    path = check.engine.module_file(module)
    expected = f"src:{path}::{class_name}" if path else f"src:{module}::{class_name}"
    if entry.class_ != expected:
        check.add(
            "models-mismatch",
            (*where, "class"),
            f"{entry.arch}: the registry loads {expected}, the catalogue cites {entry.class_}",
        )
        return
    if path is None:
        return
    try:
        found = check.engine.find_class(path, class_name)
    except Unavailable as exc:
        check.add("models-unresolved", (*where, "class"), str(exc), entry.class_)
        return
    if found is None:
        check.add("models-unresolved", (*where, "class"), f"{class_name} is not defined in {path}", entry.class_)
        return
    for flag_name, attribute in CLASS_FLAGS.items():
        _check_flag(check, (*where, flag_name), entry.arch, getattr(entry, flag_name), found, attribute)


FALLBACKS = {
    "supports_request_batch": "src:vllm_omni/diffusion/diffusion_engine.py::supports_request_batch",
    "support_audio_output": "src:vllm_omni/diffusion/io_support.py::supports_audio_output",
}


def _check_flag(
    check: Checker, where: Path_, arch: str, flag: Flag, found: tuple[str, ast.ClassDef], attribute: str
) -> None:
    try:
        resolved = class_attribute(check.engine, found[0], found[1], attribute)
    except (NotLiteral, Unavailable) as exc:
        check.add("models-unresolved", where, f"{arch}.{attribute}: {exc}", flag.source)
        return
    if resolved is None:
        source, value = FALLBACKS[attribute], False
    else:
        source, value = resolved
    if flag.source != source:
        check.add(
            "models-mismatch",
            (*where, "source"),
            f"{arch}.{attribute} is decided by {source}, not {flag.source}",
            flag.source,
        )
    check.compare((*where, "value"), f"{arch}.{attribute}", flag.value, bool(value), source)


def check_models(root: Path, source: Source) -> list[Finding]:
    """Every value claim and the completeness of models.yaml against the engine at the revision."""
    loaded = load(root)
    if loaded.catalogue is None:
        return loaded.findings
    check = Checker(Engine(source), loaded, list(loaded.findings))
    try:
        _check_pipelines(check, loaded.catalogue)
        _check_diffusion(check, loaded.catalogue)
    except (Unavailable, NoDefault) as exc:
        check.add("models-unresolved", (), str(exc))
    return check.findings
