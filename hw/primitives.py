"""Gateware primitives the blocks and engines share: byte-count and compare helpers,
LUT-shaped select and shift networks, small FIFOs and register slices.

Each helper is written for the 6-LUT-level budget: it says how it maps (levels, LUT
shape), because the blocks choose between them by that, not by function alone.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from .axis import AxisBeat

__all__ = [
    "keep_count", "greater_than", "switch_pick", "pick", "select_tree", "shift_down", "rotate",
    "register", "stage_regs", "FastFifo", "FifoSlice", "StreamFifo", "AxisRegisterSlice", "add_fifo",
]


# -- pipeline registers ----------------------------------------------------------------

def register(m, en, value, name):
    """``value`` through one register named ``name``, loaded when ``en``."""
    r = Signal.like(value, name=name)
    with m.If(en):
        m.d.sync += r.eq(value)
    return r


def stage_regs(m, en, stage, **values):
    """The values a step carries into pipeline stage ``stage``: one ``register`` each,
    named ``{name}{stage}`` (``v=...`` into stage 2 is ``v2``). Returns them by name;
    ``stage_regs(m, en, 3, **vars(s2))`` carries them all on."""
    return SimpleNamespace(**{n: register(m, en, v, f"{n}{stage}") for n, v in values.items()})


# -- counts and compares ---------------------------------------------------------------

def keep_count(keep):
    """Number of set bits of a contiguous low ``keep`` mask (a thermometer code), as XOR
    trees: bit b of the count is the parity of keep[2^b - 1], keep[2^(b+1) - 1 + 2^b]...
    (two LUT levels instead of a popcount adder tree)."""
    n = len(keep)
    bits = []
    b = 0
    while (1 << b) <= n:
        step = 1 << b
        taps = [keep[i] for i in range(step - 1, n, step)]
        x = taps[0]
        for t in taps[1:]:
            x = x ^ t
        bits.append(x)
        b += 1
    return Cat(*bits)


def greater_than(a, b):
    """``a > b`` for unsigned values of up to 6 bits, as a compare of the top 3 bits
    and of the rest, joined by one more LUT: two LUT levels (a plain compare tends to
    map as a ripple of one LUT per bit or two)."""
    w = max(len(a), len(b))
    assert w <= 6
    a = Cat(a, C(0, w - len(a)))
    b = Cat(b, C(0, w - len(b)))
    lo = w // 2
    return (a[lo:] > b[lo:]) | ((a[lo:] == b[lo:]) & (a[:lo] > b[:lo]))


# -- select and shift networks (one kept LUT per stage) ---------------------------------

def switch_pick(m, vec, idx, name):
    """vec[idx] as one wide mux (a Switch), not bit_select's chain of 2:1 shift stages."""
    out = Signal(name=name)
    with m.Switch(idx):
        for c in range(len(vec)):
            with m.Case(c):
                m.d.comb += out.eq(vec[c])
    return out


def pick(m, cands, sel, width, name, decoded=True):
    """One select stage, ``cands[sel]`` (sel: 1 or 2 bits; None reads 0), on a kept net
    of at most 4 data and 2 select bits, so that it maps to one LUT6 (without the cut
    the mapper merges stages into chains of LUT5s, two levels each). ``decoded``: an
    AND-OR over the decoded select (shifters: nested 2:1 muxes would share halves
    between neighbouring outputs and map deeper); else nested 2:1 muxes (trees)."""
    c = [C(0, width) if x is None else x for x in cands]
    c += [C(0, width)] * ((1 << len(sel)) - len(c))
    s = Signal(width, name=name, attrs={"keep": 1})
    if len(sel) == 1:
        m.d.comb += s.eq(Mux(sel[0], c[1], c[0]))
    elif not decoded:
        m.d.comb += s.eq(Mux(sel[1], Mux(sel[0], c[3], c[2]), Mux(sel[0], c[1], c[0])))
    else:
        acc = C(0, width)
        for k in range(4):
            acc = acc | ((sel == k).replicate(width) & c[k])
        m.d.comb += s.eq(acc)
    return s


