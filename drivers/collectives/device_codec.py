"""The value codecs ("paper", "bounded") as torch operations, on whatever device the
values live: CUDA buckets are coded on their GPU and only the compressed bytes leave it.

The bytes are exactly golden's group stream (golden.pack_groups: a 2-byte tag word, then
the 0/1/2/4-byte fields of 8 values; no shim), so a CPU rank and a GPU rank, the numba
codec and this one, the NIC and the ring agree bit for bit (tests/test_device_codec.py).

Encoding is data-parallel: every value's tag, field and width come from arithmetic on
its sign and exponent (the rules of golden.compression_block.encode_luts), each group's
length from its widths, and every byte's place from prefix sums. Decoding is not: a
group's place depends on the lengths of all groups before it. So beside the bytes goes an
index (the ring's own framing, not the NIC's wire format): the byte offset of every
`block`-th group as int32, 4 bytes per 8 * block values (0.2% of the float32 bytes at the
default block of 64 groups). The decoder finds the groups of each block in log2(block)
steps of pointer doubling over the stream (from every byte, where a group starting there
would end), checks that each block ends where the next one starts and the last where the
bytes end (a wrong index or damaged bytes are a ValueError, never silent), then reads
every field at once.

All arithmetic is int32/int64 and exact float32 products by powers of two, so CPU and
CUDA give the same bits; raw (tag 11) values are moved as integers, NaN payloads intact.

On CUDA, where triton imports, encode and decode run as Triton kernels instead
(device_codec_triton.py: the same bytes and index, with the same checks); on the CPU
they run as golden.fast's compiled kernels (the same bytes; the index recorded by the
packer as it goes, and decoded with golden.fast_index, which walks several index blocks
at once and checks every block's end against the index: hundreds of times the
torch operations' speed on the CPU, and the GIL released while they run, so a ring can
code one chunk while its transport moves another). A chunk of at least 2 * PIECE values
is cut at index entries into one piece per thread (`threads`, default every core) and
the pieces are coded at once on a shared pool: each encodes into its own room (then the
bytes are joined), each decodes, and checks, the groups between two index entries into
its slice of the output; the bytes and the checks are those of one piece. These torch operations stay the
reference and the fallback (impl="torch" forces them).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import threading

import numpy as np
import torch

from ... import golden
from ...golden import fast, fast_index

__all__ = ["DeviceCodec", "DEFAULT_BLOCK", "IMPLS", "index_bytes", "triton_available", "PIECE"]

DEFAULT_BLOCK = 64       # groups per index entry (a power of two)
PIECE = 1 << 18          # values: below 2 pieces a CPU chunk is coded on one thread
_WIDTH = (0, 1, 2, 4)    # bytes per tag
IMPLS = ("auto", "torch", "triton", "fast")
# the paths, as path() names them
TORCH_OPS, TRITON, FAST = "torch ops", "triton", "golden.fast"
_triton_module = None


def triton_available() -> bool:
    """Whether the Triton kernels import (triton is optional: not a dependency)."""
    return _triton() is not None


def _triton():
    global _triton_module
    if _triton_module is None:
        try:
            from . import device_codec_triton
            _triton_module = device_codec_triton
        except Exception:      # absent or broken: the torch operations serve
            _triton_module = False
    return _triton_module or None


def index_bytes(n: int, block: int = DEFAULT_BLOCK) -> int:
    """Bytes of the index beside the groups of n values."""
    return 4 * -(-(-(-n // 8)) // block)


class DeviceCodec:
    """One codec ("paper" or "bounded") at error bound 2^-k, on torch tensors."""

    def __init__(self, name: str, k: int, block: int = DEFAULT_BLOCK, impl: str = "auto",
                 threads: int | None = None, piece: int = PIECE):
        """impl: "auto" (Triton kernels for CUDA tensors where triton imports,
        golden.fast for CPU tensors, torch operations elsewhere), "torch" (always torch
        operations), "fast" (golden.fast: CPU tensors only) or "triton" (always the
        kernels: on CPU tensors only under the Triton interpreter, TRITON_INTERPRET=1).
        threads, piece: golden.fast's pieces (at most `threads`, default the cores, of
        at least `piece` values each) coded at once."""
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be a positive count, got {threads!r}")
        if not isinstance(piece, int) or piece < 1:
            raise ValueError(f"piece must be a positive number of values, got {piece!r}")
        self.threads, self.piece = threads or os.cpu_count() or 1, piece
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if impl == "triton" and not triton_available():
            raise ValueError("impl='triton' needs the triton package")
        self.impl = impl
        if name not in ("paper", "bounded"):
            raise ValueError(f"codec must be 'paper' or 'bounded', got {name!r}")
        if not isinstance(block, int) or block < 1 or block & (block - 1):
            raise ValueError(f"block must be a power of two, got {block!r}")
        self.name, self.k, self.block = name, golden.check_k(k, name), block
        self.t, self.mlim = golden.band_limits(self.k)
        self.w8 = 7 + (self.k // 2 if name == "bounded" else 0)
        # decode: a field {s, q} is (-1)^s (q mul + add) 2^-(e8 | e16)
        self.mul, self.add = (1, 0) if name == "paper" else (2, 1)
        self.s8 = 2.0 ** -(7 if name == "paper" else self.k // 2 + 8)
        self.s16 = 2.0 ** -(15 if name == "paper" else 16)

    def __repr__(self):
        return f"<DeviceCodec {self.name} 2^-{self.k}>"

    def path(self, device) -> str:
        """Which code encode and decode run for tensors on `device`: "triton",
        "golden.fast" or "torch ops"."""
        kind = torch.device(device).type
        if self.impl == "triton" or (self.impl == "auto" and kind == "cuda" and triton_available()):
            return TRITON
        if self.impl == "fast" or (self.impl == "auto" and kind == "cpu"):
            if kind != "cpu":
                raise ValueError(f"impl='fast' codes CPU tensors only, not {kind} ones")
            return FAST
        return TORCH_OPS

    # ------------------------------------------------------------------ encode

    def _fields(self, bits):
        """(tag, field) int32 of int32 bit patterns: Algorithm 2 (encode_luts' rules)."""
        e = (bits >> 23) & 0xFF
        sign = (bits >> 31) & 1
        b16 = e >= self.mlim
        w = torch.where(b16, 15, self.w8)
        sh = (150 - e - w).clamp(0, 31)
        q = ((bits & 0x7FFFFF) | 0x800000) >> sh
        fv = q | (sign << torch.where(b16, 15, 7))
        tag = torch.where(e >= 127, 3, torch.where(e < self.t, 0, torch.where(b16, 2, 1)))
        field = torch.where(tag == 3, bits, torch.where(tag == 0, 0, fv))
        return tag.to(torch.int32), field.to(torch.int32)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(groups uint8, index int32) of float32 values, on x's device."""
        x = _flat_f32(x)
        n = x.numel()
        dev = x.device
        if n == 0:
            return torch.zeros(0, dtype=torch.uint8, device=dev), torch.zeros(0, dtype=torch.int32, device=dev)
        path = self.path(dev)
        if path == TRITON:
            return _triton().encode(self, x)
        if path == FAST:
            return self._fast_encode(x)
        g = -(-n // 8)
        bits = torch.zeros(8 * g, dtype=torch.int32, device=dev)
        bits[:n] = x.view(torch.int32)      # +0.0 pads the last group: it codes to nothing
        tag, field = self._fields(bits)
        tag, field = tag.view(g, 8), field.view(g, 8)
        width = tag + (tag == 3).to(torch.int32)          # 0, 1, 2, 4
        tw = (tag << torch.arange(0, 16, 2, device=dev, dtype=torch.int32)).sum(1)
        glen = 2 + width.sum(1)
        gend = torch.cumsum(glen, 0)
        total = int(gend[-1])
        gstart = gend - glen
        fstart = gstart[:, None] + 2 + torch.cumsum(width, 1) - width
        out = torch.zeros(total + 1, dtype=torch.uint8, device=dev)   # [total]: discarded
        out[gstart] = (tw & 0xFF).to(torch.uint8)
        out[gstart + 1] = (tw >> 8).to(torch.uint8)
        b = torch.arange(4, device=dev, dtype=torch.int64)
        pos = fstart[..., None] + b                                   # (g, 8, 4)
        pos = torch.where(b < width[..., None], pos, total)
        val = ((field[..., None] >> (8 * b).to(torch.int32)) & 0xFF).to(torch.uint8)
        out.scatter_(0, pos.reshape(-1), val.reshape(-1))
        # index_select: a fresh tensor (a 1-entry slice keeps its stride, which view() refuses)
        index = gstart.index_select(0, torch.arange(0, g, self.block, device=dev)).to(torch.int32)
        return out[:total], index

    def roundtrip(self, x: torch.Tensor) -> torch.Tensor:
        """What a receiver decodes from encode(x), computed without the bytes."""
        x = _flat_f32(x)
        path = self.path(x.device)
        if path == TRITON:
            return _triton().roundtrip(self, x)
        if x.numel() and path == FAST:
            return self.decode(*self._fast_encode(x), x.numel())
        tag, field = self._fields(x.view(torch.int32))
        return self._values(tag, field).view(torch.float32)

    # ------------------------------------------------------------------ decode

    def _values(self, tag, v):
        """int32 bit patterns of the decoded values of (tag, field) (Algorithm 3 and
        decode_table's values)."""
        b16 = tag == 2
        f = torch.where(b16, v & 0xFFFF, v & 0xFF)
        sb = torch.where(b16, 15, 7)
        q = f & ((1 << sb) - 1)
        num = (q * self.mul + self.add).to(torch.float32)
        mag = num * torch.where(b16, self.s16, self.s8).to(torch.float32)
        bits = mag.view(torch.int32) | (((f >> sb) & 1) << 31)
        bits = torch.where(num == 0, 0, bits)             # paper: q = 0 is +0.0
        bits = bits - ((bits >> 31) << 32)                 # the sign bit as int32's, no overflow
        return torch.where(tag == 3, v, torch.where(tag == 0, 0, bits)).to(torch.int32)

    def decode(self, data: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
        """n float32 values from exactly their groups and the index encode gave; a
        mismatch (too few or too many bytes, a wrong index) is a ValueError."""
        dev = data.device
        if n < 0:
            raise ValueError(f"value count must be >= 0, got {n}")
        if data.dtype != torch.uint8 or data.dim() != 1:
            raise ValueError("groups must be a 1-D uint8 tensor")
        g = -(-n // 8)
        nb = -(-g // self.block)
        if index.numel() != nb:
            raise ValueError(f"the index has {index.numel()} entries, {nb} expected for {n} values")
        if n == 0:
            if data.numel():
                raise ValueError(f"{data.numel()} bytes left over after 0 values")
            return torch.zeros(0, dtype=torch.float32, device=dev)
        path = self.path(dev)
        if path == TRITON:
            return _triton().decode(self, data, index, n)
        if path == FAST:
            return self._fast_decode(data, index, n)
        size = data.numel()
        d = torch.zeros(size + 8, dtype=torch.int32, device=dev)
        d[:size] = data
        # From every byte p: where a group starting at p would end (size: past the end).
        tw_all = d[:size] | (d[1:size + 1] << 8)
        nxt = torch.full((size + 1,), size, dtype=torch.int64, device=dev)
        reach = torch.arange(size, device=dev) + 2 + _width_sum(tw_all)   # unclamped
        nxt[:size] = torch.clamp(reach, max=size)
        starts = index.to(device=dev, dtype=torch.int64).clamp(0, size)[:, None]
        jump = nxt
        while starts.shape[1] < self.block:     # pointer doubling: 1, 2, 4, ... groups
            starts = torch.cat([starts, jump[starts]], 1)
            if starts.shape[1] < self.block:
                jump = jump[jump]
        ends = nxt[starts[:, -1]]                # where each block's last group ends
        gs = starts.reshape(-1)[:g]
        want = torch.cat([index[1:].to(device=dev, dtype=torch.int64),
                          torch.tensor([size], device=dev)])
        ok_blocks = bool((ends[:-1] == want[:-1]).all()) if nb > 1 else True
        last_end = int(reach[gs[-1]]) if int(gs[-1]) < size else -1
        if int(index[0]) != 0 or not ok_blocks or last_end != size or not bool((gs < size).all()):
            raise ValueError(f"{size} bytes and an index of {nb} entries are not the groups of "
                             f"{n} values (damaged bytes, a wrong index or a wrong count)")
        tw = d[gs] | (d[gs + 1] << 8)
        tag = (tw[:, None] >> torch.arange(0, 16, 2, device=dev, dtype=torch.int32)) & 3
        width = tag + (tag == 3).to(torch.int32)
        off = gs[:, None] + 2 + torch.cumsum(width, 1) - width
        v = (d[off] | (d[off + 1] << 8) | (d[off + 2] << 16)).to(torch.int64) \
            | (d[off + 3].to(torch.int64) << 24)
        v = torch.where(v >= 1 << 31, v - (1 << 32), v).to(torch.int32)   # no int32 overflow
        return self._values(tag.reshape(-1), v.reshape(-1))[:n].view(torch.float32)


    # ------------------------------------------------------------------ CPU: golden.fast

    def _cuts(self, n):
        """[(first value, end)] of the pieces of n values: whole index blocks each but the
        last, one piece where n is below two pieces or one thread codes."""
        per_block = 8 * self.block
        count = min(self.threads, n // self.piece)
        if count < 2:
            return [(0, n)]
        step = -(-(-(-n // count)) // per_block) * per_block
        return [(a, min(a + step, n)) for a in range(0, n, step)]

    def _fast_encode(self, x):
        bits = x.detach().view(torch.int32).numpy().view(np.uint32)
        cuts = self._cuts(bits.size)

        def piece(ab):
            a, b = ab
            room = np.empty(fast.pack_room(b - a), np.uint8)
            index = np.empty(index_bytes(b - a, self.block) // 4, np.int64)
            end = fast.fast_pack_groups_into(bits[a:b], room, self.k, self.name, index, self.block)
            return room[:end], index

        if len(cuts) == 1:
            data, index = piece(cuts[0])
            return torch.from_numpy(data), torch.from_numpy(index.astype(np.int32))
        parts = list(_pool(self.threads).map(piece, cuts))
        starts = np.cumsum([0] + [p[0].size for p in parts])
        data = np.empty(int(starts[-1]), np.uint8)
        list(_pool(self.threads).map(lambda i: np.copyto(data[starts[i]:starts[i + 1]], parts[i][0]),
                                     range(len(parts))))
        index = np.concatenate([p[1] + s for p, s in zip(parts, starts)]).astype(np.int32)
        return torch.from_numpy(data), torch.from_numpy(index)

    def _fast_decode(self, data, index, n):
        buf = data.contiguous().numpy()
        idx = index.cpu().numpy().astype(np.int64)
        cuts = self._cuts(n)
        per_block = 8 * self.block
        out = np.empty(fast.unpack_room(n), np.uint32)
        # piece i: index entries a / per_block .. b / per_block, bytes lo..hi
        bounds = [int(idx[a // per_block]) if i else 0 for i, (a, _) in enumerate(cuts)] + [buf.size]

        def piece(i):
            (a, b), lo, hi = cuts[i], bounds[i], bounds[i + 1]
            if not 0 <= lo <= hi <= buf.size:
                return False
            try:
                fast_index.fast_unpack_groups_indexed_into(
                    buf[lo:hi], b - a, out[a:b] if i + 1 < len(cuts) else out[a:],
                    idx[a // per_block:-(-b // per_block)] - lo, self.block, self.k, self.name)
            except ValueError:
                return False
            return True

        ok = piece(0) if len(cuts) == 1 else all(list(_pool(self.threads).map(piece, range(len(cuts)))))
        if not ok:
            raise ValueError(f"{buf.size} bytes and an index of {index.numel()} entries are not "
                             f"the groups of {n} values (damaged bytes, a wrong index or a "
                             f"wrong count)")
        return torch.from_numpy(out[:n].view(np.float32))


_pools: dict[int, cf.ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> cf.ThreadPoolExecutor:
    """A pool of `threads` threads shared by every codec in the process (golden.fast's
    kernels release the GIL)."""
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = cf.ThreadPoolExecutor(threads, thread_name_prefix="device-codec")
        return _pools[threads]


def _width_sum(tw):
    """The byte length of the 8 fields a tag word announces."""
    total = torch.zeros_like(tw)
    for j in range(8):
        t = (tw >> (2 * j)) & 3
        total += t + (t == 3).to(torch.int32)
    return total


def _flat_f32(x):
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        raise ValueError(f"expected a float32 tensor, got {getattr(x, 'dtype', type(x))}")
    return x.reshape(-1).contiguous()
