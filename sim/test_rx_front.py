"""RX front half: random frames (VLAN or not, IHL, UDP or TCP, compressed payload
lengths, the shim's L and magic byte, frames held in full or not, cut short, header
not ok, the engine disabled), each held (``held``, ``done``) with the matcher's result
arriving around that time, the held beats read through a model of the hold's memory at
``f_addr``; the other stages answer as the engine's do after random delays (the unit
and the Realigner take their start, the HeaderRestore is done, the back half releases
the slot and ends PASS, the feed finishes), under every idle (those delays) x
backpressure (the unit's and the Realigner's ready) pattern. Per frame, in order: the
decision (decompress iff the header is ok, the engine enabled, a frame held in full
holds its IP packet, the magic byte is that of a version the frame's mask accepts: 0xC5
(version 1), 0xC6 (version 2, with k in 1..16 and 4 + 2 ceil((L div 4) / 8) + L mod 4
<= |C|) or 0xC7 (version 3: version 2's rules with the 8-byte shim, and the check stage's
answer, a random bit here, given after a random delay), and P < L <= MAX_FRAME_BYTES - P), the
pending slot (restored IP total length and UDP length, output beats, the last lane),
the feed's registers, the unit's (n, r, v2, k) and the Realigner's (insert, length), and
the counters (per version too), all worked out here from the frame."""

import random

import cocotb
from cocotb.triggers import ReadOnly, ReadWrite, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, Streams, pause_generator, port_sink, start
from inceptionn.sim.headers import header_layout
from inceptionn.sim.payloads import pack, unpack
from inceptionn.sim.test_rx_feed import feed_load

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "rx_front"
FRAMES = 60
MAGIC = 0xC5
MAGIC_V2 = 0xC6
MAGIC_V3 = 0xC7


