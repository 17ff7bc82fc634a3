"""SSS from Python.

A program started by ``sss run -n N python3 prog.py`` (or under Slurm,
PMI, Open MPI) joins its job with ``sss.Task()``. Memory other tasks may
write is a :class:`Segment`, a writable buffer (``memoryview(seg)``,
``numpy.frombuffer(seg, ...)``); other tasks name it by the
:class:`SegmentInfo` that :meth:`Task.exchange` hands around. Operations
block the calling thread, never the others: the interpreter lock is
released while they wait.
"""

from ._native import Error, Segment, SegmentInfo, Task, __version__

__all__ = ["Error", "Segment", "SegmentInfo", "Task", "__version__"]
