"""`omni-skill`: one command, one verb per task. Data on stdout, diagnostics on stderr.

Exit codes: 0 everything holds, 1 findings, 2 usage or environment errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__
from .errors import UsageError
from .verbs import data, maintain, releases, user_engine
from .verbs.common import (  # noqa: F401  (re-exported: tests check these copies against their owners)
    AGENTS,
    ENV_VAR,
    FORMATS,
    RELEASES_PATH,
    STAGE_TYPES,
    VERSIONS_PAGE,
    WRITERS,
    find_root,
)
from .writes import ChangedMeanwhile

PACKAGES = {
    "yaml": "pyyaml",
    "pydantic": "pydantic",
    "jinja2": "jinja2",
    "markdown_it": "markdown-it-py",
    "git": "gitpython",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omni-skill", description="Check, resolve and bump the vllm-omni skill's source citations."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    maintain.register(verbs)
    user_engine.register(verbs)
    releases.register(verbs)
    data.register(verbs)
    releases.register_facts(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # The file formats are validated by the skill's own models alone: pydantic plugins installed
    # in the environment are not loaded (nor is every installed package's metadata scanned for them).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _safe_streams()
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("omni-skill: interrupted before starting; nothing was written", file=sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in PACKAGES:
            return _internal(args.verb, exc)
        print(
            f"omni-skill {args.verb}: needs the Python package '{PACKAGES[top]}' — python3 -m pip install "
            f"{PACKAGES[top]} (or: uv run scripts/omni-skill {args.verb} …)",
            file=sys.stderr,
        )
        return 2
    except UsageError as exc:
        print(f"omni-skill {args.verb}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except ChangedMeanwhile as exc:
        print(
            f"omni-skill {args.verb}: error: {exc} changed while {args.verb} ran; nothing was written: run it again",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError as exc:
        if _stdout_closed():
            return 1  # the reader went away (`| head`): nothing to say, and nowhere to say it
        return _internal(args.verb, exc)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"omni-skill {args.verb}: error: {where}{_one_line(exc.strerror or str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"omni-skill {args.verb}: interrupted; {_after_interrupt(args)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last resort: each known cause has its own handling
        return _internal(args.verb, exc)


def _one_line(text: str) -> str:
    from .safeio import printable

    return printable(" ".join(text.split()))[:2000]


def _safe_streams() -> None:
    """Output never dies on the encoding of stdout or stderr (LANG=C, an ASCII or cp1252 console):
    what they cannot encode is written as a backslash escape. A closed stream writes to nowhere."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 (lives as long as the process)
            continue
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def _stdout_closed() -> bool:
    """Whether stdout's reader is gone (a pipe without readers polls as an error); if so, stdout
    goes to the null device from now on, so the interpreter's last flush does not complain either."""
    try:
        import select

        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if not any(events & select.POLLERR for _, events in poller.poll(0)):
            return False
    except (AttributeError, ValueError, OSError):
        pass  # no poll here, or no file behind stdout: take the broken pipe to be stdout's
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return True


def _internal(verb: str, exc: BaseException) -> int:
    print(
        f"omni-skill {verb}: internal error: {type(exc).__name__}: {_one_line(str(exc))[:300]} "
        "(please report it with the command that caused it)",
        file=sys.stderr,
    )
    return 2


def _after_interrupt(args: argparse.Namespace) -> str:
    from .writes import JOURNAL, journal_problem, pending

    root = args.root if args.root is not None else find_root()
    if args.verb in WRITERS and not journal_problem(root) and pending(root):
        return f"the last renames of a write are recorded in {JOURNAL}: run the same command again to complete them"
    return "no write was left half-done"


if __name__ == "__main__":
    raise SystemExit(main())
