"""What `lint-deploy` needs to know about one engine, read from its files by AST and YAML.

The one adapter between the engine and the lint rules: every name, field, default, flag, pipeline
stage and registry the rules compare a deploy file or a serve command with comes from here, and
each carries the label of the engine code that states it. Nothing here imports the engine.

A file or symbol this engine does not have leaves its part empty and is named in `missing`, so
the rules that need it say they were skipped rather than guessing.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from .catalogue_checks import _keywords, _resolver_returns, _stages_node
from .engine_modules import ModuleReader, Unavailable

STAGE_CONFIG = "vllm_omni/config/stage_config.py"
CONFIG_FACTORY = "vllm_omni/config/config_factory.py"
PIPELINE_REGISTRY = "vllm_omni/config/pipeline_registry.py"
ARG_UTILS = "vllm_omni/engine/arg_utils.py"
SERVE = "vllm_omni/entrypoints/cli/serve.py"
CLI_MAIN = "vllm_omni/entrypoints/cli/main.py"
ENTRY_UTILS = "vllm_omni/entrypoints/utils.py"
STAGE_UTILS = "vllm_omni/entrypoints/stage_utils.py"
STAGE_INIT = "vllm_omni/engine/stage_init_utils.py"
OMNI_BASE = "vllm_omni/entrypoints/omni_base.py"
ASYNC_ENGINE = "vllm_omni/engine/async_omni_engine.py"
DIFFUSION_DATA = "vllm_omni/diffusion/data.py"
CONNECTOR_FACTORY = "vllm_omni/distributed/omni_connectors/factory.py"
CONNECTOR_INIT = "vllm_omni/distributed/omni_connectors/utils/initialization.py"
DEPLOY_DIR = "vllm_omni/deploy/"
PLATFORMS_DIR = "vllm_omni/platforms/"

BOOL_ACTIONS = frozenset({"store_true", "store_false", "BooleanOptionalAction", "version", "help"})


@dataclass(frozen=True)
class ConfigField:
    name: str
    annotation: str
    default: Any
    label: str


@dataclass(frozen=True)
class ServeFlag:
    options: tuple[str, ...]
    dest: str
    action: str = "store"
    nargs: str = ""
    choices: tuple[Any, ...] = ()
    deprecated: bool = False
    label: str = ""

    def takes_value(self) -> bool:
        return self.action not in BOOL_ACTIONS and self.nargs != "0"


@dataclass(frozen=True)
class PipelineStage:
    stage_id: int
    model_stage: str
    execution_type: str  # LLM_AR, LLM_GENERATION, DIFFUSION
    input_sources: tuple[int, ...]
    async_producer: bool


@dataclass
class Pipeline:
    key: str
    configs: list[str]
    label: str
    stages: dict[int, PipelineStage] = field(default_factory=dict)  # union over a resolver's configs
    default_deploy: str | None = None
    resolved: bool = True

    @property
    def has_edges(self) -> bool:
        return any(s.input_sources for s in self.stages.values())

    @property
    def async_capable(self) -> bool:
        return any(s.async_producer for s in self.stages.values())


@dataclass
class EngineModel:
    """The engine as lint-deploy sees it. `labels` maps a fact's role to the label that states it."""

    stage_fields: dict[str, ConfigField] = field(default_factory=dict)
    deploy_fields: dict[str, ConfigField] = field(default_factory=dict)
    reserved_stage_keys: frozenset[str] = frozenset()
    pipeline_wide: tuple[str, ...] = ()
    top_level_keys: frozenset[str] = frozenset()  # what load_deploy_config / resolve_deploy_yaml read
    overwritten_stage_keys: tuple[str, ...] = ()  # set after the per-stage values in _build_engine_args
    deep_merge_keys: frozenset[str] = frozenset()  # merged key by key across base_config overlays
    rejects_stage_args: bool = False
    topology_fields: dict[str, ConfigField] = field(default_factory=dict)  # StagePipelineConfig
    engine_arg_fields: dict[str, ConfigField] = field(default_factory=dict)  # OmniEngineArgs
    orchestrator_fields: dict[str, ConfigField] = field(default_factory=dict)
    shared_fields: frozenset[str] = frozenset()
    diffusion_fields: dict[str, ConfigField] = field(default_factory=dict)  # OmniDiffusionConfig
    diffusion_parallel_fields: dict[str, ConfigField] = field(default_factory=dict)
    diffusion_aliases: frozenset[str] = frozenset()  # keys normalize_omni_diffusion_kwargs renames
    diffusion_only_stage_fields: frozenset[str] = frozenset()
    diffusion_replaced: dict[str, tuple[str, Any]] = field(default_factory=dict)  # field -> (parameter, default)
    diffusion_batch_keyword: str = ""  # the Omni/AsyncOmni keyword that feeds it, when the engine has one
    flags: dict[str, ServeFlag] = field(default_factory=dict)  # by option string
    rejected_with_omni: dict[str, str] = field(default_factory=dict)  # dest -> flag
    removed_kwargs: dict[str, str] = field(default_factory=dict)  # old kwarg -> replacement
    omni_gate: bool = False  # the CLI hands a command without --omni to vLLM's own main
    connectors: frozenset[str] = frozenset()
    platforms: frozenset[str] = frozenset()
    deploy_files: frozenset[str] = frozenset()  # file names under vllm_omni/deploy/
    pipelines: dict[str, Pipeline] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    one_device_slot: bool = False  # a stage without devices gets one device slot whatever its num_replicas
    rejection_set: str = ""  # the args attribute `validate` tests explicit flags against
    rejection_set_filled: bool = True  # the engine's entry modules store that attribute
    # A bare `--deploy-config NAME` that is not in the working directory: `lookup` (taken from the
    # package's deploy folder), `raises` (the engine loads NAME as given at start-up) or `ignored`
    # (not found: a warning, and the pipeline's defaults only).
    bare_deploy_name: str = "lookup"
    other_top_level_keys: frozenset[str] = frozenset()  # read from the deploy file by other readers

    def label(self, role: str) -> str:
        return self.labels.get(role, "")

    def known_stage_keys(self) -> frozenset[str]:
        """Every key a stage entry may carry that the engine itself names."""
        return frozenset(
            set(self.stage_fields)
            | self.reserved_stage_keys
            | set(self.pipeline_wide)
            | set(self.engine_arg_fields)
            | set(self.diffusion_fields)
            | set(self.diffusion_parallel_fields)
            | self.diffusion_aliases
        )

    def pipeline_for_deploy(self, name: str) -> list[str]:
        """Pipeline keys whose config loads bundled deploy file `name` by default."""
        return sorted(k for k, p in self.pipelines.items() if p.default_deploy == name)


