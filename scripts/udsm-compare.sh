#!/bin/sh
# ADSM against UDSM (docs/rcop.md): LU-Contig (n = 512, b = 16) and Radix
# (1M keys) without their notes, built with `sss cc` (ADSM: userfaultfd
# read misses) and `sss cc --udsm` (inline presence checks, no
# userfaultfd), on P tasks over two loopback hosts under ulrc, REPS runs
# each; then both and the pthreads build on one task (instrumentation
# overhead) with inputs large enough for runs of half a second or more
# (LU n = 1536, Radix 24M keys), the pthreads build compiled by the same
# clang -O2 as `sss cc` (SSS_CC, default clang-16), so that the ratio
# measures the instrumentation, not one compiler against another. One
# line per run: program, build, tasks, the program's time
# (s), and per task read+write faults, explicit fetches (pages made
# present by compiled checks) and pages fetched from homes. Every timed
# run holds /tmp/bench.lock.
#
#   scripts/udsm-compare.sh [P] [REPS]
set -eu
P=${1:-4}
REPS=${2:-3}
cd "$(dirname "$0")/.."
SSS=target/release/sss
HOSTS=127.0.0.2,127.0.0.3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for prog in lu radix; do
  m4 parmacs/sss.m4 "examples/parmacs/$prog.c.in" >"$work/$prog.c"
  m4 parmacs/pthreads.m4 "examples/parmacs/$prog.c.in" >"$work/$prog-pt.c"
  "$SSS" cc -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iparmacs -o "$work/$prog-adsm" \
    "$work/$prog.c" parmacs/sss_parmacs.c -lm
  "$SSS" cc --udsm -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iparmacs -o "$work/$prog-udsm" \
    "$work/$prog.c" parmacs/sss_parmacs.c -lm
  "${SSS_CC:-clang-16}" -std=gnu11 -O2 -o "$work/$prog-pt" "$work/$prog-pt.c" -lpthread -lm
done

# run PROG BUILD NTASKS PLACE... -- ARGS...
run() {
  prog=$1 build=$2 n=$3
  shift 3
  place=""
  while [ "$1" != "--" ]; do place="$place $1"; shift; done
  shift
  if [ "$build" = pt ]; then
    out=$(flock /tmp/bench.lock timeout 600 "$work/$prog-pt" "$@" 2>&1)
  else
    # shellcheck disable=SC2086
    out=$(SSS_STATS=json SSS_DSM_WRITES=note SSS_DSM_PROTOCOL=ulrc SSS_NO_DAEMON=1 \
      flock /tmp/bench.lock timeout 600 "$SSS" run $place "$work/$prog-$build" "$@" 2>&1)
  fi
  echo "$out" | awk -v prog="$prog" -v build="$build" -v n="$n" '
    /time_us=/ { for (i = 1; i <= NF; i++) if ($i ~ /^time_us=/) { split($i, a, "="); t = a[2] } }
    /"dsm":/ {
      for (i = 1; i <= split($0, f, /[,{}:]+/); i++) {
        if (f[i] == "\"read_faults\"" || f[i] == "\"write_faults\"") faults += f[i + 1]
        if (f[i] == "\"fetches\"") fetches += f[i + 1]
        if (f[i] == "\"pages_fetched\"") pages += f[i + 1]
      }
    }
    END { printf "%s %s %d %.3f %.0f %.0f %.0f\n", prog, build, n, t / 1e6, faults / n, fetches / n, pages / n }'
}

echo "# program build tasks time_s faults/task fetches/task pages_fetched/task"
for rep in $(seq "$REPS"); do
  for build in adsm udsm; do
    run lu "$build" "$P" -n "$P" --hosts "$HOSTS" -- "$P" 512 16
    run radix "$build" "$P" -n "$P" --hosts "$HOSTS" -- "$P" 1048576
  done
done
for rep in $(seq "$REPS"); do
  for build in pt adsm udsm; do
    run lu "$build" 1 -n 1 -- 1 1536 16
    run radix "$build" 1 -n 1 -- 1 25165824
  done
done
