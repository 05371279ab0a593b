# One entry point for building, demonstrating, testing and benchmarking tca.
# Every target sets up what it needs: a virtualenv with pinned packages (.venv) and the Rust
# extension module tca._native built into it.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TCA    := $(VENV)/bin/tca
STAMP  := $(VENV)/.requirements-installed
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all setup native demo test test-rust test-python examples-rust examples-expected bench lint clean browser

all: native

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

setup: $(STAMP)

# maturin is incremental through cargo: cheap when nothing changed.
native: $(STAMP)
	$(VENV)/bin/maturin develop --release --quiet

demo: native examples examples-rust
	$(TCA) demo --out out

test: test-rust test-python test-c

test-rust:
	cargo test --release --workspace --exclude tca-py

# tests/test_examples.py runs the Rust, Python and C examples against tests/examples/*.out.
test-python: native examples examples-rust browser
	$(PY) -m pytest -q

examples-rust:
	cargo build --release -p tca-sim --examples
	cargo build --release -p hxb-net --bins
	cargo build --release -p expether-net --bins

# After a deliberate model change: rewrite the exact lines of tests/examples/*.out (explain the
# diff in the commit; tests/examples/README.md).
examples-expected: native examples examples-rust
	$(PY) tests/test_examples.py --update

bench: native
	cargo bench -p base --bench event_queue
	cargo bench -p tca-proto --bench engine_run
	$(PY) -m tca.peach.bench.event_queue

lint: native
	$(PY) tools/check_layout.py
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests tools
	$(VENV)/bin/ruff format --check python tests tools

clean:
	rm -rf $(VENV) target out

# Debian's Chromium and its WebDriver, for the browser test of the ExpEther pool manager's page
# (tests/expether/test_pool_browser.py). Installs only as root; otherwise that test is skipped.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "make browser: installing chromium and chromium-driver"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	  echo "make browser: installation failed (no package mirror?): the browser test is skipped"; \
	else echo "make browser: not root (or no apt-get): install chromium and chromium-driver for the browser test"; fi

# ---- real fabric (shm): libtca.so, C examples, MPI comparison (docs/shm-fabric.md) ----

.PHONY: mpi smpi capi capi-smpi examples test-c bench-shm bench-sim-c

# Open MPI (with its OpenSHMEM, oshcc / oshrun) and MPICH from Debian, side by side
# (mpicc.openmpi / mpicc.mpich, mpirun.openmpi / mpirun.mpich), and UCX (libucx-dev,
# ucx-utils). Installs only as root; otherwise the MPI, OpenSHMEM and UCX variants are skipped
# with a message.
MPI_PACKAGES := libopenmpi-dev openmpi-bin mpich libmpich-dev libucx-dev ucx-utils
mpi:
	@if command -v mpicc.openmpi >/dev/null && command -v mpicc.mpich >/dev/null && \
	  command -v ucx_info >/dev/null && pkg-config --exists ucx 2>/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "make mpi: installing Open MPI, MPICH and UCX"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    $(MPI_PACKAGES) >/dev/null) || \
	  echo "make mpi: installation failed (no package mirror?): MPI, OpenSHMEM and UCX variants skipped"; \
	else echo "make mpi: not root (or no apt-get): MPI, OpenSHMEM and UCX variants skipped; install" \
	  "$(MPI_PACKAGES) to build them"; fi

# SimGrid SMPI from Debian (smpicc, smpirun, libsimgrid): C programs with MPI on the simulator
# (`tca cc`, `tca run --fabric sim`). Installs only as root; otherwise those runs are skipped
# with a message.
smpi:
	@if command -v smpicc >/dev/null && [ -f /usr/include/simgrid/s4u/Engine.hpp ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "make smpi: installing SimGrid (libsimgrid-dev)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev >/dev/null) || \
	  echo "make smpi: installation failed (no package mirror?): C programs on the simulator skipped"; \
	else echo "make smpi: not root (or no apt-get): install libsimgrid-dev to run C programs on the simulator"; fi

# libtcasmpi.so: what `tca cc` links besides libtca: the deadlock report across MPI and TCA
# (crates/tca/smpi/glue) and the MVAPICH2 costs of MPI calls on GPU buffers (crates/tca/smpi/c).
SMPI_LIB := target/release/libtcasmpi.so
capi-smpi: capi smpi
	@if command -v smpicc >/dev/null; then $(MAKE) --no-print-directory $(SMPI_LIB); fi

$(SMPI_LIB): crates/tca/smpi/glue/hooks.cpp crates/tca/smpi/c/mpi_gpu.c crates/tca/smpi/include/tca-smpi-mpi.h target/release/libtca.so
	@mkdir -p target/smpi
	g++ -std=c++17 -O2 -fPIC -c crates/tca/smpi/glue/hooks.cpp -o target/smpi/hooks.o
	smpicc -O2 -fPIC -fexceptions -c crates/tca/smpi/c/mpi_gpu.c -o target/smpi/mpi_gpu.o
	g++ -shared -o $@ target/smpi/hooks.o target/smpi/mpi_gpu.o -Ltarget/release -Wl,-rpath,'$$ORIGIN' -ltca -lsimgrid

# libtca.so (target/release), tca-api.h (crates/tca/capi/include), tca.pc (target/release/pkgconfig);
# libtcacudart.so (target/release) with cuda_runtime.h (crates/tca/cuda/include), docs/cuda.md.
capi:
	cargo build --release -p tca-capi
	cargo build --release -p tca-cuda
	@mkdir -p target/release/pkgconfig
	sed 's|@ROOT@|$(CURDIR)|' crates/tca/capi/tca.pc.in > target/release/pkgconfig/tca.pc

examples: capi capi-smpi mpi
	$(MAKE) -C examples/c
	$(MAKE) -C examples/c/hapacs TCA=$(abspath $(TCA))

# The C examples under `tca run` and under both mpiruns (tests/shm/run-c.sh).
test-c: examples native
	TCA=$(TCA) tests/shm/run-c.sh

# Ping-pong on this machine: shm PIO / DMA against MPI-3 RMA (Open MPI, MPICH), OpenSHMEM, UCX
# and the floors (plain stores, memcpy).
bench-shm: examples native
	$(PY) -m tca.peach.shm_bench

# Speed of C programs on the simulator (docs/sim-c.md): a 2-rank GPU ping-pong sweep 8 B - 4 MiB
# with 500 round trips per size, and a 16-rank allgather sweep 16 B - 512 KiB per rank with 100
# iterations per size, on simulated HA-PACS/TCA; each prints wall time and events per second.
bench-sim-c: examples native
	time $(TCA) run -n 2 --fabric sim --platform ha-pacs-tca --stats target/c/sim/gpu_pingpong 4M 500
	time $(TCA) run -n 16 --fabric sim --platform ha-pacs-tca --stats target/c/sim/allgather 512K 100
