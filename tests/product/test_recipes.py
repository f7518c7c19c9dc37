"""The recipes of docs/sql.md: Paimon's merge engines written as views. Each recipe runs through
batches of events that arrive out of order (a lower ``seq`` after a higher one, also within
one batch), NULL values, events corrected and deleted; after every refresh, and after a
final REFRESH ... FULL, the view must equal Spark running its SQL on the current events
(:func:`ivm.testing.run_scenario`).

Events tied in ``seq`` are where a view could disagree with its query: which of them the
query picks is up to the order Spark reads rows in. :data:`TIED` changes that order between
two refreshes without changing the tied events, by rewriting the file they share with
another key's event."""

from ivm.testing import Rewritten, Scenario, Source, run_scenario
from ivm.testing.data import Column


def source(name: str, columns: str) -> Source:
    """A source table ``name`` with ``columns`` ("k INT, seq BIGINT, ...")."""
    pairs = (c.split() for c in columns.split(", "))
    return Source(name, tuple(Column(n, t, ()) for n, t in pairs))


EVENTS = source("events", "k INT, seq BIGINT, x BIGINT, y INT, z STRING, op STRING")

LATEST = (
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY seq DESC) "
    "AS rn FROM events) WHERE rn = 1"
)
"""Recipe (a), Paimon's ``'merge-engine' = 'deduplicate'`` with ``'sequence.field' =
'seq'``: the event of the highest ``seq`` per key."""

LATEST_LIVE = (
    "SELECT k, seq, x, y, z FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
    "ORDER BY seq DESC) AS rn FROM events) WHERE rn = 1 AND op <> '-D'"
)
"""Recipe (a) with ``'rowkind.field' = 'op'``: a key whose latest event is a delete
(``-D``) has no row."""

AGGREGATED = (
    "SELECT k, sum(x) AS x, max(y) AS y, "
    "max_by(z, seq) FILTER (WHERE z IS NOT NULL) AS z FROM events GROUP BY k"
)
"""Recipe (b), Paimon's ``'merge-engine' = 'aggregation'`` with ``sum``, ``max`` and
``last_non_null_value`` (by ``'sequence.field' = 'seq'``)."""

OUT_OF_ORDER = Scenario(
    tables={
        "events": [
            (1, 10, 100, 5, "a", "+I"),
            (2, 5, 200, 1, "b", "+I"),
            (3, 7, 1, None, None, "+I"),
        ]
    },
    batches=[
        # late events: a lower seq than the key's latest (k 1), a higher one (k 2), both
        # orders within one batch (k 3), a new key with an event whose seq is NULL
        [
            "INSERT INTO events VALUES (1, 5, 999, 9, 'late', '+I'), (2, 8, 201, 0, NULL, '+I'), "
            "(3, 9, 30, 3, 'c9', '+I'), (4, 1, 40, NULL, 'd', '+I')",
            "INSERT INTO events VALUES (3, 8, 20, 4, 'c8', '+I'), (4, NULL, 41, 7, 'dn', '+I'), "
            "(5, 3, 50, 5, 'e', '+I')",
        ],
        # the latest event of k 1 deleted (its late one is the latest now), and every event
        # of k 4; the latest of k 2 corrected, then a later one of NULLs and a late one; an
        # older event of k 3 moved past the latest, and its latest non-NULL z set to NULL;
        # k 5 deleted by an event, then a late event of k 5
        [
            "DELETE FROM events WHERE k = 1 AND seq = 10 OR k = 4",
            "UPDATE events SET x = x + 1, z = 'b8' WHERE k = 2 AND seq = 8",
            "UPDATE events SET seq = 10 WHERE k = 3 AND seq = 7",
            "UPDATE events SET z = NULL WHERE k = 3 AND seq = 9",
            "INSERT INTO events VALUES (5, 4, NULL, NULL, NULL, '-D'), "
            "(2, 9, NULL, NULL, NULL, '+I'), (2, 1, 7, 8, 'b1', '+I')",
            "INSERT INTO events VALUES (5, 2, 49, 6, 'e2', '+I')",
        ],
    ],
)

UPDATES = source("updates", "k INT, seq BIGINT, price DOUBLE, qty INT, note STRING")

PARTIAL = (
    "SELECT k, max_by(price, seq) FILTER (WHERE price IS NOT NULL) AS price, "
    "max_by(qty, seq) FILTER (WHERE qty IS NOT NULL) AS qty, "
    "max_by(note, seq) FILTER (WHERE note IS NOT NULL) AS note "
    "FROM updates GROUP BY k"
)
"""Recipe (c), Paimon's ``'merge-engine' = 'partial-update'`` with ``'sequence.field' =
'seq'``: each column's latest non-NULL value per key."""

