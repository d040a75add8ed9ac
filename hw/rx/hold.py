"""RX header hold: the first beats of each frame, in a two-bank beat memory."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..header_restore import HEADER_BEATS
from ..wire import BEAT_BYTES
from ..wire import VERSIONS_DEFAULT
from .layouts import (BANK_BEATS, HOLD_BEATS, HoldBack, HoldCheck, HoldEgress, HoldFeed,
                      HoldFront, HoldRestore, HoldSniff, InBeat)

__all__ = ["Hold"]


class Hold(wiring.Component):
    """HEAD: holds a frame's first beats (up to ``HOLD_BEATS``; the input is always
    ready here) in a distributed-RAM memory of two banks of ``BANK_BEATS`` beats, and
    then raises ``front.done`` (a strobe) for the front half. The frame's facts (beats
    held, its last beat's count, keep and tuser, the bytes held, ``enable`` sampled on
    its first beat, ``versions`` likewise, the bank) are registers on ``front.held``. ``front.take`` (the front
    half's ACT) hands the bank over to the pending frame and starts the next one in the
    other bank (nothing is copied); ``front.restart`` goes back to HEAD. The header
    beats go past the HeaderRestore (``restore``: ``beat_valid``, ``beat_sel``: which of
    the first beats) as they are written. The memory has two combinational read ports,
    ``f_addr``/``f_data`` (the shim check on ``front``, whose address it is, and the feed
    on ``feed``) and ``egress.hdr_addr``/``hdr_data`` (the output). The check stage
    (``check``) sees each held beat as it is written.

    The stage owns the input stream (``beats``), which four states read: HEAD here,
    DRAIN (``feed.drain``), a live bypass beat going out (``back.pass_take``: taken with
    the output's ready) and the feed's live input (``feed.live_take``: taken with the
    unit's ready, one LUT level from that ready to ``beats.ready``); they never overlap,
    and ``beats.ready`` is their flat OR. ``feed``/``back`` pass the input beat on,
    ``sniff`` each taken beat (for the PacketMatcher).
    """

    beats: In(stream.Signature(InBeat))
    enable: In(1, init=1)
    versions: In(3, init=VERSIONS_DEFAULT)
    front: Out(HoldFront)
    check: Out(HoldCheck)
    feed: Out(HoldFeed)
    back: Out(HoldBack)
    egress: Out(HoldEgress)
    sniff: Out(HoldSniff)
    restore: Out(HoldRestore)
    frames_in: Out(32)

    def elaborate(self, platform):
        m = Module()
        inb = self.beats
        m.submodules.beats = beats = Memory(shape=8 * BEAT_BYTES, depth=2 * BANK_BEATS,
                                            init=[])
        wr = beats.write_port()
        rd_f = beats.read_port(domain="comb")
        rd_o = beats.read_port(domain="comb")
        front, feed, back = self.front, self.feed, self.back
        m.d.comb += [rd_f.addr.eq(front.f_addr), front.f_data.eq(rd_f.data),
                     feed.f_data.eq(rd_f.data),
                     rd_o.addr.eq(self.egress.hdr_addr), self.egress.hdr_data.eq(rd_o.data)]

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
        versions_r = Signal(3)
        m.d.comb += [
            front.head.eq(s_head),
            front.held.nheld.eq(nheld), front.held.hsel.eq(hsel),
            front.held.last.eq(held_last), front.held.kc.eq(held_kc),
            front.held.keep.eq(held_keep), front.held.user.eq(held_user),
            front.held.len.eq(held_len), front.held.en.eq(en_r), front.held.bank.eq(bank_h),
            front.held.versions.eq(versions_r),
            feed.beat.eq(inb.payload), feed.beat_valid.eq(inb.valid),
            back.beat.eq(inb.payload), back.beat_valid.eq(inb.valid),
        ]

        in_hs = Signal()
        m.d.comb += in_hs.eq(inb.valid & inb.ready)
        with m.If(in_hs & inb.payload.last):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)
        m.d.comb += [
            self.sniff.beat.data.eq(inb.payload.data),
            self.sniff.beat.keep.eq(inb.payload.keep),
            self.sniff.beat.last.eq(inb.payload.last),
            self.sniff.beat.user.eq(inb.payload.user),
            self.sniff.valid.eq(in_hs),
        ]

        # HEAD: hold the frame's first beats (the input is always ready here).
        head_take = Signal()
        m.d.comb += head_take.eq(s_head & inb.valid)
        m.d.comb += [
            wr.addr.eq(Cat(nheld[:3], bank_h)),
            wr.data.eq(inb.payload.data),
            wr.en.eq(head_take),
            self.restore.beat.eq(inb.payload.data),
            self.restore.beat_valid.eq(head_take),
            self.restore.beat_sel.eq(hsel[:HEADER_BEATS]),
            self.restore.beat_vlan.eq(inb.payload.vlan),
            self.check.c_beat.eq(inb.payload.data), self.check.c_valid.eq(head_take),
            self.check.c_sel.eq(hsel),
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
                m.d.sync += [en_r.eq(self.enable), versions_r.eq(self.versions)]
            with m.If(inb.payload.last | hsel[HOLD_BEATS - 1]):
                m.d.comb += front.done.eq(1)
                m.d.sync += [held_len.eq((nheld << 5) + inb.payload.kc), s_head.eq(0)]

        # ACT takes the held frame: its bank goes to the pending slot.
        with m.If(front.take):
            m.d.sync += [bank_h.eq(~bank_h), nheld.eq(0), hsel.eq(1)]
        with m.If(front.restart):
            m.d.sync += s_head.eq(1)

        # The input's ready as one flat expression of flags (the states that take
        # input beats: HEAD and DRAIN, FEED from the live input, a bypass passing
        # through; they never overlap). The terms without the unit's ready are kept
        # apart (the feed's kept term is ANDed with that ready), so it is one LUT level
        # from that ready to the input's ready.
        in_other = Signal(attrs={"keep": 1})
        m.d.comb += [
            in_other.eq(s_head | feed.drain | back.pass_take),
            inb.ready.eq(in_other | feed.live_take),
        ]
        return m
