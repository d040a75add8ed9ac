"""Where a tagged TCP segment starts in its byte stream, and whether that is a float.

The NIC compresses every 4 payload bytes of a tagged segment as one float32. That is
only what the sender meant if the segment's first payload byte sits at a stream offset
that is a multiple of 4. The NIC cannot know the offset (it has no connection state), so
it compresses such a segment anyway and the receiver gets corrupted values; the software
NIC tracks each flow from its SYN and counts those segments. It sees segment starts
only: a write that puts a non-float prefix before the floats shifts every value yet
keeps every segment start on a multiple of 4, and is not counted
(docs/host-contract.md says exactly what is and is not caught).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..golden.frames import frame_fields
from ..golden.packet_matcher import IPPROTO_TCP

__all__ = ["Alignment", "StreamOffsets"]

_SYN, _FIN, _RST = 0x02, 0x01, 0x04


@dataclass
class Alignment:
    tracked: int = 0       # tagged TCP segments with payload whose flow's SYN was seen
    misaligned: int = 0    # ... of them starting off a 4-byte stream offset
    untracked: int = 0     # tagged TCP segments of flows whose SYN was not seen


class StreamOffsets:
    """Initial sequence numbers per flow, learned from SYNs seen leaving a host."""

    MAX_FLOWS = 65536  # a bound on state; the oldest flows are forgotten first

    def __init__(self):
        self._isn: dict[tuple, int] = {}
        self.counts = Alignment()

    def observe(self, frame: bytes, dscp: int | None) -> int | None:
        """Look at one frame leaving a host; `dscp` is the one the NIC compresses (None:
        compression off). Returns the stream offset of a tagged TCP segment's first
        payload byte (None if unknown or not such a segment)."""
        try:
            f = frame_fields(frame)
        except ValueError:
            return None
        if f.proto != IPPROTO_TCP:
            return None
        key = (frame[f.l3 + 12:f.l3 + 20], frame[f.l4:f.l4 + 4])  # addresses, ports
        seq, flags = f.seq, f.tcp_flags
        if flags & _SYN:
            if len(self._isn) >= self.MAX_FLOWS:
                self._isn.pop(next(iter(self._isn)))
            self._isn[key] = seq
            return None
        if flags & _RST:
            self._isn.pop(key, None)
        if dscp is None or f.tos >> 2 != dscp or not f.payload:
            return None
        isn = self._isn.get(key)
        if isn is None:
            self.counts.untracked += 1
            return None
        offset = (seq - isn - 1) & 0xFFFFFFFF
        self.counts.tracked += 1
        if offset % 4:
            self.counts.misaligned += 1
        return offset
