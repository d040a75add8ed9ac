"""Which frames the RX engine surely forwards unchanged, told from their first wide beat.

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

from .wire import SHIM_MAGIC, SHIM_MAGIC_V2, SHIM_MAGIC_V3

__all__ = ["rx_sure_bypass", "BYPASS_HEADER_BYTES"]

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
    if len(data) < 8 * BYPASS_HEADER_BYTES:
        raise ValueError(f"the bypass test reads {BYPASS_HEADER_BYTES} bytes, "
                         f"the beat has {len(data) // 8}")

    def byte(j):
        return data.word_select(j, 8)

    def be16(j):
        return Cat(byte(j + 1), byte(j))

    plain = be16(12) == _ETH_P_IP
    vlan = (be16(12) == _ETH_P_8021Q) & (be16(16) == _ETH_P_IP)
    return (~cfg.enable | (cfg.versions == 0) | ~(plain | vlan)
            | Mux(vlan, _ipv4_refused(byte, 18, cfg.dscp) | _magic_refused(byte, 18, cfg.versions),
                  _ipv4_refused(byte, 14, cfg.dscp) | _magic_refused(byte, 14, cfg.versions)))