# ---------------------------------------------------------------- small AST helpers


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _find(tree: ast.AST, kind: type, name: str) -> Any:
    for node in ast.walk(tree):
        if isinstance(node, kind) and getattr(node, "name", None) == name:
            return node
    return None


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            return stmt.value
    return None


def _class_fields(cls: ast.ClassDef, path: str) -> dict[str, ConfigField]:
    found: dict[str, ConfigField] = {}
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        annotation = ast.unparse(stmt.annotation)
        if annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = stmt.value
        default: Any = None
        if isinstance(value, ast.Call) and ast.unparse(value.func) in ("field", "dataclasses.field", "Field"):
            kw = _keywords(value)
            if "default" in kw:
                default = _literal(kw["default"])
            elif "default_factory" in kw:
                default = {"dict": {}, "list": []}.get(ast.unparse(kw["default_factory"]))
        elif value is not None:
            default = _literal(value)
        name = stmt.target.id
        found[name] = ConfigField(name, annotation, default, f"src:{path}::{cls.name}.{name}")
    return found


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


class _Reader:
    """Parses only what is needed: a module's skeleton (function bodies blanked, see
    `models.skeleton`) for its classes and constants, and single function blocks on demand."""

    def __init__(self, files: Any):
        self.files = files
        self.modules = ModuleReader(files)
        self.trees: dict[str, ast.Module | None] = {}

    def lines(self, path: str) -> list[str] | None:
        try:
            return list(self.files.lines(path))
        except Exception:  # absent or unreadable in this engine
            return None

    def tree(self, path: str) -> ast.Module | None:
        if path not in self.trees:
            try:
                self.trees[path] = self.modules.module(path)
            except Unavailable:
                self.trees[path] = None
        return self.trees[path]

    def block_end(self, lines: list[str], start: int) -> int:
        """The 0-based line after the block that starts at `start` (by indentation)."""
        first = lines[start]
        indent = len(first) - len(first.lstrip())
        end = start + 1
        while end < len(lines):
            line = lines[end]
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and len(line) - len(line.lstrip()) <= indent:
                if not stripped.startswith((")", "]", "}")):
                    break
            end += 1
        return end

    def block_text(self, path: str, start: int) -> str:
        lines = self.lines(path)
        if lines is None or start >= len(lines):
            return ""
        return "\n".join(lines[start : self.block_end(lines, start)])

    def block(self, path: str, start: int) -> ast.stmt | None:
        """The statement starting at 0-based line `start` (a def, class or for), parsed alone."""
        lines = self.lines(path)
        if lines is None or start >= len(lines):
            return None
        end = self.block_end(lines, start)
        try:
            module = ast.parse(textwrap.dedent("\n".join(lines[start:end])))
        except SyntaxError:
            return None
        return module.body[0] if module.body else None

    def function(self, path: str, name: str) -> ast.FunctionDef | None:
        """The first `def name(` of a module (top level or a method), parsed alone."""
        lines = self.lines(path)
        if lines is None:
            return None
        pattern = re.compile(r"^\s*(?:async\s+)?def\s+" + re.escape(name) + r"\s*\(")
        for number, line in enumerate(lines):
            if pattern.match(line):
                node = self.block(path, number)
                return node if isinstance(node, ast.FunctionDef) else None
        return None

    def has_def(self, path: str, name: str) -> bool:
        lines = self.lines(path)
        pattern = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+" + re.escape(name) + r"\b")
        return lines is not None and any(pattern.match(line) for line in lines)


