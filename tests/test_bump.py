"""bump and drift on fixture histories: each case is one real commit on top of the fixture engine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import git
import pytest

from conftest import CONFIG_PY, DEPLOY_YAML, GUIDE_MD, commit_files, make_skill, marker_program, set_config
from omni_skill import writes
from omni_skill.cli import main

LABELS = {
    "class": "src:pkg/config.py::StageConfig.build",
    "func": "src:pkg/config.py::start",
    "env": "src:pkg/config.py::env_knobs",
    "cli": "src:pkg/config.py::add_cli_args",
    "const": "src:pkg/config.py::MAX_STAGES",
    "yaml": "src:pkg/deploy.yaml::connectors.kind",
    "md": "src:docs/guide.md::#tuning--speed",
    "lines": "src:pkg/deploy.yaml::L10-L11",
    "file": "src:requirements/common.txt",
}


@pytest.fixture(autouse=True)
def no_env_source(monkeypatch):
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


@pytest.fixture
def pinned(engine, tmp_path):
    """A skill citing every label at the fixture's first revision, resolved."""
    body = (
        "# Branch\n\n## Claims\n\n"
        + "\n".join(
            f"- {k}: [{k}][{v.replace('[', chr(92) + '[').replace(']', chr(92) + ']')}]" for k, v in LABELS.items()
        )
        + "\n"
    )
    skill = make_skill(tmp_path / "skill", body)
    path, sha = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    return skill, path, sha


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def advance(path: Path, files: dict[str, str | None]) -> str:
    return commit_files(git.Repo(path), files, "change")


