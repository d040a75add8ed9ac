"""RX egress: an output beat from its sources, with the restored header fields."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..header_restore import HEADER_BEATS, patch_lanes
from ..wire import BEAT_BYTES
from .layouts import FrontEgress, HoldEgress, OutCtl, RestoreCsum

__all__ = ["Egress", "PATCH_LANES"]


def _patch_lanes():
    """Lane -> (field, byte, flag) for every lane a restored field can take in beats 0..2:
    flag "tc0"/"tc1" (beat 0 without / with VLAN tag) or t (the UDP length at lane
    2 + 4t). No lane takes two (checked here)."""
    lanes = {}
    for vlan in (0, 1):
        for ihl in range(5, 16):
            for pos, field, hi in patch_lanes(vlan, ihl, udp=1):
                k = pos % BEAT_BYTES
                flag = ("tc1" if vlan else "tc0") if field != "udp" else k // 4
                assert field == "udp" or pos < BEAT_BYTES
                assert pos < HEADER_BEATS * BEAT_BYTES
                old = lanes.setdefault(k, (field, hi, flag))
                assert old == (field, hi, flag) or (field == "udp" and old[0] == "udp"
                                                    and old[1] == hi), (k, old, field)
    return lanes


PATCH_LANES = _patch_lanes()


class Egress(wiring.Component):
    """Makes each output beat the back half offers on ``ctl`` (combinational: ``o``'s
    handshake is ``ctl``'s): a live bypass beat as it came; a held or header beat read
    from the beat memory (``hold``), the restored fields (IP total length
    ``front.total`` and checksum ``restore.csum``, UDP length ``front.udp_len``) on
    their byte lanes (each lane takes at most one of them, see ``PATCH_LANES``; which
    one now is a flag of ``ctl``); in the beat holding byte P the header bytes below lane P mod 32 and the
    realigned payload above them; keep, last and user from ``ctl``'s flags. Counts the
    frames out."""

    ctl: In(stream.Signature(OutCtl))
    hold: In(HoldEgress)
    restore: In(RestoreCsum)
    front: In(FrontEgress)
    o: Out(axis_signature())
    frames_out: Out(32)

    def elaborate(self, platform):
        m = Module()
        c, ob = self.ctl.payload, self.o
        # Output bytes from the held / restored header: all of a held or header beat,
        # and in the beat holding P (its index is P >> 5 by then; the pending slot is
        # released only as it goes out) the bytes below lane P mod 32; realigned D
        # above them.
        from_hdr = Signal(BEAT_BYTES)
        hdr_data = Signal(8 * BEAT_BYTES)
        m.d.comb += [self.hold.hdr_addr.eq(Cat(c.idx, c.bank)), hdr_data.eq(self.hold.hdr_data)]
        for k in range(BEAT_BYTES):
            m.d.comb += from_hdr[k].eq(c.held | c.hdr | (c.first & c.low[k]))
        # Per lane, the restored field byte that may replace the held byte there (each
        # lane has at most one) and the flag that says it does now.
        fields = {"total": self.front.total, "csum": self.restore.csum, "udp": self.front.udp_len}
        hdr_or_d = Signal(8 * BEAT_BYTES)
        for k in range(BEAT_BYTES):
            sl = slice(8 * k, 8 * k + 8)
            hbyte = hdr_data[sl]
            if k in PATCH_LANES:
                field, hi, flag = PATCH_LANES[k]
                on = {"tc0": c.tc[0], "tc1": c.tc[1]}.get(flag)
                if on is None:
                    on = c.unow & c.umask[flag]
                val = fields[field].word_select(hi, 8)
                hbyte = Mux(on, val, hbyte)
            m.d.comb += hdr_or_d[sl].eq(Mux(from_hdr[k], hbyte, c.d[sl]))

        live = c.live
        m.d.comb += [
            ob.valid.eq(self.ctl.valid),
            self.ctl.ready.eq(ob.ready),
            ob.payload.data.eq(Mux(live, c.beat.data, hdr_or_d)),
            ob.payload.keep.eq(Mux(live, c.beat.keep,
                                   Mux(c.last, c.last_keep, (1 << BEAT_BYTES) - 1))),
            ob.payload.last.eq(Mux(live, c.beat.last, c.last)),
            ob.payload.user.eq(Mux(live, c.beat.user,
                                   c.last & Mux(c.held, c.held_user, c.bad | c.fin_bad))),
        ]
        ob_hs = Signal()
        m.d.comb += ob_hs.eq(ob.valid & ob.ready)
        with m.If(ob_hs & ob.payload.last):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)
        return m
