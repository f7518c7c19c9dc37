"""A dbt project on ivm (``tests/dbt/dbt_project``), run by the real ``dbt`` command.

Two Delta sources with change data feed (orders, customers) and one without (payments); three
models kept as materialized views (a join aggregate, a dedup, a view on that aggregate) and
two that ivm refuses (an ORDER BY, a source without change data feed). ``dbt run`` creates the
views, the sources change, ``dbt run`` refreshes them incrementally, ``dbt test`` tests them;
after each run every view equals Spark running the model's compiled SQL, and the refused models
fail with ivm's own words, leaving nothing behind, while the rest runs.

dbt and each check run in processes of their own, clients of one Spark Connect server on the
ivm home (the profile's ``remote``), so that one JVM serves them all; once it has stopped, a
last ``dbt run`` starts Spark in its own process on the home (the profile's ``home``) and finds
every view as it was.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import run_python
from tests.support.servers import connect_server

PROJECT = Path(__file__).parent / "dbt_project"
DBT = Path(sys.executable).parent / "dbt"
VIEWS = ("revenue_by_region", "latest_orders", "big_regions")
REFUSED = {
    "ordered_orders": "is not supported in a materialized view",
    "payments_total": "shop.payments",
}

PROFILE = """
ivm_shop:
  target: served
  outputs:
    served:
      type: ivm
      schema: shop_models
      remote: {remote}
      threads: 2
    local:
      type: ivm
      schema: shop_models
      home: {home}
      threads: 2
"""

SOURCES = """
import ivm
spark = ivm.spark_session()
spark.sql("CREATE DATABASE shop")
cdf = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
spark.sql("CREATE TABLE shop.customers (customer_id INT, name STRING, region STRING) "
          f"USING DELTA {cdf}")
spark.sql("CREATE TABLE shop.orders (order_id INT, customer_id INT, amount DECIMAL(10, 2), "
          f"updated_at TIMESTAMP) USING DELTA {cdf}")
spark.sql("CREATE TABLE shop.payments (payment_id INT, amount DECIMAL(10, 2)) USING DELTA")
spark.sql("INSERT INTO shop.customers VALUES (1, 'Ada', 'north'), (2, 'Bo', 'south'), "
          "(3, 'Cy', 'north'), (4, 'Di', NULL)")
spark.sql("INSERT INTO shop.orders VALUES "
          "(10, 1, 120.50, TIMESTAMP '2026-01-01 10:00:00'), "
          "(11, 1, 30.00, TIMESTAMP '2026-01-02 10:00:00'), "
          "(12, 2, 80.25, TIMESTAMP '2026-01-01 11:00:00'), "
          "(13, 3, 99.99, TIMESTAMP '2026-01-03 09:00:00'), "
          "(14, 4, 5.00, TIMESTAMP '2026-01-03 09:00:00')")
spark.sql("INSERT INTO shop.payments VALUES (1, 10.00)")
# a table an earlier materialization of payments_total left: kept, as ivm refuses the view
spark.sql("CREATE DATABASE shop_models")
spark.sql("CREATE TABLE shop_models.payments_total USING DELTA AS SELECT 10.00 AS total")
"""

CHANGES = """
spark.sql("INSERT INTO shop.orders VALUES (15, 2, 60.00, TIMESTAMP '2026-01-04 08:00:00'), "
          "(16, 5, 1.00, TIMESTAMP '2026-01-04 08:00:00')")
spark.sql("UPDATE shop.orders SET amount = 10.00 WHERE order_id = 10")
spark.sql("DELETE FROM shop.orders WHERE order_id = 13")
spark.sql("UPDATE shop.customers SET region = 'south' WHERE customer_id = 3")
spark.sql("INSERT INTO shop.customers VALUES (5, 'Ed', 'east')")
"""

COMPARE = """
import json, sys
from pathlib import Path
import ivm
from ivm.runtime.observation.compare import difference
spark = ivm.spark_session()
compiled = Path(sys.argv[1])
found = {}
for view in sys.argv[2:]:
    query = (compiled / f"{view}.sql").read_text()
    different = difference(spark, spark.table(f"shop_models.{view}"), spark.sql(query))
    found[view] = None if different is None else str(different)
