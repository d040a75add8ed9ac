"""`inceptionn nic bridge` and `inceptionn mark`: the host side on real Linux networking.

  inceptionn nic bridge [--hosts 2] [--mtu 1500|9000] [--error-bound 2^-10] [--dscp 10]
                        [--rate GBPS] [--pcap-wire F] [--pcap-host F] [--engine golden|rtl]
                        [--drop FRACTION] [--seed N] [--run I CMD]... [--duration S]
                        [--codec bounded|paper] [--check-golden N] [--switch auto|compiled|python]
  inceptionn mark add|del|list [--port 5000-5100] [--dscp 10]

The bridge runs until Ctrl-C, SIGTERM, `--duration` seconds, or (with `--run`) until
every command it started has exited; SIGUSR1 prints the counters, and they are printed on
exit. Commands given with `--run I CMD` run inside host I (a shell command line).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time

from .. import golden
from ..drivers import mark as marks
from ..drivers.bridge import MAX_HOSTS, MTUS, RATE_GBPS, Bridge, BridgeError
from ..drivers.netns import netns_available
from .checks import writable
from .args import add_offload_arg, offload_setting, versions_arg, wire_version_arg

__all__ = ["add_bridge", "add_mark"]


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def _print_hosts(br):
    print(f"bridge up: {br.hosts} hosts, MTU {br.mtu}, error bound 2^-{br.k}, DSCP {br.dscp}, "
          f"engine {br.engine}, codec {br.codec}, {br.switch} switch" + (f", {br.rate_gbps} Gb/s per port" if br.rate_gbps else ""))
    for i in range(br.hosts):
        print(f"  host {i}: {br.addr(i)}  {br.addr6(i)}  {br.ifnames[i]}  "
              f"enter: nsenter --net={br.netns_path(i)} <command>")
    print(f"counters: kill -USR1 {os.getpid()}; stop: Ctrl-C", flush=True)


def _cmd_bridge(args, error):
    why = netns_available()
    if why is not None:
        raise error(f"cannot build the bridge here: {why}")
    for i, _ in args.run or ():
        if not 0 <= i < args.hosts:
            raise error(f"--run host {i} is not in 0..{args.hosts - 1}")
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    want_report = []
    old[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, lambda *_: want_report.append(1))
    procs, status = [], 0
    br = Bridge(args.hosts, mtu=args.mtu, k=args.error_bound, dscp=args.dscp,
                rate_gbps=args.rate, engine=args.engine, pcap_wire=args.pcap_wire,
                pcap_host=args.pcap_host, drop=args.drop, seed=args.seed, codec=args.codec,
                switch=args.switch, check_every=args.check_golden, version=args.version,
                versions=args.versions, offload=offload_setting(args))
    try:
        br.start()
        _print_hosts(br)
        for i, cmd in args.run or ():
            procs.append((i, cmd, br.popen(i, cmd)))
        end = time.monotonic() + args.duration if args.duration else None
        while True:
            if want_report:
                want_report.clear()
                print(br.report(), flush=True)
            try:
                br.counters()                  # raises if the switch stopped on an error
            except BridgeError:
                break                          # reported below, from br.close()
            if procs and all(p.poll() is not None for _, _, p in procs):
                break
            if end is not None and time.monotonic() >= end:
                break
            time.sleep(0.1)
    except _Stop as stop:
        print(f"stopping on {stop}", file=sys.stderr)
        status = 130 if str(stop) == "SIGINT" else 143
    finally:
        for _, _, p in procs:
            br.kill_group(p)              # the whole group: a shell's children too
        for s, h in old.items():
            signal.signal(s, h)
        report = br.report() if br.ports else ""
        err = br.close()
        if report:
            print(report, flush=True)
    for i, cmd, p in procs:
        if p.returncode:
            print(f"host {i}: `{cmd}` exited with status {p.returncode}", file=sys.stderr)
            status = status or 1
    if err is not None:
        print(f"inceptionn: bridge stopped on an error: {err}", file=sys.stderr)
        return 2 if isinstance(err, golden.pcap.PcapError) else 1   # a capture not written
    return status


def _cmd_mark(args, error):
    try:
        if args.action == "add":
            if args.port is None:
                raise error("mark add needs --port")
            print(f"tagging {marks.add(args.port, args.dscp)}")
        elif args.action == "del":
            for m in marks.delete(args.port):
                print(f"removed {m}")
        else:
            for m in marks.listing():
                print(m)
    except marks.MarkError as e:
        raise error(str(e)) from None
    return 0


def add_bridge(nic_sub, error_bound, dscp, error):
    p = nic_sub.add_parser("bridge", help="join network namespaces through the software NIC "
                                          "(real Linux TCP across the compressed wire)")
    p.add_argument("--hosts", type=int, default=2, choices=range(2, MAX_HOSTS + 1),
                   metavar=f"2..{MAX_HOSTS}", help="number of hosts (default 2)")
    p.add_argument("--mtu", type=int, default=1500, choices=MTUS, help="MTU (default 1500)")
    p.add_argument("--error-bound", type=error_bound, default=golden.K_DEFAULT, metavar="2^-K",
                   help="error bound 2^-k (default 2^-10)")
    p.add_argument("--dscp", type=dscp, default=golden.DSCP_DEFAULT,
                   help="DSCP that marks compressible frames (default 10)")
    p.add_argument("--rate", type=float, default=None, metavar="GBPS",
                   help="token-bucket wire rate per port on the compressed bytes")
    p.add_argument("--pcap-wire", metavar="FILE", help="capture of every frame on the wire")
    p.add_argument("--pcap-host", metavar="FILE",
                   help="capture of every frame the hosts send and receive")
    p.add_argument("--engine", choices=("golden", "rtl"), default="golden",
                   help="golden model, or the Verilated engines checked against it")
    p.add_argument("--drop", type=float, default=0.0, metavar="FRACTION",
                   help="lose this fraction of wire frames (seeded)")
    p.add_argument("--seed", type=int, default=0, help="seed of the lossy wire")
    p.add_argument("--run", nargs=2, action="append", metavar=("I", "CMD"),
                   type=str, help="run shell command CMD in host I; repeatable; the bridge "
                                  "stops when all have exited")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop after S seconds")
    p.add_argument("--codec", choices=golden.CODECS, default=None,
                   help="value codec on the wire: bounded (wire version 3, the default) or "
                        "paper (version 1)")
    p.add_argument("--version", type=wire_version_arg, default=None, metavar="N",
                   help="wire version TX writes (default: the codec's; 2 for old receivers)")
    p.add_argument("--versions", type=versions_arg, default=None, metavar="V[,V...]",
                   help="wire versions RX decompresses (default: the one TX writes, with either engine)")
    p.add_argument("--check-golden", type=int, default=0, metavar="N",
                   help="check every N-th frame of the compiled switch against the golden "
                        "model; a difference stops the bridge (default 0: off)")
    p.add_argument("--switch", choices=("auto", "compiled", "python"), default="auto",
                   help="compiled per-port workers (default where possible) or the Python loop "
                        "(needed by --drop, --engine rtl)")
    add_offload_arg(p)
    p.set_defaults(func=lambda a: _cmd_bridge(_fix_run(a, error), error))


def _fix_run(args, error):
    runs = []
    for i, cmd in args.run or ():
        try:
            runs.append((int(i), cmd))
        except ValueError:
            raise error(f"--run takes a host index and a command, got {i!r}") from None
    args.run = runs
    # Every number checked before any namespace exists: one line, exit status 2.
    lo, hi = RATE_GBPS
    if args.rate is not None and not lo <= args.rate <= hi:
        raise error(f"--rate must be a number of Gb/s in {lo:g}..{hi:g}, got {args.rate!r}")
    if not 0.0 <= args.drop < 1.0:
        raise error(f"--drop must be a fraction in [0, 1), got {args.drop!r}")
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise error(f"--duration must be a positive number of seconds, got {args.duration!r}")
    if args.check_golden < 0:
        raise error(f"--check-golden must be an integer >= 0, got {args.check_golden}")
    if args.codec is None:
        args.codec = golden.CODEC_DEFAULT
    try:
        args.error_bound = golden.check_k(args.error_bound, args.codec)
    except ValueError as e:
        raise error(f"--error-bound: {e}") from None
    try:
        if args.version is not None:
            golden.payload.check_version(args.version, args.codec)
    except ValueError as e:
        raise error(f"--version: {e}") from None
    uses_python = args.drop or args.engine == "rtl"
    if args.switch == "compiled" and uses_python:
        raise error("--switch compiled: --drop and --engine rtl need the Python switch")
    if args.check_golden and (args.switch == "python" or uses_python):
        raise error("--check-golden checks the compiled switch")
    if not 0 <= args.seed < 2**63:
        raise error(f"--seed must be an integer in 0..2^63-1, got {args.seed}")
    for opt in ("pcap_wire", "pcap_host"):
        path = getattr(args, opt)
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise error(f"--{opt.replace('_', '-')} {path}: folder {folder} does not exist")
        try:    # opened, not only looked at: /proc and /sys look writable to root
            writable(path, f"--{opt.replace('_', '-')}")
        except ValueError as e:
            raise error(str(e)) from None
    return args


def add_mark(sub, dscp, error):
    p = sub.add_parser("mark", help="tag the traffic of unmodified programs by port (nftables)")
    p.add_argument("action", choices=("add", "del", "list"))
    p.add_argument("--port", metavar="5000-5100", help="port or port range")
    p.add_argument("--dscp", type=dscp, default=golden.DSCP_DEFAULT,
                   help="DSCP to set (default 10, ToS 0x28)")
    p.set_defaults(func=lambda a: _cmd_mark(a, error))
