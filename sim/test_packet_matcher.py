"""PacketMatcher against golden.packet_matcher on the spec's eligibility cases."""

import random

import cocotb

from inceptionn.rtl import harness
from inceptionn.sim.axis import StreamSink, StreamSource, Streams, frame_to_beats, pause_generator, start

DUT = "packet_matcher"


def _design():
    from inceptionn.hw.packet_matcher import PacketMatcher
    return PacketMatcher()


def _fields(layout, value):
    return {name: (value >> field.offset) & ((1 << field.width) - 1) for name, field in layout}


def _cases():
    """(frame, note) covering every eligibility rule of spec section 4."""
    import numpy as np
    from inceptionn.rtl import frame_builders as F
    pl = F.float_payload(np.linspace(-1e-3, 1e-3, 16))
    cases = [
        (F.udp_frame(pl), "udp"),
        (F.udp_frame(pl, checksum=False), "udp csum 0"),
        (F.tcp_frame(pl), "tcp"),
        (F.tcp_frame(pl, tcp_options=[("MSS", 1460), ("NOP", None), ("NOP", None),
                                      ("Timestamp", (1, 2))]), "tcp opts"),
        (F.tcp_frame(pl, tcp_options=[("NOP", None)] * 40), "tcp doff 15"),
        (F.udp_frame(pl, vlan=5), "vlan udp"),
        (F.tcp_frame(pl, vlan=7, ip_options=b"\x01" * 40,
                     tcp_options=[("NOP", None)] * 40), "vlan ihl 15 doff 15: P = 138"),
        (F.udp_frame(pl, ip_options=b"\x94\x04\x00\x00"), "ip options"),
        (F.udp_frame(pl, pad_to=200), "padding"),
        (F.udp_frame(b"abcd", pad_to=60), "L = 4, padded"),
        (F.udp_frame(b"abc", pad_to=60), "L = 3"),
        (F.udp_frame(b""), "L = 0"),
        (F.tcp_frame(b"abcd"), "tcp L = 4"),
        (F.fragment_frame(pl), "MF"),
        (F.fragment_frame(pl, more_fragments=False, offset=8), "frag offset"),
        (F.arp_frame(), "arp"),
        (F.ipv6_frame(pl), "ipv6"),
        (F.ipv4_frame(pl), "gre"),
    ]
    for tos in (0x00, 0x29, 0x2A, 0x2B, 0x2C, 0x24, 0xB8):
        cases.append((F.udp_frame(pl, tos=tos), f"tos {tos:#x}"))
    base = bytearray(F.udp_frame(pl))
    for n in (1, 13, 14, 20, 33, 34, 41, 42, 45, 64, 65, len(base) - 1):
        cases.append((bytes(base[:n]), f"truncated to {n}"))
    bad = []
    for off, val, note in [(14, 0x55, "ihl 5 version 5"), (14, 0x44, "ihl 4"),
                           (16, 0xFF, "total length > frame"), (17, 0x10, "total < headers"),
                           (38, 0x00, "udp length mismatch"), (12, 0x86, "ethertype 0x86xx"),
                           (23, 0x01, "icmp")]:
        f = bytearray(base)
        f[off] = val
        bad.append((bytes(f), note))
    tcp = bytearray(F.tcp_frame(pl))
    tcp[46] = 0x40
    bad.append((bytes(tcp), "tcp doff 4"))
    tcp = bytearray(F.tcp_frame(pl))
    tcp[46] = 0xF0
    bad.append((bytes(tcp), "tcp doff 15 > l4 length"))
    # DF set is still eligible.
    df = bytearray(base)
    df[20] = 0x40
    bad.append((bytes(df), "DF"))
    qinq = bytearray(F.udp_frame(pl, vlan=3))
    qinq[16:18] = b"\x81\x00"
    bad.append((bytes(qinq), "two VLAN tags"))
    rng = random.Random(1)
    rand = [(F.raw_frame(rng.randrange(1, 100), i), "random") for i in range(20)]
    return cases + bad + rand


@cocotb.test()
@cocotb.parametrize(dscp=[10, 0, 11], gaps=[False, True])
async def matcher_vs_golden(dut, dscp, gaps):
    from inceptionn import golden
    from inceptionn.hw.packet_matcher import MatchInfo
    await start(dut, {"valid": 0, "dscp": dscp})
    cases = _cases()

    def put(beat):
        data, keep, last, _ = beat
        dut.beat.value = data | (keep << 256) | (last << 288)
    # The matcher sniffs the bus: no ready, every beat offered is taken; its answer is
    # a strobe (done) with its info.
    src = StreamSource(dut.clk, dut.valid, None, put,
                       pause=pause_generator("random" if gaps else "none", dscp))
    sink = StreamSink(dut.clk, dut.done, None, lambda: _fields(MatchInfo, int(dut.info.value)))
    results = sink.items
    streams = Streams(dut.clk, src, sink)
    src.load(b for frame, _ in cases for b in frame_to_beats(frame))
    await streams.run_until(lambda: src.done, 100_000, lambda: f"{src.sent} beats sent")
    await streams.run(10)
    assert len(results) == len(cases), f"{len(results)} results for {len(cases)} frames"
    n_eligible = 0
    for (frame, note), r in zip(cases, results):
        want = golden.packet_matcher(frame, dscp)
        got = bool(r["header_ok"]) and len(frame) >= r["min_frame_len"]
        assert got == (want is not None), f"{note}: eligible {got}, golden {want}"
        if want is None:
            continue
        n_eligible += 1
        for name in ("vlan", "l3", "ihl", "l4", "proto", "payload_offset", "payload_len",
                     "ip_total_len"):
            assert r[name] == int(getattr(want, name)), f"{note}: {name} {r[name]} != {getattr(want, name)}"
        assert r["min_frame_len"] == want.l3 + want.ip_total_len
        assert r["udp"] == (want.proto == 17)
        assert r["tos"] == frame[want.l3 + 1]
        csum_off = want.l4 + (6 if want.proto == 17 else 16)
        assert r["l4_csum"] == int.from_bytes(frame[csum_off:csum_off + 2], "big"), note
    assert n_eligible >= (14 if dscp == 10 else 1)


def test_packet_matcher():
    harness.run(_design, DUT, "inceptionn.sim.test_packet_matcher")
