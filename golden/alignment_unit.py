"""AlignmentUnit (Fig. 9): variable-length byte vectors -> full 32-byte AXI beats."""

from .wire import BEAT_BYTES

__all__ = ["alignment_unit", "BEAT_BYTES"]


def alignment_unit(vectors):
    """Concatenate byte vectors (each 0..36 bytes) and cut them into beats.

    Returns a list of ``(data, keep, last)``: ``data`` 32 bytes (zeros past the valid
    bytes), ``keep`` the valid-byte mask (all ones but on the last beat), ``last``.
    """
    stream = bytearray()
    for i, v in enumerate(vectors):
        if len(v) > 36:
            raise ValueError(f"vector {i} has {len(v)} bytes; the AlignmentUnit takes 0..36")
        stream += bytes(v)
    if not stream:
        raise ValueError("no bytes to align: a frame needs at least one byte")
    beats = []
    for off in range(0, len(stream), BEAT_BYTES):
        chunk = bytes(stream[off:off + BEAT_BYTES])
        last = off + BEAT_BYTES >= len(stream)
        beats.append((chunk + bytes(BEAT_BYTES - len(chunk)), (1 << len(chunk)) - 1, last))
    return beats
