"""The files evalgate writes, and the size and kind of the files it reads but did not write (docs/security.md).

Every file evalgate writes goes through `atomic_writer` (or `write_file`, its one-shot form): a temporary
file in the same folder, renamed over the path once complete, so a reader never sees half a file. Writing
never goes through a symbolic link, neither at the path itself nor at a folder between the `root` and the
file (each folder is opened with O_NOFOLLOW, one below the other), and never onto a FIFO, a device or a
directory: those are refused with `UnsafeWrite`, an OSError naming the path. The journal, which is appended
to, is opened the same way (`open_for_append`).

Files read but not written by this run (results, baselines, shards, journals, cache entries) are checked
first (`refuse_unreadable`, `read_capped`, `open_capped`): a regular file under a cap for its kind, else
`UnreadableFile` (a ValueError) naming it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from evalgate.infra.textsafe import visible

MiB = 2**20
MAX_RESULTS_BYTES = 1024 * MiB  # results, baselines, shards and journals read back; a 1M-item run fits
MAX_CACHE_ENTRY_BYTES = 64 * MiB  # one stored reply (a reply is capped at 32 MiB; its JSON may grow in the file)
PATH_CHARS = 300  # a path quoted in a message

_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class UnsafeWrite(OSError):
    """A path evalgate will not write: a symlink on the way, or something there that is no regular file."""

    def __init__(self, path: Path | str, why: str) -> None:
        super().__init__(errno.EPERM, why, str(path))


class UnreadableFile(OSError, ValueError):
    """A file evalgate will not read: no regular file, or over the cap for its kind. Its text names the file
    (`path: why`); an OSError for the run's file handling, a ValueError for the readers that refuse bad content."""

    def __init__(self, path: Path | str, why: str) -> None:
        super().__init__(errno.EINVAL, why, str(path))

    def __str__(self) -> str:
        return f"{shown(self.filename)}: {self.strerror}"


def kind_of(mode: int) -> str | None:
    """What a file that is no regular file is ("a FIFO (named pipe)", ...); None for a regular file."""
    return next((kind for test, kind in _KINDS if test(mode)), None)


def shown(path: Path | str) -> str:
    return visible(str(path))[:PATH_CHARS]


# ---- reading what this run did not write ----


def _refusal(mode: int, size: int, limit: int, what: str) -> str | None:
    kind = kind_of(mode)
    if kind is not None:
        return f"the {what} is {kind}, not a regular file; point at a file"
    if size > limit:
        return f"the {what} is {size / MiB:,.0f} MiB; evalgate reads at most {limit // MiB:,} MiB of a {what}"
    return None


def refuse_unreadable(path: Path | str, *, limit: int, what: str) -> None:
    """UnreadableFile unless `path` (symlinks followed) is a regular file of at most `limit` bytes.
    A missing file passes: the reader's own error says so. For readers that open the file themselves."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise UnreadableFile(path, f"cannot read the {what}: {getattr(exc, 'strerror', None) or exc}") from None
    problem = _refusal(info.st_mode, info.st_size, limit, what)
    if problem is not None:
        raise UnreadableFile(path, problem)


@contextlib.contextmanager
def open_capped(path: Path | str, *, limit: int, what: str, follow: bool = True) -> Iterator[BinaryIO]:
    """The file open for reading, once the open file itself is seen to be regular and under `limit`.
    O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (a regular file ignores it).
    follow=False: a symlink is refused too (OSError ELOOP). OSError when it cannot be opened, UnreadableFile
    when it is refused."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    try:
        info = os.fstat(fd)
        problem = _refusal(info.st_mode, info.st_size, limit, what)
        if problem is not None:
            raise UnreadableFile(path, problem)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_capped(path: Path | str, *, limit: int, what: str) -> bytes:
    """The whole file, checked as `open_capped` checks it; a file that grew past `limit` while read is refused."""
    with open_capped(path, limit=limit, what=what) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnreadableFile(path, f"the {what} grew past {limit // MiB:,} MiB while it was read")
    return data


# ---- writing ----


def _inside(path: Path, root: Path) -> list[str] | None:
    """The folder names from `root` down to `path`'s folder, or None when `path` is not below `root`."""
    folder = Path(os.path.abspath(path)).parent
    base = Path(os.path.abspath(root))
    try:
        return list(folder.relative_to(base).parts)
    except ValueError:
        return None


def default_root(path: Path) -> Path:
    """Where the no-symlink rule starts for `path`: the working directory when the path is inside it
    (a folder symlink committed to a repository is not followed), else the path's own folder."""
    cwd = Path(os.getcwd())
    return cwd if _inside(path, cwd) is not None else Path(os.path.abspath(path)).parent


