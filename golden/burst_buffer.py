"""BurstBuffer (Fig. 10): a window onto the compressed byte stream.

A byte-level model for testbenches: beats of up to 32 bytes go in when a whole beat
fits, the consumer sees a window at the read position and drops 0..34 bytes per step.

Sizing: the paper's 512 bits (64 bytes) can deadlock. With the rule "pull a beat when
it fits", 33 bytes held leave no room for a beat (33 + 32 > 64) and are one byte short
of a 34-byte group. The buffer needs at least 34 + 31 = 65 bytes; the model defaults
to 66 (a 34-byte window plus one beat).
"""

__all__ = ["BurstBuffer", "BUFFER_BYTES", "MIN_BUFFER_BYTES", "MAX_TAKE"]

MAX_TAKE = 34                 # longest group: tag word + 8 raw floats
MIN_BUFFER_BYTES = MAX_TAKE + 31
BUFFER_BYTES = MAX_TAKE + 32


class BurstBuffer:
    """Holds up to ``capacity`` bytes; ``push`` a beat when ``has_room()``; ``window``/``consume``."""

    def __init__(self, capacity=BUFFER_BYTES):
        if capacity < 32:
            raise ValueError(f"a burst buffer holds at least one 32-byte beat, got {capacity}")
        self.capacity = capacity
        self._data = bytearray()
        self.ended = False

    @property
    def level(self):
        """Bytes held."""
        return len(self._data)

    def has_room(self):
        """True when a whole 32-byte beat fits (the buffer pulls the next beat then)."""
        return len(self._data) + 32 <= self.capacity

    def push(self, beat, last=False):
        """Append one beat (1..32 bytes; only a last beat may be short)."""
        if self.ended:
            raise ValueError("push after the last beat")
        if not 1 <= len(beat) <= 32:
            raise ValueError(f"a beat holds 1..32 bytes, got {len(beat)}")
        if not self.has_room():
            raise ValueError(f"no room for a beat: {len(self._data)} of {self.capacity} bytes held")
        if len(beat) < 32 and not last:
            raise ValueError("only the last beat may be partial")
        self._data += beat
        self.ended = bool(last)

    def window(self, size=MAX_TAKE):
        """The next ``size`` bytes at the read position, zeros past what is held."""
        w = bytes(self._data[:size])
        return w + bytes(size - len(w))

    def consume(self, count):
        """Drop ``count`` (0..34) bytes; returns True if they were all held."""
        if not 0 <= count <= MAX_TAKE:
            raise ValueError(f"the consumer drops 0..{MAX_TAKE} bytes per step, got {count}")
        held = count <= len(self._data)
        del self._data[:count]
        return held
