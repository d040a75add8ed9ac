"""Payloads of the streams and register interfaces between the RX engine's stages."""

from amaranth import Shape, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import AxisBeat
from ..header_restore import HEADER_BEATS
from ..packet_matcher import MatchInfo
from ..wire import BEAT_BYTES, MAX_FRAME_BYTES

__all__ = ["HOLD_BEATS", "BANK_BEATS", "InBeat", "HeldFrame", "FeedStart", "Pending",
           "FinSlot", "OutCtl", "HoldFront", "HoldFeed", "HoldBack", "HoldEgress", "HoldSniff",
           "HoldRestore", "MatchResult", "FrontRestore", "RestoreCsum", "FrontFeed",
           "FrontBack", "FrontEgress", "FeedBack", "HoldCheck", "FrontCheck"]

HOLD_BEATS = 5                 # P <= 138, so the shim (P..P+3) ends within beat 4
BANK_BEATS = 8                 # beat memory: two banks of 8 entries (HOLD_BEATS used)

_NHELD = Shape.cast(range(HOLD_BEATS + 1)).width
_LEFT = Shape.cast(range(MAX_FRAME_BYTES // BEAT_BYTES + 2)).width

# ingress -> hold: an input beat with its valid-byte count (counted before the input
# slice, so that the feed path does not count tkeep bits) and the VLAN test of bytes
# 12-13 (for the HeaderRestore, beat 0). The first four fields are an AxisBeat's.
InBeat = data.StructLayout({
    "data": 8 * BEAT_BYTES,
    "keep": BEAT_BYTES,
    "last": 1,
    "user": 1,
    "kc": 6,
    "vlan": 1,                 # bytes 12-13 are 0x8100
})

# hold -> front: the frame now held (registers of the hold stage).
HeldFrame = data.StructLayout({
    "nheld": _NHELD,           # beats held
    "hsel": HOLD_BEATS,        # nheld one-hot: the hold beat written next
    "last": 1,                 # the frame ended within the held beats
    "kc": 6,                   # byte count of that last beat
    "keep": BEAT_BYTES,
    "user": 1,
    "len": Shape.cast(range(HOLD_BEATS * BEAT_BYTES + 1)).width,   # bytes held
    "en": 1,                   # ``enable``, sampled on the frame's first beat
    "versions": 3,             # ``versions`` (accepted wire versions, bit v - 1), likewise
    "bank": 1,                 # the beat memory's bank the front half writes
})

# front -> feed, loaded in ACT (every frame; a bypassed one never starts the feed):
# the feed's registers, all worked out in CHECK.
FeedStart = data.StructLayout({
    "go": 1,                   # decompress: FEED starts
    "idx": _NHELD,             # held beat of the stream's first byte
    "first": 5,                # ... and its lane
    "rem": 14,                 # compressed bytes after the shim
    "live": 1,                 # the stream's first beat is not a held one
    "zero": 1,                 # no compressed bytes
    "big": 1,                  # more than a beat of them
    "rm33": signed(15),        # rem - 33
    "hcur": 6,                 # bytes the first held beat offers
    "hend": 1,                 # ... it is the frame's last
    "hv": HOLD_BEATS,          # per held beat from the first: it ends the stream
    "user": 1,                 # the held frame's tuser (if it ended there)
})

# front -> back (and feed, restore, egress): the pending-frame slot, registers loaded in
# ACT, so that the back half loads them as plain register copies.
Pending = data.StructLayout({
    "bank": 1,                 # the beat memory's bank holding its beats
    "bypass": 1,
    "nheld": _NHELD,
    "nh1": 1,                  # nheld == 1
    "held_last": 1,
    "held_kc": 6,
    "held_keep": BEAT_BYTES,
    "held_user": 1,
    "p": 8,                    # payload offset P
    "vlan": 1,
    "ihl": 4,
    "udp": 1,
    "total": 16,               # restored IP total length
    "udp_len": 16,             # restored UDP length
    "left": _LEFT,             # output beats of a decompressed frame
    "one": 1,                  # ... exactly one
    "end_lane": 5,             # (P + L - 1) mod 32: the last beat's last lane
})

# feed -> back: the end-of-input slot of a decompressed frame (the input's tuser and a
# cut-short input are only known once the input frame has ended). Registers.
FinSlot = data.StructLayout({"valid": 1, "bad": 1, "trunc": 1})

# back -> egress: one output beat's sources and flags. The handshake is the output's.
OutCtl = data.StructLayout({
    "live": 1,                 # a live bypass beat: ``beat`` as it is
    "held": 1,                 # a held bypass beat
    "hdr": 1,                  # a header beat of a decompressed frame
    "first": 1,                # the data beat holding byte P
    "low": BEAT_BYTES,         # lanes below P mod 32
    "idx": 3,                  # held / header beat (memory address in the bank)
    "bank": 1,
    "tc": 2,                   # beat 0 now, without / with VLAN tag
    "umask": BEAT_BYTES // 4,  # the UDP length's lane (one-hot t)
    "unow": 1,                 # ... and it is in the beat now out
    "last": 1,
    "last_keep": BEAT_BYTES,
    "held_user": 1,
    "bad": 1,                  # the realigned stream's error or a cut-short input
    "fin_bad": 1,              # the input's tuser
    "beat": AxisBeat,          # the live input beat
    "d": 8 * BEAT_BYTES,       # the realigned payload beat
})


# The interfaces between the stages, each named by its two ends and seen from the first
# (the stage that holds it as ``Out``; the other holds it as ``In``). The engine connects
# each with ``wiring.connect`` (hw/pipeline.py), which is also what draws the diagram.
# Members named as a shared block names its own ports (PacketMatcher, HeaderRestore)
# connect to that block's ports directly.

# hold -> front: the frame now held, the shim's beat read through the feed read port;
# back: take (ACT), restart (HEAD again).
HoldFront = wiring.Signature({
    "held": Out(HeldFrame),
    "done": Out(1),            # strobe: the frame is held
    "head": Out(1),            # HEAD
    "take": In(1),
    "restart": In(1),
    "f_addr": In(4),           # the beat memory's feed read port
    "f_data": Out(8 * BEAT_BYTES),
})

# hold -> feed: the live input beat and the held beats (the feed read port, its address
# the front half's); back: the live input taken (FEED), DRAIN.
HoldFeed = wiring.Signature({
    "beat": Out(InBeat),
    "beat_valid": Out(1),
    "f_data": Out(8 * BEAT_BYTES),
    "live_take": In(1),
    "drain": In(1),
})

# hold -> back: the live input beat; back: taken (PASS).
HoldBack = wiring.Signature({
    "beat": Out(InBeat),
    "beat_valid": Out(1),
    "pass_take": In(1),
})

# hold -> egress: the beat memory's output read port.
HoldEgress = wiring.Signature({
    "hdr_addr": In(4),
    "hdr_data": Out(8 * BEAT_BYTES),
})

# hold -> check: each held beat as it is written in HEAD (a strobe), with its one-hot
# index among the held beats.
HoldCheck = wiring.Signature({
    "c_beat": Out(8 * BEAT_BYTES),
    "c_valid": Out(1),
    "c_sel": Out(HOLD_BEATS),
})

# front -> check: start (a strobe in MATCH) with the matcher's result; back: done (a
# level until the next start) and whether the check word matched.
FrontCheck = wiring.Signature({
    "go": Out(1),
    "info": Out(MatchInfo),
    "done": In(1),
    "ok": In(1),
})

# hold -> PacketMatcher: every taken beat.
HoldSniff = wiring.Signature({
    "beat": Out(AxisBeat),
    "valid": Out(1),
})

# hold -> HeaderRestore: the header beats as they are written.
HoldRestore = wiring.Signature({
    "beat": Out(8 * BEAT_BYTES),
    "beat_valid": Out(1),
    "beat_sel": Out(HEADER_BEATS),   # one-hot: which of the frame's first beats
    "beat_vlan": Out(1),
})

# PacketMatcher -> front: its per-frame result.
MatchResult = wiring.Signature({
    "done": Out(1),
    "info": Out(MatchInfo),
})

# front -> HeaderRestore: start (a strobe) with the restored IP total length; back: done.
FrontRestore = wiring.Signature({
    "start": Out(1),
    "ip_total": Out(16),
    "done": In(1),
})

# HeaderRestore -> egress: the restored IP checksum.
RestoreCsum = wiring.Signature({
    "csum": Out(16),
})

# front -> feed: the feed's load (ACT) and the pending frame; back: the read address the
# feed moves on, and the end of its input (FIN).
FrontFeed = wiring.Signature({
    "start": Out(stream.Signature(FeedStart)),
    "pend": Out(Pending),
    "ra_step": In(1),
    "ra_next": In(3),
    "fin_done": In(1),
})

# front -> back: the pending-frame slot, PASS; back: the slot released, PASS ends.
FrontBack = wiring.Signature({
    "pend": Out(Pending),
    "pend_ready": Out(1),
    "f_pass": Out(1),
    "release": In(1),
    "end_live": In(1),
})

# front -> egress: the restored lengths of the pending frame.
FrontEgress = wiring.Signature({
    "total": Out(16),
    "udp_len": Out(16),
})

# feed -> back: the end-of-input slot; back: it is read.
FeedBack = wiring.Signature({
    "fin": Out(FinSlot),
    "fin_clear": In(1),
})
