"""Network namespaces that cannot outlive their owner, and TAP devices inside them.

A namespace here is held open by a child process (`unshare --net`) that exits when its
stdin reaches EOF: the write end of that pipe is only in the process that made it, and
the kernel closes it when that process ends, by any means (kill -9 included). Not
PR_SET_PDEATHSIG: that signal follows the *thread* that forked the child, so a namespace
made from a worker thread would die with the thread. Processes started inside a host
keep its namespace alive, so a Reaper (drivers/reaper.py) kills them when the owner
goes. There are no names in /run/netns to clean up, and a second run right after a
killed one starts from nothing.

Commands run inside a host through `nsenter --net=/proc/<holder>/ns/net`; Python sockets
are created inside one by a short-lived thread that calls setns(2) (the network namespace
is per thread, and a socket keeps the namespace it was created in).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import threading

__all__ = ["NetnsUnavailable", "OffloadRefused", "Namespace", "Reaper", "open_tap",
           "netns_available", "bridged_hosts"]

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET = 0x40000000
_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000
_IFF_VNET_HDR = 0x4000
_TUNSETOFFLOAD = 0x400454D0
_TUNSETVNETHDRSZ = 0x400454D8
_TUN_F_CSUM, _TUN_F_TSO4 = 0x01, 0x02


class NetnsUnavailable(RuntimeError):
    """This machine (or user) cannot create network namespaces or TAP devices."""


class OffloadRefused(OSError):
    """The kernel would not give a TAP virtio-net headers or checksum and TSO offloads."""


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


class Namespace:
    """One network namespace, alive while this object (and its process) is."""

    def __init__(self):
        why = netns_available()
        if why:
            raise NetnsUnavailable(why)
        # `unshare --net` runs the shell inside the new namespace; its stdout tells us it
        # got there. `read` returns at EOF on stdin: when this process is gone. Its own
        # session: a terminal's Ctrl-C reaches the owner, which then cleans up.
        self._proc = subprocess.Popen(
            ["unshare", "--net", "sh", "-c", "echo ready; read _; exit 0"],
            stdout=subprocess.PIPE, stdin=subprocess.PIPE, start_new_session=True)
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
            self._proc.stdin.close()
            self._proc = None

    def __del__(self):
        if getattr(self, "_proc", None) is not None and self._proc.poll() is None:
            self._proc.kill()


class Reaper:
    """Kills every process in the given namespaces and process groups once this object
    is closed or this process is gone by any means (drivers/reaper.py)."""

    def __init__(self):
        self._proc = subprocess.Popen(
            [sys.executable, "-I", os.path.join(os.path.dirname(__file__), "reaper.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
        self._lock = threading.Lock()
        if self._proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the reaper process did not start")

    def _tell(self, line):
        with self._lock:
            if self._proc is None:
                raise RuntimeError("reaper is closed")
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
            if self._proc.stdout.readline().strip() != "ok":
                raise RuntimeError("the reaper process is gone")

    def watch_namespace(self, ns: "Namespace"):
        self._tell(f"ns {ns.pid}")

    def watch_group(self, pgid: int):
        self._tell(f"pg {int(pgid)}")

    def forget_group(self, pgid: int):
        self._tell(f"unpg {int(pgid)}")

    def close(self, timeout: float = 30.0):
        """Kill everything watched now; returns once it is gone."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def open_tap(name: str, ns: Namespace, *, mtu: int, addr: str, mac: str,
             ns_name: str | None = None, offload: bool = False) -> int:
    """Create TAP `name`, move it into `ns`, give it `addr` (CIDR), `mac` and `mtu`, bring
    it and the namespace's loopback up; returns the non-blocking fd of the switch side.
    `ns_name` renames it inside the namespace (names there need not be unique).

    The device lives while the fd is open; moving it into the namespace keeps the fd.
    Without `offload` no checksum or segmentation offload is enabled on it, so the kernel
    hands over frames of at most the MTU with complete checksums, as a NIC without
    offloads sees. With it, every frame read or written starts with a 10-byte
    virtio-net header and the host's kernel may hand over TCP/IPv4 segments of up to
    64 KB with partial checksums (checksum offload and TSO, drivers/tso.py); raises
    OffloadRefused if the kernel will not.
    """
    if len(name.encode()) > 15:
        raise ValueError(f"interface name {name!r} is longer than 15 bytes")
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        flags = _IFF_TAP | _IFF_NO_PI | (_IFF_VNET_HDR if offload else 0)
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), flags))
        if offload:
            try:
                fcntl.ioctl(fd, _TUNSETVNETHDRSZ, struct.pack("i", 10))
                fcntl.ioctl(fd, _TUNSETOFFLOAD, _TUN_F_CSUM | _TUN_F_TSO4)
            except OSError as e:
                raise OffloadRefused(e.errno, f"TAP offloads refused: {e.strerror}") from e
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


def bridged_hosts(world: int, subnet: str, *, mtu: int | None = None):
    """`world` hosts (namespaces, eth0 at subnet.1..world) on one Linux bridge br0 in a
    switch namespace of its own: (switch, hosts). Whatever was made is closed again if a
    step fails."""
    switch, hosts = Namespace(), []
    mtu_args = ["mtu", str(mtu)] if mtu else []
    try:
        switch.run(["ip", "link", "add", "br0", "type", "bridge"])
        switch.run(["ip", "link", "set", "br0", "up"])
        for i in range(world):
            ns = Namespace()
            hosts.append(ns)
            ns.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}"])
            ns.run(["ip", "link", "set", f"p{i}", "netns", str(switch.pid)])
            ns.run(["ip", "addr", "add", f"{subnet}.{i + 1}/24", "dev", "eth0"])
            ns.run(["ip", "link", "set", "eth0", *mtu_args, "up"])
            ns.run(["ip", "link", "set", "lo", "up"])
            switch.run(["ip", "link", "set", f"p{i}", *mtu_args, "master", "br0", "up"])
    except BaseException:
        for ns in hosts + [switch]:
            ns.close()
        raise
    return switch, hosts
