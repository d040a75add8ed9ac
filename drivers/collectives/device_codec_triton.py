"""DeviceCodec's encode and decode as Triton kernels (CUDA; the Triton interpreter runs
them on CPU tensors for the tests). The same bytes and index as the torch operations of
device_codec.py, bit for bit; those stay the reference and the fallback.

Encode takes two passes over the values, as a group's place depends on every group
before it: `_enc_lengths` sums the group lengths of each tile of TILE_G groups, a cumsum
over the tiles gives each tile's first byte, and `_enc_write` recomputes the tags and
fields, places each group by a prefix sum inside its tile and stores its tag word, its
fields' bytes and, for every block-th group, the index entry. Every output byte is
written exactly once, so the output needs no zero fill; the only sync is reading the
total length, which the output's size needs.

Decode gives each lane one index block: the lanes of a program walk their blocks' groups
in step (the tag word gives the next group's place), each step storing 8 values per lane.
Every group must lie inside the bytes, block 0 must start at 0 and every block must end
where the next one starts and the last where the bytes end: anything else (damaged bytes,
a wrong index, a wrong count) sets the block's error flag, read with one sync at the end.

Roundtrip (what a receiver decodes, for the owner of a block, who keeps what it sends)
is one elementwise kernel, the encoder's field and the decoder's value arithmetic
(`_field`, `_value`, shared with the two kernels above) back to back: no bytes, no sync.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["encode", "decode", "roundtrip"]

# Chosen on an H200 at 256M floats (bounded 2^-10), the kernels alone: encode 640 GB/s
# at 256 groups and 4 warps (405-505 at 1024); decode 950-1000 GB/s at 32 lanes in one
# warp (410-840 with more lanes or warps).
TILE_G = 256       # groups per encode program (2048 values)
ENC_WARPS = 4
LANES = 32         # index blocks per decode program (one lane each)
DEC_WARPS = 1
RT_VALUES = 1024   # values per roundtrip program


@triton.jit
def _tags(bits, T, MLIM):
    """A value's tag (0 zero, 1 8-bit, 2 16-bit, 3 raw) from its exponent."""
    e = (bits >> 23) & 0xFF
    return tl.where(e >= 127, 3, tl.where(e < T, 0, tl.where(e >= MLIM, 2, 1)))


@triton.jit
def _field(bits, tag, MLIM, W8):
    """Algorithm 2's field (encode_luts' rules): the significand with its hidden one,
    shifted to the band's width, and the sign above it; raw values keep all 32 bits."""
    e = (bits >> 23) & 0xFF
    b16 = e >= MLIM
    w = tl.where(b16, 15, W8)
    sh = tl.minimum(tl.maximum(150 - e - w, 0), 31)
    q = ((bits & 0x7FFFFF) | 0x800000) >> sh
    fv = q | (((bits >> 31) & 1) << tl.where(b16, 15, 7))
    return tl.where(tag == 3, bits, fv)


@triton.jit
def _value(tag, v, MUL, ADD, S8, S16):
    """The decoded bits of a field v (its bytes as read; Algorithm 3, decode_table's
    values): {s, q} is (-1)^s (q mul + add) 2^-(e8|e16), exact in float32 (a product by
    a power of two); raw values move as integers, zero tags are +0.0."""
    b16 = tag == 2
    f = tl.where(b16, v & 0xFFFF, v & 0xFF)
    sb = tl.where(b16, 15, 7)
    num = ((f & ((1 << sb) - 1)) * MUL + ADD).to(tl.float32)
    mag = num * tl.where(b16, S16, S8)
    sv = mag.to(tl.int32, bitcast=True) | (((f >> sb) & 1) << 31)
    sv = tl.where(num == 0, 0, sv)                 # paper: q = 0 is +0.0
    return tl.where(tag == 3, v, tl.where(tag == 0, 0, sv))


@triton.jit
def _roundtrip(x_ptr, y_ptr, n, T, MLIM, W8, MUL, ADD, S8, S16, BV: tl.constexpr):
    """What a receiver decodes, value by value, without the bytes: one pass, read and
    write, where encode then decode is three passes and two syncs."""
    i = tl.program_id(0).to(tl.int64) * BV + tl.arange(0, BV)
    bits = tl.load(x_ptr + i, mask=i < n, other=0)
    tag = _tags(bits, T, MLIM)
    tl.store(y_ptr + i, _value(tag, _field(bits, tag, MLIM, W8), MUL, ADD, S8, S16), mask=i < n)


@triton.jit
def _enc_lengths(x_ptr, tile_len_ptr, n, G, T, MLIM, TG: tl.constexpr):
    pid = tl.program_id(0)
    g = pid.to(tl.int64) * TG + tl.arange(0, TG)
    i = g[:, None] * 8 + tl.arange(0, 8)[None, :]
    bits = tl.load(x_ptr + i, mask=i < n, other=0)   # +0.0 pads the last group: no bytes
    tag = _tags(bits, T, MLIM)
    width = tag + (tag == 3).to(tl.int32)
    glen = tl.where(g < G, 2 + tl.sum(width, 1), 0)
    tl.store(tile_len_ptr + pid, tl.sum(glen, 0))


