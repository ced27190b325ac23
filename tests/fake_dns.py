"""A DNS server on a loopback address, for tests that need name resolution to stall or answer.

UDP on port 53 of a random 127.x.y.z (glibc asks port 53 only; any 127/8 address is loopback, so
parallel tests do not collide). `silent=True` reads every query and never answers, as a dead
resolver behind a firewall does; otherwise each A query is answered with `address` after `delay_s`
and every other type (AAAA) with no records. `resolv_conf` is what a process in its own mount
namespace sees as /etc/resolv.conf (see `in_namespace`).
"""

from __future__ import annotations

import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class FakeDns:
    def __init__(self, *, silent: bool = False, address: str = "127.0.0.1", delay_s: float = 0.0) -> None:
        self.silent = silent
        self.address = address
        self.delay_s = delay_s
        self.queries: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(20):
            self.host = f"127.{random.randrange(1, 255)}.{random.randrange(1, 255)}.{random.randrange(1, 255)}"
            try:
                self.sock.bind((self.host, 53))
                break
            except OSError:
                continue
        else:
            raise OSError("no free loopback address for port 53")
        self.sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeDns:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def resolv_conf(self, timeout_s: int) -> str:
        # One attempt of `timeout_s`: without a bound of evalgate's own, a lookup takes that long.
        return f"nameserver {self.host}\noptions timeout:{timeout_s} attempts:1\n"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            name, qtype, end = _question(query)
            self.queries.append(name)
            if self.silent:
                continue
            if self.delay_s:
                time.sleep(self.delay_s)
            answers = b""
            if qtype == 1:  # A: one record, the name compressed as a pointer to the question's
                answers = struct.pack(">HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(self.address)
            header = query[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if answers else 0, 0, 0)
            self.sock.sendto(header + query[12:end] + answers, peer)


def _question(query: bytes) -> tuple[str, int, int]:
    """(the name asked, its type, where the question ends) of a query."""
    labels, at = [], 12
    while query[at]:
        labels.append(query[at + 1:at + 1 + query[at]].decode("ascii", "replace"))
        at += 1 + query[at]
    qtype = struct.unpack(">H", query[at + 1:at + 3])[0]
    return ".".join(labels), qtype, at + 5


def namespaces_work() -> bool:
    """Whether this machine lets a test give a process its own /etc/resolv.conf (root and unshare)."""
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
    return done.returncode == 0


def in_namespace(argv: list[str], resolv_conf: Path) -> list[str]:
    """`argv` run in a private mount namespace whose /etc/resolv.conf is `resolv_conf`."""
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/resolv.conf && exec "$@"', str(resolv_conf), *argv]
