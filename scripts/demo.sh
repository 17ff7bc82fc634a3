#!/usr/bin/env bash
# The main job on a local one-node cluster: the parallel ray tracer of
# seed 001 §7. Four worker tasks render pixel blocks and WRITE them
# straight into the display task's frame buffer over MBCF; the display
# writes raytrace.png and prints time, checksum, and per-task packets,
# bytes and retransmissions.
#
# Extra arguments go to `sss run`, before the program, e.g.
#   ./scripts/demo.sh --hosts 127.0.0.2,127.0.0.3     # two "nodes", udp between them
# Environment: SSS_FAULT_DROP=0.1 injects 10 % packet loss.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
if ! command -v cc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >/dev/null
  else
    echo "a C compiler is needed (apt-get install build-essential)" >&2; exit 1
  fi
fi
cargo build --release -q -p sss -p sss-raytrace
exec ./target/release/sss run -n 5 "$@" ./target/release/sss-raytrace --out raytrace.png
