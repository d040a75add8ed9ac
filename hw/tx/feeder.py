"""TX feeder: the AlignmentUnit's input for one compressed frame, and its lengths."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..alignment_unit import ByteVector
from ..checksum import Checksum
from ..compression_unit import GroupOut
from ..primitives import FifoSlice
from ..wire import MAX_FRAME_BEATS
from .layouts import CLenInfo, Decoded, FedGroup, ShimInfo, TailInfo

__all__ = ["Feeder"]


class Feeder(wiring.Component):
    """Feeds the AlignmentUnit (``o``) per compressed frame: [P mod 32 placeholders +
    shim] as one fill vector (``shim``: the shim word pre-rotated by P mod 4, repeated,
    so that the payload lands on the output frame's byte lanes), for version 3 four
    placeholder bytes for the check word (the egress patches them: the word covers |C|,
    known only at the frame's end): in the fill vector itself (the repeated word, up to
    its 34 bytes, so the path keeps one vector per input beat) or, when P mod 32 = 30,
    as a vector of their own; then the CompressionUnit's
    groups (``groups``, through a register slice), and the tail (``tail``: inside the
    last group when the group former could put it there, else a vector of its own).
    Per frame it pushes |C| and a separate tail's word sum to ``clen`` (one clock after
    the frame's end: a registered push keeps the handshake off the FIFO's write logic),
    and sums the D checksum over the CompressionUnit's decoded side port (``decoded``) into
    ``dsum``.

    ``clen`` and ``dsum`` are written without checking their ``ready`` at write time:
    ``clen.ready`` is checked at the frame's end (frame ends are at least two clocks
    apart), and ``dsum``'s FIFO (16) holds more frames than the path before it.
    """

    groups: In(stream.Signature(GroupOut))
    decoded: In(Decoded)
    shim: In(stream.Signature(ShimInfo))
    tail: In(stream.Signature(TailInfo))
    o: Out(stream.Signature(ByteVector))
    clen: Out(stream.Signature(CLenInfo))
    dsum: Out(stream.Signature(16))

    def elaborate(self, platform):
        m = Module()
        # Cuts the ready chain AlignmentUnit -> feeder -> CompressionUnit.
        m.submodules.rs_gout = rs_gout = FifoSlice(FedGroup)
        m.submodules.ck_d = ck_d = Checksum(max_beats=MAX_FRAME_BEATS)
        dd = self.decoded
        a_in = self.o
        m.d.comb += [
            rs_gout.i.valid.eq(self.groups.valid), self.groups.ready.eq(rs_gout.i.ready),
            rs_gout.i.payload.data.eq(self.groups.payload.data),
            rs_gout.i.payload.length.eq(self.groups.payload.length),
            rs_gout.i.payload.last.eq(self.groups.payload.last),
        ]
        # D checksum over the CompressionUnit's decoded groups (its side port, in frame
        # order like everything else; a tail riding in a group included); a separate
        # tail's bytes come in the finisher. The port's byte mask does the decode's
        # clearing in the Checksum's input flip-flops.
        m.d.comb += [
            ck_d.valid.eq(dd.d_valid), ck_d.first.eq(dd.d_first), ck_d.last.eq(dd.d_last),
            ck_d.data.eq(dd.d_data), ck_d.mask.eq(dd.d_mask),
            self.dsum.valid.eq(ck_d.done), self.dsum.payload.eq(ck_d.sum),
        ]
        go = rs_gout.o
        fd_groups = Signal()        # 0: the prefix is next; 1: the frame's groups
        fd_tail = Signal()          # the tail is owed as a vector of its own
        fd_ck = Signal()            # version 3: the check word's placeholders are next
        c_len = Signal(17)
        sh = Signal(ShimInfo)
        m.d.comb += sh.eq(self.shim.payload)
        # The prefix is a fill vector of shim_rot: byte b holds shim byte (b - plane) mod 4,
        # so bytes plane..plane+3 are the shim.
        is_prefix = Signal()
        m.d.comb += is_prefix.eq(~fd_groups & ~fd_tail & ~fd_ck)
        # Version 3's check word placeholders in the fill vector (P mod 32 <= 26, as
        # P = 2 mod 4) or after it.
        ck_in = Signal()
        m.d.comb += ck_in.eq(sh.v3 & (sh.plane[2:5] != 7))
        tail_h = self.tail.payload
        g = go.payload
        fd_fire = Signal()
        clen_add = Signal(7)
        with m.If(fd_tail):
            m.d.comb += [
                a_in.valid.eq(self.tail.valid & self.clen.ready),
                a_in.payload.length.eq(tail_h.r),
                a_in.payload.last.eq(1),
                fd_fire.eq(a_in.valid & a_in.ready),
                clen_add.eq(tail_h.r),
            ]
        with m.Elif(fd_ck):
            m.d.comb += [
                a_in.valid.eq(1),
                a_in.payload.length.eq(4),
                a_in.payload.last.eq(0),
                fd_fire.eq(a_in.valid & a_in.ready),
                clen_add.eq(4),
            ]
        with m.Elif(~fd_groups):
            m.d.comb += [
                a_in.valid.eq(self.shim.valid),
                a_in.payload.length.eq(sh.plane + Mux(ck_in, 8, 4)),
                a_in.payload.last.eq(0),
                fd_fire.eq(a_in.valid & a_in.ready),
            ]
        with m.Else():
            # A last group waits for its tail entry (written by the group former when the
            # group entered the CompressionUnit, so it is there by now).
            end_here = Signal()
            g_ok = Signal()
            m.d.comb += [
                end_here.eq(g.last & ~tail_h.sep),
                g_ok.eq(~g.last | (self.tail.valid & (tail_h.sep | self.clen.ready))),
                a_in.valid.eq(go.valid & g_ok),
                a_in.payload.length.eq(g.length),
                a_in.payload.last.eq(end_here),
                fd_fire.eq(a_in.valid & a_in.ready),
                go.ready.eq(a_in.ready & g_ok),
                clen_add.eq(g.length),
            ]
        # The AlignmentUnit ignores bytes past a vector's length (and a fill vector's past
        # 4), so the data needs no zeros: only bytes 0..3 have more than one source.
        m.d.comb += [
            a_in.payload.fill.eq(is_prefix),
            a_in.payload.data.eq(Cat(
                Mux(is_prefix | fd_ck, sh.shim_rot,      # (placeholders: held bytes)
                    Mux(fd_tail, Cat(tail_h.tail, g.data[24:32]), g.data[:32])),
                g.data[32:])),
        ]
        # A frame's last vector taken (fd_fire & last), written flat on the registers it
        # comes from: behind the four-way state select it mapped to 5 levels in front
        # of the shim and tail FIFOs' reads (7 in all). Kept, so it stays one cone. Only
        # a separate tail (fd_tail) or a last group with its tail inside ends a frame,
        # and both wait for the tail entry and clen's room.
        ends_frame = Signal(attrs={"keep": 1})
        m.d.comb += ends_frame.eq(a_in.ready & self.tail.valid & self.clen.ready &
                                  (fd_tail | (fd_groups & ~fd_ck & go.valid & g.last &
                                              ~tail_h.sep)))
        if platform == "formal":
            m.d.comb += Assert(ends_frame == (fd_fire & a_in.payload.last),
                               "feeder: flat frame end differs")

        # c_len sums the shim (and check word), the groups (tails inside included) and a separate tail;
        # the frame's length is pushed into clenq one clock after its end (a registered
        # push keeps the feeder's handshake off the FIFO's write logic).
        with m.If(fd_fire):
            m.d.sync += c_len.eq(Mux(is_prefix, Mux(ck_in, 8, 4), c_len + clen_add))
            with m.If(fd_tail):
                m.d.sync += [fd_tail.eq(0), fd_groups.eq(0)]
            with m.Elif(fd_ck):
                m.d.sync += [fd_ck.eq(0), fd_groups.eq(1)]
            with m.Elif(~fd_groups):
                m.d.sync += [fd_ck.eq(sh.v3 & ~ck_in), fd_groups.eq(~sh.v3 | ck_in)]
            with m.Else():
                with m.If(g.last):
                    with m.If(tail_h.sep):
                        m.d.sync += fd_tail.eq(1)
                    with m.Else():
                        m.d.sync += fd_groups.eq(0)
        m.d.comb += [
            self.shim.ready.eq(ends_frame),
            self.tail.ready.eq(ends_frame),
        ]
        # Frame ends are at least two clocks apart (prefix, then a group or the tail), so
        # the w_rdy checked at the end still holds for the write one clock later; c_len
        # holds the frame's sum in that clock (a new prefix only reloads it at its end).
        # A separate tail's words for the D checksum (payload offset 4n is even: the
        # tail's byte 0 is a high byte): (t0 << 8 | t1) + (t2 << 8), bytes past r as
        # zeros; a tail inside a group is in the CompressionUnit's D already.
        clen_push = Signal()
        clen_tsum = Signal(17)
        t_b = [Mux(tail_h.sep & (tail_h.r > n), tail_h.tail[8 * n: 8 * n + 8], 0)
               for n in range(3)]
        m.d.sync += clen_push.eq(ends_frame)
        with m.If(ends_frame):
            m.d.sync += clen_tsum.eq(Cat(t_b[1], t_b[0]) + Cat(C(0, 8), t_b[2]))
        clen_w = Signal(CLenInfo)
        m.d.comb += [
            clen_w.clen.eq(c_len), clen_w.tsum.eq(clen_tsum),
            self.clen.valid.eq(clen_push), self.clen.payload.eq(clen_w),
        ]
        return m
