"""The search-space data file: schema findings and the `search-space` verb's filters."""

from __future__ import annotations

import json

import yaml

from conftest import make_skill
from omni_skill.cli import main

SETTING = {
    "scope": "per-stage",
    "source": "src:pkg/config.py::StageConfig.max_num_seqs",
    "read_by": ["src:pkg/config.py::StageConfig.build"],
    "type": "int",
    "label": "existing setting",
    "measure": "throughput",
}


def space_skill(tmp_path, settings):
    root = make_skill(tmp_path / "skill", "# Branch\n\n[space](search-space.yaml)\n")
    data = json.loads(json.dumps({"version": 1, "settings": settings}))  # no shared objects, so no YAML aliases
    (root / "references/branch/search-space.yaml").write_text(yaml.safe_dump(data))
    (root / "references/architecture-search").mkdir(parents=True)
    (root / "references/architecture-search/search-space.yaml").write_text(
        (root / "references/branch/search-space.yaml").read_text()
    )
    return root


def test_filters_by_stage_type_and_scope(tmp_path, capsys):
    settings = [
        {**SETTING, "name": "max_num_seqs", "stage_types": ["llm_ar"], "default": 64},
        {**SETTING, "name": "steps", "scope": "diffusion", "stage_types": ["diffusion"]},
        {**SETTING, "name": "VLLM_X", "scope": "env", "stage_types": ["all"], "default": None},
    ]
    root = space_skill(tmp_path, settings)
    assert main(["search-space", "--root", str(root), "--stage-type", "diffusion", "--format", "json"]) == 0
    names = [s["name"] for s in json.loads(capsys.readouterr().out)]
    assert names == ["steps", "VLLM_X"]
    assert main(["search-space", "--root", str(root), "--scope", "per-stage"]) == 0
    chosen = yaml.safe_load(capsys.readouterr().out)
    assert [s["name"] for s in chosen] == ["max_num_seqs"] and chosen[0]["default"] == 64


def test_explicit_null_default_is_kept(tmp_path, capsys):
    root = space_skill(
        tmp_path, [{**SETTING, "name": "VLLM_X", "scope": "env", "stage_types": ["all"], "default": None}]
    )
    assert main(["search-space", "--root", str(root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["default"] is None


def test_unknown_key_and_bad_scope_are_findings(tmp_path, capsys):
    root = space_skill(tmp_path, [{**SETTING, "name": "x", "stage_types": ["all"], "scope": "global", "colour": "red"}])
    assert main(["search-space", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert (
        "search-space-invalid: settings.0.scope" in err and "settings.0.colour: Extra inputs are not permitted" in err
    )


def test_duplicate_setting_names(tmp_path, capsys):
    root = space_skill(tmp_path, [{**SETTING, "name": "x", "stage_types": ["all"]}] * 2)
    assert main(["search-space", "--root", str(root)]) == 1
    assert "setting 'x' is listed twice" in capsys.readouterr().err