# ---------------------------------------------------------------- extraction


def build(files: Any, paths: list[str]) -> EngineModel:
    """The model of an engine from its files (a git `Source` or a `FileTree`) and their paths."""
    reader = _Reader(files)
    model = EngineModel()
    _stage_config(reader, model)
    _arg_utils(reader, model)
    _serve(reader, model)
    _diffusion(reader, model)
    _connectors(reader, model)
    _misc(reader, model)
    model.deploy_files = frozenset(
        p[len(DEPLOY_DIR) :] for p in paths if p.startswith(DEPLOY_DIR) and p.endswith((".yaml", ".yml"))
    )
    model.platforms = frozenset(
        p[len(PLATFORMS_DIR) :].split("/")[0]
        for p in paths
        if p.startswith(PLATFORMS_DIR) and p.endswith("/platform.py") and p.count("/") == 3
    )
    _pipelines(reader, model)
    return model


def _read_classes(model: EngineModel, tree: ast.Module, path: str, pairs: tuple[tuple[str, str], ...]) -> None:
    """Each (class, model attribute): the class's fields into the attribute, and its label."""
    for cls_name, attr in pairs:
        cls = _find(tree, ast.ClassDef, cls_name)
        if cls is not None:
            setattr(model, attr, _class_fields(cls, path))
            model.labels[cls_name] = f"src:{path}::{cls_name}"


def _stage_config(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(STAGE_CONFIG)
    if tree is None:
        model.missing.append(STAGE_CONFIG)
        return
    _read_classes(
        model,
        tree,
        STAGE_CONFIG,
        (
            ("StageDeployConfig", "stage_fields"),
            ("DeployConfig", "deploy_fields"),
            ("StagePipelineConfig", "topology_fields"),
        ),
    )
    stage_cls = _find(tree, ast.ClassDef, "StageDeployConfig")
    if stage_cls is not None:
        model.diffusion_only_stage_fields = frozenset(_diffusion_block(reader.files.lines(STAGE_CONFIG), stage_cls))
    reserved = _assigned(tree, "_STAGE_RESERVED_KEYS")
    if isinstance(reserved, ast.Call) and reserved.args:
        model.reserved_stage_keys = frozenset(_literal(reserved.args[0]) or ())
        model.labels["reserved"] = f"src:{STAGE_CONFIG}::_STAGE_RESERVED_KEYS"
    deep = _assigned(tree, "_DEEP_MERGE_KEYS")
    if isinstance(deep, ast.Call) and deep.args:
        model.deep_merge_keys = frozenset(_literal(deep.args[0]) or ())
    wide = _assigned(tree, "_PIPELINE_WIDE_ENGINE_FIELDS")
    if wide is not None:
        model.pipeline_wide = tuple(_literal(wide) or ())
        model.labels["pipeline_wide"] = f"src:{STAGE_CONFIG}::_PIPELINE_WIDE_ENGINE_FIELDS"
    keys: set[str] = set()
    for func_name in ("load_deploy_config", "resolve_deploy_yaml"):
        func = reader.function(STAGE_CONFIG, func_name)
        if func is None:
            continue
        model.labels[func_name] = f"src:{STAGE_CONFIG}::{func_name}"
        keys |= _raw_dict_keys(func)
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Constant)
                and node.left.value == "stage_args"
                and any(isinstance(op, ast.In) for op in node.ops)
            ):
                model.rejects_stage_args = True
    model.top_level_keys = frozenset(keys - {"stage_args"})
    build_args = reader.function(STAGE_CONFIG, "_build_engine_args")
    if build_args is not None:
        model.overwritten_stage_keys = tuple(_set_after_stage_values(build_args))
        model.labels["_build_engine_args"] = f"src:{STAGE_CONFIG}::_build_engine_args"
    for name in (
        "merge_pipeline_deploy",
        "_parse_stage_deploy",
        "_merge_stage_lists",
        "_apply_diffusion_parallel_runtime_overrides",
        "_apply_platform_overrides",
        "build_stage_runtime_overrides",
        "_STAGE_OVERRIDE_PATTERN",
        "StageConfig.to_omegaconf",
    ):
        top = name.split(".")[0]
        if reader.has_def(STAGE_CONFIG, top) or _assigned(tree, top) is not None:
            model.labels[name] = f"src:{STAGE_CONFIG}::{name}"


