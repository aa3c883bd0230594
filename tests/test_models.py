"""The model catalogue: format, completeness against the registries, and every value claim."""

from __future__ import annotations

import ast
from pathlib import Path

import git
import pytest

from conftest import check_after_edit, commit_files, make_skill, new_repo
from omni_skill.catalogue import MODELS_PATH, load_models, models_data, select
from omni_skill.catalogue_checks import check_models
from omni_skill.claims import NoDefault, NotRegistry, registry_entry
from omni_skill.cli import main
from omni_skill.errors import UsageError
from omni_skill.source import Source

STAGE_CONFIG = """\
from dataclasses import dataclass, field
from enum import Enum


class StageExecutionType(str, Enum):
    LLM_AR = "llm_ar"
    LLM_GENERATION = "llm_generation"


@dataclass
class StagePipelineConfig:
    stage_id: int
    model_stage: str
    execution_type: StageExecutionType = StageExecutionType.LLM_AR
    final_output: bool = False
    final_output_type: str | None = None
    sampling_constraints: dict = field(default_factory=dict)


@dataclass
class PipelineConfig:
    model_type: str
    stages: tuple = ()
"""

TOKENS = "STOP_ID = 2150\n"

PIPELINE_A = """\
from vllm_omni.config.stage_config import PipelineConfig, StageExecutionType, StagePipelineConfig
from vllm_omni.models.a.tokens import STOP_ID

A_PIPELINE = PipelineConfig(
    model_type="a",
    model_arch="AForCausalLM",
    default_deploy_config_name="a.yaml",
    stages=(
        StagePipelineConfig(stage_id=0, model_stage="thinker", final_output=True, final_output_type="text"),
        StagePipelineConfig(
            stage_id=1,
            model_stage="code2wav",
            execution_type=StageExecutionType.LLM_GENERATION,
            final_output=True,
            final_output_type="audio",
            sampling_constraints={"stop_token_ids": [STOP_ID]},
        ),
    ),
)
"""

PIPELINE_R = """\
from vllm_omni.config.stage_config import PipelineConfig, StagePipelineConfig

R_FULL = PipelineConfig(model_type="r", stages=(StagePipelineConfig(stage_id=0, model_stage="thinker"),))
R_SMALL = PipelineConfig(model_type="r_small", stages=(StagePipelineConfig(stage_id=0, model_stage="thinker"),))


def resolve_r(hf_config):
    if hf_config is None:
        return R_SMALL
    return R_FULL
"""

REGISTRY = """\
from vllm_omni.models.a.pipeline import A_PIPELINE
from vllm_omni.models.r.pipeline import resolve_r

OMNI_PIPELINES = {
    "a": A_PIPELINE,
    "a_alias": A_PIPELINE,
    "r": resolve_r,
}
"""

DEPLOY_A = """\
stages:
  - stage_id: 0
    devices: "0"
    gpu_memory_utilization: 0.8
    max_num_seqs: 64
  - stage_id: 1
    devices: "1"
    num_replicas: 2
platforms:
  npu:
    stages:
      - stage_id: 0
        devices: "0,1"
        tensor_parallel_size: 2
        compilation_config:
          cudagraph_mode: PIECEWISE
  rocm:
    stages:
      - stage_id: 1
        engine_args:
          enforce_eager: true
        runtime:
          num_replicas: 1
          env:
            HIP_FLAG: "1"
"""

DIFFUSION_REGISTRY = """\
_DIFFUSION_MODELS = {
    "FooPipeline": ("foo", "pipeline_foo", "FooPipeline"),
    "BarPipeline": ("foo", "pipeline_bar", "BarPipeline"),
}
_DIFFUSION_POST_PROCESS_FUNCS = {
    "FooPipeline": "get_foo_post_process_func",
}
_DIFFUSION_PRE_PROCESS_FUNCS = {}
_DIFFUSION_IR_OP_PRIORITY_FUNCS = {}
_NO_CACHE_ACCELERATION = {
    "BarPipeline",
}
"""

FOO = """\
from vllm_omni.diffusion.models.base import BatchBase


class FooPipeline(BatchBase):
    pass
"""

