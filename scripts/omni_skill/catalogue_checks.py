"""`check_models` proves the model catalogue against the engine source:
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from .anchors.yaml_keys import LOADER
from .catalogue import (
    CLASS_FLAGS,
    CONFIG_FIELDS,
    DEPLOY_FIELDS,
    DIFFUSION_PACKAGE,
    MODELS_PATH,
    SIDE_REGISTRIES,
    STAGE_CLASS,
    STAGE_FIELDS,
    Catalogue,
    DeployFile,
    DiffusionEntry,
    Flag,
    Loaded,
    Mapped,
    Path_,
    PipelineConfigEntry,
    PipelineEntry,
    load,
)
from .claims import (
    NoDefault,
    NotLiteral,
    NotRegistry,
    assigned_value,
    expression_value,
    registry_entries,
    same_value,
)
from .deploy_platforms import compare_sections
from .engine_modules import ModuleReader, Unavailable, _class_field, class_attribute
from .findings import Finding
from .labels import parse_label
from .source import BlobError, Source

# ---------------------------------------------------------------- checking


@dataclass
class Checker:
    engine: ModuleReader
    loaded: Loaded
    findings: list[Finding] = field(default_factory=list)
    _stage_defaults: dict[str, Any] | None = None

    def stage_defaults(self) -> dict[str, Any]:
        """`StagePipelineConfig`'s field defaults, read once per check."""
        if self._stage_defaults is None:
            self._stage_defaults = _stage_defaults(self.engine)
        return self._stage_defaults

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


def _stage_defaults(engine: ModuleReader) -> dict[str, Any]:
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


def _stages_node(engine: ModuleReader, path: str, call: ast.Call, depth: int = 0) -> list[ast.expr] | None:
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
    defaults = check.stage_defaults()
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
    check = Checker(ModuleReader(source), loaded, list(loaded.findings))
    try:
        _check_pipelines(check, loaded.catalogue)
        _check_diffusion(check, loaded.catalogue)
    except (Unavailable, NoDefault) as exc:
        check.add("models-unresolved", (), str(exc))
    return check.findings
