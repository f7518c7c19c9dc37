"""A logged store (``STORE LAYOUT LOG``, or ``spark.ivm.storeLayout = log`` in the session):
each refresh appends its change, every read of the view folds the appended rows in, and
upkeep folds the log into the stored rows; the view equals its query throughout (the oracle:
Spark running the query)."""

import random
from collections import Counter

import pytest

import ivm
from ivm.codegen.store import LOGGED
from ivm.errors import CatalogError
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.refresh.sources import changes, snapshot, table_version, upstream
from ivm.runtime.refresh.upkeep import LOG_FOLD_AT
from ivm.runtime.spark.settings import (
    SNAPSHOT_READS,
    STATE_LAYOUT,
    STORE_LAYOUT,
    session_settings,
)
from ivm.testing.data import LOGGED_STORES, MERGED_STATES
from tests.support.cdf import CDF
from tests.support.helpers import history

VIEWS = {
    "grouped": (
        "SELECT k, COUNT(*) AS n, SUM(x) AS s, AVG(d) AS a, COUNT(d) AS nd FROM facts GROUP BY k"
    ),
    "kept_rows": "SELECT k, x FROM facts WHERE x > 0",
    "total": "SELECT COUNT(*) AS n, SUM(d) AS s, MAX(k) IS NULL AS none FROM facts",
}

FOLD_AT = 3
"""Appends in a row before the log is folded in, for these tests."""


@pytest.fixture
def logged(spark, fresh_db):
    """Views created in this test get logged stores."""
    spark.sql(f"CREATE TABLE facts (id INT, k INT, x INT, d DECIMAL(18, 8)) USING DELTA {CDF}")
    with session_settings(spark, {STORE_LAYOUT: "log", LOG_FOLD_AT: str(FOLD_AT)}):
        yield fresh_db


def assert_holds_query(spark, view: str, query: str) -> None:
    """``view`` has the columns, types and rows (as a multiset) of ``query``; the view is
    read once (each read of a logged store folds its log)."""
    got, want = spark.table(view), spark.sql(query)
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in want.schema]
    assert Counter(got.collect()) == Counter(want.collect())


def _change(spark, draw: random.Random, next_id: int) -> int:
    """Insert a few rows (NULL keys and NULL decimals among them), update and delete some."""
    values = []
    for i in range(draw.randint(1, 4)):
        k = draw.choice(["NULL", "1", "2", "3", "4"])
        # eight digits of scale: a sum of them is a DECIMAL(28, 8), which a fold must keep
        d = draw.choice(["NULL", "0.12345678", "-2.25000001", "123456.78901234"])
        values.append(f"({next_id + i}, {k}, {draw.randint(-2, 5)}, {d})")
    spark.sql(f"INSERT INTO facts VALUES {', '.join(values)}")
    spark.sql(f"UPDATE facts SET x = x + 1, d = NULL WHERE id % 5 = {draw.randint(0, 4)}")
    spark.sql(f"DELETE FROM facts WHERE id % 7 = {draw.randint(0, 6)}")
    return next_id + len(values)


def test_a_logged_store_appends_each_change_and_reads_as_its_query(spark, logged):
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, NULL, -1, NULL), (3, 2, 0, 4.00)")
    for name, query in VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {query}")
    draw, next_id, folds = random.Random(7), 10, {}
    for round_ in range(FOLD_AT):  # the CREATE and two appends, folded; one more append
        next_id = _change(spark, draw, next_id)
        for name, query in VIEWS.items():
            result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}")
            assert result.mode == "incremental", (name, round_)
            assert result.technique in ("append", "record only"), (name, round_)
            folds[name] = folds.get(name, 0) + sum(s.action == "fold" for s in result.upkeep)
            assert_holds_query(spark, name, query)
    assert folds == {name: 1 for name in VIEWS}
    for name in VIEWS:
        store = store_name(f"{logged}.{name}")
        commits = history(spark, store)
        refreshes = [
            c for c in commits if c.userMetadata and c.operation != "CREATE TABLE AS SELECT"
        ]
        assert len(refreshes) == FOLD_AT
        assert all(c.operationMetrics.get("numRemovedFiles", "0") == "0" for c in refreshes)
        (fold,) = [c for c in commits if c.operation == "MERGE"]
        folded = spark.read.option("versionAsOf", fold.version).table(store)
        assert folded.where(LOGGED).count() == 0
        assert spark.table(store).where(LOGGED).count() > 0  # appended since
        assert ivm.verify(spark, name).equal
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW grouped").collect())
    assert described["store layout"].startswith("log: ")
    assert described["last refresh technique"] == "append"
    written = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW grouped").collect()
    assert [w.technique for w in written] == ["append"] * FOLD_AT + ["recompute"]
    assert [w.mode for w in written] == ["incremental"] * FOLD_AT + ["create"]


