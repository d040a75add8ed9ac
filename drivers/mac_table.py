"""Where the switch sends a frame: each host's own MAC pinned to its port, other MACs
learned with aging and a size limit.

A host of the bridge owns exactly one MAC, fixed when the bridge is built; a frame that
arrives on another port with that source MAC is forged (it would redirect the host's
traffic, already decompressed, to the forger) and is dropped and counted. Source MACs
that belong to no host (a host bridging VMs, say) are learned per port, forgotten
after `age` seconds without a frame, and at most `limit` are kept: a host sending
random source MACs fills the table up to the limit and no further (counted), and the
pinned hosts are never displaced.
"""

from __future__ import annotations

import collections
import math

__all__ = ["MacTable", "FORGED", "FLOOD"]

FORGED = -1   # learn(): drop the frame
FLOOD = -2    # lookup(): no single port: broadcast, multicast or unknown


class MacTable:
    def __init__(self, pinned: dict[bytes, int], *, limit: int = 1024, age: float = 300.0):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"mac_limit must be an integer >= 0, got {limit!r}")
        if not (isinstance(age, (int, float)) and math.isfinite(age) and age > 0):
            raise ValueError(f"mac_age must be a positive number of seconds, got {age!r}")
        self.pinned = dict(pinned)
        self.limit, self.age = limit, float(age)
        self._learned: collections.OrderedDict[bytes, tuple[int, float]] = collections.OrderedDict()

    def __len__(self):
        return len(self._learned)

    def expire(self, now: float):
        """Forget learned MACs not seen for `age` seconds (oldest first: O(expired))."""
        while self._learned:
            mac, (_, seen) = next(iter(self._learned.items()))
            if now - seen < self.age:
                break
            del self._learned[mac]

    def learn(self, src: bytes, port: int, now: float) -> int:
        """Source MAC `src` seen on `port`: the port, FORGED (drop), or -3 - port when
        the table is full (forward, not learned)."""
        owner = self.pinned.get(src)
        if owner is not None:
            return port if owner == port else FORGED
        if src[0] & 1:            # a group address is never a source
            return FORGED
        self._learned.pop(src, None)
        if len(self._learned) >= self.limit:
            self.expire(now)
            if len(self._learned) >= self.limit:
                return -3 - port
        self._learned[src] = (port, now)
        return port

    def lookup(self, dst: bytes, now: float) -> int:
        """The port of destination MAC `dst`, or FLOOD."""
        if dst[0] & 1:
            return FLOOD
        port = self.pinned.get(dst)
        if port is not None:
            return port
        hit = self._learned.get(dst)
        if hit is None or now - hit[1] >= self.age:
            return FLOOD
        return hit[0]
