"""The benchmarks' logic, one module per `inceptionn bench NAME` (golden, codec, nic,
collectives, foreign, train; hw's is inceptionn.rtl.bench_tx/bench_rx): what they measure
and how they report it. Each command in inceptionn/commands/ only parses its options and
calls these; the benchmarks import nothing from the command line."""