def test_a_full_refresh_rewrites_a_logged_store_unlogged(spark, logged):
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, 2, 1, NULL)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW grouped AS {VIEWS['grouped']}")
    spark.sql("INSERT INTO facts VALUES (3, 1, 1, 2.00)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW grouped").mode == "incremental"
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW grouped FULL").mode == "full"
    assert spark.table(store_name(f"{logged}.grouped")).where(LOGGED).count() == 0
    assert_holds_query(spark, "grouped", VIEWS["grouped"])


def test_a_views_store_layout_is_its_own_or_else_the_sessions(spark, logged):
    """``STORE LAYOUT`` in a CREATE gives that view's store its layout whatever the session
    says; without it the session's setting does; an unknown layout, and a logged store
    partitioned by a column that is not a key, are refused by name."""
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25)")

    def layout_explained(clause: str) -> str:
        explained = ivm.sql(
            spark, f"EXPLAIN CREATE MATERIALIZED VIEW other {clause} AS {VIEWS['total']}"
        )
        return explained.collect()[2].plan

    assert layout_explained("").startswith("store layout: log: each refresh appends")
    assert layout_explained("STORE LAYOUT MERGE").startswith("store layout: merge: ")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW grouped AS {VIEWS['grouped']}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW plain STORE LAYOUT MERGE AS {VIEWS['grouped']}")
    with session_settings(spark, {STORE_LAYOUT: "merge"}):
        assert layout_explained("STORE LAYOUT LOG").startswith("store layout: log: ")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW chosen STORE LAYOUT LOG AS {VIEWS['grouped']}")
    spark.sql("INSERT INTO facts VALUES (2, 1, 4, 2.50)")
    for name, layout, technique in (
        ("grouped", "log", "append"),
        ("plain", "merge", "rewrite"),  # a merged store of a few rows is rewritten
        ("chosen", "log", "append"),
    ):
        described = dict(ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {name}").collect())
        assert described["store layout"].startswith(f"{layout}: "), name
        assert ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}").technique == technique, name
        assert_holds_query(spark, name, VIEWS["grouped"])
    with session_settings(spark, {STORE_LAYOUT: "columnar"}):
        with pytest.raises(CatalogError, match="no store layout has that name"):
            ivm.sql(spark, f"CREATE MATERIALIZED VIEW other AS {VIEWS['total']}")
        assert layout_explained("").startswith("store layout: CREATE fails: ")
    with pytest.raises(CatalogError, match="n is not one of them"):
        ivm.sql(
            spark,
            f"CREATE MATERIALIZED VIEW parted PARTITIONED BY (n) AS {VIEWS['grouped']}",
        )


INSERTS_ONLY_VIEWS = {
    # the rules for inserted rows only read the view's own rows at the changed keys
    "extremes": "SELECT k, MIN(x) AS lo, MAX(x) AS hi, COUNT(*) AS n, SUM(x) AS s "
    "FROM facts GROUP BY k",
    "latest": "SELECT id, k, x, d FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
    "ORDER BY x DESC, id) AS r FROM facts) WHERE r = 1",
}


def test_inserted_rows_fold_into_a_logged_views_own_rows(spark, logged):
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, NULL, -1, NULL), (3, 2, 0, 4.00)")
    for name, query in INSERTS_ONLY_VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {query}")
    for i, (k, x) in enumerate([(1, 5), (2, -3), (1, 9), ("NULL", 2)]):
        spark.sql(f"INSERT INTO facts VALUES ({10 + i}, {k}, {x}, 1.00)")
        for name, query in INSERTS_ONLY_VIEWS.items():
            result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}")
            assert (result.mode, result.rules) == ("incremental", "inserts only"), name
            assert_holds_query(spark, name, query)


OVER_VIEWS = {
    # a MAX per key over a logged projection's rows (a store row for each distinct row,
    # counted), which the rules for inserted rows would take if a logged store's appends
    # were read as inserted rows; a join of a logged aggregate and that projection
    "row_max": "SELECT k, MAX(x) AS hi, SUM(x) AS total FROM kept_rows GROUP BY k",
    "joined": "SELECT g.k, g.n, g.s, r.x FROM grouped g JOIN kept_rows r ON g.k = r.k "
    "WHERE g.n > 1",
}


UPSTREAM = ("grouped", "kept_rows")
"""Logged views that others read, each with a merged twin (``<name>_merged``)."""


def test_views_over_logged_views_read_their_folded_changes(spark, logged):
    """A view reading a logged view reads that view's rows folded, and as its change the
    difference of its folded rows at the keys its appends and folds touched; the appends
    are not taken for inserted rows. A logged view's changelog (``view_changes``) is its
    merged twin's, commit by commit."""
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, NULL, -1, NULL), (3, 2, 4, 4.00)")
    for name in UPSTREAM:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {VIEWS[name]}")
        ivm.sql(
            spark, f"CREATE MATERIALIZED VIEW {name}_merged STORE LAYOUT MERGE AS {VIEWS[name]}"
        )
    for name, query in OVER_VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {query}")
    draw, next_id, folds = random.Random(11), 10, Counter()
    for round_ in range(FOLD_AT):  # a fold of each upstream's log among them
        next_id = _change(spark, draw, next_id)
        for name in (*UPSTREAM, *(f"{u}_merged" for u in UPSTREAM), *OVER_VIEWS):
            result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}")
            assert result.mode == "incremental", (name, round_, str(result))
            folds[name] += sum(step.action == "fold" for step in result.upkeep)
        for name, query in OVER_VIEWS.items():
            assert_holds_query(spark, name, query)
    assert all(folds[name] == 1 for name in UPSTREAM), folds
    for name in UPSTREAM:
        assert_holds_query(spark, name, VIEWS[name])
        assert changelog(spark, name) == changelog(spark, f"{name}_merged"), name


