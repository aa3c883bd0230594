"""Where agents run the scripts: a missing package is one line and exit 2, never a traceback;
each verb imports only what it uses."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import CONFIG_PY
from omni_skill import cli

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
PACKAGES = ("yaml", "pydantic", "jinja2", "markdown_it", "git")

# A meta-path finder that makes one top-level package unimportable, as on a machine without it.
RUNNER = """
import importlib.abc, sys
blocked = sys.argv[1]
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
sys.path.insert(0, sys.argv[2])
from omni_skill.cli import main
raise SystemExit(main(sys.argv[3:]))
"""


def run_without(package: str, *argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, package, str(SCRIPTS), *argv], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wheels") / "vllm_omni-9.0.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vllm_omni/config/stage_config.py", CONFIG_PY)
        archive.writestr("vllm_omni-9.0.0.dist-info/METADATA", "Version: 9.0.0\n")
    return path


def verbs(wheel: Path, tmp: Path) -> dict[str, list[str]]:
    label = "src:vllm_omni/config/stage_config.py::StagePipelineConfig"
    return {
        "check": ["check"],
        "check --source": ["check", "--source", str(tmp / "no-such-repo")],
        "search-space": ["search-space", "--scope", "env"],
        "drift --wheel": ["drift", "--wheel", str(wheel)],
        "show --wheel": ["show", label, "--wheel", str(wheel)],
        "releases --dry-run": ["releases", "--wheel", str(wheel), "--dry-run"],
        "resolve": ["resolve", "--source", str(tmp / "no-such-repo"), "--dry-run"],
        "bump": ["bump", "--source", str(tmp / "no-such-repo"), "--to", "HEAD", "--dry-run"],
        "install --dry-run": ["install", "--agent", "claude", "--dest", str(tmp / "home"), "--dry-run"],
        "package": ["package", "--output", str(tmp / "out.skill")],
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_every_verb_without_a_package_is_one_line_or_works(package, wheel, tmp_path):
    for name, argv in verbs(wheel, tmp_path).items():
        done = run_without(package, *argv)
        assert "Traceback" not in done.stderr, (name, package, done.stderr)
        if done.returncode == 2 and "needs the Python package" in done.stderr:
            assert done.stderr.count("\n") == 1, (name, package, done.stderr)
            distribution = cli.PACKAGES[package]
            assert f"needs the Python package '{distribution}' — python3 -m pip install {distribution}" in done.stderr
            assert "uv run scripts/omni-skill" in done.stderr


@pytest.mark.parametrize(
    ("argv", "needs"),
    [
        (["search-space"], {"yaml"}),
        (["drift", "--wheel", "WHEEL"], {"yaml", "pydantic", "jinja2", "markdown_it"}),
        (["check"], {"yaml", "pydantic", "jinja2", "markdown_it"}),
    ],
)
def test_a_verb_needs_only_its_own_packages(argv, needs, wheel):
    argv = [str(wheel) if a == "WHEEL" else a for a in argv]
    for package in PACKAGES:
        done = run_without(package, *argv)
        if package in needs:
            assert done.returncode == 2 and "needs the Python package" in done.stderr, (package, done.stderr)
        else:
            assert done.returncode in (0, 1), (argv, package, done.stderr)
            assert "needs the Python package" not in done.stderr


def test_search_space_without_pydantic_says_it_did_not_validate():
    done = run_without("pydantic", "search-space", "--scope", "env", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[")
    assert done.stderr.count("\n") == 1 and "was not validated against its schema" in done.stderr


def test_cli_constants_match_their_owners():
    from omni_skill import install, report, searchspace, source, versions

    assert cli.FORMATS == report.FORMATS
    assert set(cli.AGENTS) == set(install.AGENT_DIRS)
    assert cli.STAGE_TYPES == searchspace.STAGE_TYPES[:-1]
    assert cli.ENV_VAR == source.ENV_VAR
    assert (cli.RELEASES_PATH, cli.VERSIONS_PAGE) == (versions.RELEASES_PATH, versions.VERSIONS_PAGE)


def test_launcher_declares_its_dependencies_for_uv():
    text = (SCRIPTS / "omni-skill").read_text()
    block = text.split("# /// script\n", 1)[1].split("# ///\n", 1)[0]
    for distribution in cli.PACKAGES.values():
        assert f'"{distribution}' in block
    assert 'requires-python = ">=3.10"' in block


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed here")
def test_uv_run_in_place():  # pragma: no cover - only where uv exists
    done = subprocess.run(["uv", "run", str(SCRIPTS / "omni-skill"), "check"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
