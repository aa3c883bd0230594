"""`find NAME`: places ranked by centrality, data entries, spellings, suggestions, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import make_skill
from omni_skill import find as find_module
from omni_skill.cli import main
from omni_skill.find import find, parse_query
from omni_skill.snapshot import Snapshot, cells, table_rows

ENTRY = """\
# Branch

Read this when: testing.

See [placement](placement.md) and [batching](batching.md).

Prose that mentions `max_num_seqs` once.
"""

PLACEMENT = """\
# Placement

## Stage pools

A replica is picked by [`StagePool.pick`][src:pkg/pool.py::StagePool.pick].

| setting | meaning |
|---|---|
| `max_num_seqs` | requests per step, read by [`build`][src:pkg/config.py::StageConfig.build] |
| `devices` | which GPUs; see `max_num_seqs` |

## Endpoints

Speech is served at `POST /v1/audio/speech`; the file `vllm_omni/deploy/qwen3_tts.yaml` places it.
"""

BATCHING = """\
# Batching

## `max_num_seqs`

- `max_num_seqs`: the per-stage cap.
- other items mention `--max-num-seqs` as a flag.

```bash
max_num_seqs_in_a_code_block
```
"""

SEARCH_SPACE = """\
version: 1
settings:
  - name: max_num_seqs
    scope: per-stage
    source: src:pkg/config.py::StageConfig.max_num_seqs
    read_by:
      - src:pkg/config.py::StageConfig.build
    default: 64
    type: int
    stage_types: [all]
    label: existing setting
    measure: throughput
"""

MODELS = """\
version: 1
pipelines:
  - key: qwen3_tts
    source: src:pkg/registry.py::PIPELINES
    value: QWEN3_TTS_PIPELINE
    configs:
      - name: QWEN3_TTS_PIPELINE
        source: src:pkg/tts.py::QWEN3_TTS_PIPELINE
        model_type: qwen3_tts
        model_arch: Qwen3TTSForConditionalGeneration
        stages:
          - {stage_id: 0, model_stage: talker, execution_type: LLM_AR, final_output: false}
        deploy:
          - source: src:vllm_omni/deploy/qwen3_tts.yaml
            role: default
diffusion:
  - arch: FooPipeline
    class: src:pkg/foo.py::FooPipeline
    request_batch: {value: true, source: "src:pkg/foo.py::FooPipeline.supports_request_batch"}
"""

TEST_MAP = """\
version: 1
subsystems:
  - name: stage pool
    covers: replica choice
    source: src:pkg/pool.py::StagePool.pick
    tests:
      - pytest: tests/test_pool.py::test_pick_round_robin
        markers: [cpu]
        hardware: cpu
  - name: scheduler
    covers: batching
    source: src:pkg/sched.py::Scheduler
    tests:
      - pytest: tests/test_sched.py::test_caps_at_max_num_seqs
        markers: [cpu]
        hardware: cpu
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_skill(
        tmp_path / "skill",
        ENTRY,
        {
            "references/branch/placement.md": PLACEMENT,
            "references/branch/batching.md": BATCHING,
            "references/architecture-search/search-space.yaml": SEARCH_SPACE,
            "references/architecture-search/models.yaml": MODELS,
            "references/extension-validation/test-map.yaml": TEST_MAP,
        },
    )


def places_of(root: Path, name: str) -> list[tuple[str, int, str]]:
    return [(p.file.rsplit("/", 1)[-1], p.line, p.what) for p in find(root, name).places]


def test_a_heading_ranks_first_and_its_page_owns_the_name(root: Path) -> None:
    result = find(root, "max_num_seqs")
    assert result.owner == "references/branch/batching.md"
    assert (result.places[0].file, result.places[0].line, result.places[0].what) == (
        "references/branch/batching.md",
        3,
        "heading",
    )


def test_a_table_row_whose_first_cell_names_it_outranks_a_citation_and_prose(root: Path) -> None:
    found = places_of(root, "max_num_seqs")
    assert ("placement.md", 9, "table row") in found
    assert found.index(("placement.md", 9, "table row")) < found.index(("README.md", 7, "code"))


def test_an_entry_page_routes_so_a_content_page_owns_the_name(tmp_path: Path) -> None:
    entry = "# Branch\n\n## `foo_key`\n\n| task | page |\n|---|---|\n| `foo_key` | [c](c.md) |\n"
    skill = make_skill(tmp_path / "skill", entry, {"references/branch/c.md": "# C\n\nProse about `foo_key`.\n"})
    found = places_of(skill, "foo_key")
    assert found == [("c.md", 3, "code"), ("README.md", 3, "heading")]


