"""`lint-deploy`: a user's serve command and deploy file checked against the engine they run.

Read-only; never imports or runs the engine. The engine's facts come from `deploy_model`; each
rule here says how the engine treats a setting and cites the code that makes it so. A finding is
one line: where (file:line or the flag), severity, rule, message, and the citation label.
"""

from __future__ import annotations

import argparse
import difflib
import json
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from .anchors.yaml_keys import LOADER
from .deploy_model import DEPLOY_DIR, EngineModel, Pipeline, PipelineStage
from .errors import UsageError
from .serve_command import ServeCommand
from .yamlcheck import construct

Severity = Literal["error", "warning", "note"]
COMMAND = "serve command"
OTHER_READERS = {
    "modes": "`modes` is not read by the deploy loader; the stage filter reads it from this file",
    "runtime": "`runtime` is not read by the deploy loader; the connector loader reads it from this file, "
    "its `connectors`/`edges` before the top-level ones",
}
MAX_ALIASES = 200
MAX_BASE_DEPTH = 8
STAGE_OVERRIDE_KEY = re.compile(r"^\d+$")
EDGE_KEY = {"input_connectors": re.compile(r"^from_stage_(\d+)$"), "output_connectors": re.compile(r"^to_stage_(\d+)$")}
RUNTIME_KEYS = ("devices", "num_replicas", "env")
BOOL_WORDS = {"true", "false", "yes", "no", "on", "off"}


class LintFinding(BaseModel):
    model_config = ConfigDict(frozen=True)

    severity: Severity
    rule: str
    file: str
    line: int = 0
    subject: str = ""
    message: str
    label: str = ""
    url: str = ""

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def one_line(self) -> str:
        cite = f" [{self.label}]" if self.label else ""
        return f"{self.location()}: {self.severity}: {self.rule}: {self.message}{cite}"


class LintReport(BaseModel):
    engine: dict[str, str]
    pipeline: str | None = None
    pipeline_from: str = ""
    files: list[str] = []
    skipped: list[str] = []
    findings: list[LintFinding] = []

    def counts(self) -> dict[str, int]:
        found = {"error": 0, "warning": 0, "note": 0}
        for f in self.findings:
            found[f.severity] += 1
        return found

    def failed(self) -> bool:
        return any(f.severity != "note" for f in self.findings)


# ---------------------------------------------------------------- deploy documents


@dataclass
class DeployDoc:
    """One deploy YAML of a base_config chain: its data and the line of every key path."""

    name: str  # as shown in findings
    location: str  # disk path, or the engine path for a bundled file
    bundled: bool
    data: dict[str, Any]
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line(self, *path: Any) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1


def _node_lines(node: yaml.Node, path: tuple[Any, ...], out: dict[tuple[Any, ...], int], seen: set[int]) -> None:
    out.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.setdefault((*path, key.value), key.start_mark.line + 1)
                _node_lines(value, (*path, key.value), out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _node_lines(item, (*path, index), out, seen)


def parse_deploy(name: str, text: str, location: str, bundled: bool) -> DeployDoc:
    """A deploy file's data and key lines; UsageError (one line naming the file and line) when
    it is not YAML, not a mapping, or an alias bomb."""
    if "*" in text:
        try:
            aliases = sum(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=LOADER))
        except yaml.YAMLError:
            aliases = 0  # compose reports it with its line
        if aliases > MAX_ALIASES:
            raise UsageError(f"{name}: {aliases} YAML aliases (more than {MAX_ALIASES}): not a deploy file")
    try:
        node = yaml.compose(text, Loader=LOADER)
        data = construct(node) if node is not None else {}
    except (yaml.YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{name}:{mark.line + 1}" if mark else name
        problem = getattr(exc, "problem", None) or "nested too deep"
        raise UsageError(f"{where}: not valid YAML ({problem})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{name}:1: a deploy file is a mapping of settings, not a {type(data).__name__}")
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _node_lines(node, (), lines, set())
    return DeployDoc(name=name, location=location, bundled=bundled, data=data, lines=lines)


def read_user_file(path: Path) -> str:
    """A user's file: a regular file (no device, fifo or folder), decoded as UTF-8."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise UsageError(f"{path}: no such file") from None
    if not resolved.is_file():
        raise UsageError(f"{path}: not a regular file")
    try:
        data = resolved.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > 4_000_000:
        raise UsageError(f"{path}: larger than 4 MB: not a deploy file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None


@dataclass
class EngineFilesReader:
    """Reads bundled deploy files from the engine the user runs."""

    files: Any
    unread: list[str] = field(default_factory=list)  # bundled bases a shipped model cannot read

    @property
    def shipped(self) -> bool:
        from .lintmodels import ShippedFiles

        return isinstance(self.files, ShippedFiles)

    def read(self, path: str) -> str | None:
        try:
            return str(self.files.text(path))
        except Exception:  # absent from this engine
            return None


def load_chain(ref: str, cwd: Path, engine: EngineFilesReader) -> list[DeployDoc]:
    """The deploy file `ref` names and its base_config chain, overlay first, found as the engine
    finds them: relative to the working directory, a bare name that is not there from the package's
    deploy folder; each base relative to the file that names it."""
    path = Path(ref)
    disk = path if path.is_absolute() else cwd / path
    docs: list[DeployDoc] = []
    if disk.exists() or path.parent != Path("."):
        docs.append(parse_deploy(ref, read_user_file(disk), str(disk), bundled=False))
    else:
        bundled = DEPLOY_DIR + ref
        text = engine.read(bundled)
        if text is None and engine.shipped:
            raise UsageError(
                f"{ref}: not in {cwd}; the engine's bundled deploy files are not shipped with the skill: "
                "give --wheel/--engine-dir/--source to lint a bundled file"
            )
        if text is None:
            raise UsageError(f"{ref}: not found in {cwd} nor among the engine's bundled deploy files")
        docs.append(parse_deploy(bundled, text, bundled, bundled=True))
    while True:
        base = docs[-1].data.get("base_config")
        if base is None:
            return docs
        if len(docs) > MAX_BASE_DEPTH:
            raise UsageError(f"{docs[0].name}: base_config chain deeper than {MAX_BASE_DEPTH} (a cycle?)")
        if not isinstance(base, str):
            raise UsageError(f"{docs[-1].name}:{docs[-1].line('base_config')}: base_config is not a path")
        current = docs[-1]
        on_disk = not current.bundled and (Path(current.location).parent / base).exists()
        if engine.shipped and not on_disk:
            engine.unread.append(base)  # a bundled file's contents are not shipped: the chain stops here
            return docs
        if current.bundled:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(current.location), base))
            text = engine.read(target)
            if text is None:
                raise UsageError(f"{current.name}:{current.line('base_config')}: base_config {base!r} not found")
            docs.append(parse_deploy(target, text, target, bundled=True))
        else:
            target_path = Path(current.location).parent / base
            bundled_target = _bundled_equivalent(target_path)
            if not target_path.exists() and bundled_target and engine.read(bundled_target) is not None:
                text = engine.read(bundled_target) or ""
                docs.append(parse_deploy(bundled_target, text, bundled_target, bundled=True))
                continue
            if not target_path.exists():
                raise UsageError(f"{current.name}:{current.line('base_config')}: base_config {base!r} not found")
            docs.append(parse_deploy(str(target_path), read_user_file(target_path), str(target_path), bundled=False))


def _bundled_equivalent(path: Path) -> str | None:
    """`…/vllm_omni/deploy/x.yaml` on disk, when the package is not there: the engine's own file."""
    parts = path.as_posix().split("/")
    for index in range(len(parts) - 2):
        if parts[index] == "vllm_omni" and parts[index + 1] == "deploy":
            return "/".join(parts[index:])
    return None


def merge_chain(docs: list[DeployDoc], model: EngineModel) -> dict[str, Any]:
    """The merged deploy data, as resolve_deploy_yaml merges an overlay onto its base."""
    merged: dict[str, Any] = {}
    for doc in reversed(docs):
        overlay = {k: v for k, v in doc.data.items() if k != "base_config"}
        stages = _merge_stages(merged.get("stages"), overlay.get("stages"), model)
        platforms = merged.get("platforms"), overlay.get("platforms")
        merged = {**merged, **{k: v for k, v in overlay.items() if k not in ("stages", "platforms")}}
        merged["stages"] = stages
        if platforms[0] or platforms[1]:
            merged["platforms"] = _merge_platforms(platforms[0], platforms[1], model)
    return merged


def _stage_list(value: Any) -> list[dict[str, Any]]:
    return [s for s in value if isinstance(s, dict) and "stage_id" in s] if isinstance(value, list) else []


def _merge_stages(base: Any, overlay: Any, model: EngineModel) -> list[dict[str, Any]]:
    by_id: dict[Any, dict[str, Any]] = {s["stage_id"]: s for s in _stage_list(base)}
    for stage in _stage_list(overlay):
        sid = _hashable(stage["stage_id"])
        if sid in by_id:
            old = by_id[sid]
            merged = {**old, **stage}
            for key in model.deep_merge_keys:
                if isinstance(old.get(key), dict) and isinstance(stage.get(key), dict):
                    merged[key] = _deep(old[key], stage[key])
            by_id[sid] = merged
        else:
            by_id[sid] = stage
    return list(by_id.values())


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (int, str, float, bool)) or value is None else repr(value)


