"""The repository's own wiring: workflows run real verbs, the marketplace lists real paths."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from omni_skill.cli import build_parser

REPO = Path(__file__).resolve().parents[1]


def workflow_commands() -> list[str]:
    commands = []
    for path in sorted((REPO / ".github/workflows").glob("*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job["steps"]:
                for line in str(step.get("run", "")).splitlines():
                    commands += [c.strip() for c in re.findall(r"omni-skill [^>|&;]+", line)]
    return commands


def test_workflows_run_omni_skill():
    verbs = {shlex.split(c)[1] for c in workflow_commands()}
    assert {"check", "bump"} <= verbs


@pytest.mark.parametrize("command", workflow_commands())
def test_workflow_commands_parse(command):
    words = [re.sub(r"\$\{?\w+\}?|\"", "x", w) for w in shlex.split(command.replace("$RUNNER_TEMP", "/tmp"))][1:]
    build_parser().parse_args(words)  # argparse exits on an unknown verb or flag


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci/run").read_text()
    assert "python3 -m pytest" in readme and "python -m pytest" in ci
    assert "omni-skill check" in readme and "omni-skill check" in ci


def test_marketplace_lists_real_paths():
    data = json.loads((REPO / ".claude-plugin/marketplace.json").read_text())
    for plugin in data["plugins"]:
        for rel in [plugin["source"], *plugin["skills"]]:
            path = (REPO / rel).resolve()
            assert path.exists() and not (REPO / rel).is_symlink()
            assert (path / "SKILL.md").is_file()
