"""RX header hold: the first beats of each frame, in a two-bank beat memory."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..axis import AxisBeat
from ..header_restore import HEADER_BEATS
from ..wire import BEAT_BYTES
from .layouts import BANK_BEATS, HOLD_BEATS, HeldFrame, InBeat

__all__ = ["Hold"]


class Hold(wiring.Component):
    """HEAD: holds a frame's first beats (up to ``HOLD_BEATS``; the input is always
    ready here) in a distributed-RAM memory of two banks of ``BANK_BEATS`` beats, and
    then raises ``done`` (a strobe) for the front half. The frame's facts (beats held,
    its last beat's count, keep and tuser, the bytes held, ``enable`` sampled on its
    first beat, the bank) are registers on ``held``. ``take`` (the front half's ACT)
    hands the bank over to the pending frame and starts the next one in the other bank
    (nothing is copied); ``restart`` goes back to HEAD. The header beats go past the
    HeaderRestore (``hdr_valid``, ``hdr_sel``: which of the first beats) as they are
    written. The memory has two combinational read ports, ``f_addr``/``f_data`` (the
    shim check and the feed) and ``o_addr``/``o_data`` (the output).

    The stage owns the input stream (``beats``), which four states read: HEAD here,
    DRAIN (``drain``), a live bypass beat going out (``pass_take``: taken with the
    output's ready) and the feed's live input (``live_take``: taken with the unit's
    ready, one LUT level from that ready to ``beats.ready``); they never overlap, and
    ``beats.ready`` is their flat OR. ``beat``/``beat_valid`` pass the input beat on,
    ``sniff``/``sniff_valid`` each taken beat (for the PacketMatcher).
    """

    beats: In(stream.Signature(InBeat))
    enable: In(1, init=1)
    drain: In(1)
    pass_take: In(1)
    live_take: In(1)
    take: In(1)
    restart: In(1)
    beat: Out(InBeat)
    beat_valid: Out(1)
    sniff: Out(AxisBeat)
    sniff_valid: Out(1)
    head: Out(1)
    done: Out(1)
    held: Out(HeldFrame)
    hdr_valid: Out(1)
    hdr_sel: Out(HEADER_BEATS)
    f_addr: In(4)
    f_data: Out(8 * BEAT_BYTES)
    o_addr: In(4)
    o_data: Out(8 * BEAT_BYTES)
    frames_in: Out(32)

    def elaborate(self, platform):
        m = Module()
        inb = self.beats
        m.submodules.beats = beats = Memory(shape=8 * BEAT_BYTES, depth=2 * BANK_BEATS,
                                            init=[])
        wr = beats.write_port()
        rd_f = beats.read_port(domain="comb")
        rd_o = beats.read_port(domain="comb")
        m.d.comb += [rd_f.addr.eq(self.f_addr), self.f_data.eq(rd_f.data),
                     rd_o.addr.eq(self.o_addr), self.o_data.eq(rd_o.data)]

        s_head = Signal(init=1)
        bank_h = Signal()
        nheld = Signal(range(HOLD_BEATS + 1))
        hsel = Signal(HOLD_BEATS, init=1)   # nheld one-hot: the hold beat written next
        held_last = Signal()          # the frame ended within the held beats
        held_kc = Signal(6)           # byte count of that last beat
        held_keep = Signal(BEAT_BYTES)
        held_user = Signal()
        held_len = Signal(range(HOLD_BEATS * BEAT_BYTES + 1))
        en_r = Signal()
        m.d.comb += [
            self.head.eq(s_head),
            self.held.nheld.eq(nheld), self.held.hsel.eq(hsel),
            self.held.last.eq(held_last), self.held.kc.eq(held_kc),
            self.held.keep.eq(held_keep), self.held.user.eq(held_user),
            self.held.len.eq(held_len), self.held.en.eq(en_r), self.held.bank.eq(bank_h),
            self.beat.eq(inb.payload), self.beat_valid.eq(inb.valid),
        ]

        in_hs = Signal()
        m.d.comb += in_hs.eq(inb.valid & inb.ready)
        with m.If(in_hs & inb.payload.last):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)
        m.d.comb += [
            self.sniff.data.eq(inb.payload.data),
            self.sniff.keep.eq(inb.payload.keep),
            self.sniff.last.eq(inb.payload.last),
            self.sniff.user.eq(inb.payload.user),
            self.sniff_valid.eq(in_hs),
        ]

        # HEAD: hold the frame's first beats (the input is always ready here).
        head_take = Signal()
        m.d.comb += head_take.eq(s_head & inb.valid)
        m.d.comb += [
            wr.addr.eq(Cat(nheld[:3], bank_h)),
            wr.data.eq(inb.payload.data),
            wr.en.eq(head_take),
            self.hdr_valid.eq(head_take),
            self.hdr_sel.eq(hsel[:HEADER_BEATS]),
        ]
        with m.If(head_take):
            m.d.sync += [
                nheld.eq(nheld + 1),
                hsel.eq(hsel << 1),
                held_kc.eq(inb.payload.kc),
                held_keep.eq(inb.payload.keep),
                held_user.eq(inb.payload.user),
                held_last.eq(inb.payload.last),
            ]
            with m.If(hsel[0]):
                # enable is sampled at the start of each frame (the matcher samples
                # dscp on the same beat).
                m.d.sync += en_r.eq(self.enable)
            with m.If(inb.payload.last | hsel[HOLD_BEATS - 1]):
                m.d.comb += self.done.eq(1)
                m.d.sync += [held_len.eq((nheld << 5) + inb.payload.kc), s_head.eq(0)]

        # ACT takes the held frame: its bank goes to the pending slot.
        with m.If(self.take):
            m.d.sync += [bank_h.eq(~bank_h), nheld.eq(0), hsel.eq(1)]
        with m.If(self.restart):
            m.d.sync += s_head.eq(1)

        # The input's ready as one flat expression of flags (the states that take
        # input beats: HEAD and DRAIN, FEED from the live input, a bypass passing
        # through; they never overlap). The terms without the unit's ready are kept
        # apart (the feed's kept term is ANDed with that ready), so it is one LUT level
        # from that ready to the input's ready.
        in_other = Signal(attrs={"keep": 1})
        m.d.comb += [
            in_other.eq(s_head | self.drain | self.pass_take),
            inb.ready.eq(in_other | self.live_take),
        ]
        return m