def _raw_dict_keys(func: ast.FunctionDef) -> set[str]:
    """String keys a deploy loader reads from its `raw_dict`: `.get/.pop("k")`, `["k"]`, `"k" in`,
    and the names of a tuple a `for` loop checks against it."""
    keys: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "raw_dict" and node.func.attr in ("get", "pop"):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    keys.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "raw_dict":
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                keys.add(node.slice.value)
        elif isinstance(node, ast.For) and isinstance(node.iter, (ast.Tuple, ast.List)):
            body = ast.Module(body=node.body, type_ignores=[])
            if any(isinstance(n, ast.Name) and n.id == "raw_dict" for n in ast.walk(body)):
                keys |= {e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return keys


def _set_after_stage_values(func: ast.FunctionDef) -> list[str]:
    """Keys `_build_engine_args` assigns unconditionally after it has applied a stage's own values."""
    keys: list[str] = []
    applied = False
    for stmt in func.body:
        text = ast.unparse(stmt)
        if not applied:
            applied = isinstance(stmt, ast.If) and "engine_extras" in text and ".update(" in text
            continue
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                    keys.append(str(target.slice.value))
    return keys


def _diffusion_block(lines: list[str], cls: ast.ClassDef) -> list[str]:
    """StageDeployConfig fields in its `# === Diffusion … ===` section (the class groups its fields
    under such headers). Empty when the class has no such section."""
    start = cls.lineno
    end = getattr(cls, "end_lineno", None) or len(lines)
    header = re.compile(r"^\s*#\s*===\s*(.*?)\s*===")
    section: str = ""
    in_block: dict[int, bool] = {}
    for number in range(start, end + 1):
        match = header.match(lines[number - 1])
        if match:
            section = match.group(1)
        in_block[number] = "diffusion" in section.lower()
    return [
        stmt.target.id
        for stmt in cls.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and in_block.get(stmt.lineno)
    ]


def _arg_utils(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(ARG_UTILS)
    if tree is None:
        model.missing.append(ARG_UTILS)
        return
    for cls_name, attr in (("OmniEngineArgs", "engine_arg_fields"), ("OrchestratorArgs", "orchestrator_fields")):
        cls = _find(tree, ast.ClassDef, cls_name)
        if cls is not None:
            setattr(model, attr, _class_fields(cls, ARG_UTILS))
            model.labels[cls_name] = f"src:{ARG_UTILS}::{cls_name}"
    shared = _assigned(tree, "SHARED_FIELDS")
    if isinstance(shared, ast.Call) and shared.args:
        model.shared_fields = frozenset(_literal(shared.args[0]) or ())
        model.labels["SHARED_FIELDS"] = f"src:{ARG_UTILS}::SHARED_FIELDS"


def _serve(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(SERVE)
    if tree is None:
        model.missing.append(SERVE)
        return
    init = reader.function(SERVE, "subparser_init")
    scope = init if init is not None else tree
    owner = "OmniServeCommand.subparser_init" if init is not None else ""
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        options: tuple[str, ...] = tuple(
            a.value
            for a in node.args
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value[:1] == "-"
        )
        if not options:
            continue
        kw = _keywords(node)
        longs = [o for o in options if o.startswith("--")] or list(options)
        dest = _literal(kw.get("dest")) or longs[0].lstrip("-").replace("-", "_")
        action = kw.get("action")
        action_name = (
            str(_literal(action))
            if isinstance(action, ast.Constant)
            else (action.attr if isinstance(action, ast.Attribute) else "store")
        )
        nargs = _literal(kw.get("nargs"))
        choices = _literal(kw.get("choices"))
        help_text = " ".join(_strings(kw["help"])) if "help" in kw else ""
        label = f"src:{SERVE}::{owner}" if owner else f"src:{SERVE}"
        flag = ServeFlag(
            options=options,
            dest=str(dest),
            action=action_name,
            nargs=str(nargs) if nargs is not None else "",
            choices=tuple(choices) if isinstance(choices, (list, tuple)) else (),
            deprecated=bool(re.search(r"\bdeprecated\b.*\bignored\b", help_text, re.IGNORECASE)),
            label=label,
        )
        for option in options:
            model.flags.setdefault(option, flag)
    model.labels["serve_flags"] = f"src:{SERVE}::{owner}" if owner else f"src:{SERVE}"
    validate = reader.function(SERVE, "validate")
    if validate is not None:
        for node in ast.walk(validate):
            if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
                value = _literal(node.value)
                if isinstance(value, dict) and value and all(str(v).startswith("--") for v in value.values()):
                    model.rejected_with_omni = {str(k): str(v) for k, v in value.items()}
                    model.labels["rejected_with_omni"] = f"src:{SERVE}::OmniServeCommand.validate"
        model.rejection_set = _rejection_set(validate)
        if model.rejection_set:
            model.rejection_set_filled = _sets_attribute(reader, model.rejection_set)


def _rejection_set(validate: ast.FunctionDef) -> str:
    """The `args` attribute whose set the refusal tests each listed flag against: a variable bound
    to `getattr(args, "NAME", …)` and used as the right side of `dest in …` (a name on the left: the
    loop over the listed flags, not a fixed key) in `validate`."""
    bound: dict[str, str] = {}
    for node in ast.walk(validate):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            call = next((n for n in ast.walk(node.value) if isinstance(n, ast.Call)), None) if node.value else None
            if (
                isinstance(target, ast.Name)
                and isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "getattr"
                and len(call.args) >= 2
                and isinstance(call.args[1], ast.Constant)
                and isinstance(call.args[1].value, str)
            ):
                bound[target.id] = call.args[1].value
    for node in ast.walk(validate):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Name)
            and any(isinstance(op, ast.In) for op in node.ops)
        ):
            for right in node.comparators:
                if isinstance(right, ast.Name) and right.id in bound:
                    return bound[right.id]
    return ""


PARSER_FILES = (SERVE, CLI_MAIN, ENTRY_UTILS, OMNI_BASE, ASYNC_ENGINE, "vllm_omni/utils/tracking_parser.py")


def _sets_attribute(reader: _Reader, name: str) -> bool:
    """Whether the engine's CLI and entry modules store `name` on an object (`x.name = …`,
    `setattr(x, "name", …)`, `x["name"] = …`): the set `validate` tests explicit flags against."""
    store = re.compile(
        r"\." + re.escape(name) + r"\s*[|]?=(?!=)|setattr\([^,]+,\s*[\"']" + re.escape(name) + r"[\"']"
        r"|\[\s*[\"']" + re.escape(name) + r"[\"']\s*\]\s*=(?!=)"
    )
    return any(store.search(line) for path in PARSER_FILES for line in reader.lines(path) or [])


def _diffusion(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(DIFFUSION_DATA)
    if tree is None:
        model.missing.append(DIFFUSION_DATA)
        return
    _read_classes(
        model,
        tree,
        DIFFUSION_DATA,
        (("OmniDiffusionConfig", "diffusion_fields"), ("DiffusionParallelConfig", "diffusion_parallel_fields")),
    )
    config_cls = _find(tree, ast.ClassDef, "OmniDiffusionConfig")
    config_text = reader.block_text(DIFFUSION_DATA, config_cls.lineno - 1) if config_cls is not None else ""
    if "fields(cls)" in config_text:  # the config keeps only its own fields
        model.labels["diffusion_from_kwargs"] = f"src:{DIFFUSION_DATA}::OmniDiffusionConfig.from_kwargs"
        model.labels["diffusion_world"] = f"src:{DIFFUSION_DATA}::DiffusionParallelConfig.__post_init__"
    normalize = reader.function(DIFFUSION_DATA, "normalize_omni_diffusion_kwargs")
    if normalize is not None:
        aliases: set[str] = set()
        for node in ast.walk(normalize):
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
            ):
                aliases.add(node.left.value)
            if isinstance(node, ast.Call):  # normalized.pop("k"), _move_diffusion_alias(d, "old", "new")
                aliases |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
            if isinstance(node, ast.For) and isinstance(node.iter, (ast.Tuple, ast.List)):
                aliases |= set(_strings(node.iter))  # for legacy, canonical in (("old", "new"), …)
        model.diffusion_aliases = frozenset(aliases)


def _connectors(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(CONNECTOR_FACTORY)
    if tree is None:
        model.missing.append(CONNECTOR_FACTORY)
        return
    names: set[str] = set()
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "register_connector"
        ):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                names.add(call.args[0].value)
    model.connectors = frozenset(names)
    if names:
        model.labels["connectors"] = f"src:{CONNECTOR_FACTORY}::OmniConnectorFactory.create_connector"


def _misc(reader: _Reader, model: EngineModel) -> None:
    main = reader.function(CLI_MAIN, "main")
    if main is not None:
        for node in ast.walk(main):
            if (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Constant)
                and node.left.value == "--omni"
                and any(isinstance(op, ast.NotIn) for op in node.ops)
            ):
                model.omni_gate = True
                model.labels["omni_gate"] = f"src:{CLI_MAIN}::main"
    _removed_kwargs(reader, model)
    _diffusion_replaced(reader, model)
    if reader.has_def(ENTRY_UTILS, "load_stage_configs_from_model"):
        model.labels["stage_overrides"] = f"src:{ENTRY_UTILS}::load_stage_configs_from_model"
    if reader.has_def(ENTRY_UTILS, "parse_stage_overrides"):
        model.labels["parse_stage_overrides"] = f"src:{ENTRY_UTILS}::parse_stage_overrides"
    for name in ("_load_user_deploy_config", "_create_legacy_from_registry"):
        if reader.has_def(CONFIG_FACTORY, name):
            model.labels[name] = f"src:{CONFIG_FACTORY}::StageConfigFactory.{name}"
    if reader.has_def(STAGE_UTILS, "_map_device_list"):
        model.labels["devices"] = f"src:{STAGE_UTILS}::_map_device_list"
    if reader.has_def(STAGE_INIT, "split_devices_for_replicas"):
        model.labels["replicas"] = f"src:{STAGE_INIT}::split_devices_for_replicas"
        model.one_device_slot = _one_device_slot(reader.function(STAGE_INIT, "split_devices_for_replicas"))
    if reader.has_def(CONNECTOR_INIT, "load_omni_transfer_config"):
        model.labels["connector_refs"] = f"src:{CONNECTOR_INIT}::load_omni_transfer_config"
    caught = reader.function(STAGE_INIT, "load_omni_transfer_config_for_model")
    if caught is not None and any(isinstance(n, ast.ExceptHandler) for n in ast.walk(caught)):
        model.labels["transfer_caught"] = f"src:{STAGE_INIT}::load_omni_transfer_config_for_model"
    _bare_deploy_name(reader, model)
    _other_top_level_keys(reader, model)


