"""The native test map's format (`datafiles.NativeTestMap`) is checked without the engine."""

from __future__ import annotations

from pathlib import Path

from conftest import make_skill
from omni_skill.cli import main
from omni_skill.datafiles import TEST_MAP_PATH

TEST_MAP = """\
version: 1
subsystems:
  - name: stage config
    covers: the stage configuration
    source: src:pkg/config.py::StageConfig
    tests:
      - pytest: tests/test_stage.py::TestStage::test_build
        markers: [core_model, cpu]
        hardware: cpu
      - pytest: tests/test_stage.py::test_plain
        markers: [core_model, gpu, L4, cuda, distributed_cuda]
        hardware: multi-gpu
"""


def check_findings(tmp_path: Path, text: str, capsys) -> list[str]:
    root = make_skill(tmp_path / "skill", "# Branch\n\nRead this when: testing.\n", {TEST_MAP_PATH: text})
    main(["check", "--root", str(root)])
    return [line for line in capsys.readouterr().out.splitlines() if "test-map-invalid" in line]


def test_a_well_formed_map_passes(tmp_path, capsys):
    assert check_findings(tmp_path, TEST_MAP, capsys) == []


def test_hardware_must_follow_the_markers(tmp_path, capsys):
    text = TEST_MAP.replace("hardware: multi-gpu", "hardware: gpu")
    (finding,) = check_findings(tmp_path, text, capsys)
    assert "subsystems.0.tests.1" in finding and "hardware is 'gpu' but the markers ask for 'multi-gpu'" in finding


def test_a_test_listed_twice_is_a_finding(tmp_path, capsys):
    text = TEST_MAP.replace("tests/test_stage.py::test_plain", "tests/test_stage.py::TestStage::test_build")
    (finding,) = check_findings(tmp_path, text, capsys)
    assert "test 'tests/test_stage.py::TestStage::test_build' is listed twice" in finding


def test_unknown_keys_and_bad_node_ids_are_findings(tmp_path, capsys):
    text = TEST_MAP.replace("    covers:", "    colour: red\n    covers:").replace(
        "tests/test_stage.py::test_plain", "x.py"
    )
    findings = check_findings(tmp_path, text, capsys)
    assert any("subsystems.0.colour" in f for f in findings)
    assert any("subsystems.0.tests.1.pytest" in f for f in findings)
