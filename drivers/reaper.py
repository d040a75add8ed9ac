"""The reaper: a small process that kills everything a bridge started once the bridge is
gone, however it went (close(), an exception, SIGTERM, SIGINT or kill -9).

Why a process: a program can catch neither SIGKILL nor its own death, and
PR_SET_PDEATHSIG follows the *thread* that forked a child, not the process. The reaper
reads commands on its stdin, a pipe whose only write end is in the bridge's process; the
kernel closes that end when the process ends by any means, and the reaper sees EOF.
Then it SIGKILLs every process group it was told about (each `--run` command runs in
its own) and every process whose network namespace is one of the bridge's hosts, until
none is left; the namespaces (and the TAP devices in them) go with their last process.

Commands, one a line: `ns PID` (the namespace of process PID is a host's), `pg PGID`
(a process group to kill), `unpg PGID` (that group was reaped by the bridge already).

It runs as `python -I reaper.py` (no imports of the package: it starts in milliseconds
and cannot fail on an import) and ignores SIGINT, SIGTERM and SIGHUP, which a terminal
sends to the whole foreground group: it must outlive the bridge to do its work.
"""

import os
import signal
import sys
import time


def _netns(pid):
    try:
        st = os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _in_namespaces(namespaces):
    me = os.getpid()
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me and _netns(name) in namespaces:
            pids.append(int(name))
    return pids


def reap(namespaces, groups, rounds=50):
    """SIGKILL the groups, then every process in the namespaces until none is left."""
    for pg in groups:
        try:
            os.killpg(pg, signal.SIGKILL)
        except OSError:
            pass
    for _ in range(rounds):
        pids = _in_namespaces(namespaces)
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    return False


def main():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    namespaces, groups = set(), set()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        what, _, arg = line.strip().partition(" ")
        if what == "ns" and (ns := _netns(arg)) is not None:
            namespaces.add(ns)
        elif what == "pg":
            groups.add(int(arg))
        elif what == "unpg":
            groups.discard(int(arg))
        sys.stdout.write("ok\n")
        sys.stdout.flush()
    # EOF: the bridge closed the pipe or its process is gone.
    reap(namespaces, groups)


if __name__ == "__main__":
    main()
