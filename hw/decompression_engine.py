"""DecompressionEngine: the RX engine (wire -> host), paper Fig. 10, spec section 4 RX.

Cut-through. Two loosely coupled halves share one "pending frame" slot:

* the front half holds the first beats of a frame (up to ``HOLD_BEATS``: the shim ends
  at byte 141 at most), lets the PacketMatcher and the shim check decide, then either
  hands the held beats over for a byte-identical pass-through, or starts the
  DecompressionUnit, streams the compressed bytes (shim stripped, Ethernet padding
  dropped) into it and has the HeaderRestore finish the IP header checksum;
* the back half emits the frame: for a decompressed one the header beats with the
  restored IP total length, IP checksum and UDP length put on their lanes, then the
  unit's 32-byte words, moved by the Realigner onto the byte lanes they take after byte
  P and merged with the header beat that holds byte P: P + L bytes in all, ``user`` on
  the last beat if the payload was malformed, the input was cut short, or the input
  frame had ``user`` set.

The held beats are written once, into a distributed-RAM memory of two banks of beats
(the front half fills one while the back half may still read the other's header
beats; ACT hands the bank over, nothing is copied). It has two read ports: the
feed's, which before FEED also reads the shim (in MATCH; the magic byte one clock
later, in SH2, if it is in the next beat), and the output's. The HeaderRestore sums
the IP header's words as HEAD holds the first three beats, so it keeps no copy of the
header either; the three restored fields are replaced on their byte lanes as the
header beats go out (each lane can take at most one of them; which beat and which
lane follow from VLAN, IHL and UDP, as flags loaded with the frame).

For timing (at most 6 LUT levels between registers), what the halves decide each
clock comes from registers prepared a step ahead: both halves' states are one-hot flag
registers; the front half's CHECK step works out every per-frame sum and compare the
ACT step needs (the size limit, the output beat count, the first beat's offer, which
held beats end the compressed stream), so ACT only copies registers; the feed keeps
"more than a beat left" and "the current held beat ends the stream" as flags, so the
end of the feed is a select of flags, and the input's last beat, if the compressed
stream may end in it, waits one clock for a registered compare of its byte count (the
input side has slack: its rate is not the output's); the back half's handshake per
state is one flat AND of flags, and its beat counts, "last beat", "header beat" and
the last beat's tkeep are loaded from the pending slot. The beat holding byte P takes
its header bytes straight from the pending frame's bank (released only as that beat
goes out). The memory's read addresses are registers (the feed's follows the
matcher's P while the front half waits), so a read is one level from flip-flops.

The front half moves on to the next frame as soon as the current one's input is in,
so a frame's header work overlaps the previous frame's output and, with the sink
always ready, the output runs at one beat per clock across frames.

Because the decision is taken from the header, a frame whose IP total length claims
more bytes than actually arrive can only be caught once it is held in full (frames
of up to ``HOLD_BEATS`` beats, which are then forwarded unchanged); a longer one is
decompressed with the missing bytes as zeros and flagged bad.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisBeat, axis_signature
from .decompression_unit import DecompressionUnit
from .header_restore import HeaderRestore
from .packet_matcher import PacketMatcher
from .pipeline import Pipeline
from .realigner import Realigner
from .rx.back import Back
from .rx.egress import Egress
from .rx.feed import Feed
from .rx.front import Front
from .rx.hold import Hold
from .rx.ingress import Ingress
from .rx.layouts import HOLD_BEATS, InBeat
from .rx.words import Words
from .wire import DEFAULT_DSCP

__all__ = ["DecompressionEngine", "HOLD_BEATS"]

_COUNTERS = {"front": ("decompressed", "bypassed", "payload_bytes_in", "payload_bytes_out"),
             "back": ("malformed",), "hold": ("frames_in",), "egress": ("frames_out",)}


class DecompressionEngine(wiring.Component):
    """RX engine. Ports: ``i``/``o`` AXI streams (``AxisBeat``), config ``enable``,
    ``dscp``; counters (frames: 32 bits, bytes: 48 bits)."""

    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=DEFAULT_DSCP)
    frames_in: Out(32)
    frames_out: Out(32)
    decompressed: Out(32)
    bypassed: Out(32)
    malformed: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def elaborate(self, platform):
        m = Module()
        self.pipeline = pl = Pipeline(m, self)
        pl.add("ingress", Ingress())
        hold = pl.add("hold", Hold())
        matcher = pl.add("matcher", PacketMatcher())
        restore = pl.add("restore", HeaderRestore())
        front = pl.add("front", Front())
        feed = pl.add("feed", Feed())
        # The unit's words go straight into the Realigner's input register slice (its
        # ready is a flip-flop), so the unit leaves its own output slice out.
        pl.add("du", DecompressionUnit(out_slice=False))
        pl.add("words", Words())
        pl.add("realign", Realigner())
        back = pl.add("back", Back())
        egress = pl.add("egress", Egress())

        # Beat-wide register slices (4-entry FastFifos in distributed RAM) at both ports.
        pl.connect("in", "ingress.i")
        pl.fifo("in_slice", "ingress.o", "hold.beats", InBeat, 4, fast=True)
        m.d.comb += hold.enable.eq(self.enable)

        # hold: the held beats' facts to the front half, the header beats past the
        # HeaderRestore, every taken beat past the matcher; the input's ready is the OR
        # of the four states that take input beats.
        m.d.comb += [matcher.beat.eq(hold.sniff), matcher.valid.eq(hold.sniff_valid),
                     matcher.dscp.eq(self.dscp)]
        pl.wire("hold", "matcher", "beats")
        m.d.comb += [restore.beat.eq(hold.beat.data), restore.beat_valid.eq(hold.hdr_valid),
                     restore.beat_sel.eq(hold.hdr_sel), restore.beat_vlan.eq(hold.beat.vlan)]
        pl.wire("hold", "restore", "header beats")
        m.d.comb += [front.held.eq(hold.held), front.done.eq(hold.done),
                     front.head.eq(hold.head),
                     hold.take.eq(front.take), hold.restart.eq(front.restart)]
        pl.wire("hold", "front", "held frame")
        pl.wire("front", "hold", "take, restart")
        m.d.comb += [front.match_done.eq(matcher.done), front.info.eq(matcher.info)]
        pl.wire("matcher", "front", "info")
        m.d.comb += [hold.f_addr.eq(front.f_addr), front.f_data.eq(hold.f_data),
                     feed.f_data.eq(hold.f_data)]
        pl.wire("hold", "front", "shim beat")
        pl.wire("hold", "feed", "held beats")
        m.d.comb += [feed.beat.eq(hold.beat), feed.beat_valid.eq(hold.beat_valid),
                     back.beat.eq(hold.beat), back.beat_valid.eq(hold.beat_valid),
                     hold.drain.eq(feed.drain), hold.live_take.eq(feed.live_take),
                     hold.pass_take.eq(back.pass_take)]
        pl.wire("hold", "feed", "live beats")
        pl.wire("hold", "back", "live bypass beats")

        # front: per frame, the feed's registers, the unit's and the Realigner's start,
        # the HeaderRestore's start, the pending slot for the back half.
        pl.connect("front.feed", "feed.start")
        m.d.comb += [front.ra_step.eq(feed.ra_step), front.ra_next.eq(feed.ra_next),
                     front.fin_done.eq(feed.fin_done)]
        pl.wire("feed", "front", "read address, input done")
        pl.connect("front.start", "du.start")
        pl.connect("front.rl_cfg", "realign.cfg")
        m.d.comb += [restore.start.eq(front.restore_start),
                     restore.ip_total.eq(front.pend.total),
                     front.restore_done.eq(restore.done)]
        pl.wire("front", "restore", "start, IP total length")
        pl.wire("restore", "front", "done")
        m.d.comb += [feed.pend.eq(front.pend),
                     back.pend.eq(front.pend), back.pend_ready.eq(front.pend_ready),
                     back.f_pass.eq(front.f_pass),
                     front.release.eq(back.release), front.end_live.eq(back.end_live)]
        pl.wire("front", "feed", "pending frame")
        pl.wire("front", "back", "pending frame, PASS")
        pl.wire("back", "front", "release, PASS ends")

        # decompression: feed -> unit -> words -> Realigner -> back half.
        pl.connect("feed.o", "du.i")
        pl.connect("du.o", "words.i")
        pl.connect("words.o", "realign.i")
        pl.connect("realign.o", "back.words")
        m.d.comb += [back.fin.eq(feed.fin), feed.fin_clear.eq(back.fin_clear)]
        pl.wire("feed", "back", "end of input")

        # back half -> egress (the restored fields, the header beats' memory port).
        pl.connect("back.o", "egress.ctl")
        m.d.comb += [hold.o_addr.eq(egress.hdr_addr), egress.hdr_data.eq(hold.o_data),
                     egress.csum.eq(restore.csum), egress.total.eq(front.pend.total),
                     egress.udp_len.eq(front.pend.udp_len)]
        pl.wire("hold", "egress", "header beats")
        pl.wire("restore", "egress", "IP checksum")
        pl.wire("front", "egress", "restored lengths")
        pl.fifo("out_slice", "egress.o", "out", AxisBeat, 4, fast=True)
        for stage, names in _COUNTERS.items():
            for c in names:
                m.d.comb += getattr(self, c).eq(getattr(pl.stages[stage], c))
        return m
