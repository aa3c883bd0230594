"""The per-platform sections of a bundled deploy file (`platforms: {npu: {stages: [...]}, ...}`),
as the model catalogue lists them and `check --source` compares them.

At engine start the section of the running platform (its device name, lower case: cuda, rocm,
npu, xpu, musa) overrides the deploy file's stages by `stage_id`: `devices` and `env` are taken
apart, every other key of the entry is set on the stage. An entry is written flat (`devices: "2"`,
`gpu_memory_utilization: 0.6`) or nested (`engine_args: {...}`, `runtime: {devices, num_replicas,
env}`); both are read here into one form, per stage: `devices`, `num_replicas`, and `settings`,
every other override with nested mappings flattened to dotted keys
(`compilation_config.cudagraph_mode`), `env.NAME` for environment variables. Only what the
section states is listed: a key left out keeps the stage's value from `stages`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class PlatformStage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage_id: int
    devices: Any = None
    num_replicas: Any = None
    settings: dict[str, Any] = Field(default_factory=dict)


class PlatformSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    platform: str
    stages: list[PlatformStage] = Field(default_factory=list)


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys; an empty mapping, a list or a scalar is a value."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def platform_stage(entry: dict[str, Any]) -> dict[str, Any]:
    """One platform stage entry in the catalogue's form (see the module docstring)."""
    if "engine_args" in entry:
        engine_args = entry.get("engine_args")
        runtime = entry.get("runtime")
        overrides = dict(engine_args) if isinstance(engine_args, dict) else {}
        runtime = runtime if isinstance(runtime, dict) else {}
        if "num_replicas" in runtime:
            overrides["num_replicas"] = runtime["num_replicas"]
        devices, env = runtime.get("devices"), runtime.get("env")
    else:
        overrides = {k: v for k, v in entry.items() if k not in ("stage_id", "devices", "env")}
        devices, env = entry.get("devices"), entry.get("env")
    found: dict[str, Any] = {"stage_id": entry.get("stage_id")}
    if devices is not None:
        found["devices"] = devices
    if overrides.get("num_replicas") is not None:
        found["num_replicas"] = overrides.pop("num_replicas")
    settings = _flat(overrides)
    if isinstance(env, dict):
        settings.update({f"env.{k}": v for k, v in env.items()})
    elif env is not None:
        settings["env"] = env
    if settings:
        found["settings"] = settings
    return found


def platform_sections(data: Any) -> list[dict[str, Any]]:
    """A deploy file's platform sections in the catalogue's form, in file order ([] when none)."""
    platforms = data.get("platforms") if isinstance(data, dict) else None
    if not isinstance(platforms, dict):
        return []
    sections = []
    for name, section in platforms.items():
        stages = section.get("stages") if isinstance(section, dict) else None
        entries = [platform_stage(s) for s in stages or [] if isinstance(s, dict)]
        sections.append({"platform": str(name), "stages": entries})
    return sections


Problem = tuple[str, tuple[str | int, ...], str]  # finding kind, catalogue path below the deploy entry, message


def compare_sections(claimed: list[PlatformSection], data: Any) -> list[Problem]:
    """Every platform, stage and value where the catalogue and the deploy file's data differ:
    models-missing (in the file only), models-extra (in the catalogue only), models-mismatch."""
    from .claims import same_value

    actual = {s["platform"]: s for s in platform_sections(data)}
    listed = {s.platform for s in claimed}
    problems: list[Problem] = []
    for name in actual:
        if name not in listed:
            problems.append(("models-missing", ("platforms",), f"platform {name!r} has a section and no entry"))
    for index, section in enumerate(claimed):
        where: tuple[str | int, ...] = ("platforms", index)
        if section.platform not in actual:
            problems.append(("models-extra", where, f"no platforms.{section.platform} section"))
            continue
        stages = {s["stage_id"]: s for s in actual[section.platform]["stages"]}
        mine = {s.stage_id for s in section.stages}
        for stage_id in stages:
            if stage_id not in mine:
                message = f"platforms.{section.platform}: stage_id {stage_id} has no entry"
                problems.append(("models-missing", (*where, "stages"), message))
        for j, stage in enumerate(section.stages):
            at = (*where, "stages", j)
            what = f"platforms.{section.platform} stage_id {stage.stage_id}"
            if stage.stage_id not in stages:
                problems.append(("models-extra", at, f"{what}: no such stage in the section"))
                continue
            real = stages[stage.stage_id]
            for name in ("devices", "num_replicas"):
                if not same_value(getattr(stage, name), real.get(name)):
                    message = f"{what} {name}: the catalogue says {getattr(stage, name)!r}, the file {real.get(name)!r}"
                    problems.append(("models-mismatch", (*at, name), message))
            settings = real.get("settings", {})
            for key in settings.keys() - stage.settings.keys():
                problems.append(("models-missing", (*at, "settings"), f"{what}: {key} is set and not listed"))
            for key, value in stage.settings.items():
                if key not in settings:
                    problems.append(("models-extra", (*at, "settings", key), f"{what}: {key} is not set"))
                elif not same_value(value, settings[key]):
                    message = f"{what} {key}: the catalogue says {value!r}, the file {settings[key]!r}"
                    problems.append(("models-mismatch", (*at, "settings", key), message))
    return problems
