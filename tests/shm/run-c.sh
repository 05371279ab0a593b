#!/usr/bin/env bash
# The C examples and the C API error test, under `tca run` and under mpirun (Open MPI and
# MPICH, where installed), with short iteration counts. Fails on the first failing run, and
# when a run leaves anything in /dev/shm. Called by `make test-c` (TCA = the tca command).
set -euo pipefail
cd "$(dirname "$0")/../.."
TCA=${TCA:-tca}
OUT=target/c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export TCA_TIMEOUT_MS=30000

shm_files() { find /dev/shm -maxdepth 1 -name 'tca-*' 2>/dev/null | sort; }
before=$(shm_files)

flags=$(PKG_CONFIG_PATH=target/release/pkgconfig pkg-config --cflags --libs tca 2>/dev/null ||
    echo "-Icrates/tca/capi/include -Ltarget/release -Wl,-rpath,$PWD/target/release -ltca")
cc -O2 -Wall -Wextra -Werror -o "$OUT/c_api_errors" tests/shm/c_api_errors.c $flags
cc -O2 -Wall -Wextra -Werror -o "$OUT/published_api" tests/shm/published_api.c $flags

step() {
    echo "== $*"
    timeout 180 "$@"
}

step $TCA run -n 2 "$OUT/c_api_errors"
step $TCA run -n 4 "$OUT/c_api_errors"
step env TCA_SPIN_US=0 $TCA run -n 2 "$OUT/c_api_errors"
# tcaDescSet on a channel whose run is in flight succeeds (it waits for the run).
for n in 2 4 8; do
    step $TCA run -n $n "$OUT/published_api"
done
# The collective library (tcaColl*): every operator on every type against a serial reference.
cc -O2 -Wall -Wextra -Werror -o "$OUT/collectives" tests/shm/collectives.c $flags
for n in 1 2 3 4 16; do
    step $TCA run -n $n "$OUT/collectives"
done
# A chain kicked every iteration next to the library's chains: TCA_ERROR_CHANNEL_TAKEN after a
# collective took its channel, until it is registered again; untouched outside TCA_COLL_CHANNELS.
cc -O2 -Wall -Wextra -Werror -o "$OUT/coll_channels" tests/shm/coll_channels.c $flags
for n in 2 3; do
    step $TCA run -n $n "$OUT/coll_channels" library
done
TCA_COLL_CHANNELS=2,3 step $TCA run -n 3 "$OUT/coll_channels" outside
# Descriptor tables by tag and in internal memory: a block-stride face exchange, data checked.
cc -O2 -Wall -Wextra -Werror -o "$OUT/desc_table" tests/shm/desc_table.c $flags
for n in 2 4; do
    step $TCA run -n $n "$OUT/desc_table" 10
done

# The CUDA runtime of tca on this fabric (no GPU: device memory is host memory), docs/cuda.md.
cc -O2 -Wall -Wextra -Werror -o "$OUT/cuda_runtime" tests/shm/cuda_runtime.c -Icrates/tca/cuda/include \
    -Ltarget/release -Wl,-rpath,"$PWD/target/release" -ltcacudart $flags
step $TCA run -n 2 "$OUT/cuda_runtime"
step $TCA run -n 3 "$OUT/cuda_runtime"

# Inconsistent wait settings are refused at tcaInit, with the reason, at once.
echo "== TCA_SPIN_US=30000000 TCA_TIMEOUT_MS=300 $TCA run -n 2 pingpong (must fail)"
start=$(date +%s)
if TCA_SPIN_US=30000000 TCA_TIMEOUT_MS=300 timeout 60 $TCA run -n 2 "$OUT/pingpong" pio 64 0.01 \
    >"$OUT/spin.out" 2>&1; then
    echo "a spin longer than the timeout was accepted"; cat "$OUT/spin.out"; exit 1
fi
grep -q "TCA_SPIN_US=30000000 is longer than TCA_TIMEOUT_MS=300" "$OUT/spin.out" ||
    { echo "no reason given:"; cat "$OUT/spin.out"; exit 1; }
[ $(($(date +%s) - start)) -lt 20 ] || { echo "refusing the settings took too long"; exit 1; }
# The cost of one PIO call (and that its payload lands).
step $TCA run -n 1 "$OUT/call_cost" 1000
step $TCA run -n 2 "$OUT/pingpong" pio 65536 0.02
step $TCA run -n 2 "$OUT/pingpong" dma 65536 0.02
step $TCA run -n 3 "$OUT/pingpong" dma-chain 65536 0.02
for n in 1 2 4 8; do
    step $TCA run -n $n "$OUT/block_stride" 5
done
# More ranks than CPUs: waits sleep instead of spinning.
step $TCA run -n 16 "$OUT/alltoall" 64 20
step $TCA run -n 2 "$OUT/alltoall" 4096 100

for mpi in openmpi mpich; do
    if ! command -v "mpirun.$mpi" >/dev/null || [ ! -x "$OUT/pingpong.$mpi" ]; then
        echo "SKIP $mpi: mpirun.$mpi or the $mpi build of the examples is missing (make mpi as root)"
        continue
    fi
    run=("mpirun.$mpi")
    [ "$mpi" = openmpi ] && run+=(--oversubscribe)
    step "${run[@]}" -n 2 "$OUT/pingpong.$mpi" pio 65536 0.02
    step "${run[@]}" -n 2 "$OUT/pingpong.$mpi" dma 65536 0.02
    step "${run[@]}" -n 4 "$OUT/block_stride.$mpi" 5
    step "${run[@]}" -n 3 "$OUT/alltoall.$mpi" 64 20
    step "${run[@]}" -n 2 "$OUT/mpi_rma_pingpong.$mpi" 4096 0.02
    step "${run[@]}" -n 5 "$OUT/collectives"
done

after=$(shm_files)
if [ "$before" != "$after" ]; then
    echo "left in /dev/shm:"; comm -13 <(echo "$before") <(echo "$after")
    exit 1
fi
echo "test-c: all C runs passed, nothing left in /dev/shm"