def _open_folder(path: Path, root: Path | None, create: bool) -> int:
    """A descriptor of `path`'s folder, reached from `root` one folder at a time without following a symlink;
    missing folders are made when `create`."""
    root = default_root(path) if root is None else root
    names = _inside(path, root)
    if names is None:
        raise UnsafeWrite(path, f"is outside {shown(root)}, where evalgate writes")
    if create:
        with contextlib.suppress(FileExistsError):  # a file there: opening it as a folder says so
            Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names:
            if name in ("", "."):
                continue
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            try:
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
                    raise UnsafeWrite(path, f"its folder `{visible(name)[:100]}` is a symbolic link; evalgate "
                                      "never writes through one: give the real path") from None
                raise  # e.g. a file where the folder should be: NotADirectoryError
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_folder(path: Path | str, *, root: Path | None = None) -> None:
    """`path`'s folder made (when missing) and checked as `atomic_writer` checks it: UnsafeWrite when a folder
    on the way from `root` is a symlink. For writers that open the file themselves (the lock)."""
    os.close(_open_folder(Path(path), root, create=True))


def check_writable(path: Path | str, *, root: Path | None = None) -> None:
    """UnsafeWrite now, before any work, where `atomic_writer` would refuse `path` at the end: a symlink on
    the way or at the path, or a FIFO, device or folder there. Its folder is made when missing."""
    path = Path(path)
    folder = _open_folder(path, root, create=True)
    try:
        _check_target(folder, path.name, path)
    finally:
        os.close(folder)


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _check_target(folder: int, name: str, path: Path) -> None:
    """UnsafeWrite when something other than a regular file is at `name` in `folder`."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    kind = kind_of(info.st_mode)
    if kind is not None:
        raise UnsafeWrite(path, f"is {kind}, not a regular file; evalgate never writes through a link or onto "
                          "a FIFO or device: remove it or choose another path")


@contextlib.contextmanager
def atomic_writer(path: Path | str, *, root: Path | None = None, scratch: str | None = None,
                  durable: bool = True) -> Iterator[BinaryIO]:
    """THE writer of evalgate's files: yields a new temporary file beside `path`, renamed over `path` when
    the block ends without an exception (removed when it raises).

    root: the folder from which no folder on the way may be a symlink (default: `default_root`).
    scratch: the temporary file's name (default `<name>.tmp`); "" for a random one, for writers that race
    (the cache's threads). Whatever is at the scratch name is removed first, never
    written through. durable: fsync before the rename (results; not a cache entry)."""
    path = Path(path)
    name = path.name
    tmp = f".{name}.{secrets.token_hex(6)}.tmp" if scratch == "" else (scratch or f"{name}.tmp")
    folder = _open_folder(path, root, create=True)
    try:
        _check_target(folder, name, path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "w+b") as handle:
                yield handle
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
            _check_target(folder, name, path)  # nothing swapped in meanwhile
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def write_file(path: Path | str, data: bytes, *, root: Path | None = None, scratch: str | None = None,
               durable: bool = True) -> None:
    """`data` as the whole file at `path`, through `atomic_writer`."""
    with atomic_writer(path, root=root, scratch=scratch, durable=durable) as handle:
        handle.write(data)


def open_for_append(path: Path | str, *, root: Path | None = None, truncate: bool = False) -> BinaryIO:
    """A file (the journal) open to add to, made if missing, reached like `atomic_writer` reaches its folder;
    a symlink, FIFO or device there is refused (UnsafeWrite), never opened. `truncate`: emptied first."""
    path = Path(path)
    folder = _open_folder(path, root, create=True)
    try:
        _check_target(folder, path.name, path)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path.name, flags, 0o666, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        if kind_of(os.fstat(fd).st_mode) is not None:
            raise UnsafeWrite(path, "is no regular file")
        os.set_blocking(fd, True)
        if truncate:
            os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_END)
        return os.fdopen(fd, "r+b")
    except BaseException:
        os.close(fd)
        raise


def scratch_file(path: Path | str, *, root: Path | None = None) -> BinaryIO:
    """A new file of our own at `path` (a scratch file a writer renames or removes itself); whatever is
    there is removed first, never written through."""
    path = Path(path)
    folder = _open_folder(path, root, create=True)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.name, dir_fd=folder)
        fd = os.open(path.name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=folder)
    finally:
        os.close(folder)
    return os.fdopen(fd, "w+b")
