"""What the product needs to run the RTL: Verilog generation and the Verilator runner
(harness), the engines' run registry (designs), the compiled engine loop (rtl_loop), frame
builders (frames) and the hardware benchmarks (bench_tx, bench_rx)."""
