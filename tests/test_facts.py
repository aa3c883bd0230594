"""Release facts: extraction by AST from a small engine, the shipped timeline, `facts` and `since`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit_files
from omni_skill.cli import main
from omni_skill.facts import FACTS_PATH, PIN, EngineStamp, extract, facts_json, load_facts, timeline
from omni_skill.trees import FolderTree

SERVE_V1 = """\
import argparse


class ServeCommand:
    def subparser_init(self, subparsers):
        group = subparsers.add_parser("serve").add_argument_group("omni")
        group.add_argument("--omni", action="store_true")
        group.add_argument("--stage-configs-path", type=str, default=None)
        group.add_argument("--init-timeout", type=int, default=300)
        group.add_argument("--mode", choices=["a", "b"], default="a")
        group.add_argument("--async-chunk", action=argparse.BooleanOptionalAction, default=None)
"""

SERVE_V2 = SERVE_V1.replace("default=300", "default=600").replace(
    '        group.add_argument("--stage-configs-path", type=str, default=None)\n',
    '        group.add_argument("--deploy-config", type=str, default=None)\n',
)

STAGE_CONFIG = """\
from dataclasses import dataclass, field

_STAGE_RESERVED_KEYS = frozenset({"stage_id", "devices"})


@dataclass
class StageDeployConfig:
    stage_id: int
    max_num_seqs: int = 64
    devices: str = "0"
    extras: dict = field(default_factory=dict)
    ratio: float = field(default=0.9)


class NotAConfigHelper:
    ignored: int = 1
"""

ENVS = """\
import os

CHUNK = int(os.getenv("OMNI_CHUNK", "16"))
if "OMNI_DEBUG" in os.environ:
    pass
