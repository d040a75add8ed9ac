"""The value codecs a ring hop can apply, by name, on one interface.

  "paper"    the paper's codec (Algorithms 2 and 3) at 2^-k: the NIC's group stream
  "bounded"  inceptionn_eb: the same layout with a true error bound (the default of the
             DDP hook: at 2^-10 the paper's codec decodes most small gradients to 0)

`encode(values) -> bytes` gives exactly the group bytes the compression engine emits
for those values (no shim: a ring hop frames them itself), `decode(buf, n)` the float32
values a receiver restores, and `roundtrip(values)` what a receiving NIC delivers. Both
codecs are per value, so the roundtrip of a buffer is the same however it is cut into
chunks or TCP segments: the ring, the NIC and the emulation agree bit for bit, except
where the NIC's TX sends a segment uncompressed (fall-back: a segment of a few floats
that coding does not shrink, which TCP can cut under load), whose floats arrive exact.

Encoding and decoding run in golden.fast's compiled loops, ScaledCodec's scaling in
golden.fast_scale's; all release the GIL, so several threads code several chunks at once.

`ScaledCodec` makes the bound follow the data (docs/compressors.md, "Absolute or
scale-following bound"): each chunk is multiplied by 2^-s before the bounded codec and
by 2^s after it, s chosen from the chunk's values and sent as the frame's first byte.
The engines' k stays fixed; the bound becomes |error| <= 2^(s-k) per value.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ... import golden
from ...golden import fast, fast_frames, fast_keep, fast_scale
from ...golden.decompression_block import decode_table
from ...golden.fast_blocks import dec_consts, enc_consts

__all__ = ["CODECS", "WireCodec", "ScaledCodec", "ObjectCodec", "make_codec", "choose_scale",
           "decode_into", "add_error",
           "SCALE_MIN", "SCALE_MAX", "DEFAULT_SHARE"]

CODECS = ("paper", "bounded")


class WireCodec:
    """One codec at one error bound 2^-k."""

    def __init__(self, name: str, k: int):
        if name not in CODECS:
            raise ValueError(f"codec must be one of {CODECS}, got {name!r}")
        self.name, self.k = name, golden.check_k(k)
        fast.fast_pack_groups(np.zeros(1, np.uint32), self.k, codec=name)   # k in range
        # encode(decode(b)) == b for every b encode gives: the bounded codec's decoded
        # value lies in its own band and step (tests/test_scaled_codec.py); the paper's
        # decodes some 8-bit-band values to 0, which then code to no byte.
        self.recodes_to_same_bytes = name == "bounded"

    def __repr__(self):
        return f"<WireCodec {self.name} 2^-{self.k}>"

    def encode(self, values: np.ndarray) -> bytes:
        v = np.ascontiguousarray(values, np.float32)
        return fast.fast_pack_groups(v.view(np.uint32), self.k, codec=self.name)

    def decode(self, buf, n: int) -> np.ndarray:
        """n float32 values from exactly their groups; anything else is a ValueError."""
        bits, consumed, ok = fast.fast_unpack_groups(buf, n, k=self.k, codec=self.name)
        _check_consumed(buf, n, consumed, ok)
        return bits.view(np.float32)

    def roundtrip(self, values: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(values), values.size)

    def decode_into(self, buf, out: np.ndarray, add: bool = False, divide_by: int = 1) -> None:
        """decode(buf, out.size) stored into `out` (contiguous float32; divided by
        `divide_by`: a ring's final values as their mean), or added to it (decoded + out:
        a ring's reduce-scatter order), without a new array: decoded into this thread's
        scratch, then one pass. A ValueError leaves `out` as it was."""
        _store(self._decoded_scratch(buf, out.size), out, add, divide_by)

    def _decoded_scratch(self, buf, n: int) -> np.ndarray:
        """The n values of buf's groups, in this thread's scratch (valid until its next
        decode)."""
        scratch = _scratch(n)
        consumed, ok = fast.fast_unpack_groups_into(buf, n, scratch.view(np.uint32), k=self.k,
                                                    codec=self.name)
        _check_consumed(buf, n, consumed, ok)
        return scratch[:n]

    def encode_recorded(self, values: np.ndarray, loss: np.ndarray | None, keep: bool,
                        divide_by: int = 1):
        """encode, in the same pass loss += values - what decodes and, with keep, values
        = what decodes (divided by `divide_by`; golden.fast_keep); None where values is
        not a contiguous 1-D float32 array (the caller then takes the separate steps)."""
        if not _flat_f32(values):
            return None
        out = np.empty(fast.pack_room(values.size), np.uint8)
        n = fast_keep.encode_keep_into(values, out, self.k, self.name, loss=loss, keep=keep,
                                       divide_by=divide_by)
        return out[:n].tobytes()


def _check_consumed(buf, n: int, consumed: int, ok: bool) -> None:
    """A frame is exactly the groups of its n values; anything else is a ValueError."""
    if not ok:
        raise ValueError(f"groups run out: {n} values need more than {len(buf)} bytes")
    if consumed != len(buf):
        raise ValueError(f"{len(buf) - consumed} bytes left over after {n} values")


_SCRATCH = threading.local()


def _scratch(n: int) -> np.ndarray:
    """This thread's float32 scratch of at least fast.unpack_room(n) values (kept and
    grown: a chunk's decode reuses it)."""
    need = fast.unpack_room(n)
    a = getattr(_SCRATCH, "a", None)
    if a is None or a.size < need:
        a = _SCRATCH.a = np.empty(need, np.float32)
    return a


def _check_out(out) -> None:
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.ndim != 1 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writable contiguous 1-D float32 array")


def _divisor(divide_by, add: bool):
    """divide_by as a float32 divisor, None for 1; refused with add (a sum is not final)."""
    if isinstance(divide_by, bool) or not isinstance(divide_by, int) or divide_by < 1:
        raise ValueError(f"divide_by must be a positive int, got {divide_by!r}")
    if divide_by == 1:
        return None
    if add:
        raise ValueError("decoded values added to a buffer are not divided")
    return np.float32(divide_by)


def _store(values: np.ndarray, out: np.ndarray, add: bool, divide_by: int = 1) -> None:
    div = _divisor(divide_by, add)
    _check_out(out)
    if add:
        np.add(values, out, out=out)
    elif div is not None:
        np.divide(values, div, out=out)
    else:
        out[:] = values


def decode_into(codec, buf, out: np.ndarray, add: bool = False, divide_by: int = 1) -> None:
    """A hop codec's decode of out.size values stored into `out` (divided by `divide_by`)
    or added to it (decoded + out), through its decode_into where it has one."""
    into = getattr(codec, "decode_into", None)
    if into is not None:
        into(buf, out, add, divide_by)
    else:
        _store(np.asarray(codec.decode(buf, out.size), np.float32), out, add, divide_by)


def _flat_f32(values) -> bool:
    return isinstance(values, np.ndarray) and values.dtype == np.float32 and values.ndim == 1 \
        and values.flags.c_contiguous and values.flags.writeable


# s fits one byte (s - SCALE_MIN). SCALE_MIN: the decoded values times 2^s keep every bit
# (their lowest bit, 2^(s-24) at worst, stays >= 2^-149, the smallest subnormal).
# SCALE_MAX: no finite float32 (< 2^128) reaches 1 at 2^-129, so no value of a chunk
# needs the 32-bit band and a frame is never longer than the receiver's limit.
SCALE_MIN, SCALE_MAX = -126, 129
# Coded with bits (not in the 0-bit band): at least this share of each chunk's values.
DEFAULT_SHARE = 0.25


def choose_scale(values: np.ndarray, k: int, share: float = DEFAULT_SHARE) -> int:
    """s for one chunk: the largest s at which at least `share` of the finite values
    (one at least) reach the 8-bit band, |v| 2^-s >= 2^-k; i.e. the octave of the
    ceil(share n)-th largest |v|, plus k. Then raised so that the largest finite value
    stays far from overflow once scaled up (e_max - 127 - 120), kept within
    SCALE_MIN..SCALE_MAX; SCALE_MIN where that octave is the subnormals'; 0 for a chunk
    with no finite value.

    Only octaves of |v| are counted, and the bounded codec keeps every value at 2^-k or
    above in its octave (its steps are powers of two); so the decoded chunk gives the
    same s again and re-coding it changes nothing (a ring forwards decoded values).
    Computed in one compiled pass, a histogram of the 8-bit exponents
    (golden/fast_scale.py; the NumPy definition it equals is in tests/test_fast_scale.py)."""
    bits = np.ascontiguousarray(values, np.float32).reshape(-1).view(np.uint32)
    return int(fast_scale.choose_scale_bits(bits, int(k), _check_share(share),
                                            SCALE_MIN, SCALE_MAX))


def _check_share(share) -> float:
    share = float(share)
    if math.isnan(share):
        raise ValueError("share must be a number, got NaN")
    return share


def _times_2_to(v: np.ndarray, s: int, out: np.ndarray | None = None) -> np.ndarray:
    """v 2^s in float32, rounded once (exact where the result is normal): the product
    with the power of two where it is a normal float32, as np.ldexp beyond; compiled
    (golden/fast_scale.py), the same bits as NumPy's. Into `out` (C-contiguous float32
    of v's size; v itself allowed) if given, else a new array."""
    v = np.ascontiguousarray(v, np.float32)
    if out is None:
        out = np.empty_like(v)
    elif out.dtype != np.float32 or not out.flags.c_contiguous or out.size != v.size:
        raise ValueError("out must be a C-contiguous float32 array of the values' size")
    fast_scale.times_2_to_into(v.reshape(-1), int(s), out.reshape(-1))
    return out


class ScaledCodec:
    """The bounded codec at 2^-k on values scaled by 2^-s per chunk: a frame is one byte,
    s - SCALE_MIN, then the groups of the scaled values. Scaling by a power of two is
    exact in float32 both ways within SCALE_MIN..SCALE_MAX (tested), so the error is
    the codec's at 2^-k, times 2^s: |error| <= 2^(s-k). The paper's codec cannot be
    scaled: it decodes its 8-bit band below 2^-7 to 0, so a decoded chunk would choose
    another s and a forwarded chunk would change."""

    def __init__(self, k: int, share: float = DEFAULT_SHARE):
        if isinstance(share, bool) or not isinstance(share, (int, float)) \
                or not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        self.inner = WireCodec("bounded", k)
        self.k, self.share = self.inner.k, float(share)
        self.recodes_to_same_bytes = True   # the decoded chunk chooses the same s again
        self.name = f"bounded-scaled-{self.share:g}"

    def __repr__(self):
        return f"<ScaledCodec bounded 2^(s-{self.k}), share {self.share:g}>"

    def scale(self, values: np.ndarray) -> int:
        return choose_scale(values, self.k, self.share)

    def scale_down(self, values: np.ndarray, out: np.ndarray | None = None) -> tuple[int, np.ndarray]:
        """(s, values 2^-s): what a float32 wire carries for this chunk (a new array, or
        `out`: C-contiguous float32 of the values' size)."""
        v = np.ascontiguousarray(values, np.float32)
        if out is None:
            out = np.empty_like(v)
        elif out.dtype != np.float32 or not out.flags.c_contiguous or out.size != v.size:
            raise ValueError("out must be a C-contiguous float32 array of the values' size")
        # One call: the octave histogram, then the product by 2^-s (still in cache).
        s = fast_scale.scale_down_into(v.reshape(-1), self.k, self.share, SCALE_MIN, SCALE_MAX,
                                       out.reshape(-1))
        return int(s), out

    @staticmethod
    def scale_up(values: np.ndarray, s: int) -> np.ndarray:
        """The received (decoded) values times 2^s: exact, as the software wire's decode."""
        return _times_2_to(values, s)

    def encode(self, values: np.ndarray) -> bytes:
        s, scaled = self.scale_down(values)
        return bytes([s - SCALE_MIN]) + self.inner.encode(scaled)

    def decode(self, buf, n: int) -> np.ndarray:
        if len(buf) < 1:
            raise ValueError(f"a scaled frame of {n} values has no scale byte")
        s = buf[0] + SCALE_MIN            # every byte is a scale of the range
        y = self.inner.decode(memoryview(buf)[1:], n)
        return _times_2_to(y, s, out=y if y.flags.writeable else None)   # a fresh array

    def roundtrip(self, values: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(values), values.size)

    def decode_into(self, buf, out: np.ndarray, add: bool = False, divide_by: int = 1) -> None:
        """decode(buf, out.size) stored into `out` (divided by `divide_by`) or added to
        it (decoded + out), the product by 2^s and the sum or quotient in one pass
        (WireCodec.decode_into)."""
        if len(buf) < 1:
            raise ValueError(f"a scaled frame of {out.size} values has no scale byte")
        s = buf[0] + SCALE_MIN
        div = _divisor(divide_by, add)
        y = self.inner._decoded_scratch(memoryview(buf)[1:], out.size)
        _check_out(out)
        if div is not None:
            fast_scale.times_2_to_div_into(y, s, div, out)
        else:
            (fast_scale.times_2_to_add_into if add else fast_scale.times_2_to_into)(y, s, out)

    def encode_recorded(self, values: np.ndarray, loss: np.ndarray | None, keep: bool,
                        divide_by: int = 1):
        """WireCodec.encode_recorded on the scaled values: the scale chosen, then one pass
        (scale, pack, decode, times 2^s, compare, keep); None where values is not a
        contiguous 1-D float32 array or s lies outside golden.fast_keep.SCALE_LIMITS
        (2^-s or 2^s not a normal float32: the separate steps handle it)."""
        if not _flat_f32(values):
            return None
        s = self.scale(values)
        lo, hi = fast_keep.SCALE_LIMITS
        if not lo <= s <= hi:
            return None
        out = np.empty(1 + fast.pack_room(values.size), np.uint8)
        out[0] = s - SCALE_MIN
        n = fast_keep.encode_keep_into(values, out[1:], self.k, "bounded", scale=s, loss=loss,
                                       keep=keep, divide_by=divide_by)
        return out[:1 + n].tobytes()

    def encode_frames(self, values: np.ndarray, piece: int, loss: np.ndarray | None = None,
                      keep: bool = False, divide_by: int = 1) -> np.ndarray:
        """The frames of values' pieces (of `piece` values, the last one shorter) as the
        software wire carries them, each a 4-byte big-endian length then the frame (as
        encode gives it), in one uint8 array; with `loss` (float32 of the values' size)
        and `keep`, encode_recorded's loss and kept values. One compiled call a chunk
        (golden/fast_frames.py); a piece whose scale lies outside
        golden.fast_keep.SCALE_LIMITS takes the separate steps."""
        if not _flat_f32(values):
            raise ValueError("values must be a writable contiguous 1-D float32 array")
        if loss is not None and (loss.dtype != np.float32 or loss.shape != values.shape
                                 or not loss.flags.c_contiguous):
            raise ValueError("loss must be a contiguous float32 array of the values' size")
        div = np.float32(_divisor(divide_by, False) or 1)
        n, piece = values.size, int(piece)
        if piece < 1:
            raise ValueError(f"piece must be a positive number of values, got {piece}")
        full, rest = divmod(n, piece)
        room = full * _frame_room(piece) + (_frame_room(rest) if rest else 0)
        out = np.empty(room, np.uint8)
        consts = (*enc_consts(self.k, "bounded"), *dec_consts(self.k, "bounded"))
        no_loss = _NO_LOSS if loss is None else loss
        i = pos = 0
        while True:
            i, pos = fast_frames.encode_scaled_frames(
                values, i, piece, self.k, self.share, SCALE_MIN, SCALE_MAX, *consts, out, pos,
                no_loss, bool(keep), div)
            if i >= n:
                return out[:pos]
            # a piece whose 2^-s or 2^s is not a normal float32: the separate steps
            p = values[i:i + piece]
            body = self.encode(p)
            back = self.decode(body, p.size)
            if loss is not None:
                add_error(loss[i:i + p.size], p, back)
            if keep:
                np.divide(back, div, out=p)
            out[pos:pos + fast_frames.HEADER] = np.frombuffer(
                len(body).to_bytes(fast_frames.HEADER, "big"), np.uint8)
            out[pos + fast_frames.HEADER:pos + fast_frames.HEADER + len(body)] = \
                np.frombuffer(body, np.uint8)
            i, pos = i + p.size, pos + fast_frames.HEADER + len(body)

    def decode_frames(self, wire, out: np.ndarray, piece: int, add: bool = False,
                      divide_by: int = 1) -> None:
        """The frames `wire` (encode_frames' layout, a uint8 array) of out.size values in
        pieces of `piece`, decoded into `out` as decode_into does each piece, in one
        compiled call; a frame that does not decode is a ValueError (the pieces before
        it decoded, as one decode_into a piece would leave them)."""
        div = _divisor(divide_by, add)
        _check_out(out)
        scratch = _scratch(min(int(piece), out.size)).view(np.uint32)
        status, j = fast_frames.decode_scaled_frames(
            wire, int(piece), out, scratch, decode_table(self.k, "bounded"), *dec_consts(self.k, "bounded"),
            SCALE_MIN, 1 if add else 2 if div is not None else 0,
            np.float32(1) if div is None else div)
        if status:
            raise ValueError(f"frame {j} of the chunk: {fast_frames.DECODE_ERRORS[status]}")


_NO_LOSS = np.zeros(0, np.float32)


def _frame_room(n: int) -> int:
    """Bytes encode_frames may write for a piece of n values: its length, its scale byte,
    the largest groups and the pack's spare bytes."""
    return fast_frames.HEADER + 1 + fast.pack_room(n)


def add_error(loss: np.ndarray, values: np.ndarray, delivered: np.ndarray) -> None:
    """loss += values - delivered, 0 where that is not finite: inf and NaN arrive as they
    are, nothing to keep (and a NaN kept would poison every later step of that value).
    Checked first: the check costs a third of the replacement (measured), and is all a
    finite chunk needs. (memory.LossRecorder.record and encode_frames' long way.)"""
    with np.errstate(invalid="ignore"):
        err = values - delivered
    if not np.isfinite(err).all():
        np.nan_to_num(err, copy=False, nan=0.0, posinf=0.0, neginf=0.0)
    loss += err


class ObjectCodec:
    """A drivers.collectives.compressors value codec (Float32Codec, TruncCodec, GoldenCodec, EBCodec)
    as a ring hop's codec: the bytes its encode() gives, as the simulated ring counts."""

    def __init__(self, codec):
        self.inner, self.name = codec, getattr(codec, "name", type(codec).__name__)

    def __repr__(self):
        return f"<ObjectCodec {self.name}>"

    def encode(self, values):
        return self.inner.encode(np.ascontiguousarray(values, np.float32))

    def decode(self, buf, n):
        return np.asarray(self.inner.decode(bytes(buf), n), np.float32)

    def roundtrip(self, values):
        return self.decode(self.encode(values), values.size)


def make_codec(codec, k: int):
    """A codec by name ("paper", "bounded") at 2^-k, or a drivers.collectives.compressors codec object."""
    if isinstance(codec, str):
        return WireCodec(codec, k)
    if isinstance(codec, (WireCodec, ScaledCodec)) or getattr(codec, "wire_codec", False):
        return codec                     # already a hop's codec (bytes-like frames)
    if hasattr(codec, "encode") and hasattr(codec, "decode"):
        return ObjectCodec(codec)
    raise ValueError(f"codec must be one of {CODECS} or a codec object, got {codec!r}")
