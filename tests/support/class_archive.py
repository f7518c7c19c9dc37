"""The class data sharing archive of the Spark processes the tests start (generated jobs, the
command line, other sessions), which ``make`` builds before the tests:

    python tests/support/class_archive.py .venv/spark-classes.jsa

Such a process lives for a few statements, and much of its start is the JVM loading,
parsing and verifying the classes of Spark, Delta, Hive's metastore client and Derby. A
dynamic archive (``-XX:ArchiveClassesAtExit``, JDK 13 and later) written as one such process
exits holds them ready to map; each later process maps it (``-XX:SharedArchiveFile``, set by
``tests/conftest.py``). The archive is only valid for the JVM and the jars that wrote it, so it
is rebuilt with the virtual environment; a JVM that finds it does not match ignores it, and
says nothing about it (``-Xlog:cds=off``).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ivm.runtime.spark.jars import delta_packages

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""Options that keep the JVM from printing why it did not use an archive (to stdout, which
tests read)."""

WORKLOAD = """
import sys
import ivm

spark = ivm.spark_session(home=sys.argv[1])
cdf = "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)"
spark.sql(f"CREATE TABLE orders (id INT, cust INT, amount DECIMAL(10, 2), day DATE) {cdf}")
spark.sql(f"CREATE TABLE customers (id INT, region STRING) {cdf}")
spark.sql("INSERT INTO customers VALUES (1, 'north'), (2, 'south')")
spark.sql("INSERT INTO orders VALUES (1, 1, 2.50, DATE'2026-01-01'), (2, 2, 1.00, NULL)")
ivm.sql(spark, "CREATE MATERIALIZED VIEW totals AS SELECT c.region, SUM(o.amount) AS total, "
        "COUNT(*) AS n FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
ivm.sql(spark, "CREATE MATERIALIZED VIEW top AS SELECT cust, amount FROM orders "
        "ORDER BY amount DESC LIMIT 1")
spark.sql("INSERT INTO orders VALUES (3, 1, 4.00, DATE'2026-01-02')")
spark.sql("UPDATE orders SET amount = amount + 1 WHERE cust = 2")
spark.sql("DELETE FROM orders WHERE id = 1")
for view in ("totals", "top"):
    ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals FULL")
assert ivm.verify(spark, "totals").equal
spark.sql("SELECT * FROM totals EXCEPT ALL SELECT * FROM totals").collect()
ivm.view_changes(spark, "totals", 1).collect()
spark.sql("DESCRIBE HISTORY orders").collect()
spark.stop()
"""
"""What the archive is trained on: a session of its own home, Delta tables with their change
feed, views created, refreshed and verified; the spark-submit that runs it writes the archive
as its JVM exits."""


def build(archive: Path) -> bool:
    """Write the archive to ``archive``; False, having said why, if the JVM could not."""
    spark_submit = Path(sys.executable).with_name("spark-submit")
    partial = archive.with_suffix(".partial")
    with tempfile.TemporaryDirectory() as scratch:
        workload = Path(scratch) / "workload.py"
        workload.write_text(WORKLOAD)
        done = subprocess.run(
            [
                str(spark_submit),
                "--packages",
                ",".join(delta_packages()),
                str(workload),
                str(Path(scratch) / "home"),
            ],
            cwd=scratch,
            env={
                **os.environ,
                "SPARK_SUBMIT_OPTS": f"-XX:ArchiveClassesAtExit={partial} {QUIET}",
                "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable,
            },
            capture_output=True,
            text=True,
        )
    if done.returncode != 0 or not partial.is_file():
        print(
            f"no class archive (the tests' Spark processes start without one): "
            f"{done.stderr[-2000:]}",
            file=sys.stderr,
        )
        partial.unlink(missing_ok=True)
        return False
    os.replace(partial, archive)
    print(f"wrote {archive} ({archive.stat().st_size // 2**20} MiB)")
    return True


if __name__ == "__main__":
    build(Path(sys.argv[1]).resolve())