RAW_DEPLOY_LOAD = re.compile(r"\bload_deploy_config\(\s*deploy_config_path\s*\)")
BARE_NAME_TEST = re.compile(r"\.parent\s*==\s*Path\(\s*[\"']\.[\"']\s*\)")
NOT_FOUND_DEFAULTS = "using pipeline defaults only"


def _bare_deploy_name(reader: _Reader, model: EngineModel) -> None:
    """How the engine takes a bare deploy-file name that is not in the working directory: the engine
    class loading the `deploy_config_path` it was given raises first; else a `.parent ==
    Path(".")` test looks it up in the package's deploy folder; else the resolver that warns and
    goes on with the pipeline's defaults ignores it."""
    lines = reader.lines(ASYNC_ENGINE) or []
    raw = next((n for n, line in enumerate(lines) if RAW_DEPLOY_LOAD.search(line)), None)
    if raw is not None:
        model.bare_deploy_name = "raises"
        model.labels["bare_deploy_name"] = f"src:{ASYNC_ENGINE}::{_enclosing_def(lines, raw)}"
        return
    for path in (CONFIG_FACTORY, STAGE_CONFIG):
        if any(BARE_NAME_TEST.search(line) for line in reader.lines(path) or []):
            return
    for path in (CONFIG_FACTORY, STAGE_CONFIG):
        found = reader.lines(path) or []
        warned = next((n for n, line in enumerate(found) if NOT_FOUND_DEFAULTS in line), None)
        if warned is not None:
            model.bare_deploy_name = "ignored"
            model.labels["bare_deploy_name"] = f"src:{path}::{_enclosing_def(found, warned)}"
            return