def test_a_release_comparison_page_ranks_after_the_page_that_explains_the_name(tmp_path: Path) -> None:
    pages = {
        "references/serving-tuning/newest-releases.md": "# Newest\n\n## `foo_key`\n\nChanged in 0.30.0.\n",
        "references/branch/c.md": "# C\n\nProse about `foo_key`.\n",
    }
    skill = make_skill(tmp_path / "skill", "# Branch\n", pages)
    assert find(skill, "foo_key").owner == "references/branch/c.md"


def test_a_tie_goes_to_the_page_citing_the_settings_source_label(tmp_path: Path) -> None:
    many = "# Many\n\n| key | note |\n|---|---|\n| `max_num_seqs` | `max_num_seqs`, `max_num_seqs` |\n"
    many += "\nAlso `max_num_seqs` here.\n"
    cites = "# Cites\n\n| key | field |\n|---|---|\n"
    cites += "| `max_num_seqs` | [f][src:pkg/config.py::StageConfig.max_num_seqs] |\n"
    pages = {
        "references/branch/many.md": many,
        "references/branch/cites.md": cites,
        "references/architecture-search/search-space.yaml": SEARCH_SPACE,
    }
    skill = make_skill(tmp_path / "skill", "# Branch\n", pages)
    result = find(skill, "max_num_seqs")
    assert result.owner == "references/branch/cites.md"
    assert [p.file.rsplit("/", 1)[-1] for p in result.places] == ["cites.md", "many.md"]
    (skill / "references/architecture-search/search-space.yaml").write_text(
        SEARCH_SPACE.replace("StageConfig.max_num_seqs", "StageConfig.other")
    )
    assert find(skill, "max_num_seqs").owner == "references/branch/many.md"  # more lines break the tie


def test_a_section_is_one_place_with_every_line_that_names_it(root: Path) -> None:
    place = next(p for p in find(root, "max_num_seqs").places if p.heading == "Stage pools")
    assert (place.line, place.lines) == (9, [9, 10])


def test_a_list_item_led_by_the_name_is_a_list_item_place(root: Path) -> None:
    snapshot = Snapshot(root)
    roles = {(t.line, t.role) for t in snapshot.page("references/branch/batching.md").terms if t.via == "code"}
    assert (5, "list-lead") in roles and (6, "item") in roles


def test_code_blocks_are_not_places(root: Path) -> None:
    assert find(root, "max_num_seqs_in_a_code_block").places == []


def test_a_word_seen_only_in_a_code_block_is_not_suggested(root: Path) -> None:
    assert "max_num_seqs_in_a_code_block" not in find(root, "max_num_seqs_in_a_code_blok").suggestions
    assert "StagePool.pick" in find(root, "StagePool.pik").suggestions


@pytest.mark.parametrize("spelling", ["max_num_seqs", "max-num-seqs", "--max-num-seqs", "MAX_NUM_SEQS"])
def test_setting_and_flag_spellings_are_one_name(root: Path, spelling: str) -> None:
    assert places_of(root, spelling) == places_of(root, "max_num_seqs")


def test_a_symbol_is_found_by_its_last_segment(root: Path) -> None:
    assert places_of(root, "pick") == places_of(root, "StagePool.pick") == [("placement.md", 5, "citation")]


def test_a_class_finds_the_citations_of_its_members(root: Path) -> None:
    assert places_of(root, "StagePool") == [("placement.md", 5, "citation of a member")]


def test_an_endpoint_path_is_found_whole(root: Path) -> None:
    assert places_of(root, "/v1/audio/speech") == [("placement.md", 14, "code")]


def test_a_file_is_found_by_its_name(root: Path) -> None:
    assert places_of(root, "qwen3_tts.yaml") == [("placement.md", 14, "code")]


def test_the_search_space_entry_shows_scope_default_and_owner(root: Path) -> None:
    entry = next(e for e in find(root, "--max-num-seqs").entries if e.kind == "setting")
    assert (entry.line, entry.fields["scope"], entry.fields["default"]) == (3, "per-stage", "64")
    assert entry.fields["source"] == "src:pkg/config.py::StageConfig.max_num_seqs"


def test_a_reader_symbol_lists_the_settings_it_reads(root: Path) -> None:
    entry = next(e for e in find(root, "StageConfig.build").entries if e.kind == "read-by")
    assert entry.fields == {"settings": ["max_num_seqs"]}


def test_a_pipeline_key_architecture_or_config_finds_its_catalogue_entry(root: Path) -> None:
    for name in ("qwen3_tts", "QWEN3_TTS_PIPELINE", "Qwen3TTSForConditionalGeneration"):
        entries = [(e.kind, e.name, e.line) for e in find(root, name).entries if e.file.endswith("models.yaml")]
        assert entries == [("pipeline", "qwen3_tts", 3)], name


