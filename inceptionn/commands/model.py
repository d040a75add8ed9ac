"""`inceptionn roundtrip | stats | nic tx | nic rx`: the golden model applied to arrays and
captures (and `nic bridge`, from commands/net.py, under `nic`).

The value codec is the bounded one (|error| <= 2^-k, k in 1..16; `nic tx` writes it in
wire format version 3, the checked shim, or `--version 2`) unless `--codec paper` asks for
the paper's (version 1, k in 1..126). `nic rx` decompresses the versions `--versions`
names (default 3 only; the paper's reproductions name 1); `--codec` is a shorthand
(paper: 1; bounded: 2 and 3; any: all three). Other frames are forwarded unchanged.
"""

import numpy as np

from .. import golden
from .args import CliError, dscp_arg as _dscp, error_bound_arg as _error_bound
from .checks import one_line, writable
from .args import versions_arg, wire_version_arg

__all__ = ["register"]

DEFAULT_STATS_BOUNDS = ("2^-6", "2^-8", "2^-10")


def _npy_header(path):
    """(shape, dtype, data bytes the file holds) from an .npy's header, or None when the
    file is not an .npy (np.load then says why)."""
    import os
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            return None
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = read(f)
        return shape, dtype, os.fstat(f.fileno()).st_size - f.tell()


def _npy_claims_too_much(path):
    """A message if the .npy header claims more data than the file holds (numpy would
    try to allocate it all first), else None. A damaged header is a CliError: numpy's
    header reader raises many classes (ValueError, SyntaxError, tokenize's TokenError,
    OverflowError), so every one is taken as "damaged"."""
    try:
        got = _npy_header(path)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {one_line(exc)}") from None
    except Exception as exc:  # any failure of the header's parse is a damaged file
        raise CliError(f"cannot read {path}: a damaged .npy header: {one_line(exc)}") from None
    if got is None:
        return None
    shape, dtype, have = got
    want = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if want > have:
        return f"{path}: the header claims shape {shape} ({want} bytes), the file holds {have}"
    return None


def _k_for(args):
    """The error bound's k, checked against the chosen codec's range (paper 1..126,
    bounded 1..16); a ValueError is a user error (exit status 2)."""
    return golden.check_k(args.error_bound, args.codec)


def _load_float32(path):
    if (why := _npy_claims_too_much(path)) is not None:
        raise CliError(why)
    try:
        a = np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy raises many classes on a damaged file; one line each
        raise CliError(f"cannot read {path}: {one_line(exc)}") from None
    if not isinstance(a, np.ndarray):
        raise CliError(f"{path}: expected a single .npy array, not an .npz archive")
    if a.dtype != np.float32:
        raise CliError(f"{path}: expected a float32 array, got {a.dtype}")
    return a


# ---------------------------------------------------------------- roundtrip / stats

def _cmd_roundtrip(args):
    k = _k_for(args)
    writable(args.output, "OUT.npy")
    a = _load_float32(args.input)
    out = golden.roundtrip(a, k, args.codec)
    try:
        with open(args.output, "wb") as f:
            np.save(f, out, allow_pickle=False)
    except OSError as exc:
        raise CliError(f"cannot write {args.output}: {one_line(exc)}") from None
    st = golden.band_stats(a, k, args.codec)
    print(f"{a.size} values, error bound 2^-{k}, {args.codec} codec: ratio {st.ratio:.3f} "
          f"(bytes {st.byte_ratio:.3f}), max |error| {max(st.max_error.values()):.3g}")
    return 0


def _cmd_stats(args):
    a = _load_float32(args.input)
    bounds = args.error_bound or [golden.parse_error_bound(t) for t in DEFAULT_STATS_BOUNDS]
    for k in bounds:
        golden.check_k(k, args.codec)
    print(f"{a.size} values, {args.codec} codec")
    print(f"{'bound':>7} {'2-bit':>8} {'10-bit':>8} {'18-bit':>8} {'34-bit':>8} "
          f"{'ratio':>7} {'bytes':>7} {'err 8-bit':>10} {'err 16-bit':>10} {'8b->0':>7}")
    for k in bounds:
        st = golden.band_stats(a, k, args.codec)
        sh = st.share
        print(f"{'2^-' + str(k):>7} {sh[2]:8.2%} {sh[10]:8.2%} {sh[18]:8.2%} {sh[34]:8.2%} "
              f"{st.ratio:7.3f} {st.byte_ratio:7.3f} {st.max_error[10]:10.3g} "
              f"{st.max_error[18]:10.3g} {st.zeroed_8bit:7.2%}")
    return 0


# ---------------------------------------------------------------- nic tx / rx

def _read_pcap(path):
    """([(frame bytes, timestamp ns)], nano: whether the output keeps ns resolution)."""
    try:
        frames, times, nano = golden.pcap.read_pcap(path)
    except golden.pcap.PcapError as exc:
        raise CliError(str(exc)) from None
    return list(zip(frames, times)), nano


