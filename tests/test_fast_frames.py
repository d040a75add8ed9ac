"""golden.fast_frames through ScaledCodec.encode_frames / decode_frames: a chunk's frames
in one call, against the frame-at-a-time path the ring took before (encode_recorded or
the separate steps per piece, a 4-byte length before each frame; decode_into per
piece), bit for bit: the bytes, the kept values, the loss, the decoded values; and
every malformed chunk refused as the frame-at-a-time decode refuses it."""

import struct

import numpy as np
import pytest

from inceptionn.drivers.collectives.codecs import SCALE_MIN, ScaledCodec
from inceptionn.drivers.collectives.memory import LossRecorder
from inceptionn.golden import fast_keep

from test_fast_keep import _values


def _one_at_a_time(codec, x, piece, loss, keep, div):
    """(wire bytes, frames) as the ring coded a chunk before: one frame a piece."""
    bodies = []
    for i in range(0, x.size, piece):
        p = x[i:i + piece]
        lp = None if loss is None else loss[i:i + piece]
        body = codec.encode_recorded(p, lp, keep, div)
        if body is None:                    # s outside SCALE_LIMITS: the separate steps
            body = codec.encode(p)
            back = codec.decode(body, p.size)
            if lp is not None:
                with np.errstate(invalid="ignore"):
                    err = p - back
                lp += np.nan_to_num(err, nan=0.0, posinf=0.0, neginf=0.0)
            if keep:
                np.divide(back, np.float32(div), out=p)
        bodies.append(body)
    return b"".join(struct.pack("!I", len(b)) + b for b in bodies), bodies


def _bits(a):
    return a.view(np.uint32)


def _huge_piece(x, piece):
    """A piece whose scale lies past fast_keep.SCALE_LIMITS (a third of it near 2^120)."""
    if x.size >= 2 * piece:
        x[piece:piece + piece // 3] = np.float32(2.0 ** 120)


@pytest.mark.parametrize("n,piece", [(1 << 18, 1 << 16), (300_001, 1 << 16), (1000, 37),
                                     (5, 8), (1 << 16, 1 << 16), (0, 64)])
@pytest.mark.parametrize("k", [6, 10, 14])
@pytest.mark.parametrize("keep,div,loss", [(False, 1, True), (False, 1, False), (True, 1, True),
                                           (True, 4, True), (True, 3, False)])
def test_encode_frames_is_the_frame_at_a_time_path(n, piece, k, keep, div, loss):
    c = ScaledCodec(k)
    x = _values(max(n, 1), seed=n + k)[:n]
    _huge_piece(x, piece)
    a, b = x.copy(), x.copy()
    la = np.zeros(n, np.float32) if loss else None
    lb = np.zeros(n, np.float32) if loss else None
    wire = c.encode_frames(a, piece, la, keep, div)
    ref, _ = _one_at_a_time(c, b, piece, lb, keep, div)
    assert wire.tobytes() == ref
    assert np.array_equal(_bits(a), _bits(b))
    if loss:
        assert np.array_equal(_bits(la), _bits(lb))


def test_a_piece_past_the_scale_limits_is_coded_the_long_way():
    c, piece = ScaledCodec(10), 1 << 12
    x = _values(4 * piece, seed=1)
    _huge_piece(x, piece)
    wire = c.encode_frames(x.copy(), piece)
    scales, pos = [], 0
    while pos < wire.size:
        length = struct.unpack("!I", wire[pos:pos + 4].tobytes())[0]
        scales.append(int(wire[pos + 4]) + SCALE_MIN)
        pos += 4 + length
    assert len(scales) == 4
    assert not fast_keep.SCALE_LIMITS[0] <= scales[1] <= fast_keep.SCALE_LIMITS[1]


@pytest.mark.parametrize("n,piece", [(1 << 18, 1 << 16), (300_001, 1 << 16), (1000, 37),
                                     (5, 8)])
@pytest.mark.parametrize("add,div", [(False, 1), (True, 1), (False, 4), (False, 3)])
def test_decode_frames_is_decode_into_per_piece(n, piece, add, div):
    c = ScaledCodec(10)
    x = _values(n, seed=n)
    _huge_piece(x, piece)
    wire, bodies = _one_at_a_time(c, x.copy(), piece, None, False, 1)
    base = _values(n, seed=n + 1)
    o1, o2 = base.copy(), base.copy()
    c.decode_frames(np.frombuffer(wire, np.uint8), o1, piece, add, div)
    for body, i in zip(bodies, range(0, n, piece)):
        c.decode_into(body, o2[i:i + piece], add, div)
    assert np.array_equal(_bits(o1), _bits(o2))


def _wire(n, piece):
    c = ScaledCodec(10)
    x = _values(n, seed=3)
    return c, bytearray(c.encode_frames(x, piece).tobytes())


def _short_frame(w):
    """The first frame's length one byte short, that byte gone: its groups run out."""
    length = struct.unpack("!I", w[:4])[0]
    return bytearray(struct.pack("!I", length - 1)) + w[4:3 + length] + w[4 + length:]


@pytest.mark.parametrize("damage,message", [
    (_short_frame, "frame 0 of the chunk: groups run out"),
    (lambda w: w[:-1], "frames end before the chunk"),
    (lambda w: w[:len(w) // 2], "frames end before the chunk"),
    (lambda w: w + b"\0", "left over after the chunk"),
    (lambda w: bytearray(4) + w, "no scale byte"),
])
def test_a_malformed_chunk_is_a_value_error(damage, message):
    c, wire = _wire(3000, 1000)
    out = np.zeros(3000, np.float32)
    with pytest.raises(ValueError, match=message):
        c.decode_frames(np.frombuffer(bytes(damage(wire)), np.uint8), out, 1000)


def test_bytes_left_in_a_frame_are_a_value_error():
    c, wire = _wire(3000, 1000)
    length = struct.unpack("!I", wire[:4])[0]
    frame = wire[4:4 + length] + b"\0"             # one byte more in the first frame
    wire = bytearray(struct.pack("!I", length + 1)) + frame + wire[4 + length:]
    with pytest.raises(ValueError, match="frame 0 of the chunk: bytes left over"):
        c.decode_frames(np.frombuffer(bytes(wire), np.uint8), np.zeros(3000, np.float32), 1000)


def test_the_recorder_records_a_chunk_at_its_place():
    """LossRecorder.encode_frames: the loss lands at the chunk's offset in the buffer
    recorded, as the frame-at-a-time encode put it; outside the buffer is an error."""
    c, piece = ScaledCodec(10), 1 << 12
    x = _values(10 * piece, seed=5)
    a, b = x.copy(), x.copy()
    ra, rb = LossRecorder(c), LossRecorder(c)
    ra.start(a)
    rb.start(b)
    lo, hi = 3 * piece + 17, 7 * piece + 5
    wire = ra.encode_frames(a[lo:hi], piece, keep=True, divide_by=2)
    ref = b"".join(struct.pack("!I", len(f)) + f
                   for f in (rb.encode_keep(b[i:min(i + piece, hi)], 2)
                             for i in range(lo, hi, piece)))
    assert wire.tobytes() == ref
    assert np.array_equal(_bits(ra.stop()), _bits(rb.stop()))
    assert np.array_equal(_bits(a), _bits(b))
    ra.start(a)
    with pytest.raises(RuntimeError, match="outside the buffer"):
        ra.encode_frames(x[:piece].copy(), piece)
