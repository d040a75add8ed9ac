"""RX egress: output beats of every kind (live bypass, held bypass, a decompressed frame's
header beats, the beat holding byte P, payload beats) with random header layouts (VLAN
or not, IHL 5..15, UDP or TCP), under every idle x backpressure pattern. The control
flags are set as the back half sets them; each output beat must be the header beat with
the restored IP total length, IP checksum and UDP length on the bytes where the frame
has them (worked out here from the header layout: l3 + 2, l3 + 10, l4 + 4), the
payload above lane P mod 32, keep / last / user from the flags; the handshake passes
straight through and ``frames_out`` counts last beats. A hand-worked frame (no VLAN,
IHL 5, UDP) checks the lanes directly."""

import random

import cocotb
from cocotb.triggers import ReadOnly

from inceptionn.rtl import harness
from inceptionn.sim.axis import PAUSE_MODES, StreamSource, Streams, pause_generator, port_sink, start
from inceptionn.sim.headers import header_layout
from inceptionn.sim.payloads import pack

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "rx_egress"
BEATS = 400
FULL = (1 << 32) - 1


def _design():
    from inceptionn.hw.rx.egress import Egress
    return Egress()


def _fields(vlan, ihl, udp):
    """Frame byte offset -> (field, byte: 1 high, 0 low) of the restored fields."""
    l3 = 18 if vlan else 14
    out = {l3 + 2: ("total", 1), l3 + 3: ("total", 0), l3 + 10: ("csum", 1),
           l3 + 11: ("csum", 0)}
    if udp:
        l4 = l3 + 4 * ihl
        out.update({l4 + 4: ("udp", 1), l4 + 5: ("udp", 0)})
    return out


