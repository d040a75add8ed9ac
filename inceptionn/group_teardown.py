"""When the hook's ring cannot be set up, make the ranks that wait in gloo raise too.

A rank running DDP without the hook (or with its set-up stuck elsewhere) waits in a gloo
allreduce for this rank, for the process group's timeout (30 min by default). In torch
2.13 no call on this rank fails that wait: ProcessGroup.abort(), shutdown() and
destroy_process_group() leave the peer waiting, and a collective of another size makes
gloo terminate the peer's process. Closing this process's end of gloo's TCP connections
does: the peer's pending call raises "Connection closed by peer" at once, as when a rank
dies. Linux only (/proc); elsewhere nothing is done.
"""

import os
import socket

__all__ = ["shut_down_connections"]

_ESTABLISHED = "01"


def _socket_fds() -> dict:
    """{socket inode: fd} of this process."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue                 # closed since listed
        if link.startswith("socket:["):
            out[int(link[8:-1])] = int(fd)
    return out


def shut_down_connections(keep_ports) -> int:
    """Shut down (both ways) every established TCP connection of this process but those
    with an end on one of `keep_ports` (the rendezvous store's: the ranks still use it to
    report); returns how many. The sockets stay open for their owners (gloo), which see
    the connection end."""
    try:
        fds = _socket_fds()
    except OSError:
        return 0
    keep = {int(p) for p in keep_ports if p}
    done = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
            ports = {int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)}
            if state != _ESTABLISHED or inode not in fds or ports & keep:
                continue
            try:
                s = socket.socket(fileno=os.dup(fds[inode]))
            except OSError:
                continue
            try:
                s.shutdown(socket.SHUT_RDWR)
                done += 1
            except OSError:
                pass
            finally:
                s.close()            # the duplicate only
    return done
