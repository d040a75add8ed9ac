"""What the product needs to run the RTL: Verilog generation and the Verilator runner
(harness), the engines' run registry (designs), the compiled engine loop (rtl_loop), frame
builders (frames), the hardware benchmarks (bench_tx, bench_rx) and the synthesis report
(synthesis: yosys runs, area and logic-level counts)."""
