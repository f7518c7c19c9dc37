"""The correctness harness: views checked against Spark running their own SQL.

* :func:`check_view` property-tests a view definition before it is deployed: drawn sources
  and change batches, a refresh after each, a comparison with recomputation, and on a
  difference a minimal reproduction as a SQL script (``ivm check`` on the command line).
* :func:`run_scenario` and :func:`check_views` run given sources and batches against several
  views at once; :func:`~ivm.testing.data.scenarios` draws them (Hypothesis strategies).

In a pytest suite (``spark`` a SparkSession fixture, from ``ivm.spark_session()``)::

    from ivm.testing import ViewCheckFailed, check_view

    def test_revenue_view_is_maintained(spark):
        check_view(spark, open("views/revenue.sql").read(), examples=20, seed=1)

A failure raises :class:`ViewCheckFailed`, an AssertionError whose message holds the
differing rows and the reproduction script (also its ``reproduction``).

Hypothesis draws the scenarios: it comes with ivm's ``testing`` extra
(``pip install 'ivm[testing]'``), and without it importing this package raises
:class:`~ivm.errors.MissingExtra`, saying so.
"""

try:
    import hypothesis  # noqa: F401  (drawn sources and changes; an extra, not a dependency)
except ImportError as missing:
    from ivm.errors import MissingExtra

    raise MissingExtra(
        "ivm.testing (ivm check) needs Hypothesis, which is not installed",
        hint="pip install 'ivm[testing]'",
    ) from missing

from ivm.testing.check import Checked, ViewCheckFailed, check_view
from ivm.testing.data import Scenario, Source, UnsupportedType, scenarios, sources
from ivm.testing.scenario import Approximate, Rewritten, ScenarioFailed, check_views, run_scenario

__all__ = [
    "Approximate",
    "Checked",
    "Rewritten",
    "Scenario",
    "ScenarioFailed",
    "Source",
    "UnsupportedType",
    "ViewCheckFailed",
    "check_view",
    "check_views",
    "run_scenario",
    "scenarios",
    "sources",
]
