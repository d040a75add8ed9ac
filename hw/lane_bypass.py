"""Which frames the RX engine surely forwards unchanged, told from their first wide beat.

The engines' lanes (hw/engine_lanes.py) send such a frame through a FIFO of the full
beat width instead of a 256-bit engine, which spends about 14 clocks a frame beyond its
beats even on a frame it only passes on. The test must never say "bypass" of a frame
the engine would decompress: it reads only header fields that every eligible frame has
in its first 28 bytes (docs/wire-format.md section 4: EtherType, one VLAN tag, the IPv4
version, IHL, ToS, fragment fields and protocol) and the frame's configuration; every
other refusal (lengths, the shim, the check word) is left to the engine. A frame too
short to hold a field read here is never eligible, so whatever its missing bytes read
as, a "bypass" for it is right.
"""

from amaranth import *

__all__ = ["rx_sure_bypass", "BYPASS_HEADER_BYTES"]

# The bytes read: up to the IPv4 protocol byte behind a VLAN tag (18 + 9).
BYPASS_HEADER_BYTES = 28

_ETH_P_IP, _ETH_P_8021Q = 0x0800, 0x8100
_IPPROTO_TCP, _IPPROTO_UDP = 6, 17


def _ipv4_refused(byte, l3, dscp):
    """The IPv4 header at ``l3`` makes the frame ineligible (golden.packet_matcher's
    tests of version, IHL, DSCP, fragment and protocol)."""
    vihl, tos, flags, offset, proto = byte(l3), byte(l3 + 1), byte(l3 + 6), byte(l3 + 7), byte(l3 + 9)
    return ((vihl[4:] != 4) | (vihl[:4] < 5) | (tos[2:] != dscp)
            | (flags[:6] != 0) | (offset != 0)          # MF or a fragment offset
            | ((proto != _IPPROTO_TCP) & (proto != _IPPROTO_UDP)))


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
            | Mux(vlan, _ipv4_refused(byte, 18, cfg.dscp), _ipv4_refused(byte, 14, cfg.dscp)))
