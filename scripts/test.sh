#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need first
# (idempotent), so it works on a fresh Debian 12 machine with Rust.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing packages: ${need_apt[*]} (run as root to install them)" >&2
    exit 1
  fi
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --release
