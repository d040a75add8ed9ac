"""Every `inceptionn` command, one module each: its options and a call into the library.
The library (golden, hw, drivers, rtl, bench, study, ddp_hook, gradients) never imports
from here.

A new command: a module here with `add_arguments(parser)` and `run(args) -> int`, and a
row in COMMANDS (or BENCHMARKS, for `inceptionn bench NAME`). Only the chosen command's
module is imported, so `inceptionn roundtrip` does not load the gateware or torch.
"""

from __future__ import annotations

import importlib

__all__ = ["COMMANDS", "BENCHMARKS", "register_all"]

# name -> (module, one line of help)
COMMANDS = {
    "demo": ("demo", "real HDC gradients through the NIC engines, both codecs (make demo)"),
    "verilog": ("verilog", "the standalone engines as Verilog, linted (make verilog)"),
    "vc709": ("vc709", "the Vivado build tree of the VC709 board self-test (make vc709)"),
    "synth": ("synth", "out-of-context Xilinx synthesis: LUTs and levels (make synth-report)"),
    "corundum": ("corundum", "install the engines into a Corundum checkout as its app (make corundum)"),
    "architecture": ("architecture", "the engines' stage diagrams in docs/architecture.md"),
    "study": ("study", "the five papers' study, from a source checkout (make study)"),
}
BENCHMARKS = {
    "golden": ("bench_golden", "golden-model throughput against lossless compressors (make bench)"),
    "hw": ("bench_hw", "cycle-level throughput and latency of the engines (make bench-hw)"),
    "nic": ("bench_nic", "a tagged TCP stream through the software NIC (make bench-nic)"),
    "collectives": ("bench_collectives", "the paper's Fig. 12 and 15 on the software NIC "
                                         "(make bench-collectives)"),
    "train": ("bench_train", "DDP training over rate-limited wires (make bench-train)"),
    "foreign": ("bench_foreign", "how often RX takes foreign DSCP-10 traffic for its own"),
    "codec": ("bench_codec", "the codec per device (CPU, GPUs) against memcpy and an fp16 cast "
                             "(make bench-codec)"),
}


def _module(name):
    return importlib.import_module(f"{__name__}.{name}")


def _add(sub, name, module, help, chosen):
    """A subcommand; its options only when it is the one being run (imports stay lazy)."""
    if not chosen:
        sub.add_parser(name, help=help)
        return
    mod = _module(module)
    p = sub.add_parser(name, help=help, description=(mod.__doc__ or help).split("\n\n")[0])
    mod.add_arguments(p)
    p.set_defaults(func=mod.run)


def register_all(sub, argv=()):
    """Add every command to `sub`; `argv` (the words after `inceptionn`) picks which
    command's module is imported for its options."""
    words = [w for w in argv if not w.startswith("-")]
    first = words[0] if words else None
    from . import model, net
    from .args import CliError, dscp_arg
    model.register(sub)
    net.add_mark(sub, dscp_arg, CliError)
    for name, (module, help) in COMMANDS.items():
        _add(sub, name, module, help, first == name)
    bench = sub.add_parser("bench", help="the benchmarks: " + ", ".join(BENCHMARKS))
    bsub = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    second = words[1] if first == "bench" and len(words) > 1 else None
    for name, (module, help) in BENCHMARKS.items():
        _add(bsub, name, module, help, second == name)