def _write_pcap(path, frames, nano):
    try:
        golden.pcap.write_pcap(path, [f for f, _ in frames], [t for _, t in frames], nano=nano)
    except golden.pcap.PcapError as exc:
        raise CliError(str(exc)) from None


def _print_counters(c, extra=""):
    for name, value in c.as_dict().items():
        print(f"{name:>18}: {value}")
    if extra:
        print(extra)


def _cmd_nic(args):
    k = _k_for(args) if args.direction == "tx" else None
    writable(args.output, "OUT.pcap")
    if args.direction == "tx":
        try:
            golden.payload.check_version(args.version, args.codec)
        except ValueError as e:
            raise CliError(f"--version: {e}") from None
    else:
        if args.codec is not None and args.versions is not None:
            raise CliError("nic rx: give --versions or --codec, not both")
        versions = (RX_VERSIONS[args.codec] if args.codec is not None else
                    golden.RX_VERSIONS_DEFAULT if args.versions is None else args.versions)
    frames, nano = _read_pcap(args.input)
    c = golden.Counters()
    out, bad = [], 0
    for data, ts in frames:
        if args.direction == "tx":
            res = golden.tx_frame(data, k=k, dscp=args.dscp, counters=c, codec=args.codec,
                                  version=args.version)
            if res is not None:
                out.append((res, ts))
        else:
            res, is_bad = golden.rx_frame(data, dscp=args.dscp, counters=c, versions=versions)
            bad += is_bad
            out.append((res, ts))
    _write_pcap(args.output, out, nano)
    _print_counters(c, f"{'bad frames out':>18}: {bad}" if args.direction == "rx" else "")
    return 0


# ---------------------------------------------------------------- parser

# nic rx --codec: the wire versions RX decompresses (a shorthand for --versions).
RX_VERSIONS = {"any": (1, 2, 3), "paper": (1,), "bounded": (2, 3)}


def _add_codec(p):
    p.add_argument("--codec", choices=golden.CODECS, default=golden.CODEC_DEFAULT,
                   help="value codec: bounded (wire format versions 2 and 3, |error| <= 2^-k, "
                        "k <= 16; the default) or paper (version 1, the paper's, k <= 126)")

def _add_roundtrip(sub):
    p = sub.add_parser("roundtrip", help="write what the NIC would deliver for a float32 .npy")
    p.add_argument("input", metavar="IN.npy")
    p.add_argument("output", metavar="OUT.npy")
    p.add_argument("--error-bound", type=_error_bound, default=golden.K_DEFAULT,
                   metavar="2^-K", help="error bound 2^-k (default 2^-10)")
    _add_codec(p)
    p.set_defaults(func=_cmd_roundtrip)


def _add_stats(sub):
    p = sub.add_parser("stats", help="Table III-style code distribution, ratio and errors")
    p.add_argument("input", metavar="IN.npy")
    p.add_argument("--error-bound", type=_error_bound, action="append", metavar="2^-K",
                   help="error bound, repeatable (default 2^-6, 2^-8, 2^-10)")
    _add_codec(p)
    p.set_defaults(func=_cmd_stats)


def _add_nic(sub):
    p = sub.add_parser("nic", help="run a pcap through the compression or decompression engine")
    nic = p.add_subparsers(dest="direction", metavar="{tx,rx,bridge}", required=True)
    tx = nic.add_parser("tx", help="compression engine (host -> wire)")
    rx = nic.add_parser("rx", help="decompression engine (wire -> host)")
    for q in (tx, rx):
        q.add_argument("input", metavar="IN.pcap")
        q.add_argument("output", metavar="OUT.pcap")
        q.add_argument("--dscp", type=_dscp, default=golden.DSCP_DEFAULT,
                       help="DSCP that marks compressible frames (default 10, ToS 0x28)")
        q.set_defaults(func=_cmd_nic)
    tx.add_argument("--error-bound", type=_error_bound, default=golden.K_DEFAULT,
                    metavar="2^-K", help="error bound 2^-k (default 2^-10)")
    _add_codec(tx)
    tx.add_argument("--version", type=wire_version_arg, default=None, metavar="N",
                    help="wire version to write: the codec's by default (bounded 3, paper 1); "
                         "2 for receivers that predate version 3")
    rx.add_argument("--versions", type=versions_arg, default=None, metavar="V[,V...]",
                    help="wire versions to decompress (default 3; the paper's reproductions: 1)")
    rx.add_argument("--codec", choices=sorted(RX_VERSIONS), default=None,
                    help="shorthand for --versions: paper 1, bounded 2,3, any 1,2,3")
    from .net import add_bridge
    add_bridge(nic, _error_bound, _dscp, CliError)


def register(sub):
    """Add roundtrip, stats and nic to the command line's subparsers."""
    _add_roundtrip(sub)
    _add_stats(sub)
    _add_nic(sub)