def test_a_logged_views_change_over_any_range_is_its_folded_rows_at_the_end_less_at_the_start(
    spark, logged
):
    """The change a view reading a logged view takes from it over versions ``(a, b]`` (its
    change feed and its folded rows as of ``b``) is its folded rows as of ``b`` less those as
    of ``a``, over ranges holding appends, a fold of the log and a full refresh."""
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, NULL, -1, NULL), (3, 2, 4, 4.00)")
    views = ("grouped", "total")  # keyed, NULL among the keys; a global aggregate
    for name in views:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {VIEWS[name]}")
    draw, next_id = random.Random(5), 10
    for round_ in range(FOLD_AT + 2):  # a fold among them, then a full refresh, then appends
        next_id = _change(spark, draw, next_id)
        for name in views:
            full = " FULL" if round_ == FOLD_AT else ""
            ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}{full}")
    for name in views:
        view = f"{logged}.{name}"
        source, last = upstream(spark, view), table_version(spark, view)
        assert source is not None and source.logged
        columns = source.store.view_columns
        rows = [
            Counter(snapshot(spark, view, columns, v, source).collect()) for v in range(last + 1)
        ]
        ranges = [(v - 1, v) for v in range(1, last + 1)] + [(0, last), (2, last)]
        for a, b in ranges:
            want = {row: rows[b][row] - rows[a][row] for row in rows[a] | rows[b]}
            got = {
                tuple(row[:-1]): row[-1]
                for row in changes(spark, view, columns, a, b, source)[0].collect()
            }
            assert got == {tuple(row): n for row, n in want.items() if n}, (name, a, b)


def delta_file_indexes(frame) -> int:
    """How many of the relations ``frame`` reads are Delta's (planned by Delta, a listing
    job each), not Parquet files listed by ivm."""
    leaves = frame._jdf.queryExecution().optimizedPlan().collectLeaves()
    relations = [leaves.apply(i) for i in range(leaves.size())]
    return sum(
        "Delta" in r.relation().location().getClass().getSimpleName()
        for r in relations
        if r.getClass().getSimpleName() == "LogicalRelation"
    )


def test_a_refresh_reads_a_logged_store_from_the_files_its_log_lists(spark, logged):
    """A logged view's rows and its change, as a view over it reads them, come from the
    files its log lists, stored and logged, not from reads Delta plans (a listing job for
    each part of the fold); with ``spark.ivm.snapshotReads = delta``, from Delta's; the
    same rows either way."""
    spark.sql("INSERT INTO facts VALUES (1, 1, 3, 1.25), (2, NULL, -1, NULL), (3, 2, 4, 4.00)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW grouped AS {VIEWS['grouped']}")
    _change(spark, random.Random(3), 10)
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW grouped")  # an append: stored and logged rows
    view = f"{logged}.grouped"
    source, last = upstream(spark, view), table_version(spark, view)
    assert source is not None and source.logged
    columns = source.store.view_columns
    read = {}
    for reads in ("files", "delta"):
        with session_settings(spark, {SNAPSHOT_READS: reads}):
            rows = snapshot(spark, view, columns, last, source)
            change = changes(spark, view, columns, last - 1, last, source)[0]
        delta_reads = delta_file_indexes(rows) + delta_file_indexes(change)
        assert (delta_reads == 0) == (reads == "files"), (reads, delta_reads)
        read[reads] = Counter(rows.collect()), Counter(change.collect())
    assert read["files"] == read["delta"] and read["files"][1]


def changelog(spark, view: str) -> list[Counter]:
    """The changes ``view_changes`` gives of ``view`` from its first version, commit by
    commit (those that changed no row left out), each as a multiset of rows and
    operations."""
    commits: dict[int, Counter] = {}
    for row in ivm.view_changes(spark, view, 0).collect():
        *values, op, version, _ = row
        commits.setdefault(version, Counter())[(*values, op)] += 1
    return [commits[version] for version in sorted(commits)]


def test_drawn_scenarios_log_stores_by_the_runtimes_settings():
    """The drawn scenarios' logged stores (which cannot import the runtime) are set by the
    names the runtime reads."""
    assert LOGGED_STORES == LOGGED_STORES | {STORE_LAYOUT: "log", STATE_LAYOUT: "log"}
    assert set(LOGGED_STORES) == {STORE_LAYOUT, STATE_LAYOUT, LOG_FOLD_AT}
    assert MERGED_STATES == {STATE_LAYOUT: "merge"}
