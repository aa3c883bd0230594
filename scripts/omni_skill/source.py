"""Read the engine's git objects at a revision: trees and blobs, never a work tree.

Every blob goes through gitpython's persistent `git cat-file --batch` process, and the whole
tree is listed with one `git ls-tree -r` call, so reading N files costs N batch requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .errors import UsageError
from .safeio import ReadBudget, charge

if TYPE_CHECKING:
    import git

ENV_VAR = "VLLM_OMNI_SOURCE"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

# Settings that would make git run programs named in a repository's own configuration. No
# transport may run at all (a partial clone would otherwise fetch missing objects through the
# repository's own remote settings: core.sshCommand, core.gitProxy, remote.*.uploadpack). A git
# older than 2.45.1 ignores GIT_NO_LAZY_FETCH, and there a repository's own
# `protocol.<name>.allow=always` (directly or through include.path) outranks `protocol.allow=never`:
# so every transport is also switched off by name on the command line (which outranks every file),
# and GIT_ALLOW_PROTOCOL, which outranks all protocol configuration, allows none.
TRANSPORTS = ("file", "git", "ssh", "http", "https", "ext", "fd", "ftp", "ftps", "rsync")
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "diff.external=",
    "core.pager=cat",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=never" for name in TRANSPORTS),
    "credential.helper=",
    "core.askPass=",
    "core.sshCommand=false",
)
SAFE_ENVIRONMENT = {
    "GIT_NO_LAZY_FETCH": "1",  # never fetch a missing object of a partial clone
    "GIT_ALLOW_PROTOCOL": "omni-skill-none",  # no transport is allowed (an unknown protocol name)
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
}
MAX_BLOB_BYTES = 8 * 1024 * 1024  # far above any engine source file; a larger blob is not read
MAX_TREE_LISTING = 64 * 1024 * 1024  # bytes of `ls-tree -r`: about 300 kB at the pin


@dataclass(frozen=True)
class TreeEntry:
    path: str
    mode: str
    sha: str

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"

    @property
    def is_submodule(self) -> bool:
        return self.mode == "160000"


class BlobError(Exception):
    """A cited file that cannot be read as text (symlink, submodule, binary, not UTF-8)."""


class EngineFiles(Protocol):
    """What resolving a label needs of an engine: a git `Source` or a tree without git."""

    @property
    def where(self) -> str: ...

    def entry(self, path: str) -> TreeEntry | None: ...

    def text(self, path: str) -> str: ...

    def lines(self, path: str) -> list[str]: ...


class Source:
    """One engine repository (bare or not) opened at one revision."""

    def __init__(self, path: Path, revision: str):
        try:  # imported here: verbs that read no git repository must not need gitpython
            import git
            from git.exc import InvalidGitRepositoryError, NoSuchPathError
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("git"):
                raise  # the package itself is missing: the CLI names it
            raise UsageError(f"git cannot be run ({str(exc).splitlines()[0]}): put git on the PATH") from None

        self.path = path
        self.repo: git.Repo
        try:
            self.repo = git.Repo(path)
        except (InvalidGitRepositoryError, NoSuchPathError):
            raise UsageError(f"{path}: not a git repository (give --source or {ENV_VAR})") from None
        # Every git process, the persistent `cat-file --batch` included, reads this object store
        # only, with the settings that could run a program of the repository's own switched off.
        self.repo.git.update_environment(GIT_DIR=str(self.repo.git_dir), **SAFE_ENVIRONMENT)
        self.repo.git.set_persistent_git_options(c=list(SAFE_CONFIG))
        self.revision = revision
        self.commit = self.resolve(revision)
        self._tree: dict[str, TreeEntry] | None = None
        self._texts: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}

    def reopened(self) -> Source:
        """The same repository and commit through a git handle of its own (a forked process must
        not share this one's persistent `cat-file`), with what was already read."""
        other = Source(self.path, self.commit)
        other._tree, other._texts, other._lines = self._tree, dict(self._texts), dict(self._lines)
        return other

    def _command(self, *args: str) -> list[str]:
        """A git command line on this object store with every unsafe setting switched off."""
        config: list[str] = []
        for item in SAFE_CONFIG:
            config += ["-c", item]
        return ["git", "--git-dir", str(self.repo.git_dir), *config, *args]

    def git(self, *args: str) -> str:
        return str(self.repo.git.execute(self._command(*args), strip_newline_in_stdout=False))

    def _bounded(self, *args: str) -> str:
        """The output of a git command that may be huge (a tree of a crafted commit lists
        exponentially many paths): at most MAX_TREE_LISTING bytes, else UsageError."""
        process = self.repo.git.execute(self._command(*args), as_process=True)
        proc = process.proc
        assert proc is not None and proc.stdout is not None
        data = proc.stdout.read(MAX_TREE_LISTING + 1)
        if len(data) > MAX_TREE_LISTING:
            proc.kill()
            proc.wait()
            too_many = f"lists over {MAX_TREE_LISTING} bytes of paths"
            raise UsageError(f"{self.path}: the tree of {self.commit[:12]} {too_many}")
        process.wait()
        return data.decode("utf-8", "surrogateescape")

    def resolve(self, revision: str) -> str:
        """Full SHA of the commit a revision names; UsageError when the repository lacks it."""
        from git.exc import GitCommandError

        if not revision or revision.startswith("-"):
            raise UsageError(f"{self.path}: invalid revision {revision!r}")
        try:
            sha = self.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
        except GitCommandError:
            try:  # name what it is when it is an object, just not a commit
                kind = (
                    self.git("cat-file", "-t", "--end-of-options", revision).strip() if SHA_RE.match(revision) else ""
                )
            except GitCommandError:
                kind = ""
            if kind in ("blob", "tree", "tag"):
                raise UsageError(f"{self.path}: {revision} is a {kind}, not a commit: give a commit") from None
            shallow = " (the clone is shallow: fetch that revision)" if self.is_shallow() else ""
            raise UsageError(f"{self.path}: revision {revision} is not in this repository{shallow}") from None
        return sha.strip()

    def absent(self, what: str) -> str:
        """Why an object is not here: a partial clone is never fetched from (that would run the
        repository's own transport settings)."""
        return (
            f"{self.path}: {what} is not in this clone, and nothing is fetched for you: fetching here would run "
            f"this clone's own transport settings, so clone the engine afresh from a URL you trust (git clone "
            f"https://github.com/vllm-project/vllm-omni) and give that clone as --source"
        )

    @property
    def where(self) -> str:
        return self.commit[:12]

    def is_shallow(self) -> bool:
        return (Path(self.repo.git_dir) / "shallow").exists()

    def commit_date(self) -> str:
        return self.git("show", "-s", "--no-show-signature", "--format=%cI", self.commit).strip()

    @property
    def tree(self) -> dict[str, TreeEntry]:
        if self._tree is None:
            from git.exc import GitCommandError

            try:
                listing = self._bounded("ls-tree", "-r", "-z", "--full-tree", self.commit)
            except GitCommandError:
                raise UsageError(self.absent(f"the tree of {self.commit[:12]}")) from None
            entries: dict[str, TreeEntry] = {}
            for record in listing.split("\0"):
                if not record:
                    continue
                meta, path = record.split("\t", 1)
                mode, _type, sha = meta.split()
                entries[path] = TreeEntry(path, mode, sha)
            self._tree = entries
        return self._tree

    def entry(self, path: str) -> TreeEntry | None:
        return self.tree.get(path)

    def text(self, path: str) -> str:
        """The UTF-8 text of a file at the revision; KeyError when absent, BlobError when unreadable."""
        if path in self._texts:
            return self._texts[path]
        entry = self.tree.get(path)
        if entry is None:
            raise KeyError(path)
        if entry.is_symlink:
            raise BlobError("is a symbolic link at the revision; cite its target instead")
        if entry.is_submodule:
            raise BlobError("is a submodule entry at the revision, not a file")
        try:
            binsha = bytes.fromhex(entry.sha)
            size = self.repo.odb.info(binsha).size  # the header alone: a huge blob is never read
            if size > MAX_BLOB_BYTES:
                raise BlobError(f"is larger than {MAX_BLOB_BYTES} bytes")
            charge(size, f"{self.path}: {path}")
            data = self.repo.odb.stream(binsha).read()
        except ReadBudget as exc:
            raise UsageError(str(exc)) from None
        except (ValueError, OSError) as exc:  # `cat-file --batch` answers "missing" (gitdb's BadObject is a ValueError)
            raise UsageError(self.absent(f"{path} (blob {entry.sha[:12]})")) from exc
        if b"\0" in data:
            raise BlobError("is a binary file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BlobError("is not valid UTF-8") from None
        self._texts[path] = text
        return text

    def containing(self, words: tuple[str, ...], pattern: str) -> set[str]:
        """The paths matching `pattern` (a glob, `*` crossing `/` as in fnmatch) whose text holds
        one of `words`: one `git grep` over the revision instead of reading every file, its
        listing bounded as the tree's is."""
        from git.exc import GitCommandError

        args = ["grep", "-l", "-I", "-F", "--no-color", "--no-textconv"]
        for word in words:
            args += ["-e", word]
        try:
            listing = self._bounded(*args, self.commit, "--", pattern)
        except GitCommandError as exc:
            if exc.status == 1:  # no file matches
                return set()
            raise UsageError(self.absent(f"a file under {pattern} at {self.commit[:12]}")) from None
        prefix = f"{self.commit}:"
        return {line.removeprefix(prefix) for line in listing.splitlines() if line}

    def lines(self, path: str) -> list[str]:
        """The file's lines at the revision (cached)."""
        if path not in self._lines:
            self._lines[path] = self.text(path).splitlines()
        return self._lines[path]
