"""The native test map's format (`datafiles.NativeTestMap`) is checked without the engine."""

from __future__ import annotations

from pathlib import Path

import git

from conftest import check_after_edit, commit_files, make_skill, new_repo
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


# --- markers, against a fixture engine (with the engine: `check --source`)

TEST_MODULE = """\
import pytest
from tests.helpers.mark import hardware_test

pytestmark = [pytest.mark.core_model, pytest.mark.diffusion]


class TestStage:
    pytestmark = [pytest.mark.cpu]

    @pytest.mark.parametrize("n", [1, 2])
    @pytest.mark.skipif(False, reason="never")
    def test_build(self, n):
        assert n


@hardware_test(res={"cuda": "L4", "rocm": "MI325"}, num_cards={"cuda": 2})
@pytest.mark.asyncio
async def test_gpu():
    pass


@pytest.mark.slow
@pytest.mark.usefixtures(
    "tmp_path",
)
class TestSlow(
    object,
):
    if True:
        pytestmark = pytest.mark.cpu

    def test_y(self):
        pass


SHARED = [pytest.mark.cpu]


class TestShared:
    pytestmark = [*SHARED]

    def test_x(self):
        pass
"""

MARKED_MAP = """\
version: 1
subsystems:
  - name: stage config
    covers: the stage configuration
    source: src:tests/test_marked.py::TestStage
    tests:
      - pytest: tests/test_marked.py::TestStage::test_build[1]
        markers: [core_model, diffusion, cpu, skipif]
        hardware: cpu
      - pytest: tests/test_marked.py::test_gpu
        markers: [core_model, diffusion, asyncio, gpu, L4, cuda, distributed_cuda, MI325, rocm]
        hardware: multi-gpu
"""


def markers_check(tmp_path: Path, text: str, module: str = TEST_MODULE) -> list:
    from omni_skill.markers import check_test_markers
    from omni_skill.skill import collect
    from omni_skill.source import Source

    repo = new_repo(tmp_path / "engine")
    sha = commit_files(repo, {"tests/test_marked.py": module}, "tests")
    root = make_skill(tmp_path / "skill", "# Branch\n\nRead this when: testing.\n", {TEST_MAP_PATH: text})
    return check_test_markers(collect(root).documents.get(TEST_MAP_PATH), Source(tmp_path / "engine", sha))


def test_markers_as_the_module_states_them_hold(tmp_path):
    assert markers_check(tmp_path, MARKED_MAP) == []


def test_a_decorated_class_with_a_multi_line_head_and_a_nested_pytestmark(tmp_path):
    text = MARKED_MAP + (
        "      - pytest: tests/test_marked.py::TestSlow::test_y\n"
        "        markers: [core_model, diffusion, slow, cpu]\n"
        "        hardware: cpu\n"
    )
    assert markers_check(tmp_path, text) == []
    wrong = markers_check(tmp_path / "again", text.replace("diffusion, slow, cpu]", "diffusion, cpu]"))
    assert [f.message for f in wrong] == ["tests/test_marked.py::TestSlow::test_y also carries slow at the revision"]


def test_a_marker_the_test_lacks_and_one_it_has_unlisted_are_findings(tmp_path):
    text = MARKED_MAP.replace("[core_model, diffusion, cpu, skipif]", "[core_model, cpu, skipif, slow]")
    findings = markers_check(tmp_path, text)
    assert [(f.kind, f.line) for f in findings] == [("test-markers", 8), ("test-markers", 8)]
    assert [f.message for f in findings] == [
        "tests/test_marked.py::TestStage::test_build[1] does not carry slow at the revision",
        "tests/test_marked.py::TestStage::test_build[1] also carries diffusion at the revision",
    ]


