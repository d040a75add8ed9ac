"""RX shim check: version 3's check word, recomputed from the held header beats."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..shim_check import MESSAGE_BYTES, ShimCheck
from ..wire import BEAT_BYTES, SHIM_MAGIC_V3
from .layouts import HOLD_BEATS, FrontCheck, HoldCheck

__all__ = ["Check"]

# check message bytes (golden.shim_check.check_message): the zero after the protocol,
# the shim's magic
_ZERO_BYTE = 11
_MAGIC_BYTE = 24


class Check(wiring.Component):
    """Keeps a copy of the held beats 0..4 (``hold``: each beat as the hold writes it in
    HEAD, with its one-hot index). Started by the front half in MATCH (``front.go``, a
    strobe, with the matcher's result), it picks the 26-byte check message
    (golden.shim_check.check_message: addresses, IP ID, protocol, ports, TCP sequence
    number, |C| as the IP header gives it, shim bytes 0-3) and the received check word
    (shim bytes 4-7) into registers, and the ShimCheck computes the word from them in
    its ``LATENCY`` (2): ``front.done`` rises 3 clocks after ``go`` and stays until the
    next ``go``;
    ``front.ok`` (valid with ``done``): the received word is the computed one.

    Every byte it reads lies in the held beats: l3 is 14 or 18, l4 = l3 + 4 IHL <= 78,
    P = l4 + the L4 header <= 138, so the shim and its check word end by byte 145 (the
    hold keeps 160). A frame that ends before them is refused by the front half's length
    rules whatever ``ok`` says (a version-3 frame holds |C| >= 8 bytes from P); a held
    copy past a short frame's end is stale and unused. The magic byte enters the message
    as the constant 0xC7: ``ok`` only counts for a frame whose magic is version 3's.

    Timing: the offsets' one-hot decodes (12 for the L4 fields, 25 for the shim's) are
    registered from ``front.info`` every clock, a clock before they are used: the
    matcher's result is registered with its ``done`` and holds until the next frame's,
    and MATCH takes it (``go``) a clock after ``done`` at the earliest, with no next
    result before. Each message byte is then an AND-OR of flip-flops (3 LUT levels for
    the shim's 25 candidates); the message is all flip-flops in front of the ShimCheck's
    two register stages of XORs, whose word is registered; ``ok`` is a 32-bit compare of two
    registers (2 LUT levels), which the front half registers.
    """

    front: In(FrontCheck)
    hold: In(HoldCheck)

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = ShimCheck(fixed={_ZERO_BYTE: 0, _MAGIC_BYTE: SHIM_MAGIC_V3})
        go, info = self.front.go, self.front.info

        # The held beats, as written (the hold writes each once per frame, in HEAD).
        beats = [Signal(8 * BEAT_BYTES, name=f"ck_beat{j}") for j in range(HOLD_BEATS)]
        with m.If(self.hold.c_valid):
            for j in range(HOLD_BEATS):
                with m.If(self.hold.c_sel[j]):
                    m.d.sync += beats[j].eq(self.hold.c_beat)
        held = Cat(*beats)

        def byte_at(off):
            return held[8 * off:8 * off + 8]

        l3s = (14, 18)
        l4s = range(34, 79, 4)
        ps = range(42, 78 + 60 + 1, 4)      # l4 + an L4 header of 8..60 bytes
        assert ps[-1] + 8 <= HOLD_BEATS * BEAT_BYTES

        # One-hot offsets, registered (see the docstring); no TCP sequence number for UDP.
        vlan_r = Signal()
        oh_l4 = Signal(len(l4s))
        oh_seq = Signal(len(l4s))
        oh_p = Signal(len(ps))
        m.d.sync += [
            vlan_r.eq(info.vlan),
            oh_l4.eq(Cat(*[info.l4 == v for v in l4s])),
            oh_seq.eq(Cat(*[(info.l4 == v) & ~info.udp for v in l4s])),
            oh_p.eq(Cat(*[info.payload_offset == v for v in ps])),
        ]

        def pick(name, oh, bases, c):
            """The byte at frame offset base + c, base the one of ``bases`` ``oh`` names
            (0 if none)."""
            b = Signal(8, name=name)
            acc = C(0, 8)
            for k, v in enumerate(bases):
                acc = acc | (oh[k].replicate(8) & byte_at(v + c))
            m.d.comb += b.eq(acc)
            return b

        def pick_l3(name, c):
            b = Signal(8, name=name)
            m.d.comb += b.eq(Mux(vlan_r, byte_at(l3s[1] + c), byte_at(l3s[0] + c)))
            return b

        addrs = [pick_l3(f"ck_addr{i}", 12 + i) for i in range(8)]
        ip_id = [pick_l3(f"ck_id{i}", 4 + i) for i in range(2)]
        ports = [pick(f"ck_port{i}", oh_l4, l4s, i) for i in range(4)]
        seq = [pick(f"ck_seq{i}", oh_seq, l4s, 4 + i) for i in range(4)]
        shim = [None if i == 2 else pick(f"ck_shim{i}", oh_p, ps, i) for i in range(8)]
        clen = info.payload_len
        msg = Cat(*addrs, *ip_id, info.proto, C(0, 8), *ports, *seq,
                  clen[8:16], clen[0:8], shim[0], shim[1], C(SHIM_MAGIC_V3, 8), shim[3])
        assert len(msg) == 8 * MESSAGE_BYTES
        received = Cat(shim[7], shim[6], shim[5], shim[4])   # big endian

        msg_r = Signal.like(msg)
        rcv_r = Signal(32)
        # go, delayed: done rises with the word, 1 + LATENCY clocks after go (the
        # message register, then the ShimCheck)
        steps = Signal(ShimCheck.LATENCY)
        done = Signal()
        m.d.sync += steps.eq(Cat(go, steps[:-1]))
        with m.If(go):
            m.d.sync += [msg_r.eq(msg), rcv_r.eq(received), done.eq(0)]
        with m.Elif(steps[-1]):
            m.d.sync += done.eq(1)
        m.d.comb += [crc.msg.eq(msg_r), self.front.done.eq(done),
                     self.front.ok.eq(crc.word == rcv_r)]
        return m
