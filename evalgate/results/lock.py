"""One writer per results file: an advisory lock held while a run, a merge or a comparison writes it.

`evalgate run --output out.json` appends to its journal `out.json.items.jsonl` and renames its results
over `out.json` at the end. Two processes doing that at once (two runs started together, a `--resume`
while the run is still going) would interleave their journal lines and leave whichever results
finished last. Each writer takes `flock(LOCK_EX | LOCK_NB)` on `out.json.lock` before anything runs
and holds it to the end; a second one is refused (`WriterBusy`, exit 2), naming the file and the
first's pid. The kernel drops the lock when its process ends however it ends (SIGKILL too), so a
killed run leaves at most an unlocked file that the next run, or its `--resume`, takes over. The
descriptor is not inherited by the processes a run starts (command agents, served judges).

The lock file holds one line, `evalgate pid N`, and is removed by its holder at the end. A file at
that path that holds anything else is someone's, not ours: it is neither written nor removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from evalgate.infra.files import make_folder

_CONTENT = re.compile(rb"(?:evalgate pid (\d{1,10})\n)?")
_READ = 64  # bytes of a lock file read: ours holds one short line
_ATTEMPTS = 20  # a lock file removed under us by each finishing holder in turn: retried this often
# flock is unsupported here (some network and FUSE file systems): the run goes on unlocked, as before
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


class WriterBusy(OSError):
    """Another process holds the lock of the file this one was to write."""

    def __init__(self, path: Path, pid: int | None) -> None:
        who = f"another evalgate process (pid {pid})" if pid else "another evalgate process"
        super().__init__(errno.EBUSY, f"{who} is writing it; wait for it to finish, or write the results to "
                         "another file", str(path))
        self.pid = pid

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Hold `path`'s lock for the block: WriterBusy when another process holds it, before the block runs.
    OSError when the lock file cannot be made (a folder that cannot be created or written: neither could
    the results) or when something else is at its path."""
    where = lock_path(path.absolute())  # the code under test may change the working directory meanwhile
    fd = _acquire(path, where)
    try:
        yield
    finally:
        if fd is not None:
            _release(where, fd)


def _acquire(path: Path, where: Path) -> int | None:
    make_folder(where)  # no folder on the way is a symlink
    for _ in range(_ATTEMPTS):
        try:  # never through a symlink; O_NONBLOCK: a FIFO put there does not wait for a writer
            fd = os.open(where, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _in_the_way(where) from None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _in_the_way(where)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise WriterBusy(path, _holder(fd)) from None
            except OSError as exc:
                if exc.errno in _NO_LOCKS:
                    os.close(fd)
                    return None
                raise
            # Its last holder removes the file as it finishes: the file locked must still be the one at the path.
            try:
                now = os.stat(where, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                os.close(fd)
                continue
            content = os.pread(fd, _READ + 1, 0)
            if len(content) > _READ or not _CONTENT.fullmatch(content):
                raise _in_the_way(where)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"evalgate pid {os.getpid()}\n".encode(), 0)
            return fd
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
    raise WriterBusy(path, None)


def _holder(fd: int) -> int | None:
    """The pid the lock's holder wrote, if it did (it may not have yet): one short line, read at most."""
    try:
        match = _CONTENT.fullmatch(os.pread(fd, _READ + 1, 0))
    except OSError:
        return None
    return int(match.group(1)) if match and match.group(1) else None


def _release(where: Path, fd: int) -> None:
    """Remove the lock file while still holding it (one that replaced it is not ours), then let it go."""
    try:
        info = os.fstat(fd)
        now = os.stat(where, follow_symlinks=False)
        if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
            where.unlink()
    except OSError:
        pass
    finally:
        os.close(fd)


def _in_the_way(where: Path) -> OSError:
    return FileExistsError(errno.EEXIST, "is in the way of the lock evalgate takes while it writes the results, "
                           "and is not one; move it, or write the results to another file", str(where))
