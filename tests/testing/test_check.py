"""``ivm check`` and ``ivm.testing.check_view``: a view property-tested on drawn sources and
changes; a planted bug is found, shrunk, and reproduced by the script it prints. The check
under them, ``ivm.testing.check_views``, compares columns as well as rows."""

import json

import pytest
from pyspark.sql import functions as F

import ivm
from ivm import cli
from ivm.errors import UnsupportedQuery
from ivm.runtime.refresh import sources
from ivm.testing import ScenarioFailed, UnsupportedType, check_view, check_views
from ivm.testing.scenario import create_views
from ivm.zset import WEIGHT
from tests.support.cdf import CDF

VIEW = (
    "CREATE MATERIALIZED VIEW totals AS\n"
    "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM shop.orders\n"
    "WHERE status <> 'void' GROUP BY status\n"
)
SCHEMA = {"shop": {"orders": {"id": "INT", "status": "STRING", "amount": "DECIMAL(10,2)"}}}


def _differing_rows(spark, view: str, query: str) -> int:
    return (
        spark.sql(f"SELECT * FROM {view} EXCEPT ALL ({query})").count()
        + spark.sql(f"({query}) EXCEPT ALL SELECT * FROM {view}").count()
    )


@pytest.mark.slow
def test_a_planted_bug_is_found_and_its_reproduction_shows_it(
    spark, fresh_db, tmp_path, monkeypatch, capsys
):
    """The change feed reader patched to drop deletions: ``ivm check`` fails, and the script
    it writes, run with ``ivm sql -f``, leaves a view that differs from its query; without the
    bug the same script leaves them equal."""
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    (tmp_path / "totals.sql").write_text(VIEW)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    reader = sources.changes

    def inserts_only(*args, **kwargs):
        net, how = reader(*args, **kwargs)
        return net.where(F.col(WEIGHT) > 0), how

    monkeypatch.setattr(sources, "changes", inserts_only)
    status = cli.main(
        [
            "check",
            str(tmp_path / "totals.sql"),
            "--schema",
            str(tmp_path / "schema.json"),
            "--examples",
            "10",
            "--seed",
            "1",
            "--shrink-seconds",
            "30",
            "-o",
            str(tmp_path / "repro.sql"),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 1, out
    assert "totals differs from its query after the refresh of batch" in out
    assert "\nshrinking, attempt 1 (" in err, err
    assert "in view  in query" in out and "shrunk to" in out
    script = (tmp_path / "repro.sql").read_text()
    assert "CREATE TABLE orders (id INT, status STRING, amount DECIMAL(10,2))" in script
    assert "FROM orders" in script and "shop.orders" not in script

    query = (
        "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM orders "
        "WHERE status <> 'void' GROUP BY status"
    )
    assert cli.main(["sql", "-f", str(tmp_path / "repro.sql")]) == 0
    assert "> SELECT * FROM totals EXCEPT ALL" in capsys.readouterr().out
    assert _differing_rows(spark, "totals", query) > 0

    monkeypatch.setattr(sources, "changes", reader)
    spark.sql(f"DROP DATABASE {fresh_db} CASCADE")
    spark.sql(f"CREATE DATABASE {fresh_db}")
    spark.sql(f"USE {fresh_db}")
    assert cli.main(["sql", "-f", str(tmp_path / "repro.sql")]) == 0
    assert _differing_rows(spark, "totals", query) == 0


@pytest.mark.slow
def test_a_correct_view_passes_over_the_catalogs_tables(spark, fresh_db):
    spark.sql("CREATE TABLE orders (id INT, status STRING, price DOUBLE, at TIMESTAMP) USING DELTA")
    checked = check_view(
        spark,
        "SELECT status, hour(at) AS h, SUM(price) AS total, "
        "COUNT(*) AS n FROM orders WHERE price > 2.5 "
        "GROUP BY status, hour(at)",
        examples=2,
        seed=7,
    )
    assert checked.examples >= 2 and str(checked).startswith("ok: checked_view equalled")
    (orders,) = checked.sources
    assert [c.type for c in orders.columns] == ["int", "string", "double", "timestamp"]
    assert 2.5 in orders.columns[2].values  # the view's literal, so its filter splits rows


def test_check_shows_its_progress(spark, fresh_db, tmp_path, monkeypatch, capsys):
    """On stderr, each example and each refresh of its batches, as they run; the verdict on
    stdout."""
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    (tmp_path / "totals.sql").write_text(VIEW)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    assert (
        cli.main(
            [
                "check",
                str(tmp_path / "totals.sql"),
                "--schema",
                str(tmp_path / "schema.json"),
                "--examples",
                "1",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert out.startswith("ok: totals equalled its query"), out
    created, *refreshed = err.splitlines()
    assert created == "example 1/1: creating the sources and the view", err
    assert (
        refreshed
        == [
            f"example 1/1: batch {i}/{len(refreshed)} refreshed"
            for i in range(1, len(refreshed) + 1)
        ]
        and refreshed
    ), err


def test_a_column_of_another_type_fails_the_check_by_the_column_and_its_types(spark, fresh_db):
    """Types are compared, not coerced to a common one: a store column widened by Delta (the
    same values, another type), which the next refresh shows in the view, fails the check of
    the view, naming the column and both types, while the other views are still compared by
    their rows."""
    spark.sql(
        f"CREATE TABLE orders (id INT, status STRING, amount DECIMAL(10,2)) USING DELTA {CDF}"
    )
    spark.sql("INSERT INTO orders VALUES (1, 'open', 2.50), (2, 'paid', 1.00)")
    views = {
        "widened": "SELECT status, SUM(amount) AS total FROM orders GROUP BY status",
        "tampered": "SELECT status, COUNT(*) AS n FROM orders GROUP BY status",
    }
    create_views(spark, views)
    widened = f"{fresh_db}__ivm.widened__ivm_store"
    spark.sql(f"ALTER TABLE {widened} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE {widened} ALTER COLUMN total TYPE DECIMAL(30, 2)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW widened")
    spark.sql(f"UPDATE {fresh_db}__ivm.tampered__ivm_store SET n = 5 WHERE status = 'paid'")
    with pytest.raises(ScenarioFailed) as failed:
        check_views(spark, views, "after CREATE")
    promised = spark.sql(views["widened"]).schema["total"].dataType.simpleString()
    shown = failed.value.shown
    assert shown.startswith("2 view(s) differ from recomputation"), shown
    assert (
        f"view widened: {views['widened']}\n    column 2 (total) is decimal(30,2) in the "
        f"view, {promised} in its query" in shown
    )
    assert "('paid', 5)" in shown and "('paid', 1)" in shown


def test_what_cannot_be_checked_is_refused_before_any_example():
    with pytest.raises(UnsupportedType, match="column tags of table t has type MAP<STRING,INT>"):
        check_view(None, "SELECT id FROM t", schema={"t": {"id": "INT", "tags": "MAP<STRING,INT>"}})
    with pytest.raises(UnsupportedQuery, match="ORDER BY"):
        check_view(None, "SELECT id FROM t ORDER BY id", schema={"t": {"id": "INT"}})
