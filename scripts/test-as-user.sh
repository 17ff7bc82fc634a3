#!/usr/bin/env bash
# Runs the DSM, C API, MPI and launcher tests again as an ordinary user, so a
# feature that works only for root (userfaultfd under the default
# vm.unprivileged_userfaultfd=0, say) fails here and not at our users'.
# Must run as root: it creates the user `sss-test` and removes it, with
# everything it left, at exit. Uses the release test binaries cargo built
# (it builds them as root if needed, never as that user).
set -euo pipefail
cd "$(dirname "$0")/.."

user=sss-test
marker="SSS test runner (scripts/test-as-user.sh)"

if [ "$(id -u)" != 0 ]; then
  echo "test-as-user: must run as root (it creates the user $user)" >&2
  exit 1
fi
if [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null || echo 0)" != 0 ]; then
  echo "note: vm.unprivileged_userfaultfd is not 0: this run does not show the DSM works under the default" >&2
fi

# One run at a time on a machine: the user name is fixed.
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/tmp
exec 9>"$lockdir/sss-test-as-user.lock"
flock 9

cleanup_user() {
  if getent passwd "$user" >/dev/null; then
    pkill -KILL -u "$user" 2>/dev/null || true
    find /dev/shm -maxdepth 1 -user "$user" -delete 2>/dev/null || true
    userdel "$user" 2>/dev/null || true
  fi
}

# A user of that name left by an interrupted run is ours to remove; any
# other is not.
if getent passwd "$user" >/dev/null; then
  if [ "$(getent passwd "$user" | cut -d: -f5)" != "$marker" ]; then
    echo "test-as-user: a user $user exists that this script did not create; not touching it" >&2
    exit 1
  fi
  cleanup_user
fi

tmp=$(mktemp -d /tmp/sss-test-as-user.XXXXXX)
trap 'cleanup_user; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
useradd --system --no-create-home --shell /usr/sbin/nologin --comment "$marker" "$user"

cargo build --release --quiet -p sss-capi -p sss-mpi --lib -p sss-idm --bin sssd -p sss-launch --bins
mapfile -t exes < <(
  cargo test --release -p sss-dsm -p sss-capi -p sss-mpi -p sss-launch --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*/deps/[^"]*"' | cut -d'"' -f4
)
[ "${#exes[@]}" -gt 0 ] || { echo "test-as-user: no test binaries found" >&2; exit 1; }

# The build tree may sit under a directory only root may enter (/root is
# 0700 on Debian). Rather than open such a directory to every user (chmod
# o+x, not undone if this script is killed), copy what the tests read
# into a temporary tree laid out as the repository: headers, examples and
# C sources, and target/release with libsss, the binaries and deps/ with
# the test binaries. The tests find it through SSS_TEST_TREE.
tree=$tmp/tree
rel=$tree/target/release
mkdir -p "$rel/deps" "$tree/crates/capi/tests" "$tree/crates/mpi/tests"
cp -r include examples parmacs "$tree/"
cp crates/capi/sss.pc.in "$tree/crates/capi/"
cp -r crates/capi/tests/c "$tree/crates/capi/tests/"
cp -r crates/mpi/tests/c crates/mpi/tests/f "$tree/crates/mpi/tests/"
cp target/release/libsss.so target/release/libsss.a target/release/libmpi.so \
  target/release/libmpi.a target/release/sssd \
  target/release/sss-run target/release/sss-test-task "$rel/"
ln -s libsss.so "$rel/libsss.so.0"   # the soname programs record
cp "${exes[@]}" "$rel/deps/"
chmod -R a+rX,go-w "$tmp"
home=$tmp/home
mkdir "$home"
chown "$user:" "$home"
chmod 700 "$home"

failed=()
for exe in "${exes[@]}"; do
  name=$(basename "$exe")
  echo "== as $user: $name"
  # A clean environment, as a fresh login of that user would have.
  if ! (cd "$home" && runuser -u "$user" -- env -i \
      HOME="$home" TMPDIR="$home" USER="$user" LOGNAME="$user" \
      PATH=/usr/local/bin:/usr/bin:/bin SSS_TEST_TREE="$tree" \
      "$rel/deps/$name" --quiet); then
    failed+=("$name")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "test-as-user: failed as $user: ${failed[*]}" >&2
  exit 1
fi
echo "test-as-user: every test passed as $user"
