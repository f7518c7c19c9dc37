"""Names of views, sources and columns resolve as Spark resolves them; ivm's own names stay
out of the user's way."""

import pytest

import ivm
from ivm.errors import CatalogError, InvalidQuery, Position, ReservedName, ViewExists, ViewNotFound
from ivm.runtime.observation.describe import consumed_versions
from ivm.runtime.spark.settings import session_settings
from tests.support.cdf import CDF


@pytest.fixture
def src(spark, fresh_db):
    spark.sql(f"CREATE TABLE src (k INT, x INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO src VALUES (1, 10), (2, 20)")
    return fresh_db


def rows(spark, name):
    return sorted(tuple(r) for r in spark.table(name).collect())


def test_view_names_resolve_whatever_their_case(spark, src):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW MixV AS SELECT k, SUM(x) AS s FROM src GROUP BY k")
    with pytest.raises(ViewExists):
        ivm.sql(spark, "CREATE MATERIALIZED VIEW mixv AS SELECT k FROM src")
    spark.sql("INSERT INTO src VALUES (1, 1)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW mixv").mode == "incremental"
    assert rows(spark, "MIXV") == [(1, 11), (2, 20)]
    ivm.sql(spark, "ALTER MATERIALIZED VIEW MIXV SET FRESHNESS = INTERVAL '1' MINUTE")
    facts = dict(tuple(r) for r in ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW mixV").collect())
    assert facts["view"] == f"{src}.mixv" and facts["freshness seconds"] == "60"
    assert ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW MixV").count() == 2
    ivm.sql(spark, "DROP MATERIALIZED VIEW mIxV")
    assert not spark.catalog.tableExists("mixv")


def test_refresh_all_refreshes_a_view_created_with_capitals(spark, src):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW MixV AS SELECT k, x FROM src")
    spark.sql("INSERT INTO src VALUES (3, 30)")
    results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    assert [(r.view, r.mode) for r in results] == [(f"{src}.mixv", "incremental")]
    assert rows(spark, "mixv") == [(1, 10), (2, 20), (3, 30)]


def test_a_view_reads_a_view_named_in_another_case(spark, src):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW MixV AS SELECT k, x FROM src")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW Top AS SELECT SUM(x) AS s FROM MIXV")
    spark.sql("INSERT INTO src VALUES (3, 30)")
    assert [r.view for r in ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")] == [
        f"{src}.mixv",
        f"{src}.top",
    ]
    assert rows(spark, "top") == [(60,)]
    assert consumed_versions(spark, f"{src}.TOP") == {f"{src}.mixv": 1}


def test_backtick_quoted_keyword_names_work_everywhere(spark, src):
    spark.sql(f"CREATE TABLE `select` (`Group` INT, `from` INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO `select` VALUES (1, 5)")
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW `order` AS "
        "SELECT `group`, SUM(`From`) AS `sum` FROM `select` GROUP BY `GROUP`",
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW {src}.`Table` AS SELECT `sum` FROM {src}.`order`")
    spark.sql("INSERT INTO `select` VALUES (1, 6)")
    assert [r.view for r in ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")] == [
        f"{src}.`order`",
        f"{src}.`table`",
    ]
    assert rows(spark, "`order`") == [(1, 11)] and rows(spark, "`table`") == [(11,)]
    assert ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {src}.`ORDER`").mode == "noop"
    ivm.sql(spark, "ALTER MATERIALIZED VIEW `order` SUSPEND")
    assert ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW `order`").count() > 0
    assert ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW `table`").count() == 2
    ivm.sql(spark, "DROP MATERIALIZED VIEW `table`")
    ivm.sql(spark, f"DROP MATERIALIZED VIEW {src}.`order`")
    assert not spark.catalog.tableExists(f"{src}.`order`")


@pytest.mark.parametrize("name", ["`my view`", "`vü`", "db.`my view`"])
def test_names_the_catalog_refuses_are_refused_clearly(spark, src, name):
    with pytest.raises(CatalogError, match="not a valid name"):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS SELECT k FROM src")
    with pytest.raises(ViewNotFound):
        ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}")


def test_mixed_case_source_and_columns_resolve_as_in_spark(spark, src):
    spark.sql(f"CREATE TABLE MixT (Amount INT, Region STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO MixT VALUES (1, 'EU'), (2, 'US')")
    query = "SELECT Region, SUM(AMOUNT) AS Total FROM mixt GROUP BY region"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    # Spark names a column as the query spells its reference; so does the view.
    assert spark.table("v").columns == spark.sql(query).columns == ["Region", "Total"]
    spark.sql("INSERT INTO MIXT VALUES (3, 'EU')")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
    assert rows(spark, "v") == sorted(tuple(r) for r in spark.sql(query).collect())
    assert consumed_versions(spark, f"{src}.v") == {f"{src}.mixt": 2}
    assert spark.table("v").columns == ["Region", "Total"]


