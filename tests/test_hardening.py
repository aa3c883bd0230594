"""Hostile and careless input: an untrusted engine repository never runs a program, nothing hangs,
every error is one line, nothing passes silently, and no file is half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest

from conftest import CONFIG_PY, commit_files, make_skill, marker_program, set_config
from omni_skill.cli import main
from test_versions import pinned  # noqa: F401  (a fixture: a skill citing a fixture package)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(autouse=True)
def no_env_source(monkeypatch):
    monkeypatch.delenv("VLLM_OMNI_SOURCE", raising=False)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- 1. no repository-configured program runs --------------------------------------------------


@pytest.fixture
def partial(tmp_path, engine):
    """A blob-less clone of the fixture engine whose every transport setting names a program that
    leaves a marker, and a skill resolved at the same commit (from the full engine)."""
    origin, sha = engine
    repo = git.Repo(origin)
    repo.git.config("uploadpack.allowFilter", "true")
    repo.git.config("uploadpack.allowAnySHA1InWant", "true")
    clone = tmp_path / "partial"
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{origin}", str(clone)], check=True
    )
    hook, marker = marker_program(tmp_path, then='exec git-upload-pack "$@"\n')
    set_config(
        clone,
        {
            ('remote "origin"', "uploadpack"): str(hook),
            ("core", "sshCommand"): str(hook),
            ("core", "gitProxy"): str(hook),
            ("core", "fsmonitor"): str(hook),
            ("core", "askPass"): str(hook),
        },
    )
    skill = make_skill(tmp_path / "skill", "# Branch\n\nSee [x][src:pkg/config.py::StageConfig].\n")
    assert main(["resolve", "--root", str(skill), "--source", str(origin), "--revision", sha]) == 0
    return clone, skill, sha, marker


def source_verbs(clone: Path, sha: str) -> list[tuple[list[str], int]]:
    """Each verb that reads a source, and its exit code: 2 when it must read a blob the clone lacks,
    0 when the blob ids alone prove every citation (bump and drift to the pinned commit)."""
    return [
        (["check", "--source", str(clone)], 2),
        (["resolve", "--source", str(clone), "--dry-run"], 2),
        (["show", "src:pkg/config.py::StageConfig", "--source", str(clone)], 2),
        (["bump", "--source", str(clone), "--to", sha, "--dry-run"], 0),
        (["drift", "--source", str(clone), "--revision", sha], 0),
    ]


def test_partial_clone_never_fetches_through_its_own_transport(partial, capsys):
    clone, skill, sha, marker = partial
    for argv, expected in source_verbs(clone, sha):
        capsys.readouterr()
        code = main([*argv, "--root", str(skill)])
        err = capsys.readouterr().err
        assert not marker.exists(), argv
        assert code == expected, (argv, err)
        if expected == 2:
            assert err.count("\n") == 1 and "is not in this clone, and nothing is fetched for you" in err, (argv, err)


def test_partial_clone_bump_to_another_commit_does_not_fetch(partial, engine, capsys):
    clone, skill, _, marker = partial
    origin, _ = engine
    rev = commit_files(git.Repo(origin), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
    subprocess.run(
        [
            "git",
            "-C",
            str(clone),
            "-c",
            "remote.origin.uploadpack=git-upload-pack",
            "fetch",
            "-q",
            "--filter=blob:none",
            "origin",
        ],
        check=True,
    )
    marker.unlink(missing_ok=True)
    capsys.readouterr()
    code = main(["bump", "--root", str(skill), "--source", str(clone), "--to", rev, "--dry-run"])
    err = capsys.readouterr().err
    assert not marker.exists()
    assert code == 2 and "is not in this clone, and nothing is fetched for you" in err


def test_partial_clone_works_once_the_revision_is_fetched(partial, capsys):
    clone, skill, sha, marker = partial
    subprocess.run(["git", "-C", str(clone), "-c", "remote.origin.uploadpack=git-upload-pack", "checkout", "-q", sha])
    marker.unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(clone)]) == 0, capsys.readouterr().out
    assert not marker.exists()


def test_a_source_verb_without_git_on_the_path_is_one_line(partial, tmp_path):
    clone, skill, sha, _ = partial
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    script = f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); from omni_skill.cli import main; raise SystemExit(main(sys.argv[1:]))"
    for argv in (["check", "--source", str(clone)], ["check"]):
        done = subprocess.run(
            [sys.executable, "-c", script, *argv, "--root", str(skill)],
            capture_output=True,
            text=True,
            env={"PATH": str(empty), "HOME": str(tmp_path)},
        )
        assert "Traceback" not in done.stderr, done.stderr
        if "--source" in argv:
            assert done.returncode == 2 and done.stderr.count("\n") == 1 and "put git on the PATH" in done.stderr
        else:
            assert done.returncode == 0, done.stdout + done.stderr


# --- 2. no hang, no unbounded memory; 4. no silent false pass ----------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)


def data_skill(tmp_path: Path, data: str, name: str = "references/branch/data.yaml") -> Path:
    skill = make_skill(tmp_path / "skill", "# Branch\n\n[data](data.yaml)\n")
    (skill / name).parent.mkdir(parents=True, exist_ok=True)
    (skill / name).write_text(data)
    return skill


def check_out(skill: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--root", str(skill)])
    return code, capsys.readouterr().out


def test_alias_bomb_in_a_data_file_is_a_finding_not_a_hang(tmp_path, capsys):
    import time

    skill = data_skill(tmp_path, BOMB)
    start = time.monotonic()
    code, out = check_out(skill, capsys)
    assert time.monotonic() - start < 10
    assert code == 1 and "references/branch/data.yaml:1: yaml-invalid: YAML anchors (&a) are not allowed" in out


def test_alias_bomb_in_the_search_space_is_one_line(tmp_path, capsys):
    import time

    skill = data_skill(tmp_path, BOMB, "references/architecture-search/search-space.yaml")
    start = time.monotonic()
    capsys.readouterr()
    assert main(["search-space", "--root", str(skill)]) == 1
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "search-space.yaml:1: yaml-invalid: YAML anchors (&a)" in err


def test_alias_bomb_in_evals_and_frontmatter(tmp_path, capsys):
    skill = data_skill(tmp_path, "x: 1\n")
    (skill / "evals").mkdir()
    (skill / "evals/bomb.yaml").write_text(BOMB)
    text = (skill / "SKILL.md").read_text().replace("license: Apache-2.0\n", "license: &l Apache-2.0\nx: *l\n")
    (skill / "SKILL.md").write_text(text)
    code, out = check_out(skill, capsys)
    assert code == 1
    assert "evals/bomb.yaml:1: eval-invalid: YAML anchors (&a)" in out
    assert "SKILL.md:4: frontmatter-invalid: frontmatter: YAML anchors (&l)" in out


def test_deep_nesting_is_a_finding(tmp_path, capsys):
    skill = data_skill(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "nested deeper than 32 levels" in out and "Traceback" not in out


def test_duplicate_keys_are_findings_with_their_line(tmp_path, capsys):
    skill = data_skill(tmp_path, "settings:\n  - name: x\n    default: 99999\n    default: 1\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "references/branch/data.yaml:4: yaml-invalid: key 'default' appears twice" in out


def test_duplicate_frontmatter_key_is_a_finding(tmp_path, capsys):
    skill = data_skill(tmp_path, "x: 1\n")
    text = (skill / "SKILL.md").read_text().replace("license:", "description: Something else entirely.\nlicense:")
    (skill / "SKILL.md").write_text(text)
    code, out = check_out(skill, capsys)
    assert code == 1 and "SKILL.md:4: frontmatter-invalid: frontmatter: key 'description' appears twice" in out


def test_duplicate_eval_key_is_a_finding(tmp_path, capsys):
    skill = data_skill(tmp_path, "x: 1\n")
    (skill / "evals").mkdir()
    (skill / "evals/e.yaml").write_text("branch: branch\nbranch: other\nevals: []\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "evals/e.yaml:2: eval-invalid: key 'branch' appears twice" in out


def test_same_key_in_sibling_mappings_is_fine(tmp_path, capsys):
    skill = data_skill(tmp_path, "a:\n  k: 1\nb:\n  k: 2\nc: [{k: 1}, {k: 2}]\nd: {k: {k: 1}}\n")
    _, out = check_out(skill, capsys)
    assert "yaml-invalid" not in out, out


def page_skill(tmp_path: Path, body: str) -> Path:
    return make_skill(tmp_path / "skill", "# Branch\n\n" + body)


def test_a_long_line_of_malformed_labels_is_linear(tmp_path, capsys):
    import time

    skill = page_skill(tmp_path, "x][src:" * 100_000 + "\n")
    start = time.monotonic()
    code, out = check_out(skill, capsys)
    assert time.monotonic() - start < 10
    assert code == 1 and "label-invalid" in out
    assert max(len(line) for line in out.splitlines()) < 1000  # each finding stays a short line


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\x7f", "\x85", "\x9b"])
def test_control_characters_in_a_data_label_are_one_line_findings(tmp_path, capsys, char):
    skill = data_skill(tmp_path, f'source: "src:pkg/a{char}b.py::X"\n'.replace(char, f"\\x{ord(char):02x}"))
    code, out = check_out(skill, capsys)
    finding = [line for line in out.splitlines() if "label-invalid" in line]
    assert code == 1 and len(finding) == 1 and "has a control character" in finding[0]
    assert char not in out


@pytest.mark.parametrize(
    "label", ["src:pkg/deploy.yaml::L" + "9" * 5000, "src:pkg/config.py::StageConfig#" + "9" * 5000]
)
def test_huge_numbers_in_labels_are_findings(tmp_path, capsys, label):
    skill = page_skill(tmp_path, f"See [x][{label}].\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "label-invalid" in out and "Traceback" not in out


# --- 6. all-or-nothing across files --------------------------------------------------------------


def killed_bump(skill: Path, path: Path, rev: str, when: str) -> subprocess.CompletedProcess:
    """bump in a subprocess that SIGKILLs itself at the 2nd call of `when` (os.fsync or os.replace)."""
    script = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "from omni_skill import writes\n"
        f"real = getattr(os, {when!r})\n"
        "calls = []\n"
        "def dying(*a):\n"
        "    calls.append(a)\n"
        "    if len(calls) == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(*a)\n"
        f"setattr(writes.os, {when!r}, dying)\n"
        "from omni_skill.cli import main\n"
        f"main(['bump', '--root', {str(skill)!r}, '--source', {str(path)!r}, '--to', {rev!r}])\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True)


@pytest.fixture
def pinned_skill(engine, tmp_path):
    body = "# Branch\n\n- [a][src:pkg/config.py::start]\n- [b][src:pkg/deploy.yaml::connectors.kind]\n"
    skill = make_skill(tmp_path / "skill", body)
    path, sha = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    return skill, path


def test_kill_during_the_renames_is_completed_by_the_next_writer(pinned_skill, capsys):
    skill, path = pinned_skill
    rev = commit_files(git.Repo(path), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
    done = killed_bump(skill, path, rev, "replace")  # the 1st replace writes the journal, the 2nd a target
    assert done.returncode == -9
    assert (skill / ".omni-skill-write.json").exists()
    capsys.readouterr()
    assert main(["check", "--root", str(skill)]) == 1
    assert "write-unfinished: an interrupted write of" in capsys.readouterr().out
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", rev, "--dry-run"]) == 2
    assert "an interrupted write is pending" in capsys.readouterr().err
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", rev]) == 0
    assert "completed an interrupted write of" in capsys.readouterr().err
    assert not (skill / ".omni-skill-write.json").exists()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 0, capsys.readouterr().out
    provenance = json.loads((skill / "provenance.json").read_text())
    assert provenance["revision"] == rev
    assert not list(skill.rglob(".*.tmp"))


def test_kill_before_the_journal_leaves_every_file_old(pinned_skill):
    skill, path = pinned_skill
    before = snapshot(skill)
    rev = commit_files(git.Repo(path), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
    assert killed_bump(skill, path, rev, "fsync").returncode == -9
    after = {k: v for k, v in snapshot(skill).items() if not k.rsplit("/", 1)[-1].startswith(".")}
    assert after == before


def test_written_files_keep_their_mode_and_new_ones_follow_the_umask(pinned_skill, engine):
    import os
    import stat

    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.chmod(0o640)
    (skill / "evidence/index.json").unlink()
    old = os.umask(0o022)
    try:
        rev = commit_files(git.Repo(path), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
        assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", rev]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(page.stat().st_mode) == 0o640
    assert stat.S_IMODE((skill / "evidence/index.json").stat().st_mode) == 0o644


# --- 5. bump never writes a skill that check rejects -----------------------------------------------


def test_bump_refuses_a_stale_index(pinned_skill, capsys):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text().replace("- [a]", "\n\n- [a]"))  # citations moved down two lines
    before = snapshot(skill)
    rev = commit_files(git.Repo(path), {"pkg/config.py": "# moved\n" + CONFIG_PY}, "move")
    capsys.readouterr()
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", rev]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the pages changed since the last resolve: run `omni-skill resolve` first" in err
    assert snapshot(skill) == before


def test_bump_refuses_a_result_that_check_rejects(pinned_skill, capsys):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "\n```bash\npytest tests/test_stage.py::TestStage::test_build\n```\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    before = snapshot(skill)
    rev = commit_files(git.Repo(path), {"tests/test_stage.py": "def test_other():\n    pass\n"}, "drop a test")
    capsys.readouterr()
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", rev]) == 1
    out = capsys.readouterr().out
    assert "the bumped skill would fail check" in out and "test-missing" in out
    assert snapshot(skill) == before


# --- 3. no traceback, anywhere; 8. errors say where and why ----------------------------------------


def test_a_deeply_nested_engine_expression_is_a_finding(engine, tmp_path, capsys):
    path, _ = engine
    deep = "X = " + " + ".join(["1"] * 20000) + "\n\n\ndef f():\n    return 1\n"
    sha = commit_files(git.Repo(path), {"pkg/deep.py": deep}, "deep")
    skill = make_skill(tmp_path / "skill", "# Branch\n\n[f][src:pkg/deep.py::X]\n")
    capsys.readouterr()
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 1
    captured = capsys.readouterr()
    assert "nested too deeply" in captured.out and "Traceback" not in captured.err


@pytest.mark.parametrize("kind", ["blob", "tree"])
def test_a_blob_or_tree_given_as_a_revision_is_named(pinned_skill, capsys, kind):
    skill, path = pinned_skill
    repo = git.Repo(path)
    obj = repo.head.commit.tree if kind == "tree" else repo.head.commit.tree / "pkg/config.py"
    capsys.readouterr()
    assert main(["bump", "--root", str(skill), "--source", str(path), "--to", obj.hexsha, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{obj.hexsha} is a {kind}, not a commit" in err


# --- 7. permissions and special files ---------------------------------------------------------------


@pytest.fixture
def installable(skill, engine):
    import shutil

    path, sha = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    shutil.copytree(SCRIPTS, skill / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return skill


def test_installed_folder_and_files_are_readable_by_others(installable, tmp_path, capsys):
    import os
    import stat

    old = os.umask(0o022)
    try:
        assert (
            main(
                [
                    "install",
                    "--root",
                    str(installable),
                    "--agent",
                    "claude",
                    "--scope",
                    "project",
                    "--dest",
                    str(tmp_path / "p"),
                ]
            )
            == 0
        )
    finally:
        os.umask(old)
    target = tmp_path / "p/.claude/skills/vllm-omni"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert stat.S_IMODE((target / "SKILL.md").stat().st_mode) & 0o044 == 0o044


@pytest.mark.parametrize("what", ["file", "symlink", "dangling"])
def test_install_force_over_a_file_or_symlink_leaves_nothing_behind(installable, tmp_path, capsys, what):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    base = tmp_path / "home/.claude/skills"
    base.mkdir(parents=True)
    target = base / "vllm-omni"
    if what == "file":
        target.write_text("not a skill")
    elif what == "symlink":
        target.symlink_to(outside)
    else:
        target.symlink_to(tmp_path / "nowhere")
    argv = ["install", "--root", str(installable), "--agent", "claude", "--dest", str(tmp_path / "home")]
    assert main([*argv, "--force"]) == 0, capsys.readouterr()
    assert target.is_dir() and not target.is_symlink()
    assert (outside / "keep.txt").read_text() == "keep" and sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert sorted(p.name for p in base.iterdir()) == ["vllm-omni"]
    assert main(argv) == 0  # a second install over our own skill works


@pytest.mark.parametrize("what", ["dir", "symlink", "fifo"])
def test_package_refuses_a_special_output(installable, tmp_path, capsys, what):
    import os

    output = tmp_path / "out.skill"
    if what == "dir":
        output.mkdir()
    elif what == "symlink":
        output.symlink_to(tmp_path / "elsewhere.skill")
    else:
        os.mkfifo(output)
    capsys.readouterr()
    assert main(["package", "--root", str(installable), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give a file name for the package" in err
    assert not (tmp_path / "elsewhere.skill").exists()


def test_package_file_mode_follows_the_umask(installable, tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        assert main(["package", "--root", str(installable), "--output", str(tmp_path / "v.skill")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "v.skill").stat().st_mode) == 0o644


# --- a table of hostile inputs: exit code, one line on stderr, no traceback, no file changed ------


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _with_scripts(skill: Path) -> None:
    import shutil

    shutil.copytree(SCRIPTS, skill / "scripts", ignore=shutil.ignore_patterns("__pycache__"))


def _first_record(key: str, value):
    return lambda data: data["records"][0].__setitem__(key, value)


HOSTILE = [
    # (id, setup(skill, engine_path, tmp) -> argv, expected exit, expected text on stderr or stdout)
    ("root-is-a-file", lambda s, e, t: ["check", "--root", str(s / "SKILL.md")], 2, "no such folder"),
    ("root-missing", lambda s, e, t: ["drift", "--root", str(t / "none"), "--source", str(e)], 2, "no such folder"),
    ("source-not-a-repo", lambda s, e, t: ["check", "--root", str(s), "--source", str(t)], 2, "not a git repository"),
    (
        "source-missing",
        lambda s, e, t: ["check", "--root", str(s), "--source", str(t / "x")],
        2,
        "not a git repository",
    ),
    (
        "source-is-a-file",
        lambda s, e, t: ["check", "--root", str(s), "--source", str(s / "SKILL.md")],
        2,
        "not a git repository",
    ),
    (
        "revision-unknown",
        lambda s, e, t: ["resolve", "--root", str(s), "--source", str(e), "--revision", "f" * 40],
        2,
        "is not in this repository",
    ),
    (
        "revision-option-like",
        lambda s, e, t: ["resolve", "--root", str(s), "--source", str(e), "--revision=--output=x"],
        2,
        "invalid revision",
    ),
    (
        "revision-range",
        lambda s, e, t: ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD..HEAD"],
        2,
        "is not in this repository",
    ),
    (
        "bump-to-unknown",
        lambda s, e, t: ["bump", "--root", str(s), "--source", str(e), "--to", "nope"],
        2,
        "is not in this repository",
    ),
    (
        "accept-unknown-label",
        lambda s, e, t: ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD", "--accept", "src:x.py::Y"],
        2,
        "not in the index",
    ),
    (
        "drift-revision-unknown",
        lambda s, e, t: ["drift", "--root", str(s), "--source", str(e), "--revision", "nope"],
        2,
        "is not in this repository",
    ),
    (
        "show-unknown-label",
        lambda s, e, t: ["show", "src:pkg/x.py::Y", "--root", str(s), "--source", str(e)],
        2,
        "is not a citation of this skill",
    ),
    (
        "show-malformed-label",
        lambda s, e, t: ["show", "src:../etc/passwd", "--root", str(s), "--source", str(e)],
        2,
        "is not a citation of this skill",
    ),
    (
        "index-not-json",
        lambda s, e, t: (
            _write(s / "evidence/index.json", "{") or ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD"]
        ),
        2,
        "evidence/index.json: Expecting",
    ),
    (
        "index-duplicate-key",
        lambda s, e, t: (
            _write(
                s / "evidence/index.json",
                (s / "evidence/index.json").read_text().replace('"version": 1,', '"version": 1, "version": 1,'),
            )
            or ["drift", "--root", str(s), "--source", str(e)]
        ),
        2,
        "appears twice",
    ),
    (
        "index-bad-label",
        lambda s, e, t: (
            _edit_json(s / "evidence/index.json", _first_record("label", "src:/abs.py"))
            or ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD"]
        ),
        2,
        "records.0.label: absolute path",
    ),
    (
        "index-label-disagrees",
        lambda s, e, t: (
            _edit_json(s / "evidence/index.json", _first_record("path", "other.py"))
            or ["drift", "--root", str(s), "--source", str(e)]
        ),
        2,
        "records.0: path, anchor or kind disagree",
    ),
    (
        "index-bad-blob",
        lambda s, e, t: (
            _edit_json(s / "evidence/index.json", _first_record("blob", "xyz"))
            or ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD"]
        ),
        2,
        "records.0.blob: String should match pattern",
    ),
    (
        "index-control-char-label",
        lambda s, e, t: (
            _edit_json(s / "evidence/index.json", _first_record("label", "src:pkg/a\nb.py"))
            or ["drift", "--root", str(s), "--source", str(e)]
        ),
        2,
        "has a control character",
    ),
    (
        "provenance-bad-revision",
        lambda s, e, t: (
            _edit_json(s / "provenance.json", lambda d: d.__setitem__("revision", "abc"))
            or ["resolve", "--root", str(s), "--source", str(e)]
        ),
        2,
        "provenance.json: revision: String should match pattern",
    ),
    (
        "provenance-not-json",
        lambda s, e, t: (
            _write(s / "provenance.json", "[") or ["bump", "--root", str(s), "--source", str(e), "--to", "HEAD"]
        ),
        2,
        "provenance.json: Expecting",
    ),
    (
        "releases-garbage",
        lambda s, e, t: _write(s / "evidence/releases.json", '{"version": 2}') or ["check", "--root", str(s)],
        1,
        "releases-invalid",
    ),
    (
        "no-skill-md",
        lambda s, e, t: (s / "SKILL.md").unlink() or ["resolve", "--root", str(s), "--source", str(e)],
        2,
        "no SKILL.md here",
    ),
    ("resolve-without-source", lambda s, e, t: ["resolve", "--root", str(s)], 2, "resolve needs the engine"),
    ("bump-without-source", lambda s, e, t: ["bump", "--root", str(s), "--to", "HEAD"], 2, "bump needs the engine"),
    ("drift-without-engine", lambda s, e, t: ["drift", "--root", str(s)], 2, "drift needs your engine"),
    (
        "engine-dir-empty",
        lambda s, e, t: ["drift", "--root", str(s), "--engine-dir", str(t)],
        2,
        "holds none of the cited folders",
    ),
    (
        "wheel-missing",
        lambda s, e, t: ["drift", "--root", str(s), "--wheel", str(t / "x.whl")],
        2,
        "not a readable wheel",
    ),
    ("wheel-is-a-folder", lambda s, e, t: ["drift", "--root", str(s), "--wheel", str(t)], 2, "not a readable wheel"),
    (
        "releases-missing-path",
        lambda s, e, t: ["releases", "--root", str(s), "--wheel", str(t / "none")],
        2,
        "no such wheel or folder",
    ),
    ("models-unknown", lambda s, e, t: ["models", "--root", str(s), "nothing"], 2, "models.yaml"),
    ("search-space-missing", lambda s, e, t: ["search-space", "--root", str(s)], 2, "no search space in this skill"),
    (
        "install-dest-is-a-file",
        lambda s, e, t: (
            _with_scripts(s) or ["install", "--root", str(s), "--agent", "claude", "--dest", str(s / "SKILL.md")]
        ),
        2,
        "SKILL.md",
    ),
    (
        "package-output-is-skill-folder",
        lambda s, e, t: _with_scripts(s) or ["package", "--root", str(s), "--output", str(s)],
        2,
        "give a file name for the package",
    ),
]


@pytest.mark.parametrize(("setup", "code", "text"), [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_hostile_input(skill, engine, tmp_path, capsys, setup, code, text):
    path, sha = engine
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 0
    (skill / "evidence/releases.json").unlink(missing_ok=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    argv = setup(skill, path, scratch)
    before = snapshot(skill)
    capsys.readouterr()
    assert main(argv) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    if code == 2:
        assert captured.err.count("\n") == 1, captured.err
        assert text in captured.err, captured.err
    else:
        assert text in captured.out, captured.out
    assert snapshot(skill) == before


def test_a_renamed_file_that_is_no_longer_text_is_missing_not_a_crash(pinned_skill, capsys):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "- [c][src:pkg/deploy.yaml::L2-L3]\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    repo = git.Repo(path)
    repo.git.mv("pkg/deploy.yaml", "pkg/deploy2.yaml")
    (path / "pkg/deploy2.yaml").write_bytes(b"stages:\n  - \xff\xfe\n" + b"x: 1\n" * 10)
    repo.index.add(["pkg/deploy2.yaml"])
    rev = repo.index.commit("rename and break").hexsha
    capsys.readouterr()
    code = main(["bump", "--root", str(skill), "--source", str(path), "--to", rev, "--dry-run", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    entries = {e["label"]: e for e in json.loads(captured.out)["entries"]}
    assert entries["src:pkg/deploy.yaml::L2-L3"]["status"] == "missing"


def test_interrupt_while_parsing_arguments_is_one_line(monkeypatch, capsys):
    from omni_skill import cli

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.argparse.ArgumentParser, "parse_args", interrupted)
    assert main(["check"]) == 2
    assert capsys.readouterr().err == "omni-skill: interrupted before starting; nothing was written\n"


def test_a_citation_written_below_the_definitions_is_indexed_where_resolve_puts_it(pinned_skill, capsys):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "\nMore: [c][src:pkg/config.py::MAX_STAGES].\n")
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 0, capsys.readouterr().out
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    assert "wrote: nothing (already current)" in capsys.readouterr().out


def test_a_page_edited_while_resolve_runs_is_not_overwritten(pinned_skill, monkeypatch, capsys):
    from omni_skill import resolve as resolve_module

    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text() + "\nAlso [d][src:pkg/config.py::TIMEOUT].\n")
    real = resolve_module.resolve

    def resolve_while_someone_edits(*args, **kwargs):
        outcome = real(*args, **kwargs)
        page.write_text(page.read_text() + "\nAn edit made meanwhile.\n")
        return outcome

    monkeypatch.setattr("omni_skill.resolve.resolve", resolve_while_someone_edits)
    capsys.readouterr()
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "references/branch/README.md changed while resolve ran; nothing was written" in err
    assert page.read_text().endswith("An edit made meanwhile.\n")
    assert not (skill / ".omni-skill-write.json").exists() and not list(skill.rglob(".*.tmp"))


def test_the_tree_walk_finds_what_the_event_pass_finds():
    """Without `&` or `*` the composed tree is checked instead of the parser's events: same problems."""
    from omni_skill.yamlcheck import plain_document, yaml_problems

    deep = "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "x: 1\n"
    texts = [
        "a: 1\nb:\n  c: 2\n  c: 3\nd: [1, 2]\na: 4\n",  # a key twice, at two depths
        "- {x: 1, x: 2}\n- [1, [2, [3]]]\n",
        deep,
        "s: 'no & or * here'\nt: {u: 1}\n",
    ]
    for text in texts:
        node, problems = plain_document(text)
        assert problems == yaml_problems(text), text
        assert (node is None) == bool(problems)
    assert plain_document(texts[3])[0] is not None
    with_star = "a: &x 1\nb: *x\n"  # anchors possible: the event pass runs
    assert plain_document(with_star) == (None, yaml_problems(with_star))


