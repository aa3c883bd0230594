import pytest

from conftest import CONFIG_PY, DEPLOY_YAML, GUIDE_MD
from omni_skill.anchors import AnchorError, Span, fingerprint, lines, markdown, python, yaml_keys


@pytest.mark.parametrize(
    ("anchor", "span"),
    [
        ("MAX_STAGES", Span(5, 5)),
        ("TIMEOUT", Span(6, 6)),
        ("StageConfig", Span(13, 29)),  # from the decorator line
        ("StageConfig.max_num_seqs", Span(17, 17)),
        ("StageConfig.name", Span(21, 21)),
        ("StageConfig.build", Span(23, 25)),  # decorator included
        ("StageConfig.Inner", Span(27, 29)),
        ("StageConfig.Inner.run", Span(28, 29)),
        ("start", Span(32, 33)),  # async function
        ("Alias#1", Span(37, 37)),
        ("Alias#2", Span(39, 39)),
        ("load#3", Span(46, 47)),
    ],
)
def test_python_anchor_spans(anchor, span):
    assert python.locate(CONFIG_PY, anchor) == span


def test_python_name_defined_twice_is_ambiguous():
    with pytest.raises(AnchorError, match="defined 2 times") as info:
        python.locate(CONFIG_PY, "Alias")
    assert info.value.kind == "ambiguous"


def test_python_overloads_are_ambiguous():
    with pytest.raises(AnchorError) as info:
        python.locate(CONFIG_PY, "load")
    assert info.value.kind == "ambiguous"


def test_python_missing_symbol():
    with pytest.raises(AnchorError) as info:
        python.locate(CONFIG_PY, "StageConfig.nothing")
    assert info.value.kind == "missing"


def test_python_occurrence_past_the_end_is_missing():
    with pytest.raises(AnchorError, match="not 3"):
        python.locate(CONFIG_PY, "Alias#3")


def test_python_syntax_error_is_invalid():
    with pytest.raises(AnchorError) as info:
        python.locate("def broken(:\n", "broken")
    assert info.value.kind == "invalid"


@pytest.mark.parametrize(
    ("anchor", "span"),
    [
        ("stages", Span(2, 9)),
        ("stages[0]", Span(3, 6)),
        ("stages[0].engine_args", Span(4, 6)),
        ("stages[0].engine_args.max_num_seqs", Span(5, 5)),
        ("stages[1].devices", Span(9, 9)),
        ("connectors.kind", Span(11, 11)),
    ],
)
def test_yaml_key_paths(anchor, span):
    assert yaml_keys.locate(DEPLOY_YAML, anchor) == span


@pytest.mark.parametrize("anchor", ["stages[2]", "stages[0].nope", "connectors.kind.deeper", "nothing"])
def test_yaml_missing_keys(anchor):
    with pytest.raises(AnchorError) as info:
        yaml_keys.locate(DEPLOY_YAML, anchor)
    assert info.value.kind == "missing"


def test_yaml_value_node():
    assert yaml_keys.node_at(DEPLOY_YAML, "stages[0].engine_args.gpu_memory_utilization").value == "0.8"


@pytest.mark.parametrize(
    ("slug", "span"),
    [
        ("#guide", Span(1, 19)),
        ("#deploy-a-model", Span(5, 7)),
        ("#deploy-a-model-1", Span(9, 15)),
        ("#details-x", Span(13, 15)),
        ("#tuning--speed", Span(17, 19)),
    ],
)
def test_markdown_sections_with_github_slugs(slug, span):
    assert markdown.locate(GUIDE_MD, slug) == span


def test_markdown_missing_heading():
    with pytest.raises(AnchorError):
        markdown.locate(GUIDE_MD, "#nothing")


def test_line_range_past_end():
    with pytest.raises(AnchorError, match="past the end"):
        lines.locate("a\nb\n", "L2-L3")


def test_fingerprint_ignores_trailing_whitespace_only():
    a = fingerprint(["x = 1   ", "y"], Span(1, 2))
    assert a == fingerprint(["x = 1", "y"], Span(1, 2))
    assert a != fingerprint(["x = 2", "y"], Span(1, 2))
