"""Release citations (`rel:<X.Y.Z>:<path>::<anchor>`): resolved in the release's wheel, linked at
its tag, checked offline and against the wheels."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from omni_skill.labels import LabelError
from omni_skill.relcite import check_release_citations, parse_rel, resolve_all, url
from omni_skill.trees import WheelTree

MODULE = "def knob(x=1):\n    return x\n\n\nclass Holder:\n    value: int = 3\n"
PAGE = "# Page\n\nIn 1.2.3 the knob is here ([`knob`][rel:1.2.3:vllm_omni/m.py::knob]).\n"


def wheel(tmp_path: Path, version: str, text: str = MODULE) -> WheelTree:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"vllm_omni-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vllm_omni/m.py", text)
        archive.writestr(f"vllm_omni-{version}.dist-info/METADATA", f"Name: vllm-omni\nVersion: {version}\n")
    return WheelTree(path)


def test_a_release_label_parses_to_its_release_and_anchor():
    release, label = parse_rel("rel:0.30.0:vllm_omni/x.py::Cls.method@L2-L4")
    assert (release, label.path, label.anchor, label.kind) == (
        "0.30.0",
        "vllm_omni/x.py",
        "Cls.method@L2-L4",
        "subspan",
    )


@pytest.mark.parametrize("text", ["rel:0.30:vllm_omni/x.py", "rel:1.2.3:../x.py", "src:1.2.3:x.py"])
def test_a_malformed_release_label_is_a_label_error(text):
    with pytest.raises(LabelError):
        parse_rel(text)


def test_a_release_citation_resolves_in_its_wheel_and_links_at_the_tag(tmp_path):
    found, problems = resolve_all({"references/a/p.md": PAGE}, {"1.2.3": wheel(tmp_path, "1.2.3")})
    assert problems == []
    [record] = found.records
    assert (record.release, record.start, record.end) == ("1.2.3", 1, 2)
    assert url(found.repository, record).endswith("/blob/v1.2.3/vllm_omni/m.py#L1-L2")
    assert [(u.file, u.line) for u in record.uses] == [("references/a/p.md", 3)]


def test_a_release_without_its_wheel_is_named(tmp_path):
    _, problems = resolve_all({"references/a/p.md": PAGE}, {"9.9.9": wheel(tmp_path, "9.9.9")})
    assert [p.kind for p in problems] == ["rel-no-wheel"]


def _skill_with_record(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    from omni_skill.index import dump_json
    from omni_skill.relcite import REL_INDEX_PATH

    root = tmp_path / "skill"
    (root / "evidence").mkdir(parents=True)
    found, _ = resolve_all({"references/a/p.md": PAGE}, {"1.2.3": wheel(tmp_path, "1.2.3")})
    (root / REL_INDEX_PATH).write_text(dump_json(found), encoding="utf-8")
    definition = f"[rel:1.2.3:vllm_omni/m.py::knob]: {url(found.repository, found.records[0])}"
    return root, {"references/a/p.md": PAGE + "\n<!-- citations -->\n" + definition + "\n"}


def test_check_accepts_a_defined_release_citation(tmp_path):
    root, pages = _skill_with_record(tmp_path)
    assert check_release_citations(root, pages, None) == []


def test_check_reports_a_missing_definition(tmp_path):
    root, pages = _skill_with_record(tmp_path)
    bare = {"references/a/p.md": PAGE}
    assert [f.kind for f in check_release_citations(root, bare, None)] == ["rel-definition"]


def test_check_with_wheels_finds_a_record_the_wheel_no_longer_matches(tmp_path):
    root, pages = _skill_with_record(tmp_path)
    edited = wheel(tmp_path / "other", "1.2.3", MODULE.replace("return x", "return x + 1"))
    assert [f.kind for f in check_release_citations(root, pages, {"1.2.3": edited})] == ["rel-stale"]


def test_a_line_range_release_citation_resolves(tmp_path):
    page = "# Page\n\nLines ([L5-L6][rel:1.2.3:vllm_omni/m.py::L5-L6]).\n"
    found, problems = resolve_all({"references/a/p.md": page}, {"1.2.3": wheel(tmp_path, "1.2.3")})
    assert problems == [] and [(r.kind, r.start, r.end) for r in found.records] == [("lines", 5, 6)]
