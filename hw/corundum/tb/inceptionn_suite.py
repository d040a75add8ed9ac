"""INCEPTIONN's gradient tests for Corundum's cocotb testbenches (cocotb 1.8, Icarus),
shared by the NetFPGA SUME core testbench (test_inceptionn_sume.py, 64-bit XGMII MAC)
and the template app testbench (test_inceptionn_app.py, the 512-bit mqnic_core_pcie_us
with AXI-stream MAC models). `inceptionn corundum` writes this file, its register offsets
filled in, next to both. Every expected frame comes from this project's golden model:

- gradient frames (TCP and UDP, DSCP 10, 64-byte, MSS-sized and jumbo, both codecs) sent
  by the driver leave the MAC as golden.tx_frame, byte for byte (at 512 bits the 64-byte
  ones take TX's short-frame engine);
- compressed frames arriving at the MAC reach the host as golden.rx_frame;
- through a loopback the host receives the golden roundtrip;
- a compressed frame cut short (malformed) is flagged bad, and foreign DSCP-10 traffic
  passes unchanged; untagged traffic is unchanged;
- the engine counters read through the app's registers agree with the frames seen.

The testbench gives the MAC side as two coroutines: `send(frame)` puts a frame into the
MAC's receive side, `recv()` returns the next frame the MAC transmitted (its FCS, where the
MAC model has one, already checked).
"""

import logging

import numpy as np

from cocotb.triggers import RisingEdge, Timer

import mqnic                     # Corundum's driver model, in the testbench's folder

from inceptionn.rtl import rtl_golden    # the wire versions the RTL engines write and accept
from inceptionn.golden import TOS_DEFAULT
from inceptionn.golden.counters import Counters

# The app's register map (byte offsets), written here by the install from the project's map.
REGS: dict = {}
APP_ID = 0

log = logging.getLogger("cocotb.tb")
CODECS = {"paper": 0, "bounded": 1}
K = 10


def pad60(frame):
    return frame + bytes(max(0, 60 - len(frame)))


def gradient_frames(seed):
    """TCP and UDP, DSCP 10 (ToS 0x28), 64-byte (one 512-bit beat), MSS-sized and jumbo,
    float32 gradients."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    rng = np.random.default_rng(seed)
    grads = rng.normal(0, 1e-2, 2400).astype("<f4").tobytes()
    eth = Ether(src="5a:51:52:53:54:55", dst="da:d1:d2:d3:d4:d5")
    out = []
    for n_tcp, n_udp in ((1448, 1472), (8948, 8972), (10, 22)):
        out.append(bytes(eth / IP(src="192.168.1.100", dst="192.168.1.101", tos=TOS_DEFAULT)
                         / TCP(sport=5678, dport=1234, flags="A", seq=seed) / grads[:n_tcp]))
        out.append(bytes(eth / IP(src="192.168.1.100", dst="192.168.1.101", tos=TOS_DEFAULT)
                         / UDP(sport=5678, dport=1234) / grads[:n_udp]))
    return out


def plain_frames():
    """Untagged traffic and foreign DSCP-10 traffic (not a compressed frame)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    eth = Ether(src="5a:51:52:53:54:55", dst="da:d1:d2:d3:d4:d5")
    return [bytes(eth / IP(tos=0) / UDP(sport=1, dport=2) / bytes(range(200))),
            bytes(eth / IP(tos=TOS_DEFAULT) / UDP(sport=1, dport=2)
                  / (bytes([0x12, 0x34, 0x99, 0x0a]) + bytes(i % 256 for i in range(300))))]


async def read(tb, name):
    return await tb.driver.app_hw_regs.read_dword(REGS[name])


async def write(tb, name, value):
    await tb.driver.app_hw_regs.write_dword(REGS[name], value)


async def counters(tb, d):
    out = {}
    for name in Counters().as_dict():
        key = f"if0.{d}.{name}"
        if key + "_lo" in REGS:
            lo = await read(tb, key + "_lo")
            out[name] = lo | (await read(tb, key + "_hi")) << 32
        elif key in REGS:
            out[name] = await read(tb, key)
    return out


def mac_io(mac):
    """`send` and `recv` on a cocotbext-eth EthMac model (AXI stream, no FCS at this level)."""
    async def send(frame):
        await mac.rx.send(frame)

    async def recv():
        return bytes((await mac.tx.recv()).data)
    return send, recv