def _deep(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        merged[key] = (
            _deep(merged[key], value) if isinstance(merged.get(key), dict) and isinstance(value, dict) else value
        )
    return merged


def _merge_platforms(base: Any, overlay: Any, model: EngineModel) -> dict[str, Any]:
    base = base if isinstance(base, dict) else {}
    overlay = overlay if isinstance(overlay, dict) else {}
    merged: dict[str, Any] = {}
    for name in set(base) | set(overlay):
        bp = base.get(name) if isinstance(base.get(name), dict) else {}
        op = overlay.get(name) if isinstance(overlay.get(name), dict) else {}
        entry = {**bp, **{k: v for k, v in op.items() if k != "stages"}}
        entry["stages"] = _merge_stages(bp.get("stages"), op.get("stages"), model)
        merged[str(name)] = entry
    return merged


# ---------------------------------------------------------------- the lint


@dataclass
class Lint:
    model: EngineModel
    # a flag's life across the releases the skill ships facts for: (rule, message) when this engine
    # lacks a flag another release has (removed after X, or first in a later release)
    history: Any = None
    findings: list[LintFinding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    passthrough: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(
        self,
        severity: Severity,
        rule: str,
        where: str,
        line: int,
        subject: str,
        message: str,
        role: str = "",
        label: str = "",
    ) -> None:
        cite = label or (self.model.label(role) if role else "")
        self.findings.append(
            LintFinding(
                severity=severity, rule=rule, file=where, line=line, subject=subject, message=message, label=cite
            )
        )

    def skip(self, what: str) -> None:
        if what not in self.skipped:
            self.skipped.append(what)


def _close(name: str, candidates: set[str] | frozenset[str], cutoff: float = 0.8) -> str | None:
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def _mean(name: str, candidates: set[str] | frozenset[str]) -> str:
    close = _close(name, candidates)
    return f" (did you mean `{close}`?)" if close else ""


# --- the command line


def lint_command(lint: Lint, command: ServeCommand, pipeline: Pipeline | None) -> None:
    model = lint.model
    if not model.flags:
        lint.skip("serve flags: the engine's serve entry point was not found")
        return
    if model.omni_gate and not command.has("--omni"):
        lint.add(
            "error",
            "omni-missing",
            COMMAND,
            0,
            "--omni",
            f"`{command.program} serve` without `--omni` is handed to vLLM's own CLI: no stages, no deploy file",
            "omni_gate",
        )
    known_dests = {f.dest for f in model.flags.values()}
    field_names = set(model.stage_fields) | set(model.pipeline_wide) | set(model.engine_arg_fields)
    option_names = set(model.flags)
    unchecked: list[str] = []
    for flag in command.flags:
        name = flag.flag
        dest = name.lstrip("-").replace("-", "_")
        if name in model.flags:
            info = model.flags[name]
            if info.deprecated:
                lint.add(
                    "warning", "flag-ignored", name, 0, name, f"{name} is deprecated and ignored", label=info.label
                )
            if info.choices and flag.value is not None and flag.value not in [str(c) for c in info.choices]:
                choices = ", ".join(str(c) for c in info.choices)
                lint.add(
                    "error",
                    "flag-choice",
                    name,
                    0,
                    name,
                    f"{name} {flag.value!r}: not one of {choices}",
                    label=info.label,
                )
            continue
        if dest in model.rejected_with_omni and command.has("--omni") and not model.rejection_set_filled:
            lint.add(
                "warning",
                "flag-not-refused",
                name,
                0,
                name,
                f"{name}: validate refuses it under --omni only if it is in args.{model.rejection_set}, which "
                "nothing in this engine's entry modules sets, so it is not refused here; set parallelism per "
                "stage in the deploy file (and replicas with num_replicas)",
                "rejected_with_omni",
            )
            continue
        if dest in model.rejected_with_omni and command.has("--omni"):
            lint.add(
                "error",
                "flag-rejected",
                name,
                0,
                name,
                f"{name} is rejected under --omni: set parallelism per stage in the deploy file "
                "(and replicas with num_replicas)",
                "rejected_with_omni",
            )
            continue
        if dest in model.removed_kwargs:
            replacement = "--" + model.removed_kwargs[dest].replace("_", "-")
            lint.add(
                "error",
                "flag-removed",
                name,
                0,
                name,
                f"{name} is no longer supported: use {replacement}",
                "removed_kwargs",
            )
            continue
        if dest in field_names:
            continue  # an engine field: a flag of vLLM's parser the engine passes on
        known = lint.history(name) if lint.history else None
        if known is not None:
            lint.add("error", known[0], name, 0, name, known[1], "serve_flags")
            continue
        close = _close(name, option_names) or (
            "--" + c.replace("_", "-") if (c := _close(dest, field_names | known_dests, 0.85)) else None
        )
        if close:
            lint.add(
                "warning",
                "flag-unknown",
                name,
                0,
                name,
                f"{name} is not a flag of this engine (did you mean {close}?)",
                "serve_flags",
            )
        else:
            unchecked.append(name)
    if unchecked:
        lint.add(
            "note",
            "flag-unchecked",
            COMMAND,
            0,
            ", ".join(unchecked),
            f"{', '.join(unchecked)}: not vLLM-Omni flags nor engine fields; vLLM's own parser decides "
            "(this check does not read vLLM)",
            "serve_flags",
        )


def global_flags(command: ServeCommand | None, model: EngineModel) -> dict[str, Any]:
    """Typed flags that reach every stage as runtime overrides (build_stage_runtime_overrides):
    not orchestrator-only, and a deploy or engine field."""
    if command is None:
        return {}
    internal = (set(model.orchestrator_fields) - model.shared_fields) | model.shared_fields
    override_keys = set(model.stage_fields) | set(model.pipeline_wide)
    internal -= override_keys
    found: dict[str, Any] = {}
    for flag in command.flags:
        dest = flag.flag.lstrip("-").replace("-", "_")
        if flag.flag in model.flags:
            dest = model.flags[flag.flag].dest
        if dest in internal or dest not in (override_keys | set(model.engine_arg_fields)):
            continue
        if dest in model.rejected_with_omni or (flag.flag in model.flags and dest not in override_keys):
            continue  # refused outright, or an omni flag that is not a stage setting
        found[dest] = _scalar(flag.value) if flag.value is not None else True
    return found


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# --- the deploy file


def lint_document(lint: Lint, doc: DeployDoc, pipeline: Pipeline | None) -> None:
    """Checks of one file's own keys (where they are written)."""
    model = lint.model
    data = doc.data
    if "stage_args" in data:
        if model.rejects_stage_args:
            lint.add(
                "error",
                "schema-removed",
                doc.name,
                doc.line("stage_args"),
                "stage_args",
                "the `stage_args` layout is removed: the pipeline's topology is in the engine; write per-stage "
                "settings under `stages:` as `- stage_id: N` entries (flat keys, devices, num_replicas)",
                "load_deploy_config",
            )
        else:
            lint.add(
                "note",
                "schema-legacy",
                doc.name,
                doc.line("stage_args"),
                "stage_args",
                "the legacy `stage_args` layout: not checked further",
            )
        return
    if not model.top_level_keys:
        lint.skip("deploy keys: the engine's deploy loader was not found")
        return
    if data and not any(key in model.top_level_keys for key in data):
        lint.add(
            "error",
            "not-deploy",
            doc.name,
            1,
            doc.name,
            "not a deploy file: none of its top-level keys is a deploy setting (stages, async_chunk, connectors, …)",
            "load_deploy_config",
        )
        return
    for key in data:
        line = doc.line(key)
        if key in model.top_level_keys or key == "stage_args":
            continue
        if key in model.other_top_level_keys:
            lint.add("note", "key-other-reader", doc.name, line, str(key), OTHER_READERS[str(key)], f"top_{key}")
            continue
        if key in model.stage_fields or key in model.engine_arg_fields:
            lint.add(
                "warning",
                "key-stage-only",
                doc.name,
                line,
                str(key),
                f"`{key}` is read only per stage: at the top level it is dropped; set it under each `stages:` entry",
                "load_deploy_config",
            )
            continue
        lint.add(
            "warning",
            "key-unknown",
            doc.name,
            line,
            str(key),
            f"`{key}` is not a deploy setting: dropped{_mean(str(key), model.top_level_keys)}",
            "load_deploy_config",
        )
    _type_checks(lint, doc, (), data, model.deploy_fields, "DeployConfig")
    stages = data.get("stages")
    if stages is not None and not isinstance(stages, list):
        lint.add(
            "error",
            "shape",
            doc.name,
            doc.line("stages"),
            "stages",
            "`stages` must be a list of `- stage_id: N` entries",
            "load_deploy_config",
        )
        stages = []
    seen: dict[Any, int] = {}
    for index, stage in enumerate(stages or []):
        path: tuple[Any, ...] = ("stages", index)
        if not isinstance(stage, dict):
            lint.add(
                "error",
                "shape",
                doc.name,
                doc.line(*path),
                f"stages[{index}]",
                "a stage entry is a mapping with a stage_id",
                "_parse_stage_deploy",
            )
            continue
        if "stage_id" not in stage:
            lint.add(
                "error",
                "stage-id-missing",
                doc.name,
                doc.line(*path),
                f"stages[{index}]",
                "a stage entry without stage_id: the loader fails on it",
                "_parse_stage_deploy",
            )
            continue
        sid = _hashable(stage["stage_id"])
        if sid in seen:
            lint.add(
                "warning",
                "stage-duplicate",
                doc.name,
                doc.line(*path, "stage_id"),
                f"stage_id {sid}",
                f"stage {sid} is listed twice in one file: the later entry replaces the earlier",
                "merge_pipeline_deploy",
            )
        seen[sid] = index
        _stage_keys(lint, doc, path, stage, pipeline)
    connectors = data.get("connectors")
    if isinstance(connectors, dict) and model.connectors:
        for key, spec in connectors.items():
            name = spec.get("name") if isinstance(spec, dict) else None
            if name is not None and name not in model.connectors:
                lint.add(
                    "error",
                    "connector-unknown",
                    doc.name,
                    doc.line("connectors", key, "name"),
                    str(name),
                    f"connector `{name}` does not exist{_mean(str(name), model.connectors)}; "
                    f"registered: {', '.join(sorted(model.connectors))}",
                    "connectors",
                )
    platforms = data.get("platforms")
    if isinstance(platforms, dict):
        for name, section in platforms.items():
            if model.platforms and name not in model.platforms:
                lint.add(
                    "warning",
                    "platform-unknown",
                    doc.name,
                    doc.line("platforms", name),
                    str(name),
                    f"platform `{name}` is not a platform of this engine: the section is never applied"
                    f"{_mean(str(name), model.platforms)}",
                    "_apply_platform_overrides",
                )
            section_stages = section.get("stages") if isinstance(section, dict) else None
            for index, stage in enumerate(section_stages if isinstance(section_stages, list) else []):
                if isinstance(stage, dict) and "stage_id" in stage:
                    _stage_keys(lint, doc, ("platforms", name, "stages", index), stage, pipeline, platform=True)


def _stage_keys(
    lint: Lint,
    doc: DeployDoc,
    path: tuple[Any, ...],
    stage: dict[str, Any],
    pipeline: Pipeline | None,
    platform: bool = False,
) -> None:
    model = lint.model
    sid = stage.get("stage_id")
    ps = pipeline.stages.get(sid) if pipeline is not None and isinstance(sid, int) else None
    flat: list[tuple[tuple[Any, ...], str, Any]] = []
    for key, value in stage.items():
        if key == "engine_args" and isinstance(value, dict):
            flat += [((*path, "engine_args", k), str(k), v) for k, v in value.items()]
        elif key == "runtime" and isinstance(value, dict):
            for k, v in value.items():
                if k not in RUNTIME_KEYS:
                    lint.add(
                        "warning",
                        "key-unknown",
                        doc.name,
                        doc.line(*path, "runtime", k),
                        str(k),
                        f"runtime `{k}` is not read (runtime holds {', '.join(RUNTIME_KEYS)})",
                        "_parse_stage_deploy",
                    )
                else:
                    flat.append(((*path, "runtime", k), str(k), v))
        else:
            flat.append(((*path, key), str(key), value))
    known = model.known_stage_keys()
    top_only = (
        set(model.deploy_fields) - set(model.stage_fields) - set(model.pipeline_wide) - set(model.engine_arg_fields)
    )
    for where, key, value in flat:
        line = doc.line(*where)
        subject = f"stage {sid}: {key}"
        if key in model.overwritten_stage_keys:
            lint.add(
                "warning",
                "key-overwritten",
                doc.name,
                line,
                subject,
                f"`{key}` per stage is overwritten by the pipeline-wide value; set `{key}` at the top level",
                "_build_engine_args",
            )
            continue
        if key in top_only:
            lint.add(
                "warning",
                "key-top-only",
                doc.name,
                line,
                subject,
                f"`{key}` is read only at the top level of the deploy file: per stage it does nothing",
                "load_deploy_config",
            )
            continue
        if key in model.topology_fields and key not in model.stage_fields and key not in model.engine_arg_fields:
            lint.add(
                "warning",
                "key-topology",
                doc.name,
                line,
                subject,
                f"`{key}` is part of the pipeline's fixed topology (StagePipelineConfig), not a deploy setting: "
                "the deploy value does not change it",
                label=model.topology_fields[key].label,
            )
            continue
        if key not in known:
            candidates = set(model.stage_fields) | set(model.pipeline_wide) | set(model.engine_arg_fields)
            if ps is None or ps.execution_type == "DIFFUSION":
                candidates |= set(model.diffusion_fields) | set(model.diffusion_parallel_fields)
            close = _close(key, frozenset(candidates))
            if close:
                lint.add(
                    "warning",
                    "key-unknown",
                    doc.name,
                    line,
                    subject,
                    f"`{key}` is not a stage setting (did you mean `{close}`?): passed on as an engine argument the "
                    "stage does not know",
                    "StageDeployConfig",
                )
            else:
                lint.passthrough[key].append(f"{doc.name}:{line}")
            continue
        if key in ("input_connectors", "output_connectors"):
            _edges(lint, doc, where, key, value, pipeline)
        if key == "devices":
            _devices_shape(lint, doc, line, subject, value)
        if ps is not None:
            _stage_type(lint, doc, line, subject, key, value, ps)
    fields = {**model.diffusion_fields, **model.engine_arg_fields, **model.stage_fields}
    for where, key, value in flat:
        if key in fields:
            _type_check(
                lint,
                doc,
                doc.line(*where),
                f"stage {sid}: {key}",
                key,
                value,
                fields[key].annotation,
                fields[key].label,
            )


def _stage_type(lint: Lint, doc: DeployDoc, line: int, subject: str, key: str, value: Any, ps: PipelineStage) -> None:
    model = lint.model
    if key in RUNTIME_KEYS or key in model.reserved_stage_keys:
        return
    if ps.execution_type == "DIFFUSION" and model.diffusion_fields and model.label("diffusion_from_kwargs"):
        if key == "parallel_config" and isinstance(value, dict):
            for inner in value:
                if inner not in model.diffusion_parallel_fields:
                    lint.add(
                        "warning",
                        "key-unknown",
                        doc.name,
                        line,
                        f"{subject}.{inner}",
                        f"parallel_config `{inner}` is not a DiffusionParallelConfig "
                        f"field{_mean(str(inner), frozenset(model.diffusion_parallel_fields))}",
                        "DiffusionParallelConfig",
                    )
            return
        if key in model.diffusion_replaced:
            source, default = model.diffusion_replaced[key]
            feeds = (
                f" (the `{model.diffusion_batch_keyword}` keyword of Omni/AsyncOmni; `vllm serve` has no flag for it)"
                if model.diffusion_batch_keyword
                else ""
            )
            lint.add(
                "note" if value == default else "warning",
                "no-effect",
                doc.name,
                line,
                subject,
                f"`{key}` of diffusion stage {ps.stage_id} is replaced at start-up by the launcher's `{source}` "
                f"(default {default!r}){feeds}: the deploy value does not take effect",
                "diffusion_replaced",
            )
            return
        if key in model.diffusion_fields or key in model.diffusion_aliases:
            return
        hint = (
            f"; write it under `parallel_config:` ({key} is a DiffusionParallelConfig field)"
            if key in model.diffusion_parallel_fields
            else _mean(key, frozenset(model.diffusion_fields))
        )
        lint.add(
            "warning",
            "no-effect",
            doc.name,
            line,
            subject,
            f"`{key}` does nothing for stage {ps.stage_id} ({ps.model_stage}, a diffusion stage): "
            f"OmniDiffusionConfig.from_kwargs keeps only its own fields{hint}",
            "diffusion_from_kwargs",
        )
        return
    if ps.execution_type != "DIFFUSION" and key in model.diffusion_only_stage_fields:
        if key in model.engine_arg_fields or key not in (
            set(model.diffusion_fields) | set(model.diffusion_parallel_fields)
        ):
            return
        lint.add(
            "warning",
            "no-effect",
            doc.name,
            line,
            subject,
            f"`{key}` is a diffusion setting: stage {ps.stage_id} ({ps.model_stage}) is an {ps.execution_type} stage "
            "whose engine arguments (OmniEngineArgs) do not read it",
            "OmniEngineArgs",
        )


def _caught(model: EngineModel) -> str:
    """What start-up does with the connector loader's error, on an engine that catches it."""
    if not model.label("transfer_caught"):
        return ""
    return "; start-up catches the loader's error (load_omni_transfer_config_for_model): a warning, no transfer config"


def _edges(lint: Lint, doc: DeployDoc, where: tuple[Any, ...], key: str, value: Any, pipeline: Pipeline | None) -> None:
    if not isinstance(value, dict):
        lint.add(
            "error",
            "shape",
            doc.name,
            doc.line(*where),
            key,
            f"`{key}` maps from_stage_N / to_stage_N to a connector",
            "connector_refs",
        )
        return
    connectors = doc.data.get("connectors")
    defined: dict[str, Any] | None = connectors if isinstance(connectors, dict) else None
    for edge, ref in value.items():
        line = doc.line(*where, edge)
        match = EDGE_KEY[key].match(str(edge))
        if match is None:
            lint.add(
                "warning",
                "edge-key",
                doc.name,
                line,
                str(edge),
                f"`{edge}`: {key} keys are `{'from' if key == 'input_connectors' else 'to'}_stage_N`",
                "connector_refs",
            )
        elif pipeline is not None and pipeline.stages and int(match.group(1)) not in pipeline.stages:
            lint.add(
                "warning",
                "edge-stage",
                doc.name,
                line,
                str(edge),
                f"`{edge}`: stage {match.group(1)} is not a stage of {pipeline.key}",
                "connector_refs",
            )
        if isinstance(ref, str) and defined is not None and ref not in defined and not doc.data.get("base_config"):
            lint.add(
                "error",
                "connector-undefined",
                doc.name,
                line,
                ref,
                f"connector `{ref}` is not defined under `connectors:`{_mean(ref, frozenset(defined))}"
                + _caught(lint.model),
                "connector_refs",
            )
        if isinstance(ref, str) and defined is None and not doc.data.get("base_config"):
            lint.add(
                "error",
                "connector-undefined",
                doc.name,
                line,
                ref,
                f"connector `{ref}` is referenced but the file has no `connectors:`" + _caught(lint.model),
                "connector_refs",
            )
        if isinstance(ref, dict) and lint.model.connectors and ref.get("name") not in lint.model.connectors:
            lint.add(
                "error",
                "connector-unknown",
                doc.name,
                line,
                str(ref.get("name")),
                f"connector `{ref.get('name')}` does not exist",
                "connectors",
            )


def _devices_shape(lint: Lint, doc: DeployDoc, line: int, subject: str, value: Any) -> None:
    if value is None or value == "cpu":
        return
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        lint.add(
            "error",
            "devices",
            doc.name,
            line,
            subject,
            f'devices {value!r}: write a string of comma-separated ids, e.g. "0,1"',
            "devices",
        )
        return
    if isinstance(value, str) and not all(p.strip().isdigit() for p in value.split(",") if p.strip()):
        lint.add(
            "error",
            "devices",
            doc.name,
            line,
            subject,
            f"devices {value!r}: ids must be non-negative integers (logical indices into the visible devices)",
            "devices",
        )


def _type_checks(
    lint: Lint, doc: DeployDoc, path: tuple[Any, ...], data: dict[str, Any], fields: dict[str, Any], owner: str
) -> None:
    for key, value in data.items():
        if key in fields:
            _type_check(
                lint, doc, doc.line(*path, key), str(key), str(key), value, fields[key].annotation, fields[key].label
            )


def _type_check(
    lint: Lint, doc: DeployDoc, line: int, subject: str, key: str, value: Any, annotation: str, label: str
) -> None:
    if value is None:
        return
    kinds = set(re.findall(r"\b(bool|int|float|str|dict|list)\b", annotation))
    if not kinds or "Any" in annotation:
        return
    if "bool" in kinds and isinstance(value, str) and value.strip().lower() in BOOL_WORDS and "str" not in kinds:
        lint.add(
            "error",
            "string-bool",
            doc.name,
            line,
            subject,
            f"`{key}: {value!r}` is a string, and any non-empty string is true: write "
            f"{'true' if value.strip().lower() in ('true', 'yes', 'on') else 'false'} without quotes",
            label=label,
        )
        return
    ok = (
        (isinstance(value, bool) and "bool" in kinds)
        or (isinstance(value, int) and not isinstance(value, bool) and kinds & {"int", "float"})
        or (isinstance(value, float) and "float" in kinds)
        or (isinstance(value, str) and "str" in kinds)
        or (isinstance(value, dict) and "dict" in kinds)
        or (isinstance(value, list) and "list" in kinds)
    )
    if not ok:
        lint.add(
            "warning",
            "value-type",
            doc.name,
            line,
            subject,
            f"`{key}` is {annotation}, got {type(value).__name__} {value!r}",
            label=label,
        )


# ---------------------------------------------------------------- the merged configuration


@dataclass
class StageLayout:
    stage_id: int
    devices: list[int] | None
    replicas: int
    world: int
    world_text: str
    memory: float | None
    where: str
    line: int
    memory_line: int = 0


def lint_merged(
    lint: Lint,
    docs: list[DeployDoc],
    merged: dict[str, Any],
    pipeline: Pipeline | None,
    command: ServeCommand | None,
    overrides: dict[int, dict[str, Any]],
    visible: int | None,
    user_given: bool,
    bundled_defaults: list[DeployDoc] | None = None,
) -> None:
    model = lint.model
    first = docs[0] if docs else None
    where = first.name if first else COMMAND

    def origin(sid: Any, *keys: str) -> tuple[str, int]:
        for doc in docs:
            for index, stage in enumerate(doc.data.get("stages") or []):
                if isinstance(stage, dict) and _hashable(stage.get("stage_id")) == sid:
                    for key in keys:
                        for path in ((key,), ("engine_args", key), ("runtime", key)):
                            node: Any = stage
                            for step in path:
                                node = node.get(step) if isinstance(node, dict) else None
                            if node is not None:
                                return doc.name, doc.line("stages", index, *path)
                    return doc.name, doc.line("stages", index)
        return where, 0

    stages = _stage_list(merged.get("stages"))
    if pipeline is None:
        lint.skip(
            "stage ids, stage types, async_chunk and connector edges: the pipeline is not known (give --pipeline)"
        )
    elif not pipeline.resolved or not pipeline.stages:
        lint.skip(f"stage checks: the stages of pipeline {pipeline.key} could not be read from the engine")
    else:
        for stage in stages:
            sid = stage["stage_id"]
            if sid not in pipeline.stages:
                file, line = origin(_hashable(sid))
                hint = " (stage ids are integers)" if isinstance(sid, str) and sid.strip().isdigit() else ""
                lint.add(
                    "warning",
                    "stage-id",
                    file,
                    line,
                    f"stage_id {sid!r}",
                    f"stage {sid!r} is not a stage of {pipeline.key} (stages "
                    f"{', '.join(map(str, sorted(pipeline.stages)))}): "
                    f"its settings are ignored{hint}",
                    "merge_pipeline_deploy",
                )
        _async_chunk(lint, merged, pipeline, command, where, docs)
    for sid in overrides:
        if pipeline is not None and pipeline.stages and sid not in pipeline.stages:
            lint.add(
                "warning",
                "override-stage",
                "--stage-overrides",
                0,
                str(sid),
                f"stage {sid} is not a stage of {pipeline.key}: the override matches nothing",
                "build_stage_runtime_overrides",
            )
    if (
        first is not None
        and not first.bundled
        and user_given
        and pipeline is not None
        and not first.data.get("base_config")
    ):
        _dropped_defaults(lint, first, pipeline, bundled_defaults or [])
    flags = global_flags(command, model)
    if flags and len(stages or (pipeline.stages if pipeline else [])) > 1:
        _global_flags(lint, flags, stages, pipeline, origin)
    layouts = _layouts(lint, stages, pipeline, flags, overrides, origin)
    _placement(lint, layouts, visible, command)
    platforms = merged.get("platforms")
    if isinstance(platforms, dict):
        for name, section in sorted(platforms.items()):
            if not isinstance(section, dict) or (model.platforms and name not in model.platforms):
                continue
            applied, ignored = _apply_platform(stages, _stage_list(section.get("stages")), model)
            for sid in ignored:
                lint.add(
                    "warning",
                    "platform-stage",
                    where,
                    0,
                    f"platforms.{name} stage {sid}",
                    f"platforms.{name}: stage {sid} is not in `stages:`, so its override is ignored",
                    "_apply_platform_overrides",
                )
            _placement(
                lint,
                _layouts(lint, applied, pipeline, flags, overrides, origin),
                visible,
                command,
                f" (platform {name})",
                same_device_pool=False,
            )


def _async_chunk(
    lint: Lint,
    merged: dict[str, Any],
    pipeline: Pipeline,
    command: ServeCommand | None,
    where: str,
    docs: list[DeployDoc],
) -> None:
    model = lint.model
    default = model.deploy_fields.get("async_chunk")
    value = merged.get("async_chunk", default.default if default is not None else None)
    source = "the deploy file" if "async_chunk" in merged else "the DeployConfig default"
    if command is not None:
        if command.has("--async-chunk"):
            value, source = True, "--async-chunk"
        if command.has("--no-async-chunk"):
            value, source = False, "--no-async-chunk"
    if isinstance(value, str):
        return  # reported as a string boolean where it is written
    if value and len(pipeline.stages) > 1 and pipeline.has_edges and not pipeline.async_capable:
        line = next((d.line("async_chunk") for d in docs if "async_chunk" in d.data), 0)
        file = next((d.name for d in docs if "async_chunk" in d.data), where)
        lint.add(
            "error",
            "async-chunk",
            file if source == "the deploy file" else (COMMAND if source.startswith("--") else where),
            line if source == "the deploy file" else 0,
            "async_chunk",
            f"async_chunk is on ({source}) but no stage of {pipeline.key} has an async-chunk next-stage processor: "
            "the engine refuses to start; set `async_chunk: false`",
            "merge_pipeline_deploy",
        )


def _dropped_defaults(lint: Lint, doc: DeployDoc, pipeline: Pipeline, bundled: list[DeployDoc]) -> None:
    """A user file without base_config replaces the pipeline's bundled defaults: name what it loses."""
    if not bundled:
        return
    defaults = merge_chain(bundled, lint.model)
    mine = {_hashable(s["stage_id"]): s for s in _stage_list(doc.data.get("stages"))}
    lost: list[str] = [k for k in defaults if k not in ("stages", "platforms") and k not in doc.data]
    for stage in _stage_list(defaults.get("stages")):
        sid = _hashable(stage["stage_id"])
        if sid not in mine:
            lost.append(f"stage {sid}")
            continue
        lost += [f"stage {sid} {k}" for k in stage if k != "stage_id" and _get(mine[sid], str(k)) is None]
    if not lost:
        return
    shown = ", ".join(lost[:6]) + (f" and {len(lost) - 6} more" if len(lost) > 6 else "")
    lint.add(
        "warning",
        "overlay-no-base",
        doc.name,
        1,
        "base_config",
        f"this file replaces {pipeline.key}'s bundled defaults ({posixpath.basename(bundled[0].location)}) instead of "
        f"layering on them, and leaves out {shown}: those take the StageDeployConfig defaults; add "
        "`base_config:` (a path, relative to this file, to the bundled file) or set them here",
        "_create_legacy_from_registry",
    )


def _global_flags(
    lint: Lint, flags: dict[str, Any], stages: list[dict[str, Any]], pipeline: Pipeline | None, origin: Any
) -> None:
    model = lint.model
    for dest, value in flags.items():
        flag = "--" + dest.replace("_", "-")
        overridden = [s["stage_id"] for s in stages if dest in s or dest in (s.get("engine_args") or {})]
        unfit: list[str] = []
        if pipeline is not None:
            for ps in pipeline.stages.values():
                if (
                    ps.execution_type == "DIFFUSION"
                    and model.diffusion_fields
                    and dest not in model.diffusion_fields
                    and dest not in model.diffusion_parallel_fields
                ):
                    unfit.append(f"{ps.stage_id} ({ps.model_stage}, diffusion)")
                elif (
                    ps.execution_type != "DIFFUSION"
                    and dest in model.diffusion_only_stage_fields
                    and dest not in model.engine_arg_fields
                ):
                    unfit.append(f"{ps.stage_id} ({ps.model_stage}, {ps.execution_type})")
        if overridden:
            lint.add(
                "warning",
                "flag-global",
                flag,
                0,
                flag,
                f"{flag} {value!r} reaches every stage and replaces the per-stage `{dest}` of stage(s) "
                f'{", ".join(map(str, overridden))}; use --stage-overrides \'{{"N": {{"{dest}": …}}}}\' for one stage',
                "build_stage_runtime_overrides",
            )
        elif unfit:
            lint.add(
                "warning",
                "flag-global",
                flag,
                0,
                flag,
                f"{flag} reaches every stage, including stage(s) {', '.join(unfit)} that do not read it; use "
                "--stage-overrides for the stages it fits",
                "build_stage_runtime_overrides",
            )
        else:
            lint.add(
                "note",
                "flag-global",
                flag,
                0,
                flag,
                f"{flag} applies to every stage of the pipeline",
                "build_stage_runtime_overrides",
            )


def _apply_platform(
    stages: list[dict[str, Any]], platform_stages: list[dict[str, Any]], model: EngineModel
) -> tuple[list[dict[str, Any]], list[Any]]:
    by_id = {_hashable(s["stage_id"]): dict(s) for s in stages}
    ignored: list[Any] = []
    for ps in platform_stages:
        sid = _hashable(ps["stage_id"])
        if sid not in by_id:
            ignored.append(sid)
            continue
        base = by_id[sid]
        if "engine_args" in ps and isinstance(ps["engine_args"], dict):
            updates = dict(ps["engine_args"])
            runtime_value = ps.get("runtime")
            runtime: dict[str, Any] = runtime_value if isinstance(runtime_value, dict) else {}
            updates.update({k: runtime[k] for k in RUNTIME_KEYS if k in runtime})
        else:
            updates = {k: v for k, v in ps.items() if k != "stage_id"}
        for key, value in updates.items():
            if key in model.deep_merge_keys and isinstance(value, dict) and isinstance(base.get(key), dict):
                base[key] = {**base[key], **value}
            else:
                base[key] = value
    return list(by_id.values()), ignored


def _get(stage: dict[str, Any], key: str) -> Any:
    for holder in (stage.get("runtime"), stage.get("engine_args"), stage):
        if isinstance(holder, dict) and key in holder:
            return holder[key]
    return None


def _int(value: Any, fallback: int = 1) -> int:
    if isinstance(value, bool):
        return fallback
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return fallback


def _layouts(
    lint: Lint,
    stages: list[dict[str, Any]],
    pipeline: Pipeline | None,
    flags: dict[str, Any],
    overrides: dict[int, dict[str, Any]],
    origin: Any,
) -> list[StageLayout]:
    layouts: list[StageLayout] = []
    for stage in stages:
        sid = stage["stage_id"]
        if pipeline is not None and pipeline.stages and sid not in pipeline.stages:
            continue
        ps = pipeline.stages.get(sid) if pipeline is not None else None
        values = {
            **{
                k: _get(stage, k)
                for k in (
                    "devices",
                    "num_replicas",
                    "gpu_memory_utilization",
                    "tensor_parallel_size",
                    "pipeline_parallel_size",
                    "data_parallel_size",
                    "parallel_config",
                )
            }
        }
        values = {k: v for k, v in values.items() if v is not None}
        values.update(
            {
                k: v
                for k, v in flags.items()
                if k
                in (
                    "gpu_memory_utilization",
                    "tensor_parallel_size",
                    "pipeline_parallel_size",
                    "devices",
                    "num_replicas",
                )
            }
        )
        values.update({k: v for k, v in overrides.get(sid, {}).items() if v is not None})
        devices_value = values.get("devices")
        devices: list[int] | None = None
        if isinstance(devices_value, int) and not isinstance(devices_value, bool):
            devices = [devices_value]
        elif isinstance(devices_value, str) and devices_value != "cpu":
            parts = [p.strip() for p in devices_value.split(",") if p.strip()]
            devices = [int(p) for p in parts] if all(p.isdigit() for p in parts) else None
        replicas = max(1, _int(values.get("num_replicas")))
        diffusion = ps is not None and ps.execution_type == "DIFFUSION"
        if diffusion:
            pc_value = values.get("parallel_config")
            pc: dict[str, Any] = pc_value if isinstance(pc_value, dict) else {}
            degrees = {
                k: _int(pc.get(k))
                for k in (
                    "pipeline_parallel_size",
                    "data_parallel_size",
                    "tensor_parallel_size",
                    "ulysses_degree",
                    "ring_degree",
                    "allgather_degree",
                    "cfg_parallel_size",
                )
            }
            for key in (
                "ulysses_degree",
                "ring_degree",
                "allgather_degree",
                "cfg_parallel_size",
                "tensor_parallel_size",
            ):
                if key in overrides.get(sid, {}) or key in flags:
                    degrees[key] = _int(overrides.get(sid, {}).get(key, flags.get(key)))
            sp = _int(pc.get("sequence_parallel_size"), 0) or (
                degrees["allgather_degree"]
                if degrees["allgather_degree"] > 1
                else degrees["ulysses_degree"] * degrees["ring_degree"]
            )
            world = (
                degrees["pipeline_parallel_size"]
                * degrees["data_parallel_size"]
                * degrees["tensor_parallel_size"]
                * sp
                * degrees["cfg_parallel_size"]
            )
            text = (
                f"pp {degrees['pipeline_parallel_size']} × dp {degrees['data_parallel_size']} × "
                f"tp {degrees['tensor_parallel_size']} × sp {sp} × cfg {degrees['cfg_parallel_size']}"
            )
            if pc.get("use_hsdp"):
                lint.skip(f"stage {sid}: HSDP world size is not computed")
                continue
        else:
            tp = _int(values.get("tensor_parallel_size"))
            pp = _int(values.get("pipeline_parallel_size", flags.get("pipeline_parallel_size")))
            world, text = tp * pp, f"tp {tp} × pp {pp}"
        memory = values.get("gpu_memory_utilization")
        file, line = origin(_hashable(sid), "devices")
        memory_line = (
            origin(_hashable(sid), "gpu_memory_utilization")[1]
            if "gpu_memory_utilization" in stage or "gpu_memory_utilization" in (stage.get("engine_args") or {})
            else 0
        )
        layouts.append(
            StageLayout(
                stage_id=sid if isinstance(sid, int) else -1,
                devices=devices,
                replicas=replicas,
                world=world,
                world_text=text,
                memory=float(memory) if isinstance(memory, (int, float)) and not isinstance(memory, bool) else None,
                where=file,
                line=line,
                memory_line=memory_line,
            )
        )
    return layouts


def _placement(
    lint: Lint,
    layouts: list[StageLayout],
    visible: int | None,
    command: ServeCommand | None,
    suffix: str = "",
    same_device_pool: bool = True,
) -> None:
    per_device: dict[int, list[tuple[int, float]]] = defaultdict(list)
    memory_at: dict[int, tuple[str, int]] = {}
    for layout in layouts:
        label_role = "replicas" if layout.replicas > 1 else "devices"
        devices = layout.devices
        if devices is None:
            devices = list(range(layout.world))  # the stage sees every device and starts on the first ones
        count = len(devices)
        per_replica: list[list[int]] = []
        if layout.replicas > 1 and layout.devices is None:
            if lint.model.one_device_slot:
                lint.add(
                    "error",
                    "replicas",
                    layout.where,
                    layout.line,
                    f"stage {layout.stage_id}: num_replicas",
                    f"stage {layout.stage_id}{suffix}: {layout.replicas} replicas without `devices`: this engine's "
                    "device split gives such a stage one slot, so starting replica 1 indexes past it "
                    f"(IndexError); give `devices`: {layout.world} id{'s' if layout.world > 1 else ''} as a "
                    f"per-replica template or {layout.replicas * layout.world} as the pool",
                    "replicas",
                )
                continue
            per_replica = [devices] * layout.replicas  # each replica inherits the launcher's devices
        elif layout.replicas > 1:
            if count == layout.replicas * layout.world:
                per_replica = [devices[r * layout.world : (r + 1) * layout.world] for r in range(layout.replicas)]
            elif count == layout.world and all(0 <= d < layout.world for d in devices):
                per_replica = [[r * layout.world + d for d in devices] for r in range(layout.replicas)]
            else:
                lint.add(
                    "error",
                    "replicas",
                    layout.where,
                    layout.line,
                    f"stage {layout.stage_id}: devices",
                    f"stage {layout.stage_id}{suffix}: {count} device id(s) for {layout.replicas} replicas of "
                    f"{layout.world_text}: "
                    f"give {layout.world} (a per-replica template of ids 0..{layout.world - 1}) or "
                    f"{layout.replicas * layout.world} (the whole pool)",
                    label_role,
                )
                continue
        else:
            per_replica = [devices]
            if layout.devices is not None and count < layout.world:
                lint.add(
                    "error",
                    "parallel-fit",
                    layout.where,
                    layout.line,
                    f"stage {layout.stage_id}: devices",
                    f"stage {layout.stage_id}{suffix}: {layout.world_text} needs {layout.world} devices, its device "
                    f"list has {count}",
                    "diffusion_world" if "sp" in layout.world_text else "devices",
                )
            elif layout.devices is not None and count > layout.world:
                lint.add(
                    "warning",
                    "parallel-fit",
                    layout.where,
                    layout.line,
                    f"stage {layout.stage_id}: devices",
                    f"stage {layout.stage_id}{suffix}: {count} devices listed for {layout.world_text} "
                    f"({layout.world} used): the rest stay idle",
                    "diffusion_world" if "sp" in layout.world_text else "devices",
                )
        used = sorted({d for replica in per_replica for d in replica})
        if visible is not None and same_device_pool:  # platform sections: another machine's devices
            outside = [d for d in used if d >= visible]
            if outside and layout.devices is not None:
                lint.add(
                    "error",
                    "devices-visible",
                    layout.where,
                    layout.line,
                    f"stage {layout.stage_id}: devices",
                    f"stage {layout.stage_id}{suffix}: device(s) {', '.join(map(str, outside))} outside the "
                    f"{visible} visible "
                    f"(ids are indices 0..{visible - 1} into {_visible_name(command)})",
                    "devices",
                )
        if layout.memory is not None:
            for replica in per_replica:
                for device in replica:
                    per_device[device].append((layout.stage_id, layout.memory))
                    if layout.memory_line and not suffix:
                        memory_at[device] = (layout.where, layout.memory_line)
    groups: dict[str, list[int]] = defaultdict(list)
    for device, shares in sorted(per_device.items()):
        total = sum(m for _, m in shares)
        if total > 1.0 + 1e-9:
            parts = " + ".join(f"{m:g} (stage {s})" for s, m in shares)
            groups[f"{parts} = {total:.2f}"].append(device)
    for parts, devices in groups.items():
        where, line = memory_at.get(devices[0], (layouts[0].where if layouts else COMMAND, 0))
        names = ", ".join(map(str, devices))
        lint.add(
            "error",
            "memory-sum",
            where,
            line,
            f"device {names}",
            f"device{'s' if len(devices) > 1 else ''} {names}{suffix}: gpu_memory_utilization {parts} > 1 "
            "(every replica counted)",
            "replicas",
        )


def _visible_name(command: ServeCommand | None) -> str:
    if command is not None and "CUDA_VISIBLE_DEVICES" in command.env:
        return f"CUDA_VISIBLE_DEVICES={command.env['CUDA_VISIBLE_DEVICES']}"
    return "the visible devices"


# ---------------------------------------------------------------- stage overrides


def parse_overrides(lint: Lint, text: str, pipeline: Pipeline | None) -> dict[int, dict[str, Any]]:
    model = lint.model
    where = "--stage-overrides"
    try:
        data = json.loads(text)
    except ValueError as exc:
        lint.add(
            "error",
            "overrides-json",
            where,
            0,
            where,
            f"not valid JSON ({exc}): the engine refuses to start",
            "parse_stage_overrides",
        )
        return {}
    if not isinstance(data, dict):
        lint.add(
            "error",
            "overrides-shape",
            where,
            0,
            where,
            'must be a JSON object keyed by stage id, e.g. \'{"0": {"gpu_memory_utilization": 0.8}}\'',
            "stage_overrides",
        )
        return {}
    found: dict[int, dict[str, Any]] = {}
    known = model.known_stage_keys()
    internal = (
        (set(model.orchestrator_fields) | model.shared_fields) - set(model.stage_fields) - set(model.pipeline_wide)
    )
    for key, values in data.items():
        if not STAGE_OVERRIDE_KEY.match(str(key)):
            digits = re.sub(r"\D", "", str(key))
            hint = f' (write "{digits}")' if digits else ""
            lint.add(
                "error",
                "overrides-key",
                where,
                0,
                str(key),
                f"key {key!r} is not a stage id: `stage_{key}_<setting>` matches no stage and the values are "
                f"dropped{hint}",
                "_STAGE_OVERRIDE_PATTERN",
            )
            continue
        if not isinstance(values, dict):
            lint.add(
                "error",
                "overrides-shape",
                where,
                0,
                str(key),
                f"stage {key}: the value must be an object of settings, got {type(values).__name__}",
                "stage_overrides",
            )
            continue
        for name in values:
            if name in internal:
                lint.add(
                    "warning",
                    "overrides-internal",
                    where,
                    0,
                    f"{key}.{name}",
                    f"stage {key}: `{name}` is an orchestrator setting: dropped from stage overrides",
                    "build_stage_runtime_overrides",
                )
            elif name not in known:
                close = _close(str(name), known)
                if close:
                    lint.add(
                        "warning",
                        "key-unknown",
                        where,
                        0,
                        f"{key}.{name}",
                        f"stage {key}: `{name}` is not a stage setting (did you mean `{close}`?)",
                        "StageDeployConfig",
                    )
                else:
                    lint.passthrough[str(name)].append(f"{where} stage {key}")
        found[int(key)] = values
    return found


# ---------------------------------------------------------------- inputs


@dataclass
class LintInput:
    deploy: str | None = None  # a path (relative to cwd) or a bare bundled name
    command: ServeCommand | None = None
    overrides: str | None = None
    pipeline: str | None = None
    gpus: int | None = None
    cwd: Path = field(default_factory=Path.cwd)


def _bare_name(lint: Lint, ref: str, cwd: Path, where: str, headless: bool = False) -> bool:
    """A bare deploy-file name not in the working directory, on an engine that does not look it up
    in its deploy folder: a finding saying what the engine does instead. True if one was added.
    A headless stage finds the name through its stage loader; on an engine whose serve path
    raises, its connector lookup still reads the name as given and only logs the failure."""
    path = Path(ref)
    mode = lint.model.bare_deploy_name
    if mode == "lookup" or path.is_absolute() or path.parent != Path(".") or (cwd / path).exists():
        return False
    if headless:
        if mode != "raises" or not lint.model.label("transfer_caught"):
            return False
        message = (
            f"`{ref}` is not in {cwd}: a headless stage finds it through its stage loader, but its connector "
            "lookup reads the name as given: a warning and no transfer config; give its path"
        )
        lint.add("warning", "deploy-path", where, 0, ref, message, "transfer_caught")
        return True
    if mode == "raises":
        message = (
            f"`{ref}` is not in {cwd}: this engine loads the deploy file as given at start-up and raises "
            "FileNotFoundError; give its path (the bundled one is under the package's vllm_omni/deploy/)"
        )
    else:
        message = (
            f"`{ref}` is not in {cwd}: this engine looks for the deploy file only as given; not finding it, it "
            "warns and goes on with the pipeline's defaults (the file is ignored); give its path"
        )
    lint.add("error", "deploy-path", where, 0, ref, message, "bare_deploy_name")
    return True


def run_lint(
    model: EngineModel, given: LintInput, engine_files: Any, describe: dict[str, str], history: Any = None
) -> LintReport:
    lint = Lint(model, history)
    reader = EngineFilesReader(engine_files)
    command = given.command
    deploy_ref = given.deploy
    overrides_text = given.overrides
    if command is not None:
        flag = command.last("--deploy-config")
        if flag is not None and flag.value:
            deploy_ref = deploy_ref or flag.value
        flag = command.last("--stage-overrides")
        if flag is not None and flag.value is not None:
            overrides_text = overrides_text or flag.value
    docs: list[DeployDoc] = []
    if deploy_ref:
        headless = command is not None and command.has("--headless")
        flagged = _bare_name(lint, deploy_ref, given.cwd, COMMAND if command else deploy_ref, headless)
        if flagged and reader.read(DEPLOY_DIR + deploy_ref) is None:  # the finding stands; nothing to lint
            lint.skip(f"{deploy_ref}: the engine's bundled file is not shipped: give --wheel/--engine-dir/--source")
        else:
            docs = load_chain(deploy_ref, given.cwd, reader)
    merged = merge_chain(docs, model) if docs else {}
    pipeline, pipeline_from = _pipeline(lint, given, merged, docs, model)
    if pipeline is not None and not docs and pipeline.default_deploy:
        bundled = DEPLOY_DIR + pipeline.default_deploy
        if reader.read(bundled) is not None:
            docs = load_chain(pipeline.default_deploy, Path("/nonexistent-omni-skill"), reader)
            merged = merge_chain(docs, model)
    if command is not None:
        lint_command(lint, command, pipeline)
    overrides = parse_overrides(lint, overrides_text, pipeline) if overrides_text else {}
    for doc in docs:
        if not doc.bundled or doc is docs[0]:
            lint_document(lint, doc, pipeline)
    visible = given.gpus
    if visible is None and command is not None and "CUDA_VISIBLE_DEVICES" in command.env:
        visible = len([d for d in command.env["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()])
    if visible is None:
        lint.skip("devices outside the visible set: give --gpus N or CUDA_VISIBLE_DEVICES in the command")
    if docs or overrides or command is not None:
        defaults: list[DeployDoc] = []
        if pipeline is not None and pipeline.default_deploy and docs and not docs[0].bundled:
            if reader.read(DEPLOY_DIR + pipeline.default_deploy) is not None:
                defaults = load_chain(pipeline.default_deploy, Path("/nonexistent-omni-skill"), reader)
        lint_merged(lint, docs, merged, pipeline, command, overrides, visible, bool(deploy_ref), defaults)
    if lint.passthrough:
        names = sorted(lint.passthrough)
        lint.add(
            "note",
            "passthrough",
            docs[0].name if docs else COMMAND,
            0,
            ", ".join(names),
            f"passed to the stage engine unchecked (vLLM's EngineArgs decides, not read here): {', '.join(names)}",
            "StageConfig.to_omegaconf",
        )
    order = {"error": 0, "warning": 1, "note": 2}
    findings = sorted(set(lint.findings), key=lambda f: (order[f.severity], f.file, f.line, f.rule, f.message))
    return LintReport(
        engine=describe,
        pipeline=pipeline.key if pipeline else None,
        pipeline_from=pipeline_from,
        files=[d.name for d in docs],
        skipped=lint.skipped
        + [f"engine file not found: {m}" for m in model.missing]
        + [
            f"base_config {name}: not on disk, so a bundled deploy file whose contents the skill does not ship (its "
            "keys and the merge with it are not checked; give --wheel or --source)"
            for name in reader.unread
        ],
        findings=findings,
    )


def _pipeline(
    lint: Lint, given: LintInput, merged: dict[str, Any], docs: list[DeployDoc], model: EngineModel
) -> tuple[Pipeline | None, str]:
    if given.pipeline:
        found = model.pipelines.get(given.pipeline)
        if found is None:
            if given.pipeline in _diffusion_archs(model):
                return None, "diffusion architecture"
            raise UsageError(
                f"--pipeline {given.pipeline}: not a pipeline of this "
                f"engine{_mean(given.pipeline, frozenset(model.pipelines))}"
            )
        return found, "--pipeline"
    key = merged.get("pipeline")
    if isinstance(key, str):
        found = model.pipelines.get(key)
        if found is None:
            lint.add(
                "error",
                "pipeline-unknown",
                docs[0].name if docs else COMMAND,
                next((d.line("pipeline") for d in docs if "pipeline" in d.data), 0),
                key,
                f"pipeline `{key}` is not registered{_mean(key, frozenset(model.pipelines))}: the engine raises "
                "KeyError",
                "pipelines",
            )
            return None, ""
        return found, "the deploy file's `pipeline:`"
    for doc in docs:
        if doc.bundled:
            keys = model.pipeline_for_deploy(posixpath.basename(doc.location))
            if len(keys) >= 1:
                chosen = model.pipelines[keys[0]]
                return chosen, f"the bundled default of {', '.join(keys)}"
    return None, ""


def _diffusion_archs(model: EngineModel) -> set[str]:
    return set()


# ---------------------------------------------------------------- the verb


def render_text(report: LintReport) -> str:
    lines = [f.one_line() for f in report.findings]
    counts = report.counts()
    engine = report.engine.get("version") or report.engine.get("revision") or report.engine.get("location", "")
    head = f"lint-deploy: {engine}; pipeline {report.pipeline or 'unknown'}"
    if report.pipeline_from:
        head += f" (from {report.pipeline_from})"
    if report.files:
        head += f"; files {', '.join(report.files)}"
    lines.insert(0, head)
    lines += [f"skipped: {s}" for s in report.skipped]
    lines.append(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['note']} note(s)")
    return "\n".join(lines) + "\n"


def render_json(report: LintReport) -> str:
    data = report.model_dump(mode="json")
    data["counts"] = report.counts()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- engine and citations


def permalinks(report: LintReport, files: Any, base: str) -> LintReport:
    """Each finding's label resolved to a permalink at `base` (…/blob/<sha or tag>), its line span
    found by the anchors code in the engine files the lint read."""
    if not base:
        return report
    from .anchors import AnchorError, locate
    from .labels import LabelError, parse_label

    spans: dict[str, str] = {}
    for label_text in {f.label for f in report.findings if f.label}:
        try:
            label = parse_label(label_text)
            span = locate(label, files.text(label.path), quick=True, text_lines=files.lines(label.path))
        except (LabelError, AnchorError, KeyError, OSError, ValueError):
            continue
        anchor = f"#L{span.start}" if span.start == span.end else f"#L{span.start}-L{span.end}"
        spans[label_text] = f"{base}/{label.path}{anchor}"
    findings = [f.model_copy(update={"url": spans.get(f.label, "")}) for f in report.findings]
    return report.model_copy(update={"findings": findings})


def lint_from_args(args: argparse.Namespace, repository: str, revision: str, root: Path) -> LintReport:
    """Open the engine the options name, read the inputs, lint, resolve the citations."""
    from . import serve_command
    from .deploy_model import build
    from .engine import given as engine_given
    from .engine import open_engine
    from .source import Source

    if not args.file and not args.serve and not args.deploy_config and not args.stage_overrides:
        raise UsageError('give a deploy FILE, --serve "CMD" or --deploy-config FILE')
    if args.file and args.deploy_config:
        raise UsageError("give the deploy file once: FILE or --deploy-config")
    spans: dict[str, list[int]] | None = None
    if getattr(args, "release", None) or not engine_given(args):
        from .factkinds import PIN
        from .lintmodels import ShippedFiles, load

        engine_id = args.release or PIN
        model, spans, pinned = load(root, engine_id)
        files: Any = ShippedFiles()
        describe = {
            "kind": "shipped",
            "location": "evidence/lint-models.json",
            "version": "" if engine_id == PIN else engine_id,
            "revision": pinned if engine_id == PIN else "",
        }
        base = f"{repository}/blob/{pinned if engine_id == PIN else 'v' + engine_id}"
    else:
        engine = open_engine(args, revision)
        files = engine.files
        model = build(engine.files, engine.paths())
        describe = engine.describe()
        if isinstance(engine.files, Source):
            base = f"{repository}/blob/{engine.files.commit}"
        elif engine.version and re.fullmatch(r"\d+\.\d+\.\d+", engine.version):
            base = f"{repository}/blob/v{engine.version}"
        else:
            base = ""
    command = None
    if args.serve:
        command = serve_command.parse(
            args.serve, lambda flag: model.flags[flag].takes_value() if flag in model.flags else None
        )
    deploy = args.file or args.deploy_config
    cwd = args.cwd if args.cwd is not None else Path.cwd()
    if args.file and not Path(args.file).is_absolute() and args.cwd is None:
        cwd = Path.cwd()
    given = LintInput(
        deploy=deploy, command=command, overrides=args.stage_overrides, pipeline=args.pipeline, gpus=args.gpus, cwd=cwd
    )
    version = describe.get("version") or ("pin" if describe.get("kind") in ("shipped", "git") else "")
    report = run_lint(model, given, files, describe, flag_history(root, version))
    if spans is not None:
        return shipped_permalinks(report, spans, base)
    return permalinks(report, files, base)


def flag_history(root: Path, engine_id: str) -> Any:
    """From the shipped facts: for a serve flag this engine lacks, the releases that have it."""
    from .facts import load_facts

    try:
        facts = load_facts(root)
    except ValueError:
        return None
    if facts is None:
        return None
    order = facts.order()
    here = order.index(engine_id) if engine_id in order else None
    lives = {t.name: [e for era in t.eras for e in era.engines] for t in facts.facts if t.kind == "flag"}

    def named(index: int) -> str:
        if order[index] != "pin":
            return order[index]
        later = [e for e in order[index + 1 :] if e != "pin"]
        return "the skill's pinned commit" + (f" (first release after it: {later[0]})" if later else "")

    def history(name: str) -> tuple[str, str] | None:
        present = lives.get(name)
        if not present:
            return None
        last, first = max(order.index(e) for e in present), min(order.index(e) for e in present)
        if here is None or last < here:
            return "flag-removed", f"{name} is not a flag of this engine: it was removed after {named(last)}"
        if first > here:
            return "flag-too-new", f"{name} is not a flag of this engine: it first appears in {named(first)}"
        return None

    return history


def shipped_permalinks(report: LintReport, spans: dict[str, list[int]], base: str) -> LintReport:
    """Each finding's label as a permalink from the spans shipped with the lint model."""
    from .labels import LabelError, parse_label

    def url(label_text: str) -> str:
        span = spans.get(label_text)
        try:
            path = parse_label(label_text).path
        except LabelError:
            return ""
        if not span:
            return f"{base}/{path}"
        return f"{base}/{path}#L{span[0]}" + (f"-L{span[1]}" if span[1] != span[0] else "")

    findings = [f.model_copy(update={"url": url(f.label) if f.label else ""}) for f in report.findings]
    return report.model_copy(update={"findings": findings})
