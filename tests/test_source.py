"""`Source.prefetch` reads many blobs in one git run and leaves to `text` what `text` refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit_files, new_repo
from omni_skill import source as source_module
from omni_skill.errors import UsageError
from omni_skill.source import BlobError, Source


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    repo = new_repo(tmp_path / "engine")
    sha = commit_files(
        repo,
        {
            "a.py": "A = 1\n",
            "b.py": "B = 2\n",
            "same.py": "A = 1\n",  # the blob of a.py again: both paths get it
            "big.py": "x = 1\n" * 40,
            "bin.dat": b"\x00\x01",
            "latin.txt": b"caf\xe9\n",
        },
        "files",
    )
    return tmp_path / "engine", sha


def test_prefetch_reads_the_same_text_as_text(repo):
    fetched = Source(*repo)
    fetched.prefetch(["a.py", "b.py", "same.py", "big.py", "absent.py"])
    assert set(fetched._texts) == {"a.py", "b.py", "same.py", "big.py"}
    single = Source(*repo)
    for path in ("a.py", "b.py", "same.py", "big.py"):
        assert fetched.text(path) == single.text(path)


def test_prefetch_leaves_refused_blobs_to_text(repo):
    fetched = Source(*repo)
    fetched.prefetch(["bin.dat", "latin.txt", "a.py"])
    assert "bin.dat" not in fetched._texts and "latin.txt" not in fetched._texts
    with pytest.raises(BlobError, match="binary"):
        fetched.text("bin.dat")
    with pytest.raises(BlobError, match="UTF-8"):
        fetched.text("latin.txt")
    with pytest.raises(KeyError):
        fetched.text("absent.py")


def test_prefetch_skips_a_blob_over_the_size_limit(repo, monkeypatch):
    monkeypatch.setattr(source_module, "MAX_BLOB_BYTES", 100)
    fetched = Source(*repo)
    fetched.prefetch(["big.py", "a.py"])
    assert "big.py" not in fetched._texts and fetched._texts["a.py"] == "A = 1\n"
    with pytest.raises(BlobError, match="larger than 100 bytes"):
        fetched.text("big.py")


def test_prefetch_charges_the_read_budget(repo, monkeypatch):
    from omni_skill import safeio

    monkeypatch.setattr(safeio, "MAX_RUN_READ", 10)
    monkeypatch.setattr(safeio, "_run_read", 0)
    with pytest.raises(UsageError, match="this run has read over 10 bytes"):
        Source(*repo).prefetch(["big.py", "a.py"])