def select_tree(m, items, sel, name, stop=1):
    """Radix-4 select tree on ``sel``'s bits, LSBs first, one LUT level per stage,
    until ``stop`` candidates remain; returns them (indexed by the unused high bits)."""
    width = max(len(x) for x in items if x is not None)
    cur = list(items)
    lsb = 0
    while len(cur) > stop:
        bits = sel[lsb:lsb + 2]
        cur = [pick(m, cur[4 * g:4 * g + 4], bits, width, f"{name}{lsb}_{g}", decoded=False)
               for g in range(-(-len(cur) // 4))]
        lsb += 2
    return cur


def shift_down(m, items, stages, n_out, name):
    """``out[i] = items[i + amount]`` (0 past the end) for i < n_out. ``stages`` lists
    (select bits, step values): each stage is one kept pick among ``items[i + v]`` for
    the step values v (e.g. ``(tag, (0, 1, 2, 4))`` shifts by a field's width, ``(h[2:4],
    (0, 4, 8, 12))`` by a radix-4 digit); outputs are kept only as far as later stages
    can reach."""
    width = len(items[0])
    cur = list(items)
    for k, (sel, steps) in enumerate(stages):
        reach = sum(max(v) for _, v in stages[k + 1:])
        nxt = []
        for i in range(min(len(cur), n_out + reach)):
            cands = [cur[i + v] if i + v < len(cur) else None for v in steps]
            nxt.append(pick(m, cands, sel, width, f"{name}{k}_{i}"))
        cur = nxt
    return cur[:n_out]


def rotate(m, items, amount, n_out, name, stages=((5, 2), (3, 2), (1, 2), (0, 1))):
    """``out[i] = items[(i + amount) % len(items)]`` for i < n_out (128 items, 7-bit
    amount), MSB stage first, so only the first stage wraps around the ring and each
    later one keeps only the outputs that the stages after it can reach. ``stages``:
    (lowest select bit, select bits) per stage, in order."""
    n = len(items)
    width = len(items[0])
    cur = list(items)
    for lsb, nbits in stages:
        reach = (1 << lsb) - 1
        sel = amount[lsb:lsb + nbits]
        nxt = []
        for i in range(min(n, n_out + reach)):
            cands = [cur[(i + (k << lsb)) % len(cur)] for k in range(1 << nbits)]
            nxt.append(pick(m, cands, sel, width, f"{name}{lsb}_{i}"))
        cur = nxt
    return cur[:n_out]


# -- FIFOs and register slices ---------------------------------------------------------

class FastFifo(Elaboratable):
    """SyncFIFOBuffered's ports and timing (registered ``r_data``/``r_rdy``) with shorter
    paths behind ``r_en``/``w_en``: no shared level counter (plain pointers), and
    ``w_rdy`` comes from a flip-flop, computed one clock early with one entry spare.
    For FIFOs whose handshakes sit at the end of deep logic; the writer must check
    ``w_rdy``."""

    def __init__(self, width, depth):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"FastFifo depth must be a power of two >= 2, got {depth}")
        self.width, self.depth = width, depth
        self.w_en, self.w_data, self.w_rdy = Signal(), Signal(width), Signal()
        self.r_en, self.r_data, self.r_rdy = Signal(), Signal(width), Signal()
        # Entries held (RAM and output register): driven only when elaborated for formal
        # checks (platform "formal"), which state their invariants on it.
        self.formal_level = Signal(range(depth + 2))

    def elaborate(self, platform):
        m = Module()
        aw = ceil_log2(self.depth)
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[])
        wr = mem.write_port()
        rd = mem.read_port(domain="sync")
        wp = Signal(aw + 1)
        rp = Signal(aw + 1)
        w_rdy = Signal(init=1)
        # Stale by one clock: at most one write went in since, so one entry is spare.
        m.d.sync += w_rdy.eq((wp - rp)[:aw + 1] < self.depth - 1)
        do_write = Signal()
        do_read = Signal()
        m.d.comb += [
            self.w_rdy.eq(w_rdy),
            do_write.eq(self.w_en & w_rdy),
            wr.addr.eq(wp[:aw]), wr.data.eq(self.w_data), wr.en.eq(do_write),
            # Refill the output register when it is empty or being read.
            do_read.eq((wp != rp) & (~self.r_rdy | self.r_en)),
            rd.addr.eq(rp[:aw]), rd.en.eq(do_read), self.r_data.eq(rd.data),
        ]
        with m.If(do_write):
            m.d.sync += wp.eq(wp + 1)
        with m.If(do_read):
            m.d.sync += [rp.eq(rp + 1), self.r_rdy.eq(1)]
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        if platform == "formal":
            m.d.comb += self.formal_level.eq((wp - rp)[:aw + 1] + self.r_rdy)
        return m


class AxisRegisterSlice(wiring.Component):
    """Full register slice (skid buffer): breaks both the data and the ready path.

    Sustains one beat per clock; every output, ``i.ready`` included, comes from a
    flip-flop, so the slice can be dropped between any two stages to cut timing paths.
    """

    def __init__(self, shape=AxisBeat):
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })
        self.formal_level = Signal(range(3))     # beats held; driven for formal only

    def elaborate(self, platform):
        m = Module()
        skid = Signal.like(self.i.payload)
        skid_valid = Signal()
        o_valid = Signal()
        o_payload = Signal.like(self.o.payload)

        m.d.comb += [
            self.i.ready.eq(~skid_valid),
            self.o.valid.eq(o_valid),
            self.o.payload.eq(o_payload),
        ]
        o_free = ~o_valid | self.o.ready
        with m.If(o_free):
            # Output register is (or becomes) free: refill it, from the skid first.
            with m.If(skid_valid):
                m.d.sync += [o_payload.eq(skid), o_valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [o_payload.eq(self.i.payload), o_valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & self.i.ready):
            # Output is stalled but we promised to take this beat: park it.
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        if platform == "formal":
            m.d.comb += self.formal_level.eq(o_valid + skid_valid)
        return m


def add_fifo(m, name, shape, depth, fast=False):
    """A FIFO of ``shape`` entries as submodule ``name``: SyncFIFOBuffered, or FastFifo
    where the reader's decision drives ``r_en`` at the end of deep logic."""
    width = Shape.cast(shape).width
    fifo = FastFifo(width, depth) if fast else SyncFIFOBuffered(width=width, depth=depth)
    m.submodules[name] = fifo
    return fifo


class StreamFifo(wiring.Component):
    """A FIFO with stream interfaces (``i``, ``o``), so that stages connect to it with
    ``wiring.connect``: FastFifo (``fast``: shorter paths behind the handshakes, one entry
    spare, depth a power of two) or SyncFIFOBuffered. Same logic as using either
    directly: ``i.ready`` is ``w_rdy``, ``o.valid`` is ``r_rdy``, ``o.ready`` is ``r_en``."""

    def __init__(self, shape, depth, *, fast=False):
        self.shape, self.depth, self.fast = shape, depth, fast
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})
        self.formal_level = Signal(range(depth + 2))   # beats held; driven for formal only

    def elaborate(self, platform):
        m = Module()
        width = Shape.cast(self.shape).width
        if self.fast:
            m.submodules.fifo = fifo = FastFifo(width, self.depth)
        else:
            m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self.depth)
        m.d.comb += [
            fifo.w_en.eq(self.i.valid), fifo.w_data.eq(self.i.payload),
            self.i.ready.eq(fifo.w_rdy),
            self.o.valid.eq(fifo.r_rdy), self.o.payload.eq(fifo.r_data),
            fifo.r_en.eq(self.o.ready),
        ]
        if platform == "formal":
            m.d.comb += self.formal_level.eq(fifo.formal_level if self.fast else fifo.level)
        return m


class FifoSlice(StreamFifo):
    """A register slice as a 4-entry FastFifo: ``i.ready``, ``o.valid`` and ``o.payload``
    come from flip-flops like AxisRegisterSlice's, but the entries sit in distributed RAM
    (about 4 LUTs per 6 bits) instead of two flip-flops and a mux per bit; two clocks of
    latency instead of one."""

    def __init__(self, shape):
        super().__init__(shape, 4, fast=True)
