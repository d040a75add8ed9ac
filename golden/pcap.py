"""pcap files of Ethernet frames: the one reader and the one writer that the CLI, the
drivers (bridge captures, the demo) and the tests use.

Timestamps are integer nanoseconds throughout. Files are written as classic pcap,
with nanosecond resolution unless asked for microseconds; pcap (micro- or nanosecond,
either byte order) is read here and pcapng in golden/pcapng.py. Both readers check every
length against what the file holds before they use it, so a damaged file is a one-line
PcapError, never a crash, a silent partial read or a huge allocation.
"""

import os
import stat
import struct
import time

__all__ = ["LINKTYPE_ETHERNET", "SNAPLEN", "PcapError", "PcapWriter", "write_pcap", "read_pcap"]

LINKTYPE_ETHERNET = 1
SNAPLEN = 65535
_MAGIC_NS, _MAGIC_US = 0xA1B23C4D, 0xA1B2C3D4
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"       # a pcapng's first block: its section header


class PcapError(ValueError):
    """A capture that cannot be read or written; the message names the file."""


class PcapWriter:
    """An Ethernet pcap written frame by frame (for live captures: the bridge).

    ``nano``: nanosecond timestamps (else microseconds, truncated). Timestamps default
    to the wall clock at the time of writing; the header is written at once, so an
    empty capture is still a valid pcap. The file is flushed on close() and can be
    read by Wireshark, tcpdump and read_pcap()."""

    def __init__(self, path, snaplen: int = SNAPLEN, *, nano: bool = True):
        self.path = path
        self._f = open(path, "wb")
        # magic, version 2.4, tz 0, sigfigs 0, snaplen, link type 1 (Ethernet)
        self._put(struct.pack("<IHHiIII", _MAGIC_NS if nano else _MAGIC_US, 2, 4, 0, 0,
                              snaplen, LINKTYPE_ETHERNET))
        self._snaplen = snaplen
        self._unit = 1 if nano else 1000

    def write(self, frame: bytes, ts_ns: int | None = None) -> None:
        ts = time.time_ns() if ts_ns is None else int(ts_ns)
        if ts < 0:
            raise PcapError(f"negative timestamp {ts}")
        data = bytes(frame)[:self._snaplen]
        sec, frac = divmod(ts, 1_000_000_000)
        if sec > 0xFFFFFFFF:   # the classic pcap header keeps seconds in 32 bits
            raise PcapError(f"timestamp {ts} ns is past what a pcap holds (2^32 s)")
        self._put(struct.pack("<IIII", sec, frac // self._unit, len(data), len(frame)) + data)

    def _put(self, b):
        try:
            self._f.write(b)
        except OSError as exc:          # a full disk shows here or at close
            raise PcapError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def write_many(self, frames) -> None:
        ts = time.time_ns()
        for f in frames:
            self.write(f, ts)

    def close(self) -> None:
        """Flush and close; a failed flush (a full disk) is a PcapError, the file closed."""
        if not self._f.closed:
            try:
                self._f.close()
            except OSError as exc:
                raise PcapError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_pcap(path, frames, timestamps_ns, *, nano: bool = True, snaplen: int = SNAPLEN) -> None:
    """Write Ethernet frames with their timestamps (ns) to a pcap; an OSError is raised
    as PcapError("cannot write PATH: ...")."""
    frames = [bytes(f) for f in frames]
    timestamps_ns = list(timestamps_ns)
    if len(timestamps_ns) != len(frames):
        raise ValueError(f"{len(timestamps_ns)} timestamps for {len(frames)} frames")
    try:
        with PcapWriter(path, snaplen, nano=nano) as w:
            for f, ts in zip(frames, timestamps_ns):
                w.write(f, ts)
    except OSError as exc:
        raise PcapError(f"cannot write {path}: {exc}") from None


def read_pcap(path):
    """``(frames, timestamps_ns, nano)`` from a pcap or pcapng of Ethernet frames.

    ``nano``: whether the file keeps nanosecond resolution (pcapng does). Raises
    PcapError, with a one-line message that names the file, when the file cannot be
    read, is not a capture, is damaged (cut short, a block or record that claims more
    bytes than it has, an unknown block, a packet before its interface block), holds
    another link type, or holds a frame captured truncated."""
    try:
        with open(path, "rb") as fh:
            # Only a regular file: a device or FIFO may never end (/dev/zero).
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise PcapError(f"cannot read {path}: not a regular file")
            data = fh.read()
    except OSError as exc:
        raise PcapError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:4] == _PCAPNG_SHB:
        from .pcapng import read_pcapng
        return read_pcapng(path, data, PcapError)
    return _read_classic(path, data)


_RECORD = 16          # ts seconds, ts fraction, captured length, original length


def _read_classic(path, data):
    if len(data) < 24:
        raise PcapError(f"cannot read {path}: not a pcap or pcapng file ({len(data)} "
                        f"bytes, shorter than a pcap header)")
    for end in "<>":
        magic = struct.unpack_from(end + "I", data)[0]
        if magic in (_MAGIC_NS, _MAGIC_US):
            break
    else:
        raise PcapError(f"cannot read {path}: not a pcap or pcapng file (magic "
                        f"{data[:4].hex()})")
    nano = magic == _MAGIC_NS
    major, _, _, _, snaplen, network = struct.unpack_from(end + "HHiIII", data, 4)
    if major != 2:
        raise PcapError(f"{path}: pcap version {major} (2 expected)")
    linktype = network & 0xFFFF       # the upper bits may flag an FCS
    limit = max(snaplen, SNAPLEN)
    unit = 1 if nano else 1000
    frames, times, pos = [], [], 24
    while pos < len(data):
        i = len(frames) + 1
        if pos + _RECORD > len(data):
            raise PcapError(f"{path}: damaged capture: the file ends inside the header of "
                            f"packet {i}")
        sec, frac, caplen, wirelen = struct.unpack_from(end + "IIII", data, pos)
        pos += _RECORD
        if caplen > limit:
            raise PcapError(f"{path}: damaged capture: packet {i} claims {caplen} bytes "
                            f"(more than the snaplen {limit})")
        frame = data[pos:pos + caplen]
        pos += caplen
        if len(frame) < caplen:
            raise PcapError(f"{path}: packet {i} was captured truncated ({len(frame)} of "
                            f"{caplen} bytes): the file ends inside it")
        if linktype != LINKTYPE_ETHERNET:
            raise PcapError(f"{path}: link type {linktype} is not Ethernet")
        if caplen < wirelen:
            raise PcapError(f"{path}: packet {i} was captured truncated ({caplen} of "
                            f"{wirelen} bytes)")
        frames.append(frame)
        times.append(sec * 10**9 + frac * unit)
    return frames, times, nano
