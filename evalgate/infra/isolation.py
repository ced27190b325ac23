"""Keeping the runner's credentials from the code under test, and stopping what a run started.

The code under test (command agents, `python` targets and scorers, served judges) must not find
the runner's tokens in its environment unless the spec passes them on purpose (`pass_env:`).
`scrub_process_env` moves them out of `os.environ` (evalgate's own reads use `getenv`);
`child_env` is the environment every process evalgate starts gets.

Interrupts: the first Ctrl-C sets `INTERRUPTED` and raises KeyboardInterrupt in the main thread;
live process groups are killed; a second Ctrl-C exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from evalgate.infra import redaction

if TYPE_CHECKING:  # every command starts here; only a run starts processes
    import subprocess

RUNNER_CREDENTIALS = (
    "GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_CACHE_URL",
)
INPUT_PREFIX = "INPUT_"  # the Action's inputs, the token among them

_withheld: dict[str, str] = {}
_passed: set[str] = set()
INTERRUPTED = threading.Event()
_groups: set[int] = set()
_groups_lock = threading.Lock()


def is_credential(name: str) -> bool:
    return name in RUNNER_CREDENTIALS or name.upper().startswith(INPUT_PREFIX)


def withhold(values: Mapping[str, str]) -> None:
    """Credentials handed over out of band (the Action's re-exec): kept for evalgate, never in os.environ."""
    _withheld.update(values)
    redaction.register(v for k, v in values.items() if k in RUNNER_CREDENTIALS or "TOKEN" in k.upper())


def withheld() -> dict[str, str]:
    return dict(_withheld)


def scrub_process_env() -> None:
    """Move the runner's credentials out of os.environ (and so out of every child's environment)."""
    for name in [n for n in os.environ if is_credential(n) and n not in _passed]:
        value = os.environ.pop(name)
        _withheld[name] = value
        if name in RUNNER_CREDENTIALS or "TOKEN" in name.upper():
            redaction.register([value])


def pass_env(names: Iterable[str]) -> None:
    """The spec passes these variables to the code under test on purpose: put them back."""
    for name in names:
        _passed.add(name)
        if name in _withheld and name not in os.environ:
            os.environ[name] = _withheld[name]


def getenv(name: str) -> str | None:
    """An environment variable for evalgate's own use (an API key, a header), withheld ones included."""
    value = os.environ.get(name)
    return value if value is not None else _withheld.get(name)


def evalgate_env() -> dict[str, str]:
    """os.environ with the withheld credentials: for expanding `${VAR}` in headers evalgate sends."""
    return {**_withheld, **os.environ}


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process evalgate starts: no runner credential unless passed."""
    env = {k: v for k, v in os.environ.items() if not is_credential(k) or k in _passed}
    env.update(extra or {})
    return env


# ---- process groups and Ctrl-C ----


def track_group(pid: int) -> None:
    with _groups_lock:
        _groups.add(pid)


def untrack_group(pid: int) -> None:
    with _groups_lock:
        _groups.discard(pid)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all_groups() -> None:
    """Stop every command agent still running (their whole process groups)."""
    with _groups_lock:
        groups = list(_groups)
    for pid in groups:
        kill_group(pid)


_stopped_by: list[int] = []  # the signal that interrupted the run: the exit code is 128 + it


def _on_sigint(signum: int, frame: Any) -> None:
    if INTERRUPTED.is_set():
        with contextlib.suppress(Exception):
            sys.stderr.write("\nevalgate: interrupted again; exiting now\n")
            sys.stderr.flush()
        kill_all_groups()
        os._exit(interrupt_exit_code())
    _stopped_by.append(signum)
    INTERRUPTED.set()
    kill_all_groups()
    raise KeyboardInterrupt


def install_interrupt_handler() -> None:
    """First Ctrl-C (or SIGTERM, as a CI system or `timeout` cancels): stop in-flight agents and
    write what finished; a second: exit at once."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
        signal.signal(signal.SIGTERM, _on_sigint)


def handles_interrupts() -> bool:
    """Whether evalgate's own Ctrl-C and SIGTERM handler is in place, for both."""
    return signal.getsignal(signal.SIGINT) is _on_sigint and signal.getsignal(signal.SIGTERM) is _on_sigint


def interrupt_exit_code() -> int:
    """130 after Ctrl-C, 143 after SIGTERM: 128 + the signal, as a shell reports it."""
    return 128 + (_stopped_by[0] if _stopped_by else signal.SIGINT)


def user_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is the user's Ctrl-C (not one the code under test raised).

    With evalgate's handler installed, the flag tells; without it (the Python API), a
    KeyboardInterrupt on the main thread may be Ctrl-C, so it is taken as one.
    """
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if INTERRUPTED.is_set():
        return True
    return threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not _on_sigint


TARGET_USER_ENV = "EVALGATE_TARGET_USER"


def unprivileged(cwd: str | os.PathLike[str]) -> dict[str, Any]:
    """Popen's `user`, `group` and `extra_groups` that start the code under test as another user when evalgate
    runs as root (the Action's container): the owner of its working directory (the runner's user, who owns the
    checkout), or `EVALGATE_TARGET_USER` (`uid[:gid]`; `root` keeps root). Running as root, such code could
    read evalgate's memory (`/proc/<parent>/mem`), the token in it; as another user it cannot. Empty when
    evalgate is not root, or the folder is root's and no user is named (then nothing changes).
    ValueError for an `EVALGATE_TARGET_USER` that is no `uid[:gid]`."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {}
    wanted = (getenv(TARGET_USER_ENV) or "").strip()
    if wanted == "root":
        return {}
    if wanted:
        uid_text, _, gid_text = wanted.partition(":")
        if not uid_text.isdigit() or (gid_text and not gid_text.isdigit()):
            raise ValueError(f"{TARGET_USER_ENV} must be `uid` or `uid:gid` (numbers) or `root`, got {wanted[:40]!r}")
        uid = int(uid_text)
        gid = int(gid_text) if gid_text else uid
    else:
        try:
            owner = os.stat(cwd)
        except OSError:
            return {}
        uid, gid = owner.st_uid, owner.st_gid
    if uid == 0:
        return {}
    return {"user": uid, "group": gid, "extra_groups": []}


def popen_group(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """Popen in a new session (its own process group), tracked so Ctrl-C can stop it."""
    import subprocess

    proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
    track_group(proc.pid)
    return proc


# ---- starting again without the credentials ----

CREDENTIALS_FD = "EVALGATE_CREDENTIALS_FD"
PIPE_ROOM = 60_000  # the credentials must fit the pipe's buffer: nobody reads it before exec


def reexec_without_credentials(extra: Iterable[str] = ()) -> None:
    """Start this program again with the runner's credentials out of its environment.

    `/proc/<pid>/environ` shows what a process was started with, whatever it removes from
    os.environ later, and the code under test runs as the same user: so the credentials travel
    through a pipe instead, and exec replaces this process (no parent is left holding them).
    Returns only when there is nothing to hide or exec is not possible.
    """
    names = set(extra)
    secret = {k: v for k, v in os.environ.items() if is_credential(k) or k in names}
    if not secret or CREDENTIALS_FD in os.environ or not sys.executable:
        return
    import json  # only with credentials to hand over: every command imports this module

    read_end = _handover(json.dumps(secret).encode("utf-8"))
    if read_end is None:
        return
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k not in secret}
    env[CREDENTIALS_FD] = str(read_end)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:  # go on in this process: os.environ is still scrubbed before anything runs
        os.close(read_end)


def _handover(data: bytes) -> int | None:
    """A descriptor to read `data` from after exec: a pipe when it fits the pipe's buffer (nobody reads
    before exec), else an anonymous memory file. A large input (`INPUT_*` are handed over too) used to
    skip the exec and leave the token in /proc/<pid>/environ. None when neither is possible."""
    if len(data) < PIPE_ROOM:
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        return read_end
    if not hasattr(os, "memfd_create"):  # Linux only; the Action's image is Linux
        return None
    try:
        fd = os.memfd_create("evalgate-credentials")
    except OSError:
        return None
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)  # the offset is shared with the descriptor the new image reads
    return fd


def receive_credentials() -> None:
    """Take the credentials the previous image of this process handed over, keeping them out of os.environ."""
    fd = os.environ.pop(CREDENTIALS_FD, None)
    if fd is None:
        return
    import json

    with contextlib.suppress(OSError, ValueError):
        with os.fdopen(int(fd), "rb") as handle:
            values = json.loads(handle.read() or b"{}")
        if isinstance(values, dict):
            withhold({str(k): str(v) for k, v in values.items()})


def register_credential_env() -> None:
    """The values of credential-named variables, in the environment or withheld from it, are secrets."""
    redaction.register_credential_env(os.environ)
    redaction.register_credential_env(_withheld)


def register_spec_secrets(spec: object) -> None:
    """Every secret a spec's settings point at: `${VAR}` in headers and each `api_key_env` (withheld ones too)."""
    names: list[str | None] = []
    for section in (getattr(spec, "target", None), getattr(spec, "judge", None)):
        if section is None:
            continue
        names.append(getattr(section, "api_key_env", None))
        for value in (getattr(section, "headers", None) or {}).values():
            names += redaction.env_refs(value)
    redaction.register(getenv(name) for name in names if name)
    register_credential_env()
