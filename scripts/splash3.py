#!/usr/bin/env python3
"""Builds and runs SPLASH-3 on SSS as a user would, and prints the table.

    scripts/splash3.py PATH/TO/Splash-3/codes [--only barnes,radiosity] ...

The SPLASH-3 tree is the user's (never part of this repository); it is
copied twice under --work: once built with SPLASH-3's own pthreads macros
(the reference), once with `parmacs/sss.m4` and each program's own
Makefile. Every SSS run is compared with the reference run on as many
threads: the program's result lines (timings dropped), or the image it
writes. Needs `cargo build --release -p sss` (for `sss` and libsss).
"""

import argparse
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SSS = os.path.join(REPO, "target", "release", "sss")


def lines(pattern):
    """Result: the output lines matching `pattern`, timings left out, in
    sorted order (tasks print through separate pipes, threads through
    one stream, so lines of different tasks may come in another order)."""
    rx, timing = re.compile(pattern), re.compile(r"(?i)time")
    return lambda out, cwd: sorted(
        ln for ln in out.splitlines() if rx.search(ln) and not timing.search(ln)
    )


def finished(marker):
    """Result for programs that print none: that they got to `marker`."""
    return lambda out, cwd: ["finished"] if marker in out else []


def tiff_strips(path):
    """The image data of a TIFF file Volrend writes: the bytes between the
    header and the directory, not the directory, whose padding bytes
    differ between processes (see docs/parmacs.md). Its bundled libtiff
    writes the header's directory offset as a 64-bit long after 4 bytes
    of padding."""
    with open(path, "rb") as f:
        data = f.read()
    if data[4:8] == b"\0\0\0\0":
        (diroff,) = struct.unpack("<Q", data[8:16])
        first = 16
    else:
        (diroff,) = struct.unpack("<I" if data[:2] == b"II" else ">I", data[4:8])
        first = 8
    if not first <= diroff <= len(data):
        raise OSError("%s: not a TIFF file Volrend writes" % path)
    return data[first:diroff]


def volrend_images(out, cwd):
    names = sorted(
        f for f in os.listdir(os.path.join(cwd, "inputs")) if re.match(r"head-scaleddown4_\d+$", f)
    )
    return [
        "%s %s" % (n, hashlib.sha256(tiff_strips(os.path.join(cwd, "inputs", n))).hexdigest()[:16])
        for n in names
    ]


def raytrace_image(out, cwd):
    with open(os.path.join(cwd, "inputs", "teapot.rl"), "rb") as f:
        return ["teapot.rl " + hashlib.sha256(f.read()).hexdigest()[:16]]


def clean_outputs(cwd):
    for d in (cwd, os.path.join(cwd, "inputs")):
        for f in os.listdir(d) if os.path.isdir(d) else []:
            if re.match(r"head-scaleddown4_\d+$", f) or f == "teapot.rl":
                os.remove(os.path.join(d, f))


def barnes_input(p):
    # 1024 bodies, 3 steps of 0.025, no output file.
    return "\n1024\n123\n\n0.025\n0.05\n1.0\n2.0\n5.0\n0.075\n0.25\n%d\n" % p


def fmm_input(p, cwd):
    with open(os.path.join(cwd, "inputs", "input.1.2048")) as f:
        rows = f.read().splitlines()
    rows[4] = str(p)
    return "\n".join(rows) + "\n"


def water_input(p, cwd):
    with open(os.path.join(cwd, "inputs", "n512-p%d" % p)) as f:
        return f.read()