@triton.jit
def _enc_write(x_ptr, tile_start_ptr, out_ptr, index_ptr, n, G, T, MLIM, W8,
               BLOCK: tl.constexpr, TG: tl.constexpr):
    pid = tl.program_id(0)
    g = pid.to(tl.int64) * TG + tl.arange(0, TG)
    j = tl.arange(0, 8)
    i = g[:, None] * 8 + j[None, :]
    bits = tl.load(x_ptr + i, mask=i < n, other=0)
    tag = _tags(bits, T, MLIM)
    width = tag + (tag == 3).to(tl.int32)
    field = _field(bits, tag, MLIM, W8)
    gmask = g < G
    glen = tl.where(gmask, 2 + tl.sum(width, 1), 0)
    gstart = tl.load(tile_start_ptr + pid) + tl.cumsum(glen, 0) - glen       # int64
    tw = tl.sum(tag << (2 * j)[None, :], 1)
    tl.store(out_ptr + gstart, (tw & 0xFF).to(tl.uint8), mask=gmask)
    tl.store(out_ptr + gstart + 1, ((tw >> 8) & 0xFF).to(tl.uint8), mask=gmask)
    foff = gstart[:, None] + 2 + tl.cumsum(width, 1) - width
    for b in tl.static_range(4):
        tl.store(out_ptr + foff + b, ((field >> (8 * b)) & 0xFF).to(tl.uint8), mask=width > b)
    tl.store(index_ptr + g // BLOCK, gstart.to(tl.int32), mask=gmask & (g % BLOCK == 0))


@triton.jit
def _dec_blocks(data_ptr, index_ptr, out_ptr, err_ptr, size, n, G, NB,
                MUL, ADD, S8, S16, BLOCK: tl.constexpr, LN: tl.constexpr):
    pid = tl.program_id(0)
    b = pid.to(tl.int64) * LN + tl.arange(0, LN)
    bmask = b < NB
    pos = tl.load(index_ptr + b, mask=bmask, other=0)                      # int64
    want = tl.load(index_ptr + b + 1, mask=b + 1 < NB, other=size)
    want = tl.where(b + 1 < NB, want, size)
    ok = (pos >= 0) & (pos < size) & ((b != 0) | (pos == 0))
    ng = tl.minimum(G - b * BLOCK, BLOCK)                                  # groups here
    j = tl.arange(0, 8)
    for s in range(0, BLOCK):
        live = bmask & (s < ng) & ok
        lo = tl.load(data_ptr + pos, mask=live & (pos < size), other=0).to(tl.int32)
        hi = tl.load(data_ptr + pos + 1, mask=live & (pos + 1 < size), other=0).to(tl.int32)
        tag = ((lo | (hi << 8))[:, None] >> (2 * j)[None, :]) & 3
        width = tag + (tag == 3).to(tl.int32)
        end = pos + 2 + tl.sum(width, 1)
        ok = ok & ((live == 0) | (end <= size))          # the whole group inside the bytes
        inside = live & ok
        foff = pos[:, None] + 2 + tl.cumsum(width, 1) - width
        v = tl.zeros((LN, 8), tl.int32)
        for k in tl.static_range(4):
            byte = tl.load(data_ptr + foff + k, mask=inside[:, None] & (width > k), other=0)
            v = v | (byte.to(tl.int32) << (8 * k))
        val = _value(tag, v, MUL, ADD, S8, S16)
        o = (b * BLOCK + s)[:, None] * 8 + j[None, :]
        tl.store(out_ptr + o, val, mask=inside[:, None] & (o < n))
        pos = tl.where(live, end, pos)
    ok = ok & (pos == want)
    tl.store(err_ptr + b, tl.where(ok, 0, 1).to(tl.int8), mask=bmask)


def encode(codec, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(groups uint8, index int32) of a flat contiguous float32 tensor with n > 0."""
    n = x.numel()
    dev = x.device
    g = -(-n // 8)
    bits = x.view(torch.int32)
    tiles = -(-g // TILE_G)
    tile_len = torch.empty(tiles, dtype=torch.int32, device=dev)
    _enc_lengths[(tiles,)](bits, tile_len, n, g, codec.t, codec.mlim, TG=TILE_G, num_warps=ENC_WARPS)
    ends = torch.cumsum(tile_len, 0, dtype=torch.int64)
    total = int(ends[-1])                                  # the output's size: one sync
    out = torch.empty(total, dtype=torch.uint8, device=dev)
    index = torch.empty(-(-g // codec.block), dtype=torch.int32, device=dev)
    _enc_write[(tiles,)](bits, ends - tile_len, out, index, n, g, codec.t, codec.mlim,
                         codec.w8, BLOCK=codec.block, TG=TILE_G, num_warps=ENC_WARPS)
    return out, index


def decode(codec, data: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
    """n float32 values; data 1-D uint8, index with the right number of entries, n > 0."""
    dev = data.device
    g = -(-n // 8)
    nb = index.numel()
    size = data.numel()
    data = data.contiguous()
    idx = index.to(device=dev, dtype=torch.int64).contiguous()
    out = torch.empty(n, dtype=torch.int32, device=dev)
    err = torch.empty(nb, dtype=torch.int8, device=dev)
    if size:
        _dec_blocks[(-(-nb // LANES),)](data, idx, out, err, size, n, g, nb, codec.mul,
                                         codec.add, codec.s8, codec.s16, BLOCK=codec.block,
                                         LN=LANES, num_warps=DEC_WARPS)
    if not size or bool(err.any()):                        # the one sync of the check
        raise ValueError(f"{size} bytes and an index of {nb} entries are not the groups of "
                         f"{n} values (damaged bytes, a wrong index or a wrong count)")
    return out.view(torch.float32)


def roundtrip(codec, x: torch.Tensor) -> torch.Tensor:
    """decode(encode(x)) of a flat contiguous float32 tensor, in one elementwise pass."""
    n = x.numel()
    out = torch.empty(n, dtype=torch.int32, device=x.device)
    if n:
        _roundtrip[(-(-n // RT_VALUES),)](x.view(torch.int32), out, n, codec.t, codec.mlim,
                                          codec.w8, codec.mul, codec.add, codec.s8, codec.s16,
                                          BV=RT_VALUES)
    return out.view(torch.float32)