def _case(rng):
    kind = rng.choice(("live", "held", "hdr", "first", "data"))
    vlan, ihl, udp, l3, l4, p = header_layout(rng)
    if kind == "hdr":
        idx = rng.randint(0, (p >> 5) - 1)
    elif kind == "first":
        idx = p >> 5
    else:
        idx = rng.randint(0, 4)
    vals = {"total": rng.getrandbits(16), "csum": rng.getrandbits(16), "udp": rng.getrandbits(16)}
    last = int(kind in ("held", "data") and rng.random() < 0.4)
    u = l4 + 4
    comp = kind in ("hdr", "first")
    ctl = {"live": int(kind == "live"), "held": int(kind == "held"), "hdr": int(kind == "hdr"),
           "first": int(kind == "first"),
           "low": sum(1 << k for k in range(32) if (p % 32) > k) if kind == "first" else 0,
           "idx": idx, "bank": rng.getrandbits(1),
           "tc": (0b10 if vlan else 0b01) if comp and idx == 0 else 0,
           "umask": (1 << ((u % 32) // 4)) if comp and udp else 0,
           "unow": int(comp and udp and idx == u // 32),
           "last": last, "last_keep": (1 << rng.randint(1, 32)) - 1,
           "held_user": rng.getrandbits(1), "bad": rng.getrandbits(1),
           "fin_bad": rng.getrandbits(1),
           "beat": {"data": rng.getrandbits(256), "keep": rng.choice((FULL, 0xFF)),
                    "last": rng.getrandbits(1), "user": rng.getrandbits(1)},
           "d": rng.getrandbits(256)}
    return {"kind": kind, "vlan": vlan, "ihl": ihl, "udp": udp, "p": p, "vals": vals,
            "hdr": rng.getrandbits(256), "ctl": ctl}


def _expected(c):
    ctl, kind = c["ctl"], c["kind"]
    if kind == "live":
        b = ctl["beat"]
        return b["data"], b["keep"], b["last"], b["user"]
    hdr = bytearray(c["hdr"].to_bytes(32, "little"))
    if kind in ("hdr", "first"):
        for pos, (field, hi) in _fields(c["vlan"], c["ihl"], c["udp"]).items():
            if pos // 32 == ctl["idx"]:
                hdr[pos % 32] = (c["vals"][field] >> (8 * hi)) & 0xFF
    d = ctl["d"].to_bytes(32, "little")
    if kind == "data":
        data = d
    elif kind == "first":
        lane = c["p"] % 32
        data = bytes(hdr[:lane]) + d[lane:]
    else:
        data = bytes(hdr)
    keep = ctl["last_keep"] if ctl["last"] else FULL
    user = ctl["last"] & (ctl["held_user"] if kind == "held" else ctl["bad"] | ctl["fin_bad"])
    return int.from_bytes(data, "little"), keep, ctl["last"], user


def _put(dut):
    """The ctl stream's item writer: a case's control word and the side inputs the back
    half and the hold give with it."""
    from inceptionn.hw.axis import AxisBeat
    from inceptionn.hw.rx.layouts import OutCtl

    def put(c):
        ctl = dict(c["ctl"], beat=pack(AxisBeat, c["ctl"].get("beat", {})))
        dut.ctl__payload.value = pack(OutCtl, ctl)
        dut.hold__hdr_data.value = c["hdr"]
        dut.front__total.value = c["vals"]["total"]
        dut.restore__csum.value = c["vals"]["csum"]
        dut.front__udp_len.value = c["vals"]["udp"]
    return put


def _check(dut, c, n):
    assert int(dut.hold__hdr_addr.value) == c["ctl"]["idx"] | (c["ctl"]["bank"] << 3), \
        f"beat {n}: memory address"
    data, keep, last, user = _expected(c)
    got = int(dut.o__payload.value)
    assert got & ((1 << 256) - 1) == data, f"beat {n} ({c['kind']}): data"
    assert (got >> 256) & FULL == keep, f"beat {n} ({c['kind']}): keep"
    assert (got >> 288) & 1 == last, f"beat {n} ({c['kind']}): last"
    assert (got >> 289) & 1 == user, f"beat {n} ({c['kind']}): user"
    return last


@cocotb.test()
async def hand_worked(dut):
    """No VLAN, IHL 5, UDP, P = 42: total length on lanes 16-17, IP checksum on 24-25
    (beat 0), UDP length on lanes 6-7 of beat 1 (the beat holding P: lanes below 10
    from the header, the payload above)."""
    await start(dut, {"ctl__valid": 0, "o__ready": 0})
    vals = {"total": 0x1234, "csum": 0xBEEF, "udp": 0x0A0B}
    hdr = bytes(range(32))
    d = bytes(range(100, 132))
    want0 = bytearray(hdr)
    want0[16:18] = b"\x12\x34"
    want0[24:26] = b"\xbe\xef"
    cases = [
        {"kind": "hdr", "vals": vals, "hdr": int.from_bytes(hdr, "little"),
         "ctl": {"hdr": 1, "idx": 0, "tc": 0b01, "umask": 1 << 1}, "want": bytes(want0)},
        {"kind": "first", "vals": vals, "hdr": int.from_bytes(hdr, "little"),
         "ctl": {"first": 1, "idx": 1, "low": (1 << 10) - 1, "umask": 1 << 1, "unow": 1,
                 "d": int.from_bytes(d, "little")},
         "want": hdr[:6] + b"\x0a\x0b" + hdr[8:10] + d[10:]}]
    src = StreamSource(dut.clk, dut.ctl__valid, dut.ctl__ready, _put(dut))
    sink = port_sink(dut, "o")

    def check():
        c = src.offered
        if c is not None:
            out = int(dut.o__payload.value).to_bytes(37, "little")
            assert out[:32] == c["want"], f"{c['kind']}: {out[:32].hex()}"
    streams = Streams(dut.clk, src, sink, check=check)
    src.load(cases)
    await streams.run_until(lambda: src.sent == len(cases), 10, lambda: "hand-worked beats")
    assert len(sink.items) == len(cases)


@cocotb.test()
@cocotb.parametrize(idle=PAUSE_MODES, backpressure=PAUSE_MODES)
async def beats(dut, idle, backpressure):
    await start(dut, {"ctl__valid": 0, "o__ready": 0})
    seed = PAUSE_MODES.index(idle) * 3 + PAUSE_MODES.index(backpressure)
    rng = random.Random(seed)
    cases = [_case(rng) for _ in range(BEATS)]
    assert {c["kind"] for c in cases} == {"live", "held", "hdr", "first", "data"}
    f0 = int(dut.frames_out.value)
    src = StreamSource(dut.clk, dut.ctl__valid, dut.ctl__ready, _put(dut),
                       pause=pause_generator(idle, 10 + seed))
    lasts = [0]
    sink = port_sink(dut, "o", pause=pause_generator(backpressure, 20 + seed),
                     on_item=lambda p: lasts.__setitem__(0, lasts[0] + (p >> 288 & 1)))

    def check():
        # The handshake passes straight through; an offered beat is checked on every
        # clock it waits, not only when taken.
        c = src.offered
        assert int(dut.o__valid.value) == (c is not None), f"beat {src.sent}: o valid"
        assert int(dut.ctl__ready.value) == int(dut.o__ready.value), f"beat {src.sent}: ctl ready"
        if c is not None:
            _check(dut, c, src.sent)
    streams = Streams(dut.clk, src, sink, check=check)
    src.load(cases)
    await streams.run_until(lambda: src.sent == BEATS, 100 * BEATS, lambda: f"{src.sent} beats taken")
    await ReadOnly()
    assert sum(_expected(c)[2] for c in cases) == lasts[0], "the lasts taken"
    assert int(dut.frames_out.value) - f0 == lasts[0], "frames_out"


def test_rx_egress():
    harness.run(_design, DUT, "inceptionn.sim.test_rx_egress")
