"""A command's own process keeps what its start-up built until it exits, out of the garbage collector's sight.

A run's start-up builds objects that live as long as the process: the modules, the spec's models (pydantic's
validators), the target and its client. Python's cyclic garbage collector would walk them again in each full
collection, and at exit the interpreter takes them apart object by object: about 50 ms of CPU a run, a tenth of
its start-up (`bench/http.py`'s start-up line). `gc.freeze` moves them out of the collector's sight once the
run is about to start, so neither happens; what the run makes after is collected as before.

Only in a process that is the command (the `evalgate` executable, the Action's entrypoint): a library caller's
heap is its own, and in its process nothing changes.
"""

from __future__ import annotations

import gc

_command = False


def command_process() -> None:
    """This process is an evalgate command (its entry point calls this): its heap is evalgate's to settle."""
    global _command
    _command = True


def keep_startup_heap() -> None:
    """In a command's process, freeze every object that exists now: called once the spec is loaded and the
    target made, just before the first item. Objects in a cycle that frozen objects form are then never freed
    before the exit; nothing a run writes waits on a finalizer (files are closed, clients shut, explicitly)."""
    if _command:
        gc.freeze()
