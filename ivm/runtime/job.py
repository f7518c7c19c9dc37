"""The body of a generated refresh job (see :mod:`ivm.job`): arguments, checks, one refresh.

``main(view, definition, steps, argv)`` creates the view if it does not exist, else refreshes
it (incrementally, ``--full``, or one ``--partition``); ``--loop`` keeps it within its
FRESHNESS until stopped. Before anything runs it compiles the definition that will run —
``definition`` for a CREATE, else the view's stored one, as at its CREATE — and compares the
SQL with ``steps``, the SQL the job shows; a job whose text is not what would run is refused.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from py4j.protocol import Py4JJavaError

from ivm.errors import CatalogError, SetupError, StaleJob
from ivm.job import steps as compiled_steps
from ivm.runtime.messages import user_message
from ivm.runtime.session import DELTA_EXTENSION

EXIT_FAILED = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def arguments(view: str) -> argparse.ArgumentParser:
    parser = _Parser(description=f"Refresh the materialized view {view}, or create it.")
    parser.add_argument("--home", help="directory of the embedded catalog and warehouse "
                        "(default: $IVM_HOME, else ./ivm_home)")
    parser.add_argument("--warehouse", help="spark.sql.warehouse.dir, for a cluster")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true", help="recompute the view from scratch")
    mode.add_argument("--partition", metavar="\"COL = 'VALUE'\"",
                      help="recompute one partition of a partitioned view")
    mode.add_argument("--loop", action="store_true",
                      help="keep the view within its FRESHNESS until stopped")
    parser.add_argument("--tick", type=float, default=1.0,
                        help="with --loop: seconds between checks (default 1)")
    return parser


def _check_steps(compiled, steps: dict[str, str]) -> None:
    differing = [step for step, text in compiled_steps(compiled).items()
                 if steps.get(step) != text]
    if differing:
        raise StaleJob(
            f"the SQL of step(s) {', '.join(differing)} in this job is not what the "
            "definition compiles to now (another ivm version, or the sources changed)",
            hint="regenerate the job with `ivm compile <view.sql> --emit job`")


def _check_classpath(spark) -> None:
    """Under spark-submit the JVM starts before this code, so what it needs must be on its
    classpath from the start: Delta, and Derby's client driver for a served catalog."""
    from ivm.runtime.jars import delta_packages
    from ivm.runtime.metastore import CLIENT_DRIVER, ENVIRONMENT, client_classpath

    def loadable(name: str) -> bool:
        # Spark's class loader, which holds the jars of --packages (the system one does not).
        # A class whose superclass is missing fails to link instead of "not loadable".
        try:
            return spark._jvm.org.apache.spark.util.Utils.classIsLoadable(name)
        except Py4JJavaError:
            return False

    if not loadable(DELTA_EXTENSION):
        raise SetupError("Delta Lake is not on the driver's classpath",
                         hint=f"spark-submit --packages {','.join(delta_packages())} ...")
    if os.environ.get(ENVIRONMENT) and not loadable(CLIENT_DRIVER):
        raise SetupError(f"the catalog is served (${ENVIRONMENT}) but Derby's client driver "
                         "is not on the driver's classpath",
                         hint=f"spark-submit --driver-class-path {client_classpath()} ...")


def _run(view: str, definition: str, steps: dict[str, str], args) -> None:
    from ivm.compiler import compile
    from ivm.frontend.statements import parse_statement
    from ivm.runtime.catalog import FRESHNESS, catalog_schema, qualified_name, store_properties
    from ivm.runtime.definition import compile_definition
    from ivm.runtime.scheduler import run
    from ivm.runtime.session import quiet_query_error_logs, spark_session
    from ivm.runtime.statements import sql

    conf = {"spark.sql.warehouse.dir": args.warehouse} if args.warehouse else None
    quiet_query_error_logs()    # main() reports an error once, as error: ...
    spark = spark_session(args.home, app_name=f"ivm refresh {view}", conf=conf)
    _check_classpath(spark)
    name = qualified_name(spark, view)
    properties = store_properties(spark, name)
    if properties is None:
        create = parse_statement(definition)
        assert create is not None and create.query is not None  # a job is made from a CREATE
        compiled = compile(create.query, catalog_schema(spark), name=name)
    else:
        compiled = compile_definition(spark, name, properties)
    _check_steps(compiled, steps)
    if properties is None:
        print(sql(spark, definition), flush=True)
    elif args.partition:
        print(sql(spark, f"REFRESH MATERIALIZED VIEW {view} PARTITION ({args.partition})"),
              flush=True)
    elif not args.loop:
        print(sql(spark, f"REFRESH MATERIALIZED VIEW {view}{' FULL' if args.full else ''}"),
              flush=True)
    if args.loop:
        current = properties or store_properties(spark, name)
        assert current is not None  # the view existed, or the CREATE above made it
        if FRESHNESS not in current:
            raise CatalogError(f"materialized view {name} has no FRESHNESS to keep",
                               hint="declare one: CREATE MATERIALIZED VIEW ... FRESHNESS = "
                                    "INTERVAL '1' MINUTE AS ...")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
        run(spark, tick=args.tick, stop=stop, views=[name],
            report=lambda line: print(f"{time.strftime('%H:%M:%S')} {line}", flush=True))


def main(view: str, definition: str, steps: dict[str, str],
         argv: list[str] | None = None) -> int:
    """Run the job; the exit status for the scheduler that started it."""
    args = arguments(view).parse_args(argv)
    try:
        _run(view, definition, steps, args)
    except Exception as error:
        message = user_message(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr, flush=True)
        return EXIT_FAILED
    return 0
