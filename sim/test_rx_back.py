"""RX back half: random pending frames (bypassed and held in full, bypassed with a live
rest, decompressed with random P, L and header layout) offered one at a time in the
pending slot as the front half offers them (a random delay before ``pend_ready``, freed
at ``release``), with the realigned words, the live input beats and the end-of-input
slot on their own idle patterns, under every idle x backpressure pattern on the output.
Per frame, in order, the output beats must be: the held beats, then the live ones up
to the input's last; or P >> 5 header beats, then (P + 31 + L) >> 5 - (P >> 5) payload
beats, the first with the lanes below P mod 32 from the header, the last with keep up
to lane (P + L - 1) mod 32 and only once the end-of-input slot is valid; the restored
fields' flags on the beats that hold them (worked out here from VLAN, IHL, UDP); the
slot released at the last held beat or the beat holding P; ``malformed`` counted."""

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, Streams, pause_generator, port_sink, port_source, start
from inceptionn.sim.headers import header_layout
from inceptionn.sim.payloads import pack, unpack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "rx_back"
FRAMES = 60


def _design():
    from inceptionn.hw.rx.back import Back
    return Back()


def _mask(n):
    return (1 << n) - 1


def _frames(seed):
    """Frames with, per output beat, the OutCtl fields that beat must have."""
    rng = random.Random(seed)
    out = []
    for n in range(FRAMES):
        kind = rng.choice(("held", "live", "comp", "comp"))
        bank = n & 1
        if kind in ("held", "live"):
            nh = rng.randint(1, 5) if kind == "held" else 5
            keep = _mask(rng.randint(1, 32)) if kind == "held" else _mask(32)
            user = rng.getrandbits(1) if kind == "held" else 0
            pend = {"bank": bank, "bypass": 1, "nheld": nh, "nh1": int(nh == 1),
                    "held_last": int(kind == "held"), "held_keep": keep, "held_user": user}
            beats = [{"live": 0, "held": 1, "hdr": 0, "first": 1, "low": 0, "idx": j,
                      "bank": bank, "tc": 0, "umask": 0, "unow": 0,
                      "last": int(kind == "held" and j == nh - 1), "last_keep": keep,
                      "held_user": user} for j in range(nh)]
            live = []
            if kind == "live":
                nlive = rng.randint(1, 6)
                live = [{"data": rng.getrandbits(256),
                         "keep": _mask(32) if j < nlive - 1 else _mask(rng.randint(1, 32)),
                         "last": int(j == nlive - 1),
                         "user": int(j == nlive - 1 and rng.random() < 0.3)}
                        for j in range(nlive)]
                beats += [{"live": 1, "held": 0, "beat": b} for b in live]
            out.append({"kind": kind, "pend": pend, "beats": beats, "words": [], "live": live})
            continue
        vlan, ihl, udp, l3, l4, p = header_layout(rng)
        ln = rng.randint(1, 300)
        left = (p + 31 + ln) >> 5
        hleft = p >> 5
        end_lane = (p + ln - 1) % 32
        ub = (l4 + 4) // 32              # the beat holding the UDP length
        pend = {"bank": bank, "bypass": 0, "p": p, "vlan": vlan, "ihl": ihl, "udp": udp,
                "left": left, "one": int(left == 1), "end_lane": end_lane,
                "nheld": rng.randint(2, 5), "held_last": rng.getrandbits(1)}
        words = [{"data": rng.getrandbits(256), "user": 0} for _ in range(left - hleft)]
        words[-1]["user"] = int(rng.random() < 0.2)
        fin = {"valid": 1, "bad": int(rng.random() < 0.2), "trunc": int(rng.random() < 0.2)}
        bad = words[-1]["user"] | fin["trunc"]
        beats = []
        for j in range(left):
            b = {"live": 0, "held": 0, "hdr": int(j < hleft), "first": int(j <= hleft),
                 "low": _mask(p % 32), "idx": min(j, hleft), "bank": bank,
                 "tc": (0b10 if vlan else 0b01) if j == 0 else 0,
                 "umask": (1 << ((l4 + 4) % 32 // 4)) if udp else 0,
                 # set as the header beat before it goes out; kept past the beat of P
                 "unow": int(ub == min(j, hleft) and (j == ub or j > hleft)),
                 "last": int(j == left - 1), "last_keep": _mask(end_lane + 1),
                 "held_user": 0}
            if j >= hleft:
                b["d"] = words[j - hleft]["data"]
            if j == left - 1:
                b.update(bad=bad, fin_bad=fin["bad"])
            beats.append(b)
        out.append({"kind": kind, "pend": pend, "beats": beats, "words": words, "live": [],
                    "fin": fin, "bad": bad})
    return out


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def back(dut, idle, backpressure):
    from inceptionn.hw.axis import AxisBeat
    from inceptionn.hw.rx.layouts import FinSlot, InBeat, OutCtl, Pending
    await start(dut, {"front__pend_ready": 0, "front__f_pass": 0, "feed__fin": 0, "hold__beat_valid": 0,
                      "words__valid": 0, "o__ready": 0})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    frames = _frames(seed)
    assert {f["kind"] for f in frames} == {"held", "live", "comp"}
    rng = random.Random(100 + seed)
    idl = {s: pause_generator(idle, 10 * k + seed) for k, s in enumerate(("w", "l", "f"))}
    want = [b for f in frames for b in f["beats"]]
    words = [w for f in frames for w in f["words"]]
    fins = [f["fin"] for f in frames if f["kind"] == "comp"]
    live = [b for f in frames for b in f["live"]]
    n_live = [0]                    # live beats of PASS frames released so far

    def live_pause():
        # A PASS frame's live beats come only once its slot is released.
        while True:
            yield src_l.sent >= n_live[0] or next(idl["l"])

    def put_live(b):
        dut.hold__beat.value = pack(InBeat, b)

    def pend_pause():
        # The slot's header is final a few clocks after the last one was released.
        while True:
            yield from [True] * rng.randint(0, 3)
            yield False

    def put_pend(f):
        dut.front__pend.value = pack(Pending, f["pend"])
    f_pass = [False]                # the bypassed frame's rest comes live

    def released(f):
        if f["kind"] == "live":     # PASS: the rest comes live
            f_pass[0] = True
            n_live[0] += len(f["live"])
    # The front half's pending slot: offered (pend_ready) until the back half releases
    # it, a strobe only for an offered slot.
    src_p = StreamSource(dut.clk, dut.front__pend_ready, dut.front__release, put_pend,
                         pend_pause(), on_taken=released, strobe="front__release")
    src_w = port_source(dut, "words", pause=idl["w"])
    src_l = StreamSource(dut.clk, dut.hold__beat_valid, dut.hold__pass_take, put_live, live_pause())
    got = []
    sink = port_sink(dut, "o", pause=pause_generator(backpressure, 50 + seed),
                     on_item=lambda p: got.append(unpack(OutCtl, p)))
    fin_v = [None]                  # the end-of-input slot's contents (no handshake:
                                    # its valid is a bit of the slot, read by fin_clear)

    def drive():
        dut.front__f_pass.value = int(f_pass[0])
        if fin_v[0] is None and fins and not next(idl["f"]):
            fin_v[0] = fins.pop(0)
        dut.feed__fin.value = pack(FinSlot, fin_v[0]) if fin_v[0] else 0

    def check():
        if dut.feed__fin_clear.value:
            assert fin_v[0] is not None, "read an empty end-of-input slot"
            fin_v[0] = None
        if dut.front__end_live.value:
            f_pass[0] = False
    # (the pending slot first: a release frees the live beats of the same clock's after)
    streams = Streams(dut.clk, src_p, src_w, src_l, sink, check=check)
    src_p.load(frames)
    src_w.load([pack(AxisBeat, w) for w in words])
    src_l.load(live)
    cycles = 0
    drive()
    while len(got) < len(want):
        cycles += 1
        assert cycles < 60 * len(want) + 500, f"stuck after {len(got)} of {len(want)} beats"
        await streams.tick()
        drive()
    for n, (g, w) in enumerate(zip(got, want)):
        for k, v in w.items():
            if k == "beat":
                assert unpack(AxisBeat, g["beat"]) == v, f"beat {n}: the live beat"
            else:
                assert g[k] == v, f"beat {n}: {k} {g[k]:#x}, want {v:#x} ({w})"
    assert src_w.sent == len(words) and src_l.sent == len(live) and fin_v[0] is None and not fins
    assert src_p.sent == FRAMES
    src_p.load(())                  # (released in the last clock: no frame is offered any more)
    dut.o__ready.value = 1
    for _ in range(10):
        await RisingEdge(dut.clk)
        await ReadOnly()
        assert not dut.o__valid.value, "an extra beat"
    assert int(dut.malformed.value) == sum(f.get("bad", 0) for f in frames)
    if idle == "none" and backpressure == "none":
        assert cycles <= len(want) + 4 * FRAMES, f"{len(want)} beats took {cycles} clocks"


def test_rx_back():
    harness.run(_design, DUT, "inceptionn.sim.test_rx_back")