def test_hardware_test_expansion_counts_cards_per_platform(tmp_path):
    text = MARKED_MAP.replace("distributed_cuda, MI325, rocm]", "MI325, rocm, distributed_rocm]")
    messages = [f.message for f in markers_check(tmp_path, text)]
    assert any("does not carry distributed_rocm" in m for m in messages)
    assert any("also carries distributed_cuda" in m for m in messages)


def test_markers_built_from_other_values_cannot_be_verified(tmp_path):
    text = MARKED_MAP + (
        "      - pytest: tests/test_marked.py::TestShared::test_x\n"
        "        markers: [core_model, diffusion, cpu]\n"
        "        hardware: cpu\n"
    )
    (finding,) = markers_check(tmp_path, text)
    assert "markers cannot be read from the source" in finding.message and "SHARED" in finding.message


def test_check_with_the_engine_reports_markers(tmp_path, capsys):
    markers_check(tmp_path, MARKED_MAP)  # builds the engine and the skill
    engine = tmp_path / "engine"
    sha = git.Repo(engine).head.commit.hexsha
    code, out = check_after_edit(tmp_path / "skill", engine, sha, TEST_MAP_PATH, "asyncio, gpu", "gpu", capsys)
    assert code == 1
    assert f"{TEST_MAP_PATH}:11: test-markers: tests/test_marked.py::test_gpu also carries asyncio" in out


def test_hardware_test_expands_as_the_engine_helper_does():
    import ast

    from omni_skill.markers import Unreadable, _hardware

    cases = {
        'hardware_test(res={"cuda": "L4"})': ["gpu", "L4", "cuda"],
        'hardware_test(res={"cuda": "S5000"}, num_cards=2)': ["gpu", "S5000", "musa", "distributed_musa"],
        'hardware_test(res={"musa": "S5000"})': ["S5000", "musa"],
        'hardware_test(res={"npu": "A2"}, num_cards=4)': ["npu", "A2", "distributed_npu"],
        'hardware_test(res={"npu": "X"})': ["npu"],
        'hardware_test(res={"rocm": "MI325", "xpu": "B60"}, num_cards={"xpu": 2})': [
            "gpu",
            "MI325",
            "rocm",
            "gpu",
            "B60",
            "xpu",
            "distributed_xpu",
        ],
    }
    for text, expected in cases.items():
        assert _hardware(ast.parse(text).body[0].value) == expected, text
    for text in ('hardware_test(res={"tpu": "v5"})', "hardware_test(res=RES)"):
        try:
            _hardware(ast.parse(text).body[0].value)
        except Unreadable:
            continue
        raise AssertionError(text)


def test_hostile_hardware_arguments_are_one_finding_each(tmp_path, capsys):
    """Arguments a checker cannot read as hardware_test reads them: a finding per test, no traceback."""
    module = (
        "import pytest\n\n"
        '@hardware_test(res={"cuda": ["L4"]})\ndef test_list():\n    pass\n\n'
        '@hardware_test(res={"cuda": "L4"}, num_cards="2")\ndef test_text_cards():\n    pass\n\n'
        '@hardware_test(res={"cuda": "L4"}, num_cards={"cuda": 2.5})\ndef test_float_cards():\n    pass\n\n'
        "@hardware_test(res=" + "[" * 90 + "]" * 90 + ")\ndef test_deep():\n    pass\n\n"
        "@hardware_test(num_cards=2)\ndef test_no_res():\n    pass\n"
    )
    names = ["test_list", "test_text_cards", "test_float_cards", "test_deep", "test_no_res"]
    entries = "".join(
        f"      - pytest: tests/test_marked.py::{name}\n        markers: [gpu, L4, cuda]\n        hardware: gpu\n"
        for name in names
    )
    text = MARKED_MAP.split("    tests:\n")[0] + "    tests:\n" + entries
    findings = markers_check(tmp_path, text, module)
    assert len(findings) == len(names)
    assert all("markers cannot be read from the source" in f.message for f in findings)
    assert [f.message.split("::")[1].split(":")[0] for f in findings] == names
