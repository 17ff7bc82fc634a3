#!/bin/sh
# LU and radix in the form of seed 000 Tables 7-8: 4 tasks on two hosts
# (127.0.0.2, 127.0.0.3; MBCF udp between them), for each ADSM protocol
# and each way of recording writes: write-protect traps, a note after every
# shared store (unoptimized, -DSSS_PM_NOTE_EACH) and one note per
# contiguous run (coalesced). Columns: time of the parallel section, #CM
# (note calls), packets and bytes written to homes, per task (mean over
# the 4 tasks, from SSS_STATS=json). The pthreads build on 4 threads of one
# machine gives the reference time.
# Usage: examples/parmacs/bench.sh   (env: PROTOCOLS, MODES, PROGRAMS,
#        LU_ARGS, RADIX_ARGS, TIMEOUT seconds per run)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROTOCOLS=${PROTOCOLS:-ulrc invalidate home_update update update_drct home_only}
MODES=${MODES:-trap each coalesced}
PROGRAMS=${PROGRAMS:-lu radix}
LU_ARGS=${LU_ARGS:-512 16}
RADIX_ARGS=${RADIX_ARGS:-1048576 1024}
TIMEOUT=${TIMEOUT:-120}
HOSTS=127.0.0.2,127.0.0.3
command -v m4 >/dev/null || { echo "bench.sh: m4 is needed (apt-get install m4)" >&2; exit 1; }
cargo build --release -q -p sss-capi -p sss --manifest-path "$ROOT/Cargo.toml"
LIB=$TARGET/release
TMP=$(mktemp -d /tmp/parmacs-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SSS_DSM_HEAP=${SSS_DSM_HEAP:-4G}

build() { # prog macros note_each
    m4 "$ROOT/parmacs/$2.m4" "$ROOT/examples/parmacs/$1.c.in" >"$TMP/$1-$2.c"
    if [ "$2" = sss ]; then
        cc -std=gnu11 -O2 $3 -I"$ROOT/include" -I"$ROOT/parmacs" -o "$TMP/$1-$2$3" \
            "$TMP/$1-$2.c" "$ROOT/parmacs/sss_parmacs.c" -L"$LIB" -lsss -Wl,-rpath,"$LIB" -lm
    else
        cc -std=gnu11 -O2 -o "$TMP/$1-$2" "$TMP/$1-$2.c" -lpthread -lm
    fi
}

field() { # key line
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

for prog in $PROGRAMS; do
    build "$prog" pthreads ""
    build "$prog" sss ""
    build "$prog" sss -DSSS_PM_NOTE_EACH
    if [ "$prog" = lu ]; then args=$LU_ARGS; tag=LU; else args=$RADIX_ARGS; tag=RADIX; fi
    # shellcheck disable=SC2086
    ref=$("$TMP/$prog-pthreads" 4 $args | grep "^$tag")
    want=$(field checksum "$ref")
    echo
    echo "### $prog $args, 4 tasks on 2 hosts"
    echo
    echo "pthreads, 4 threads on one machine: $(awk "BEGIN{printf \"%.3f\", $(field time_us "$ref")/1e6}") s, checksum $want"
    echo
    echo "| protocol | writes | time (s) | #CM | packets | bytes (MB) | result |"
    echo "|---|---|---:|---:|---:|---:|---|"
    for proto in $PROTOCOLS; do
        for mode in $MODES; do
            case $mode in
                trap) exe=$TMP/$prog-sss; writes=trap ;;
                each) exe=$TMP/$prog-sss-DSSS_PM_NOTE_EACH; writes=note ;;
                *) exe=$TMP/$prog-sss; writes=note ;;
            esac
            # shellcheck disable=SC2086
            out=$(SSS_STATS=json SSS_DSM_PROTOCOL=$proto SSS_DSM_WRITES=$writes \
                timeout $((TIMEOUT + 10)) "$LIB/sss" run -n 4 --hosts $HOSTS --timeout "$TIMEOUT" \
                "$exe" 4 $args 2>&1) || true
            line=$(echo "$out" | grep "^$tag" || true)
            if [ -z "$line" ]; then
                why=$(echo "$out" | grep -m1 -iE "error|timeout|timed out|unknown|not " || echo "no result")
                echo "| $proto | $mode | — | — | — | — | failed: $why |"
                continue
            fi
            got=$(field checksum "$line")
            if [ "$got" = "$want" ]; then result=same; else result="WRONG ($got)"; fi
            stats=$(echo "$out" | grep '"dsm"' | awk '
                { for (i = 1; i <= NF; i++) ; }
                { match($0, /"notes":[0-9]+/); n += substr($0, RSTART + 8, RLENGTH - 8)
                  match($0, /"packets":[0-9]+/); p += substr($0, RSTART + 10, RLENGTH - 10)
                  match($0, /"bytes_sent":[0-9]+/); b += substr($0, RSTART + 13, RLENGTH - 13)
                  k++ }
                END { if (k) printf "%.0f %.0f %.2f", n / k, p / k, b / k / 1e6; else print "- - -" }')
            set -- $stats
            t=$(awk "BEGIN{printf \"%.3f\", $(field time_us "$line")/1e6}")
            echo "| $proto | $mode | $t | $1 | $2 | $3 | $result |"
        done
    done
done