def bump_json(skill: Path, path: Path, rev: str, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["bump", "--root", str(skill), "--source", str(path), "--to", rev, "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def statuses(report: dict) -> dict[str, str]:
    return {e["label"]: e["status"] for e in report["entries"]}


def test_lines_inserted_above_a_symbol_are_moved(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, {"pkg/config.py": "# one\n# two\n" + CONFIG_PY})
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 0 and report["written"] is True
    got = statuses(report)
    assert got[LABELS["class"]] == "moved" and got[LABELS["func"]] == "moved"
    assert got[LABELS["yaml"]] == "unchanged"
    moved = next(e for e in report["entries"] if e["label"] == LABELS["class"])
    assert (moved["old_span"], moved["new_span"]) == ("L23-L25", "L25-L27")
    page = (skill / "references/branch/README.md").read_text()
    assert f"/blob/{rev}/pkg/config.py#L25-L27" in page
    assert json.loads((skill / "provenance.json").read_text())["revision"] == rev


def test_body_edit_is_changed_and_blocks_until_accepted(pinned, capsys):
    skill, path, _ = pinned
    before = snapshot(skill)
    rev = advance(path, {"pkg/config.py": CONFIG_PY.replace("    return timeout\n", "    return timeout * 2\n")})
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 1 and report["written"] is False
    entry = next(e for e in report["entries"] if e["label"] == LABELS["func"])
    assert entry["status"] == "changed" and 0.5 < entry["similarity"] < 1.0
    assert entry["uses"] == [{"file": "references/branch/README.md", "line": 6, "heading": "Claims"}]
    assert snapshot(skill) == before
    code, report = bump_json(skill, path, rev, capsys, "--accept", LABELS["func"])
    assert code == 0 and report["written"] is True


def test_renamed_symbol_is_missing_and_nothing_is_written(pinned, capsys):
    skill, path, _ = pinned
    before = snapshot(skill)
    rev = advance(path, {"pkg/config.py": CONFIG_PY.replace("def env_knobs", "def env_settings")})
    code, report = bump_json(skill, path, rev, capsys, "--accept-changed")
    assert code == 1 and statuses(report)[LABELS["env"]] == "missing"
    assert snapshot(skill) == before


def test_symbol_moved_to_another_file_is_relocated_and_rewritten(pinned, capsys):
    skill, path, _ = pinned
    start = CONFIG_PY.index("def add_cli_args")
    end = CONFIG_PY.index("def env_knobs")
    function = CONFIG_PY[start:end].rstrip() + "\n"
    rev = advance(path, {"pkg/config.py": CONFIG_PY[:start] + CONFIG_PY[end:], "pkg/cli.py": function})
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 0
    entry = next(e for e in report["entries"] if e["label"] == LABELS["cli"])
    assert entry["status"] == "relocated" and entry["new_label"] == "src:pkg/cli.py::add_cli_args"
    page = (skill / "references/branch/README.md").read_text()
    assert "[cli][src:pkg/cli.py::add_cli_args]" in page and "src:pkg/config.py::add_cli_args" not in page
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 0


def test_same_name_in_two_files_is_reported_not_rewritten(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(
        path,
        {
            "pkg/config.py": CONFIG_PY.replace("MAX_STAGES = 8\n", ""),
            "pkg/limits.py": "MAX_STAGES = 8\n",
            "pkg/other.py": "MAX_STAGES = 16\n",
        },
    )
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 1
    entry = next(e for e in report["entries"] if e["label"] == LABELS["const"])
    assert entry["status"] == "relocated" and entry["new_label"] == LABELS["const"]
    assert entry["candidates"] == ["src:pkg/limits.py::MAX_STAGES", "src:pkg/other.py::MAX_STAGES"]


def test_yaml_keys_reordered_are_moved(pinned, capsys):
    skill, path, _ = pinned
    reordered = "connectors:\n  kind: shm\n" + DEPLOY_YAML.replace("connectors:\n  kind: shm\n", "")
    rev = advance(path, {"pkg/deploy.yaml": reordered})
    code, report = bump_json(skill, path, rev, capsys)
    got = statuses(report)
    assert got[LABELS["yaml"]] == "moved"
    assert got[LABELS["lines"]] == "moved"  # a line range is re-found by its text
    entry = next(e for e in report["entries"] if e["label"] == LABELS["lines"])
    assert entry["new_label"] == "src:pkg/deploy.yaml::L1-L2" and code == 0


def test_line_range_with_edited_text_is_refound_by_similarity(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, {"pkg/deploy.yaml": "# new header\n" + DEPLOY_YAML.replace("kind: shm", "kind: shm_v2")})
    _, report = bump_json(skill, path, rev, capsys)
    entry = next(e for e in report["entries"] if e["label"] == LABELS["lines"])
    assert entry["status"] == "changed" and entry["new_label"] == "src:pkg/deploy.yaml::L11-L12"
    assert 0.6 <= entry["similarity"] < 1.0


def test_renamed_heading_is_missing(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, {"docs/guide.md": GUIDE_MD.replace("## Tuning & speed", "## Performance")})
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 1 and statuses(report)[LABELS["md"]] == "missing"


def test_deleted_file_is_missing(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, {"requirements/common.txt": None})
    code, report = bump_json(skill, path, rev, capsys)
    assert code == 1 and statuses(report)[LABELS["file"]] == "missing"


def test_dry_run_writes_nothing(pinned, capsys):
    skill, path, _ = pinned
    before = snapshot(skill)
    rev = advance(path, {"pkg/config.py": "# one\n" + CONFIG_PY})
    code, report = bump_json(skill, path, rev, capsys, "--dry-run")
    assert code == 0 and report["written"] is False
    assert snapshot(skill) == before


def test_forward_then_back_is_byte_identical(pinned, capsys):
    skill, path, first = pinned
    before = snapshot(skill)
    start = CONFIG_PY.index("def add_cli_args")
    end = CONFIG_PY.index("def env_knobs")
    rev = advance(
        path,
        {
            "pkg/config.py": "# header\n" + CONFIG_PY[:start] + CONFIG_PY[end:],
            "pkg/cli.py": CONFIG_PY[start:end].rstrip() + "\n",
        },
    )
    assert bump_json(skill, path, rev, capsys)[0] == 0
    assert snapshot(skill) != before
    assert bump_json(skill, path, first, capsys)[0] == 0
    assert snapshot(skill) == before


def test_interrupted_write_leaves_previous_files(pinned, capsys, monkeypatch):
    skill, path, _ = pinned
    before = snapshot(skill)
    rev = advance(path, {"pkg/config.py": "# one\n" + CONFIG_PY})
    calls = {"n": 0}
    real_fsync = os.fsync

    def dying_fsync(fd):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the process is stopped while the new files are being written
        real_fsync(fd)

    monkeypatch.setattr(writes.os, "fsync", dying_fsync)
    capsys.readouterr()
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", rev]) == 2
    assert snapshot(skill) == before


def test_markdown_report_names_sections(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, {"pkg/config.py": CONFIG_PY.replace("    return timeout\n", "    return 0\n")})
    capsys.readouterr()
    assert (
        main(["bump", "--root", str(skill), "--source", str(path), "--to", rev, "--dry-run", "--format", "markdown"])
        == 1
    )
    out = capsys.readouterr().out
    assert "| changed | `src:pkg/config.py::start`" in out and "`references/branch/README.md:6` (Claims)" in out


def test_drift_against_a_user_checkout(pinned, capsys):
    skill, path, _ = pinned
    advance(path, {"pkg/config.py": CONFIG_PY.replace("    return timeout\n", "    return 0\n")})
    before = snapshot(skill)
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--source", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 changed, 0 missing, 0 cite only files this engine does not ship." in out
    assert "  references/branch/README.md: 1 changed\n    changed  L6 § Claims: func: func\n" in out
    assert out.rstrip().endswith("`omni-skill show LABEL --diff` prints how a cited span differs.")
    assert snapshot(skill) == before


def test_drift_with_no_difference(pinned, capsys):
    skill, path, _ = pinned
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--source", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0 changed, 0 missing" in out and "Every claim the skill makes about code your engine ships holds" in out


def test_drift_never_runs_programs_from_the_users_repository(pinned, capsys, tmp_path):
    skill, path, _ = pinned
    hook, marker = marker_program(tmp_path)
    set_config(
        path,
        {
            ("core", "fsmonitor"): str(hook),
            ("core", "hooksPath"): str(tmp_path),
            ("diff", "external"): str(hook),
            ("core", "pager"): str(hook),
        },
    )
    advance(path, {"pkg/config.py": "# moved\n" + CONFIG_PY})
    marker.unlink(missing_ok=True)  # committing above may itself have run the monitor
    capsys.readouterr()
    main(["drift", "--root", str(skill), "--source", str(path)])
    main(["check", "--root", str(skill), "--source", str(path)])
    assert not marker.exists()


def test_drift_installed_without_package(pinned, capsys, monkeypatch):
    skill, _, _ = pinned
    monkeypatch.setattr("omni_skill.engine.find_installed", lambda: None)
    assert main(["drift", "--root", str(skill), "--installed"]) == 2
    assert "no installed vllm_omni package found" in capsys.readouterr().err


def test_killed_bump_leaves_previous_files(pinned, tmp_path):
    """A real SIGKILL while the new files are being written: the old files stay byte-identical."""
    import subprocess
    import sys

    skill, path, _ = pinned
    before = snapshot(skill)
    rev = advance(path, {"pkg/config.py": "# one\n" + CONFIG_PY})
    script = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / 'scripts')!r})\n"
        "from omni_skill import writes\n"
        "calls = []\n"
        "def dying(fd):\n"
        "    calls.append(fd)\n"
        "    if len(calls) == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "writes.os.fsync = dying\n"
        "from omni_skill.cli import main\n"
        f"main(['bump', '--root', {str(skill)!r}, '--source', {str(path)!r}, '--to', {rev!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert done.returncode == -9
    after = snapshot(skill)
    assert {k: v for k, v in after.items() if not k.rsplit("/", 1)[-1].startswith(".")} == before


