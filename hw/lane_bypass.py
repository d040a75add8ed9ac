"""Which frames an engine surely forwards unchanged, told from their first wide beat.

TX (``tx_sure_bypass``): the engine disabled or its k out of the codec's range, or the
headers that every eligible frame has in its first bytes (EtherType, one VLAN tag, the
IPv4 version, IHL, ToS, fragment fields and protocol) refuse it, or, behind a 20-byte
IPv4 header, a TCP data offset below 5 or a UDP datagram whose IP total length leaves
fewer than 4 payload bytes. Every other refusal (a TCP frame with no data such as a
pure ACK, a UDP length that disagrees with the IP one, a length the frame's end
contradicts, a bad-flagged frame, a payload that does not compress) is left to the
engine; frames longer than the engine keeps are dropped by the lane as the engine
drops them (hw/engine_lanes.py). The bytes read end at the TCP data offset (byte 50
behind a VLAN tag); a frame too short to hold them is never eligible.

RX (``rx_sure_bypass``):

The engines' lanes (hw/engine_lanes.py) send such a frame through a FIFO of the full
beat width instead of a 256-bit engine, which spends about 14 clocks a frame beyond its
beats even on a frame it only passes on. The test must never say "bypass" of a frame
the engine would decompress: it reads the header fields that every eligible frame has
in its first 28 bytes (docs/wire-format.md section 4: EtherType, one VLAN tag, the IPv4
version, IHL, ToS, fragment fields and protocol), the frame's configuration, and the
shim's magic (byte P + 2, which names the wire version) where the first 64 bytes hold
it at a fixed place: a 20-byte IPv4 header and UDP or a 20-byte TCP header, with or
without a VLAN tag (at byte 44, 48, 56 or 60). Every other refusal (lengths, k, the
check word, the magic behind options) is left to the engine. A frame too short to hold
a byte read here is never eligible (its payload must hold a 4-byte shim), so whatever
its missing bytes read as, a "bypass" for it is right.
"""

from amaranth import *

from .tx.ingress import k_in_range
from .wire import SHIM_MAGIC, SHIM_MAGIC_V2, SHIM_MAGIC_V3

__all__ = ["rx_sure_bypass", "tx_sure_bypass", "BYPASS_HEADER_BYTES"]

# The bytes read: up to the shim's magic behind a VLAN tag, IPv4 and TCP (18 + 20 + 20 + 2).
BYPASS_HEADER_BYTES = 61

_ETH_P_IP, _ETH_P_8021Q = 0x0800, 0x8100
_IPPROTO_TCP, _IPPROTO_UDP = 6, 17


def _ipv4_refused(byte, l3, dscp):
    """The IPv4 header at ``l3`` makes the frame ineligible (golden.packet_matcher's
    tests of version, IHL, DSCP, fragment and protocol)."""
    vihl, tos, flags, offset, proto = byte(l3), byte(l3 + 1), byte(l3 + 6), byte(l3 + 7), byte(l3 + 9)
    return ((vihl[4:] != 4) | (vihl[:4] < 5) | (tos[2:] != dscp)
            | (flags[:6] != 0) | (offset != 0)          # MF or a fragment offset
            | ((proto != _IPPROTO_TCP) & (proto != _IPPROTO_UDP)))


def _magic_refused(byte, l3, versions):
    """The shim's magic names no version ``versions`` accepts, for a 20-byte IPv4 header
    at ``l3`` and UDP or a 20-byte TCP header (0 for other headers: the engine decides)."""
    l4, proto = l3 + 20, byte(l3 + 9)
    udp = proto == _IPPROTO_UDP
    tcp5 = (proto == _IPPROTO_TCP) & (byte(l4 + 12)[4:] == 5)
    magic = Mux(udp, byte(l4 + 8 + 2), byte(l4 + 20 + 2))
    accepted = ((versions[0] & (magic == SHIM_MAGIC)) | (versions[1] & (magic == SHIM_MAGIC_V2))
                | (versions[2] & (magic == SHIM_MAGIC_V3)))
    return (byte(l3)[:4] == 5) & (udp | tcp5) & ~accepted


def rx_sure_bypass(data, cfg):
    """1 if the RX engine forwards the frame whose first beat is ``data`` (at least
    BYPASS_HEADER_BYTES bytes) unchanged under the configuration ``cfg`` (its ``enable``,
    ``dscp`` and ``versions``, as sampled with that beat); 0 when in doubt."""
    byte, plain, vlan = _headers(data)
    return (~cfg.enable | (cfg.versions == 0) | ~(plain | vlan)
            | Mux(vlan, _ipv4_refused(byte, 18, cfg.dscp) | _magic_refused(byte, 18, cfg.versions),
                  _ipv4_refused(byte, 14, cfg.dscp) | _magic_refused(byte, 14, cfg.versions)))


def _lengths_refused(byte, l3):
    """For a 20-byte IPv4 header at ``l3``: TCP with a data offset below 5, or UDP whose
    IP total length leaves fewer than 4 payload bytes (golden.packet_matcher's length
    tests; 0 for other headers: the engine decides). A TCP frame with no data (a pure
    ACK) is not told here: that needs the IP total length against the data offset, an
    adder and a compare that took the test to 7 LUT levels, past the engines' 6."""
    l4, proto = l3 + 20, byte(l3 + 9)
    total = Cat(byte(l3 + 3), byte(l3 + 2))
    tcp = (proto == _IPPROTO_TCP) & (byte(l4 + 12)[4:] < 5)
    udp = (proto == _IPPROTO_UDP) & (total[5:] == 0)            # total < 32
    return (byte(l3)[:4] == 5) & (tcp | udp)


def _headers(data):
    """(byte(j), whether the frame is plain IPv4, whether it is IPv4 behind one VLAN tag)."""
    if len(data) < 8 * BYPASS_HEADER_BYTES:
        raise ValueError(f"the bypass test reads {BYPASS_HEADER_BYTES} bytes, "
                         f"the beat has {len(data) // 8}")

    def byte(j):
        return data.word_select(j, 8)

    def be16(j):
        return Cat(byte(j + 1), byte(j))

    return (byte, be16(12) == _ETH_P_IP,
            (be16(12) == _ETH_P_8021Q) & (be16(16) == _ETH_P_IP))


def tx_sure_bypass(data, cfg):
    """1 if the TX engine forwards the frame whose first beat is ``data`` unchanged under
    the configuration ``cfg`` (its ``enable``, ``dscp``, ``k``, ``codec`` and
    ``version``, as sampled with that beat), unless it drops it as too long; 0 when in
    doubt."""
    byte, plain, vlan = _headers(data)
    return (~cfg.enable | ~k_in_range(cfg.k, cfg.codec, cfg.version) | ~(plain | vlan)
            | Mux(vlan, _ipv4_refused(byte, 18, cfg.dscp) | _lengths_refused(byte, 18),
                  _ipv4_refused(byte, 14, cfg.dscp) | _lengths_refused(byte, 14)))
