"""Payloads of the streams between the TX engine's stages, and the stages' store ports."""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..header_rewrite import PATCHES, Patch
from ..packet_matcher import MatchInfo
from ..wire import BEAT_BITS

__all__ = ["FrameCfg", "CodecK", "HdrBounds", "FrameMode", "FrontResult", "HdrSums",
           "CompRegion", "Desc", "DEFAULT_AW", "front_result", "comp_region", "desc",
           "MODE_DROP", "MODE_PASS", "MODE_COMP", "ShimInfo", "TailInfo", "FedGroup",
           "CLenInfo", "MatchInfo", "store_write", "store_read", "CuCodec", "Decoded", "CheckFields"]

# ingress -> dispatcher, per frame. ok: enabled, k in the codec's range and the version
# port valid, decided at the ingress so the dispatcher reads one bit. v2: the bounded
# codec (wire format versions 2 and 3); v3: version 3 (the shim's check word).
FrameCfg = data.StructLayout({"ok": 1, "k": 7, "v2": 1, "v3": 1})
# dispatcher -> group former -> CompressionUnit, per compressed frame: its codec.
CodecK = data.StructLayout({"k": 7, "v2": 1})

# group former -> CompressionUnit: the frame's k and codec, held with each group (the
# unit's own ports ``k``, ``v2``).
CuCodec = wiring.Signature({"k": Out(7), "v2": Out(1)})

# CompressionUnit -> feeder: the decoded payload D, one group per ``d_valid`` (the
# unit's own ports; see hw/compression_unit.py).
Decoded = wiring.Signature({"d_valid": Out(1), "d_first": Out(1), "d_last": Out(1),
                            "d_data": Out(256), "d_mask": Out(32)})

# The header checksums' byte-range bounds that are not MatchInfo fields already, summed
# by the dispatcher so that no adder sits in front of the front stage's masks.
HdrBounds = data.StructLayout({n: 8 for n in ("ip4", "ip10", "ip12", "ip20", "l4c", "l4c2")})

# dispatcher -> front: what the front stage knows of a frame when it starts it.
FrameMode = data.StructLayout({
    "info": MatchInfo,
    "compress": 1,        # header parsed, engine enabled, k valid: run the compressor
    "k": 7,
    "v2": 1,              # the bounded codec (wire format version 2 or 3)
    "v3": 1,              # version 3: a check word after the shim
    "bounds": HdrBounds,
})

# Ring pointers in the layouts below are ``aw + 1`` bits (a FrameStore's address and its
# wrap bit), ``aw`` from the engine's store depth; the module-level layouts are those of
# the default depth (1024 beats), the functions build them for any depth.
DEFAULT_AW = 10


def front_result(aw):
    """front -> finisher, at the frame's end."""
    return data.StructLayout({
        "info": MatchInfo,
        "compress": 1,
        "v2": 1,
        "v3": 1,
        "k": 7,
        "frame_len": 17,
        "stored": 9,          # beats written to the orig store (<= 288)
        "orig_start": aw + 1,
        "user": 1,
        "drop": 1,
    })


FrontResult = front_result(DEFAULT_AW)

# front -> finisher: the IP header (rest) and L4 header word sums, per frame.
HdrSums = data.StructLayout({"ip": 16, "l4": 16})

# front -> finisher, per frame: the header bytes version 3's check word covers, as they
# appear in the frame (golden.shim_check): IP source and destination (8), IP ID (2), the
# L4 ports (4) and the 4 bytes after them (the TCP sequence number; unused for UDP).
CheckFields = data.StructLayout({"addrs": 64, "ip_id": 16, "ports": 32, "seq": 32})

def comp_region(aw):
    """comp writer -> finisher: a compressed frame's region in the comp ring."""
    return data.StructLayout({"start": aw + 1, "next": aw + 1})


def desc(aw):
    """finisher -> egress, per frame."""
    return data.StructLayout({
        "mode": 2,            # 0: drop, 1: pass (bypass / fall-back), 2: compressed
        "user": 1,
        "orig_start": aw + 1,
        "orig_next": aw + 1,
        "has_comp": 1,
        "comp_start": aw + 1,
        "comp_next": aw + 1,
        "nbeats": 9,          # output beats
        "last_bytes": 6,      # valid bytes of the last output beat, 1..32
        "pb": 3,              # compressed: beat holding byte P
        "plane": 5,           # compressed: P mod 32
        "patches": data.ArrayLayout(Patch, PATCHES),
    })


CompRegion = comp_region(DEFAULT_AW)
Desc = desc(DEFAULT_AW)

MODE_DROP, MODE_PASS, MODE_COMP = 0, 1, 2

# dispatcher -> feeder: prefix and shim. The shim is kept rotated by plane mod 4, so that
# the prefix vector (placeholder bytes below the plane are never sent) is that word
# repeated: an AlignmentUnit fill vector.
# v3: version 3's 4 check-word bytes follow the shim (placeholders here, written by
# the egress's patches once |C| is known).
ShimInfo = data.StructLayout({"plane": 5, "shim_rot": 32, "v3": 1})
# group former -> feeder: the r = L mod 4 raw bytes; sep: they follow the last group as a
# vector of their own (a final beat of fewer than 4 bytes), else they ride in the last
# group (CompressionUnit) and ``tail`` is not used (the group carries them).
TailInfo = data.StructLayout({"tail": 24, "r": 2, "sep": 1})
# A CompressionUnit group as the feeder needs it (the decoded payload for the D checksum
# leaves the CompressionUnit on its side port).
FedGroup = data.StructLayout({"data": 272, "length": 6, "last": 1})
# feeder -> finisher, per compressed frame: |C| and the 16-bit word sum of a separate
# tail's bytes (the D checksum's last part, added to the groups' sum by the finisher).
CLenInfo = data.StructLayout({"clen": 17, "tsum": 17})


def store_write(aw):
    """A FrameStore's write side as its writer sees it."""
    return wiring.Signature({"w_en": Out(1), "w_data": Out(BEAT_BITS),
                             "w_room": In(1), "wp": In(aw + 1)})


def store_read(aw):
    """A FrameStore's read and release side as its reader sees it."""
    return wiring.Signature({"r_en": Out(1), "r_addr": Out(aw), "r_data": In(BEAT_BITS),
                             "rel_en": Out(1), "rel": Out(aw + 1)})