def test_drift_installed_from_a_git_checkout(pinned, capsys, monkeypatch, tmp_path):
    from omni_skill.installed import InstalledEngine

    skill, path, _ = pinned
    advance(path, {"pkg/config.py": CONFIG_PY.replace("    return timeout\n", "    return 0\n")})
    engine = InstalledEngine(location=path / "vllm_omni", version="9.9.9", git_dir=path, commit=None)
    monkeypatch.setattr("omni_skill.engine.find_installed", lambda: engine)
    assert main(["drift", "--root", str(skill), "--installed"]) == 1
    out = capsys.readouterr().out
    assert "(vllm-omni 9.9.9)" in out and "    changed  L6 § Claims: func: func\n" in out


def test_find_installed_locates_a_package_without_importing_it(tmp_path, monkeypatch):
    from omni_skill.installed import find_installed

    package = tmp_path / "checkout/vllm_omni"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    git.Repo.init(tmp_path / "checkout")
    monkeypatch.syspath_prepend(str(tmp_path / "checkout"))
    found = find_installed()
    assert found is not None and found.location == package.resolve()
    assert found.git_dir == (tmp_path / "checkout").resolve()


def test_skill_metadata_follows_the_pinned_revision(pinned, capsys):
    skill, path, first = pinned
    text = (
        (skill / "SKILL.md")
        .read_text()
        .replace('  version: "1.0.0"\n', f'  version: "1.0.0"\n  engine-revision: "{"0" * 40}"\n')
    )
    (skill / "SKILL.md").write_text(text)
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    assert f'engine-revision: "{first}"' in (skill / "SKILL.md").read_text()
    rev = advance(path, {"pkg/config.py": "# one\n" + CONFIG_PY})
    assert bump_json(skill, path, rev, capsys)[0] == 0
    assert f'engine-revision: "{rev}"' in (skill / "SKILL.md").read_text()
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text().replace(rev, first))
    capsys.readouterr()
    assert main(["check", "--root", str(skill)]) == 1
    assert "metadata-revision" in capsys.readouterr().out
