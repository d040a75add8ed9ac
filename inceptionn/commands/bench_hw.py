"""`make bench-hw`: cycle-level throughput and latency of the Verilated engines.

Every number is measured in simulation in this run; nothing is copied from a table.
"""



def _print_table(title, rows):
    print(f"\n{title}")
    if not rows:
        print("  (no rows)")
        return
    cols = list(rows[0].keys())
    widths = [max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in cols]
    print("  " + "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)))
    print("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        print("  " + "  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(cols, widths)))


def add_arguments(ap) -> None:
    """`inceptionn bench hw`'s options."""
    ap.add_argument("--only", choices=["tx", "rx", "lanes"],
                    help="run one part: an engine's benchmark, or the 512-bit lanes beside "
                         "the 256-bit engines")


def run(args) -> int:
    if args.only in (None, "tx"):
        from inceptionn.rtl import bench_tx
        print("TX CompressionEngine (Verilator, cycle-accurate) ...", flush=True)
        _print_table("TX CompressionEngine", bench_tx.measure())
    if args.only in (None, "rx"):
        from inceptionn.rtl import bench_rx
        print("RX DecompressionEngine (Verilator, cycle-accurate) ...", flush=True)
        _print_table("RX DecompressionEngine", bench_rx.measure())
        print("\n" + bench_rx.TWO_GROUPS)
    if args.only in (None, "lanes"):
        from inceptionn.rtl import bench_lanes
        print("\nThe engines at 256 and 512 bits a beat (Verilator, cycle-accurate) ...", flush=True)
        _print_table("256 and 512 bits a beat (512: two lanes of each engine)",
                     bench_lanes.measure())
    return 0
