"""Hostile and careless input: an untrusted engine repository never runs a program, nothing hangs,
every error is one line, nothing passes silently, and no file is half-written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git
import pytest

from conftest import CONFIG_PY, commit_files, make_skill
from omni_skill.cli import main

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(autouse=True)
def no_env_source(monkeypatch):
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- 1. no repository-configured program runs --------------------------------------------------


@pytest.fixture
def partial(tmp_path, engine):
    """A blob-less clone of the fixture engine whose every transport setting names a program that
    leaves a marker, and a skill resolved at the same commit (from the full engine)."""
    origin, sha = engine
    repo = git.Repo(origin)
    repo.git.config("uploadpack.allowFilter", "true")
    repo.git.config("uploadpack.allowAnySHA1InWant", "true")
    clone = tmp_path / "partial"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{origin}", str(clone)], check=True
    )
    marker = tmp_path / "MARKER"
    hook = tmp_path / "hook.sh"
    hook.write_text(f'#!/bin/sh\ntouch {marker}\nexec git-upload-pack "$@"\n')
    hook.chmod(0o755)
    with git.Repo(clone).config_writer() as config:
        config.set_value('remote "origin"', "uploadpack", str(hook))
        config.set_value("core", "sshCommand", str(hook))
        config.set_value("core", "gitProxy", str(hook))
        config.set_value("core", "fsmonitor", str(hook))
        config.set_value("core", "askPass", str(hook))
    skill = make_skill(tmp_path / "skill", "# Branch\n\nSee [x][src:pkg/config.py::StageConfig].\n")
    assert main(["resolve", "--root", str(skill), "--source", str(origin), "--revision", sha]) == 0
    return clone, skill, sha, marker


def source_verbs(clone: Path, sha: str) -> list[tuple[list[str], int]]:
    """Each verb that reads a source, and its exit code: 2 when it must read a blob the clone lacks,
    0 when the blob ids alone prove every citation (bump and drift to the pinned commit)."""
    return [
        (["check", "--source", str(clone)], 2),
        (["resolve", "--source", str(clone), "--dry-run"], 2),
        (["show", "src:pkg/config.py::StageConfig", "--source", str(clone)], 2),
        (["bump", "--source", str(clone), "--to", sha, "--dry-run"], 0),
        (["drift", "--source", str(clone), "--revision", sha], 0),
    ]


def test_partial_clone_never_fetches_through_its_own_transport(partial, capsys):
    clone, skill, sha, marker = partial
    for argv, expected in source_verbs(clone, sha):
        capsys.readouterr()
        code = main([*argv, "--root", str(skill)])
        err = capsys.readouterr().err
        assert not marker.exists(), argv
        assert code == expected, (argv, err)
        if expected == 2:
            assert err.count("\n") == 1 and "is not in this clone, and nothing is fetched for you" in err, (argv, err)


def test_partial_clone_bump_to_another_commit_does_not_fetch(partial, engine, capsys):
    clone, skill, _, marker = partial
    origin, _ = engine
    rev = commit_files(git.Repo(origin), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
    subprocess.run(
        [
            "git",
            "-C",
            str(clone),
            "-c",
            "remote.origin.uploadpack=git-upload-pack",
            "fetch",
            "-q",
            "--filter=blob:none",
            "origin",
        ],
        check=True,
    )
    marker.unlink(missing_ok=True)
    capsys.readouterr()
    code = main(["bump", "--root", str(skill), "--source", str(clone), "--to", rev, "--dry-run"])
    err = capsys.readouterr().err
    assert not marker.exists()
    assert code == 2 and "is not in this clone, and nothing is fetched for you" in err


def test_partial_clone_works_once_the_revision_is_fetched(partial, capsys):
    clone, skill, sha, marker = partial
    subprocess.run(["git", "-C", str(clone), "-c", "remote.origin.uploadpack=git-upload-pack", "checkout", "-q", sha])
    marker.unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(clone)]) == 0, capsys.readouterr().out
    assert not marker.exists()


def test_a_source_verb_without_git_on_the_path_is_one_line(partial, tmp_path):
    clone, skill, sha, _ = partial
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    script = f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); from omni_skill.cli import main; raise SystemExit(main(sys.argv[1:]))"
    for argv in (["check", "--source", str(clone)], ["check"]):
        done = subprocess.run(
            [sys.executable, "-c", script, *argv, "--root", str(skill)],
            capture_output=True,
            text=True,
            env={"PATH": str(empty), "HOME": str(tmp_path)},
        )
        assert "Traceback" not in done.stderr, done.stderr
        if "--source" in argv:
            assert done.returncode == 2 and done.stderr.count("\n") == 1 and "put git on the PATH" in done.stderr
        else:
            assert done.returncode == 0, done.stdout + done.stderr
