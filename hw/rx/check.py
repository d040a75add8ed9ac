"""RX shim check: version 3's check word, recomputed from the held header beats."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..shim_check import ShimCheck
from ..wire import BEAT_BYTES
from .layouts import HOLD_BEATS, FrontCheck, HoldCheck

__all__ = ["Check"]


class Check(wiring.Component):
    """Keeps a copy of the held beats 0..4 (``hold``: each beat as the hold writes it in
    HEAD, with its one-hot index). Started by the front half in MATCH (``front.go``, a
    strobe, with the matcher's result), it picks the 26-byte check message
    (golden.shim_check.check_message: addresses, IP ID, protocol, ports, TCP sequence
    number, |C| as the IP header gives it, shim bytes 0-3) and the received check word
    (shim bytes 4-7) into registers, and the ShimCheck computes the word a clock later:
    ``front.done`` rises 2 clocks after ``go`` and stays until the next ``go``;
    ``front.ok`` (valid with ``done``): the received word is the computed one.

    Every byte it reads lies in the held beats: l3 is 14 or 18, l4 = l3 + 4 IHL <= 78,
    P <= 138, so the shim and its check word end by byte 145 (the hold keeps 160). A
    frame that ends before them is refused by the front half's length rules whatever
    ``ok`` says (a version-3 frame holds |C| >= 8 bytes from P); a held copy past a
    short frame's end is stale and unused.

    Timing: each message byte is one select among its possible offsets (2 for the IP
    fields, 12 for the L4 ones, 25 for the shim's) of flip-flops, by matcher registers;
    the message is all flip-flops in front of the ShimCheck's XOR tree, whose word is
    registered; ``ok`` is a 32-bit compare of two registers (2 LUT levels), which the
    front half registers.
    """

    front: In(FrontCheck)
    hold: In(HoldCheck)

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = ShimCheck()
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

        def pick(name, base, choices, c):
            """The byte at frame offset base + c, base one of ``choices``."""
            b = Signal(8, name=name)
            with m.Switch(base):
                for v in choices:
                    with m.Case(v):
                        m.d.comb += b.eq(byte_at(v + c))
            return b

        l3s = {0: 14, 1: 18}
        l4s = range(34, 79, 4)
        ps = range(42, HOLD_BEATS * BEAT_BYTES - 8 + 1, 4)

        def pick_l3(name, c):
            b = Signal(8, name=name)
            m.d.comb += b.eq(Mux(info.vlan, byte_at(l3s[1] + c), byte_at(l3s[0] + c)))
            return b

        addrs = [pick_l3(f"ck_addr{i}", 12 + i) for i in range(8)]
        ip_id = [pick_l3(f"ck_id{i}", 4 + i) for i in range(2)]
        ports = [pick(f"ck_port{i}", info.l4, l4s, i) for i in range(4)]
        seq = [pick(f"ck_seq{i}", info.l4, l4s, 4 + i) for i in range(4)]
        shim = [pick(f"ck_shim{i}", info.payload_offset, ps, i) for i in range(8)]
        clen = info.payload_len
        msg = Cat(*addrs, *ip_id, info.proto, C(0, 8), *ports,
                  *[Mux(info.udp, 0, s) for s in seq],       # no sequence number for UDP
                  clen[8:16], clen[0:8], *shim[:4])
        received = Cat(shim[7], shim[6], shim[5], shim[4])   # big endian

        msg_r = Signal.like(msg)
        rcv_r = Signal(32)
        s1 = Signal()
        done = Signal()
        m.d.sync += s1.eq(go)
        with m.If(go):
            m.d.sync += [msg_r.eq(msg), rcv_r.eq(received), done.eq(0)]
        with m.Elif(s1):
            m.d.sync += done.eq(1)
        m.d.comb += [crc.msg.eq(msg_r), self.front.done.eq(done),
                     self.front.ok.eq(crc.word == rcv_r)]
        return m
