"""check --source runs the engine checks that read no page in a forked process when there is a
second CPU: same report as running them in one process, errors come back as they would there."""

from __future__ import annotations

import json
import os
import signal

import pytest

from omni_skill import parallel
from omni_skill.cli import main
from omni_skill.errors import UsageError
from omni_skill.findings import Finding
from omni_skill.source import Source

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def both_ways(args: list[str], capsys, monkeypatch) -> list[tuple[int, str, str]]:
    """The command's result with the engine checks forked, then run in this process."""
    results = []
    for count in (2, 1):
        monkeypatch.setattr(parallel, "cpus", lambda count=count: count)
        results.append(run(args, capsys))
    return results


@needs_fork
def test_forked_and_in_process_reports_are_the_same(skill, engine, capsys, monkeypatch):
    path = engine[0]
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", engine[1]]) == 0
    index = skill / "evidence/index.json"
    data = json.loads(index.read_text())
    data["records"][0]["fingerprint"] = "0" * 64  # a record finding, from the forked side
    index.write_text(json.dumps(data, indent=2) + "\n")
    capsys.readouterr()
    for fmt in ("text", "json"):
        forked, serial = both_ways(
            ["check", "--root", str(skill), "--source", str(path), "--format", fmt], capsys, monkeypatch
        )
        assert forked == serial
        assert forked[0] == 1 and "record-mismatch" in forked[1]


@needs_fork
def test_an_error_in_the_child_is_one_line_in_the_parent(skill, engine, capsys, monkeypatch):
    path = engine[0]
    assert main(["resolve", "--root", str(skill), "--source", str(path), "--revision", engine[1]]) == 0
    capsys.readouterr()

    def unreadable(self, rel):
        raise UsageError(f"{self.path}: {rel} is not in this clone")

    monkeypatch.setattr(Source, "text", unreadable)
    forked, serial = both_ways(["check", "--root", str(skill), "--source", str(path)], capsys, monkeypatch)
    assert forked == serial
    code, out, err = forked
    assert code == 2 and out == "" and err.count("\n") == 1 and "is not in this clone" in err


def findings_of(work, source, count, monkeypatch):
    monkeypatch.setattr(parallel, "cpus", lambda: count)
    with parallel.Beside(work, source) as pending:
        return pending.result()


@needs_fork
@pytest.mark.parametrize(
    "raised, expected",
    [
        (KeyError("x"), RuntimeError),
        (KeyboardInterrupt(), KeyboardInterrupt),
        (ModuleNotFoundError("No module named 'pydantic'", name="pydantic"), ModuleNotFoundError),
        (FileNotFoundError(2, "No such file or directory", "/nowhere"), UsageError),
    ],
)
def test_what_the_child_raised_is_raised_in_the_parent(engine, raised, expected, monkeypatch):
    source = Source(engine[0], engine[1])

    def work(_):
        raise raised

    with pytest.raises(expected) as caught:
        findings_of(work, source, 2, monkeypatch)
    if expected is RuntimeError:
        assert str(caught.value) == "KeyError: 'x'"
    if expected is ModuleNotFoundError:
        assert caught.value.name == "pydantic"
    if expected is UsageError:
        assert str(caught.value) == "/nowhere: No such file or directory"


@needs_fork
def test_the_child_works_in_its_own_process_with_its_own_git_handle(engine, monkeypatch):
    source = Source(engine[0], engine[1])

    def work(engine_files):
        assert engine_files is not source and engine_files.repo is not source.repo
        return [Finding(kind="pid", file=str(os.getpid()), message=engine_files.text("pkg/config.py")[:10])]

    (found,) = findings_of(work, source, 2, monkeypatch)
    assert found.file != str(os.getpid()) and found.message == source.text("pkg/config.py")[:10]
    (here,) = findings_of(lambda s: [Finding(kind="pid", file=str(os.getpid()), message="")], source, 1, monkeypatch)
    assert here.file == str(os.getpid())  # one CPU: the work runs in this process


@needs_fork
def test_a_child_killed_before_reporting_is_one_line(engine, monkeypatch):
    source = Source(engine[0], engine[1])

    def work(_):
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(UsageError, match="stopped by signal 9 before reporting"):
        findings_of(work, source, 2, monkeypatch)


@needs_fork
def test_leaving_without_the_result_stops_the_child(engine, monkeypatch):
    source = Source(engine[0], engine[1])
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    with pytest.raises(ValueError):
        with parallel.Beside(lambda _: signal.pause() or [], source) as pending:
            child = pending.pid
            raise ValueError("the parent's own work failed")
    assert child is not None and pending.pid is None
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(child, os.WNOHANG)