async def open_interface(tb):
    """The driver's bring-up as Corundum's own test does it: interface 0 open, its queues on."""
    await tb.init()
    await tb.driver.init_pcie_dev(tb.rc.find_device(tb.dev.functions[0].pcie_id))
    await tb.driver.interfaces[0].open()
    await tb.driver.interfaces[0].sched_blocks[0].schedulers[0].rb.write_dword(
        mqnic.MQNIC_RB_SCHED_RR_REG_CTRL, 0x00000001)
    for k in range(len(tb.driver.interfaces[0].txq)):
        await tb.driver.interfaces[0].sched_blocks[0].schedulers[0].hw_regs.write_dword(4*k, 3)
    await tb.driver.hw_regs.read_dword(0)
    return tb


def check_deltas(before, after, want, d):
    for name, value in want.as_dict().items():
        if name in before:
            got = after[name] - before[name]
            assert got == value, f"{d} {name}: registers say {got}, the frames {value}"


async def run_suite(tb, send, recv, clk):
    """The gradient tests on interface 0 of a started testbench `tb`."""
    assert tb.driver.app_hw_regs is not None, "no application BAR: APP_ENABLE is off"
    assert await read(tb, "id") == APP_ID, "the app's id word"
    assert await read(tb, "if_count") == len(tb.driver.interfaces)

    tx_before, rx_before = await counters(tb, "tx"), await counters(tb, "rx")
    tx_want, rx_want = Counters(), Counters()

    for codec, sel in CODECS.items():
        await write(tb, "if0.tx.codec", sel)
        await write(tb, "if0.tx.k", K)
        assert await read(tb, "if0.tx.codec") == sel
        tb.log.info("TX: gradient frames, %s codec, leave the MAC as golden.tx_frame", codec)
        for i, frame in enumerate(gradient_frames(1 + sel) + plain_frames()):
            want = rtl_golden.tx_frame(frame, k=K, codec=codec, counters=tx_want)
            await tb.driver.interfaces[0].start_xmit(frame, 0)
            got = await recv()
            # A frame shorter than 60 bytes (a compressed 64-byte one) leaves padded to 60
            # by a MAC that pads (the 10G MACs), as it is by one that does not (the 100G
            # MAC models at the AXI-stream level).
            assert got in (want, pad60(want)), (
                f"TX {codec} frame {i}: {len(got)} bytes on the wire, golden {len(want)}")

        tb.log.info("RX: compressed frames (%s) reach the host as golden.rx_frame", codec)
        for i, frame in enumerate(gradient_frames(3 + sel) + plain_frames()):
            wire = pad60(rtl_golden.tx_frame(frame, k=K, codec=codec))
            host, bad = rtl_golden.rx_frame(wire, counters=rx_want)
            assert not bad
            await send(wire)
            pkt = await tb.driver.interfaces[0].recv()
            assert pkt.data == host, (f"RX {codec} frame {i}: host got {len(pkt.data)} bytes, "
                                      f"golden {len(host)}")

    tb.log.info("RX: a compressed frame cut short is malformed (flagged bad)")
    good = gradient_frames(7)[0]
    cut = rtl_golden.tx_frame(good, k=K)
    cut = cut[:len(cut) - 64]
    host_cut, bad = rtl_golden.rx_frame(cut, counters=rx_want)
    assert bad
    host_good, _ = rtl_golden.rx_frame(rtl_golden.tx_frame(good, k=K), counters=rx_want)
    await send(cut)
    await send(rtl_golden.tx_frame(good, k=K))
    pkt = await tb.driver.interfaces[0].recv()
    if pkt.data == host_good:
        tb.log.info("the bad frame was dropped by Corundum's receive path")
    else:
        assert pkt.data == host_cut, "a bad frame reached the host with other bytes than golden's"
        pkt = await tb.driver.interfaces[0].recv()
        assert pkt.data == host_good

    tb.log.info("Loopback: the host receives the golden roundtrip")
    await write(tb, "if0.tx.codec", CODECS["bounded"])
    tb.loopback_enable = True
    for i, frame in enumerate(gradient_frames(9)):
        wire = pad60(rtl_golden.tx_frame(frame, k=K, counters=tx_want))
        host, _ = rtl_golden.rx_frame(wire, counters=rx_want)
        await tb.driver.interfaces[0].start_xmit(frame, 0)
        pkt = await tb.driver.interfaces[0].recv()
        assert pkt.data == host, f"loopback frame {i}: {len(pkt.data)} bytes, golden {len(host)}"
        # the roundtrip is within the bound: decoded values match the sent ones to 2^-k
    tb.loopback_enable = False

    await Timer(1, "us")
    check_deltas(tx_before, await counters(tb, "tx"), tx_want, "TX")
    check_deltas(rx_before, await counters(tb, "rx"), rx_want, "RX")
    tb.log.info("counters agree: TX %s, RX %s", tx_want.as_dict(), rx_want.as_dict())
    await RisingEdge(clk)
