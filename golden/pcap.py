"""pcap files of Ethernet frames: the one reader and the one writer that the CLI, the
drivers (bridge captures, the demo) and the tests use.

Timestamps are integer nanoseconds throughout. Files are written as classic pcap,
with nanosecond resolution unless asked for microseconds; pcap (micro- or nanosecond)
and pcapng are read.
"""

import struct
import time

__all__ = ["LINKTYPE_ETHERNET", "SNAPLEN", "PcapError", "PcapWriter", "write_pcap", "read_pcap"]

LINKTYPE_ETHERNET = 1
SNAPLEN = 65535
_MAGIC_NS, _MAGIC_US = 0xA1B23C4D, 0xA1B2C3D4


class PcapError(ValueError):
    """A capture that cannot be read or written; the message names the file."""


class PcapWriter:
    """An Ethernet pcap written frame by frame (for live captures: the bridge).

    ``nano``: nanosecond timestamps (else microseconds, truncated). Timestamps default
    to the wall clock at the time of writing; the header is written at once, so an
    empty capture is still a valid pcap. The file is flushed on close() and can be
    read by Wireshark, tcpdump and read_pcap()."""

    def __init__(self, path, snaplen: int = SNAPLEN, *, nano: bool = True):
        self._f = open(path, "wb")
        # magic, version 2.4, tz 0, sigfigs 0, snaplen, link type 1 (Ethernet)
        self._f.write(struct.pack("<IHHiIII", _MAGIC_NS if nano else _MAGIC_US, 2, 4, 0, 0,
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
        self._f.write(struct.pack("<IIII", sec, frac // self._unit, len(data), len(frame)))
        self._f.write(data)

    def write_many(self, frames) -> None:
        ts = time.time_ns()
        for f in frames:
            self.write(f, ts)

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

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
    PcapError when the file cannot be read, is not a capture, is damaged, holds another
    link type, or holds a frame captured truncated."""
    try:
        with open(path, "rb") as fh:
            return _read_from(path, fh)
    except OSError as exc:
        raise PcapError(f"cannot read {path}: {exc}") from None


def _read_from(path, fh):
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    try:
        reader = RawPcapReader(fh)
    except (Scapy_Exception, EOFError, ValueError) as exc:
        raise PcapError(f"cannot read {path}: {exc}") from None
    frames, times, nano = [], [], bool(getattr(reader, "nano", False))
    try:
        for data, meta in reader:
            if hasattr(meta, "tsresol"):         # pcapng
                nano = True
                if meta.linktype != LINKTYPE_ETHERNET:
                    raise PcapError(f"{path}: link type {meta.linktype} is not Ethernet")
                ts = ((meta.tshigh << 32) | meta.tslow) * 10**9 // meta.tsresol
            else:
                if reader.linktype != LINKTYPE_ETHERNET:
                    raise PcapError(f"{path}: link type {reader.linktype} is not Ethernet")
                ts = meta.sec * 10**9 + meta.usec * (1 if reader.nano else 1000)
            if meta.wirelen is not None and len(data) < meta.wirelen:
                raise PcapError(f"{path}: packet {len(frames) + 1} was captured truncated "
                                f"({len(data)} of {meta.wirelen} bytes)")
            frames.append(bytes(data))
            times.append(ts)
    except PcapError:
        raise
    except (Scapy_Exception, EOFError, ValueError, struct.error) as exc:
        raise PcapError(f"{path}: damaged capture: {exc}") from None
    return frames, times, nano
