"""What the Spark tests share: a view compared with its query, a table's Delta history, the
commits ivm made to a view's store, the sales view of the ``shop`` fixture
(tests/conftest.py), what ``ivm explain`` prints, and Python run in a process of its own.
Delta facts are in cdf.py."""

import subprocess
import sys
import textwrap

from delta.tables import DeltaTable

from ivm import cli
from ivm.runtime.catalog.tables import qualified_name, store_name

SALES = (
    "SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total FROM orders o "
    "JOIN customers c ON o.cust_id = c.id WHERE o.status <> 'void' GROUP BY c.region"
)
"""A view over the ``shop`` fixture's orders and customers."""

TOTALS = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM r GROUP BY k"
"""A view over the table ``r`` of the ``totals`` fixture (``tests/runtime/refresh``)."""


def assert_equals_query(spark, view, query):
    """``view`` has the columns and rows of ``query``, as multisets."""
    got, want = spark.table(view), spark.sql(query)
    assert got.columns == want.columns
    extra, missing = got.exceptAll(want).collect(), want.exceptAll(got).collect()
    assert not extra and not missing, f"extra rows {extra}, missing rows {missing}"


def history(spark, table):
    """``table``'s Delta history, oldest commit first."""
    return DeltaTable.forName(spark, table).history().orderBy("version").collect()


def rows(spark, view):
    """``view``'s rows, sorted."""
    return sorted(tuple(r) for r in spark.table(view).collect())


def ivm_commits(spark, view):
    """The commits of ``view``'s store that carry a refresh record."""
    return [c for c in history(spark, store_name(qualified_name(spark, view))) if c.userMetadata]


def explain(spark, monkeypatch, capsys, tmp_path, view: str, query: str) -> str:
    """What ``ivm explain`` prints for the view ``view`` of ``query``."""
    definition = tmp_path / f"{view}.sql"
    definition.write_text(f"CREATE MATERIALIZED VIEW {view} AS {query}")
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    assert cli.main(["explain", str(definition)]) == 0
    return capsys.readouterr().out


def run_python(code: str, env, *args: str, cwd=None, timeout: int = 600) -> str:
    """What the Python ``code`` (dedented) printed, run with ``args`` in a process of its own
    under ``env`` (in ``cwd``); fails with the end of its stderr unless it succeeded."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
