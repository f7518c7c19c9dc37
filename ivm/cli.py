"""The ``ivm`` command.

    ivm sql "<statement>"              run a statement (materialized-view DDL or any Spark SQL)
    ivm compile view.sql [--schema s]  print the explain and the generated SQL of a view
    ivm run [--tick SECONDS]           keep every view within its FRESHNESS until Ctrl-C
    ivm status [view]                  each view's freshness, lag and last refresh
    ivm metastore [--port N]           serve the catalog to several processes (IVM_METASTORE)
    ivm demo                           a guided run on sample data

``view.sql`` holds ``CREATE MATERIALIZED VIEW name AS SELECT ...`` or a bare SELECT. Names are
resolved against ``--schema`` (a JSON file ``{table: {column: type}}``) when given, else against
the catalog of the embedded Spark session (``--home``, default ``$IVM_HOME`` or ``./ivm_home``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from ivm.errors import IvmError


def _session(args):
    from ivm.runtime.session import spark_session
    return spark_session(args.home)


def _cmd_sql(args) -> int:
    from ivm.runtime.statements import sql
    spark = _session(args)
    result = sql(spark, args.statement)
    if result is None:
        print("OK")
    elif isinstance(result, list):
        print("\n".join(str(r) for r in result) or "no materialized views")
    elif hasattr(result, "show"):
        result.show(args.limit, truncate=False)
    else:
        print(result)
    return 0


def _cmd_compile(args) -> int:
    from ivm.compiler import compile
    from ivm.runtime.statements import parse_statement
    text = Path(args.file).read_text()
    statement = parse_statement(text)
    query = statement.query if statement is not None and statement.action == "create" else text
    if args.schema:
        compiled = compile(query, json.loads(Path(args.schema).read_text()))
    else:
        compiled = compile(query, spark=_session(args))
    print(compiled.explain())
    print("\n-- the change of the view's store, per affected key:")
    print(compiled.delta_sql)
    print("\n-- the view's store computed from scratch:")
    print(compiled.full_sql)
    return 0


def _cmd_run(args) -> int:
    from ivm.runtime.scheduler import run
    spark, stop = _session(args), threading.Event()

    def finish(signum, frame):
        """The first Ctrl-C (or SIGTERM) lets a running refresh finish, a second one not."""
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, finish)
    signal.signal(signal.SIGTERM, finish)
    run(spark, tick=args.tick, stop=stop,
        report=lambda line: print(f"{time.strftime('%H:%M:%S')} {line}", flush=True))
    return 0


def _cmd_status(args) -> int:
    from ivm.runtime.graph import materialized_views
    from ivm.runtime.views import describe_view
    spark = _session(args)
    for view in [args.view] if args.view else materialized_views(spark):
        print(view)
        for fact, value in describe_view(spark, view).collect():
            if fact not in ("view", "definition", "store"):
                print(f"  {fact}: {value}")
    return 0


def _cmd_metastore(args) -> int:
    from ivm.runtime.metastore import serve
    from ivm.runtime.session import resolve_home
    return serve(resolve_home(args.home), args.host, args.port)


def _cmd_demo(args) -> int:
    from ivm.demo import run
    run(args.home)
    return 0


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="ivm", description="Incremental view maintenance "
                                   "for Apache Spark and Delta Lake.")
    main.add_argument("--home", help="directory of the embedded catalog and warehouse "
                      "(default: $IVM_HOME or ./ivm_home)")
    commands = main.add_subparsers(dest="command", required=True)
    run_sql = commands.add_parser("sql", help="run a SQL statement")
    run_sql.add_argument("statement")
    run_sql.add_argument("--limit", type=int, default=50, help="rows to show of a query")
    run_sql.set_defaults(run=_cmd_sql)
    comp = commands.add_parser("compile", help="print a view's delta circuit and SQL")
    comp.add_argument("file", help="a .sql file: CREATE MATERIALIZED VIEW ... AS SELECT, "
                      "or a SELECT")
    comp.add_argument("--schema", help="JSON file {table: {column: type}}; without it the "
                      "Spark catalog is read")
    comp.set_defaults(run=_cmd_compile)
    loop = commands.add_parser("run", help="keep every materialized view within its "
                               "FRESHNESS, refreshing in dependency order, until Ctrl-C")
    loop.add_argument("--tick", type=float, default=1.0, help="seconds between passes")
    loop.set_defaults(run=_cmd_run)
    status = commands.add_parser("status", help="freshness, lag and last refresh of views")
    status.add_argument("view", nargs="?", help="one view (default: all)")
    status.set_defaults(run=_cmd_status)
    served = commands.add_parser("metastore", help="serve the catalog of --home to several "
                                 "processes; they set IVM_METASTORE=host:port")
    served.add_argument("--host", default="localhost")
    served.add_argument("--port", type=int, default=1527)
    served.set_defaults(run=_cmd_metastore)
    demo = commands.add_parser("demo", help="create sample sources and a view, change them, "
                               "refresh, show")
    demo.set_defaults(run=_cmd_demo)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except IvmError as error:
        print(f"ivm: {error}", file=sys.stderr)
        return 1
    except FileNotFoundError as error:
        print(f"ivm: {error.strerror}: {error.filename}", file=sys.stderr)
        return 1
    except Exception as error:  # Spark's own errors: their message, not a JVM stack trace
        from pyspark.errors import PySparkException
        if isinstance(error, PySparkException):
            print(f"ivm: Spark: {str(error).strip().splitlines()[0]}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
