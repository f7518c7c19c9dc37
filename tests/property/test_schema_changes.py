"""Changes of the sources' columns between refreshes, through a pinned scenario: each is
another column under the same name to the change data feed, or the same column under another
physical name, and every view must still equal its query after every refresh. (Drawn
scenarios change columns too: :func:`ivm.testing.data.scenarios`.)

A module of its own, not marked ``long``: the parallel workers of ``make test`` take whole
modules, and the long one already holds the longest scenario."""

from decimal import Decimal

from tests.property.harness import run_scenario
from tests.property.strategies import TIMES, Scenario
from tests.property.views import FAMILIES

ALTERED = Scenario(
    tables={
        "r": [
            (1, 2, Decimal("2.00"), "x", 1.0),
            (1, 3, None, "y", 0.5),
            (2, None, Decimal("0.25"), "", None),
        ],
        "s": [(1, 0, "p", TIMES[0], ("p",)), (2, 1, "q", TIMES[1], ())],
        "t": [(0, 1, Decimal("0.5"), 1), (1, 2, None, 7)],
    },
    batches=[
        # a column dropped and added back, alone: the refresh reads no row of change, and
        # the column's old values are gone
        [
            "ALTER TABLE r SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
            "ALTER TABLE r DROP COLUMN a",
            "ALTER TABLE r ADD COLUMNS (a INT AFTER k)",
        ],
        # a column renamed away and back with a row inserted meanwhile; a column widened
        [
            "INSERT INTO r VALUES (1, 5, 1.00, 'z', 2.0)",
            "ALTER TABLE s SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
            "ALTER TABLE s RENAME COLUMN d TO d_was",
            "INSERT INTO s (k, c, d_was, `order`, tags) VALUES (1, 1, 'q', NULL, NULL)",
            "ALTER TABLE s RENAME COLUMN d_was TO d",
            "ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
            "ALTER TABLE t ALTER COLUMN e TYPE BIGINT",
            "INSERT INTO t VALUES (1, 5000000000, 1, 2)",
        ],
        # column mapping turned off, which stores r's columns anew; then an ordinary change
        ["ALTER TABLE r SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')"],
        ["UPDATE r SET a = 4 WHERE k = 1", "DELETE FROM t WHERE e = 7"],
    ],
)
"""Changes of the sources' columns between refreshes: each is another column under the
same name to the change data feed, or the same column under another physical name."""

ALTERED_VIEWS = (
    ("aggregates", "ByKey"),
    ("rows", "Filtered"),
    ("joins", "join3"),
    ("aggregates", "filtered_totals"),
)
"""Views that read the columns :data:`ALTERED` changes (``Filtered`` reads every column)."""


def test_schema_changes_equal_recompute(spark):
    """:data:`ALTERED` over views that read the changed columns."""
    run_scenario(
        spark, ALTERED, {name: FAMILIES[family][name] for family, name in ALTERED_VIEWS}, log=print
    )
