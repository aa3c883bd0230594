"""The CLI end to end through main(argv): resolve, check, exit codes and messages."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import git
import pytest
import yaml

from conftest import make_skill
from omni_skill.cli import main
from omni_skill.searchspace import SEARCH_SPACE_PATH


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def resolve(skill: Path, engine: tuple[Path, str], *extra: str) -> int:
    path, sha = engine
    return main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha, *extra])


def check(skill: Path, engine: tuple[Path, str] | None = None, *extra: str) -> int:
    args = ["check", "--root", str(skill), *extra]
    if engine:
        args += ["--source", str(engine[0])]
    return main(args)


@pytest.fixture(autouse=True)
def no_env_source(monkeypatch):
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


def test_resolve_then_check_with_source_passes(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    assert check(skill, engine) == 0
    out = capsys.readouterr().out
    assert "check: ok: 0 findings; 5 citations in 4 engine files" in out
    page = (skill / "references/branch/README.md").read_text()
    sha = engine[1]
    assert (
        f"[src:pkg/config.py::StageConfig.max_num_seqs]: https://github.com/vllm-project/vllm-omni/blob/{sha}/pkg/config.py#L17\n"
        in page
    )
    assert (
        f"[src:pkg/deploy.yaml::stages\\[0\\].engine_args.max_num_seqs]: https://github.com/vllm-project/vllm-omni/blob/{sha}/pkg/deploy.yaml#L5\n"
        in page
    )
    assert (
        f"[src:requirements/common.txt]: https://github.com/vllm-project/vllm-omni/blob/{sha}/requirements/common.txt\n"
        in page
    )


def test_resolve_is_deterministic_and_idempotent(skill, engine, tmp_path):
    assert resolve(skill, engine) == 0
    first = snapshot(skill)
    assert resolve(skill, engine) == 0
    assert snapshot(skill) == first
    twin = tmp_path / "twin"
    shutil.copytree(skill, twin)
    for rel in ("evidence/index.json", "provenance.json"):
        (twin / rel).unlink()
    assert resolve(twin, engine) == 0
    assert snapshot(twin) == first


def test_provenance_records_companion_requirement(skill, engine):
    assert resolve(skill, engine) == 0
    provenance = json.loads((skill / "provenance.json").read_text())
    assert provenance["revision"] == engine[1]
    assert provenance["companion"] == {
        "package": "vllm",
        "requirement": "vllm==0.9.1",
        "source": "requirements/common.txt:2",
    }
    assert provenance["verification"] == {"tool_version": "1.0.0", "citations": 5, "files": 4, "result": "verified"}


def test_index_schema_is_published_and_matches(skill, engine):
    assert resolve(skill, engine) == 0
    schema = json.loads((skill / "evidence/index.schema.json").read_text())
    assert schema["title"] == "vllm-omni skill evidence index"
    assert "EvidenceRecord" in schema["$defs"]


def test_check_without_source_names_skipped_checks(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill) == 0
    out = capsys.readouterr().out
    assert "skipped records:" in out and "skipped defaults:" in out and "skipped tests:" in out
    assert "VLLM_OMNI_SOURCE" in out


def test_check_json_and_markdown_formats(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill, None, "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["ok"] is True
        and data["citations"] == 5
        and [s["check"] for s in data["skipped"]] == ["records", "defaults", "tests", "models"]
    )
    assert check(skill, None, "--format", "markdown") == 0
    assert capsys.readouterr().out.startswith("### vllm-omni skill `check`")


def write_page(skill: Path, body: str) -> None:
    (skill / "references/branch/README.md").write_text(body, encoding="utf-8")


@pytest.mark.parametrize(
    ("label", "kind", "message"),
    [
        ("src:pkg/missing.py::X", "path-missing", "pkg/missing.py does not exist"),
        ("src:pkg/config.py::Nothing", "anchor-missing", "no definition of 'Nothing'"),
        ("src:pkg/config.py::Alias", "anchor-ambiguous", "defined 2 times"),
        ("src:pkg/link.py::StageConfig", "file-unreadable", "symbolic link"),
        ("src:data/blob.bin", "file-unreadable", "binary"),
        ("src:data/latin1.txt", "file-unreadable", "not valid UTF-8"),
        ("src:docs/guide.md::#nope", "anchor-missing", "no heading"),
    ],
)
def test_resolve_reports_unresolvable_labels_and_writes_nothing(skill, engine, capsys, label, kind, message):
    write_page(skill, f"# Branch\n\nSee [x][{label}].\n")
    before = snapshot(skill)
    assert resolve(skill, engine) == 1
    out = capsys.readouterr().out
    assert f"references/branch/README.md:3: {kind}: " in out and message in out
    assert snapshot(skill) == before


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("src:../pkg/config.py", "'..'"),
        ("src:/pkg/config.py", "absolute path"),
        ("src:pkg/config.py::9x", "malformed python anchor"),
    ],
)
def test_bad_label_is_a_finding_with_file_and_line(skill, engine, capsys, label, message):
    write_page(skill, f"# Branch\n\ntext\nSee [x][{label}].\n")
    assert resolve(skill, engine) == 1
    out = capsys.readouterr().out
    assert "references/branch/README.md:4: label-invalid:" in out and message in out


def test_use_without_definition_and_definition_without_use(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    page = skill / "references/branch/README.md"
    text = page.read_text()
    text = text.replace("[src:requirements/common.txt]: ", "[src:requirements/other.txt]: ")
    page.write_text(text)
    capsys.readouterr()
    assert check(skill) == 1
    out = capsys.readouterr().out
    assert "definition-missing: src:requirements/common.txt has no definition" in out
    assert "definition-unused: src:requirements/other.txt is defined but never cited" in out


def test_label_defined_twice_with_different_urls(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "[src:requirements/common.txt]: https://example.invalid/x\n")
    capsys.readouterr()
    assert check(skill) == 1
    assert (
        "definition-conflict: src:requirements/common.txt is defined 2 times with different URLs"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("github.com/vllm-project/vllm-omni/blob/", "github.com/someone/fork/blob/", "URL points outside"),
        ("/blob/{sha}/", "/blob/" + "a" * 40 + "/", "another revision"),
        ("/pkg/config.py#L17", "/pkg/config.py#L18", "the index says"),
    ],
)
def test_url_that_does_not_match_index_and_provenance(skill, engine, capsys, old, new, message):
    assert resolve(skill, engine) == 0
    page = skill / "references/branch/README.md"
    text = page.read_text()
    line = next(line for line in text.splitlines() if line.startswith("[src:pkg/config.py::StageConfig.max_num_seqs]"))
    page.write_text(text.replace(line, line.replace(old.format(sha=engine[1]), new)))
    capsys.readouterr()
    assert check(skill) == 1
    out = capsys.readouterr().out
    assert "url-mismatch" in out and message in out


def test_index_edited_by_hand_fails_with_source(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    path = skill / "evidence/index.json"
    data = json.loads(path.read_text())
    data["records"][0]["fingerprint"] = "0" * 64
    path.write_text(json.dumps(data, indent=2) + "\n")
    capsys.readouterr()
    assert check(skill) == 0  # without the engine the hash cannot be recomputed
    assert check(skill, engine) == 1
    assert "record-mismatch" in capsys.readouterr().out


def test_stale_index_after_a_new_citation(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text().replace("# Branch\n", "# Branch\n\nAlso [t][src:pkg/config.py::TIMEOUT].\n"))
    capsys.readouterr()
    assert check(skill) == 1
    out = capsys.readouterr().out
    assert "index-stale: src:pkg/config.py::TIMEOUT is not in the evidence index" in out


def test_revision_not_in_repository_is_a_usage_error(skill, engine, capsys):
    path, _ = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", "b" * 40]) == 2
    err = capsys.readouterr().err
    assert err.startswith("omni-skill resolve: error: ") and "is not in this repository" in err
    assert "Traceback" not in err


def test_source_that_is_not_a_repository(skill, tmp_path, capsys):
    assert main(["resolve", "--root", str(skill), "--source", str(tmp_path), "--revision", "HEAD"]) == 2
    assert "not a git repository" in capsys.readouterr().err


def test_shallow_clone_without_the_revision(skill, engine, tmp_path, capsys):
    path, first = engine
    repo = git.Repo(path)
    from conftest import commit_files

    commit_files(repo, {"pkg/extra.py": "X = 1\n"}, "second")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--bare", "--depth", "1", f"file://{path}", str(shallow)], check=True)
    assert main(["resolve", "--root", str(skill), "--source", str(shallow), "--revision", first]) == 2
    err = capsys.readouterr().err
    assert "is not in this repository (the clone is shallow" in err


def test_bare_repository_and_environment_variable(skill, engine, tmp_path, monkeypatch, capsys):
    path, sha = engine
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(path), str(bare)], check=True)
    monkeypatch.setenv("VLLM_OMNI_SOURCE", str(bare))
    assert main(["resolve", "--root", str(skill), "--revision", sha]) == 0
    assert main(["check", "--root", str(skill)]) == 0
    out = capsys.readouterr().out
    assert (
        "skipped" not in out
        and "checks run: structure, labels, definitions, data, evals, index, spans, records, defaults, tests, models"
        in out
    )


def test_work_tree_is_never_read(skill, engine, capsys):
    path, _ = engine
    (path / "pkg/config.py").write_text("# edited in the work tree only\n")
    assert resolve(skill, engine) == 0
    assert check(skill, engine) == 0


def test_malformed_frontmatter(skill, engine, capsys):
    assert resolve(skill, engine) == 0
    (skill / "SKILL.md").write_text("---\nname: [unclosed\n---\n# x\n")
    capsys.readouterr()
    assert check(skill) == 1
    assert "SKILL.md:2: frontmatter-invalid: frontmatter is not valid YAML" in capsys.readouterr().out


def test_claimed_defaults_with_source(tmp_path, engine, capsys):
    entries = [
        ("max_num_seqs", "src:pkg/config.py::StageConfig.max_num_seqs", None, 64, "int"),
        ("ratio", "src:pkg/config.py::StageConfig.ratio", None, 0.9, "float"),
        ("replicas", "src:pkg/config.py::StageConfig.build", "replicas", 1, "int"),
        ("mode", "src:pkg/config.py::StageConfig.build", "mode", "ar", "str"),
        ("timeout_flag", "src:pkg/config.py::add_cli_args", "--stage-init-timeout", 300, "int"),
        ("chunk", "src:pkg/config.py::env_knobs", "OMNI_CHUNK", "16", "int"),
        ("flag", "src:pkg/config.py::env_knobs", "OMNI_FLAG", None, "bool"),
        ("stages_max", "src:pkg/config.py::MAX_STAGES", None, 8, "int"),
        ("deploy_seqs", "src:pkg/deploy.yaml::stages[0].engine_args.max_num_seqs", None, 32, "int"),
        ("wrong", "src:pkg/config.py::StageConfig.devices", None, "1", "str"),
        ("factory", "src:pkg/config.py::StageConfig.tags", None, [], "list"),
        ("no_default", "src:pkg/config.py::add_cli_args", "--no-default", 1, "str"),
    ]
    settings = []
    for name, source, param, default, kind in entries:
        setting = {"name": name, "scope": "per-stage", "source": source, "read_by": [source], "default": default}
        setting.update({"type": kind, "stage_types": ["all"], "label": "existing setting", "measure": "latency"})
        if param:
            setting["param"] = param
        settings.append(setting)
    skill = make_skill(tmp_path / "skill", "# Branch\n\nSee [the space](search-space.yaml).\n")
    (skill / "references/branch/search-space.yaml").write_text(yaml.safe_dump({"version": 1, "settings": settings}))
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill, engine) == 1
    out = capsys.readouterr().out
    findings = [line for line in out.splitlines() if line.startswith("references/")]
    assert len(findings) == 3, out
    assert "default-mismatch: src:pkg/config.py::StageConfig.devices: claims default '1', the source says '0'" in out
    assert "default-not-literal: src:pkg/config.py::StageConfig.tags" in out and "default_factory" in out
    assert "line 19: default_factory" in out  # the file's line, not the line within the cited block
    assert "default-absent: src:pkg/config.py::add_cli_args" in out


def test_claimed_types_with_source(tmp_path, engine, capsys):
    entries = [  # (name, source, param, claimed type); the source states int, str, float, str, none
        ("max_num_seqs", "src:pkg/config.py::StageConfig.max_num_seqs", None, "float"),
        ("devices", "src:pkg/config.py::StageConfig.devices", None, "enum"),  # a str may hold an enum
        ("ratio", "src:pkg/config.py::StageConfig.ratio", None, "float"),
        ("no_default", "src:pkg/config.py::add_cli_args", "--no-default", "path"),  # a str may hold a path
        ("chunk", "src:pkg/config.py::env_knobs", "OMNI_CHUNK", "bool"),  # the environment states no type
        ("replicas", "src:pkg/config.py::StageConfig.build", "replicas", "str"),
        ("timeout_flag", "src:pkg/config.py::add_cli_args", "--stage-init-timeout", "int"),
    ]
    settings = [
        {"name": name, "scope": "per-stage", "source": source, "read_by": [source], "type": kind}
        | ({"param": param} if param else {})
        | {"stage_types": ["all"], "label": "existing setting", "measure": "latency"}
        for name, source, param, kind in entries
    ]
    space = yaml.safe_dump({"version": 1, "settings": settings})
    skill = make_skill(tmp_path / "skill", "# Branch\n\nRead this when: testing.\n", {SEARCH_SPACE_PATH: space})
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill, engine) == 1
    found = [line for line in capsys.readouterr().out.splitlines() if "type-mismatch" in line]
    assert [line.split(": ", 2)[2] for line in found] == [
        "max_num_seqs: claims type 'float', src:pkg/config.py::StageConfig.max_num_seqs states 'int'",
        "replicas: claims type 'str', src:pkg/config.py::StageConfig.build states 'int'",
    ]


def test_source_type_reads_annotations_and_add_argument():
    from omni_skill.claims import source_type

    module = ast.parse(
        "def f(p):\n"
        "    p.add_argument('--a', action='store_true')\n"
        "    p.add_argument('--b', choices=['x', 'y'])\n"
        "    p.add_argument('--c', action=argparse.BooleanOptionalAction)\n"
        "    p.add_argument('--d', type=float)\n"
        "    p.add_argument('--e', action='append')\n"
        "    p.add_argument('--f', type=parse_size)\n"
    )
    func = module.body[0]
    assert [source_type(func, f"--{x}") for x in "abcdef"] == ["bool", "enum", "bool", "float", None, None]
    fields = ast.parse(
        "x: int | None = 1\ny: Optional[dict[str, int]] = None\nz: Literal['a', 'b'] = 'a'\n"
        "w: pathlib.Path = p\nv: int | str = 1\nu: MyType = 1\n"
    ).body
    assert [source_type(node, None) for node in fields] == ["int", "dict", "enum", "path", None, None]


def test_pytest_references_must_exist(skill, engine, capsys):
    page = skill / "references/branch/README.md"
    page.write_text(
        page.read_text()
        + "\n```bash\npytest tests/test_stage.py::TestStage::test_build\npytest tests/test_stage.py::test_plain[x]\n"
        + "pytest tests/test_stage.py::test_gone\npytest tests/test_missing.py\n```\n"
    )
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill, engine) == 1
    out = capsys.readouterr().out
    assert "test-missing: tests/test_stage.py::test_gone is not defined" in out
    assert "test-missing: test file tests/test_missing.py does not exist" in out
    assert out.count("test-missing") == 2


def test_submodule_entry_is_a_finding(skill, engine, capsys):
    path, _ = engine
    repo = git.Repo(path)
    repo.git.update_index("--add", "--cacheinfo", f"160000,{'c' * 40},vendor/lib")
    sha = repo.index.commit("add a submodule entry").hexsha
    write_page(skill, "# Branch\n\nSee [x][src:vendor/lib].\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 1
    assert "file-unreadable: vendor/lib is a submodule entry at the revision" in capsys.readouterr().out


def test_non_utf8_page_is_a_finding_with_its_line(skill, capsys):
    (skill / "references/branch/README.md").write_bytes(b"# Branch\n\xff\xfe\n")
    assert main(["check", "--root", str(skill)]) == 1
    out = capsys.readouterr().out
    assert "references/branch/README.md:2: encoding: not valid UTF-8 (byte 9)" in out
    assert main(["resolve", "--root", str(skill), "--source", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "references/branch/README.md:2: encoding: not valid UTF-8 (byte 9)" in err


def test_pytest_references_in_data_files_must_exist(skill, engine, capsys):
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "\nTests: [map](test-map.yaml).\n")
    (skill / "references/branch/test-map.yaml").write_text(
        "subsystems:\n"
        "  - name: stage\n"
        "    tests:\n"
        "      - pytest: tests/test_stage.py::TestStage::test_build\n"
        "      - pytest: tests/test_stage.py::TestStage::test_gone\n"
        "      - pytest: tests/test_nowhere.py\n"
    )
    assert resolve(skill, engine) == 0
    capsys.readouterr()
    assert check(skill, engine) == 1
    out = capsys.readouterr().out
    assert (
        "references/branch/test-map.yaml:5: test-missing: tests/test_stage.py::TestStage::test_gone is not defined"
        in out
    )
    assert "references/branch/test-map.yaml:6: test-missing: test file tests/test_nowhere.py does not exist" in out
    assert out.count("test-missing") == 2