def test_a_deploy_file_finds_the_pipeline_that_uses_it(root: Path) -> None:
    entries = [(e.kind, e.name) for e in find(root, "qwen3_tts.yaml").entries]
    assert entries == [("deploy", "qwen3_tts")]


def test_a_diffusion_architecture_finds_its_entry(root: Path) -> None:
    (entry,) = find(root, "FooPipeline").entries
    assert entry.kind == "diffusion" and "request batching yes" in entry.summary


def test_test_map_entries_by_source_and_by_test_name(root: Path) -> None:
    assert [e.name for e in find(root, "pick").entries if e.kind == "tests"] == ["stage pool"]
    assert [e.name for e in find(root, "max_num_seqs").entries if e.kind == "tests"] == ["scheduler"]


def test_a_malformed_facts_file_gives_no_fact_entries(root: Path) -> None:
    (root / "evidence").mkdir()
    (root / "evidence/facts.json").write_text("{}")
    assert find_module.release_facts(root, parse_query("max_num_seqs")) == []


def test_release_facts_give_the_pin_value_and_the_release_that_removed_it(root: Path) -> None:
    from omni_skill.facts import PIN, EngineStamp, Fact, facts_json, timeline

    flag = Fact(kind="flag", name="--max-num-seqs", default=8, where="vllm_omni/serve.py:3")
    old = Fact(kind="flag", name="--stage-configs-path", where="vllm_omni/serve.py:4")
    stamps = [EngineStamp(id="1.0.0", date="2026-01-01"), EngineStamp(id=PIN, date="2026-02-01", revision="a" * 40)]
    (root / "evidence").mkdir()
    text = facts_json(timeline(stamps, {"1.0.0": [flag, old], PIN: [flag]}, "a" * 40))
    (root / "evidence/facts.json").write_text(text)
    [entry] = find_module.release_facts(root, parse_query("max_num_seqs"))
    assert entry.summary == "fact flag --max-num-seqs · pin: = 8 vllm_omni/serve.py:3 · first 1.0.0"
    [gone] = find_module.release_facts(root, parse_query("--stage-configs-path"))
    assert "absent at the pin" in gone.summary and "removed after 1.0.0" in gone.summary


def test_an_unknown_name_exits_1_with_suggestions(root: Path, capsys) -> None:
    assert main(["find", "--root", str(root), "max_num_seq"]) == 1
    out = capsys.readouterr().out
    assert "did you mean: max_num_seqs" in out


def test_json_output_lists_entries_places_and_the_total(root: Path, capsys) -> None:
    assert main(["find", "--root", str(root), "--format", "json", "--limit", "1", "max_num_seqs"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["found"], len(data["places"]), data["total_places"]) == (True, 1, 3)
    assert {e["kind"] for e in data["entries"]} == {"setting", "tests"}


def test_text_output_is_bounded_by_the_limit(root: Path, capsys) -> None:
    assert main(["find", "--root", str(root), "--limit", "1", "--", "--max-num-seqs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "  … 2 more sections (--limit N, or --format json)"
    assert len(lines) == 6  # header, two entries, the places line, one place, the rest


@pytest.mark.parametrize("argv", [["find", ""], ["find", "--limit", "0", "x"], ["find", "x" * 201]])
def test_bad_arguments_are_usage_errors(root: Path, argv: list[str], capsys) -> None:
    try:
        code = main([*argv[:1], "--root", str(root), *argv[1:]])
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_table_rows_and_cells_follow_pipe_tables() -> None:
    lines = ["intro", "| a | b |", "|---|:-:|", "| `x` | y \\| z |", "after"]
    assert table_rows(lines) == {1: False, 3: True}
    assert cells(lines[3]) == [" `x` ", " y \\| z "]


def test_pages_without_the_name_are_not_parsed(root: Path) -> None:
    snapshot = Snapshot(root)
    snapshot.pages("stagepool")
    assert set(snapshot._pages) == {"references/branch/placement.md"}


def test_path_constants_match_their_owners() -> None:
    from omni_skill import catalogue, datafiles, searchspace, snapshot

    assert snapshot.SEARCH_SPACE_PATH == searchspace.SEARCH_SPACE_PATH
    assert snapshot.MODELS_PATH == catalogue.MODELS_PATH
    assert snapshot.TEST_MAP_PATH == datafiles.TEST_MAP_PATH


def test_find_does_not_import_pydantic(root: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys; sys.path.insert(0, 'scripts'); from omni_skill.cli import main; "
        f"main(['find', '--root', {str(root)!r}, 'max_num_seqs']); print('pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert done.stdout.splitlines()[-1] == "False"
