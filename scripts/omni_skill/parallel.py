"""Run one list-of-findings function beside the caller, in a forked process, when the machine has a
second CPU: `check --source` splits its work this way (records and the model catalogue in the
child, the pages and the rest in the parent), and the offline `check` too (the release checks in
the child, given no engine). The child inherits the snapshot already read, so
nothing is read twice; it opens its own git handle (`Source.reopened`), never the parent's, and
leaves with `os._exit`, so no finaliser of the parent's objects runs in it. Without fork or a
second CPU the function runs in the caller when its result is asked for."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .errors import UsageError

if TYPE_CHECKING:
    from .findings import Finding
    from .source import Source

Work = Callable[[Any], list["Finding"]]  # given the engine (its own handle), or None


def cpus() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class Beside:
    """`with Beside(work, source) as pending: ...; pending.result()`. The result raises what the
    work raised: UsageError and OSError as a UsageError with the same message, a missing module
    as ModuleNotFoundError, an interrupt as KeyboardInterrupt, anything else as RuntimeError
    naming the original exception. Leaving the
    block without asking for the result stops the child."""

    def __init__(self, work: Work, source: Source | None):
        self.work, self.source = work, source
        self.pid: int | None = None
        self.read_end = -1

    def __enter__(self) -> Beside:
        if hasattr(os, "fork") and cpus() >= 2:
            self.read_end, write_end = os.pipe()
            self.pid = os.fork()
            if self.pid == 0:  # the child
                os.close(self.read_end)
                _child(self.work, self.source, write_end)
            os.close(write_end)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.pid is not None:  # the result was not asked for
            os.kill(self.pid, signal.SIGKILL)
            os.close(self.read_end)
            os.waitpid(self.pid, 0)
            self.pid = None

    def result(self) -> list[Finding]:
        if self.pid is None:
            return self.work(self.source)
        from .findings import Finding

        with os.fdopen(self.read_end, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        try:
            payload = json.loads(data)
        except ValueError:
            if os.WIFSIGNALED(status):
                how = f"was stopped by signal {os.WTERMSIG(status)}"
            else:
                how = f"exited with status {os.waitstatus_to_exitcode(status)}"
            raise UsageError(f"the engine checks' process {how} before reporting") from None
        kind = payload["kind"]
        if kind == "findings":
            return [Finding(**item) for item in payload["findings"]]
        if kind == "usage":
            raise UsageError(payload["message"])
        if kind == "module":  # the CLI names the package to install
            raise ModuleNotFoundError(payload["message"], name=payload["name"])
        if kind == "interrupted":
            raise KeyboardInterrupt
        raise RuntimeError(payload["message"])


def _child(work: Work, source: Source | None, write_end: int) -> None:
    code = 0
    try:
        try:
            findings = work(source.reopened() if source is not None else None)
            payload: dict[str, object] = {"kind": "findings", "findings": [f.model_dump() for f in findings]}
        except UsageError as exc:
            payload = {"kind": "usage", "message": str(exc)}
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            payload = {"kind": "usage", "message": f"{where}{exc.strerror or exc}"}
        except ModuleNotFoundError as exc:
            payload = {"kind": "module", "message": str(exc), "name": exc.name or ""}
        except KeyboardInterrupt:
            payload = {"kind": "interrupted"}
        except BaseException as exc:  # reported by the parent, which has the CLI's last-resort guard
            payload = {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(write_end, "w", encoding="utf-8") as pipe:
            json.dump(payload, pipe)
    except BaseException:  # the parent reports a child that could not answer
        code = 1
    finally:
        os._exit(code)


class BesideData:
    """`with BesideData(work) as pending: ...; pending.result()`: `work()` (returning JSON data) in
    a forked process beside the caller when the machine has a second CPU, else in the caller when
    the result is asked for. The work must not share open files with the parent (reopen them).
    A failure in the child is a RuntimeError naming it (a UsageError stays one)."""

    def __init__(self, work: Callable[[], object]):
        self.work = work
        self.pid: int | None = None
        self.read_end = -1

    def __enter__(self) -> BesideData:
        if hasattr(os, "fork") and cpus() >= 2:
            self.read_end, write_end = os.pipe()
            self.pid = os.fork()
            if self.pid == 0:  # the child
                os.close(self.read_end)
                code = 0
                try:
                    try:
                        payload: dict[str, object] = {"kind": "data", "data": self.work()}
                    except UsageError as exc:
                        payload = {"kind": "usage", "message": str(exc)}
                    except BaseException as exc:  # reported by the parent
                        payload = {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
                    with os.fdopen(write_end, "w", encoding="utf-8") as pipe:
                        json.dump(payload, pipe)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            os.close(write_end)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            os.close(self.read_end)
            os.waitpid(self.pid, 0)
            self.pid = None

    def result(self) -> object:
        if self.pid is None:
            return self.work()
        with os.fdopen(self.read_end, "rb") as pipe:
            data = pipe.read()
        os.waitpid(self.pid, 0)
        self.pid = None
        try:
            payload = json.loads(data)
        except ValueError:
            raise RuntimeError("the process beside this one stopped before reporting") from None
        if payload["kind"] == "usage":
            raise UsageError(payload["message"])
        if payload["kind"] != "data":
            raise RuntimeError(payload["message"])
        return payload["data"]
