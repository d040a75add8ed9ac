"""Process groups that end with their owner, however the owner ends.

A long job (a SymbiYosys run and its solvers, a simulator, a rank) runs in a process group
or session of its own; if the process that started it ends by a signal it cannot catch
(SIGKILL) or one nobody handles, its `finally` never runs and the job would live on,
reparented to init. `guard_group(pgid)` hands the group to a watcher process
(process_watcher.py, one per owner, started on first use) that kills it once the owner is
gone; `release(pgid)` takes back a group the owner has reaped itself.
"""

import os
import sys
import threading

from .process_watcher import kill_tree

__all__ = ["guard_group", "release", "kill_guarded", "kill_tree", "children"]

_WATCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "process_watcher.py")
_lock = threading.Lock()
_watcher = None          # (owner pid, watcher pid, fd of the write end of its stdin)
_guarded: set = set()    # this process's groups, for kill_guarded()


def _alive(pid: int) -> bool:
    """Whether our watcher child still runs (reaped here if it has ended)."""
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False


def _start_watcher():
    """The watcher, in a session of its own, reading our lines on its stdin. Spawned
    without a subprocess.Popen: it outlives this process by design, and a Popen would
    warn at exit that it is still running."""
    r, w = os.pipe()        # both ends close-on-exec; the dup2 makes r its stdin only
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", _WATCHER, str(os.getpid())],
                             os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, r, 0)],
                             setsid=True)
    except BaseException:
        os.close(w)
        raise
    finally:
        os.close(r)
    return os.getpid(), pid, w      # a bare fd: a file object would warn at exit too


def _tell(line):
    global _watcher
    with _lock:
        if _watcher is None or _watcher[0] != os.getpid() or not _alive(_watcher[1]):
            # First use in this process (a forked child gets a watcher of its own).
            if _watcher is not None and _watcher[0] == os.getpid():
                os.close(_watcher[2])
            _watcher = _start_watcher()
        try:
            os.write(_watcher[2], f"{line}\n".encode())   # < PIPE_BUF: one write
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