# name, directory, binary, argv(P), stdin(P, cwd) or None, result,
# check on >= 2 tasks ("exact" or "ends"), extra SSS environment.
PROGRAMS = [
    ("FFT", "kernels/fft", "FFT", lambda p: ["-m16", "-p%d" % p, "-t"], None,
     lines(r"^Checksum|TEST"), "exact", {}),
    ("LU contiguous", "kernels/lu/contiguous_blocks", "LU", lambda p: ["-n256", "-p%d" % p, "-t"],
     None, lines(r"TEST"), "exact", {}),
    ("LU non-contiguous", "kernels/lu/non_contiguous_blocks", "LU",
     lambda p: ["-n256", "-p%d" % p, "-t"], None, lines(r"TEST"), "exact", {}),
    ("Radix", "kernels/radix", "RADIX", lambda p: ["-p%d" % p, "-n262144", "-t"], None,
     lines(r"PASSED|FAILED|ERROR"), "exact", {}),
    ("Cholesky", "kernels/cholesky", "CHOLESKY", lambda p: ["-p%d" % p, "-t"],
     lambda p, cwd: open(os.path.join(cwd, "inputs", "tk15.O")).read(),
     lines(r"PASSED|FAILED|operations for factorization"), "exact", {}),
    ("Ocean contiguous", "apps/ocean/contiguous_partitions", "OCEAN",
     lambda p: ["-n130", "-p%d" % p, "-o"], None, lines(r"^iter "), "exact", {}),
    ("Ocean non-contiguous", "apps/ocean/non_contiguous_partitions", "OCEAN",
     lambda p: ["-n130", "-p%d" % p, "-o"], None, lines(r"^iter "), "exact",
     {"SSS_DSM_HEAP": "64G", "SSS_PARMACS_PLACEMENT": "block"}),
    ("Barnes", "apps/barnes", "BARNES", lambda p: [], lambda p, cwd: barnes_input(p),
     finished("COMPUTETIME"), "exact", {}),
    ("FMM", "apps/fmm", "FMM", lambda p: ["-o"], fmm_input, lines(r"^P\s+\d+ :"), "exact", {}),
    ("Water-nsquared", "apps/water-nsquared", "WATER-NSQUARED", lambda p: [], water_input,
     lines(r"^\s+-?\d+(\.\d+)?\s+-?\d+\.\d+|XTT"), "exact", {}),
    ("Water-spatial", "apps/water-spatial", "WATER-SPATIAL", lambda p: [], water_input,
     lines(r"^\s+-?\d+(\.\d+)?\s+-?\d+\.\d+|XTT"), "exact", {}),
    ("Radiosity", "apps/radiosity", "RADIOSITY",
     lambda p: ["-p", str(p), "-ae", "5000", "-bf", "0.1", "-en", "0.05", "-room", "-batch"],
     None, lines(r"^\s+(Number|Total|Iterations|completely|partially|Common|Avg|Elem)"),
     "ends", {}),
    ("Raytrace", "apps/raytrace", "RAYTRACE", lambda p: ["-p%d" % p, "-m64", "inputs/teapot.env"],
     None, raytrace_image, "exact", {}),
    ("Volrend", "apps/volrend", "VOLREND", lambda p: [str(p), "inputs/head-scaleddown4", "4"],
     None, volrend_images, "exact", {}),
]


# Compiler flags both builds of a program get. Volrend's Init_Decomposition
# reads `newfactor` uninitialized on 2 to 4 processors (no factor found):
# whatever the stack held decides the loop bound, which ran for ever in
# one `sss cc` build (it held DBL_MAX); zeroed, as gcc's builds happened
# to have it, the decomposition is the threads' one.
EXTRA_CFLAGS = {"Volrend": "-ftrivial-auto-var-init=zero"}


def build(tree, macros, cc, ldflags, log):
    ok = {}
    for name, d, binary, *_ in PROGRAMS:
        cwd = os.path.join(tree, d)
        args = ["make", "-s", "-j2"]
        extra = EXTRA_CFLAGS.get(name)
        if macros:
            args += ["MACROS=" + macros, "CC=" + cc + (" " + extra if extra else ""),
                     "LDFLAGS=" + ldflags]
        elif extra:
            args += ["CC=gcc " + extra]
        r = subprocess.run(args, cwd=cwd, stdout=log, stderr=log)
        ok[name] = r.returncode == 0 and os.path.exists(os.path.join(cwd, binary))
    return ok