os.environ["OMNI_WRITTEN"] = "1"
TOKEN = os.environ["OMNI_TOKEN"]
"""

REGISTRY = """\
OMNI_PIPELINES = {
    "alpha": object(),
    "beta": object(),
}
"""


def write_tree(root: Path, files: dict[str, str]) -> FolderTree:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return FolderTree(root, "9.9.9", frozenset({"vllm_omni"}))


ENGINE_V1 = {
    "vllm_omni/entrypoints/cli/serve.py": SERVE_V1,
    "vllm_omni/config/stage_config.py": STAGE_CONFIG,
    "vllm_omni/envs.py": ENVS,
    "vllm_omni/config/pipeline_registry.py": REGISTRY,
    "vllm_omni/deploy/alpha.yaml": "stages: []\n",
}


def facts_of(tmp_path: Path, files: dict[str, str], kinds: set[str] | None = None) -> dict[str, object]:
    tree = write_tree(tmp_path, files)
    return {f"{f.kind} {f.name}": f for f in extract(tree, tree.paths(), kinds)}


def test_serve_flags_with_literal_defaults(tmp_path):
    found = facts_of(tmp_path, ENGINE_V1, {"flag"})
    assert sorted(found) == [
        "flag --async-chunk",
        "flag --init-timeout",
        "flag --mode",
        "flag --omni",
        "flag --stage-configs-path",
    ]
    assert found["flag --init-timeout"].default == 300
    assert found["flag --init-timeout"].where == "vllm_omni/entrypoints/cli/serve.py:9"
    assert found["flag --mode"].attrs["choices"] == ["a", "b"]
    assert found["flag --async-chunk"].attrs["action"] == "BooleanOptionalAction"
    assert found["flag --omni"].default is False and found["flag --omni"].attrs["implicit_default"] is True


def test_config_fields_of_config_classes_only(tmp_path):
    found = facts_of(tmp_path, ENGINE_V1, {"config-field"})
    assert "config-field StageDeployConfig.max_num_seqs" in found
    assert not any("NotAConfigHelper" in key for key in found)
    assert found["config-field StageDeployConfig.ratio"].default == 0.9
    assert found["config-field StageDeployConfig.extras"].attrs["factory"] == "dict"
    assert found["config-field StageDeployConfig.stage_id"].attrs["required"] is True


def test_environment_reads_not_writes(tmp_path):
    found = facts_of(tmp_path, ENGINE_V1, {"env"})
    assert sorted(found) == ["env OMNI_CHUNK", "env OMNI_DEBUG", "env OMNI_TOKEN"]
    assert found["env OMNI_CHUNK"].default == "16"
    assert found["env OMNI_TOKEN"].attrs == {"required": True}


def test_registries_and_bundled_files(tmp_path):
    found = facts_of(tmp_path, ENGINE_V1, {"pipeline", "deploy-file", "reserved-key"})
    assert sorted(found) == [
        "deploy-file alpha.yaml",
        "pipeline alpha",
        "pipeline beta",
        "reserved-key devices",
        "reserved-key stage_id",
    ]


def test_a_module_that_does_not_parse_states_no_facts(tmp_path):
    files = {**ENGINE_V1, "vllm_omni/entrypoints/cli/serve.py": "def broken(:\n"}
    assert facts_of(tmp_path, files, {"flag"}) == {}


def shipped_skill(root: Path, tmp_path: Path) -> Path:
    """The skill fixture with a facts timeline of two releases and the pin."""
    per_engine = {}
    for version, files in (
        ("1.0.0", ENGINE_V1),
        ("2.0.0", {**ENGINE_V1, "vllm_omni/entrypoints/cli/serve.py": SERVE_V2}),
    ):
        tree = write_tree(tmp_path / version, files)
        per_engine[version] = extract(tree, tree.paths())
    per_engine[PIN] = per_engine["2.0.0"]
    stamps = [
        EngineStamp(id="2.0.0", date="2026-02-01T00:00:00"),
        EngineStamp(id="1.0.0", date="2026-01-01T00:00:00"),
        EngineStamp(id=PIN, date="2026-03-01T00:00:00+00:00", revision="a" * 40),
    ]
    (root / "evidence").mkdir(exist_ok=True)
    (root / FACTS_PATH).write_text(facts_json(timeline(stamps, per_engine, "a" * 40)), encoding="utf-8")
    return root


def test_timeline_merges_equal_engines_into_one_era(skill, tmp_path):
    loaded = load_facts(shipped_skill(skill, tmp_path))
    assert loaded is not None and loaded.order() == ["1.0.0", "2.0.0", PIN]
    by_name = {t.name: t for t in loaded.facts}
    assert [era.engines for era in by_name["--init-timeout"].eras] == [["1.0.0"], ["2.0.0", PIN]]
    assert [era.default for era in by_name["--init-timeout"].eras] == [300, 600]
    assert [era.engines for era in by_name["--mode"].eras] == [["1.0.0", "2.0.0", PIN]]


def test_facts_release_reads_the_shipped_data(skill, tmp_path, capsys):
    root = shipped_skill(skill, tmp_path)
    assert main(["facts", "--root", str(root), "--release", "1.0.0", "--kind", "flag", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = {f["name"]: f for f in data["facts"]}
    assert "--stage-configs-path" in names and "--deploy-config" not in names
    assert names["--init-timeout"]["default"] == 300
    assert names["--init-timeout"]["url"].endswith("/blob/v1.0.0/vllm_omni/entrypoints/cli/serve.py#L9")


def test_facts_name_matches_flag_spellings(skill, tmp_path, capsys):
    root = shipped_skill(skill, tmp_path)
    assert main(["facts", "--root", str(root), "init_timeout"]) == 0
    assert "flag --init-timeout = 600" in capsys.readouterr().out


def test_facts_unknown_release_is_a_usage_error(skill, tmp_path, capsys):
    root = shipped_skill(skill, tmp_path)
    assert main(["facts", "--root", str(root), "--release", "0.1.0"]) == 2
    err = capsys.readouterr().err
    assert "no shipped facts for release '0.1.0'" in err and "1.0.0, 2.0.0, pin" in err


def test_since_names_the_release_that_removed_a_flag(skill, tmp_path, capsys):
    root = shipped_skill(skill, tmp_path)
    assert main(["since", "--root", str(root), "--", "--stage-configs-path"]) == 0
    out = capsys.readouterr().out
    assert "first in 1.0.0; removed after 1.0.0; absent in 2.0.0, pin" in out


def test_since_unknown_name_exits_1(skill, tmp_path, capsys):
    root = shipped_skill(skill, tmp_path)
    assert main(["since", "--root", str(root), "--", "--no-such-flag"]) == 1


def test_facts_live_from_git_at_a_revision(tmp_path, capsys, skill):
    import git

    repo = git.Repo.init(tmp_path / "engine")
    first = commit_files(repo, dict(ENGINE_V1), "v1")
    commit_files(repo, {"vllm_omni/entrypoints/cli/serve.py": SERVE_V2}, "v2")
    args = ["facts", "--root", str(skill), "--source", str(tmp_path / "engine"), "--kind", "flag", "--format", "json"]
    assert main([*args, "--revision", first]) == 0
    old = {f["name"] for f in json.loads(capsys.readouterr().out)["facts"]}
    assert main([*args, "--revision", "HEAD"]) == 0
    new = {f["name"] for f in json.loads(capsys.readouterr().out)["facts"]}
    assert old - new == {"--stage-configs-path"} and new - old == {"--deploy-config"}


def test_a_malformed_facts_file_is_one_line(skill, capsys):
    (skill / "evidence").mkdir(exist_ok=True)
    (skill / FACTS_PATH).write_text('{"version": 1}', encoding="utf-8")
    assert main(["facts", "--root", str(skill)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a valid facts file" in err


@pytest.mark.parametrize("kind", ["nonsense"])
def test_unknown_kind_is_a_usage_error(skill, tmp_path, capsys, kind):
    root = shipped_skill(skill, tmp_path)
    assert main(["facts", "--root", str(root), "--kind", kind]) == 2


def test_release_notes_list_what_differs_from_the_pin(skill, tmp_path):
    from omni_skill.releasenotes import differences

    loaded = load_facts(shipped_skill(skill, tmp_path))
    assert loaded is not None
    found = {d.name: d for d in differences(loaded, "1.0.0", {"init_timeout"})}
    assert found["--init-timeout"].there == "= 300" and found["--init-timeout"].pinned == "= 600"
    assert found["--init-timeout"].mentioned and not found["--stage-configs-path"].mentioned
    assert found["--stage-configs-path"].pinned == "absent"
    assert found["--deploy-config"].there == "absent"
    assert "--mode" not in found  # the same in both


def test_an_edited_release_notes_page_is_stale(skill, tmp_path):
    from omni_skill.checks import check_release_notes
    from omni_skill.releasenotes import NOTES_DIR, notes_pages
    from omni_skill.skill import markdown_files

    root = shipped_skill(skill, tmp_path)
    loaded = load_facts(root)
    assert loaded is not None
    for rel, text in notes_pages(root, loaded, markdown_files(root), {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    assert check_release_notes(root) == []
    page = root / NOTES_DIR / "1.0.0.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert [f.kind for f in check_release_notes(root)] == ["release-notes-stale"]


ENTRY = """\
from typing import overload