BASE = """\
class BatchBase:
    supports_request_batch = True
"""

BAR = """\
from typing import ClassVar

from vllm_omni.diffusion.models.interface import SupportAudioOutput


class BarPipeline(SupportAudioOutput):
    supports_request_batch = False
"""

INTERFACE = """\
from typing import ClassVar


class SupportAudioOutput:
    support_audio_output: ClassVar[bool] = True
"""

ENGINE_FILES = {
    "vllm_omni/config/stage_config.py": STAGE_CONFIG,
    "vllm_omni/config/pipeline_registry.py": REGISTRY,
    "vllm_omni/models/a/pipeline.py": PIPELINE_A,
    "vllm_omni/models/a/tokens.py": TOKENS,
    "vllm_omni/models/r/pipeline.py": PIPELINE_R,
    "vllm_omni/deploy/a.yaml": DEPLOY_A,
    "vllm_omni/diffusion/registry.py": DIFFUSION_REGISTRY,
    "vllm_omni/diffusion/models/base.py": BASE,
    "vllm_omni/diffusion/models/interface.py": INTERFACE,
    "vllm_omni/diffusion/models/foo/pipeline_foo.py": FOO,
    "vllm_omni/diffusion/models/foo/pipeline_bar.py": BAR,
    "vllm_omni/diffusion/diffusion_engine.py": "def supports_request_batch(od_config):\n    return False\n",
    "vllm_omni/diffusion/io_support.py": "def supports_audio_output(name):\n    return False\n",
}

REG = "src:vllm_omni/config/pipeline_registry.py::OMNI_PIPELINES"
DREG = "src:vllm_omni/diffusion/registry.py"

CATALOGUE = f"""\
version: 1
registries:
  pipelines: {REG}
  diffusion: {DREG}::_DIFFUSION_MODELS
  post_process: {DREG}::_DIFFUSION_POST_PROCESS_FUNCS
  pre_process: {DREG}::_DIFFUSION_PRE_PROCESS_FUNCS
  ir_op_priority: {DREG}::_DIFFUSION_IR_OP_PRIORITY_FUNCS
  no_cache_acceleration: {DREG}::_NO_CACHE_ACCELERATION
pipelines:
  - key: a
    source: {REG}
    value: A_PIPELINE
    configs:
      - name: A_PIPELINE
        source: src:vllm_omni/models/a/pipeline.py::A_PIPELINE
        model_type: a
        model_arch: AForCausalLM
        default_deploy_config_name: a.yaml
        stages:
          - {{stage_id: 0, model_stage: thinker, execution_type: LLM_AR, final_output: true, final_output_type: text}}
          - {{stage_id: 1, model_stage: code2wav, execution_type: LLM_GENERATION, final_output: true, final_output_type: audio, sampling_constraints: {{stop_token_ids: [2150]}}}}
        deploy:
          - source: src:vllm_omni/deploy/a.yaml
            role: default
            stages:
              - {{stage_id: 0, devices: "0", gpu_memory_utilization: 0.8, max_num_seqs: 64}}
              - {{stage_id: 1, devices: "1", num_replicas: 2}}
            platforms:
              - platform: npu
                stages:
                  - {{stage_id: 0, devices: "0,1", settings: {{tensor_parallel_size: 2, compilation_config.cudagraph_mode: PIECEWISE}}}}
              - platform: rocm
                stages:
                  - {{stage_id: 1, num_replicas: 1, settings: {{enforce_eager: true, env.HIP_FLAG: "1"}}}}
  - key: a_alias
    source: {REG}
    value: A_PIPELINE
    alias_of: a
  - key: r
    source: {REG}
    value: resolve_r
    resolver: {{source: "src:vllm_omni/models/r/pipeline.py::resolve_r", returns: [R_SMALL, R_FULL]}}
    configs:
      - name: R_SMALL
        source: src:vllm_omni/models/r/pipeline.py::R_SMALL
        model_type: r_small
        stages:
          - {{stage_id: 0, model_stage: thinker, execution_type: LLM_AR, final_output: false}}
      - name: R_FULL
        source: src:vllm_omni/models/r/pipeline.py::R_FULL
        model_type: r
        stages:
          - {{stage_id: 0, model_stage: thinker, execution_type: LLM_AR, final_output: false}}
diffusion:
  - arch: FooPipeline
    source: {DREG}::_DIFFUSION_MODELS
    value: [foo, pipeline_foo, FooPipeline]
    class: src:vllm_omni/diffusion/models/foo/pipeline_foo.py::FooPipeline
    request_batch: {{value: true, source: "src:vllm_omni/diffusion/models/base.py::BatchBase.supports_request_batch"}}
    audio_output: {{value: false, source: "src:vllm_omni/diffusion/io_support.py::supports_audio_output"}}
    post_process: {{value: get_foo_post_process_func, source: "{DREG}::_DIFFUSION_POST_PROCESS_FUNCS"}}
  - arch: BarPipeline
    source: {DREG}::_DIFFUSION_MODELS
    value: [foo, pipeline_bar, BarPipeline]
    class: src:vllm_omni/diffusion/models/foo/pipeline_bar.py::BarPipeline
    request_batch: {{value: false, source: "src:vllm_omni/diffusion/models/foo/pipeline_bar.py::BarPipeline.supports_request_batch"}}
    audio_output: {{value: true, source: "src:vllm_omni/diffusion/models/interface.py::SupportAudioOutput.support_audio_output"}}
    no_cache_acceleration: {{source: "{DREG}::_NO_CACHE_ACCELERATION"}}
"""


