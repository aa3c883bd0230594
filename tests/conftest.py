"""Fixtures: small engine repositories made with real git commits, and small skills."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import git
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.fixture(autouse=True)
def no_engine_from_the_environment(monkeypatch):
    """Tests say which engine they read: a VLLM_OMNI_SOURCE of the developer's shell must not leak in."""
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


CONFIG_PY = '''\
"""Engine configuration (fixture)."""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

MAX_STAGES = 8
TIMEOUT: int = 300


def decorate(f):
    return f


@dataclass
class StageConfig:
    """One stage."""

    max_num_seqs: int = 64
    devices: str = "0"
    tags: list = field(default_factory=list)
    ratio: float = field(default=0.9)
    name = "stage"

    @decorate
    def build(self, replicas: int = 1, *, mode: str = "ar"):
        return replicas

    class Inner:
        def run(self):
            return 1


async def start(timeout=30):
    return timeout


if TYPE_CHECKING:
    Alias = int
else:
    Alias = str


@overload
def load(x: int) -> int: ...
@overload
def load(x: str) -> str: ...
def load(x):
    return x


def add_cli_args(parser):
    parser.add_argument("--stage-init-timeout", type=int, default=300)
    parser.add_argument("--no-default")


def env_knobs():
    import os
    return os.getenv("OMNI_CHUNK", "16"), os.environ.get("OMNI_FLAG")
'''

DEPLOY_YAML = """\
# deploy fixture
stages:
  - stage_id: 0
    engine_args:
      max_num_seqs: 32
      gpu_memory_utilization: 0.8

  - stage_id: 1
    devices: "1"
connectors:
  kind: shm
"""

GUIDE_MD = """\
# Guide

Intro.

## Deploy a model

Steps.

## Deploy a model

Again.

### Details `x`

More.

## Tuning & speed

End.
"""

TEST_PY = """\
class TestStage:
    def test_build(self):
        assert True


def test_plain():
    assert True
"""


def new_repo(path: Path) -> git.Repo:
    """An empty engine repository with a committer identity of its own (none is taken from the machine)."""
    repo = git.Repo.init(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "fixture")
        config.set_value("user", "email", "fixture@example.invalid")
    return repo


def commit_files(repo: git.Repo, files: dict[str, str | bytes | None], message: str) -> str:
    """Write (or delete, for None) files and commit them; return the commit SHA."""
    root = Path(repo.working_tree_dir)
    for rel, content in files.items():
        path = root / rel
        if content is None:
            repo.index.remove([rel], working_tree=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        repo.index.add([rel])
    return repo.index.commit(message).hexsha


@pytest.fixture
def engine(tmp_path: Path) -> tuple[Path, str]:
    """An engine repository with one commit holding every kind of cited file."""
    path = tmp_path / "engine"
    repo = new_repo(path)
    sha = commit_files(
        repo,
        {
            "pkg/config.py": CONFIG_PY,
            "pkg/deploy.yaml": DEPLOY_YAML,
            "docs/guide.md": GUIDE_MD,
            "tests/test_stage.py": TEST_PY,
            "requirements/common.txt": "torch\nvllm==0.9.1\n",
            "data/blob.bin": b"\x00\x01\x02",
            "data/latin1.txt": "caf\xe9".encode("latin-1"),
        },
        "engine fixture",
    )
    (path / "pkg/link.py").symlink_to("config.py")
    repo.index.add(["pkg/link.py"])
    sha = repo.index.commit("add a symlink").hexsha
    return path, sha


SKILL_MD = """\
---
name: vllm-omni
description: Explains the fixture engine. Use when testing.
license: Apache-2.0
metadata:
  version: "1.0.0"
---

# Fixture skill

| when | read |
|---|---|
| always | [branch](references/branch/README.md) |
"""


def make_skill(root: Path, page: str, extra: dict[str, str] | None = None) -> Path:
    """A skill with one branch entry page holding `page` as its body."""
    (root / "references/branch").mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (root / "references/branch/README.md").write_text(textwrap.dedent(page), encoding="utf-8")
    for rel, text in (extra or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    return make_skill(
        tmp_path / "skill",
        """\
        # Branch

        Read this when: testing.

        The [`StageConfig`][src:pkg/config.py::StageConfig] holds
        [`max_num_seqs`][src:pkg/config.py::StageConfig.max_num_seqs]; the deploy file sets
        [it][src:pkg/deploy.yaml::stages\\[0\\].engine_args.max_num_seqs]; see
        [the guide][src:docs/guide.md::#deploy-a-model-1] and [the requirements][src:requirements/common.txt].
        """,
    )


def marker_program(folder: Path, then: str = "") -> tuple[Path, Path]:
    """(script, marker): a program that leaves the marker when run (then runs `then`), to name in a
    repository's settings and prove that no verb ever runs it."""
    marker = folder / "MARKER"
    script = folder / "hook.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n{then}")
    script.chmod(0o755)
    return script, marker


def set_config(path: Path, settings: dict[tuple[str, str], str]) -> None:
    with git.Repo(path).config_writer() as config:
        for (section, key), value in settings.items():
            config.set_value(section, key, value)


def check_after_edit(root: Path, engine: Path, sha: str, rel: str, old: str, new: str, capsys) -> tuple[int, str]:
    """Resolve the skill at `sha`, replace `old` by `new` in one of its files, then `check --source`:
    the exit code and the report."""
    from omni_skill.cli import main

    assert main(["resolve", "--root", str(root), "--source", str(engine), "--revision", sha]) == 0
    path = root / rel
    path.write_text(path.read_text().replace(old, new))
    capsys.readouterr()
    code = main(["check", "--root", str(root), "--source", str(engine)])
    return code, capsys.readouterr().out
