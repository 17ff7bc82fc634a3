#!/bin/sh
# Laplace (1024 x 1024 doubles, 50 sweeps) on the shared heap: the
# sequential run, 1 task, and 2 tasks on two hosts (127.0.0.2, 127.0.0.3,
# udp between them), for each protocol and write mode, with the counts of
# rank 0 (SSS_STATS=json). Usage: examples/dsm/bench.sh [N [ITERS]];
# PROTOCOLS (default: all six) and WRITES (default: note trap) choose.
set -eu
N=${1:-1024}
ITERS=${2:-50}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build --release -q -p sss-capi -p sss --manifest-path "$ROOT/Cargo.toml"
LIB=$TARGET/release
EXE=$(mktemp /tmp/dsm-laplace.XXXXXX)
trap 'rm -f "$EXE"' EXIT
cc -std=c11 -O2 -I"$ROOT/include" -o "$EXE" "$ROOT/examples/dsm/laplace.c" \
    -L"$LIB" -lsss -Wl,-rpath,"$LIB"
export SSS_DSM_HEAP=${SSS_DSM_HEAP:-4G}
"$EXE" "$N" "$ITERS" --seq
for proto in ${PROTOCOLS:-ulrc invalidate home_update update update_drct home_only}; do
    for writes in ${WRITES:-note trap}; do
        for place in "-n 1" "-n 2 --hosts 127.0.0.2,127.0.0.3"; do
            echo "== $proto $writes $place"
            # shellcheck disable=SC2086
            SSS_STATS=json SSS_DSM_PROTOCOL=$proto SSS_DSM_WRITES=$writes \
                "$LIB/sss" run $place --timeout 300 "$EXE" "$N" "$ITERS" 2>&1 |
                grep -E 'LAPLACE|"rank":0'
        done
    done
done