def run(cmd, cwd, stdin, env, timeout):
    """(seconds, exit status or "timeout", output)."""
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=cwd, input=stdin, env=env, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", start_new_session=True)
        return time.monotonic() - t0, r.returncode, r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return time.monotonic() - t0, "timeout", out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("codes", help="SPLASH-3's codes/ directory")
    ap.add_argument("--work", default="/tmp/sss-splash3",
                    help="scratch directory (replaced; one this script made, or new)")
    ap.add_argument("--only", help="comma-separated program names (case-insensitive prefixes)")
    ap.add_argument("--configs", default="1,2,4,hosts-ulrc,hosts-invalidate",
                    help="task counts on one node and hosts-PROTOCOL runs (4 tasks on two hosts)")
    ap.add_argument("--hosts", default="127.0.0.2,127.0.0.3")
    ap.add_argument("--protocol", default="ulrc", help="protocol of the one-node runs")
    ap.add_argument("--writes", default="trap", choices=["trap", "note"],
                    help="SSS_DSM_WRITES of the SSS runs")
    ap.add_argument("--cc", default="gcc", choices=["gcc", "sss"],
                    help="compiler of the SSS build: gcc, or `sss cc` (RCOP notes)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run")
    ap.add_argument("--keep", action="store_true", help="keep --work afterwards")
    a = ap.parse_args()
    if a.writes == "note" and a.cc == "gcc":
        sys.exit("splash3: --writes note needs --cc sss (nothing notes the heap's stores in a gcc build)")
    if not os.path.exists(SSS):
        sys.exit("splash3: build first: cargo build --release -p sss")
    progs = PROGRAMS
    if a.only:
        want = [w.strip().lower() for w in a.only.split(",")]
        progs = [p for p in PROGRAMS if any(p[0].lower().startswith(w) for w in want)]
    # Only a directory this script made is replaced.
    marker = os.path.join(a.work, ".sss-splash3")
    if os.path.isdir(a.work) and os.listdir(a.work) and not os.path.exists(marker):
        sys.exit("splash3: %s exists and was not made by this script; pick another --work" % a.work)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    open(marker, "w").close()
    ref_tree, sss_tree = os.path.join(a.work, "pthreads"), os.path.join(a.work, "sss")
    shutil.copytree(a.codes, ref_tree, symlinks=True)
    shutil.copytree(a.codes, sss_tree, symlinks=True)
    lib = os.path.join(REPO, "target", "release")
    with open(os.path.join(a.work, "build.log"), "w") as log:
        built_ref = build(ref_tree, None, None, None, log)
        built_sss = build(
            sss_tree, os.path.join(REPO, "parmacs", "sss.m4"),
            "%s -I%s -I%s" % ("gcc" if a.cc == "gcc" else SSS + " cc",
                              os.path.join(REPO, "include"), os.path.join(REPO, "parmacs")),
            "%s -L%s -lsss -Wl,-rpath,%s -lm" % (os.path.join(REPO, "parmacs", "sss_parmacs.c"), lib, lib),
            log)
    configs = a.configs.split(",")
    print("| program | build | " + " | ".join(configs) + " | 1 task / 1 thread (s) | 4 tasks / 4 threads (s) |")
    print("|---|---|" + "---|" * len(configs) + "---|---|")
    failures = 0
    for name, d, binary, argv, stdin, result, multi, extra in progs:
        ref_cwd, sss_cwd = os.path.join(ref_tree, d), os.path.join(sss_tree, d)
        row = [name, "ok" if built_sss[name] else "FAILS"]
        refs, times = {}, {}
        for c in configs:
            if not built_sss[name] or not built_ref[name]:
                row.append("-")
                continue
            hosts = c.startswith("hosts-")
            p = 4 if hosts else int(c)
            if p not in refs:
                clean_outputs(ref_cwd)
                inp = stdin(p, ref_cwd) if stdin else None
                secs, rc, out = run(["./" + binary] + argv(p), ref_cwd, inp, None, a.timeout)
                refs[p] = (secs, result(out, ref_cwd) if rc == 0 else None)
            env = dict(os.environ, SSS_DSM_HEAP="2G", SSS_DSM_WRITES=a.writes,
                       SSS_DSM_PROTOCOL=c[6:] if hosts else a.protocol)
            env.update(extra)
            cmd = [SSS, "run", "-n", str(p), "--timeout", str(int(a.timeout))]
            if hosts:
                cmd += ["--hosts", a.hosts]
            clean_outputs(sss_cwd)
            inp = stdin(p, sss_cwd) if stdin else None
            secs, rc, out = run(cmd + ["./" + binary] + argv(p), sss_cwd, inp, env, a.timeout + 30)
            if rc == 0 and not hosts:
                times[p] = secs
            if rc != 0:
                cell = "timeout (> %.0f s)" % a.timeout if rc in ("timeout", 124) else "exit %s" % rc
                failures += 1
            else:
                try:
                    got = result(out, sss_cwd)
                except OSError as e:
                    got = ["no output: %s" % e]
                want = refs[p][1]
                if p >= 2 and multi == "ends":
                    cell = "ends" if got else "NO RESULT"
                else:
                    cell = "ok" if got and got == want else "WRONG"
                if cell in ("WRONG", "NO RESULT"):
                    failures += 1
                    with open(os.path.join(a.work, "%s-%s.out" % (binary, c)), "w") as f:
                        f.write(out)
                cell += " (%.1f s)" % secs
            row.append(cell)
        for p in (1, 4):
            row.append("%.2f / %.2f" % (times[p], refs[p][0]) if p in times else "-")
        print("| " + " | ".join(row) + " |", flush=True)
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
