import pytest

from omni_skill.labels import LabelError, escape, parse_label, scan_markdown


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("src:a/b.py::Class.method", "python"),
        ("src:a/b.py::name#2", "python"),
        ("src:a/b.yaml::stages[0].engine_args.max_num_seqs", "yaml"),
        ("src:a/b.yml::top", "yaml"),
        ("src:docs/x.md::#deploy-a-model", "markdown"),
        ("src:a/b.py::L3-L9", "lines"),
        ("src:Dockerfile::L1", "lines"),
        ("src:a/b.py", "file"),
    ],
)
def test_label_kinds(text, kind):
    assert parse_label(text).kind == kind
    assert parse_label(text).text == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("src:../etc/passwd", "'..'"),
        ("src:/abs/x.py", "absolute"),
        ("src:a\\b.py", "backslash"),
        ("src:a/b.py::", "empty anchor"),
        ("src:a/b.py::1abc", "malformed python anchor"),
        ("src:a/b.py::A..b", "malformed python anchor"),
        ("src:a/b.md::no-hash", "malformed markdown anchor"),
        ("src:Dockerfile::FROM", "takes only a line range"),
        ("src:a/b.py::L9-L3", "reversed"),
        ("src:a/b.py::A::B", "more than one"),
        ("src:", "empty path"),
        ("file:a.py", "does not start"),
    ],
)
def test_bad_labels(text, reason):
    with pytest.raises(LabelError, match=reason):
        parse_label(text)


def test_scan_finds_uses_and_definitions_outside_code():
    text = (
        "See [x][src:a.py::A] and [y][src:b.yaml::k\\[0\\]].\n"
        "```\n[z][src:c.py::C]\n```\n"
        "[src:a.py::A]: https://example.invalid/a\n"
    )
    scanned = scan_markdown("p.md", text)
    assert [(u.line, u.text) for u in scanned.uses] == [(1, "src:a.py::A"), (1, "src:b.yaml::k[0]")]
    assert [(d.line, d.text, d.url) for d in scanned.definitions] == [(5, "src:a.py::A", "https://example.invalid/a")]


def test_unescaped_bracket_is_reported_as_malformed():
    scanned = scan_markdown("p.md", "See [y][src:b.yaml::k[0]].\n")
    assert scanned.uses == []
    assert [m.line for m in scanned.malformed] == [1]


def test_escape_round_trip():
    assert escape("src:b.yaml::k[0].v") == "src:b.yaml::k\\[0\\].v"
