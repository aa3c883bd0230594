"""Agent Skills rules enforced by `check`: one violation per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SKILL_MD, make_skill
from omni_skill.findings import Finding
from omni_skill.structure import check_structure

LINK = "\n[branch](references/branch/README.md)\n"


def findings_for(
    tmp_path: Path, skill_md: str | None = None, page: str = "# Branch\n", extra=None, installed=False
) -> list[Finding]:
    root = make_skill(tmp_path / "vllm-omni", page, extra)
    if skill_md is not None:
        (root / "SKILL.md").write_text(skill_md)
    return check_structure(root, installed)


def kinds(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.kind, f.line) for f in findings]


def test_valid_skill_has_no_findings(tmp_path):
    assert findings_for(tmp_path) == []


def test_missing_frontmatter(tmp_path):
    assert kinds(findings_for(tmp_path, "# No frontmatter\n" + LINK)) == [("frontmatter-invalid", 1)]


def test_unclosed_frontmatter(tmp_path):
    assert kinds(findings_for(tmp_path, "---\nname: vllm-omni\n" + LINK)) == [("frontmatter-invalid", 1)]


def test_frontmatter_not_a_mapping(tmp_path):
    assert kinds(findings_for(tmp_path, "---\n- a\n---\n" + LINK)) == [("frontmatter-invalid", 2)]


def test_unknown_key(tmp_path):
    text = SKILL_MD.replace("license:", "version: 1.0.0\nlicense:")
    assert kinds(findings_for(tmp_path, text)) == [("frontmatter-key", 4)]


@pytest.mark.parametrize("name", ["VLLM-omni", "-vllm-omni", "vllm--omni", "vllm-omni-", "x" * 65])
def test_bad_name(tmp_path, name):
    text = SKILL_MD.replace("name: vllm-omni", f"name: {name}")
    assert ("frontmatter-name", 2) in kinds(findings_for(tmp_path, text))


def test_name_must_be_vllm_omni(tmp_path):
    text = SKILL_MD.replace("name: vllm-omni", "name: other-skill")
    assert kinds(findings_for(tmp_path, text)) == [("frontmatter-name", 2)]


def test_installed_copy_name_must_equal_folder(tmp_path):
    root = make_skill(tmp_path / "wrong-folder", "# Branch\n")
    assert kinds(check_structure(root, installed=True)) == [("frontmatter-name", 2)]
    assert check_structure(root, installed=False) == []


def test_description_too_long(tmp_path):
    text = SKILL_MD.replace("Explains the fixture engine. Use when testing.", "x" * 1025)
    assert kinds(findings_for(tmp_path, text)) == [("frontmatter-description", 3)]


def test_description_with_angle_brackets(tmp_path):
    text = SKILL_MD.replace("Use when testing.", "Use for <tags>.")
    assert kinds(findings_for(tmp_path, text)) == [("frontmatter-description", 3)]


def test_metadata_values_must_be_strings(tmp_path):
    text = SKILL_MD.replace('version: "1.0.0"', "version: 1.0")
    assert kinds(findings_for(tmp_path, text)) == [("frontmatter-metadata", 5)]


def test_line_budget(tmp_path):
    assert ("size-budget", 500) in kinds(findings_for(tmp_path, SKILL_MD + "line\n" * 500))


def test_token_budget(tmp_path):
    text = SKILL_MD + ("word " * 100 + "\n") * 60
    found = {(f.file, f.kind) for f in findings_for(tmp_path, text)}
    assert found == {("SKILL.md", "size-budget"), ("references/branch/README.md", "size-budget")}  # and the route


def test_routing_target_must_exist(tmp_path):
    text = SKILL_MD + "| later | [gone](references/gone/README.md) |\n"
    assert kinds(findings_for(tmp_path, text)) == [("link-broken", 14)]


def test_orphan_page(tmp_path):
    found = findings_for(tmp_path, extra={"references/branch/lonely.md": "# Lonely\n"})
    assert [(f.kind, f.file) for f in found] == [("orphan", "references/branch/lonely.md")]


def test_page_two_hops_deep_is_an_orphan(tmp_path):
    extra = {"references/branch/a.md": "# A\n\n[b](b.md)\n", "references/branch/b.md": "# B\n"}
    found = findings_for(tmp_path, page="# Branch\n\n[a](a.md)\n", extra=extra)
    assert [(f.kind, f.file) for f in found] == [("orphan", "references/branch/b.md")]


def test_router_must_link_entry_pages_only(tmp_path):
    extra = {"references/branch/deep/page.md": "# Deep\n"}
    text = SKILL_MD + "| deep | [deep](references/branch/deep/page.md) |\n"
    assert ("routing-depth", 0) in kinds(findings_for(tmp_path, text, extra=extra))


def test_page_too_long(tmp_path):
    found = findings_for(tmp_path, page="# Branch\n" + "x\n" * 300)
    assert [(f.kind, f.file) for f in found] == [("size-budget", "references/branch/README.md")]


def test_broken_link_in_a_page(tmp_path):
    found = findings_for(tmp_path, page="# Branch\n\nSee [x](missing.md).\n")
    assert kinds(found) == [("link-broken", 3)]


def test_link_to_a_missing_heading(tmp_path):
    extra = {"references/branch/a.md": "# A\n\n## Real part\n"}
    page = "# Branch\n\n[ok](a.md#real-part) [self](#branch)\n[bad](a.md#gone) [bad self](#nope)\n"
    found = findings_for(tmp_path, page=page, extra=extra)
    assert [(f.kind, f.line, f.message) for f in found] == [
        ("link-broken", 4, "no heading #gone in references/branch/a.md"),
        ("link-broken", 4, "no heading #nope in references/branch/README.md"),
    ]


def test_page_prose_over_its_token_budget(tmp_path):
    page = "# Branch\n\n" + ("word " * 5000 + "\n") * 5
    findings = findings_for(tmp_path, page=page)
    assert any(f.kind == "size-budget" and "page prose is about" in f.message for f in findings)


def test_link_definitions_do_not_count_as_prose(tmp_path):
    definitions = "".join(f"[src:a.py::X{i}]: https://example.invalid/{'x' * 200}\n" for i in range(300))
    page = "# Branch\n\nShort.\n\n<!-- citations -->\n" + definitions
    findings = findings_for(tmp_path, page=page)
    assert not any("prose" in f.message for f in findings)


def test_skill_md_and_an_entry_page_over_the_routing_budget(tmp_path):
    page = "# Branch\n\n" + ("word " * 3000 + "\n") * 3
    findings = findings_for(tmp_path, page=page)
    assert any(f.kind == "size-budget" and "an agent loads both to route" in f.message for f in findings)


def literal_pages(tmp_path: Path, first: str, second: str) -> list[Finding]:
    page = f"# Branch\n\n[a](a.md) [b](b.md)\n\n{first}\n"
    extra = {"references/branch/a.md": f"# A\n\n{second}\n", "references/branch/b.md": "# B\n"}
    return [f for f in findings_for(tmp_path, page=page, extra=extra) if f.kind == "literal-conflict"]


def test_two_pages_state_different_values_for_one_label(tmp_path):
    found = literal_pages(
        tmp_path,
        "The wait is `--init-timeout` (default 600) in [`run`][src:pkg/a.py::run].",
        "| `--init-timeout` = 300 | [`run`][src:pkg/a.py::run] |",
    )
    assert [(f.file, f.line, f.label) for f in found] == [("references/branch/a.md", 3, "src:pkg/a.py::run")]
    assert "`--init-timeout = 300`" in found[0].message and "README.md:5" in found[0].message


def test_same_value_other_label_or_two_labels_are_not_a_conflict(tmp_path):
    found = literal_pages(
        tmp_path,
        "Set `x = 1` ([`run`][src:pkg/a.py::run]). Set `y = 2` ([`run`][src:pkg/a.py::run]).",
        "Set `x = 1` ([`run`][src:pkg/a.py::run]). Set `y = 3` ([`go`][src:pkg/a.py::go]). "
        "Set `x = 5` ([`run`][src:pkg/a.py::run], [`go`][src:pkg/a.py::go]).",
    )
    assert found == []