def test_a_column_whose_name_has_a_dot_is_maintained(spark, src):
    # a named column `a.b` is no column b of a table a
    query = (
        "SELECT `a.b`, COUNT(*) AS n FROM (SELECT DISTINCT k AS `a.b`, x FROM src) s GROUP BY `a.b`"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("INSERT INTO src VALUES (1, 11), (3, 30)")
    spark.sql("DELETE FROM src WHERE k = 2")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
    assert rows(spark, "v") == sorted(tuple(r) for r in spark.sql(query).collect())
    assert spark.table("v").columns == ["a.b", "n"]


def test_a_source_column_named_like_bookkeeping_is_refused_at_create(spark, src):
    spark.sql(f"CREATE TABLE odd (k INT, _ivm_weight INT) USING DELTA {CDF}")
    with pytest.raises(ReservedName, match="_ivm_weight of .*odd is reserved") as error:
        ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS\nSELECT k, _IVM_WEIGHT AS w FROM odd")
    assert "line 2" in str(error.value)
    ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT k FROM odd")  # not read: fine
    spark.sql("INSERT INTO odd VALUES (1, 1)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"


def test_an_output_column_named_like_bookkeeping_is_refused_whatever_its_case():
    with pytest.raises(ReservedName, match="_ivm_x is reserved"):
        ivm.compile("SELECT k AS _IVM_X FROM t", schema={"t": {"k": "INT"}})


def test_keyword_names_are_read_back_where_spark_reserves_keywords(spark, src):
    """Under ``spark.sql.ansi.enforceReservedKeywords`` Spark reads no keyword as a name:
    the SQL ivm generates quotes every name that is one."""
    compiled = ivm.compile(
        "SELECT `group`, SUM(`from`) AS `sum` FROM `select` GROUP BY 1",
        schema={"db": {"select": {"group": "INT", "from": "INT"}}},
        default_db="db",
    )
    assert list(compiled.sources) == ["db.`select`"]
    with session_settings(spark, {"spark.sql.ansi.enforceReservedKeywords": "true"}):
        spark.sql(f"CREATE TABLE `select` (k INT, x INT) USING DELTA {CDF}")
        spark.sql("INSERT INTO `select` VALUES (1, 5)")
        ivm.sql(
            spark,
            "CREATE MATERIALIZED VIEW `order` AS "
            "SELECT k, SUM(x) AS total FROM `select` GROUP BY k",
        )
        spark.sql("INSERT INTO `select` VALUES (1, 6), (2, 1)")
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW `order`").mode == "incremental"
        assert rows(spark, "`order`") == [(1, 11), (2, 1)]


@pytest.mark.parametrize(
    "definition",
    [
        "SELECT k, SUM(x) AS `select`, COUNT(*) AS `from` FROM `select` GROUP BY k",
        "SELECT k AS `group`, x AS `order` FROM `select` WHERE x > 0",
    ],
)
def test_view_columns_named_by_keywords_refresh_where_spark_reserves_keywords(
    spark, src, definition
):
    """A view column named by a reserved keyword is updated in place by the refresh's MERGE,
    whose ``UPDATE SET `select` = …`` Spark fails to read back under
    ``spark.sql.ansi.enforceReservedKeywords`` although the name is quoted: ivm's own
    statements, which quote every keyword, run with the setting off."""
    with session_settings(spark, {"spark.sql.ansi.enforceReservedKeywords": "true"}):
        spark.sql(f"CREATE TABLE `select` (k INT, x INT) USING DELTA {CDF}")
        spark.sql("INSERT INTO `select` VALUES (1, 5), (2, 7)")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {definition}")
        spark.sql("INSERT INTO `select` VALUES (1, 6), (3, 1)")
        spark.sql("UPDATE `select` SET x = x + 1 WHERE k = 2")
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
        assert rows(spark, "v") == sorted(spark.sql(definition).collect())


@pytest.mark.parametrize(
    "query, name, position",
    [
        ("SELECT k,\n  k + 1 AS `next k`\nFROM t", "next k", Position(2, 3)),
        ("SELECT `a=b`, COUNT(*) AS n FROM t GROUP BY `a=b`", "a=b", Position(1, 8)),
    ],
    ids=["alias", "source_column"],
)
def test_a_column_name_delta_refuses_is_refused_at_compile_where_the_query_names_it(
    query, name, position
):
    schema = {"t": {"k": "INT", "a=b": "INT"}}  # a source may have it, with column mapping
    with pytest.raises(InvalidQuery) as error:
        ivm.compile(query, schema=schema)
    assert error.value.message.startswith(f"column name `{name}` cannot be stored: Delta refuses")
    assert error.value.position == position and error.value.hint
