"""`read TARGET`: one section of a page, citations numbered and listed once by file."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_skill
from omni_skill.cli import main

URL = "https://github.com/o/r/blob/abc123/"
PAGE = f"""\
# Placement

Read this when: testing.

## Stage pools

A replica is picked by [`StagePool.pick`][src:pkg/pool.py::StagePool.pick], built by
[`build`][src:pkg/config.py::StageConfig.build] and again [`pick`][src:pkg/pool.py::StagePool.pick].

### Inner

Set `devices` here ([key][src:pkg/deploy.yaml::stages\\[0\\].devices]).

## Releases

In 0.30.0 it moved ([`pick`][rel:0.30.0:pkg/pool.py::StagePool.pick]).

<!-- citations -->
[src:pkg/pool.py::StagePool.pick]: {URL}pkg/pool.py#L10-L20
[src:pkg/config.py::StageConfig.build]: {URL}pkg/config.py#L5
[src:pkg/deploy.yaml::stages\\[0\\].devices]: {URL}pkg/deploy.yaml#L3
[rel:0.30.0:pkg/pool.py::StagePool.pick]: https://github.com/o/r/blob/v0.30.0/pkg/pool.py#L12-L22
"""


DATA = """\
version: 1
settings:
  - name: first
    read_by:
      - src:pkg/a.py::A
    default: 1
  - name: second
    default: 2
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    extra = {"references/branch/p.md": PAGE, "references/branch/data.yaml": DATA}
    return make_skill(tmp_path / "skill", "# Branch\n\nRead this when: testing.\n", extra)


def test_a_data_file_line_reads_its_list_item_whole(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(root, "branch/data.yaml:4", capsys)
    assert code == 0
    assert (
        out
        == "references/branch/data.yaml:3-6\n  - name: first\n    read_by:\n      - src:pkg/a.py::A\n    default: 1\n"
    )


def run(root: Path, target: str, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, str, str]:
    code = main(["read", "--root", str(root), target, *options])
    out, err = capsys.readouterr()
    return code, out, err


def test_line_reads_the_section_of_the_nearest_heading_above(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(root, "references/branch/p.md:13", capsys)  # the blank line after it
    assert code == 0
    assert out.startswith("references/branch/p.md:10-12\n### Inner\n")
    assert "Stage pools" not in out
    assert "Set `devices` here (key[1])." in out
    assert "pkg/deploy.yaml: [1] L3" in out


def test_section_numbers_each_label_once_and_groups_by_file(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(root, "branch/p.md#stage-pools", capsys)
    assert "`StagePool.pick`[1], built by\n`build`[2] and again `pick`[1]." in out
    assert "pkg/pool.py: [1] L10-L20" in out
    assert "pkg/config.py: [2] L5" in out
    assert "### Inner" in out  # a section holds its subsections
    assert "## Releases" not in out
    assert "src:" not in out


def test_release_citations_are_marked_with_their_tag(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(root, "branch/p.md#releases", capsys)
    assert "pkg/pool.py @ v0.30.0: [1] L12-L22" in out


def test_whole_page_stops_at_the_link_definitions(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(root, "branch/p.md", capsys)
    assert "<!-- citations -->" not in out
    assert "https://" not in out
    assert out.count("[src:") == 0


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("branch/missing.md", "not a page of this skill"),
        ("../outside.md", "'..'"),
        ("branch/p.md#no-such-heading", "no heading #no-such-heading"),
        ("branch/p.md:999", "the page's prose has lines 1-"),
        ("branch/p.md:x:y", "not PAGE, PAGE:LINE or PAGE#anchor"),
        ("branch/data.yaml", "give a data file as FILE:LINE"),
        ("branch/data.yaml:99", "the file has lines 1-"),
    ],
)
def test_bad_targets_are_one_line_usage_errors(
    root: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    code, out, err = run(root, target, capsys)
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


SUMMARIZED = f"""\
# Summarized

Read this when: testing. In short: [`pick`][src:pkg/pool.py::StagePool.pick] chooses.

## First

Again [`pick`][src:pkg/pool.py::StagePool.pick] and [`build`][src:pkg/config.py::StageConfig.build].

## Second

Plain.

<!-- citations -->
[src:pkg/pool.py::StagePool.pick]: {URL}pkg/pool.py#L10-L20
[src:pkg/config.py::StageConfig.build]: {URL}pkg/config.py#L5
"""


def test_toc_prints_the_summary_and_each_section_with_its_printed_size(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "references/branch/s.md").write_text(SUMMARIZED)
    code, out, _ = run(root, "branch/s.md", capsys, "--toc")
    assert code == 0
    summary, _, listing = out.partition("\nreferences/branch/s.md: ")
    assert "In short: `pick`[1] chooses." in summary and "## First" not in summary
    assert "pkg/pool.py: [1] L10-L20" in summary and "pkg/config.py" not in summary  # only its own citations
    for anchor in ("first", "second"):
        _, section, _ = run(root, f"branch/s.md#{anchor}", capsys)
        line = next(row for row in listing.splitlines() if row.strip().startswith(f"#{anchor} "))
        assert line.split()[-1] == f"{len(section):,}"
    _, whole, _ = run(root, "branch/s.md", capsys)
    assert listing.startswith(f"{len(whole):,} characters")


def test_toc_lists_subsections_indented_under_their_section(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(root, "branch/p.md", capsys, "--toc")
    rows = [row for row in out.splitlines() if row.lstrip().startswith("#") and "line" in row]
    assert [row.split()[0] for row in rows] == ["#stage-pools", "#inner", "#releases"]
    assert rows[1].startswith("    #inner") and rows[0].startswith("  #stage-pools")


@pytest.mark.parametrize("target", ["branch/p.md#stage-pools", "branch/p.md:3", "branch/data.yaml:3"])
def test_toc_takes_a_bare_page_only(root: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    code, out, err = run(root, target, capsys, "--toc")
    assert code == 2 and out == ""
    assert "--toc takes a Markdown page named bare" in err and len(err.strip().splitlines()) == 1