def _other_top_level_keys(reader: _Reader, model: EngineModel) -> None:
    """Top-level deploy keys read past `load_deploy_config`: `modes:` by the stage filter, `runtime:`
    by the connector loader (its `connectors`/`edges` before the top-level ones)."""
    readers = (("modes", ENTRY_UTILS, "filter_stages"), ("runtime", CONNECTOR_INIT, "load_omni_transfer_config"))
    found = set()
    for key, path, name in readers:
        func = reader.function(path, name)
        if func is not None and key in _strings(func):
            found.add(key)
            model.labels[f"top_{key}"] = f"src:{path}::{name}"
    model.other_top_level_keys = frozenset(found)


def _one_device_slot(func: ast.FunctionDef | None) -> bool:
    """Whether the device split answers a stage without `devices` with a one-element list (an
    `if` on `devices_str is None` returning `[...]`): the replica plans index that list by replica
    id, so every replica after the first fails. An engine that returns one slot per replica
    (`[None] * n`) does not."""
    if func is None:
        return False

    def tests_none(test: ast.expr) -> bool:
        return any(
            isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Name)
            and n.left.id == "devices_str"
            and any(isinstance(op, ast.Is) for op in n.ops)
            and any(isinstance(c, ast.Constant) and c.value is None for c in n.comparators)
            for n in ast.walk(test)
        )

    def one_slot(value: ast.expr | None) -> bool:
        if isinstance(value, ast.IfExp):
            return one_slot(value.body) and one_slot(value.orelse)
        return isinstance(value, ast.List) and len(value.elts) == 1

    return any(
        isinstance(node, ast.If)
        and tests_none(node.test)
        and any(isinstance(stmt, ast.Return) and one_slot(stmt.value) for stmt in node.body)
        for node in ast.walk(func)
    )


