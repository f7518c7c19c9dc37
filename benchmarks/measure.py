"""What one action costs in a Spark session: wall time, what it read, shuffled and wrote, the
JVM's peak heap, the Spark jobs it ran, and how many classes Spark compiled for it (Janino's
compilations of generated code, which Spark caches by the code's text: a refresh that finds
its code in the cache compiles none).

Reads come from Spark's status store (the stages the action ran: their input records and
bytes, and shuffle bytes), so they count every scan, the Delta log's included. In local mode
the driver and the executors share one JVM, so its heap peak is the peak of both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Cost:
    seconds: float
    rows_read: int
    bytes_read: int
    bytes_shuffled: int
    heap_peak_bytes: int
    classes_compiled: int
    jobs: int


class Meter:
    """Measures actions run in ``spark``'s JVM, one at a time."""

    def __init__(self, spark):
        self.spark = spark
        self._context = spark.sparkContext._jsc.sc()
        management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
        self._heap_pools = [
            pool
            for pool in management.getMemoryPoolMXBeans()
            if pool.getType().toString() == "Heap memory"
        ]
        metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source
        self._compilations = metrics.CodegenMetrics.METRIC_COMPILATION_TIME()

    def _stages(self) -> dict[tuple[int, int], object]:
        self._context.listenerBus().waitUntilEmpty(60_000)
        jvm, gateway = self.spark.sparkContext._jvm, self.spark.sparkContext._gateway
        # every status, no details, no summaries, no quantiles, every task status
        stages = self._context.statusStore().stageList(
            jvm.java.util.ArrayList(),
            False,
            False,
            gateway.new_array(jvm.double, 0),
            jvm.java.util.ArrayList(),
        )
        found = {}
        for i in range(stages.size()):
            stage = stages.apply(i)
            found[(stage.stageId(), stage.attemptId())] = stage
        return found

    def _jobs(self) -> set[int]:
        """The ids of the Spark jobs the status store holds (run, running or failed)."""
        self._context.listenerBus().waitUntilEmpty(60_000)
        jobs = self._context.statusStore().jobsList(
            self.spark.sparkContext._jvm.java.util.ArrayList()
        )
        return {jobs.apply(i).jobId() for i in range(jobs.size())}

    def cost(self, action) -> tuple[Cost, object]:
        """Run ``action()``; its cost and its result."""
        before, jobs_before = set(self._stages()), self._jobs()
        for pool in self._heap_pools:
            pool.resetPeakUsage()
        compiled = self._compilations.getCount()
        start = time.perf_counter()
        result = action()
        seconds = time.perf_counter() - start
        compiled = self._compilations.getCount() - compiled
        heap = sum(pool.getPeakUsage().getUsed() for pool in self._heap_pools)
        ran = [stage for key, stage in self._stages().items() if key not in before]
        return Cost(
            seconds=seconds,
            rows_read=sum(s.inputRecords() for s in ran),
            bytes_read=sum(s.inputBytes() for s in ran),
            bytes_shuffled=sum(s.shuffleReadBytes() for s in ran),
            heap_peak_bytes=heap,
            classes_compiled=compiled,
            jobs=len(self._jobs() - jobs_before),
        ), result


def written(spark, table: str) -> tuple[int, int]:
    """Files and bytes the latest commit of the Delta table ``table`` added."""
    metrics = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first().operationMetrics or {}
    files = metrics.get("numTargetFilesAdded", metrics.get("numFiles", "0"))
    size = metrics.get("numTargetBytesAdded", metrics.get("numOutputBytes", "0"))
    return int(files), int(size)
