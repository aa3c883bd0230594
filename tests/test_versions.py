"""drift without git, show and the release matrix, on fixture wheels, folders and installed packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import git
import pytest

from conftest import CONFIG_PY, DEPLOY_YAML, GUIDE_MD, TEST_PY, commit_files, make_skill, new_repo
from omni_skill.cli import main

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
LABELS = {
    "build": "src:vllm_omni/config.py::StageConfig.build",
    "start": "src:vllm_omni/config.py::start",
    "const": "src:vllm_omni/config.py::MAX_STAGES",
    "yaml": "src:vllm_omni/deploy.yaml::connectors.kind",
    "lines": "src:vllm_omni/deploy.yaml::L10-L11",
    "test": "src:tests/test_stage.py::TestStage.test_build",
}
PINNED = {
    "vllm_omni/__init__.py": "raise RuntimeError('the engine must never be imported')\n",
    "vllm_omni/config.py": CONFIG_PY,
    "vllm_omni/deploy.yaml": DEPLOY_YAML,
    "tests/test_stage.py": TEST_PY,
    "docs/guide.md": GUIDE_MD,
}
MOVED = {"vllm_omni/config.py": "# a new first line\n" + CONFIG_PY}
CHANGED = {"vllm_omni/config.py": CONFIG_PY.replace("    return timeout\n", "    return 0\n")}
GONE = {"vllm_omni/config.py": CONFIG_PY.replace("async def start(", "async def begin(")}


@pytest.fixture(autouse=True)
def no_env_source(monkeypatch):
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


@pytest.fixture
def pinned(tmp_path):
    """A skill citing vllm_omni/ and tests/ files of a fixture engine, resolved at its commit."""
    path = tmp_path / "engine"
    repo = new_repo(path)
    sha = commit_files(repo, PINNED, "engine")
    escaped = {k: v.replace("[", "\\[").replace("]", "\\]") for k, v in LABELS.items()}
    body = "# Branch\n\n## Config\n\n" + "\n".join(f"- {k}: [{k}][{escaped[k]}]" for k in ("build", "start", "const"))
    body += "\n\n## Deploy\n\n" + "\n".join(f"- {k}: [{k}][{escaped[k]}]" for k in ("yaml", "lines"))
    body += "\n\n## Tests\n\n- test: [test][" + escaped["test"] + "]\n"
    skill = make_skill(tmp_path / "skill", body)
    skill_md = skill / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "| versions | [versions](references/serving-tuning/versions.md) |\n")
    (skill / "references/serving-tuning").mkdir(parents=True)
    (skill / "references/serving-tuning/versions.md").write_text("# Versions\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    return skill


def make_wheel(folder: Path, version: str, changes: dict[str, str | None] | None = None, **extra: bytes) -> Path:
    """A wheel of the package files (tests/ and docs/ are not shipped), with METADATA."""
    files = {k: v for k, v in {**PINNED, **(changes or {})}.items() if k.startswith("vllm_omni/") and v is not None}
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"vllm_omni-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        for name, data in extra.items():
            archive.writestr(name.replace("__", "/"), data)
        archive.writestr(
            f"vllm_omni-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: vllm-omni\nVersion: {version}\n"
        )
    return wheel


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def statuses(data: dict) -> dict[str, str]:
    return {e["label"]: e["status"] for e in data["entries"]}


def test_identical_wheel_holds_and_tests_are_not_shipped(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 0
    assert data["counts"] == {"unchanged": 5, "moved": 0, "changed": 0, "missing": 0, "not-shipped": 1}
    assert data["engine"] == {"kind": "wheel", "location": str(wheel), "version": "1.0.0", "revision": ""}
    assert statuses(data)[LABELS["test"]] == "not-shipped"
    verdicts = {s["heading"]: s["verdict"] for s in data["sections"]}
    assert verdicts == {"Config": "holds", "Deploy": "holds", "Tests": "not-shipped"}


def test_moved_definitions_still_hold(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.1.0", MOVED)
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 0
    found = {e["label"]: (e["status"], e["old_span"], e["new_span"]) for e in data["entries"]}
    assert found[LABELS["start"]][0] == "moved"
    old_start = int(found[LABELS["start"]][1].split("-")[0][1:])
    assert found[LABELS["start"]][2].startswith(f"L{old_start + 1}-")
    assert found[LABELS["yaml"]][0] == "unchanged"


def test_changed_definition_marks_its_section(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1
    assert statuses(data)[LABELS["start"]] == "changed"
    config = next(s for s in data["sections"] if s["heading"] == "Config")
    assert config["verdict"] == "re-read" and config["labels"] == [LABELS["start"]]
    assert next(s for s in data["sections"] if s["heading"] == "Deploy")["verdict"] == "holds"


def test_removed_definition_and_file_are_missing(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.3.0", {**GONE, "vllm_omni/deploy.yaml": None})
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1
    found = statuses(data)
    assert found[LABELS["start"]] == "missing"
    assert found[LABELS["yaml"]] == found[LABELS["lines"]] == "missing"
    assert found[LABELS["build"]] == "moved" or found[LABELS["build"]] == "unchanged"
    assert data["counts"]["missing"] == 3


def test_text_report_counts_claims_and_lists_those_that_do_not_hold(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    capsys.readouterr()
    assert main(["drift", "--root", str(pinned), "--wheel", str(wheel)]) == 1
    out = capsys.readouterr().out
    assert "(vllm-omni 1.2.0)" in out
    assert ": 4 hold, 0 changed only cosmetically, 1 changed, 0 missing, 1 cite only files" in out
    assert "  references/branch/README.md: 1 changed\n    changed  L6 § Config: start: start\n" in out


def test_a_change_in_comments_and_docstrings_only_is_cosmetic(pinned, tmp_path, capsys):
    cosmetic = CONFIG_PY.replace(
        "    return timeout\n", '    """Start."""\n    # the timeout, as given\n    return timeout\n'
    )
    wheel = make_wheel(tmp_path / "w", "1.5.0", {"vllm_omni/config.py": cosmetic})
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    entry = next(e for e in data["entries"] if e["label"] == LABELS["start"])
    assert (entry["status"], entry["cosmetic"]) == ("changed", True)
    assert data["claims"]["counts"] == {"holds": 4, "changed-cosmetic": 1, "changed": 0, "missing": 0, "not-shipped": 1}
    assert code == 0  # every claim holds in substance


def test_drift_json_judges_each_claim_by_its_worst_citation(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.3.0", {**GONE, "vllm_omni/deploy.yaml": None})
    _, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    items = {i["text"]: i for i in data["claims"]["items"]}
    assert items["start: start"]["verdict"] == "missing"
    assert items["start: start"]["labels"] == {LABELS["start"]: "missing"}
    assert items["test: test"]["verdict"] == "not-shipped"
    assert len(data["claims"]["items"]) == sum(data["claims"]["counts"].values()) == 6


def test_markdown_report_has_a_row_per_section(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    capsys.readouterr()
    assert main(["drift", "--root", str(pinned), "--wheel", str(wheel), "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert "| branch | `references/branch/README.md` | Config | re-read |" in out
    assert "| branch | `references/branch/README.md` | Deploy | holds |" in out


def unpack(wheel: Path, folder: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def test_engine_dir_matches_the_wheel(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    folder = unpack(wheel, tmp_path / "site")
    _, from_wheel = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    code, from_dir = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(folder))
    assert code == 1
    assert statuses(from_dir) == statuses(from_wheel)
    assert from_dir["engine"]["version"] == "1.2.0"  # read from the dist-info beside the package


def test_engine_dir_may_be_the_package_folder_itself(pinned, tmp_path, capsys):
    folder = unpack(make_wheel(tmp_path / "w", "1.0.0"), tmp_path / "site")
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(folder / "vllm_omni"))
    assert code == 0 and data["counts"]["unchanged"] == 5


def test_engine_dir_source_tree_checks_tests_too(pinned, tmp_path, capsys):
    tree = tmp_path / "tree"
    for rel, text in PINNED.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(tree))
    assert code == 0
    assert data["counts"]["unchanged"] == 6 and data["counts"]["not-shipped"] == 0
    assert data["engine"]["version"] == "unknown"


def test_engine_dir_symlink_out_of_the_tree_is_not_read(pinned, tmp_path, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text(CONFIG_PY)
    folder = unpack(make_wheel(tmp_path / "w", "1.0.0"), tmp_path / "site")
    (folder / "vllm_omni/config.py").unlink()
    (folder / "vllm_omni/config.py").symlink_to(outside)
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(folder))
    assert code == 1
    entry = next(e for e in data["entries"] if e["label"] == LABELS["start"])
    assert entry["status"] == "missing" and "symbolic link out of the engine folder" in entry["note"]


def installed_run(pinned: Path, site: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SCRIPTS)])}
    env.pop("VLLM_OMNI_SOURCE", None)
    command = [sys.executable, "-m", "omni_skill", *argv, "--root", str(pinned), "--installed", "--format", "json"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=pinned)


def test_installed_package_is_read_without_importing_it(pinned, tmp_path):
    site = unpack(make_wheel(tmp_path / "w", "1.2.0", CHANGED), tmp_path / "site-packages")
    done = installed_run(pinned, site, "drift")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["engine"]["kind"] == "installed" and data["engine"]["version"] == "1.2.0"
    assert data["engine"]["location"] == str((site / "vllm_omni").resolve())
    assert statuses(data)[LABELS["start"]] == "changed"
    assert statuses(data)[LABELS["test"]] == "not-shipped"
    assert "must never be imported" not in done.stderr


def test_installed_package_without_metadata_has_an_unknown_version(pinned, tmp_path):
    site = unpack(make_wheel(tmp_path / "w", "1.0.0"), tmp_path / "site-packages")
    for meta in site.glob("*.dist-info/METADATA"):
        meta.unlink()
    done = installed_run(pinned, site, "drift")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["engine"]["version"] == "unknown"


def test_show_prints_the_span_as_the_engine_has_it(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.1.0", MOVED)
    capsys.readouterr()
    assert main(["show", LABELS["start"], "--root", str(pinned), "--wheel", str(wheel)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{LABELS['start']}: moved in wheel ") and "(vllm-omni 1.1.0)" in first
    assert "Pinned: https://github.com/vllm-project/vllm-omni/blob/" in out
    numbered = [line for line in out.splitlines() if " | " in line]
    assert numbered[0].split(" | ", 1)[1] == "async def start(timeout=30):"
    start = CONFIG_PY.splitlines().index("async def start(timeout=30):") + 2  # one line added on top
    assert int(numbered[0].split(" | ")[0]) == start


def test_show_changed_span_exits_1_with_its_new_text(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    code, data = run_json(capsys, "show", LABELS["start"], "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1 and data["status"] == "changed"
    assert [line["text"] for line in data["lines"]][-1] == "    return 0"


def test_show_not_shipped_and_unknown_labels(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    code, data = run_json(capsys, "show", LABELS["test"], "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1 and data["status"] == "not-shipped" and data["lines"] == []
    capsys.readouterr()
    assert main(["show", "src:vllm_omni/config.py::nothing", "--root", str(pinned), "--wheel", str(wheel)]) == 2
    assert "is not a citation of this skill" in capsys.readouterr().err


def test_show_needs_an_engine(pinned, capsys):
    assert main(["show", LABELS["start"], "--root", str(pinned)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give --installed, --engine-dir DIR, --wheel FILE or --source PATH" in err


def releases(pinned: Path, *wheels: Path, extra: tuple[str, ...] = ()) -> int:
    argv = ["releases", "--root", str(pinned)]
    for wheel in wheels:
        argv += ["--wheel", str(wheel)]
    return main([*argv, *extra])


def matrix_files(pinned: Path) -> dict[str, bytes]:
    names = ["evidence/releases.json", "evidence/releases.schema.json", "references/serving-tuning/versions.md"]
    return {name: (pinned / name).read_bytes() for name in names if (pinned / name).exists()}


@pytest.fixture
def wheels(tmp_path):
    folder = tmp_path / "wheels"
    make_wheel(folder, "1.0.0")
    make_wheel(folder, "1.1.0", MOVED)
    make_wheel(folder, "1.2.0", CHANGED)
    make_wheel(folder, "1.10.0", {**GONE, "vllm_omni/deploy.yaml": None})
    return folder


def test_release_matrix_lists_every_citation_per_release(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    data = json.loads((pinned / "evidence/releases.json").read_text())
    assert [r["version"] for r in data["releases"]] == ["1.0.0", "1.1.0", "1.2.0", "1.10.0"]  # version order
    index = json.loads((pinned / "evidence/index.json").read_text())
    assert data["citations"] == {r["label"]: r["fingerprint"] for r in index["records"]}
    by_version = {r["version"]: r for r in data["releases"]}
    assert by_version["1.0.0"]["counts"] == {"unchanged": 5, "moved": 0, "changed": 0, "missing": 0, "not-shipped": 1}
    assert by_version["1.2.0"]["statuses"][LABELS["start"]] == "changed"
    assert by_version["1.10.0"]["statuses"][LABELS["yaml"]] == "missing"
    assert all(set(r["statuses"]) == set(data["citations"]) for r in data["releases"])


def test_versions_page_table_per_section(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    page = (pinned / "references/serving-tuning/versions.md").read_text()
    assert "| [README.md § Config](../branch/README.md#config) | 1.0.0–1.1.0 | 1.2.0 | 1.10.0 |  |" in page
    assert "| [README.md § Deploy](../branch/README.md#deploy) | 1.0.0–1.2.0 | — | 1.10.0 |  |" in page
    assert "| 1.2.0 | 4 | 0 | 1 | 0 | 1 | 1 |" in page
    capsys.readouterr()
    assert main(["check", "--root", str(pinned)]) == 0, capsys.readouterr().out


def test_release_matrix_is_deterministic(pinned, wheels, tmp_path):
    assert releases(pinned, wheels) == 0
    first = matrix_files(pinned)
    for name in first:
        (pinned / name).unlink()
    order = sorted(wheels.glob("*.whl"), reverse=True)
    assert releases(pinned, *order) == 0
    assert matrix_files(pinned) == first


def test_check_finds_a_stale_matrix_and_page(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    page = pinned / "references/serving-tuning/versions.md"
    page.write_text(page.read_text().replace("1.0.0–1.1.0", "1.0.0"))
    capsys.readouterr()
    assert main(["check", "--root", str(pinned)]) == 1
    assert "versions-stale: the page differs from evidence/releases.json" in capsys.readouterr().out
    data = json.loads((pinned / "evidence/releases.json").read_text())
    data["citations"][LABELS["start"]] = "0" * 64
    (pinned / "evidence/releases.json").write_text(json.dumps(data))
    assert main(["check", "--root", str(pinned)]) == 1
    out = capsys.readouterr().out
    assert "releases-stale: its citations differ from the index (0 new, 0 gone, 1 with other fingerprints)" in out
    assert "omni-skill releases --wheel DIR" in out


def test_bump_says_the_matrix_must_be_recomputed(pinned, wheels, tmp_path, capsys):
    assert releases(pinned, wheels) == 0
    engine = tmp_path / "engine"
    rev = commit_files(git.Repo(engine), MOVED, "move")
    capsys.readouterr()
    assert main(["bump", "--root", str(pinned), "--source", str(engine), "--to", rev]) == 0
    assert "evidence/releases.json is stale after this bump: run `omni-skill releases" in capsys.readouterr().err
    assert main(["check", "--root", str(pinned)]) == 1
    assert "releases-stale: computed against" in capsys.readouterr().out


# --- bad input ---------------------------------------------------------------------------------


def one_line_error(capsys, argv: list[str], expected: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err, err


def test_corrupt_and_truncated_wheels(pinned, tmp_path, capsys):
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip at all")
    one_line_error(capsys, ["drift", "--root", str(pinned), "--wheel", str(bad)], "not a readable wheel")
    good = make_wheel(tmp_path / "w", "1.0.0")
    cut = tmp_path / "cut.whl"
    cut.write_bytes(good.read_bytes()[:-40])
    one_line_error(capsys, ["drift", "--root", str(pinned), "--wheel", str(cut)], "not a readable wheel")


def test_corrupt_member_is_a_usage_error(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    data = bytearray(wheel.read_bytes())
    offset = data.find(b"async def") if b"async def" in data else None
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("vllm_omni/config.py")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + 10] ^= 0xFF  # flip a byte inside the compressed member
    assert offset is None or offset >= 0
    wheel.write_bytes(bytes(data))
    one_line_error(
        capsys, ["drift", "--root", str(pinned), "--wheel", str(wheel)], "member vllm_omni/config.py is corrupt"
    )


def test_wheel_without_the_package(pinned, tmp_path, capsys):
    wheel = tmp_path / "other-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("other/__init__.py", "")
        archive.writestr("other-1.0.dist-info/METADATA", "Version: 1.0\n")
    one_line_error(capsys, ["drift", "--root", str(pinned), "--wheel", str(wheel)], "holds none of the cited folders")
    one_line_error(capsys, ["releases", "--root", str(pinned), "--wheel", str(wheel)], "holds none of the cited")


@pytest.mark.parametrize("name", ["vllm_omni/../evil.py", "/etc/evil.py", "vllm_omni\\evil.py"])
def test_unsafe_member_names_refuse_the_wheel(pinned, tmp_path, capsys, name):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(name, "x = 1\n")
    one_line_error(capsys, ["drift", "--root", str(pinned), "--wheel", str(wheel)], "has an unsafe name")


def test_non_utf8_member_is_a_per_citation_finding(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0", {"vllm_omni/config.py": None})
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("vllm_omni/config.py", "caf\xe9 = 1\n".encode("latin-1"))
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1
    entry = next(e for e in data["entries"] if e["label"] == LABELS["start"])
    assert entry["status"] == "missing" and "not valid UTF-8" in entry["note"]


def test_oversized_member_is_never_inflated(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0", {"vllm_omni/config.py": None})
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vllm_omni/config.py", b"#" * (64 * 1024 * 1024))  # 64 MiB, a few kB deflated
    assert wheel.stat().st_size < 1024 * 1024
    code, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    assert code == 1
    entry = next(e for e in data["entries"] if e["label"] == LABELS["start"])
    assert entry["status"] == "missing" and "larger than" in entry["note"]


def test_wheel_given_twice_and_same_version_twice(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    one_line_error(
        capsys, ["releases", "--root", str(pinned), "--wheel", str(wheel), "--wheel", str(wheel)], "given twice"
    )
    other = tmp_path / "x" / "vllm_omni-1.0.0-py3-none-any.whl"
    other.parent.mkdir()
    other.write_bytes(make_wheel(tmp_path / "y", "1.0.0", MOVED).read_bytes())
    one_line_error(
        capsys,
        ["releases", "--root", str(pinned), "--wheel", str(wheel), "--wheel", str(other)],
        "version 1.0.0 is also",
    )
    assert not (pinned / "evidence/releases.json").exists()


def test_a_bad_wheel_among_good_ones_writes_nothing(pinned, wheels, tmp_path, capsys):
    (wheels / "vllm_omni-9.9.9-py3-none-any.whl").write_bytes(b"broken")
    one_line_error(capsys, ["releases", "--root", str(pinned), "--wheel", str(wheels)], "not a readable wheel")
    assert not (pinned / "evidence/releases.json").exists()


def test_engine_dir_that_is_a_file_or_absent(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.0.0")
    one_line_error(
        capsys, ["drift", "--root", str(pinned), "--engine-dir", str(wheel)], "is a file; --engine-dir takes a folder"
    )
    one_line_error(capsys, ["drift", "--root", str(pinned), "--engine-dir", str(tmp_path / "nope")], "no such folder")


def test_releases_folder_without_wheels(pinned, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    one_line_error(capsys, ["releases", "--root", str(pinned), "--wheel", str(tmp_path / "empty")], "no .whl files")


def test_installed_without_a_package(pinned, tmp_path):
    done = installed_run(pinned, tmp_path / "nothing-here", "drift")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no installed vllm_omni package found" in done.stderr


def test_drift_reverifies_a_release_the_matrix_names(pinned, wheels, tmp_path, capsys):
    assert releases(pinned, wheels) == 0
    path = pinned / "evidence/releases.json"
    data = json.loads(path.read_text())
    moved = next(r for r in data["releases"] if r["version"] == "1.1.0")
    assert moved["statuses"][LABELS["start"]] == "moved"
    moved["statuses"][LABELS["start"]] = "unchanged"  # a matrix that is wrong about this release
    path.write_text(json.dumps(data, indent=2) + "\n")
    folder = unpack(wheels / "vllm_omni-1.1.0-py3-none-any.whl", tmp_path / "site")
    _, found = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(folder))
    assert statuses(found)[LABELS["start"]] == "moved"  # verified afresh, not replayed
    assert found["release"] == {"version": "1.1.0", "disagreements": [LABELS["start"]]}


def test_drift_computes_when_a_file_differs_from_every_release(pinned, wheels, tmp_path, capsys):
    assert releases(pinned, wheels) == 0
    folder = unpack(wheels / "vllm_omni-1.1.0-py3-none-any.whl", tmp_path / "site")
    (folder / "vllm_omni/deploy.yaml").write_text(DEPLOY_YAML + "# a local edit\n")
    _, data = run_json(capsys, "drift", "--root", str(pinned), "--engine-dir", str(folder))
    assert data["release"] == {}


def test_show_from_an_engine_dir_and_from_the_pinned_source(pinned, tmp_path, capsys):
    folder = unpack(make_wheel(tmp_path / "w", "1.2.0", CHANGED), tmp_path / "site")
    code, data = run_json(capsys, "show", LABELS["start"], "--root", str(pinned), "--engine-dir", str(folder))
    assert code == 1 and data["status"] == "changed" and data["engine"]["kind"] == "folder"
    engine = tmp_path / "engine"
    code, data = run_json(capsys, "show", LABELS["start"], "--root", str(pinned), "--source", str(engine))
    assert code == 0 and data["status"] == "unchanged" and data["engine"]["kind"] == "git"
    assert data["lines"][0]["text"] == "async def start(timeout=30):"
    assert data["permalink"].endswith(f"#L{data['lines'][0]['number']}-L{data['lines'][-1]['number']}")


def test_a_line_range_edited_inside_is_changed_with_its_new_span(pinned, tmp_path, capsys):
    edited = "# a new first line\n" + DEPLOY_YAML.replace("connectors:\n", "connectors:\n  # a new comment\n")
    wheel = make_wheel(tmp_path / "w", "1.4.0", {"vllm_omni/deploy.yaml": edited})
    _, data = run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel))
    entry = next(e for e in data["entries"] if e["label"] == LABELS["lines"])
    assert (entry["status"], entry["old_span"], entry["new_span"]) == ("changed", "L10-L11", "L11-L13")
    assert entry["similarity"] == 0.8


def test_line_hashes_edited_by_hand_fail_the_check_with_source(pinned, tmp_path, capsys):
    path = pinned / "evidence/index.json"
    data = json.loads(path.read_text())
    record = next(r for r in data["records"] if r["label"] == LABELS["lines"])
    assert len(record["line_hashes"].split()) == record["end"] - record["start"] + 1
    record["line_hashes"] = "00000000 00000000"
    path.write_text(json.dumps(data, indent=2) + "\n")
    capsys.readouterr()
    assert main(["check", "--root", str(pinned), "--source", str(tmp_path / "engine")]) == 1
    assert "line hashes of the cited lines differ from the index" in capsys.readouterr().out


def test_drift_on_a_release_agrees_with_the_matrix(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    _, found = run_json(
        capsys, "drift", "--root", str(pinned), "--wheel", str(wheels / "vllm_omni-1.2.0-py3-none-any.whl")
    )
    assert found["release"] == {"version": "1.2.0", "disagreements": []}


def test_release_matrix_records_the_claims_that_do_not_hold(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    data = json.loads((pinned / "evidence/releases.json").read_text())
    by_version = {r["version"]: r for r in data["releases"]}
    assert by_version["1.0.0"]["claims"] == {next(iter(by_version["1.0.0"]["claims"])): "not-shipped"}
    changed = by_version["1.2.0"]
    assert sorted(changed["claims"].values()) == ["changed", "not-shipped"]
    assert next(k for k, v in changed["claims"].items() if v == "changed").startswith(
        "references/branch/README.md#config@"
    )
    assert changed["claim_counts"] == {"holds": 4, "changed-cosmetic": 0, "changed": 1, "missing": 0, "not-shipped": 1}


def test_check_finds_claim_verdicts_the_pages_no_longer_make(pinned, wheels, capsys):
    assert releases(pinned, wheels) == 0
    page = pinned / "references/branch/README.md"
    text = page.read_text()
    start = f"[start][{LABELS['start']}]"
    page.write_text(text.replace("- const: [const]", f"- const and {start}: [const]"))  # a claim now rests on start too
    assert main(["resolve", "--root", str(pinned), "--source", str(pinned.parent / "engine")]) == 0
    capsys.readouterr()
    assert main(["check", "--root", str(pinned)]) == 1
    assert "releases-stale: release 1.2.0: its claim verdicts differ from the pages' claims" in capsys.readouterr().out


def test_show_diff_prints_the_pinned_text_against_the_engines(pinned, tmp_path, capsys, monkeypatch):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    monkeypatch.setenv("VLLM_OMNI_SOURCE", str(tmp_path / "engine"))
    capsys.readouterr()
    assert main(["show", LABELS["start"], "--root", str(pinned), "--wheel", str(wheel), "--diff"]) == 1
    out = capsys.readouterr().out
    assert "\n-    return timeout\n+    return 0\n" in out
    assert "--- vllm_omni/config.py L" in out and "(pinned)" in out


def test_show_diff_without_the_pinned_source_says_so_and_prints_the_span(pinned, tmp_path, capsys):
    wheel = make_wheel(tmp_path / "w", "1.2.0", CHANGED)
    capsys.readouterr()
    assert main(["show", LABELS["start"], "--root", str(pinned), "--wheel", str(wheel), "--diff"]) == 1
    out = capsys.readouterr().out
    assert "the diff needs the pinned text, which the skill does not store: set VLLM_OMNI_SOURCE" in out
    assert "|     return 0\n" in out and "+    return 0" not in out


@pytest.mark.parametrize("changes", [CHANGED, MOVED, {**GONE, "vllm_omni/deploy.yaml": None}])
def test_drift_forked_and_in_one_process_agree(pinned, tmp_path, capsys, monkeypatch, changes):
    from omni_skill import parallel

    wheel = make_wheel(tmp_path / "w", "1.6.0", changes)
    found = []
    for count in (1, 2):
        monkeypatch.setattr(parallel, "cpus", lambda count=count: count)
        found.append(run_json(capsys, "drift", "--root", str(pinned), "--wheel", str(wheel)))
    assert found[0] == found[1]
