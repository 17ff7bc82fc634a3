"""Tests of the `sss` Python package (run by scripts/test.sh with pytest,
with the package installed from the wheel maturin built).

Jobs are started with `sss run` (the binary named by $SSS_BIN, default
target/release/sss); each is bounded in time.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sss

ROOT = Path(__file__).resolve().parents[3]
SSS = os.environ.get("SSS_BIN", str(ROOT / "target" / "release" / "sss"))


def run_job(tmp_path, n, code, hosts=None, args=()):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(code))
    cmd = [SSS, "run", "-n", str(n), "--timeout", "60"]
    if hosts:
        cmd += ["--hosts", hosts]
    cmd += [sys.executable, str(prog), *args]
    env = dict(os.environ, SSS_NO_DAEMON="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_a_task_alone_reads_and_writes_its_own_segment():
    t = sss.Task()
    assert (t.rank, t.size) == (0, 1)
    seg = t.alloc(64)
    assert len(seg) == 64
    view = memoryview(seg)
    view[8:16] = (41).to_bytes(8, "little")
    assert seg.word(8) == 41
    info = t.exchange(seg)[0]
    assert info.rank == 0 and info.len == 64
    t.write(info, 0, b"\x07" + bytes(7))
    t.quiet()
    assert seg.word(0) == 7
    assert t.read(info, 8, 8) == (41).to_bytes(8, "little")
    assert t.fetch_add(info, 8, 1) == 41
    assert seg.word(8) == 42


def test_errors_are_exceptions_not_crashes():
    t = sss.Task()
    info = t.exchange(t.alloc(16))[0]
    with pytest.raises(IndexError):
        t.write(info, 12, b"12345678")
    with pytest.raises(IndexError):
        t.read(info, 2**63, 8)
    with pytest.raises(sss.Error):
        t.signal(5, 0, b"")
    with pytest.raises(sss.Error):
        t.alloc(0).word(3)


RING = """
    import sss
    t = sss.Task()
    seg = t.alloc(4096)
    infos = t.exchange(seg)
    right = (t.rank + 1) % t.size
    got = []
    t.set_handler(1, lambda frm, data: got.append((frm, bytes(data))))
    t.barrier()
    t.write(infos[right], 0, t.rank.to_bytes(8, "little"),
            notify=infos[right], notify_offset=8)
    t.signal(right, 1, b"hello %d" % t.rank)
    old = t.fetch_add(infos[0], 16, 1)
    t.quiet()
    t.wait_at_least(seg, 8, 1)
    t.barrier()
    left = (t.rank - 1) % t.size
    assert seg.word(0) == left, seg.word(0)
    assert got == [(left, b"hello %d" % left)], got
    assert old < t.size
    if t.rank == 0:
        assert seg.word(16) == t.size
    print(f"ring ok rank={t.rank} size={t.size}")
"""


@pytest.mark.parametrize("hosts", [None, "127.0.0.2,127.0.0.3"])
def test_a_ring_of_tasks_writes_signals_and_counts(tmp_path, hosts):
    out = run_job(tmp_path, 3, RING, hosts=hosts)
    assert out.count("ring ok") == 3, out


def test_the_histogram_example_plots(tmp_path):
    png = tmp_path / "h.png"
    code = (ROOT / "examples" / "python" / "histogram.py").read_text()
    out = run_job(tmp_path, 4, code, args=("20000", str(png)))
    assert "histogram: 4 tasks, 80000 samples" in out, out
    assert png.stat().st_size > 1000
