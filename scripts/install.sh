#!/usr/bin/env bash
# Installs SSS under a prefix:
#   scripts/install.sh --prefix DIR [--no-build]
#
#   DIR/bin/                sss, sssd, sss-run; mpicc, mpicxx, mpiexec
#                           (sss mpicc, sss mpicxx, sss run)
#   DIR/lib/                libsss.so.VERSION (soname libsss.so.0) with the
#                           libsss.so.0 and libsss.so links, libsss.a;
#                           libmpi.so, libmpi.a
#   DIR/lib/pkgconfig/      sss.pc
#   DIR/include/            sss.h, mpi.h
#   DIR/share/sss/          parmacs/ (macro files and runtime), examples/
#   DIR/share/man/man1/     sss(1) and one page per subcommand
#   DIR/share/bash-completion/completions/sss, zsh and fish completions
#
# Builds the release binaries first (cargo), unless --no-build.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=""
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$prefix" ] || { echo "install.sh: --prefix DIR is required" >&2; exit 2; }
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
major=0   # the soname's number (crates/capi/build.rs)

if [ "$build" = 1 ]; then
  cargo build --release --quiet -p sss -p sss-idm --bin sssd -p sss-launch --bins -p sss-capi -p sss-mpi --lib
fi
rel=target/release
for f in sss sssd sss-run libsss.so libsss.a libmpi.so libmpi.a; do
  [ -e "$rel/$f" ] || { echo "install.sh: $rel/$f is missing (build first, or drop --no-build)" >&2; exit 1; }
done

install -d "$prefix/bin" "$prefix/lib/pkgconfig" "$prefix/include" \
  "$prefix/share/sss/parmacs" "$prefix/share/sss/examples" "$prefix/share/man/man1" \
  "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d"

install -m 755 "$rel/sss" "$rel/sssd" "$rel/sss-run" "$prefix/bin/"
install -m 755 "$rel/libsss.so" "$prefix/lib/libsss.so.$version"
ln -sf "libsss.so.$version" "$prefix/lib/libsss.so.$major"
ln -sf "libsss.so.$major" "$prefix/lib/libsss.so"
install -m 644 "$rel/libsss.a" "$prefix/lib/"
install -m 644 include/sss.h include/mpi.h include/mpif.h "$prefix/include/"
install -m 755 "$rel/libmpi.so" "$prefix/lib/"
install -m 644 "$rel/libmpi.a" "$prefix/lib/"
# The names MPI users type, as Open MPI and MPICH install them.
for w in "mpicc:mpicc" "mpicxx:mpicxx" "mpif90:mpif90" "mpifort:mpif90" "mpiexec:run" "mpirun:run"; do
  name=${w%%:*} sub=${w#*:}
  printf '#!/bin/sh\nexec "$(dirname "$0")/sss" %s "$@"\n' "$sub" > "$prefix/bin/$name"
  chmod 755 "$prefix/bin/$name"
done
# The `use mpi` module, for the gfortran installed now (sss mpif90
# builds one per compiler into ~/.cache/sss for any other).
if command -v gfortran >/dev/null 2>&1; then
  mod=$(mktemp -d)
  printf "module mpi\n  implicit none\n  include 'mpif.h'\nend module mpi\n" > "$mod/mpi.f90"
  (cd "$mod" && gfortran -I"$prefix/include" -c mpi.f90) && install -m 644 "$mod/mpi.mod" "$prefix/include/"
  rm -rf "$mod"
fi
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$prefix/lib|" \
    -e "s|@INCLUDEDIR@|$prefix/include|" -e "s|@VERSION@|$version|" \
    crates/capi/sss.pc.in | grep -v '^#' > "$prefix/lib/pkgconfig/sss.pc"
cp -r parmacs/. "$prefix/share/sss/parmacs/"
cp -r examples/. "$prefix/share/sss/examples/"

comp=$(mktemp -d)
trap 'rm -rf "$comp"' EXIT
"$prefix/bin/sss" __gen-docs --man "$prefix/share/man/man1" --completions "$comp"
install -m 644 "$comp/sss.bash" "$prefix/share/bash-completion/completions/sss"
install -m 644 "$comp/_sss" "$prefix/share/zsh/site-functions/_sss"
install -m 644 "$comp/sss.fish" "$prefix/share/fish/vendor_completions.d/sss.fish"

echo "installed SSS $version under $prefix"
echo "  PATH=$prefix/bin:\$PATH  PKG_CONFIG_PATH=$prefix/lib/pkgconfig  MANPATH=$prefix/share/man"
