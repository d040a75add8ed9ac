"""`make soak`: the bridge (`inceptionn nic bridge`, its own process) for minutes with
many flows at once, one host's link going down and up, receivers killed in the middle
of their streams and restarted. Every stream between hosts that stay up must equal the
golden roundtrip, and the bridge process's memory and file descriptors must not grow.

Behind INCEPTIONN_SOAK=1 (minutes); INCEPTIONN_SOAK_SECONDS sets the length (default 180).
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import gradient_mss
from bridge_cli import wait_started

_why = netns_available()
pytestmark = [pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}"),
              pytest.mark.skipif(not os.environ.get("INCEPTIONN_SOAK"),
                                 reason="minutes long: make soak (INCEPTIONN_SOAK=1)")]

SECONDS = float(os.environ.get("INCEPTIONN_SOAK_SECONDS", "180"))
MTU = 9000
PEER = [sys.executable, "-m", "inceptionn", "bench", "nic", "--peer"]


def _status(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", f.read())[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


class _Flow:
    """One stream: a receiver process in host `dst`, a sender in host `src`."""

    def __init__(self, holders, tmp, src, dst, port, x_path, n):
        self.out = str(tmp / f"got-{src}-{dst}-{port}.npy")
        common = ["--mss", str(gradient_mss(MTU)), "--addr", f"10.77.0.{dst + 1}",
                  "--port", str(port)]
        ns = lambda i: ["nsenter", f"--net=/proc/{holders[i]}/ns/net", "--"]  # noqa: E731
        self.recv = subprocess.Popen(ns(dst) + PEER + ["recv", "--file", self.out, "--count",
                                                       str(n)] + common,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        self.ready = self.recv.stdout.readline().strip() == "ready"
        self.send = subprocess.Popen(ns(src) + PEER + ["send", "--file", x_path] + common,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

    def kill_receiver(self):
        os.killpg(self.recv.pid, signal.SIGKILL)

    def finish(self, timeout=120):
        """True if the receiver got the whole stream."""
        try:
            self.recv.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.recv.pid, signal.SIGKILL)
            self.recv.communicate()
        try:
            self.send.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.send.pid, signal.SIGKILL)
            self.send.wait()
        return self.ready and self.recv.returncode == 0


def test_soak(tmp_path):
    x = np.random.default_rng(21).normal(0, 0.05, (4 << 20) // 4).astype(np.float32)
    want = golden.roundtrip(x, 10)
    x_path = str(tmp_path / "x.npy")
    np.save(x_path, x)
    br = subprocess.Popen([sys.executable, "-m", "inceptionn", "nic", "bridge", "--hosts", "5",
                           "--mtu", str(MTU), "--check-golden", "500"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, holders = wait_started(br)
    assert len(holders) == 5, lines
    stop = threading.Event()

    def flap():     # host 4's link goes down and up, all along
        while not stop.is_set():
            for state in ("down", "up"):
                subprocess.run(["nsenter", f"--net=/proc/{holders[4]}/ns/net", "ip", "link", "set",
                                "nic0", state], capture_output=True)
                stop.wait(0.7)

    flapper = threading.Thread(target=flap, daemon=True)
    flapper.start()
    stable = [(0, 1), (1, 0), (2, 0), (0, 2), (1, 2)]     # hosts that stay up
    good = rounds = killed = flapped_ok = 0
    bad = []
    base = None
    end = time.monotonic() + SECONDS
    port = 6000
    try:
        while time.monotonic() < end:
            flows = []
            for src, dst in stable:
                flows.append(("stable", _Flow(holders, tmp_path, src, dst, port, x_path, x.size)))
                port += 1
            victim = _Flow(holders, tmp_path, 0, 3, port, x_path, x.size)     # its receiver dies
            flapping = _Flow(holders, tmp_path, 4, 1, port + 1, x_path, x.size)  # link flaps
            port += 2
            time.sleep(0.2)
            victim.kill_receiver()
            killed += 1
            for kind, f in flows:
                if f.finish():
                    got = np.load(f.out)
                    if np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                        good += 1
                    else:
                        bad.append(f.out)
                else:
                    bad.append(f"{f.out}: incomplete")
            victim.finish(timeout=30)
            flapped_ok += flapping.finish(timeout=60)
            rounds += 1
            if rounds == 2:
                base = _status(br.pid)       # warm: after two rounds of everything
            assert br.poll() is None, br.stderr.read()
        last = _status(br.pid)
    finally:
        stop.set()
        flapper.join()
        br.send_signal(signal.SIGTERM)
        out, err = br.communicate(timeout=60)
    print(f"{rounds} rounds, {good} stable streams right, {killed} receivers killed, "
          f"{flapped_ok} streams across the flapping link completed; bridge RSS/fds "
          f"{base} -> {last} (kB, count)")
    print(out[-2000:])
    assert not bad, bad
    assert rounds >= 3 and good == rounds * len(stable)
    assert last[1] <= base[1], f"file descriptors grew: {base[1]} -> {last[1]}"
    assert last[0] - base[0] < 32 << 10, f"memory grew: {base[0]} -> {last[0]} kB"
    assert br.returncode == 143 and "stopped on an error" not in err, err
