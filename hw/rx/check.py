"""RX shim check: version 3's check word, recomputed from the held header beats."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..shim_check import ShimCheck
from ..wire import BEAT_BYTES
from .layouts import HOLD_BEATS, FrontCheck, HoldCheck

__all__ = ["Check"]


class Check(wiring.Component):
    """Per held frame, started by the front half in MATCH (``front.go``, a strobe, with
    the matcher's result and the frame's bank of the beat memory): reads the held beats
    0..4 through its own read port of the hold's memory (``hold``, one beat per clock),
    picks the 26-byte check message (golden.shim_check.check_message: addresses, IP ID,
    protocol, ports, TCP sequence number, |C| as the IP header gives it, shim bytes 0-3)
    and the received check word (shim bytes 4-7), runs the ShimCheck, and compares.
    ``front.done`` rises 8 clocks after ``go`` and stays until the next ``go``;
    ``front.ok``: the received word is the computed one (valid with ``done``).

    Every byte it reads lies in the held beats: l3 is 14 or 18, l4 = l3 + 4 IHL <= 78,
    P <= 138, so the shim and its check word end by byte 145 (the hold keeps 160). A
    frame that ends before them is refused by the front half's length rules whatever
    ``ok`` says (a version-3 frame holds |C| >= 8 bytes from P).

    Timing: each message byte is an 8:1 lane select (fields start at 2 mod 4: l3, l4 and
    P all are) of the memory's read data, enabled by a 3-bit compare of registers; the
    message is all flip-flops in front of the ShimCheck's XOR tree, whose word is
    registered; the 32-bit compare has a clock of its own.
    """

    front: In(FrontCheck)
    hold: In(HoldCheck)

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = ShimCheck()
        go, info = self.front.go, self.front.info
        rd = self.hold.c_data

        active = Signal()
        idx = Signal(3)
        bank = Signal()
        s_crc = Signal()            # the message is complete
        s_cmp = Signal()            # the ShimCheck's word is out
        done = Signal()
        ok = Signal()
        udp = Signal()
        m.d.comb += [self.hold.c_addr.eq(Cat(idx, bank)), self.front.done.eq(done),
                     self.front.ok.eq(ok)]

        # Message bytes picked from the beats, each with its frame offset (a register set
        # at ``go``): addresses (8), IP ID (2), ports (4), sequence number (4), shim (4),
        # and the received word (4).
        picked = [Signal(8, name=f"ck_b{j}") for j in range(26)]
        offs = [Signal(8, name=f"ck_off{j}") for j in range(26)]
        l3 = Mux(info.vlan, 18, 14)
        bases = ([(l3, 12 + i) for i in range(8)] + [(l3, 4 + i) for i in range(2)]
                 + [(info.l4, i) for i in range(8)] + [(info.payload_offset, i) for i in range(8)])
        proto = Signal(8)
        clen = Signal(16)
        with m.If(go):
            m.d.sync += [active.eq(1), idx.eq(0), bank.eq(self.front.bank), done.eq(0),
                         ok.eq(0), s_crc.eq(0), s_cmp.eq(0), udp.eq(info.udp),
                         proto.eq(info.proto), clen.eq(info.payload_len)]
            m.d.sync += [o.eq(base + c) for o, (base, c) in zip(offs, bases)]
            m.d.sync += [p.eq(0) for p in picked[14:18]]     # no sequence number for UDP
        with m.Elif(active):
            m.d.sync += idx.eq(idx + 1)
            with m.If(idx == HOLD_BEATS - 1):
                m.d.sync += [active.eq(0), s_crc.eq(1)]
            for j, ((_, c), off, dst) in enumerate(zip(bases, offs, picked)):
                # The field's base is 2 mod 4, so the byte's lane is 4 off[2:5] + (2 + c) % 4.
                lanes = [rd.word_select(4 * q + (2 + c) % 4, 8) for q in range(BEAT_BYTES // 4)]
                here = Signal(name=f"ck_here{j}")
                m.d.comb += here.eq((off[5:8] == idx) & (~udp if 14 <= j < 18 else 1))
                with m.If(here):
                    m.d.sync += dst.eq(Array(lanes)[off[2:5]])

        # The message in golden.shim_check's order; the shim's bytes as received.
        addrs, ip_id, ports, seq = picked[0:8], picked[8:10], picked[10:14], picked[14:18]
        shim, word = picked[18:22], picked[22:26]
        m.d.comb += crc.msg.eq(Cat(*addrs, *ip_id, proto, C(0, 8), *ports, *seq,
                                   clen[8:16], clen[0:8], *shim))
        received = Signal(32)
        m.d.comb += received.eq(Cat(word[3], word[2], word[1], word[0]))
        with m.If(s_crc & ~go):
            m.d.sync += [s_crc.eq(0), s_cmp.eq(1)]
        with m.If(s_cmp & ~go):
            m.d.sync += [s_cmp.eq(0), done.eq(1), ok.eq(crc.word == received)]
        return m
