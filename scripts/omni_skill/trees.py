"""Engine files outside git: an unpacked folder (an installed package or a source tree) or a
release wheel read member by member, never extracted and never imported.

A tree answers the same questions a git `Source` does (`entry`, `text`, `lines`), so the same
anchors code re-locates every citation in it. Each file's git blob id is computed from its bytes,
so a file identical to the pinned one is recognised without parsing it.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .errors import UsageError
from .labels import LabelError, check_path
from .safeio import ReadBudget, charge, printable
from .source import BlobError, TreeEntry

MAX_FILE_BYTES = 8 * 1024 * 1024  # far above any engine source file; larger members are not read
# Bytes one tree may hand out in total: a release's cited files are under 7 MB today.
MAX_TREE_READ = 128 * 1024 * 1024
WHEEL_NAME = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)-.*\.whl$")
VERSION_LINE = re.compile(r"^Version:\s*(\S+)\s*$", re.MULTILINE)


def blob_id(data: bytes) -> str:
    """The git blob SHA of these bytes (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def decode(data: bytes) -> str:
    if b"\0" in data:
        raise BlobError("is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BlobError("is not valid UTF-8") from None


class FileTree:
    """Files by repository-relative path. `tops` are the top-level folders the tree ships:
    a cited path outside them is `not-shipped`, inside them and absent it is missing."""

    kind = "tree"

    def __init__(self, location: Path, version: str, tops: frozenset[str]):
        self.location = location
        self.version = version
        self.tops = tops
        self._entries: dict[str, TreeEntry | None] = {}
        self._bytes: dict[str, bytes | None] = {}
        self._texts: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}
        self.read_total = 0

    @property
    def commit(self) -> str:
        """What messages call this engine (a git source names its commit here)."""
        return f"vllm-omni {self.version} ({self.kind} {self.location})"

    @property
    def where(self) -> str:
        return f"vllm-omni {self.version}"

    def reopened(self) -> FileTree:
        """The same tree with handles of its own (for a forked process)."""
        return self

    def ships(self, path: str) -> bool:
        return path.split("/", 1)[0] in self.tops

    def _read(self, path: str) -> bytes | None:
        raise NotImplementedError

    def paths(self) -> list[str]:
        """Every file path the tree ships, sorted."""
        raise NotImplementedError

    def _data(self, path: str) -> bytes | None:
        if path not in self._bytes:
            data = self._read(path)
            if data is not None:
                self.read_total += len(data)
                if self.read_total > MAX_TREE_READ:
                    raise UsageError(f"{self.location}: its cited files hold over {MAX_TREE_READ} bytes; stopping")
                try:
                    charge(len(data), str(self.location))
                except ReadBudget as exc:
                    raise UsageError(str(exc)) from None
            self._bytes[path] = data
            self._entries[path] = None if data is None else TreeEntry(path, "100644", blob_id(data))
        return self._bytes[path]

    def entry(self, path: str) -> TreeEntry | None:
        if path not in self._entries:
            try:
                self._data(path)
            except BlobError:
                self._entries[path] = TreeEntry(path, "100644", "0" * 40)  # present, unreadable
        return self._entries[path]

    def text(self, path: str) -> str:
        if path not in self._texts:
            data = self._data(path)
            if data is None:
                raise KeyError(path)
            self._texts[path] = decode(data)
        return self._texts[path]

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            self._lines[path] = self.text(path).splitlines()
        return self._lines[path]


class FolderTree(FileTree):
    """An unpacked package or source tree on disk. Symbolic links that leave the folder are not read."""

    kind = "folder"

    def __init__(self, location: Path, version: str, tops: frozenset[str] | None = None):
        root = location.resolve()
        if tops is None:
            tops = frozenset(p.name for p in root.iterdir() if not p.name.endswith(".dist-info"))
        super().__init__(root, version, tops)

    def paths(self) -> list[str]:
        found: list[str] = []
        for top in sorted(self.tops):
            base = self.location / top
            if base.is_symlink() or not base.is_dir():
                continue
            for folder, dirs, files in os.walk(base):  # symbolic links to folders are not followed
                dirs.sort()
                rel = Path(folder).relative_to(self.location).as_posix()
                found += [f"{rel}/{name}" for name in sorted(files)]
                if len(found) > MAX_WALK:
                    raise UsageError(f"{self.location}: more than {MAX_WALK} files; not an engine folder")
        return sorted(found)

    def _read(self, path: str) -> bytes | None:
        if not self.ships(path):
            return None
        target = self.location / path
        try:
            if not target.is_file():
                return None
            real = target.resolve()
            top = (self.location / path.split("/", 1)[0]).resolve()
            if not (real.is_relative_to(self.location) or real.is_relative_to(top)):
                raise BlobError("is a symbolic link out of the engine folder")
            if real.stat().st_size > MAX_FILE_BYTES:
                raise BlobError(f"is larger than {MAX_FILE_BYTES} bytes")
            with real.open("rb") as stream:
                return stream.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise BlobError(f"cannot be read ({exc.strerror or exc})") from None


MAX_WALK = 100_000  # files listed from a folder at most


class WheelTree(FileTree):
    """A release wheel: members read straight from the zip with a size bound."""

    kind = "wheel"

    def __init__(self, path: Path):
        try:
            self.zip = zipfile.ZipFile(open_regular(path))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise UsageError(f"{path}: not a readable wheel ({exc})") from None
        self.members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            if info.is_dir():
                continue
            name = info.filename
            try:
                check_path(name)
            except LabelError:
                raise UsageError(f"{path}: member {name!r} has an unsafe name; refusing this wheel") from None
            if name in self.members:
                raise UsageError(f"{path}: member {name!r} appears twice; refusing this wheel")
            self.members[name] = info
        tops = frozenset(
            n.split("/", 1)[0]
            for n in self.members
            if "/" in n and not n.split("/", 1)[0].endswith((".dist-info", ".data"))
        )
        version, self.version_problem = wheel_version(path, self)
        super().__init__(path, version, tops)

    def reopened(self) -> WheelTree:
        """A new handle on the wheel: a forked process must not read through the parent's."""
        return WheelTree(self.location)

    def paths(self) -> list[str]:
        return sorted(n for n in self.members if self.ships(n))

    def _read(self, path: str) -> bytes | None:
        info = self.members.get(path)
        if info is None:
            return None
        if info.file_size > MAX_FILE_BYTES:
            raise BlobError(f"is larger than {MAX_FILE_BYTES} bytes in the wheel")
        try:
            with self.zip.open(info) as stream:
                data = stream.read(MAX_FILE_BYTES + 1)
        except (
            zipfile.BadZipFile,
            zlib.error,
            OSError,
            ValueError,
            EOFError,
            NotImplementedError,
            RuntimeError,
        ) as exc:
            raise UsageError(f"{self.location}: member {path} is corrupt ({exc})") from None
        if len(data) > MAX_FILE_BYTES:
            raise BlobError(f"is larger than {MAX_FILE_BYTES} bytes in the wheel")
        return data

    def built(self) -> str:
        """The newest member date of the wheel (when it was built), as an ISO date-time."""
        newest = max((info.date_time for info in self.members.values()), default=(1980, 1, 1, 0, 0, 0))
        return "%04d-%02d-%02dT%02d:%02d:%02d" % newest  # noqa: UP031

    def metadata(self) -> str | None:
        found = [n for n in self.members if PurePosixPath(n).parent.name.endswith(".dist-info") and n.count("/") == 1]
        names = [n for n in found if n.endswith("/METADATA")]
        if len(names) != 1:
            return None
        info = self.members[names[0]]
        if info.file_size > 1024 * 1024:
            return None
        try:
            with self.zip.open(info) as stream:
                return stream.read(1024 * 1024).decode("utf-8", errors="replace")
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
            return None


def open_regular(path: Path) -> BinaryIO:
    """A binary stream of a regular file, opened without blocking on a FIFO; UsageError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise UsageError(f"{path}: not a readable wheel ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
        raise UsageError(f"{path}: not a readable wheel (not a regular file: {kind})")
    return os.fdopen(fd, "rb")


def require_cited(tree: FileTree, paths: list[str]) -> None:
    """A tree that ships none of the cited paths is not this engine: one line naming them."""
    if not any(tree.ships(path) for path in paths):
        cited = sorted({path.split("/", 1)[0] for path in paths if "/" in path})
        raise UsageError(f"{tree.location}: holds none of the cited folders ({', '.join(cited)})")


PEP440 = re.compile(
    r"^v?(?:(?P<epoch>[0-9]{1,6})!)?(?P<release>[0-9]{1,12}(?:\.[0-9]{1,12}){0,9})"
    r"(?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]{1,12})?)?"
    r"(?:-(?P<post_n1>[0-9]{1,12})|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]{1,12})?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]{1,12})?)?"
    r"(?:\+(?P<local>[a-z0-9]{1,40}(?:[-_.][a-z0-9]{1,40}){0,9}))?$",
    re.IGNORECASE,
)
PRE_LETTERS = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}


def pep440(version: str) -> str | None:
    """The PEP 440 normal form of a version (`1.0.0rc1`, `2!1.0.post2.dev3+cu121`), None when
    it is not a valid version."""
    found = PEP440.match(version.strip())
    if not found:
        return None
    g = found.groupdict()
    text = f"{int(g['epoch'])}!" if g["epoch"] and int(g["epoch"]) else ""
    text += ".".join(str(int(part)) for part in g["release"].split("."))
    if g["pre_l"]:
        text += f"{PRE_LETTERS[g['pre_l'].lower()]}{int(g['pre_n'] or 0)}"
    if g["post_n1"] or g["post_l"]:
        text += f".post{int(g['post_n1'] or g['post_n2'] or 0)}"
    if g["dev_l"]:
        text += f".dev{int(g['dev_n'] or 0)}"
    if g["local"]:
        parts = re.split(r"[-_.]", g["local"].lower())
        text += "+" + ".".join(str(int(p)) if p.isdigit() else p for p in parts)
    return text


def _same_version(a: str, b: str) -> bool:
    """PEP 440 equality of two normal forms: trailing zeros of the release do not count."""

    def key(version: str) -> tuple[str, str]:
        head, _, local = version.partition("+")
        found = re.match(r"^((?:\d+!)?)([\d.]+)(.*)$", head)
        if not found:
            return version, ""
        release = re.sub(r"(?:\.0)+$", "", found.group(2))
        return found.group(1) + release + found.group(3), local

    return key(a) == key(b)


def wheel_version(path: Path, wheel: WheelTree) -> tuple[str, str]:
    """(release name, problem): the version in the wheel's file name, PEP 440 normalised, which its
    METADATA must state too. The problem ("" when none) says where they disagree or what is
    missing; the name is then the file name's version, else METADATA's, else "unknown"."""
    metadata = wheel.metadata()
    found = VERSION_LINE.search(metadata) if metadata else None
    stated = found.group(1) if found else ""
    named = WHEEL_NAME.match(path.name)
    from_name = pep440(named.group("version")) if named else None
    from_metadata = pep440(stated) if stated else None
    if from_name is None:
        shown = printable(stated)[:80]
        why = "its file name carries no PEP 440 version (name-VERSION-tags.whl)"
        return from_metadata or (shown if stated else "unknown"), why
    if not stated:
        return from_name, "its METADATA states no Version"
    if from_metadata is None or not _same_version(from_name, from_metadata):
        shown = printable(stated)[:80]
        return from_name, f"its METADATA says Version '{shown}', its file name {from_name}"
    return from_name, ""


def folder_tree(path: Path, version: str | None = None) -> FolderTree:
    """`--engine-dir`: a source tree or unpacked package (the folder holding `vllm_omni/`), or the
    `vllm_omni` package folder itself."""
    if not path.exists():
        raise UsageError(f"{path}: no such folder")
    if not path.is_dir():
        raise UsageError(f"{path}: is a file; --engine-dir takes a folder (for a .whl give --wheel)")
    tops = None
    if (path / "__init__.py").is_file() and not (path / path.name).is_dir():
        tops = frozenset({path.resolve().name})  # the package folder itself
        path = path.resolve().parent
    return FolderTree(path, version or folder_version(path), tops)


def folder_version(path: Path) -> str:
    """The version a folder declares: a `vllm_omni-*.dist-info/METADATA` beside the package."""
    for meta in sorted(path.glob("vllm_omni-*.dist-info/METADATA")):
        try:
            found = VERSION_LINE.search(meta.read_text(encoding="utf-8", errors="replace")[:100_000])
        except OSError:
            continue
        if found:
            return found.group(1)
    return "unknown"