PARTIAL_UPDATES = Scenario(
    tables={"updates": [(1, 1, 23.0, 10, None), (2, 1, None, 1, "two")]},
    batches=[
        # Paimon's example, its third record before its second
        [
            "INSERT INTO updates VALUES (1, 3, 25.2, NULL, NULL)",
            "INSERT INTO updates VALUES (1, 2, NULL, NULL, 'This is a book')",
        ],
        # a late event sets a column no later event set (k 2's price), not those a later
        # event set (qty, note); k 1's note set to NULL; the event that set k 1's price
        # deleted: the one before it sets it again
        [
            "INSERT INTO updates VALUES (2, 0, 9.5, 0, 'zero')",
            "UPDATE updates SET note = NULL WHERE k = 1 AND seq = 2",
            "DELETE FROM updates WHERE k = 1 AND seq = 3",
        ],
    ],
)

TIED_EVENTS = source("tied", "k INT, seq BIGINT, id BIGINT, z STRING, pad STRING")


def tied_insert(rows: str) -> str:
    """An INSERT of ``rows`` ``(k, seq, id, z, n)`` into one file, each row's ``pad`` ``n``
    hashes long (incompressible, so that ``n`` sets the size of the file)."""
    return (
        "INSERT INTO tied SELECT /*+ REPARTITION(1) */ k, seq, id, z, "
        "concat_ws('', transform(sequence(1, n), i -> sha2(CAST(i AS STRING), 256))) "
        f"FROM VALUES {rows} AS t(k, seq, id, z, n)"
    )


TIED = Scenario(
    tables={"tied": []},
    batches=[
        # k 1 has three events at seq 5 in two files, Spark reads the larger file first;
        # the one that arrived last has a NULL z
        [
            tied_insert("(1, 5, 1, 'a', 0), (2, 1, 2, 'c', 200)"),
            tied_insert(
                "(1, 5, 3, 'b', 100), (1, 5, 6, NULL, 0), (3, 2, 4, NULL, 0), (3, 2, 5, 'd', 0)"
            ),
        ],
        # k 2's event changed: its file, which holds k 1's first event, is rewritten smaller
        # and read first now; k 1's events are as they were
        ["UPDATE tied SET pad = '' WHERE k = 2"],
    ],
)
"""Events tied in ``seq``, with ``id`` the order they arrived in."""


def test_latest_row_per_key_by_sequence(spark):
    """Recipe (a): the event of the highest seq per key, however late it arrived, and the
    next one when it is deleted; no row for a key whose latest event is a delete."""
    run_scenario(spark, OUT_OF_ORDER, [EVENTS], {"latest": LATEST, "latest_live": LATEST_LIVE})


def test_aggregation_by_key(spark):
    """Recipe (b): sum, max and the latest non-NULL value per key, through late events,
    NULLs (a key whose values are all NULL) and deletes, which retract every aggregate."""
    run_scenario(spark, OUT_OF_ORDER, [EVENTS], {"aggregated": AGGREGATED})


def test_partial_update_by_sequence(spark):
    """Recipe (c): each column's latest non-NULL value; Paimon's own example with its events
    out of order, then corrections and deletes."""
    run_scenario(spark, PARTIAL_UPDATES, [UPDATES], {"partial": PARTIAL})


def test_ties_in_sequence(spark):
    """ROW_NUMBER breaks ties in seq by the window's other input columns, ascending, so the
    view keeps one choice whatever order Spark reads the rows in (the oracle spells the
    tie-break out: Spark's own choice among tied rows is arbitrary). Ordered by (seq, id),
    id the arrival order, the recipes pick what Paimon picks, the event that arrived last;
    QUALIFY says the same as the subquery."""
    views = {
        "latest_tied": Rewritten(
            "SELECT k, seq, id, z FROM (SELECT k, seq, id, z, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY seq DESC) AS rn FROM tied) WHERE rn = 1",
            "SELECT k, seq, id, z FROM (SELECT k, seq, id, z, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY seq DESC, id, z) AS rn FROM tied) WHERE rn = 1",
        ),
        "latest_by_arrival": Rewritten(
            "SELECT k, seq, id, z FROM tied "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY seq DESC, id DESC) = 1",
            # Spark does not parse QUALIFY: its oracle is the subquery form
            "SELECT k, seq, id, z FROM (SELECT k, seq, id, z, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY seq DESC, id DESC) AS rn FROM tied) WHERE rn = 1",
        ),
        "last_non_null_by_arrival": (
            "SELECT k, max_by(z, struct(seq, id)) FILTER (WHERE z IS NOT NULL) AS z "
            "FROM tied GROUP BY k"
        ),
    }
    run_scenario(spark, TIED, [TIED_EVENTS], views)


def test_max_by_with_ties_in_sequence(spark):
    """``max_by(z, seq)`` over events tied in seq gives one answer whatever order Spark reads
    them in: the largest ``z`` among the tied (the oracle spells the tie-break out: Spark's
    own choice is arbitrary). A refresh that finds the file holding one of k 1's tied events
    rewritten keeps the same value as the query."""
    run_scenario(
        spark,
        TIED,
        [TIED_EVENTS],
        {
            "last_non_null_tied": Rewritten(
                "SELECT k, max_by(z, seq) FILTER (WHERE z IS NOT NULL) AS z FROM tied GROUP BY k",
                "SELECT k, max_by(z, IF(seq IS NULL, NULL, struct(seq, z))) "
                "FILTER (WHERE z IS NOT NULL) AS z FROM tied GROUP BY k",
            )
        },
    )