found["relations"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN shop_models").collect())
found["views"] = sorted(ivm.materialized_views(spark, "shop_models"))
defined = ivm.view_definition(spark, "shop_models.revenue_by_region")
found["clauses"] = [
    list(defined.partitioned_by), defined.freshness, defined.retention, defined.policy
]
print(json.dumps(found))
"""


def dbt(project: Path, env, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(DBT), *command, "--project-dir", str(project), "--profiles-dir", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def edit(model: Path, old: str, new: str) -> None:
    assert old in model.read_text()
    model.write_text(model.read_text().replace(old, new))


def results(project: Path) -> dict[str, dict]:
    """``{model or test name: its result}`` of the last dbt command's run_results.json."""
    run = json.loads((project / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[-1]: r for r in run["results"]}


def check_run(
    project: Path,
    done: subprocess.CompletedProcess,
    env,
    modes: dict[str, str],
    freshness: int,
    then: str = "",
) -> None:
    """The views built (each one's message saying its mode in ``modes``) and equal to Spark
    running their models' compiled SQL, revenue_by_region with the ``freshness`` its model
    gives; the refused models failed with ivm's words and left nothing (no relation, no
    store; the table of another materialization in one's place kept). ``then``: code for the
    checking process to run last."""
    assert done.returncode == 1, done.stdout[-3000:]  # the refused models fail the run
    ran = results(project)
    for view in VIEWS:
        assert ran[view]["status"] == "success", ran[view]["message"]
        assert ran[view]["adapter_response"]["_message"].startswith(modes[view]), ran[view]
    for model, words in REFUSED.items():
        assert ran[model]["status"] == "error" and words in ran[model]["message"], ran[model]
        assert "\tat " not in ran[model]["message"]  # no Java stack
    compiled = project / "target" / "compiled" / "shop" / "models"
    out = run_python(COMPARE + then, env, str(compiled), *VIEWS)
    found = json.loads(out.strip().splitlines()[-1])
    assert {view: found[view] for view in VIEWS} == dict.fromkeys(VIEWS)
    assert found["relations"] == sorted([*VIEWS, "payments_total"])
    assert found["views"] == sorted(f"shop_models.{view}" for view in VIEWS)
    # the model's partition_by, freshness, retention (30 days), and the project's refresh_policy
    assert found["clauses"] == [["region"], freshness, 30 * 86400, "INCREMENTAL"]


@pytest.mark.slow
def test_a_dbt_project_runs_its_materialized_views_incrementally(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    shutil.copytree(PROJECT, project)
    env = os.environ | {"DBT_SEND_ANONYMOUS_USAGE_STATS": "0"}
    with connect_server(home, tmp_path / "server.log") as remote:
        (project / "profiles.yml").write_text(PROFILE.format(remote=remote, home=home))
        client = env | {"SPARK_REMOTE": remote}
        run_python(SOURCES, client)

        first = dbt(project, env, "run")
        logged = (project / "logs" / "dbt.log").read_text()
        assert "ivm leaves out the config schedule of shop_models.latest_orders" in logged
        refused = results(project)["payments_total"]["message"]  # what is wrong, and the fix
        assert "change data feed" in refused and "ALTER TABLE shop.payments SET" in refused
        check_run(project, first, client, dict.fromkeys(VIEWS, "create"), 300, then=CHANGES)

        # the sources changed, and two models: one's query, whose view is replaced, and one's
        # freshness, which is altered, its view refreshed incrementally
        # (on_configuration_change apply, dbt's default)
        edit(project / "models" / "big_regions.sql", "> 100", "> 50")
        edit(project / "models" / "revenue_by_region.sql", "'count': 5", "'count': 10")
        second = dbt(project, env, "run")
        replaced = {"big_regions": "create"}
        check_run(project, second, client, dict.fromkeys(VIEWS, "incremental") | replaced, 600)

        tested = dbt(project, env, "test")
        assert tested.returncode == 0, tested.stdout[-3000:]
        passed = [r for r in results(project).values() if r["status"] == "pass"]
        assert len(passed) == 6, results(project)

    # Spark in dbt's own process, on the home: the views are there, and nothing changed
    local = dbt(project, env, "run", "--target", "local")
    assert local.returncode == 1, local.stdout[-3000:]
    for view in VIEWS:
        assert results(project)[view]["adapter_response"]["_message"].startswith("noop"), view
