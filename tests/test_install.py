"""install and package: real files in the folders agents discover, and a clean zip."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from omni_skill.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def resolved(skill, engine):
    """The fixture skill, resolved, with the helper scripts copied in as an agent would have them."""
    path, sha = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    subprocess.run(["cp", "-r", str(REPO / "scripts"), str(skill / "scripts")], check=True)
    (skill / "evals").mkdir()
    (skill / "evals/x.yaml").write_text("branch: serving-tuning\nevals: []\n")
    (skill / "tests").mkdir()
    (skill / "tests/test_x.py").write_text("")
    return skill


@pytest.mark.parametrize(
    ("agent", "scope", "folder"),
    [
        ("claude", "user", ".claude/skills/vllm-omni"),
        ("claude", "project", ".claude/skills/vllm-omni"),
        ("codex", "user", ".agents/skills/vllm-omni"),
        ("codex", "project", ".agents/skills/vllm-omni"),
        ("cursor", "user", ".cursor/skills/vllm-omni"),
        ("cursor", "project", ".cursor/skills/vllm-omni"),
    ],
)
def test_install_for_each_agent_passes_check(resolved, tmp_path, capsys, agent, scope, folder):
    home = tmp_path / "home"
    assert main(["install", "--root", str(resolved), "--agent", agent, "--scope", scope, "--dest", str(home)]) == 0
    target = home / folder
    assert (target / "SKILL.md").is_file() and (target / "evidence/index.json").is_file()
    assert not (target / "evals").exists() and not (target / "tests").exists()
    assert not any(p.is_symlink() for p in target.rglob("*"))
    assert not list(target.rglob("__pycache__"))
    assert "check: ok" in capsys.readouterr().out


def test_in_place_command_runs_from_installed_copy(resolved, tmp_path):
    home = tmp_path / "home"
    assert main(["install", "--root", str(resolved), "--agent", "claude", "--dest", str(home)]) == 0
    target = home / ".claude/skills/vllm-omni"
    result = subprocess.run(
        [sys.executable, "scripts/omni-skill", "check"],
        cwd=target,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "check: ok" in result.stdout


def test_install_refuses_to_overwrite_another_skill(resolved, tmp_path, capsys):
    target = tmp_path / "home/.claude/skills/vllm-omni"
    target.mkdir(parents=True)
    (target / "SKILL.md").write_text("---\nname: someone-else\ndescription: x\n---\n")
    assert main(["install", "--root", str(resolved), "--agent", "claude", "--dest", str(tmp_path / "home")]) == 2
    assert "holds the skill 'someone-else'; pass --force" in capsys.readouterr().err
    assert (target / "SKILL.md").read_text().startswith("---\nname: someone-else")
    assert (
        main(["install", "--root", str(resolved), "--agent", "claude", "--dest", str(tmp_path / "home"), "--force"])
        == 0
    )
    assert "name: vllm-omni" in (target / "SKILL.md").read_text()


def test_install_updates_its_own_earlier_copy(resolved, tmp_path):
    args = ["install", "--root", str(resolved), "--agent", "codex", "--dest", str(tmp_path)]
    assert main(args) == 0
    stale = tmp_path / ".agents/skills/vllm-omni/references/branch/stale.md"
    stale.write_text("# old\n")
    assert main(args) == 0
    assert not stale.exists()


def test_install_dry_run_copies_nothing(resolved, tmp_path, capsys):
    assert main(["install", "--root", str(resolved), "--agent", "cursor", "--dest", str(tmp_path), "--dry-run"]) == 0
    assert not (tmp_path / ".cursor").exists()
    assert "would copy" in capsys.readouterr().out


def test_package_is_a_clean_deterministic_zip(resolved, tmp_path):
    first, second = tmp_path / "a.skill", tmp_path / "b.skill"
    assert main(["package", "--root", str(resolved), "--output", str(first)]) == 0
    assert main(["package", "--root", str(resolved), "--output", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert "vllm-omni/SKILL.md" in names and "vllm-omni/scripts/omni-skill" in names
    assert all(n.startswith("vllm-omni/") for n in names)
    assert not any("/evals/" in n or "/tests/" in n or "__pycache__" in n or n.endswith(".pyc") for n in names)


def test_package_refuses_symlinks(resolved, tmp_path, capsys):
    (resolved / "references/branch/link.md").symlink_to("README.md")
    assert main(["package", "--root", str(resolved), "--output", str(tmp_path / "x.skill")]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
