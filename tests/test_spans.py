"""Citations over 60 lines on a page are findings unless listed, with a reason, as whole-definition claims."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from conftest import commit_files, make_skill
from omni_skill.cli import main

LONG_CLASS = "class Big:\n" + "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(60))


@pytest.fixture
def long_skill(engine, tmp_path):
    path, _ = engine
    sha = commit_files(git.Repo(path), {"pkg/big.py": LONG_CLASS}, "a long class")
    skill = make_skill(
        tmp_path / "skill", "# Branch\n\nThe [`Big`][src:pkg/big.py::Big] class; [`m1`][src:pkg/big.py::Big.m1].\n"
    )
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    return skill


def run(skill: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--root", str(skill)])
    return code, capsys.readouterr().out


def test_a_long_citation_is_a_finding_at_its_use(long_skill, capsys):
    code, out = run(long_skill, capsys)
    assert code == 1
    assert "references/branch/README.md:3: span-long: src:pkg/big.py::Big cites 180 lines" in out
    assert "Big.m1" not in out.split("span-long", 1)[1].splitlines()[0]
    assert out.count("span-long") == 1


def test_a_long_citation_named_only_by_a_data_file_is_not_judged(engine, tmp_path, capsys):
    path, _ = engine
    sha = commit_files(git.Repo(path), {"pkg/big.py": LONG_CLASS}, "a long class")
    data = "version: 1\nsettings:\n  - name: x\n    source: src:pkg/big.py::Big\n"
    skill = make_skill(tmp_path / "skill", "# Branch\n\nSee `x`.\n", {"references/branch/data.yaml": data})
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    assert '"file": "references/branch/data.yaml"' in (skill / "evidence/index.json").read_text()
    code, out = run(skill, capsys)
    assert "span-long" not in out


def test_a_listed_whole_definition_passes(long_skill, capsys):
    (long_skill / "evidence/whole-definitions.yaml").write_text(
        "src:pkg/big.py::Big: the page names the class as a whole\n"
    )
    code, out = run(long_skill, capsys)
    assert code == 0, out


def test_a_listing_that_is_not_needed_is_stale(long_skill, capsys):
    (long_skill / "evidence/whole-definitions.yaml").write_text(
        "src:pkg/big.py::Big: the class as a whole\nsrc:pkg/big.py::Big.m1: short\nsrc:pkg/gone.py::X: gone\n"
    )
    code, out = run(long_skill, capsys)
    assert code == 1
    assert "spans-stale: src:pkg/big.py::Big.m1 cites 2 lines, within 60: remove it" in out
    assert "spans-stale: src:pkg/gone.py::X is not cited anywhere: remove it" in out


@pytest.mark.parametrize("text", ["src:pkg/big.py::Big: ''\n", "- a list\n", "a: &x 1\nb: *x\n"])
def test_a_malformed_listing_is_one_finding(long_skill, capsys, text):
    (long_skill / "evidence/whole-definitions.yaml").write_text(text)
    code, out = run(long_skill, capsys)
    assert code == 1 and out.count("spans-invalid") == 1


def test_the_long_spans_report_lists_each_use_with_its_sentence(long_skill):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "benchmarks/long_spans.py"
    page = long_skill / "references/branch/README.md"
    page.write_text(page.read_text().replace("class; [", "class. Also [", 1))
    done = subprocess.run(
        [sys.executable, str(script), "--root", str(long_skill)], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1 of 2 Python citations used in Markdown span more than 100 lines (50.0 %)")
    assert " 180 lines  src:pkg/big.py::Big  (L1-L180)" in lines
    assert "      references/branch/README.md:3: The «`Big`» class." in lines
