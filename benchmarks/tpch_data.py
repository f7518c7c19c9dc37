"""TPC-H sources: generated data in Delta tables with change data feed on.

The data comes from ``tpchgen-cli`` as Parquet, generated once per scale factor into a cache
directory (``$IVM_TPCH_CACHE``, else ``$XDG_CACHE_HOME/ivm/tpch``, else ``~/.cache/ivm/tpch``)
and loaded into Delta tables with change data feed on. Shared by the TPC-H view tests and
the benchmarks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Every table's columns and their types, in TPC-H order.
SCHEMA = {
    "region": {"r_regionkey": "BIGINT", "r_name": "STRING", "r_comment": "STRING"},
    "nation": {
        "n_nationkey": "BIGINT",
        "n_name": "STRING",
        "n_regionkey": "BIGINT",
        "n_comment": "STRING",
    },
    "supplier": {
        "s_suppkey": "BIGINT",
        "s_name": "STRING",
        "s_address": "STRING",
        "s_nationkey": "BIGINT",
        "s_phone": "STRING",
        "s_acctbal": "DECIMAL(15,2)",
        "s_comment": "STRING",
    },
    "customer": {
        "c_custkey": "BIGINT",
        "c_name": "STRING",
        "c_address": "STRING",
        "c_nationkey": "BIGINT",
        "c_phone": "STRING",
        "c_acctbal": "DECIMAL(15,2)",
        "c_mktsegment": "STRING",
        "c_comment": "STRING",
    },
    "part": {
        "p_partkey": "BIGINT",
        "p_name": "STRING",
        "p_mfgr": "STRING",
        "p_brand": "STRING",
        "p_type": "STRING",
        "p_size": "INT",
        "p_container": "STRING",
        "p_retailprice": "DECIMAL(15,2)",
        "p_comment": "STRING",
    },
    "partsupp": {
        "ps_partkey": "BIGINT",
        "ps_suppkey": "BIGINT",
        "ps_availqty": "INT",
        "ps_supplycost": "DECIMAL(15,2)",
        "ps_comment": "STRING",
    },
    "orders": {
        "o_orderkey": "BIGINT",
        "o_custkey": "BIGINT",
        "o_orderstatus": "STRING",
        "o_totalprice": "DECIMAL(15,2)",
        "o_orderdate": "DATE",
        "o_orderpriority": "STRING",
        "o_clerk": "STRING",
        "o_shippriority": "INT",
        "o_comment": "STRING",
    },
    "lineitem": {
        "l_orderkey": "BIGINT",
        "l_partkey": "BIGINT",
        "l_suppkey": "BIGINT",
        "l_linenumber": "INT",
        "l_quantity": "DECIMAL(15,2)",
        "l_extendedprice": "DECIMAL(15,2)",
        "l_discount": "DECIMAL(15,2)",
        "l_tax": "DECIMAL(15,2)",
        "l_returnflag": "STRING",
        "l_linestatus": "STRING",
        "l_shipdate": "DATE",
        "l_commitdate": "DATE",
        "l_receiptdate": "DATE",
        "l_shipinstruct": "STRING",
        "l_shipmode": "STRING",
        "l_comment": "STRING",
    },
}


def cache_root() -> Path:
    """Where generated data (and the benchmarks' Delta tables) are kept between runs."""
    root = os.environ.get("IVM_TPCH_CACHE")
    if root is None:
        cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        root = Path(cache) / "ivm" / "tpch"
    return Path(root)


def cache_dir(scale: str) -> Path:
    """Where the Parquet files of one scale factor are kept between runs."""
    return cache_root() / f"sf{scale}"


def _generator() -> str:
    beside_python = Path(sys.executable).parent / "tpchgen-cli"
    found = str(beside_python) if beside_python.exists() else shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("tpchgen-cli is not installed: pip install -e '.[test]' (or '.[bench]')")
    return found


def generate(scale: str) -> Path:
    """The directory of ``<table>.parquet`` files at ``scale``, generated if missing."""
    target = cache_dir(scale)
    if all((target / f"{table}.parquet").is_file() for table in SCHEMA):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Generate beside the target and rename, so an interrupted run leaves no partial cache.
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        subprocess.run(
            [_generator(), "parquet", "--scale-factor", scale, "--output-dir", scratch, "--quiet"],
            check=True,
        )
        shutil.rmtree(target, ignore_errors=True)
        os.rename(scratch, target)
        os.mkdir(scratch)  # for TemporaryDirectory's cleanup
    return target


ROWS_PER_FILE = 1_000_000
"""The most rows a loaded Delta file holds (about 35 MB of line items). The generator writes
each table in key order and the load keeps it, so a file covers a key range that Delta's
data skipping can check."""


def load(spark, parquet_dir: Path) -> None:
    """Create every TPC-H table in the current database as a Delta table with change data
    feed on, filled from ``parquet_dir``, in files of at most :data:`ROWS_PER_FILE` rows."""
    spark.conf.set("spark.sql.files.maxRecordsPerFile", ROWS_PER_FILE)
    try:
        for table, columns in SCHEMA.items():
            select = ", ".join(f"CAST({c} AS {t}) AS {c}" for c, t in columns.items())
            spark.sql(
                f"CREATE TABLE {table} USING DELTA "
                f"TBLPROPERTIES (delta.enableChangeDataFeed = true) "
                f"AS SELECT {select} FROM parquet.`{parquet_dir / table}.parquet`"
            )
    finally:
        spark.conf.unset("spark.sql.files.maxRecordsPerFile")
