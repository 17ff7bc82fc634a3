#!/usr/bin/env bash
# The `sss` Python package: builds its wheel with maturin inside a virtual
# environment under target/, installs it there with pytest, numpy and
# matplotlib, and runs crates/python/tests. Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

py=target/pyvenv
if [ ! -x "$py/bin/python" ]; then
  python3 -m venv "$py"
fi
"$py/bin/pip" install --quiet --disable-pip-version-check maturin pytest numpy matplotlib
rm -rf target/wheels
"$py/bin/maturin" build --release --quiet -m crates/python/Cargo.toml -o target/wheels
"$py/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/sss-*.whl
cargo build --release --quiet -p sss
SSS_BIN="$PWD/target/release/sss" MPLBACKEND=Agg "$py/bin/pytest" -q crates/python/tests
