#!/usr/bin/env bash
# Seed 000 Tables 7 and 8 for our RCOP: LU-Contig (n = 512, b = 16) and
# Radix (1M keys), each task's consistency-code executions (#CM),
# packets and bytes sent, and the program's own time, for
#   no     sss cc -fsss-opt=no     (the seeds' NO: one note per dynamic
#          store, each sent as a packet of its own)
#   mb     sss cc -fsss-opt=mb     (MB: the same notes, combined by the
#          heap into as few packets per home as they fill)
#   ia     sss cc -fsss-opt=ia     (IA: coalescing, each note alone)
#   mbia   sss cc -fsss-opt=mb,ia  (MB & IA, the default)
#   ia0    mbia with SSS_RCOP_DIFF=0: no diffed ranges (stores in
#          loops that are not one range noted store by store, cursor
#          loops by bucket), to show what diffed ranges change
#   hand   cc with the examples' hand-placed ST/NOTE_RANGE notes (each
#          a call into the runtime: -DSSS_NO_INLINE_NOTES)
#   trap   cc without notes, write-protect faults (SSS_DSM_WRITES=trap)
# run on P tasks over two loopback hosts, REPS times each (median time;
# counts from the median run, averaged over the tasks). #CM is how often
# the inserted consistency code ran (calls of sss_rcop_note and of the
# diffed ranges' sss_rcop_twin_range / sss_rcop_cursor_twin), or for
# hand notes how often the program noted. Each program prints which id
# every task took (PM_SHOW_ID): the ids decide which blocks or keys a
# task owns, and so how much crosses between the hosts, and they are
# taken under a lock in whatever order the tasks come. A second table
# groups the runs by the ids on each host, so that builds are compared
# on runs of one split (the first table's median run may be of another
# split for each build). Every run holds
# /tmp/bench.lock (flock), so that runs of other benchmarks on a shared
# machine do not overlap them.
#
#   scripts/rcop-tables.sh [P] [REPS]          (default 4 tasks, 3 runs)
#
# Combining (the seeds' MB) is the heap's: a release merges its notes
# and packs those for one home into as few packets as they fill; a
# program built without `mb` has the heap send each note alone. Needs
# clang-16 and llvm-16-dev (what `sss cc` uses).
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-4}
REPS=${2:-3}
# The builds to run (a subset narrows it: SSS_TABLE_VARIANTS="mbia trap").
VARIANTS=${SSS_TABLE_VARIANTS:-no mb ia mbia ia0 hand trap}
HOSTS=${SSS_TABLE_HOSTS:-127.0.0.2,127.0.0.3}
cargo build --release -q -p sss -p sss-capi
SSS=$PWD/target/release/sss
LIB=$PWD/target/release
work=$(mktemp -d /tmp/sss-rcop-tables-XXXXXX)
trap 'rm -rf "$work"' EXIT

build() { # prog variant
  local prog=$1 v=$2 src=$work/$1.c exe=$work/$1-$2
  m4 parmacs/sss.m4 "examples/parmacs/$prog.c.in" > "$src"
  case $v in
    no|mb|ia) "$SSS" cc "-fsss-opt=$v" -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iparmacs -o "$exe" "$src" parmacs/sss_parmacs.c -lm ;;
    mbia) "$SSS" cc -fsss-opt=mb,ia -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iparmacs -o "$exe" "$src" parmacs/sss_parmacs.c -lm ;;
    ia0) SSS_RCOP_DIFF=0 "$SSS" cc -fsss-opt=mb,ia -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iparmacs -o "$exe" "$src" parmacs/sss_parmacs.c -lm ;;
    # Every hand-placed note a call, so that the heap counts them.
    hand) cc -std=gnu11 -O2 -DSSS_NO_INLINE_NOTES -Iinclude -Iparmacs -o "$exe" "$src" parmacs/sss_parmacs.c -L"$LIB" -Wl,-rpath,"$LIB" -lsss -lm ;;
    trap) cc -std=gnu11 -O2 -DSSS_PM_NO_NOTES -Iinclude -Iparmacs -o "$exe" "$src" parmacs/sss_parmacs.c -L"$LIB" -Wl,-rpath,"$LIB" -lsss -lm ;;
  esac
}

NHOSTS=$(tr ',' '\n' <<<"$HOSTS" | grep -c .)

