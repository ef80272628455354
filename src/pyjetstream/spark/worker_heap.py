"""Spark's reused Python workers collect garbage after every task: keep the modules out of it.

A reused worker (``SPARK_REUSE_WORKER``, Spark's default) runs a full ``gc.collect()`` after every
task (``pyspark.daemon``), and so does each planner worker (the one that creates the source, the one
that plans the read) after every call. Each collection walks every object the worker has, ~60,000
of them (the modules of pyspark, pyarrow, numpy and this package) at ~35 ms of CPU: three
collections per batch query, ~85 ms of CPU per query on 2 local cores (measured as the Python
workers' CPU per query: 360-370 ms without, 270-290 ms with the freeze) — as much as the read's
own frame parsing of 200,000 rows. `freeze_worker_heap` moves the objects alive at a worker's
first call out of the collector's sight (``gc.freeze``), and again at a later call only if modules
were imported since (a worker whose first task was a write, then a read): a handful of times per
process at most.
"""

from __future__ import annotations

import gc
import os
import sys

__all__ = ["FREEZE_ENV", "freeze_worker_heap"]

# Set to 0 to leave a Spark worker's garbage collector as it is.
FREEZE_ENV = "PYJETSTREAM_FREEZE_WORKER_HEAP"

_modules_frozen = 0  # len(sys.modules) at the last freeze


def freeze_worker_heap() -> None:
    """``gc.freeze()`` in a reused Spark worker when modules were imported since the last time
    (the first call, or a task that needed new modules); nothing outside one (a driver, a test
    process, a worker that exits after its task), nor with ``PYJETSTREAM_FREEZE_WORKER_HEAP=0``.

    Frozen objects are still freed by reference counting; what the collector never sees again is a
    reference cycle alive at that moment, a few times per process at most — so the call comes
    before a task makes its own objects (a `connection.TaskLoop`'s loop, a connection)."""
    global _modules_frozen
    loaded = len(sys.modules)
    if loaded <= _modules_frozen:
        return
    _modules_frozen = loaded
    if os.environ.get("SPARK_REUSE_WORKER") and os.environ.get(FREEZE_ENV, "1") != "0":
        gc.freeze()
