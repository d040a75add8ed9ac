"""Internet checksum (RFC 1071) partial sums over 32-byte beats.

Shared by the TX and RX engines. A beat's byte 2w is the high byte and byte 2w+1 the
low byte of 16-bit word w: this holds for any stream whose beats start at an even
byte offset of the packet (every frame beat does, since beats are 32 bytes).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .wire import BEAT_BITS, BEAT_BYTES

__all__ = ["Checksum"]


class Checksum(wiring.Component):
    """Pipelined one's-complement sum of the masked bytes of a beat stream.

    Observes beats (no flow control of its own): on a cycle with ``valid``, the bytes
    of ``data`` whose ``mask`` bit is set are added as 16-bit big-endian words (lane 2w
    high, 2w+1 low; masked-out bytes count as 0). ``first`` starts a new sum with this
    beat, ``last`` ends it: ``LATENCY`` cycles after the ``last`` beat, ``done`` pulses
    for one cycle and ``sum`` holds the folded 16-bit sum (not complemented) until the
    next ``done``. A sum may span up to ``max_beats`` beats (2^16 by default; beyond
    that it is not exact). ``max_beats`` <= 2^12 keeps the accumulator within 32 bits,
    so that two end-around folds (one adder each) finish the sum instead of three.
    """

    LATENCY = 7

    def __init__(self, max_beats=1 << 16):
        self.max_beats = max_beats
        super().__init__()

    valid: In(1)
    first: In(1)
    last: In(1)
    data: In(BEAT_BITS)
    mask: In(BEAT_BYTES)
    done: Out(1)
    sum: Out(16)

    def elaborate(self, platform):
        m = Module()
        nw = BEAT_BYTES // 2

        # S1: mask and byte-swap into 16 network-order words. The words keep no reset
        # value, so a masked-out byte is the flip-flops' synchronous reset (no LUT).
        w = [Signal(16, name=f"w{i}", reset_less=True) for i in range(nw)]
        v1, f1, l1 = Signal(), Signal(), Signal()
        for i in range(nw):
            hi = Mux(self.mask[2 * i], self.data[16 * i: 16 * i + 8], 0)
            lo = Mux(self.mask[2 * i + 1], self.data[16 * i + 8: 16 * i + 16], 0)
            m.d.sync += w[i].eq(Cat(lo, hi))
        m.d.sync += [v1.eq(self.valid), f1.eq(self.first), l1.eq(self.last)]

        # S2: 16 -> 4 (two carry-chain adder levels).
        q = [Signal(18, name=f"q{i}") for i in range(4)]
        v2, f2, l2 = Signal(), Signal(), Signal()
        for i in range(4):
            m.d.sync += q[i].eq(w[4 * i] + w[4 * i + 1] + w[4 * i + 2] + w[4 * i + 3])
        m.d.sync += [v2.eq(v1), f2.eq(f1), l2.eq(l1)]

        # S3: 4 -> 1.
        s = Signal(20)
        v3, f3, l3 = Signal(), Signal(), Signal()
        m.d.sync += [s.eq(q[0] + q[1] + q[2] + q[3]), v3.eq(v2), f3.eq(f2), l3.eq(l2)]

        # S4: accumulate; 20 bits per beat, plus the beat count's bits, never overflow.
        # S5 reads the finished sum from `acc` itself: a next sum's first beat can only
        # replace it at the edge S5 samples it.
        acc = Signal(20 + (self.max_beats - 1).bit_length())
        v4 = Signal()
        with m.If(v3):
            m.d.sync += acc.eq(Mux(f3, 0, acc) + s)
        m.d.sync += v4.eq(v3 & l3)

        v5, v6 = Signal(), Signal()
        res = Signal(16)
        if len(acc) <= 32:
            # S5: fold to 17 bits; S6: wrap the carry (g1 < 2^17 - 1, so adding its
            # carry bit back cannot carry again); S7 only registers.
            g1 = Signal(17)
            g2 = Signal(16)
            m.d.sync += [g1.eq(acc[:16] + acc[16:]), v5.eq(v4)]
            m.d.sync += [g2.eq(g1[:16] + g1[16]), v6.eq(v5)]
            with m.If(v6):
                m.d.sync += res.eq(g2)
        else:
            # S5: fold 36 -> 21 bits, S6: fold to 17 bits and wrap the last carry.
            g1 = Signal(21)
            g2 = Signal(17)
            m.d.sync += [g1.eq(acc[:16] + acc[16:32] + acc[32:]), v5.eq(v4)]
            m.d.sync += [g2.eq(g1[:16] + g1[16:]), v6.eq(v5)]
            with m.If(v6):
                # g2 < 2^16 + 2^5: one more end-around carry cannot carry again.
                m.d.sync += res.eq(g2[:16] + g2[16])
        m.d.sync += self.done.eq(v6)
        m.d.comb += self.sum.eq(res)
        return m
