"""lint-deploy: each rule with a configuration that trips it and a near miss that does not.

The engine is a small fixture tree written here (its own names, shaped as the real engine's
modules are): the lint reads everything it compares with from it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from omni_skill.cli import main
from omni_skill.deploy_model import build
from omni_skill.errors import UsageError
from omni_skill.lint_deploy import LintInput, LintReport, run_lint
from omni_skill.serve_command import parse
from omni_skill.trees import folder_tree

ENGINE = {
    "vllm_omni/__init__.py": "",
    "vllm_omni/config/stage_config.py": """
        import re
        from dataclasses import dataclass, field
        from enum import Enum
        from typing import Any

        _STAGE_OVERRIDE_PATTERN = re.compile(r"^stage_(\\d+)_(.+)$")


        def build_stage_runtime_overrides(stage_id, cli_overrides):
            return {}


        class StageExecutionType(str, Enum):
            LLM_AR = "llm_ar"
            DIFFUSION = "diffusion"


        @dataclass(frozen=True)
        class StagePipelineConfig:
            stage_id: int
            model_stage: str
            execution_type: StageExecutionType = StageExecutionType.LLM_AR
            input_sources: tuple[int, ...] = ()
            final_output: bool = False
            async_chunk_process_next_stage_input_func: str | None = None


        @dataclass(frozen=True)
        class PipelineConfig:
            model_type: str
            stages: tuple[StagePipelineConfig, ...] = ()
            default_deploy_config_name: str | None = None


        @dataclass
        class StageDeployConfig:
            # === wrapper ===
            stage_id: int
            devices: str | None = None
            num_replicas: int = 1
            env: dict[str, Any] | None = None
            output_connectors: dict[str, str] | None = None
            input_connectors: dict[str, str] | None = None
            # === Generic stage engine fields ===
            tensor_parallel_size: int | None = None
            gpu_memory_utilization: float | None = None
            max_num_seqs: int | None = None
            enforce_eager: bool | None = None
            # === Diffusion stage runtime fields ===
            ulysses_degree: int | None = None
            cache_backend: str | None = None
            # === Pass-through stage engine fields ===
            engine_extras: dict[str, Any] = field(default_factory=dict)


        @dataclass
        class DeployConfig:
            async_chunk: bool = True
            connectors: dict[str, Any] | None = None
            stages: list[StageDeployConfig] = field(default_factory=list)
            platforms: dict[str, Any] | None = None
            pipeline: str | None = None
            trust_remote_code: bool | None = None


        _STAGE_RESERVED_KEYS = frozenset({"stage_id", "devices", "num_replicas", "env", "output_connectors",
                                          "input_connectors", "engine_extras", "engine_args", "runtime"})
        _DEEP_MERGE_KEYS = frozenset({"engine_extras"})
        _PIPELINE_WIDE_ENGINE_FIELDS = ("trust_remote_code",)


        def _parse_stage_deploy(stage_data):
            return stage_data["stage_id"]


        def resolve_deploy_yaml(path):
            raw_dict = {}
            base = raw_dict.pop("base_config", None)
            return raw_dict


        def load_deploy_config(path):
            raw_dict = resolve_deploy_yaml(path)
            if "stage_args" in raw_dict:
                raise ValueError("removed")
            kwargs = {
                "async_chunk": raw_dict.get("async_chunk", True),
                "connectors": raw_dict.get("connectors"),
                "stages": raw_dict.get("stages", []),
                "platforms": raw_dict.get("platforms"),
                "pipeline": raw_dict.get("pipeline"),
            }
            for name in ("trust_remote_code",):
                if name in raw_dict:
                    kwargs[name] = raw_dict[name]
            return kwargs


        def _apply_platform_overrides(deploy, platform=None):
            return deploy


        def _build_engine_args(ps, ds, pipeline, deploy):
            engine_args = {}
            if ds is not None:
                engine_args.update(ds.engine_extras)
            engine_args["async_chunk"] = bool(deploy.async_chunk)
            return engine_args


        def merge_pipeline_deploy(pipeline, deploy, cli_overrides=None):
            return []


        @dataclass
        class StageConfig:
            stage_id: int

            def to_omegaconf(self):
                return {}
    """,
    "vllm_omni/config/pipeline_registry.py": """
        from vllm_omni.models.demo.pipeline import CHAT, CHUNKY, IMAGE

        OMNI_PIPELINES = {"chat": CHAT, "chunky": CHUNKY, "image": IMAGE}
    """,
    "vllm_omni/models/demo/pipeline.py": """
        from vllm_omni.config.stage_config import PipelineConfig, StageExecutionType, StagePipelineConfig

        CHAT = PipelineConfig(
            model_type="chat",
            default_deploy_config_name="chat.yaml",
            stages=(
                StagePipelineConfig(stage_id=0, model_stage="thinker"),
                StagePipelineConfig(stage_id=1, model_stage="talker", input_sources=(0,)),
            ),
        )
        CHUNKY = PipelineConfig(
            model_type="chunky",
            stages=(
                StagePipelineConfig(stage_id=0, model_stage="a", async_chunk_process_next_stage_input_func="m.f"),
                StagePipelineConfig(stage_id=1, model_stage="b", input_sources=(0,)),
            ),
        )
        IMAGE = PipelineConfig(
            model_type="image",
            stages=(
                StagePipelineConfig(stage_id=0, model_stage="ar"),
                StagePipelineConfig(
                    stage_id=1, model_stage="dit", execution_type=StageExecutionType.DIFFUSION, input_sources=(0,)
                ),
            ),
        )
    """,
    "vllm_omni/config/config_factory.py": """
        class StageConfigFactory:
            @classmethod
            def _create_legacy_from_registry(cls, pipeline_cfg, cli_overrides):
                return []

            @staticmethod
            def _load_user_deploy_config(path):
                return None
    """,
    "vllm_omni/engine/arg_utils.py": """
        from dataclasses import dataclass


        @dataclass
        class OmniEngineArgs:
            stage_id: int = 0
            async_chunk: bool = False
            max_model_len: int | None = None


        @dataclass(frozen=True)
        class OrchestratorArgs:
            deploy_config: str | None = None
            stage_overrides: str | None = None
            ulysses_degree: int | None = None


        SHARED_FIELDS = frozenset({"model", "stage_id"})
    """,
    "vllm_omni/engine/async_omni_engine.py": """
        class AsyncOmniEngine:
            def _resolve_stage_configs(self, kwargs):
                for legacy_arg in ("stage_configs_path",):
                    if legacy_arg in kwargs:
                        raise ValueError(f"`{legacy_arg}` is no longer supported; use `deploy_config` instead.")
    """,
    "vllm_omni/entrypoints/cli/main.py": """
        import sys


        def main():
            if "--omni" not in sys.argv:
                return 0
            return 1
    """,
    "vllm_omni/entrypoints/cli/serve.py": """
        import argparse


        class OmniServeCommand:
            def validate(self, args):
                prohibited_with_omni = {"data_parallel_size": "--data-parallel-size"}
                return prohibited_with_omni

            def subparser_init(self, parser):
                parser.add_argument("--omni", action="store_true")
                parser.add_argument("--deploy-config", type=str, default=None)
                parser.add_argument("--stage-overrides", type=str, default=None)
                parser.add_argument("--async-chunk", action=argparse.BooleanOptionalAction, default=None)
                parser.add_argument("--replica-id", type=int, help="Deprecated and ignored: ids are assigned.")
                parser.add_argument("--worker-backend", choices=["multi_process", "ray"], default="multi_process")
                parser.add_argument("--usp", "--ulysses-degree", dest="ulysses_degree", type=int)
    """,
    "vllm_omni/entrypoints/utils.py": """
        def parse_stage_overrides(value):
            return value


        def load_stage_configs_from_model(model, stage_overrides=None):
            return []
    """,
    "vllm_omni/entrypoints/stage_utils.py": """
        def _map_device_list(stage_id, device_list, visible_device_list):
            return device_list
    """,
    "vllm_omni/engine/stage_init_utils.py": """
        def split_devices_for_replicas(devices_str, num_replicas, tp_size, stage_id):
            return [devices_str]


        def initialize_diffusion_stage(stage_id, od_config, batch_size: int = 1):
            od_config.max_num_seqs = batch_size
            return od_config
    """,
    "vllm_omni/diffusion/data.py": """
        from dataclasses import dataclass, fields


        def normalize_omni_diffusion_kwargs(kwargs):
            normalized = dict(kwargs)
            normalized.pop("static_lora_scale", None)
            return normalized


        @dataclass
        class DiffusionParallelConfig:
            tensor_parallel_size: int = 1
            ulysses_degree: int = 1
            ring_degree: int = 1

            def __post_init__(self):
                self.world_size = self.tensor_parallel_size * self.ulysses_degree * self.ring_degree


        @dataclass
        class OmniDiffusionConfig:
            parallel_config: DiffusionParallelConfig = None
            cache_backend: str = "none"
            gpu_memory_utilization: float = 0.9
            max_num_seqs: int = 1

            @classmethod
            def from_kwargs(cls, **kwargs):
                valid = {f.name for f in fields(cls)}
                return cls(**{k: v for k, v in kwargs.items() if k in valid})
    """,
    "vllm_omni/distributed/omni_connectors/factory.py": """
        class OmniConnectorFactory:
            @classmethod
            def register_connector(cls, name, constructor):
                pass

            @classmethod
            def create_connector(cls, spec):
                pass


        OmniConnectorFactory.register_connector("SharedMemoryConnector", None)
        OmniConnectorFactory.register_connector("MooncakeConnector", None)
    """,
    "vllm_omni/distributed/omni_connectors/utils/initialization.py": """
        def load_omni_transfer_config(config):
            return config
    """,
    "vllm_omni/platforms/cuda/platform.py": "",
    "vllm_omni/platforms/npu/platform.py": "",
    "vllm_omni/deploy/chat.yaml": """
        async_chunk: false
        stages:
          - stage_id: 0
            devices: "0"
            gpu_memory_utilization: 0.5
          - stage_id: 1
            devices: "1"
            gpu_memory_utilization: 0.5
    """,
}

CLEAN = """
pipeline: chat
async_chunk: false
stages:
  - stage_id: 0
    devices: "0"
    gpu_memory_utilization: 0.5
  - stage_id: 1
    devices: "0"
    gpu_memory_utilization: 0.4
