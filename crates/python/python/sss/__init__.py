"""SSS from Python.

A program started by ``sss run -n N python3 prog.py`` (or under Slurm,
PMI, Open MPI) joins its job with ``sss.Task()``. Memory other tasks may
write is a :class:`Segment`, a writable buffer (``memoryview(seg)``,
``numpy.frombuffer(seg, ...)``); other tasks name it by the
:class:`SegmentInfo` that :meth:`Task.exchange` hands around. Operations
block the calling thread, never the others: the interpreter lock is
released while they wait.

The ADSM heap is :class:`Heap`: ``Heap(task)`` (collective), then
``heap.alloc(n)`` gives a :class:`Region` at the same address in every
task, a writable buffer too; ``heap.barrier()``, ``heap.lock(i)`` and
``heap.unlock(i)`` order what tasks see. With ``SSS_DSM_WRITES=trap``
plain stores are detected; otherwise call ``region.note(offset, len)``
after writing.
"""

from ._native import Error, Fifo, Heap, Region, Segment, SegmentInfo, Task, __version__

__all__ = ["Error", "Fifo", "Heap", "Region", "Segment", "SegmentInfo", "Task", "__version__"]