def _diffusion_replaced(reader: _Reader, model: EngineModel) -> None:
    """`od_config.<field> = <parameter>` in the diffusion stage start-up: the deploy value of that
    field is replaced by what the launcher passes."""
    func = reader.function(STAGE_INIT, "initialize_diffusion_stage")
    if func is None:
        return
    positional = func.args.args
    defaults: dict[str, Any] = {
        a.arg: _literal(d)
        for a, d in zip(positional[len(positional) - len(func.args.defaults) :], func.args.defaults, strict=True)
    }
    defaults.update(
        {a.arg: _literal(d) for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True) if d is not None}
    )
    params = {a.arg for a in positional + func.args.kwonlyargs}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    model.diffusion_replaced[target.attr] = (node.value.id, defaults.get(node.value.id))
    if model.diffusion_replaced:
        model.labels["diffusion_replaced"] = f"src:{STAGE_INIT}::initialize_diffusion_stage"
        lines = reader.lines(OMNI_BASE) or []
        if any("diffusion_batch_size" in line for line in lines) and reader.has_def(OMNI_BASE, "__init__"):
            model.diffusion_batch_keyword = "diffusion_batch_size"
            model.labels["diffusion_batch_keyword"] = f"src:{OMNI_BASE}::OmniBase.__init__"


