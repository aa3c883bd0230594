"""Sub-span citations (`Symbol@L<a>-L<b>`): lines inside a definition, resolved through it."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from conftest import commit_files, make_skill, new_repo
from omni_skill.cli import main
from omni_skill.labels import LabelError, parse_label

ROUTE_PY = '''\
"""Routing (fixture)."""


def helper():
    return 1


def route(request):
    kind = request.kind
    if kind == "audio":
        return encode_audio(request.payload)
    if request.width and request.height:
        return resize(request.payload, request.width, request.height)
    return request.payload


def tail():
    return 2
'''
ROUTE_START = 8  # the line of `def route`
LABEL = "src:vllm_omni/route.py::route@L5-L6"  # the resize branch: lines 12-13 of the file
WHOLE = "src:vllm_omni/route.py::route"
INSERTED = '    if kind == "video":\n        return encode_video(request.payload)\n'


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[Path, Path, str]:
    """(skill, engine, sha): a skill citing the sub-span and the whole function, resolved."""
    path = tmp_path / "engine"
    repo = new_repo(path)
    sha = commit_files(repo, {"vllm_omni/route.py": ROUTE_PY}, "engine")
    skill = make_skill(
        tmp_path / "skill",
        f"# Branch\n\n## Routing\n\nA sized request is [resized][{LABEL}] by [`route`][{WHOLE}].\n",
    )
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    return skill, path, sha


def record(skill: Path, label: str = LABEL) -> dict:
    index = json.loads((skill / "evidence/index.json").read_text())
    return next(r for r in index["records"] if r["label"] == label)


def advance(path: Path, text: str | None) -> str:
    return commit_files(git.Repo(path), {"vllm_omni/route.py": text}, "change")


def bump(skill: Path, path: Path, rev: str, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["bump", "--root", str(skill), "--source", str(path), "--to", rev, "--format", "json", *extra])
    report = json.loads(capsys.readouterr().out)
    return code, next(e for e in report["entries"] if e["label"] == LABEL)


# --- grammar ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["src:a/b.py::Cls.method@L3-L9", "src:a/b.py::f@L1", "src:a/b.py::f#2@L2-L4"])
def test_sub_span_labels_parse_as_their_own_kind(text):
    label = parse_label(text)
    assert label.kind == "subspan" and label.text == text
    assert label.symbol == text.split("::")[1].split("@")[0]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("src:a/b.py::f@L0", "start at L1"),
        ("src:a/b.py::f@L03", "no leading 0"),
        ("src:a/b.py::f@L9-L3", "reversed"),
        ("src:a/b.py::f@L1-L1234567", "at most 6 digits"),
        ("src:a/b.py::f@3-5", "Symbol@L<a>"),
        ("src:a/b.py::f@L1@L2", "Symbol@L<a>"),
        ("src:a/b.py::1f@L1", "malformed python anchor"),
        ("src:a/b.py::@L1", "malformed python anchor"),
    ],
)
def test_malformed_sub_spans_are_label_errors(text, reason):
    with pytest.raises(LabelError, match=reason):
        parse_label(text)


def test_an_at_sign_in_a_yaml_key_is_not_a_sub_span():
    assert parse_label("src:a/b.yaml::key@L1").kind == "yaml"


# --- resolve and check -----------------------------------------------------------------------


def test_resolve_records_the_absolute_lines_and_links_them(pinned):
    skill, _, sha = pinned
    found = record(skill)
    assert (found["kind"], found["start"], found["end"]) == ("subspan", ROUTE_START + 4, ROUTE_START + 5)
    assert found["fingerprint"] != record(skill, WHOLE)["fingerprint"]
    page = (skill / "references/branch/README.md").read_text()
    assert f"[{LABEL}]: https://github.com/vllm-project/vllm-omni/blob/{sha}/vllm_omni/route.py#L12-L13" in page


def test_a_sub_span_past_the_end_of_its_definition_does_not_resolve(pinned, capsys):
    skill, path, sha = pinned
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text().replace("route@L5-L6]", "route@L5-L8]", 1))
    capsys.readouterr()
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha, "--dry-run"]) == 1
    out = capsys.readouterr()
    assert "anchor-missing" in out.out + out.err
    assert "sub-span @L5-L8 runs past the end of 'route', which has 7 line(s) (L8-L14 of the file)" in out.out + out.err


def test_check_with_the_source_holds_for_a_resolved_sub_span(pinned, capsys):
    skill, path, _ = pinned
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 0, capsys.readouterr().out


def test_check_with_the_source_finds_a_sub_span_record_at_other_lines(pinned, capsys):
    skill, path, _ = pinned
    index_path = skill / "evidence/index.json"
    index = json.loads(index_path.read_text())
    for item in index["records"]:
        if item["label"] == LABEL:
            item["start"], item["end"] = item["start"] + 1, item["end"] + 1
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 1
    assert (
        "record-mismatch: src:vllm_omni/route.py::route@L5-L6: span L12-L13 at the revision" in capsys.readouterr().out
    )


# --- bump ------------------------------------------------------------------------------------


def test_bump_when_the_definition_moves_keeps_the_label(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, "# one\n# two\n" + ROUTE_PY)
    code, entry = bump(skill, path, rev, capsys)
    assert code == 0
    assert (entry["status"], entry["new_label"], entry["old_span"], entry["new_span"]) == (
        "moved",
        LABEL,
        "L12-L13",
        "L14-L15",
    )
    assert f"/blob/{rev}/vllm_omni/route.py#L14-L15" in (skill / "references/branch/README.md").read_text()


def test_bump_when_the_lines_move_inside_the_definition_relabels_them(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, ROUTE_PY.replace("    if kind", INSERTED + "    if kind", 1))
    code, entry = bump(skill, path, rev, capsys, "--accept", WHOLE)  # the function as a whole changed
    assert code == 0
    relabelled = "src:vllm_omni/route.py::route@L7-L8"
    assert (entry["status"], entry["new_label"], entry["new_span"]) == ("moved", relabelled, "L14-L15")
    page = (skill / "references/branch/README.md").read_text()
    assert f"[resized][{relabelled}]" in page and LABEL not in page
    assert record(skill, relabelled)["start"] == 14
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 0, capsys.readouterr().out


def test_bump_when_the_lines_are_edited_is_changed(pinned, capsys):
    skill, path, _ = pinned
    rev = advance(path, ROUTE_PY.replace("return resize(", "return resize_to("))
    code, entry = bump(skill, path, rev, capsys, "--accept", WHOLE)
    assert code == 1  # the changed sub-span blocks until accepted
    assert (entry["status"], entry["new_label"]) == ("changed", LABEL)
    assert 0.6 <= entry["similarity"] < 1.0


def test_bump_when_the_lines_move_and_are_edited_is_changed_under_the_new_offsets(pinned, capsys):
    skill, path, _ = pinned
    text = ROUTE_PY.replace("    if kind", INSERTED + "    if kind", 1).replace("return resize(", "return resize_to(")
    rev = advance(path, text)
    code, entry = bump(skill, path, rev, capsys, "--accept-changed")
    assert code == 0
    assert (entry["status"], entry["new_label"]) == ("changed", "src:vllm_omni/route.py::route@L7-L8")


def test_bump_when_the_lines_are_gone_from_the_definition_is_missing(pinned, capsys):
    skill, path, _ = pinned
    branch = "    if request.width and request.height:\n        return resize(request.payload, request.width, request.height)\n"
    rev = advance(path, ROUTE_PY.replace(branch, "    log(kind)\n    count += 1\n"))
    code, entry = bump(skill, path, rev, capsys, "--accept-changed")
    assert code == 1
    assert entry["status"] == "missing" and "not found inside route" in entry["note"]


def test_bump_when_the_definition_is_deleted_is_missing(pinned, capsys):
    skill, path, _ = pinned
    start, end = ROUTE_PY.index("def route"), ROUTE_PY.index("def tail")
    rev = advance(path, ROUTE_PY[:start] + ROUTE_PY[end:])
    code, entry = bump(skill, path, rev, capsys, "--accept-changed")
    assert code == 1 and entry["status"] == "missing" and "no definition of 'route'" in entry["note"]


def test_bump_when_the_definition_moves_to_another_file_is_relocated(pinned, capsys):
    skill, path, _ = pinned
    start, end = ROUTE_PY.index("def route"), ROUTE_PY.index("def tail")
    rev = commit_files(
        git.Repo(path),
        {"vllm_omni/route.py": ROUTE_PY[:start] + ROUTE_PY[end:], "vllm_omni/router.py": ROUTE_PY[start:end]},
        "move route",
    )
    code, entry = bump(skill, path, rev, capsys, "--accept-changed")
    assert code == 0
    assert (entry["status"], entry["new_label"], entry["new_span"]) == (
        "relocated",
        "src:vllm_omni/router.py::route@L5-L6",
        "L5-L6",
    )


# --- drift and show on a folder ----------------------------------------------------------------


def tree(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "tree"
    (folder / "vllm_omni").mkdir(parents=True, exist_ok=True)
    (folder / "vllm_omni/route.py").write_text(text)
    return folder


def drift(skill: Path, folder: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["drift", "--root", str(skill), "--engine-dir", str(folder), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    return code, next(e for e in data["entries"] if e["label"] == LABEL)


def test_drift_on_a_folder_finds_lines_moved_inside_the_definition(pinned, tmp_path, capsys):
    skill, _, _ = pinned
    folder = tree(tmp_path, ROUTE_PY.replace("    if kind", INSERTED + "    if kind", 1))
    code, entry = drift(skill, folder, capsys)
    assert code == 1  # the whole function changed; the sub-span holds
    assert (entry["status"], entry["new_span"]) == ("moved", "L14-L15")


def test_drift_on_a_folder_with_edited_lines_is_changed_at_the_same_offsets(pinned, tmp_path, capsys):
    skill, _, _ = pinned
    folder = tree(tmp_path, ROUTE_PY.replace("return resize(", "return resize_to("))
    code, entry = drift(skill, folder, capsys)
    assert code == 1
    assert (entry["status"], entry["new_span"], entry["similarity"]) == ("changed", "L12-L13", None)


def test_drift_on_a_folder_without_the_definition_is_missing(pinned, tmp_path, capsys):
    skill, _, _ = pinned
    folder = tree(tmp_path, ROUTE_PY.replace("def route(", "def dispatch("))
    code, entry = drift(skill, folder, capsys)
    assert code == 1 and entry["status"] == "missing"


def test_show_prints_the_sub_span_where_the_folder_has_it(pinned, tmp_path, capsys):
    skill, _, _ = pinned
    folder = tree(tmp_path, "# one\n" + ROUTE_PY)
    capsys.readouterr()
    assert main(["show", LABEL, "--root", str(skill), "--engine-dir", str(folder), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["span"]) == ("moved", "L13-L14")
    assert [line["number"] for line in data["lines"]] == [13, 14]
    assert data["lines"][1]["text"].strip().startswith("return resize(")


# --- evals -----------------------------------------------------------------------------------


def eval_findings(tmp_path: Path, cited: str, named: str) -> list[str]:
    """The eval-label findings of an eval naming `named` when the serving-tuning branch cites `cited`."""
    from omni_skill.checks import check_evals
    from omni_skill.index import EvidenceIndex, EvidenceRecord, UsePlace

    label = parse_label(cited)
    record = EvidenceRecord(
        label=cited,
        path=label.path,
        anchor=label.anchor,
        kind=label.kind,
        start=12,
        end=13,
        blob="0" * 40,
        fingerprint="0" * 64,
        uses=[UsePlace(file="references/serving-tuning/streaming.md", line=3)],
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals/serving-tuning.yaml").write_text(
        f"branch: serving-tuning\nevals:\n  - id: e1\n    question: q\n    expected: a\n    labels: ['{named}']\n"
    )
    index = EvidenceIndex(revision="1" * 40, records=[record])
    return [f.message for f in check_evals(tmp_path, index) if f.kind == "eval-label"]


def test_an_eval_naming_a_definition_is_satisfied_by_a_cited_sub_span(tmp_path):
    assert eval_findings(tmp_path, LABEL, WHOLE) == []


def test_an_eval_naming_another_definition_is_not_satisfied_by_a_sub_span(tmp_path):
    other = "src:vllm_omni/route.py::helper"
    assert eval_findings(tmp_path, LABEL, other) == [f"e1: {other} is not cited anywhere in the skill"]


def test_a_sub_span_spelled_with_both_ends_is_not_moved_where_its_lines_stay(tmp_path, capsys):
    path = tmp_path / "engine"
    repo = new_repo(path)
    sha = commit_files(repo, {"vllm_omni/route.py": ROUTE_PY}, "engine")
    label = "src:vllm_omni/route.py::route@L1-L1"
    skill = make_skill(tmp_path / "skill", f"# Branch\n\n## Routing\n\nThe [`route`][{label}] head.\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    folder = tree(tmp_path, ROUTE_PY.replace("def tail():\n    return 2\n", "def tail():\n    return 3\n"))
    capsys.readouterr()
    main(["drift", "--root", str(skill), "--engine-dir", str(folder), "--format", "json"])
    entry = next(e for e in json.loads(capsys.readouterr().out)["entries"] if e["label"] == label)
    assert (entry["status"], entry["new_label"], entry["new_span"]) == ("unchanged", label, "L8")
