"""The watcher process of process_guard: `python -I process_watcher.py OWNER_PID`.

It reads "watch PGID" / "release PGID" lines on its stdin, waits for the owner to end
(its pidfd, not a pipe's end: forked children would inherit that and hold it open), then
SIGKILLs every process whose process group or session is a watched one. Standard library
only, so that it starts in tens of milliseconds and cannot fail on an import; it ignores
SIGINT, SIGTERM and SIGHUP, which a terminal or make sends to the whole foreground group,
so that it is still there to do its work.
"""

import os
import select
import signal
import sys
import time


def kill_tree(groups, rounds=50):
    """SIGKILL every process whose process group or session is in `groups`, until none
    is left: a tool may put its children in groups of their own (SymbiYosys does, for its
    solvers), but they stay in the session that start_new_session gave it."""
    me = os.getpid()
    for _ in range(rounds):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and (int(fields[2]) in groups or int(fields[3]) in groups):
                found = True
                try:
                    os.kill(int(name), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.02)


def main():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    groups, buf = set(), b""
    os.set_blocking(0, False)

    def read_commands():
        nonlocal buf
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return True
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            what, _, pg = line.decode().partition(" ")
            (groups.add if what == "watch" else groups.discard)(int(pg))
        return bool(data)                     # b"": every writer closed its end

    try:
        fd = os.pidfd_open(int(sys.argv[1]))
    except ProcessLookupError:
        fd = None
    poll = select.poll()
    poll.register(0, select.POLLIN)
    if fd is not None:
        poll.register(fd, select.POLLIN)
    while fd is not None:
        events = dict(poll.poll())
        if 0 in events and not read_commands():
            poll.unregister(0)                # no more commands; the owner may live on
        if fd in events:
            break
    read_commands()                           # what the owner wrote just before it ended
    kill_tree(groups)


if __name__ == "__main__":
    main()