def _removed_kwargs(reader: _Reader, model: EngineModel) -> None:
    """`for legacy in ("old", …): … raise …("… no longer supported; use `new` …")` in the engine."""
    lines = reader.lines(ASYNC_ENGINE) or []
    loop = re.compile(r"^\s*for\s+\w+\s+in\s+\(")
    for number, line in enumerate(lines):
        if not loop.match(line) or "no longer supported" not in " ".join(lines[number : number + 4]):
            continue
        node = reader.block(ASYNC_ENGINE, number)
        if not isinstance(node, ast.For) or not isinstance(node.iter, ast.Tuple):
            continue
        names = [e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        found = [m.group(1) for text in _strings(node) if (m := re.search(r"use `(\w+)`", text))]
        if names and found:
            model.removed_kwargs = {n: found[0] for n in names}
            func = _enclosing_def(lines, number)
            model.labels["removed_kwargs"] = f"src:{ASYNC_ENGINE}::{func}" if func else f"src:{ASYNC_ENGINE}"
            return


def _enclosing_def(lines: list[str], number: int) -> str:
    """`Class.method` or `function` whose body holds 0-based line `number` (by indentation)."""
    names: list[str] = []
    indent = len(lines[number]) - len(lines[number].lstrip())
    for line in reversed(lines[:number]):
        stripped = line.lstrip()
        level = len(line) - len(stripped)
        if stripped and level < indent:
            match = re.match(r"(?:async\s+)?(?:def|class)\s+(\w+)", stripped)
            if match:
                names.append(match.group(1))
            if not stripped.startswith(("#", ")", "]", "}")):
                indent = level
            if level == 0:
                break
    return ".".join(reversed(names))


# ---------------------------------------------------------------- pipelines


def _pipelines(reader: _Reader, model: EngineModel) -> None:
    tree = reader.tree(PIPELINE_REGISTRY)
    if tree is None:
        model.missing.append(PIPELINE_REGISTRY)
        return
    registry = _assigned(tree, "OMNI_PIPELINES")
    if not isinstance(registry, ast.Dict):
        model.missing.append(f"{PIPELINE_REGISTRY}::OMNI_PIPELINES")
        return
    label = f"src:{PIPELINE_REGISTRY}::OMNI_PIPELINES"
    model.labels["pipelines"] = label
    stage_defaults = _stage_defaults(reader)
    for key_node, value in zip(registry.keys, registry.values, strict=True):
        key = _literal(key_node)
        if not isinstance(key, str) or not isinstance(value, ast.Name):
            continue
        pipeline = Pipeline(key=key, configs=[], label=label)
        for config_name, path, call in _configs(reader, value.id):
            pipeline.configs.append(config_name)
            if call is None:
                pipeline.resolved = False
                continue
            kw = _keywords(call)
            if pipeline.default_deploy is None:
                pipeline.default_deploy = _literal(kw.get("default_deploy_config_name"))
            nodes = _stages_node(reader.modules, path, call)
            if nodes is None:
                pipeline.resolved = False
                continue
            for node in nodes:
                stage = _stage(node, stage_defaults)
                if stage is None:
                    pipeline.resolved = False
                elif stage.stage_id not in pipeline.stages:
                    pipeline.stages[stage.stage_id] = stage
        if not pipeline.configs:
            pipeline.resolved = False
        model.pipelines[key] = pipeline


def _configs(reader: _Reader, name: str) -> list[tuple[str, str, ast.Call | None]]:
    """(config name, module path, its PipelineConfig call) for a registry value: a config constant,
    or a resolver function and the configs it returns."""
    origin = _origin(reader, PIPELINE_REGISTRY, name)
    if origin is None:
        return [(name, "", None)]
    path, symbol = origin
    try:
        value = reader.modules.constant(path, symbol)
    except Unavailable:
        return [(name, path, None)]
    if isinstance(value, ast.Call):
        return [(symbol, path, value)]
    func = reader.function(path, symbol)
    if func is None:
        return [(symbol, path, None)]
    found: list[tuple[str, str, ast.Call | None]] = []
    for returned in _resolver_returns(func):
        if not re.fullmatch(r"[A-Za-z_]\w*", returned):
            continue
        inner = _origin(reader, path, returned)
        if inner is None:
            continue
        try:
            call = reader.modules.constant(inner[0], inner[1])
        except Unavailable:
            call = None
        found.append((inner[1], inner[0], call if isinstance(call, ast.Call) else None))
    return found or [(symbol, path, None)]


def _origin(reader: _Reader, path: str, name: str) -> tuple[str, str] | None:
    """(module path, symbol) that defines `name` as module `path` sees it."""
    for _ in range(5):
        try:
            if name in reader.modules.constants(path):
                return path, name
            if reader.has_def(path, name):
                return path, name
            imported = reader.modules.imported(path, name)
        except Unavailable:
            return None
        if imported is None:
            return None
        target = reader.modules.module_file(imported[0])
        if target is None:
            return None
        path, name = target, imported[1]
    return None


def _stage_defaults(reader: _Reader) -> dict[str, Any]:
    tree = reader.tree(STAGE_CONFIG)
    cls = _find(tree, ast.ClassDef, "StagePipelineConfig") if tree is not None else None
    if cls is None:
        return {}
    defaults: dict[str, Any] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = stmt.value
            defaults[stmt.target.id] = value.attr if isinstance(value, ast.Attribute) else _literal(value)
    return defaults


def _stage(node: ast.expr, defaults: dict[str, Any]) -> PipelineStage | None:
    if not isinstance(node, ast.Call):
        return None
    kw = _keywords(node)
    stage_id = _literal(kw.get("stage_id"))
    if not isinstance(stage_id, int):
        return None
    execution = kw.get("execution_type")
    execution_type = (
        execution.attr if isinstance(execution, ast.Attribute) else str(defaults.get("execution_type") or "LLM_AR")
    )
    sources = _literal(kw.get("input_sources")) if "input_sources" in kw else defaults.get("input_sources", ())
    producer = kw.get("async_chunk_process_next_stage_input_func")
    return PipelineStage(
        stage_id=stage_id,
        model_stage=str(_literal(kw.get("model_stage")) or ""),
        execution_type=execution_type,
        input_sources=tuple(int(s) for s in (sources or ()) if isinstance(s, int)),
        async_producer=producer is not None and not (isinstance(producer, ast.Constant) and producer.value is None),
    )
