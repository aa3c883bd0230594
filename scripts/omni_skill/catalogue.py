"""The model catalogue's format (`references/architecture-search/models.yaml`): every
pipeline-registry key and diffusion-registry model at the pinned revision, each fact with its
citation; loading it with line numbers, and looking entries up. The checks that prove it against
the engine are `catalogue_checks`; the reader of engine modules they use is `engine_modules`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .anchors.yaml_keys import LOADER
from .deploy_platforms import PlatformSection
from .errors import UsageError
from .findings import Finding, validation_findings
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


class CitedEntry(_Model):
    source: str = Field(pattern=r"^src:")


class Registration(CitedEntry):
    what: str = Field(min_length=1)


class Registries(_Model):
    pipelines: str = Field(pattern=r"^src:.*\.py::")
    diffusion: str = Field(pattern=r"^src:.*\.py::")
    post_process: str = Field(pattern=r"^src:.*\.py::")
    pre_process: str = Field(pattern=r"^src:.*\.py::")
    ir_op_priority: str = Field(pattern=r"^src:.*\.py::")
    no_cache_acceleration: str = Field(pattern=r"^src:.*\.py::")


class Resolver(CitedEntry):
    returns: list[str] = Field(min_length=1)


class CatalogueStage(_Model):
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


class DeployFile(CitedEntry):
    role: Literal["default", "variant"]
    base_config: str | None = None
    stages: list[DeployStage] = Field(default_factory=list)
    platforms: list[PlatformSection] = Field(default_factory=list)  # deploy_platforms.py


class PipelineConfigEntry(CitedEntry):
    name: str
    model_type: str
    model_arch: str | None = None
    default_deploy_config_name: str | None = None
    hf_architectures: list[str] | None = None
    diffusers_class_name: str | None = None
    stages: list[CatalogueStage] = Field(min_length=1)
    deploy: list[DeployFile] = Field(default_factory=list)


class PipelineEntry(CitedEntry):
    key: str
    value: str = Field(description="the expression the registry maps the key to")
    alias_of: str | None = None
    resolver: Resolver | None = None
    configs: list[PipelineConfigEntry] = Field(default_factory=list)


class Flag(CitedEntry):
    value: bool


class Mapped(CitedEntry):
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
    no_cache_acceleration: CitedEntry | None = None
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
