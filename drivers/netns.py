"""Network namespaces that cannot outlive their owner, and TAP devices inside them.

A namespace here is held open by a child process (`unshare --net`) that the kernel kills
when its parent dies (PR_SET_PDEATHSIG), so a bridge that exits, is interrupted or is
SIGKILLed leaves no namespace behind: the last process in it is gone, and with it the
namespace and the TAP device that was moved into it. There are no names in /run/netns to
clean up, and a second run right after a killed one starts from nothing.

Commands run inside a host through `nsenter --net=/proc/<holder>/ns/net`; Python sockets
are created inside one by a short-lived thread that calls setns(2) (the network namespace
is per thread, and a socket keeps the namespace it was created in).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import struct
import subprocess
import threading

__all__ = ["NetnsUnavailable", "Namespace", "open_tap", "netns_available"]

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000


class NetnsUnavailable(RuntimeError):
    """This machine (or user) cannot create network namespaces or TAP devices."""


def netns_available() -> str | None:
    """None if namespaces, TAP and the tools are usable here, else the reason why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and TAP devices)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"needs the '{tool}' command"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    return None


def _die_with_parent():
    # Runs in the child between fork and exec.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Namespace:
    """One network namespace, alive while this object (and its process) is."""

    def __init__(self):
        why = netns_available()
        if why:
            raise NetnsUnavailable(why)
        # `unshare --net` execs `sleep` inside the new namespace; its stdout tells us it
        # got there (the namespace exists once the process is running the command).
        self._proc = subprocess.Popen(
            ["unshare", "--net", "sh", "-c", "echo ready; exec sleep infinity"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        line = self._proc.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise NetnsUnavailable("could not create a network namespace (unshare --net failed)")
        self.pid = self._proc.pid
        self.path = f"/proc/{self.pid}/ns/net"

    def cmd(self, argv) -> list[str]:
        """argv prefixed so that it runs inside this namespace."""
        return ["nsenter", f"--net={self.path}", "--", *argv]

    def run(self, argv, *, check=True, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        res = subprocess.run(self.cmd(argv), **kw)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed in namespace (status {res.returncode}): "
                               f"{(res.stderr or '').strip()}")
        return res

    def call(self, fn, *args, **kw):
        """fn(*args, **kw) in a thread that has entered this namespace; its result.

        For creating sockets inside the host: a socket stays in the namespace it was
        created in, whichever thread uses it afterwards."""
        box = {}

        def body():
            try:
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    if _libc.setns(fd, _CLONE_NEWNET) != 0:
                        e = ctypes.get_errno()
                        raise OSError(e, f"setns: {os.strerror(e)}")
                finally:
                    os.close(fd)
                box["value"] = fn(*args, **kw)
            except BaseException as e:  # handed to the caller
                box["error"] = e

        t = threading.Thread(target=body, name="netns-call", daemon=True)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def close(self):
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc.stdout.close()
            self._proc = None

    def __del__(self):
        if getattr(self, "_proc", None) is not None and self._proc.poll() is None:
            self._proc.kill()


def open_tap(name: str, ns: Namespace, *, mtu: int, addr: str, mac: str,
             ns_name: str | None = None) -> int:
    """Create TAP `name`, move it into `ns`, give it `addr` (CIDR), `mac` and `mtu`, bring
    it and the namespace's loopback up; returns the non-blocking fd of the switch side.
    `ns_name` renames it inside the namespace (names there need not be unique).

    The device lives while the fd is open; moving it into the namespace keeps the fd.
    No checksum or segmentation offload is enabled on it, so the kernel hands over
    frames of at most the MTU with complete checksums, as a NIC without offloads sees.
    """
    if len(name.encode()) > 15:
        raise ValueError(f"interface name {name!r} is longer than 15 bytes")
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
        subprocess.run(["ip", "link", "set", "dev", name, "netns", str(ns.pid)], check=True,
                       capture_output=True)
        ns.run(["ip", "link", "set", "dev", "lo", "up"])
        if ns_name:
            ns.run(["ip", "link", "set", "dev", name, "name", ns_name])
            name = ns_name
        ns.run(["ip", "link", "set", "dev", name, "address", mac, "mtu", str(mtu)])
        ns.run(["ip", "addr", "add", addr, "dev", name])
        ns.run(["ip", "link", "set", "dev", name, "up"])
    except BaseException:
        os.close(fd)
        raise
    return fd
