"""Process groups that end with their owner, however the owner ends.

A long job (a SymbiYosys run and its solvers, a simulator, a rank) runs in a process group
or session of its own; if the process that started it ends by a signal it cannot catch
(SIGKILL) or one nobody handles, its `finally` never runs and the job would live on,
reparented to init. `guard_group(pgid)` hands the group to a watcher process
(process_watcher.py, one per owner, started on first use) that kills it once the owner is
gone; `release(pgid)` takes back a group the owner has reaped itself.
"""

import os
import subprocess
import sys
import threading

from .process_watcher import kill_tree

__all__ = ["guard_group", "release", "kill_guarded", "kill_tree", "children"]

_WATCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "process_watcher.py")
_lock = threading.Lock()
_watcher = None          # (owner pid, Popen)
_guarded: set = set()    # this process's groups, for kill_guarded()


def _tell(line):
    global _watcher
    with _lock:
        if _watcher is None or _watcher[0] != os.getpid() or _watcher[1].poll() is not None:
            # First use in this process (a forked child gets a watcher of its own).
            proc = subprocess.Popen([sys.executable, "-I", _WATCHER, str(os.getpid())],
                                    stdin=subprocess.PIPE, start_new_session=True)
            _watcher = (os.getpid(), proc)
        try:
            _watcher[1].stdin.write(f"{line}\n".encode())
            _watcher[1].stdin.flush()
        except OSError:
            pass


def guard_group(pgid: int) -> None:
    """Kill process group (or session) `pgid` once this process has ended, by any means."""
    _guarded.add(int(pgid))
    _tell(f"watch {int(pgid)}")


def release(pgid: int) -> None:
    """Stop watching `pgid` (it has ended; its id may be reused)."""
    _guarded.discard(int(pgid))
    _tell(f"release {int(pgid)}")


def kill_guarded() -> None:
    """Kill every group this process guards now (on a stop request: its jobs end at
    once, not when their own work reaches a point where it looks)."""
    kill_tree(set(_guarded) - {os.getpid()})


def children(pid: int) -> list:
    """The pids of `pid`'s living children."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(name))
    return out