@pytest.fixture
def model_engine(tmp_path: Path) -> tuple[git.Repo, Source]:
    repo = new_repo(tmp_path / "engine")
    sha = commit_files(repo, ENGINE_FILES, "registries")
    return repo, Source(tmp_path / "engine", sha)


def catalogue_skill(tmp_path: Path, text: str = CATALOGUE) -> Path:
    return make_skill(tmp_path / "skill", "# Branch\n\nRead this when: testing.\n", {MODELS_PATH: text})


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_complete_catalogue_passes(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    root = catalogue_skill(tmp_path)
    assert check_models(root, model_engine[1]) == []


def test_a_key_without_entry_is_a_finding(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    start = CATALOGUE.index("  - key: a_alias")
    text = CATALOGUE[:start] + CATALOGUE[CATALOGUE.index("  - key: r\n") :]
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert [(f.kind, f.label) for f in findings] == [("models-missing", REG)]
    assert "'a_alias'" in findings[0].message


def test_a_key_added_to_the_engine_is_a_finding(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    repo, _ = model_engine
    registry = REGISTRY.replace('    "r": resolve_r,\n', '    "r": resolve_r,\n    "new": A_PIPELINE,\n')
    sha = commit_files(repo, {"vllm_omni/config/pipeline_registry.py": registry}, "a new key")
    findings = check_models(catalogue_skill(tmp_path), Source(Path(repo.working_tree_dir), sha))
    assert any(f.kind == "models-missing" and "'new'" in f.message for f in findings)


def test_an_entry_without_key_is_a_finding(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    extra = f"  - key: ghost\n    source: {REG}\n    value: A_PIPELINE\n    alias_of: a\n"
    text = CATALOGUE.replace("diffusion:\n  - arch", extra + "diffusion:\n  - arch", 1)
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    extras = [f for f in findings if f.kind == "models-extra"]
    assert len(extras) == 1 and "'ghost'" in extras[0].message
    assert extras[0].line == line_of(text, "key: ghost")


def test_a_diffusion_registry_key_without_entry_is_a_finding(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace('    no_cache_acceleration: {source: "' + DREG + '::_NO_CACHE_ACCELERATION"}\n', "")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert [f.kind for f in findings] == ["models-missing"]
    assert "'BarPipeline'" in findings[0].message and "_NO_CACHE_ACCELERATION" in findings[0].label


def test_a_wrong_deploy_value_is_a_finding_with_its_line(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    text = CATALOGUE.replace("gpu_memory_utilization: 0.8", "gpu_memory_utilization: 0.7")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert len(findings) == 1
    finding = findings[0]
    assert finding.kind == "models-mismatch"
    assert finding.location() == f"{MODELS_PATH}:{line_of(text, 'gpu_memory_utilization: 0.7')}"
    assert "stages[0].gpu_memory_utilization" in finding.message and "0.8" in finding.message


def test_a_wrong_stage_value_is_a_finding(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    text = CATALOGUE.replace("stop_token_ids: [2150]", "stop_token_ids: [2151]")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert [f.kind for f in findings] == ["models-mismatch"]
    assert "sampling_constraints" in findings[0].message  # the imported STOP_ID constant was inlined
    assert findings[0].line == line_of(text, "[2151]")


def test_a_stage_field_left_to_its_default_is_compared_with_the_default(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace(
        "model_stage: thinker, execution_type: LLM_AR, final_output: true",
        "model_stage: thinker, execution_type: LLM_GENERATION, final_output: true",
    )
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert len(findings) == 1 and "execution_type" in findings[0].message and "'LLM_AR'" in findings[0].message


def test_a_dict_entry_claim_that_matches_holds(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    node = ast.parse(DIFFUSION_REGISTRY).body[0]
    entry = registry_entry(node, "FooPipeline")
    assert entry.value == ("foo", "pipeline_foo", "FooPipeline") and entry.line == 2
    assert registry_entry(ast.parse(REGISTRY).body[2], "a").value == "A_PIPELINE"  # a name compares as its text
    with pytest.raises(NoDefault):
        registry_entry(node, "Missing")
    with pytest.raises(NotRegistry):
        registry_entry(ast.parse("X = make()\n").body[0], "k")


def test_a_dict_entry_claim_that_does_not_match_is_a_finding(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace("value: [foo, pipeline_bar, BarPipeline]", "value: [foo, pipeline_baz, BarPipeline]")
    text = text.replace("value: get_foo_post_process_func", "value: get_bar_post_process_func")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    messages = {f.line: f.message for f in findings if f.kind == "models-mismatch"}
    assert line_of(text, "pipeline_baz") in messages
    assert "_DIFFUSION_MODELS ['BarPipeline']" in messages[line_of(text, "pipeline_baz")]
    assert line_of(text, "get_bar_post_process_func") in messages


def test_an_inherited_class_flag_must_cite_the_class_that_sets_it(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace(
        "src:vllm_omni/diffusion/models/base.py::BatchBase.supports_request_batch",
        "src:vllm_omni/diffusion/diffusion_engine.py::supports_request_batch",
    ).replace("request_batch: {value: true", "request_batch: {value: false")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert {f.kind for f in findings} == {"models-mismatch"} and len(findings) == 2
    assert any("BatchBase.supports_request_batch" in f.message for f in findings)


def test_resolver_returns_and_alias_are_verified(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    text = CATALOGUE.replace("returns: [R_SMALL, R_FULL]", "returns: [R_FULL]").replace("    alias_of: a\n", "")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    messages = " | ".join(f.message for f in findings)
    assert "resolve_r returns" in messages and "mark one alias_of" in messages


def test_the_format_forbids_unknown_keys(tmp_path: Path) -> None:
    root = catalogue_skill(tmp_path, CATALOGUE.replace("    alias_of: a\n", "    alias_of: a\n    colour: red\n"))
    catalogue, findings = load_models(root)
    assert catalogue is None and findings[0].kind == "models-invalid" and "colour" in findings[0].message


def test_select_and_models_data(tmp_path: Path) -> None:
    root = catalogue_skill(tmp_path)
    catalogue, findings = load_models(root)
    assert catalogue is not None and findings == []
    entry = select(catalogue, "foopipeline")
    assert entry is not None and getattr(entry, "arch", "") == "FooPipeline"
    assert models_data(root, "a")["pipelines"][0]["configs"][0]["deploy"][0]["stages"][1]["num_replicas"] == 2
    assert models_data(root, "BarPipeline")["diffusion"][0]["class"].endswith("::BarPipeline")
    assert len(models_data(root, None)["pipelines"]) == 3
    with pytest.raises(UsageError, match="did you mean"):
        models_data(root, "a_alis")


def test_check_validates_the_catalogue_format_without_the_engine(tmp_path: Path, capsys) -> None:
    root = catalogue_skill(tmp_path, CATALOGUE.replace("    alias_of: a\n", "    alias_of: a\n    colour: red\n"))
    assert main(["check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert out.count("models-invalid") == 1 and "colour" in out


def test_with_the_engine_the_format_is_reported_once(tmp_path: Path, model_engine, capsys) -> None:
    root, path = catalogue_skill(tmp_path), Path(model_engine[0].working_dir)
    edit = ("    alias_of: a\n", "    alias_of: a\n    colour: red\n")
    code, out = check_after_edit(root, path, model_engine[1].commit, MODELS_PATH, *edit, capsys)
    assert code == 1 and out.count("models-invalid") == 1 and "colour" in out


# ---------------------------------------------------------------- per-platform sections of deploy files


def test_platform_sections_are_read_in_one_form_from_flat_and_nested_entries() -> None:
    import yaml

    from omni_skill.deploy_platforms import platform_sections

    assert platform_sections(yaml.safe_load(DEPLOY_A)) == [
        {
            "platform": "npu",
            "stages": [
                {
                    "stage_id": 0,
                    "devices": "0,1",
                    "settings": {"tensor_parallel_size": 2, "compilation_config.cudagraph_mode": "PIECEWISE"},
                }
            ],
        },
        {
            "platform": "rocm",
            "stages": [{"stage_id": 1, "num_replicas": 1, "settings": {"enforce_eager": True, "env.HIP_FLAG": "1"}}],
        },
    ]


def test_an_empty_platforms_mapping_has_no_sections() -> None:
    from omni_skill.deploy_platforms import platform_sections

    assert platform_sections({"stages": [], "platforms": {}}) == []


def test_a_platform_section_the_catalogue_leaves_out_is_a_finding(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    start = CATALOGUE.index("              - platform: rocm")
    end = CATALOGUE.index("  - key: a_alias")
    text = CATALOGUE[:start] + CATALOGUE[end:]
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert [(f.kind, f.label) for f in findings] == [("models-missing", "src:vllm_omni/deploy/a.yaml")]
    assert "'rocm'" in findings[0].message


def test_a_wrong_platform_setting_is_a_finding_with_its_line(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace("compilation_config.cudagraph_mode: PIECEWISE", "compilation_config.cudagraph_mode: FULL")
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert [f.kind for f in findings] == ["models-mismatch"]
    assert "platforms.npu stage_id 0 compilation_config.cudagraph_mode" in findings[0].message
    assert "'PIECEWISE'" in findings[0].message
    assert findings[0].line == line_of(text, "cudagraph_mode: FULL")


def test_wrong_platform_devices_and_an_unlisted_setting_are_findings(
    tmp_path: Path, model_engine: tuple[git.Repo, Source]
) -> None:
    text = CATALOGUE.replace('devices: "0,1", settings: {tensor_parallel_size: 2, ', 'devices: "0", settings: {')
    findings = check_models(catalogue_skill(tmp_path, text), model_engine[1])
    assert sorted((f.kind, f.message.split(": ", 1)[1]) for f in findings) == [
        ("models-mismatch", "platforms.npu stage_id 0 devices: the catalogue says '0', the file '0,1'"),
        ("models-missing", "platforms.npu stage_id 0: tensor_parallel_size is set and not listed"),
    ]


def test_a_platform_the_file_does_not_have_is_a_finding(tmp_path: Path, model_engine: tuple[git.Repo, Source]) -> None:
    text = CATALOGUE.replace("              - platform: rocm", "              - platform: xpu")
    kinds = sorted(f.kind for f in check_models(catalogue_skill(tmp_path, text), model_engine[1]))
    assert kinds == ["models-extra", "models-missing"]


def test_models_prints_the_platform_sections(tmp_path: Path) -> None:
    deploy = models_data(catalogue_skill(tmp_path), "a")["pipelines"][0]["configs"][0]["deploy"][0]
    assert [p["platform"] for p in deploy["platforms"]] == ["npu", "rocm"]
    assert deploy["platforms"][0]["stages"][0]["devices"] == "0,1"