def _v2_fits(ln, plen, shim=4):
    """Version 2's (version 3's: ``shim`` 8) length bound: the fewest bytes that can
    restore L fit in |C|."""
    return shim + 2 * -(-(ln // 4) // 8) + ln % 4 <= plen
MAX_FRAME = 9216
# The strobes the other stages drive, by event name: their ports on the front half.
_PORTS = {"done": "hold__done", "match_done": "matcher__done", "restore_done": "restore__done",
          "release": "back__release", "end_live": "back__end_live", "fin_done": "feed__fin_done"}


def _design():
    from inceptionn.hw.rx.front import Front
    return Front()


def _frames(seed):
    rng = random.Random(seed)
    out = []
    for n in range(FRAMES):
        vlan, ihl, udp, l3, l4, p = header_layout(rng)
        plen = rng.choice((rng.randint(4, 60), rng.randint(4, 3000)))
        magic = rng.choice((MAGIC,) * 6 + (MAGIC_V2,) * 6 + (MAGIC_V3,) * 6
                           + (rng.getrandbits(8),) * 3)
        shim = 8 if magic == MAGIC_V3 else 4
        top = max((L for L in range(16 * plen + 64) if _v2_fits(L, plen, shim)), default=0)
        ln = rng.choice((plen + rng.randint(1, 4 * plen),) * 4 +
                        (rng.randint(0, plen), MAX_FRAME - p + rng.randint(0, 3),
                         top + rng.randint(-2, 2), top + rng.randint(-40, 40)))
        ln = max(ln, 0)
        pad = rng.choice((0, 0, 0, rng.randint(1, 20)))
        short = int(rng.random() < 0.1)           # the IP length claims 4 more bytes
        flen = p + plen + pad
        frame = bytearray(rng.getrandbits(8) for _ in range(flen))
        kb = rng.choice((rng.randint(1, 16),) * 6 + (0, 17, 126, 255, rng.getrandbits(8)))
        frame[p:p + 4] = bytes((ln >> 8 & 0xFF, ln & 0xFF, magic, kb))
        total = p - l3 + plen + 4 * short
        info = {"header_ok": int(rng.random() < 0.9), "vlan": vlan, "udp": udp,
                "l3": l3, "ihl": ihl, "l4": l4, "payload_offset": p, "payload_len": plen,
                "ip_total_len": total, "min_frame_len": l3 + total}
        nbeats = (flen + 31) // 32
        nheld = min(nbeats, 5)
        held_last = int(nbeats <= 5)
        kc = flen - 32 * (nheld - 1) if held_last else 32
        user = int(held_last and rng.random() < 0.2)
        held = {"nheld": nheld, "hsel": (1 << nheld) & 0x1F, "last": held_last, "kc": kc,
                "keep": (1 << kc) - 1, "user": user, "len": 32 * (nheld - 1) + kc,
                "en": int(rng.random() < 0.9), "versions": rng.choice((7, 7, 7, 4, 3, 1, 2, 0))}
        ck = int(rng.random() < 0.8)              # the check stage's answer
        acc = {MAGIC: 1, MAGIC_V2: 2, MAGIC_V3: 4}.get(magic, 0) & held["versions"]
        rules = 1 <= kb <= 16 and _v2_fits(ln, plen, 8 if magic == MAGIC_V3 else 4)
        shim_ok = bool(acc) and (magic == MAGIC or (rules and (magic == MAGIC_V2 or ck)))
        common = (info["header_ok"] and held["en"] and plen < ln <= MAX_FRAME - p
                  and (not held_last or held["len"] >= l3 + total))
        ok = (info["header_ok"] and held["en"] and shim_ok and plen < ln <= MAX_FRAME - p
              and (not held_last or held["len"] >= l3 + total))
        out.append({"frame": bytes(frame), "info": info, "held": held, "ok": int(ok),
                    "p": p, "plen": plen, "ln": ln & 0xFFFF, "vlan": vlan, "ihl": ihl,
                    "udp": udp, "total": total, "user": user, "v2": int(magic in (MAGIC_V2, MAGIC_V3)),
                    "v3": int(magic == MAGIC_V3), "k": kb & 31, "ck": ck,
                    "refused": int(bool(common and acc and magic == MAGIC_V3 and rules and not ck))})
    return out


def _want_pend(f, bank):
    p, ln, h = f["p"], f["ln"], f["held"]
    s = p + 31 + ln
    return {"bank": bank, "bypass": 1 - f["ok"], "nheld": h["nheld"], "nh1": int(h["nheld"] == 1),
            "held_last": h["last"], "held_kc": h["kc"], "held_keep": h["keep"],
            "held_user": h["user"], "p": p, "vlan": f["vlan"], "ihl": f["ihl"], "udp": f["udp"],
            "total": (f["total"] + ln - f["plen"]) & 0xFFFF, "udp_len": (ln + 8) & 0xFFFF,
            "left": (s >> 5) & 0x1FF, "one": int(s >> 5 == 1), "end_lane": s & 31}


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def front(dut, idle, backpressure):
    from inceptionn.hw.decompression_unit import StartLayout
    from inceptionn.hw.packet_matcher import MatchInfo
    from inceptionn.hw.realigner import realigner_cfg
    from inceptionn.hw.rx.layouts import FeedStart, HeldFrame, Pending
    await start(dut, {"hold__done": 0, "hold__head": 1, "matcher__done": 0, "feed__ra_step": 0, "feed__fin_done": 0,
                      "back__end_live": 0, "start__ready": 0, "rl_cfg__ready": 0,
                      "restore__done": 0, "back__release": 0, "check__done": 0, "check__ok": 0})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    frames = _frames(seed)
    assert {f["ok"] for f in frames} == {0, 1}
    idl = pause_generator(idle, 10 + seed)
    pends, starts, cfgs = [], [], []
    # The unit's start and the Realigner's cfg: streams the front half offers, taken
    # under the backpressure pattern; both ticked by this bench's clock loop.
    sinks = [port_sink(dut, "start", pause=pause_generator(backpressure, 20 + seed),
                       on_item=lambda p: starts.append(unpack(StartLayout, p))),
             port_sink(dut, "rl_cfg", pause=pause_generator(backpressure, 27 + seed),
                       on_item=lambda p: cfgs.append(unpack(realigner_cfg(), p)))]

    def later(lo=0):
        d = lo
        while next(idl):
            d += 1
        return d

    events = {}                     # cycle -> [strobe names] driven that cycle

    def at(c, name):
        events.setdefault(c, []).append(name)

    cur = 0                         # the frame being held / decided
    bank = 0
    cyc = 0
    at(1 + later(1), "done")
    at(1 + later(0), "match_done")
    busy = rel = False              # the pending slot is written / its release is due
    head = 1
    acted = []                      # (frame, feed payload) per ACT, in order
    took = None                     # the frame whose pending slot was loaded last clock
    ck_done = 0
    while len(acted) < FRAMES or took is not None:
        cyc += 1
        assert cyc < 200 * FRAMES, f"stuck at frame {cur} ({len(acted)} acted)"
        f = frames[min(cur, FRAMES - 1)]
        now = events.pop(cyc, [])
        dut.hold__held.value = pack(HeldFrame, dict(f["held"], bank=bank))
        dut.matcher__info.value = pack(MatchInfo, f["info"])
        dut.hold__head.value = head
        for s in ("done", "match_done", "restore_done", "release", "end_live", "fin_done"):
            getattr(dut, _PORTS[s]).value = int(s in now)
        # The check stage: done (a level) some clocks after its go, until the next go.
        if "ck_done" in now:
            ck_done = 1
        dut.check__done.value = ck_done
        dut.check__ok.value = f["ck"]
        if "done" in now:
            head = 0
        await ReadWrite()           # f_addr, a register, as it is after the edge
        addr = int(dut.hold__f_addr.value)
        beat = f["frame"][32 * (addr & 7):32 * (addr & 7) + 32]
        dut.hold__f_data.value = int.from_bytes(beat.ljust(32, b"\0"), "little")
        for sink in sinks:
            sink.before()
        await ReadOnly()
        if took is not None:
            pends.append(unpack(Pending, int(dut.back__pend.value)))
            took = None
        if dut.restore__start.value:
            at(cyc + later(1), "restore_done")
        if dut.check__go.value:
            ck_done = 0
            at(cyc + later(1), "ck_done")
        if dut.hold__take.value:
            assert dut.feed__start__valid.value, "take without the feed's load"
            acted.append(unpack(FeedStart, int(dut.feed__start__payload.value)))
            took = cur
            ok = acted[-1]["go"]            # (checked against the model at the end)
            # The back half releases the slot once its header is final; a bypassed frame
            # not held in full ends with its live rest; a decompressed one's input ends.
            if not ok and not unpack(HeldFrame, int(dut.hold__held.value))["last"]:
                at(cyc + later(2), "end_live")
            elif ok:
                at(cyc + later(2), "fin_done")
            bank ^= 1
            assert not busy, "the pending slot was written while busy"
            busy = True
        if "release" in now:
            busy = rel = False
        if dut.back__pend_ready.value and busy and not rel:
            assert not dut.hold__take.value
            at(cyc + later(1), "release")
            rel = True
        if dut.hold__restart.value:
            cur += 1
            head = 1
            if cur < FRAMES:
                at(cyc + later(2), "done")
                at(cyc + later(1), "match_done")
        await RisingEdge(dut.clk)
        for sink in sinks:
            sink.after()
    # the last frame's start and cfg may still wait for their readies
    for sink in sinks:
        sink.pause = pause_generator("none")
    await Streams(dut.clk, *sinks).run(3)
    # per frame, in order
    comp = [f for f in frames if f["ok"]]
    for n, (f, ld, pd) in enumerate(zip(frames, acted, pends)):
        assert ld["go"] == f["ok"], f"frame {n}: decision {ld['go']}, want {f['ok']} ({f['info']}, {f['held']}, ln {f['ln']}, shim {f['frame'][f['p']:f['p'] + 4].hex()})"
        want = _want_pend(f, n & 1)
        for k, v in want.items():
            if f["ok"] or k not in ("total", "udp_len", "left", "one", "end_lane"):
                assert pd[k] == v, f"frame {n}: pend.{k} {pd[k]}, want {v}"
        if f["ok"]:
            shim = 8 if f["v3"] else 4            # the stream starts after the shim
            wl, _, _ = feed_load({"p": f["p"] + shim - 4, "rem": f["plen"] - shim,
                                  "frame": f["frame"], "user": f["user"]})
            for k, v in wl.items():
                assert ld[k] == v, f"frame {n}: feed.{k} {ld[k]}, want {v}"
    assert len(starts) == len(cfgs) == len(comp), (len(starts), len(cfgs), len(comp))
    for n, f in enumerate(comp):
        assert starts[n] == {"n": f["ln"] >> 2, "r": f["ln"] & 3, "v2": f["v2"], "k": f["k"]}, \
            f"comp frame {n}: start"
        assert cfgs[n] == {"skip": 0, "insert": f["p"] % 32, "length": f["ln"] + f["p"] % 32}
    await ReadOnly()
    assert int(dut.decompressed.value) == len(comp)
    assert int(dut.bypassed.value) == FRAMES - len(comp)
    assert int(dut.payload_bytes_in.value) == sum(f["plen"] for f in comp)
    assert int(dut.payload_bytes_out.value) == sum(f["ln"] for f in comp)
    assert int(dut.version3.value) == sum(f["v3"] for f in comp)
    assert int(dut.version2.value) == sum(f["v2"] - f["v3"] for f in comp)
    assert int(dut.version1.value) == sum(1 - f["v2"] for f in comp)
    assert int(dut.check_failed.value) == sum(f["refused"] for f in frames)
    assert 0 < int(dut.version1.value) and 0 < int(dut.version2.value) + int(dut.version3.value)


def test_rx_front_frames_cover_every_version():
    """Over the matrix's runs, frames of each version are decompressed, and version-3
    frames are refused by their check word alone."""
    frames = [f for seed in range(len(PAUSE_MODES) ** 2) for f in _frames(seed)]
    for v in (1, 2, 3):
        assert sum(f["ok"] and (f["v2"] + f["v3"] + 1) == v for f in frames) >= 5, v
    assert sum(f["refused"] for f in frames) >= 3


def test_rx_front():
    harness.run(_design, DUT, "inceptionn.sim.test_rx_front")
