"""Delta facts the tests use: the table property that turns on a Delta table's change data
feed, which a source needs, and a VACUUM that leaves nothing behind."""

CDF = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"


def vacuum_everything(spark, table: str, lite: bool = False) -> None:
    """``VACUUM table RETAIN 0 HOURS [LITE]``: remove every file the latest version does not
    need, change data included (Delta refuses a retention this short unless its check is
    off, which it is for the statement alone)."""
    check = "spark.databricks.delta.retentionDurationCheck.enabled"
    spark.conf.set(check, "false")
    try:
        spark.sql(f"VACUUM {table} RETAIN 0 HOURS{' LITE' if lite else ''}")
    finally:
        spark.conf.unset(check)