"""


@pytest.fixture
def engine_dir(tmp_path: Path) -> Path:
    root = tmp_path / "engine"
    for rel, text in ENGINE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def lint(engine_dir: Path, tmp_path: Path):
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())

    def run(deploy: str | None = None, serve: str | None = None, **kw) -> LintReport:
        cwd = tmp_path / "work"
        cwd.mkdir(exist_ok=True)
        ref = None
        if deploy is not None:
            (cwd / "deploy.yaml").write_text(textwrap.dedent(deploy), encoding="utf-8")
            ref = "deploy.yaml"
        command = None
        if serve is not None:
            command = parse(serve, lambda f: model.flags[f].takes_value() if f in model.flags else None)
        given = LintInput(deploy=kw.pop("ref", ref), command=command, cwd=cwd, **kw)
        return run_lint(model, given, tree, {"kind": "folder"})

    return run


def rules(report: LintReport, severity: str | None = None) -> set[str]:
    return {f.rule for f in report.findings if severity is None or f.severity == severity}


def test_clean_file_has_no_errors_or_warnings(lint):
    report = lint(CLEAN, gpus=2)
    assert not report.failed(), [f.one_line() for f in report.findings]
    assert report.pipeline == "chat"


# --- flags


def test_missing_omni_flag(lint):
    assert "omni-missing" in rules(lint(serve="vllm serve m"))
    assert "omni-missing" not in rules(lint(serve="vllm serve m --omni"))


def test_removed_flag_names_replacement(lint):
    report = lint(serve="vllm serve m --omni --stage-configs-path x.yaml")
    found = [f for f in report.findings if f.rule == "flag-removed"]
    assert found and "--deploy-config" in found[0].message
    assert "flag-removed" not in rules(lint(serve="vllm serve m --omni --deploy-config deploy.yaml", deploy=CLEAN))


def test_flag_rejected_under_omni(lint):
    assert "flag-rejected" in rules(lint(serve="vllm serve m --omni --data-parallel-size 2"))
    assert "flag-rejected" not in rules(lint(serve="vllm serve m --data-parallel-size 2"))


def test_misspelt_flag_did_you_mean(lint):
    report = lint(serve="vllm serve m --omni --deploy-confg x")
    found = [f for f in report.findings if f.rule == "flag-unknown"]
    assert found and "--deploy-config" in found[0].message


def test_unrelated_vllm_flag_is_only_a_note(lint):
    report = lint(serve="vllm serve m --omni --port 8091")
    assert not report.failed()
    assert "flag-unchecked" in rules(report, "note")


def test_deprecated_flag_warns(lint):
    assert "flag-ignored" in rules(lint(serve="vllm serve m --omni --replica-id 1"))
    assert "flag-ignored" not in rules(lint(serve="vllm serve m --omni --worker-backend ray"))


def test_flag_choice_outside_choices(lint):
    assert "flag-choice" in rules(lint(serve="vllm serve m --omni --worker-backend threads"))


def test_command_parsing_continuations_and_env(lint):
    command = parse(
        "CUDA_VISIBLE_DEVICES=2,3 vllm serve m \\\n  --omni \\\n  --deploy-config d.yaml | tee log",
        lambda f: None if f != "--omni" else False,
    )
    assert command.env == {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert command.model == "m"
    assert [f.flag for f in command.flags] == ["--omni", "--deploy-config"]


def test_command_that_is_not_serve_is_bad_input(lint):
    with pytest.raises(UsageError):
        lint(serve="python run.py --omni")


# --- schema and keys


def test_stage_args_layout_removed(lint):
    report = lint("stage_args:\n  - stage_id: 0\n")
    assert "schema-removed" in rules(report, "error")


def test_misspelt_stage_key_did_you_mean(lint):
    report = lint(CLEAN.replace("gpu_memory_utilization: 0.4", "gpu_memory_utilisation: 0.4"), gpus=2)
    found = [f for f in report.findings if f.rule == "key-unknown"]
    assert found and "gpu_memory_utilization" in found[0].message and found[0].line == 10


def test_stage_key_at_top_level(lint):
    assert "key-stage-only" in rules(lint("pipeline: chat\nasync_chunk: false\nmax_num_seqs: 4\n"))
    assert "key-stage-only" not in rules(lint("pipeline: chat\nasync_chunk: false\ntrust_remote_code: true\n"))


def test_top_level_key_given_per_stage(lint):
    report = lint(CLEAN.replace("  - stage_id: 1\n", "  - stage_id: 1\n    connectors: {}\n"), gpus=2)
    assert "key-top-only" in rules(report)


def test_per_stage_value_overwritten_by_pipeline_wide(lint):
    report = lint(CLEAN.replace("  - stage_id: 1\n", "  - stage_id: 1\n    async_chunk: true\n"), gpus=2)
    assert "key-overwritten" in rules(report)


def test_string_boolean(lint):
    report = lint(CLEAN.replace("async_chunk: false", 'async_chunk: "false"'), gpus=2)
    assert "string-bool" in rules(report, "error")
    assert "string-bool" not in rules(lint(CLEAN, gpus=2))


def test_value_of_wrong_type(lint):
    report = lint(CLEAN.replace("gpu_memory_utilization: 0.4", "gpu_memory_utilization: [0.4]"), gpus=2)
    assert "value-type" in rules(report)


def test_topology_key_in_deploy(lint):
    assert "key-topology" in rules(
        lint(CLEAN.replace("  - stage_id: 1\n", "  - stage_id: 1\n    final_output: true\n"))
    )


def test_not_a_deploy_file(lint):
    assert "not-deploy" in rules(lint("aligner:\n  model: x\n"))


# --- stages and overrides


def test_stage_id_not_in_pipeline(lint):
    report = lint(CLEAN + "  - stage_id: 7\n    devices: '0'\n", gpus=2)
    assert "stage-id" in rules(report)
    assert "stage-id" not in rules(lint(CLEAN, gpus=2))


def test_pipeline_unknown_in_deploy(lint):
    assert "pipeline-unknown" in rules(lint(CLEAN.replace("pipeline: chat", "pipeline: chta")))


def test_pipeline_not_inferred_says_what_is_skipped(lint):
    report = lint(CLEAN.replace("pipeline: chat\n", ""))
    assert report.pipeline is None
    assert any("give --pipeline" in s for s in report.skipped)


def test_overrides_keyed_by_name(lint):
    report = lint(CLEAN, overrides='{"thinker": {"max_num_seqs": 2}}', gpus=2)
    assert "overrides-key" in rules(report, "error")
    assert "overrides-key" not in rules(lint(CLEAN, overrides='{"0": {"max_num_seqs": 2}}', gpus=2))


def test_overrides_value_of_wrong_shape(lint):
    assert "overrides-shape" in rules(lint(CLEAN, overrides='{"0": 2}', gpus=2))
    assert "overrides-json" in rules(lint(CLEAN, overrides="{0: }", gpus=2))


def test_override_for_a_stage_the_pipeline_lacks(lint):
    assert "override-stage" in rules(lint(CLEAN, overrides='{"5": {"max_num_seqs": 2}}', gpus=2))


# --- devices, memory, parallel sizes


def test_device_outside_visible_set(lint):
    report = lint(
        CLEAN.replace('devices: "0"\n    gpu_memory_utilization: 0.4', 'devices: "2"\n    gpu_memory_utilization: 0.4'),
        gpus=2,
    )
    assert "devices-visible" in rules(report, "error")


def test_visible_count_from_cuda_visible_devices(lint):
    deploy = CLEAN.replace(
        'devices: "0"\n    gpu_memory_utilization: 0.4', 'devices: "1"\n    gpu_memory_utilization: 0.4'
    )
    report = lint(deploy, serve="CUDA_VISIBLE_DEVICES=3 vllm serve m --omni --deploy-config deploy.yaml")
    assert "devices-visible" in rules(report)
    report = lint(deploy, serve="CUDA_VISIBLE_DEVICES=3,4 vllm serve m --omni --deploy-config deploy.yaml")
    assert "devices-visible" not in rules(report)


def test_memory_fractions_over_one(lint):
    report = lint(CLEAN.replace("gpu_memory_utilization: 0.4", "gpu_memory_utilization: 0.6"), gpus=2)
    found = [f for f in report.findings if f.rule == "memory-sum"]
    assert found and "1.10" in found[0].message


def test_memory_counts_every_replica(lint):
    deploy = CLEAN.replace(
        '  - stage_id: 1\n    devices: "0"\n    gpu_memory_utilization: 0.4',
        '  - stage_id: 1\n    devices: "0,1"\n    num_replicas: 2\n    gpu_memory_utilization: 0.4',
    )
    report = lint(deploy, gpus=2)
    assert not rules(report, "error")  # 0.5 + 0.4 on device 0, 0.4 on device 1
    report = lint(deploy.replace("gpu_memory_utilization: 0.5", "gpu_memory_utilization: 0.7"), gpus=2)
    assert "memory-sum" in rules(report)


def test_replicas_that_cannot_be_placed(lint):
    deploy = CLEAN.replace(
        '  - stage_id: 1\n    devices: "0"', '  - stage_id: 1\n    devices: "0,1,2"\n    num_replicas: 2'
    )
    assert "replicas" in rules(lint(deploy))


def test_tensor_parallel_larger_than_devices(lint):
    deploy = CLEAN.replace("  - stage_id: 1\n", "  - stage_id: 1\n    tensor_parallel_size: 2\n")
    assert "parallel-fit" in rules(lint(deploy), "error")
    assert "parallel-fit" not in rules(
        lint(
            deploy.replace(
                'devices: "0"\n    gpu_memory_utilization: 0.4', 'devices: "0,1"\n    gpu_memory_utilization: 0.4'
            )
        ),
        "error",
    )


def test_diffusion_parallel_degrees_against_devices(lint):
    deploy = """
    pipeline: image
    async_chunk: false
    stages:
      - stage_id: 1
        devices: "0"
        parallel_config: {ulysses_degree: 2}
    """
    assert "parallel-fit" in rules(lint(deploy))
    assert "parallel-fit" not in rules(lint(deploy.replace('devices: "0"', 'devices: "0,1"')))


def test_global_flag_replaces_per_stage_values(lint):
    report = lint(CLEAN, serve="vllm serve m --omni --deploy-config deploy.yaml --gpu-memory-utilization 0.6", gpus=2)
    assert "flag-global" in rules(report, "warning")
    assert "memory-sum" in rules(report)  # 0.6 reaches both stages on device 0


def test_global_flag_reaching_a_diffusion_stage(lint):
    deploy = "pipeline: image\nasync_chunk: false\n"
    report = lint(deploy, serve="vllm serve m --omni --deploy-config deploy.yaml --max-model-len 4096")
    assert "flag-global" in rules(report, "warning")


# --- streaming, connectors, overlays, stage types


def test_async_chunk_without_producer(lint):
    assert "async-chunk" in rules(lint("pipeline: chat\nstages: []\n"), "error")  # the DeployConfig default is on
    assert "async-chunk" not in rules(lint("pipeline: chunky\nstages: []\n"))


def test_async_chunk_flag_overrides_the_file(lint):
    report = lint(
        "pipeline: chat\nasync_chunk: false\n", serve="vllm serve m --omni --deploy-config deploy.yaml --async-chunk"
    )
    assert "async-chunk" in rules(report)


def test_unknown_connector_name(lint):
    deploy = CLEAN + "connectors:\n  c1:\n    name: MooncakeConector\n"
    found = [f for f in lint(deploy, gpus=2).findings if f.rule == "connector-unknown"]
    assert found and "MooncakeConnector" in found[0].message


def test_undefined_connector_reference(lint):
    deploy = CLEAN.replace("  - stage_id: 1\n", "  - stage_id: 1\n    input_connectors: {from_stage_0: shm}\n")
    assert "connector-undefined" in rules(lint(deploy + "connectors:\n  shm2: {name: SharedMemoryConnector}\n"))
    assert "connector-undefined" not in rules(lint(deploy + "connectors:\n  shm: {name: SharedMemoryConnector}\n"))


def test_overlay_without_base_drops_bundled_defaults(lint):
    report = lint("pipeline: chat\nasync_chunk: false\nstages:\n  - stage_id: 0\n    devices: '0'\n", gpus=2)
    found = [f for f in report.findings if f.rule == "overlay-no-base"]
    assert found and "stage 1" in found[0].message and "gpu_memory_utilization" in found[0].message
    assert "overlay-no-base" not in rules(lint(CLEAN, gpus=2))  # sets everything the bundled file sets


def test_overlay_with_base_merges_the_bundled_file(lint, engine_dir, tmp_path):
    base = engine_dir / "vllm_omni/deploy/chat.yaml"
    deploy = f"base_config: {base}\nstages:\n  - stage_id: 1\n    gpu_memory_utilization: 0.6\n"
    report = lint(deploy, pipeline="chat", gpus=2)
    assert "overlay-no-base" not in rules(report)
    assert report.files[1].endswith("chat.yaml")


def test_diffusion_batching_knob_without_effect(lint):
    deploy = "pipeline: image\nasync_chunk: false\nstages:\n  - stage_id: 1\n    max_num_seqs: 4\n"
    found = [f for f in lint(deploy).findings if f.rule == "no-effect"]
    assert found and found[0].severity == "warning" and "batch_size" in found[0].message
    same = [f for f in lint(deploy.replace("max_num_seqs: 4", "max_num_seqs: 1")).findings if f.rule == "no-effect"]
    assert [f.severity for f in same] == ["note"]  # the value the launcher sets anyway


def test_setting_a_diffusion_stage_drops(lint):
    deploy = (
        "pipeline: image\nasync_chunk: false\nstages:\n  - stage_id: 1\n    cache_backend: x\n    enforce_eager: true\n"
    )
    found = [f for f in lint(deploy).findings if f.rule == "no-effect"]
    assert [f.subject for f in found] == ["stage 1: enforce_eager"]


def test_flat_diffusion_parallel_key_points_to_parallel_config(lint):
    deploy = "pipeline: image\nasync_chunk: false\nstages:\n  - stage_id: 1\n    tensor_parallel_size: 2\n"
    found = [f for f in lint(deploy).findings if f.rule == "no-effect"]
    assert found and "parallel_config" in found[0].message


def test_diffusion_setting_on_llm_stage(lint):
    deploy = "pipeline: image\nasync_chunk: false\nstages:\n  - stage_id: 0\n    cache_backend: tea_cache\n"
    assert "no-effect" in rules(lint(deploy))
    assert "no-effect" not in rules(lint(deploy.replace("stage_id: 0", "stage_id: 1")))


def test_unknown_platform_section(lint):
    deploy = CLEAN + "platforms:\n  tpu:\n    stages: []\n"
    assert "platform-unknown" in rules(lint(deploy, gpus=2))
    assert "platform-unknown" not in rules(lint(CLEAN + "platforms:\n  npu:\n    stages: []\n", gpus=2))


def test_findings_cite_engine_code(lint):
    report = lint(CLEAN.replace("gpu_memory_utilization: 0.4", "gpu_memory_utilization: 0.6"), gpus=2)
    assert all(f.label.startswith("src:vllm_omni/") for f in report.findings if f.severity != "note")


# --- the verb


def _cli(engine_dir: Path, *args: str) -> int:
    return main(["lint-deploy", "--engine-dir", str(engine_dir), *args])


def test_cli_exit_codes(engine_dir, tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(CLEAN, encoding="utf-8")
    assert _cli(engine_dir, str(good), "--gpus", "2") == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLEAN.replace("0.4", "0.6"), encoding="utf-8")
    assert _cli(engine_dir, str(bad), "--gpus", "2") == 1
    broken = tmp_path / "broken.yaml"
    broken.write_text("stages: [\n", encoding="utf-8")
    capsys.readouterr()
    assert _cli(engine_dir, str(broken)) == 2
    err = capsys.readouterr().err
    assert "broken.yaml:" in err and len(err.strip().splitlines()) == 1


def test_cli_json(engine_dir, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLEAN.replace("0.4", "0.6"), encoding="utf-8")
    capsys.readouterr()
    assert _cli(engine_dir, str(bad), "--gpus", "2", "--format", "json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["error"] == 1 and data["findings"][0]["rule"] == "memory-sum"


def test_cli_device_file_is_bad_input(engine_dir, capsys):
    assert _cli(engine_dir, "/dev/null") == 2


def test_cli_bundled_name(engine_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _cli(engine_dir, "--deploy-config", "chat.yaml", "--gpus", "2") == 0
    assert "pipeline chat" in capsys.readouterr().out


# --- the shipped engine models (no engine at hand)


def _shipped_skill(skill: Path, engine_dir: Path, engine_id: str = "pin") -> Path:
    """A skill whose lint-models file holds the fixture engine's model as `engine_id`."""
    import json

    from omni_skill.lintmodels import LINT_MODELS_PATH, dump, entry_line, spans_of

    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    (skill / "evidence").mkdir(exist_ok=True)
    text = dump("b" * 40, [entry_line(engine_id, model, spans_of(model, tree))])
    (skill / LINT_MODELS_PATH).write_text(text, encoding="utf-8")
    provenance = {"repository": "https://github.com/vllm-project/vllm-omni", "revision": "b" * 40, "commit_date": "x"}
    (skill / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    return skill


def test_the_shipped_model_lints_as_the_engine_does(skill, engine_dir, tmp_path, capsys):
    import json

    root = _shipped_skill(skill, engine_dir)
    bad = tmp_path / "bad.yaml"
    bad.write_text(CLEAN.replace("0.4", "0.6"), encoding="utf-8")
    assert _cli(engine_dir, str(bad), "--gpus", "2", "--format", "json", "--root", str(root)) == 1
    live = json.loads(capsys.readouterr().out)["findings"]
    assert main(["lint-deploy", str(bad), "--gpus", "2", "--format", "json", "--root", str(root)]) == 1
    shipped = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["rule"], f["line"], f["label"]) for f in shipped] == [(f["rule"], f["line"], f["label"]) for f in live]
    assert all(f["url"].startswith("https://github.com/vllm-project/vllm-omni/blob/" + "b" * 40) for f in shipped)