class Omni:
    def __init__(self, model: str, **kwargs):
        self.timeout = kwargs.pop("stage_init_timeout", 300)
        self.mode = kwargs.get("worker_backend", "multi_process")

    @overload
    def generate(self, prompts, py_generator: bool): ...

    def generate(self, prompts, sampling_params_list=None, use_tqdm=True):
        return prompts
"""


def test_entry_keywords_read_through_kwargs_and_the_implementation_not_its_overloads(tmp_path):
    found = facts_of(tmp_path, {"vllm_omni/entrypoints/omni.py": ENTRY}, {"entry-kwarg"})
    assert found["entry-kwarg Omni.__init__:stage_init_timeout"].default == 300
    assert found["entry-kwarg Omni.__init__:stage_init_timeout"].attrs == {"via": "**kwargs"}
    assert found["entry-kwarg Omni.__init__:worker_backend"].default == "multi_process"
    assert found["entry-kwarg Omni.generate:use_tqdm"].default is True
    assert "entry-kwarg Omni.generate:py_generator" not in found


def test_drift_facts_block_compares_an_unknown_engine_with_the_pin(skill, tmp_path):
    from omni_skill.releasenotes import facts_block

    root = shipped_skill(skill, tmp_path)  # the pin has --init-timeout = 600 and --deploy-config
    (root / "references/branch/README.md").write_text(
        (root / "references/branch/README.md").read_text() + "\nSet `--init-timeout` and `--deploy-config`.\n"
    )
    tree = write_tree(tmp_path / "yours", ENGINE_V1)  # 300, and --stage-configs-path instead
    block = facts_block(root, ["references/branch/README.md"], None, tree, tree.paths())
    rows = {r["name"]: (r["there"], r["pinned"]) for r in block["rows"]}
    assert rows == {"--init-timeout": ("= 300", "= 600"), "--deploy-config": ("absent", "= None")}


def test_drift_facts_block_of_a_known_release_reads_the_shipped_facts(skill, tmp_path):
    from omni_skill.releasenotes import facts_block

    root = shipped_skill(skill, tmp_path)
    (root / "references/branch/README.md").write_text("# Branch\n\nSet `--init-timeout`.\n")
    block = facts_block(root, ["references/branch/README.md"], "1.0.0")
    assert block["rows"] == [
        {
            "kind": "flag",
            "name": "--init-timeout",
            "there": "= 300",
            "pinned": "= 600",
            "where": block["rows"][0]["where"],
        }
    ]
    assert block["page"] == "references/serving-tuning/releases/1.0.0.md"


def test_release_pages_link_the_behaviour_pages_that_name_the_release(tmp_path: Path) -> None:
    from omni_skill.releasenotes import behaviour_pages

    pages = {
        "references/b/old.md": "# Old\n\nRead this when: the user runs 0.20.0 or\n0.24.0 and asks.\n\nIn 0.26.0 too.\n",
        "references/b/new.md": "# New\n\nRead this when: the user runs 0.30.0.\n",
        "references/b/plain.md": "# Plain\n\nMentions 0.24.0 outside the read-this-when line.\n",
    }
    for rel, text in pages.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    found = behaviour_pages(tmp_path, sorted(pages))
    assert found == {
        "0.30.0": ["references/b/new.md"],
        "0.20.0": ["references/b/old.md"],
        "0.24.0": ["references/b/old.md"],
    }


def test_environment_facts_from_git_match_a_folder(tmp_path):
    """A git engine finds the files that read the environment with one search; the facts are the
    ones reading every file finds, a file in a subfolder and one that only writes included."""
    import git

    from omni_skill.source import Source

    files = {
        **ENGINE_V1,
        "vllm_omni/deep/inner/knobs.py": 'import os\nLEVEL = os.environ.get("OMNI_LEVEL", "2")\n',
        "vllm_omni/quiet.py": "VALUE = 1\n",
        "docs/not_python.md": 'os.getenv("OMNI_DOC")\n',
    }
    repo = git.Repo.init(tmp_path / "engine")
    sha = commit_files(repo, files, "engine")
    source = Source(tmp_path / "engine", sha)
    from_git = extract(source, sorted(source.tree), {"env"})
    assert sorted(f.name for f in from_git) == ["OMNI_CHUNK", "OMNI_DEBUG", "OMNI_LEVEL", "OMNI_TOKEN"]
    assert source.containing(("environ", "getenv"), "vllm_omni/*.py") >= {"vllm_omni/deep/inner/knobs.py"}
    assert "vllm_omni/quiet.py" not in source._texts  # never read: the search ruled it out
    assert from_git == extract(write_tree(tmp_path / "folder", files), sorted(files), {"env"})
    assert source.containing(("no_such_word_anywhere",), "vllm_omni/*.py") == set()


def test_a_huge_grep_listing_is_a_usage_error(tmp_path, monkeypatch):
    """The search's listing is bounded like the tree's: past the limit it is one usage error."""
    import git

    from omni_skill import source as source_module
    from omni_skill.errors import UsageError
    from omni_skill.source import Source

    repo = git.Repo.init(tmp_path / "engine")
    sha = commit_files(repo, dict(ENGINE_V1), "engine")
    source = Source(tmp_path / "engine", sha)
    assert source.tree  # listed under the normal limit
    monkeypatch.setattr(source_module, "MAX_TREE_LISTING", 10)
    with pytest.raises(UsageError, match="over 10 bytes"):
        source.containing(("environ",), "vllm_omni/*.py")