# --- round 2 (issue 19) ----------------------------------------------------------------------------

# 1. the write journal is never trusted from the repository


def _committed_journal(skill: Path, target: str, new_format: bool) -> tuple[Path, bytes]:
    """A journal and its temporary as a hostile commit would bring them: the temporary is named
    the way the tool names its own, and (new format) its hash is right."""
    import hashlib

    payload = b"#!/bin/sh\ntouch PWNED\n"
    folder, _, name = target.rpartition("/")
    temp = f"{folder}/.{name}.abc123xy.tmp" if folder else f".{name}.abc123xy.tmp"
    (skill / temp).parent.mkdir(parents=True, exist_ok=True)
    (skill / temp).write_bytes(payload)
    if new_format:
        entry = {"temp": temp, "target": target, "sha256": hashlib.sha256(payload).hexdigest()}
        journal = {"version": 2, "renames": [entry]}
    else:
        journal = {"renames": [[temp, target]]}
    (skill / ".omni-skill-write.json").write_text(json.dumps(journal))
    return skill / target, payload


@pytest.mark.parametrize("new_format", [False, True], ids=["pairs", "hashed"])
@pytest.mark.parametrize("target", [".git/hooks/pre-commit", ".git/config", "scripts/omni_skill/x.py"])
def test_a_committed_journal_is_refused_and_nothing_moves(pinned_skill, capsys, target, new_format):
    skill, path = pinned_skill
    (skill / ".git/hooks").mkdir(parents=True)
    (skill / ".git/config").write_text("[core]\n")
    victim, payload = _committed_journal(skill, target, new_format)
    before = snapshot(skill)
    for argv in (["resolve", "--source", str(path)], ["releases", "--wheel", str(skill)]):
        capsys.readouterr()
        assert main([*argv, "--root", str(skill)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "a write journal this tool will not complete" in err, err
        assert snapshot(skill) == before
    assert not victim.exists() or victim.read_bytes() != payload
    code, out = check_out(skill, capsys)
    assert code == 1 and ".omni-skill-write.json: write-journal-refused:" in out and "nothing was applied" in out


def test_a_journal_whose_temporary_was_swapped_is_refused(pinned_skill, capsys):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    _committed_journal(skill, "references/branch/README.md", new_format=True)
    (skill / "references/branch/.README.md.abc123xy.tmp").write_text("other content\n")
    before = page.read_text()
    capsys.readouterr()
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 2
    assert "is not the content recorded for references/branch/README.md" in capsys.readouterr().err
    assert page.read_text() == before


def test_the_journal_is_ignored_by_git():
    ignored = (Path(__file__).resolve().parents[1] / ".gitignore").read_text().splitlines()
    assert ".omni-skill-write.json" in ignored


# 2. skill files are regular files inside the skill, read with a bound


def _special(path: Path, what: str, tmp_path: Path) -> None:
    import os

    path.unlink(missing_ok=True)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "outside":
        secret = tmp_path / "secret.md"
        secret.write_text("# Secret\n\nTOKEN=hunter2\n")
        path.symlink_to(secret)
    else:
        path.symlink_to(what)


SPECIALS = ["/dev/zero", "/dev/urandom", "/proc/self/environ", "fifo", "outside"]
SKILL_FILES = [
    "SKILL.md",
    "references/branch/README.md",
    "references/branch/data.yaml",
    "evidence/whole-definitions.yaml",
]


@pytest.mark.parametrize("rel", SKILL_FILES)
@pytest.mark.parametrize("what", SPECIALS)
def test_a_special_skill_file_is_a_finding(pinned_skill, tmp_path, capsys, rel, what):
    skill, _ = pinned_skill
    _special(skill / rel, what, tmp_path)
    code, out = check_out(skill, capsys)
    assert code == 1 and f"{rel}: file-unsafe:" in out, out
    assert "hunter2" not in out


@pytest.mark.parametrize("what", SPECIALS)
def test_resolve_and_package_refuse_a_special_page(pinned_skill, tmp_path, capsys, what):
    import zipfile

    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    _special(page, what, tmp_path)
    _with_scripts(skill)
    for argv in (["resolve", "--source", str(path)], ["package", "--output", str(tmp_path / "p.skill")]):
        capsys.readouterr()
        assert main([*argv, "--root", str(skill)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "references/branch/README.md: file-unsafe:" in err, err
    assert page.is_symlink() or what == "fifo"
    assert not (tmp_path / "p.skill").exists() or "hunter2" not in str(zipfile.ZipFile(tmp_path / "p.skill").namelist())


def test_a_references_folder_linked_out_of_the_skill_is_not_read(pinned_skill, tmp_path, capsys):
    import shutil

    skill, _ = pinned_skill
    outside = tmp_path / "elsewhere"
    shutil.move(skill / "references", outside)
    (skill / "references").symlink_to(outside)
    code, out = check_out(skill, capsys)
    assert code == 1 and "references/branch/README.md: file-unsafe: is a symbolic link out of the skill" in out


def test_a_huge_references_tree_is_one_line(pinned_skill, capsys):
    skill, _ = pinned_skill
    many = skill / "references/many"
    many.mkdir()
    for n in range(20_001):
        (many / f"{n}.txt").touch()
    capsys.readouterr()
    assert main(["check", "--root", str(skill)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "more than 20000 entries" in err


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_fifo_named_as_a_wheel_is_refused(pinned_skill, tmp_path, capsys, where):
    import os

    skill, _ = pinned_skill
    folder = tmp_path / "wheels"
    folder.mkdir()
    fifo = folder / "vllm_omni-0.1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    given = fifo if where == "file" else folder
    for argv in (["releases", "--wheel", str(given)], ["drift", "--wheel", str(fifo)]):
        capsys.readouterr()
        assert main([*argv, "--root", str(skill)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a regular file" in err, err


# 5. an old git (no GIT_NO_LAZY_FETCH) never runs a transport the clone's own config allows


@pytest.mark.parametrize("how", ["direct", "include"])
def test_a_clone_that_allows_its_own_transports_still_runs_nothing(partial, tmp_path, capsys, monkeypatch, how):
    from omni_skill import source

    clone, skill, sha, marker = partial
    # as on a git before 2.45.1, which does not know the variable
    monkeypatch.setattr(
        source, "SAFE_ENVIRONMENT", {k: v for k, v in source.SAFE_ENVIRONMENT.items() if k != "GIT_NO_LAZY_FETCH"}
    )
    allow = {("protocol", "allow"): "always"} | {(f'protocol "{n}"', "allow"): "always" for n in ("file", "ssh", "ext")}
    if how == "direct":
        set_config(clone, allow)
    else:
        included = tmp_path / "allow.gitconfig"
        included.write_text("".join(f"[{section}]\n\t{key} = {value}\n" for (section, key), value in allow.items()))
        set_config(clone, {("include", "path"): str(included)})
    for argv, expected in source_verbs(clone, sha):
        capsys.readouterr()
        code = main([*argv, "--root", str(skill)])
        assert not marker.exists(), argv
        assert code == expected, (argv, capsys.readouterr().err)


def test_the_advice_for_a_missing_blob_is_a_fresh_clone(partial, capsys):
    clone, skill, _, _ = partial
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(clone)]) == 2
    err = capsys.readouterr().err
    assert "git clone" in err and "fetch origin" not in err and f"git -C {clone}" not in err


# 3. a release is named by its wheel file; engine text reaches no terminal or page raw


def _renamed_wheel(tmp_path: Path, metadata_version: str, file_version: str, **changes) -> Path:
    from test_versions import make_wheel

    built = make_wheel(tmp_path / "build", metadata_version, changes or None)
    wheel = tmp_path / "wheels" / f"vllm_omni-{file_version}-py3-none-any.whl"
    wheel.parent.mkdir(exist_ok=True)
    built.rename(wheel)
    return wheel


def test_a_wheel_whose_metadata_contradicts_its_file_name_is_refused(request, tmp_path, capsys):
    skill = request.getfixturevalue("pinned")
    wheel = _renamed_wheel(tmp_path, "1.0.0", "2.0.0")
    capsys.readouterr()
    assert main(["releases", "--root", str(skill), "--wheel", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "METADATA says Version '1.0.0', its file name 2.0.0" in err, err
    assert not (skill / "evidence/releases.json").exists()
    assert main(["drift", "--root", str(skill), "--wheel", str(wheel), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["engine"]["version"] == "2.0.0"
    assert "note: vllm_omni-2.0.0-py3-none-any.whl: its METADATA says Version '1.0.0'" in captured.err


def test_pep440_spellings_of_one_version_agree(request, tmp_path, capsys):
    skill = request.getfixturevalue("pinned")
    wheel = _renamed_wheel(tmp_path, "1.0.0-RC.1", "1.0.0rc1")
    capsys.readouterr()
    assert main(["releases", "--root", str(skill), "--wheel", str(wheel), "--format", "json"]) == 0
    assert [r["version"] for r in json.loads(capsys.readouterr().out)["releases"]] == ["1.0.0rc1"]


def test_metadata_markup_and_escapes_reach_no_terminal(request, tmp_path, capsys):
    skill = request.getfixturevalue("pinned")
    wheel = _renamed_wheel(tmp_path, "1.0.0\x1b]0;owned\x07<!--", "1.0.0")
    capsys.readouterr()
    assert main(["releases", "--root", str(skill), "--wheel", str(wheel)]) == 2
    assert main(["drift", "--root", str(skill), "--wheel", str(wheel)]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.out + captured.err
    assert "\\x1b]0;owned\\x07" in captured.err


def test_show_escapes_engine_text_and_keeps_its_code_fence(request, tmp_path, capsys):
    skill = request.getfixturevalue("pinned")
    from test_versions import CONFIG_PY, LABELS

    hostile = CONFIG_PY.replace("MAX_STAGES = 8", "MAX_STAGES = 8  # \x1b[2J\x9b ```` <!--")
    wheel = _renamed_wheel(tmp_path, "1.0.0", "1.0.0", **{"vllm_omni/config.py": hostile})
    for fmt in ("text", "markdown", "json"):
        capsys.readouterr()
        main(["show", LABELS["const"], "--root", str(skill), "--wheel", str(wheel), "--format", fmt])
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x9b" not in out, fmt
        if fmt == "markdown":
            assert "`````python" in out and "<!--" in out  # inside a fence no line can close
        if fmt == "json":
            assert json.loads(out)["lines"][0]["text"].endswith("\x1b[2J\x9b ```` <!--")


# 4. bounded reads: a total per wheel and per run, blob sizes before reading, the tree listing


def test_a_wheel_over_its_total_read_budget_is_one_line(request, tmp_path, capsys, monkeypatch):
    from omni_skill import trees

    skill = request.getfixturevalue("pinned")
    wheel = _renamed_wheel(tmp_path, "1.0.0", "1.0.0")
    monkeypatch.setattr(trees, "MAX_TREE_READ", 1000)  # each cited member is under the per-member cap
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--wheel", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its cited files hold over 1000 bytes; stopping" in err


@pytest.mark.parametrize("engine_kind", ["wheel", "git"])
def test_a_run_over_its_read_budget_is_one_line(request, pinned_skill, tmp_path, capsys, monkeypatch, engine_kind):
    from omni_skill import safeio

    if engine_kind == "wheel":
        skill = request.getfixturevalue("pinned")
        argv = ["drift", "--root", str(skill), "--wheel", str(_renamed_wheel(tmp_path, "1.0.0", "1.0.0"))]
    else:
        skill, path = pinned_skill
        argv = ["check", "--root", str(skill), "--source", str(path)]
    monkeypatch.setattr(safeio, "MAX_RUN_READ", 1000)
    monkeypatch.setattr(safeio, "_run_read", 0)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "this run has read over 1000 bytes of engine files" in err, err


def test_a_huge_blob_is_never_read(engine, tmp_path, capsys, monkeypatch):
    from omni_skill.source import Source

    path, _ = engine
    sha = commit_files(git.Repo(path), {"pkg/huge.py": "X = 1\n" + "#" * (9 * 1024 * 1024) + "\n"}, "huge")
    skill = make_skill(tmp_path / "skill", "# Branch\n\nSee [x][src:pkg/huge.py::X].\n")
    streamed: list[str] = []
    real_init = Source.__init__

    def spying_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        real_stream = self.repo.odb.stream
        self.repo.odb.stream = lambda binsha: streamed.append(binsha.hex()) or real_stream(binsha)

    monkeypatch.setattr(Source, "__init__", spying_init)
    capsys.readouterr()
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", sha]) == 1
    out = capsys.readouterr().out
    assert "pkg/huge.py" in out and "is larger than 8388608 bytes" in out, out
    huge = git.Repo(path).commit(sha).tree["pkg/huge.py"].hexsha
    assert huge not in streamed


def test_a_tree_listing_over_its_bound_is_one_line(pinned_skill, capsys, monkeypatch):
    from omni_skill import source

    skill, path = pinned_skill
    monkeypatch.setattr(source, "MAX_TREE_LISTING", 100)
    capsys.readouterr()
    assert main(["check", "--root", str(skill), "--source", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lists over 100 bytes of paths" in err


# 6. output never dies: stdout's encoding, a closed stdout, odd names, huge numbers, deep JSON


def launcher(*argv: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    import os

    full = {**os.environ, **(env or {})}
    full.pop("VLLM_OMNI_SOURCE", None)
    return subprocess.run([sys.executable, str(SCRIPTS / "omni-skill"), *argv], env=full, **kwargs)


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_a_non_ascii_finding_on_an_ascii_stdout(tmp_path, env):
    skill = make_skill(tmp_path / "skill", "# Über\n\nSee [x][src:pkg/café.py::X] — ok.\n")
    done = launcher("check", "--root", str(skill), env=env, capture_output=True)
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done.stderr
    assert b"src:pkg/caf\\xe9.py::X" in done.stdout


def test_drift_of_a_non_ascii_heading_on_an_ascii_stdout(pinned_skill, tmp_path):
    skill, path = pinned_skill
    page = skill / "references/branch/README.md"
    page.write_text(page.read_text().replace("# Branch", "# Branch\n\n## Größe"))
    assert main(["resolve", "--root", str(skill), "--source", str(path)]) == 0
    # the JSON report names every section (the text report lists only sections that do not hold)
    done = launcher(
        "drift",
        "--root",
        str(skill),
        "--source",
        str(path),
        "--format",
        "json",
        env={"PYTHONIOENCODING": "ascii"},
        capture_output=True,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"Gr\\xf6\\xdfe" in done.stdout


@pytest.mark.parametrize("how", ["pipe", "closed"])
def test_a_closed_stdout_is_quiet(pinned_skill, how):
    import os

    skill, _ = pinned_skill
    if how == "pipe":
        process = subprocess.Popen(
            [sys.executable, str(SCRIPTS / "omni-skill"), "check", "--root", str(skill)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        process.stdout.close()  # the reader goes away before the report is written
        err = process.stderr.read()
        code = process.wait()
    else:
        done = launcher(
            "check", "--root", str(skill), capture_output=False, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1)
        )
        err, code = done.stderr, done.returncode
    assert err == b"", err
    assert code in (0, 1)


def test_a_page_name_that_is_not_utf8_is_a_finding(pinned_skill, capsys):
    import os

    skill, _ = pinned_skill
    (skill / os.fsdecode(b"references/branch/bad-\xff.md")).write_text("# Bad\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "references/branch/bad-\\xff.md: encoding: the file name is not valid UTF-8" in out


def test_a_list_index_of_thousands_of_digits_is_a_label_error(tmp_path, capsys):
    skill = page_skill(tmp_path, "See [x][src:pkg/deploy.yaml::stages\\[" + "9" * 5000 + "\\].stage_id].\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "label-invalid" in out and "Traceback" not in out


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("rel", ["evidence/index.json", "provenance.json"])
def test_deeply_nested_json_is_one_line(pinned_skill, capsys, rel):
    skill, path = pinned_skill
    (skill / rel).write_text(DEEP)
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--source", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{rel}: nested too deeply to read" in err, err
    code, out = check_out(skill, capsys)
    assert code == 1 and f"{rel}: file-invalid: nested too deeply to read" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DEEP, "nested too deeply to read"),
        ('{"version": 1, "version": 1}', "key 'version' appears twice"),
        ('{"version": ' + "1" * 5000 + "}", "a number of 5000 characters"),
        ('{"version": NaN}', "NaN is not a JSON number"),
    ],
    ids=["deep", "duplicate", "huge-number", "nan"],
)
def test_drift_reads_releases_json_as_strictly_as_check(request, tmp_path, capsys, text, message):
    skill = request.getfixturevalue("pinned")
    wheel = _renamed_wheel(tmp_path, "1.0.0", "1.0.0")
    (skill / "evidence/releases.json").write_text(text)
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--wheel", str(wheel)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    code, out = check_out(skill, capsys)
    assert code == 1 and message in out


def test_releases_json_with_bad_bytes_is_one_line(request, tmp_path, capsys):
    skill = request.getfixturevalue("pinned")
    (skill / "evidence/releases.json").write_bytes(b'{"version": "\xff"}')
    capsys.readouterr()
    assert main(["drift", "--root", str(skill), "--wheel", str(_renamed_wheel(tmp_path, "1.0.0", "1.0.0"))]) == 2
    assert "not valid UTF-8 (byte 13)" in capsys.readouterr().err


def test_an_interrupt_while_the_report_is_printed_is_one_line(tmp_path):
    """The launcher itself: an interrupt outside the verb's own handling leaves no traceback."""
    script = (
        "import sys, types, runpy\n"
        "fake = types.ModuleType('omni_skill.cli')\n"
        "def main():\n"
        "    raise KeyboardInterrupt\n"
        "fake.main = main\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "import omni_skill\n"
        "sys.modules['omni_skill.cli'] = fake\n"
        f"runpy.run_path({str(SCRIPTS / 'omni-skill')!r}, run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr == "omni-skill: interrupted\n", done.stderr


# 7. control characters are findings; whole-definitions.yaml is pre-checked; package refuses a failing skill


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07", "\x7f", "\x85", "\x9b"])
@pytest.mark.parametrize("rel", ["SKILL.md", "references/branch/README.md", "references/branch/data.yaml"])
def test_control_characters_in_skill_text_are_findings(pinned_skill, capsys, char, rel):
    skill, _ = pinned_skill
    path = skill / rel
    text = path.read_text() if path.exists() else "a: 1\n"
    path.write_text(text + f"# hidden{char}[8mtext\n")
    line = (text + "x").count("\n") + 1
    code, out = check_out(skill, capsys)
    assert code == 1 and f"{rel}:{line}: control-character: control character \\x{ord(char):02x}" in out, out
    assert char not in out


def test_whole_definitions_that_are_not_utf8_are_a_finding(pinned_skill, capsys):
    skill, _ = pinned_skill
    (skill / "evidence/whole-definitions.yaml").write_bytes(b"src:x.py::Y: caf\xe9\n")
    code, out = check_out(skill, capsys)
    assert code == 1 and "evidence/whole-definitions.yaml:1: encoding: not valid UTF-8 (byte 16)" in out


def test_package_refuses_a_skill_that_fails_check(installable, tmp_path, capsys):
    (installable / ".omni-skill-write.json").write_text('{"renames": []}')
    capsys.readouterr()
    assert main(["package", "--root", str(installable), "--output", str(tmp_path / "v.skill")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the skill fails `omni-skill check`" in err and "write-journal-refused" in err
    assert not (tmp_path / "v.skill").exists()


# 8. smaller: old Python, ~ in --dest, interrupted installs, installing into the skill


def test_an_old_python_is_named_as_the_problem():
    script = (
        "import sys, runpy\n"
        "sys.version_info = (3, 9, 18, 'final', 0)\n"
        f"sys.argv = ['omni-skill', 'check']\n"
        f"runpy.run_path({str(SCRIPTS / 'omni-skill')!r}, run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "needs Python 3.10 or newer, this is Python 3.9" in done.stderr


def test_install_dest_expands_the_home_folder(installable, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main(["install", "--root", str(installable), "--agent", "claude", "--dest=~/work"]) == 0
    assert (tmp_path / "home/work/.claude/skills/vllm-omni/SKILL.md").is_file()
    assert not (tmp_path / "~").exists()


def test_an_interrupted_install_is_cleaned_up_by_the_next(installable, tmp_path, capsys):
    base = tmp_path / "home/.claude/skills"
    stale = base / ".vllm-omni.install-4194304-abcd1234"  # above the largest pid_max: no process has it
    (stale / "references").mkdir(parents=True)
    (stale / "SKILL.md").write_text("half a copy")
    other = base / ".other-folder"
    other.mkdir()
    assert main(["install", "--root", str(installable), "--agent", "claude", "--dest", str(tmp_path / "home")]) == 0
    assert sorted(p.name for p in base.iterdir()) == [".other-folder", "vllm-omni"]


def test_a_killed_install_leaves_no_partial_copy(installable, tmp_path):
    script = (
        "import os, signal, sys, shutil\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "calls = []\n"
        "real = shutil.copy2\n"
        "def dying(*a, **k):\n"
        "    calls.append(a)\n"
        "    if len(calls) == 3:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(*a, **k)\n"
        "shutil.copy2 = dying\n"
        "from omni_skill.cli import main\n"
        f"main(['install', '--root', {str(installable)!r}, '--agent', 'claude', '--dest', {str(tmp_path / 'home')!r}])\n"
    )
    assert subprocess.run([sys.executable, "-c", script]).returncode == -9
    base = tmp_path / "home/.claude/skills"
    assert not (base / "vllm-omni").exists()
    assert main(["install", "--root", str(installable), "--agent", "claude", "--dest", str(tmp_path / "home")]) == 0
    assert sorted(p.name for p in base.iterdir()) == ["vllm-omni"]


def test_install_into_a_folder_inside_the_skill_is_refused(installable, capsys):
    capsys.readouterr()
    argv = ["install", "--root", str(installable), "--agent", "claude", "--scope", "project"]
    assert main([*argv, "--dest", str(installable / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is inside the skill itself" in err, err
    assert not (installable / "sub").exists()


def test_install_over_a_folder_that_holds_the_skill_is_refused(installable, tmp_path, capsys):
    import shutil

    project = tmp_path / "project"
    root = project / ".claude/skills/vllm-omni/source"
    shutil.copytree(installable, root)
    before = snapshot(root)
    capsys.readouterr()
    argv = ["install", "--root", str(root), "--agent", "claude", "--scope", "project", "--dest", str(project)]
    assert main([*argv, "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the skill being installed" in err, err
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("rel", "verb", "code", "text"),
    [
        ("references/architecture-search/search-space.yaml", "search-space", 1, "is not a regular file (a FIFO)"),
        ("references/architecture-search/models.yaml", "models", 2, "is not a regular file (a FIFO)"),
        ("evidence/index.schema.json", "check", 1, "evidence/index.schema.json: schema-stale"),
    ],
    ids=["search-space", "models", "schema"],
)
def test_a_fifo_among_the_data_a_verb_reads_alone_never_hangs(pinned_skill, capsys, rel, verb, code, text):
    import os

    skill, _ = pinned_skill
    (skill / rel).parent.mkdir(parents=True, exist_ok=True)
    (skill / rel).unlink(missing_ok=True)
    os.mkfifo(skill / rel)
    capsys.readouterr()
    assert main([verb, "--root", str(skill)]) == code
    captured = capsys.readouterr()
    assert text in captured.out + captured.err, captured