def test_a_release_without_a_shipped_model_is_one_line(skill, engine_dir, tmp_path, capsys):
    root = _shipped_skill(skill, engine_dir)
    good = tmp_path / "good.yaml"
    good.write_text(CLEAN, encoding="utf-8")
    assert main(["lint-deploy", str(good), "--release", "0.1.0", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no shipped lint model for release '0.1.0'" in err


def test_a_flag_an_earlier_release_had_is_named_removed(skill, engine_dir, tmp_path, capsys):
    from omni_skill.facts import FACTS_PATH, PIN, EngineStamp, Fact, facts_json, timeline

    root = _shipped_skill(skill, engine_dir)
    old = Fact(kind="flag", name="--old-knob", where="vllm_omni/entrypoints/cli/serve.py:9")
    stamps = [EngineStamp(id="1.0.0", date="2026-01-01"), EngineStamp(id=PIN, date="2026-02-01", revision="b" * 40)]
    (root / FACTS_PATH).write_text(facts_json(timeline(stamps, {"1.0.0": [old], PIN: []}, "b" * 40)), encoding="utf-8")
    serve = "vllm serve some/model --omni --old-knob x.yaml"
    assert main(["lint-deploy", "--serve", serve, "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "error: flag-removed: --old-knob is not a flag of this engine: it was removed after 1.0.0" in out


def test_shipped_models_are_written_in_a_stable_order():
    import json

    from omni_skill.deploy_model import EngineModel
    from omni_skill.lintmodels import entry_line

    model = EngineModel(connectors=frozenset({"Zed", "Alpha", "Mid"}))
    assert json.loads(entry_line("pin", model, {}))["model"]["connectors"] == ["Alpha", "Mid", "Zed"]


ONE_SLOT_SPLIT = """
def split_devices_for_replicas(devices_str, num_replicas, tp_size, stage_id):
    if num_replicas <= 1 or devices_str is None:
        return [devices_str] if devices_str is not None else [devices_str]
    return devices_str.split(",")
"""

SLOT_PER_REPLICA_SPLIT = """
def split_devices_for_replicas(devices_str, num_replicas, tp_size, stage_id):
    if devices_str is None:
        return [None] * max(1, num_replicas)
    return devices_str.split(",")
"""


@pytest.mark.parametrize(("split", "crashes"), [(ONE_SLOT_SPLIT, True), (SLOT_PER_REPLICA_SPLIT, False)])
def test_replicas_without_devices_follow_the_engines_split(engine_dir, tmp_path, split, crashes):
    """An engine whose split gives a stage without devices one slot fails at replica 1 (an error);
    one that gives each replica its own empty slot puts every replica on the launcher's devices,
    so their memory fractions add up on the same device."""
    (engine_dir / "vllm_omni/engine/stage_init_utils.py").write_text(split, encoding="utf-8")
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    assert model.one_device_slot is crashes
    deploy = CLEAN.replace('  - stage_id: 1\n    devices: "0"\n', "  - stage_id: 1\n    num_replicas: 2\n")
    (tmp_path / "deploy.yaml").write_text(textwrap.dedent(deploy), encoding="utf-8")
    report = run_lint(model, LintInput(deploy="deploy.yaml", cwd=tmp_path, gpus=2), tree, {"kind": "folder"})
    found = {f.rule: f for f in report.findings if f.severity == "error"}
    if crashes:
        assert "IndexError" in found["replicas"].message and "memory-sum" not in found
    else:
        assert "replicas" not in found
        assert "1.30" in found["memory-sum"].message  # 0.5 + 0.4 + 0.4 on device 0


RAW_LOAD_ENGINE = """
class AsyncOmniEngine:
    def __init__(self, model, **kwargs):
        deploy_config_path = kwargs.get("deploy_config")
        if deploy_config_path is not None:
            self.session = load_deploy_config(deploy_config_path)
"""

IGNORING_FACTORY = """
class StageConfigFactory:
    @classmethod
    def _create_from_registry(cls, deploy_config_path):
        deploy_path = Path(deploy_config_path)
        if not deploy_path.exists():
            logger.warning("Deploy config not found: %s — using pipeline defaults only", deploy_path)
"""

LOOKUP_FACTORY = """
class StageConfigFactory:
    @staticmethod
    def _load_user_deploy_config(deploy_config_path):
        deploy_path = Path(deploy_config_path)
        if not deploy_path.exists() and deploy_path.parent == Path("."):
            deploy_path = _DEPLOY_DIR / deploy_path
        return load_deploy_config(deploy_path)
"""


@pytest.mark.parametrize(
    ("path", "code", "mode", "says"),
    [
        ("vllm_omni/engine/async_omni_engine.py", RAW_LOAD_ENGINE, "raises", "raises FileNotFoundError"),
        ("vllm_omni/config/config_factory.py", IGNORING_FACTORY, "ignored", "the file is ignored"),
        ("vllm_omni/config/config_factory.py", LOOKUP_FACTORY, "lookup", ""),
    ],
)
def test_a_bare_deploy_name_not_in_the_working_directory_follows_the_engine(
    engine_dir, tmp_path, path, code, mode, says
):
    """A bare `--deploy-config NAME` that is only among the bundled files: an engine that loads the
    value as given raises, one without a folder lookup ignores the file, one with it finds it."""
    (engine_dir / path).write_text(code, encoding="utf-8")
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    assert model.bare_deploy_name == mode
    serve = parse("vllm serve m --omni --deploy-config chat.yaml", lambda f: model.flags[f].takes_value())
    work = tmp_path / "work"
    work.mkdir()
    report = run_lint(model, LintInput(command=serve, cwd=work, gpus=2), tree, {"kind": "folder"})
    found = [f for f in report.findings if f.rule == "deploy-path"]
    assert [f.severity for f in found] == (["error"] if says else [])
    assert all(says in f.message for f in found)
    assert report.files == ["vllm_omni/deploy/chat.yaml"]  # the bundled file is still linted
    headless = parse(
        "vllm serve m --omni --headless --deploy-config chat.yaml",
        lambda f: model.flags[f].takes_value() if f in model.flags else False,
    )
    report = run_lint(model, LintInput(command=headless, cwd=work, gpus=2), tree, {"kind": "folder"})
    assert "deploy-path" not in rules(report, "error")  # a headless stage resolves the name through the loader
    assert "deploy-path" not in rules(report, "warning")  # the fixture's connector lookup does not catch
    (work / "chat.yaml").write_text(textwrap.dedent(CLEAN), encoding="utf-8")  # there after all: no finding
    report = run_lint(model, LintInput(command=serve, cwd=work, gpus=2), tree, {"kind": "folder"})
    assert "deploy-path" not in rules(report)


def test_top_level_keys_other_readers_take_are_notes_not_dropped(lint, engine_dir, tmp_path):
    deploy = CLEAN + "modes:\n  - {mode: t2i, stages: [0]}\nruntime:\n  connectors: {}\n"
    report = lint(deploy, gpus=2)
    assert {f.subject for f in report.findings if f.rule == "key-unknown"} == {"modes", "runtime"}
    (engine_dir / "vllm_omni/entrypoints/utils.py").write_text(
        "def parse_stage_overrides(value):\n    return value\n\n\n"
        'def filter_stages(config_path, stage_configs, kwargs):\n    return getattr(cfg, "modes", None)\n',
        encoding="utf-8",
    )
    (engine_dir / "vllm_omni/distributed/omni_connectors/utils/initialization.py").write_text(
        'def load_omni_transfer_config(config):\n    return dict(config.get("runtime") or {})\n', encoding="utf-8"
    )
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    (tmp_path / "other.yaml").write_text(textwrap.dedent(deploy), encoding="utf-8")
    report = run_lint(model, LintInput(deploy="other.yaml", cwd=tmp_path, gpus=2), tree, {"kind": "folder"})
    assert "key-unknown" not in rules(report)
    notes = {f.subject: f for f in report.findings if f.rule == "key-other-reader"}
    assert set(notes) == {"modes", "runtime"} and notes["modes"].severity == "note"


def test_an_undefined_connector_says_start_up_only_logs_it_where_the_engine_catches(engine_dir, tmp_path):
    deploy = CLEAN + "connectors:\n  shm: {name: SharedMemoryConnector}\n"
    deploy = deploy.replace(
        "    gpu_memory_utilization: 0.4\n",
        "    gpu_memory_utilization: 0.4\n    input_connectors:\n      from_stage_0: shm2\n",
    )
    (tmp_path / "c.yaml").write_text(textwrap.dedent(deploy), encoding="utf-8")

    def message() -> str:
        tree = folder_tree(engine_dir)
        model = build(tree, tree.paths())
        report = run_lint(model, LintInput(deploy="c.yaml", cwd=tmp_path, gpus=2), tree, {"kind": "folder"})
        return next(f.message for f in report.findings if f.rule == "connector-undefined")

    assert "start-up catches" not in message()
    with (engine_dir / "vllm_omni/engine/stage_init_utils.py").open("a", encoding="utf-8") as out:
        out.write(
            "\n\ndef load_omni_transfer_config_for_model(model, path):\n    try:\n        return load(path)\n"
            "    except Exception:\n        return None\n"
        )
    assert "start-up catches the loader's error" in message()


def test_a_headless_bare_name_loses_its_connectors_where_the_lookup_catches(engine_dir, tmp_path):
    (engine_dir / "vllm_omni/engine/async_omni_engine.py").write_text(RAW_LOAD_ENGINE, encoding="utf-8")
    with (engine_dir / "vllm_omni/engine/stage_init_utils.py").open("a", encoding="utf-8") as out:
        out.write(
            "\n\ndef load_omni_transfer_config_for_model(model, path):\n    try:\n        return load(path)\n"
            "    except Exception:\n        return None\n"
        )
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    work = tmp_path / "work"
    work.mkdir()
    takes = lambda f: model.flags[f].takes_value() if f in model.flags else False  # noqa: E731
    headless = parse("vllm serve m --omni --headless --deploy-config chat.yaml", takes)
    report = run_lint(model, LintInput(command=headless, cwd=work, gpus=2), tree, {"kind": "folder"})
    found = [f for f in report.findings if f.rule == "deploy-path"]
    assert [f.severity for f in found] == ["warning"] and "no transfer config" in found[0].message


CHECKING_VALIDATE = """
import argparse


class OmniServeCommand:
    def validate(self, args):
        explicit = getattr(args, "_cli_explicit_keys", set()) or set()
        prohibited_with_omni = {"data_parallel_size": "--data-parallel-size"}
        offenders = [flag for dest, flag in prohibited_with_omni.items() if dest in explicit]
        if offenders:
            raise ValueError(offenders)

    def subparser_init(self, parser):
        parser.add_argument("--omni", action="store_true")
"""


@pytest.mark.parametrize(
    ("setter", "rule"), [("", "flag-not-refused"), ("args._cli_explicit_keys = set()\n", "flag-rejected")]
)
def test_a_refusal_that_tests_a_set_nothing_fills_is_not_an_error(engine_dir, tmp_path, setter, rule):
    """validate refuses a listed flag only if it is in an args attribute; an engine whose entry
    modules never store that attribute does not refuse it (a warning), one that does (an error)."""
    (engine_dir / "vllm_omni/entrypoints/cli/serve.py").write_text(CHECKING_VALIDATE, encoding="utf-8")
    main_py = engine_dir / "vllm_omni/entrypoints/cli/main.py"
    main_py.write_text(
        main_py.read_text(encoding="utf-8") + "\n\ndef parse(args):\n    " + setter + "    return args\n"
    )
    tree = folder_tree(engine_dir)
    model = build(tree, tree.paths())
    assert model.rejection_set == "_cli_explicit_keys" and model.rejection_set_filled is bool(setter)
    serve = parse(
        "vllm serve m --omni --data-parallel-size 2",
        lambda f: model.flags[f].takes_value() if f in model.flags else True,
    )
    report = run_lint(model, LintInput(command=serve, cwd=tmp_path, gpus=2), tree, {"kind": "folder"})
    found = {f.rule: f.severity for f in report.findings if f.rule in ("flag-not-refused", "flag-rejected")}
    assert found == {rule: "warning" if rule == "flag-not-refused" else "error"}


@pytest.mark.parametrize("ref", ["..", ".", "../chat.yaml", "x" * 300 + ".yaml"])
def test_a_hostile_deploy_name_on_a_raising_engine_is_one_line(engine_dir, tmp_path, monkeypatch, capsys, ref):
    """On an engine whose serve path loads the name as given: a parent or current directory, a
    path with `..` or a long name gets one line and an exit code, never a traceback, and only a
    bare name is looked up among the engine's bundled files."""
    (engine_dir / "vllm_omni/engine/async_omni_engine.py").write_text(RAW_LOAD_ENGINE, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code = _cli(engine_dir, "--serve", f"vllm serve m --omni --deploy-config {ref}", "--gpus", "2")
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code == 2:
        assert out == "" and err.count("\n") == 1
    else:
        assert code == 1 and "deploy-path" in out and ref.startswith("x")  # only the bare, absent name
