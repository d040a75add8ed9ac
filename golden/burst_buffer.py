"""BurstBuffer (hw/burst_buffer.py, paper Fig. 10): the ring of 4 x 32-byte slots that
holds one payload's compressed byte stream at a time, at the level of transactions
(a piece taken, a step, a flush; no clocks).

What it models of the RTL (see hw/burst_buffer.py's docstring for the ports):
- pieces are lane-aligned (``lane_pieces`` cuts them): a piece's bytes sit on lanes
  ``first .. first+count-1`` and are written on those lanes of the slot at the write
  position, no shifting; a payload's first piece may start on any lane, every piece
  but the last runs to lane 31, ``count`` may be 0 only in a last piece;
- room for a piece: its slot is not still holding bytes the read position has not
  left (the write position's slot is less than 4 slots ahead of the read position's);
- a step moves the read position by the length its tag word gives (2..34); the
  ``window`` is the 37 bytes at the read position (the longest group and a 3-byte
  tail); ``rest`` is the bytes written from the read position on (negative past the
  end); ``held`` is the exact "the group at the read position is in" (the RTL's
  ``go`` on ``allow`` alone is never more optimistic than this);
- zero extension: a last piece writes zeros on its slot's lanes past its end, and a
  slot is cleared when the read position leaves it and on ``flush``, so past the end of
  a payload every byte reads 0 and every group as a zero tag word (2 bytes);
- after a payload's last piece nothing is taken until ``flush``; a flush before the
  last piece drops the payload's pieces up to and including its last.

tests/test_golden_burst_buffer.py drives it with the piece sequences that
sim/test_burst_buffer.py feeds the RTL and checks the same properties.
"""

from .tag_decoder import LEN_LUT
from .wire import BEAT_BYTES

__all__ = ["BurstBuffer", "lane_pieces", "SLOTS", "RING_BYTES", "WINDOW_BYTES"]

SLOTS = 4
RING_BYTES = SLOTS * BEAT_BYTES   # 128: the paper's 512 bits deadlock (33 bytes held leave
                                  # no room for a beat and too few for a 34-byte group)
WINDOW_BYTES = 37                 # the longest group (34) and a 3-byte raw tail


def lane_pieces(payload, lane=0, *, empty_last=False):
    """The payload cut into lane-aligned pieces ``(data, first, count, last)`` as the RX
    engine's feed cuts them: byte 0 on ``lane``, every piece but the last running to lane
    31; ``data`` is 32 bytes (zeros off the piece's lanes). ``empty_last``: after a
    piece that ends on lane 31, one more, empty, last piece."""
    if not 0 <= lane < BEAT_BYTES:
        raise ValueError(f"a piece starts on lane 0..31, got {lane}")
    payload = bytes(payload)
    out, pos = [], 0
    while pos < len(payload) or not out:
        count = min(BEAT_BYTES - lane, len(payload) - pos)
        data = bytearray(BEAT_BYTES)
        data[lane:lane + count] = payload[pos:pos + count]
        out.append([bytes(data), lane, count, False])
        pos += count
        lane = (lane + count) % BEAT_BYTES
    if lane == 0 and empty_last and out[-1][2]:
        out.append([bytes(BEAT_BYTES), 0, 0, False])
    out[-1][3] = True
    return [tuple(p) for p in out]


class BurstBuffer:
    """The ring, its write position W and read position P (absolute stream positions:
    a payload's byte i is at ``first + i``, ``first`` its first piece's lane; ring byte
    ``a mod 128``, slot ``a // 32 mod 4``)."""

    def __init__(self):
        self._ring = bytearray(RING_BYTES)
        self.flush()
        self._dropping = False

    # -- state as the RTL's outputs show it
    @property
    def ready(self):
        """A payload's first piece is in."""
        return self._w is not None

    @property
    def last(self):
        """The payload's last piece is in."""
        return self._last

    @property
    def rest(self):
        """Bytes written from the read position on (negative past the end; 0 before a
        payload's first piece)."""
        return 0 if self._w is None else self._w - self._p

    def window(self):
        """The 37 bytes at the read position."""
        if self._p is None:
            return bytes(WINDOW_BYTES)
        return bytes(self._ring[(self._p + i) % RING_BYTES] for i in range(WINDOW_BYTES))

    def group_length(self):
        """Length (2..34) of the group at the read position, from its tag word."""
        w = self.window()
        return int(LEN_LUT[w[0] | (w[1] << 8)])

    def held(self):
        """The whole group at the read position is in the ring."""
        return self._p is not None and self._p + self.group_length() <= self._w

    # -- input side
    def has_room(self):
        """A piece would be taken now (ignoring what is dropped after a flush)."""
        if self._last:
            return False
        if self._w is None:
            return True
        return self._w // BEAT_BYTES - self._p // BEAT_BYTES < SLOTS

    def push(self, data, first, count, last):
        """Offer one piece; returns True if taken (written or dropped after a flush)."""
        data = bytes(data)
        if len(data) != BEAT_BYTES or not 0 <= first < BEAT_BYTES or count < 0 \
                or first + count > BEAT_BYTES:
            raise ValueError(f"a piece is 32 bytes with first + count <= 32, got "
                             f"{len(data)} bytes, first {first}, count {count}")
        if not last and first + count != BEAT_BYTES:
            raise ValueError("every piece but a payload's last runs to lane 31")
        if self._dropping:
            self._dropping = not last
            return True
        if not self.has_room():
            return False
        if self._w is None:
            self._p = self._w = first
        elif first != self._w % BEAT_BYTES:
            raise ValueError(f"a piece goes on at lane {self._w % BEAT_BYTES}, got {first}")
        base = self._w - first                  # the absolute position of the slot's lane 0
        for lane in range(first, first + count):
            self._ring[(base + lane) % RING_BYTES] = data[lane]
        if last:
            # Zero extension: the slot's lanes past the end read 0.
            for lane in range(first + count, BEAT_BYTES):
                self._ring[(base + lane) % RING_BYTES] = 0
        self._w += count
        self._last = bool(last)
        return True

    # -- consumer side
    def step(self, past_ok=False):
        """Move the read position past the group there; without ``past_ok`` the group
        must be held. Returns the group's length."""
        if self._p is None:
            raise ValueError("no payload: its first piece is not in")
        if not past_ok and not self.held():
            raise ValueError("the group at the read position is not in yet")
        length = self.group_length()
        old = self._p // BEAT_BYTES
        self._p += length
        for s in range(old, self._p // BEAT_BYTES):
            self._clear_slot(s)
        return length

    def flush(self):
        """Done with this payload: empty the ring; if its last piece is not in, drop the
        payload's pieces up to and including the last."""
        self._dropping = getattr(self, "_w", None) is not None and not self._last
        for s in range(SLOTS):
            self._clear_slot(s)
        self._p = self._w = None
        self._last = False

    def _clear_slot(self, slot):
        lo = (slot % SLOTS) * BEAT_BYTES
        self._ring[lo:lo + BEAT_BYTES] = bytes(BEAT_BYTES)
