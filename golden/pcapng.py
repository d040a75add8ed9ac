"""The pcapng reader behind golden.pcap.read_pcap: Ethernet frames and their timestamps.

Read: section headers (either byte order, several sections), interface descriptions
(their timestamp resolution and offset), enhanced, simple and the obsolete packet
blocks. Skipped: the other standard blocks (name resolution, statistics, decryption
secrets, custom). Refused, with a one-line message: a block that is cut short, whose
two lengths disagree or that claims more than the file holds, a block of unknown type, a
packet before its interface's description, and a packet captured truncated.
"""

import struct

__all__ = ["read_pcapng"]

SHB, IDB, PB, SPB, NRB, ISB, EPB = 0x0A0D0D0A, 1, 2, 3, 4, 5, 6
# Blocks a reader of packets may skip: decryption secrets, systemd journal, custom.
_SKIPPED = {NRB, ISB, 0x0A, 0x09, 0x80000001, 0x00000BAD, 0x40000BAD}
_BYTE_ORDER = 0x1A2B3C4D
_OPT_TSRESOL, _OPT_TSOFFSET = 9, 14
_ETHERNET = 1


class _Interface:
    def __init__(self, linktype, snaplen, units_per_s, offset_s):
        self.linktype, self.snaplen = linktype, snaplen
        self.units_per_s, self.offset_s = units_per_s, offset_s

    def ns(self, ts: int) -> int:
        return ts * 10**9 // self.units_per_s + self.offset_s * 10**9


def read_pcapng(path, data: bytes, error):
    """(frames, timestamps_ns, True) from the bytes of a pcapng; ``error`` is the class
    raised (golden.pcap.PcapError)."""
    def fail(why):
        raise error(f"{path}: damaged pcapng: {why}")

    frames, times = [], []
    end, ifaces, pos, n_block = "<", [], 0, 0
    while pos < len(data):
        n_block += 1
        if pos + 12 > len(data):
            fail(f"the file ends inside block {n_block} ({len(data) - pos} bytes left)")
        btype = struct.unpack_from(end + "I", data, pos)[0]
        if btype == SHB:
            order = data[pos + 8:pos + 12]
            if order == struct.pack("<I", _BYTE_ORDER):
                end = "<"
            elif order == struct.pack(">I", _BYTE_ORDER):
                end = ">"
            else:
                fail(f"block {n_block}: a section header with byte-order magic {order.hex()}")
            ifaces = []           # interfaces are numbered per section
        elif n_block == 1:
            fail("it does not start with a section header")
        length = struct.unpack_from(end + "I", data, pos + 4)[0]
        if length < 12 or length % 4:
            fail(f"block {n_block} has a length of {length} bytes (a multiple of 4, at "
                 f"least 12, expected)")
        if length > len(data) - pos:
            fail(f"block {n_block} claims {length} bytes, the file holds {len(data) - pos} "
                 f"from there (cut short?)")
        if struct.unpack_from(end + "I", data, pos + length - 4)[0] != length:
            fail(f"block {n_block}'s closing length differs from its opening one")
        body = data[pos + 8:pos + length - 4]
        pos += length
        where = f"block {n_block}"
        if btype == SHB:
            if len(body) < 16 or struct.unpack_from(end + "H", body, 4)[0] != 1:
                fail(f"{where}: a section header of an unknown version")
        elif btype == IDB:
            ifaces.append(_interface(body, end, fail, where))
        elif btype in (EPB, PB, SPB):
            iface, ts, frame, wirelen = _packet(btype, body, end, ifaces, fail, where)
            if iface.linktype != _ETHERNET:
                raise error(f"{path}: link type {iface.linktype} is not Ethernet")
            if len(frame) < wirelen:
                raise error(f"{path}: packet {len(frames) + 1} was captured truncated "
                            f"({len(frame)} of {wirelen} bytes)")
            frames.append(frame)
            times.append(iface.ns(ts))
        elif btype not in _SKIPPED:
            fail(f"{where} is of unknown type 0x{btype:08x}")
    return frames, times, True


def _interface(body, end, fail, where):
    if len(body) < 8:
        fail(f"{where}: an interface description of {len(body)} bytes")
    linktype, _, snaplen = struct.unpack_from(end + "HHI", body)
    units, offset = 10**6, 0                        # pcapng's defaults: microseconds
    for code, value in _options(body[8:], end, fail, where):
        if code == _OPT_TSRESOL and len(value) >= 1:
            v = value[0]
            if v & 0x7F > 64:
                fail(f"{where}: timestamp resolution 0x{v:02x} is out of range")
            units = 2 ** (v & 0x7F) if v & 0x80 else 10 ** v
        elif code == _OPT_TSOFFSET and len(value) >= 8:
            offset = struct.unpack_from(end + "q", value)[0]
    return _Interface(linktype, snaplen, units, offset)


def _options(raw, end, fail, where):
    pos = 0
    while pos + 4 <= len(raw):
        code, n = struct.unpack_from(end + "HH", raw, pos)
        if code == 0:                               # opt_endofopt
            return
        value = raw[pos + 4:pos + 4 + n]
        if len(value) < n:
            fail(f"{where}: an option runs past the end of its block")
        yield code, value
        pos += 4 + n + (-n % 4)


def _packet(btype, body, end, ifaces, fail, where):
    """(interface, timestamp in its units, frame, original length)."""
    if btype == SPB:
        if len(body) < 4:
            fail(f"{where}: a simple packet block of {len(body)} bytes")
        wirelen = struct.unpack_from(end + "I", body)[0]
        iface = _iface(ifaces, 0, fail, where)
        caplen = min(wirelen, iface.snaplen) if iface.snaplen else wirelen
        head, ts = 4, 0             # a simple packet block carries no timestamp
    else:
        fmt = end + ("IIIII" if btype == EPB else "HHIIII")
        if len(body) < struct.calcsize(fmt):
            fail(f"{where}: a packet block of {len(body)} bytes")
        if btype == EPB:
            idx, hi, lo, caplen, wirelen = struct.unpack_from(fmt, body)
        else:
            idx, _, hi, lo, caplen, wirelen = struct.unpack_from(fmt, body)
        head, ts = struct.calcsize(fmt), (hi << 32) | lo
        iface = _iface(ifaces, idx, fail, where)
    if caplen > len(body) - head:
        fail(f"{where}: a packet of {caplen} bytes in a block of {len(body)}")
    return iface, ts, body[head:head + caplen], wirelen


def _iface(ifaces, idx, fail, where):
    if idx >= len(ifaces):
        fail(f"{where}: a packet of interface {idx} before that interface's description "
             f"({len(ifaces)} described)")
    return ifaces[idx]
