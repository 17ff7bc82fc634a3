#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need first
# (idempotent), so it works on a fresh Debian 12 machine with Rust.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: a C toolchain and pkg-config for the C API examples,
# gfortran for the Fortran MPI bindings, clang-16 and llvm-16-dev for the
# RCOP pass of `sss cc`,
# iproute2 and nftables for the tests that inject real packet loss in a
# network namespace of their own, m4 for the PARMACS programs, OpenSSH for
# the ssh spawner's test against a real sshd (started by the test on
# loopback addresses; the system's own ssh service is left stopped), Open
# MPI's mpirun, MPICH's mpiexec.hydra and a one-node Slurm (slurm-wlm,
# munge) for the tests that they launch an SSS program, Python with venv for
# the `sss` Python package (scripts/test-python.sh fetches maturin, pytest,
# numpy and matplotlib into a virtual environment under target/).
need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v gfortran >/dev/null 2>&1 || need_apt+=(gfortran)
command -v clang-16 >/dev/null 2>&1 || need_apt+=(clang-16)
command -v llvm-config-16 >/dev/null 2>&1 || need_apt+=(llvm-16-dev)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
command -v m4 >/dev/null 2>&1 || need_apt+=(m4)
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v mpirun >/dev/null 2>&1 || need_apt+=(openmpi-bin)
[ -x /usr/bin/mpiexec.hydra ] || need_apt+=(mpich)
[ -x /usr/sbin/slurmd ] || need_apt+=(slurm-wlm munge)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    # The tests start their own sshd, munged and Slurm daemons on
    # loopback; the system's services stay stopped.
    if command -v systemctl >/dev/null 2>&1; then
      systemctl disable --now ssh munge slurmd slurmctld >/dev/null 2>&1 || true
    fi
  else
    echo "note: missing ${need_apt[*]}; run as root to install them (some tests will skip)" >&2
  fi
fi
command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }

# As root the namespace/nftables loss test and the full-tmpfs test must
# run, not skip.
if [ "$(id -u)" = 0 ]; then
  export SSS_REQUIRE_NETNS=1
  export SSS_REQUIRE_ROOT=1
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
cargo test --workspace --release
scripts/test-python.sh

# Once more as an ordinary user (root only: it creates that user).
if [ "$(id -u)" = 0 ]; then
  scripts/test-as-user.sh
fi
