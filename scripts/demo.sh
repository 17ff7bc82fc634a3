#!/usr/bin/env bash
# The main job on a local one-node cluster. Until the runtime lands (the
# ray tracer over udp/shm), the demo is a simulated cluster: four MBCF
# endpoints exchanging 20 000 operations over a network that drops 20 % of
# packets, duplicates, reorders and corrupts others; the counters they bump
# must come out exactly right.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
exec cargo run --release -q -p sss-proto --example lossy_cluster -- "$@"