# Which ids the tasks of each host took, from the programs' "ID me=I
# rank=R" lines (PM_SHOW_ID): `sss run` places the ranks on the hosts
# in even blocks (earlier hosts take the remainder), and the ids, taken
# under a lock in whatever order the tasks come, decide the blocks'
# owners. Printed as the hosts' id sets, e.g.
# "{0,1}{2,3}".
split_of() { # program output
  grep -E '^ID me=[0-9]+ rank=[0-9]+' <<<"$1" | sed -E 's/^ID me=([0-9]+) rank=([0-9]+).*/\1 \2/' |
    awk -v nh="$NHOSTS" -v np="$P" 'BEGIN { for (k = 0; k < nh; k++) { c = int(np / nh) + (k < np % nh); for (i = 0; i < c; i++) host[r++] = k } }
      { h[host[$2]] = h[host[$2]] $1 "," }
      END { for (k in h) { n = split(h[k], a, ","); s = "";
              for (i = 1; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
              for (i = 1; i < n; i++) s = s (i > 1 ? "," : "") a[i]; print "{" s "}" } }' |
    sort | paste -sd ''
}

# One run: "time_us notes packets bytes checksum ranges split", the
# counts averaged over the tasks (ranges: what cursor loops noted at
# their exits, two #CM a loop).
run() { # prog variant args...
  local prog=$1 v=$2; shift 2
  local writes=note
  [ "$v" = trap ] && writes=trap
  local out
  out=$(PM_SHOW_ID=1 SSS_STATS=json SSS_DSM_WRITES=$writes SSS_DSM_PROTOCOL=ulrc \
    flock /tmp/bench.lock timeout 600 "$SSS" run -n "$P" --hosts "$HOSTS" "$work/$prog-$v" "$@" 2>&1)
  local split
  split=$(split_of "$out")
  local line
  line=$(grep -E '^(LU|RADIX) ' <<<"$out" | head -1)
  local t sum
  t=$(grep -o 'time_us=[0-9]*' <<<"$line" | cut -d= -f2)
  sum=$(grep -o 'checksum=[0-9a-f]*' <<<"$line" | cut -d= -f2)
  # #CM: the calls of the code sss cc inserted ("rcop" lines), else the
  # notes the heap counted (hand-placed notes, each a call).
  grep -E '^\{"(dsm|rcop)"' <<<"$out" | jq -rs --arg t "$t" --arg c "$sum" \
    '(map(select(.dsm)) | map(.dsm)) as $d | (map(select(.rcop)) | map(.rcop.notes)) as $r
     | (map(select(.rcop)) | map(.rcop.cursor_ranges // 0)) as $cr
     | [(if ($r|length) > 0 then ($r|add)/($d|length) else ($d|map(.notes)|add)/($d|length) end),
        ($d|map(.packets)|add/length), ($d|map(.bytes_sent)|add/length),
        (if ($cr|length) > 0 then ($cr|add)/($d|length) else 0 end)] as $m
     | "\($t) \($m[0]|floor) \($m[1]|floor) \($m[2]|floor) \($c) \($m[3]|floor)"' |
    sed "s/\$/ ${split:-?}/"
}

table() { # prog title seeds args...
  local prog=$1 title=$2 seeds=$3; shift 3
  echo "### $title, $P tasks on $HOSTS"
  echo
  echo "| build | time (s) | #CM per task | cursor ranges per task | packets per task | MB per task | checksum |"
  echo "|---|---:|---:|---:|---:|---:|---|"
  local v
  for v in $VARIANTS; do
    build "$prog" "$v" > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
  done
  # The builds' runs alternate (rep 1 of each, rep 2 of each, ...), so
  # that a slow spell of the shared machine hits every build alike.
  declare -A all=()
  local r
  for r in $(seq "$REPS"); do
    for v in $VARIANTS; do
      all[$v]+="$(run "$prog" "$v" "$@")"$'\n'
    done
  done
  for v in $VARIANTS; do
    local runs=()
    mapfile -t runs < <(printf '%s' "${all[$v]}")
    # The median run by time.
    local med
    med=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n "$(( (REPS + 1) / 2 ))p")
    read -r t cm pk by sum cr _ <<<"$med"
    local times
    times=$(printf '%s\n' "${runs[@]}" | awk '{printf "%s%.2f", (NR>1?" / ":""), $1/1e6}')
    printf '| %s | %.2f (%s) | %s | %s | %s | %.2f | %s |\n' "$v" "$(echo "$t / 1000000" | bc -l)" \
      "$times" "$cm" "$cr" "$pk" "$(echo "$by / 1000000" | bc -l)" "$sum"
  done
  echo
  # Like with like: the runs of each build grouped by how the ids fell
  # on the hosts (medians within the group).
  echo "By the hosts' ids (runs of one split compared):"
  echo
  echo "| ids on the hosts | build | runs | time (s), median (runs) | packets per task, median (runs) |"
  echo "|---|---|---:|---|---|"
  for v in $VARIANTS; do printf '%s' "${all[$v]}" | sed "s/^/$v /"; done |
    awk '{ k = $8 " " $1; n[k]++; t[k, n[k]] = $2; p[k, n[k]] = $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
      function med(arr, k, c,   i, j, x, y) { for (i = 1; i <= c; i++) y[i] = arr[k, i]
          for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (y[j] < y[i]) { x = y[i]; y[i] = y[j]; y[j] = x }
          return y[int((c + 1) / 2)] }
      function all(arr, k, c, f, d,   i, s) { s = ""; for (i = 1; i <= c; i++) s = s (i > 1 ? " / " : "") sprintf(f, arr[k, i] / d); return s }
      END { for (i = 1; i <= m; i++) { k = order[i]; split(k, kk, " ")
              printf "| %s | %s | %d | %.3f (%s) | %d (%s) |\n", kk[1], kk[2], n[k],
                med(t, k, n[k]) / 1e6, all(t, k, n[k], "%.3f", 1e6), med(p, k, n[k]), all(p, k, n[k], "%d", 1) } }' |
    sort -t'|' -k2,2 -s
  echo
  echo "Seed 000 (8 processors, SSS-CORE): $seeds"
  echo
}

table lu "Table 7: LU-Contig (n = 512, b = 16)" \
  "NO 28.20 s, 5592K #CM, 5206K packets, 47.73 MB; MB 14.35 s, 5592K, 83.5K, 113.00 MB; IA 2.17 s, 1.43K, 7.73K, 9.42 MB; MB & IA 2.16 s, 1.43K, 7.60K, 9.27 MB" \
  "$P" 512 16
table radix "Table 8: Radix (1M keys)" \
  "NO 21.90 s, 793K #CM, 3220K packets, 76.72 MB; MB 12.13 s, 793K, 75.8K, 101.08 MB; IA 1.57 s, 2.08K, 19.5K, 13.47 MB; MB & IA 1.24 s, 2.08K, 10.1K, 13.63 MB" \
  "$P" 1048576
