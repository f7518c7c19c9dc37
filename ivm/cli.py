"""The ``ivm`` command.

    ivm sql "<statement>" | -f FILE    run a statement (materialized-view DDL or any Spark SQL)
                                       or a script of them, separated by ;
    ivm compile view.sql [--emit explain|sql|job|dot] [-o FILE]
                                       a view's circuit, its delta SQL, or a refresh job
    ivm explain view.sql [--format text|dot] [-o FILE]   the delta circuit
    ivm package [-o ivm_runtime.zip]   the ivm runtime for spark-submit --py-files
    ivm run [--tick S] [--vacuum-every S]  keep every view within its FRESHNESS until Ctrl-C
    ivm status [VIEW...] [--verbose]   one line per view: freshness, lag, last refresh, and
                                       what its next refresh would do now
    ivm upkeep VIEW... | --all         compact and vacuum views' stores
    ivm verify VIEW... | --all         compare views with their queries at the versions they
                                       reflect (one full recompute each); exit 1 on a difference
                                       or an error
    ivm check view.sql [--examples N] [--seed S] [--shrink-seconds T] [-o repro.sql]
                                       property-test a view on drawn sources and changes; on a
                                       difference, a minimal reproduction script; exit 1
    ivm metastore [--port N]           serve the catalog on a port of your choosing (IVM_METASTORE)
    ivm connect-server [--port N]      serve Spark Connect clients (ivm --remote sc://host:N ...)
    ivm demo                           a guided run on sample data

``view.sql`` holds ``CREATE MATERIALIZED VIEW name AS SELECT ...`` or a bare SELECT. Names are
resolved against ``--schema`` (a JSON file ``{table: {column: type}}``) when given, else against
the catalog of the embedded Spark session (``--home``, default ``$IVM_HOME`` or ``./ivm_home``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ivm.errors import IvmError
from ivm.runtime.messages import user_message

if TYPE_CHECKING:  # pyspark is imported only once a command needs Spark
    from ivm.runtime.spark.connect import Session


SERVED_COMMANDS = frozenset({"status", "verify", "compile", "explain"})
"""The commands that, without ``--remote``, run in the JVM of an ``ivm run`` of their home
where one runs (:mod:`ivm.runtime.spark.connect_service`), rather than start a JVM of their
own: those that only read. One that writes (``sql``, ``upkeep``, ``check``) keeps a JVM of
its own, where a refresh plans with what a Connect client goes without (the planned size of
a delta query, the sizes of a change's commits: :mod:`ivm.runtime.spark.connect`)."""


def _session(args):
    """The command's session; on a terminal with Spark's progress bar, but for ``ivm check``,
    which shows its own progress. For one of :data:`SERVED_COMMANDS` without ``--remote``
    (or ``$SPARK_REMOTE``), a client of the Spark Connect service of an ``ivm run`` on the
    home where one runs, released as the command ends; else a session with a JVM of its own."""
    import atexit
    import os
    import warnings

    from ivm.runtime.spark.connect_service import running
    from ivm.runtime.spark.session import (
        REMOTE_ENVIRONMENT,
        quiet_query_error_logs,
        resolve_home,
        spark_session,
    )

    quiet_query_error_logs()  # main() tells the user of an error
    # a Connect client's warning of each deprecated setting ivm sets (a view's pinned ones)
    warnings.filterwarnings("ignore", category=UserWarning, module="pyspark.sql.connect.conf")
    found = None
    if args.command in SERVED_COMMANDS and not (args.remote or os.environ.get(REMOTE_ENVIRONMENT)):
        found = running(resolve_home(args.home))
    spark = spark_session(
        args.home,
        remote=args.remote or found,
        console_progress=sys.stderr.isatty() and args.command != "check",
    )
    if found:
        atexit.register(spark.stop)  # its state on the server, which outlives the command
    return spark


class _Progress:
    """A progress line on ``stream``: on a terminal each line overwrites the last, and
    leaving the ``with`` block clears it; elsewhere (a log) each is a line of its own."""

    def __init__(self, stream: TextIO):
        self.stream, self.terminal = stream, stream.isatty()

    def __call__(self, line: str) -> None:
        if self.terminal:  # cut to the width: a wrapped line is not overwritten by \r
            line = line[: shutil.get_terminal_size().columns - 1]
            self.stream.write(f"{_CLEAR_LINE}{line}")
        else:
            self.stream.write(f"{line}\n")
        self.stream.flush()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exception) -> None:
        if self.terminal:
            self.stream.write(_CLEAR_LINE)
            self.stream.flush()


_CLEAR_LINE = "\r\x1b[K"
"""Back to the start of the line, and erase it (ANSI's Erase in Line)."""


def _cmd_sql(args) -> int:
    from ivm.frontend.statements import split_script

    if (args.statement is None) == (args.file is None):
        raise UsageError("give one statement, or a script with -f FILE")
    statements = (
        [args.statement] if args.file is None else split_script(Path(args.file).read_text())
    )
    spark = _session(args)
    for statement in statements:
        if args.file is not None:  # its comments as written, then the statement
            lines = statement.splitlines()
            comments = next(
                (i for i, line in enumerate(lines) if not line.lstrip().startswith("--")),
                len(lines),
            )
            print("\n".join(lines[:comments] + ["> " + "\n  ".join(lines[comments:])]))
        _run_statement(spark, statement, args.limit)
    return 0


def _run_statement(spark: Session, statement: str, limit: int) -> None:
    """Run ``statement`` and show what it did; REFRESH ALL shows each view's refresh as soon
    as it is done, and fails at the end if one was not."""
    from ivm.frontend.statements import RefreshAll, parse_statement
    from ivm.runtime.commands.statements import sql
    from ivm.runtime.refresh.every_view import refresh_all

    if not isinstance(parse_statement(statement), RefreshAll):
        _show(sql(spark, statement), limit)
    elif not refresh_all(spark, report=lambda line: print(line, flush=True)):
        print("no materialized views")


def _show(result, limit: int) -> None:
    """What a statement returned: a query's rows, the rows a DML statement affected, a
    refresh's summary, or OK for a statement without a result (DDL, INSERT, USE...)."""
    from pyspark.sql import DataFrame

    if result is None:
        print("OK")
    elif isinstance(result, DataFrame) and not result.columns:
        print("OK")
    elif isinstance(result, DataFrame) and (metrics := _dml_metrics(result)) is not None:
        print(_rows_affected(metrics))
    elif isinstance(result, DataFrame):
        result.show(limit, truncate=False)
    else:
        print(result)


_DML_METRIC = re.compile(r"num_(\w+)_rows")
"""A column of what Delta's UPDATE, DELETE and MERGE return: ``num_affected_rows``,
``num_inserted_rows``..."""


def _dml_metrics(result) -> dict[str, int] | None:
    """The metrics in a DML statement's result (a command's one row, computed already);
    None for any other result, such as a query's."""
    columns = result.columns
    if (
        "num_affected_rows" in columns
        and all(_DML_METRIC.fullmatch(c) for c in columns)
        and result.isLocal()
    ):  # a command's result, not a query naming columns so
        rows = result.collect()
        return rows[0].asDict() if len(rows) == 1 else None
    return None


def _rows_affected(metrics: dict[str, int]) -> str:
    """A DML statement's metrics for a reader.

    >>> _rows_affected({"num_affected_rows": 3, "num_updated_rows": 1, "num_deleted_rows": 0,
    ...                 "num_inserted_rows": 2})
    '3 rows affected (2 inserted, 1 updated, 0 deleted)'
    >>> _rows_affected({"num_affected_rows": 1})
    '1 row affected'
    """
    affected = metrics["num_affected_rows"]
    order = {"inserted": 0, "updated": 1, "deleted": 2}
    counts = {
        found[1].replace("_", " "): n
        for column, n in metrics.items()
        if column != "num_affected_rows" and (found := _DML_METRIC.fullmatch(column))
    }
    details = ", ".join(
        f"{counts[what]} {what}" for what in sorted(counts, key=lambda w: order.get(w, len(order)))
    )
    return f"{affected} row{'s' * (affected != 1)} affected" + (f" ({details})" if details else "")


def _view_definition(args) -> tuple[str, str, str]:
    """``(name, CREATE statement, SELECT)`` of the view in ``args.file`` (``--name`` names a
    bare SELECT)."""
    from ivm.frontend.statements import CreateView, parse_statement

    text = Path(args.file).read_text()
    statement = parse_statement(text)
    if isinstance(statement, CreateView):
        return args.name or statement.name, text, statement.query
    if statement is not None:
        raise IvmError(
            f"{args.file} holds a {statement.kind} statement",
            hint="write CREATE MATERIALIZED VIEW name AS SELECT ..., or a SELECT",
        )
    name = args.name or Path(args.file).stem
    return name, f"CREATE MATERIALIZED VIEW {name} AS\n{text.strip()}\n", text


def _compiled(args, name: str, query: str):
    """The compiled view ``name``; for a job, with tables named as the job's session names
    them (``default.t``: a flat ``--schema`` is the current database's), and, where the
    view exists, its state tables where it has them (as a job run on it compiles it)."""
    from ivm.compiler import compile

    if not args.schema:
        from ivm.runtime.catalog.analysis import analyse
        from ivm.runtime.catalog.tables import catalog_schema, is_legacy_view, qualified_name

        spark = _session(args)
        schema = catalog_schema(spark)
        compiled = compile(
            query,
            schema,
            name=name,
            legacy_layout=is_legacy_view(spark, qualified_name(spark, name)),
        )
        analyse(spark, query, schema)
        return compiled
    from sqlglot.schema import MappingSchema

    from ivm.names import DIALECT

    schema = _schema(args.schema)
    if args.emit == "job" and MappingSchema(schema, dialect=DIALECT).depth() == 1:
        return compile(query, {"default": schema}, default_db="default", name=name)
    return compile(query, schema, name=name)


class UsageError(IvmError):
    """A command-line argument is wrong; the command exits with status 2, as argparse's do."""


def _schema(path: str) -> dict:
    """The ``{table: {column: type}}`` mapping (optionally nested by database) in ``path``."""
    try:
        schema = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise UsageError(
            f"--schema {path} is not valid JSON: {error.msg} (line {error.lineno}, "
            f"column {error.colno})",
            hint="write {table: {column: type}}",
        ) from None

    def mapping(value, depth: int) -> bool:
        return isinstance(value, dict) and all(
            isinstance(k, str) and (isinstance(v, str) if depth == 0 else mapping(v, depth - 1))
            for k, v in value.items()
        )

    if not any(mapping(schema, depth) for depth in (1, 2)):
        raise UsageError(
            f"--schema {path} is not a mapping {{table: {{column: type}}}} "
            "(or {database: {table: {column: type}}})"
        )
    return schema


def _finite(text: str) -> float | None:
    """``text`` as a finite number; None if it is none."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (for ``--tick``)."""
    value = _finite(text)
    if value is None or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _whole_number(least: int, most: int | None = None):
    """An argparse type: a whole number from ``least`` (up to ``most``), refused as the
    argument is parsed, before any work starts."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least or (most is not None and value > most):
            bounds = f"from {least} to {most}" if most is not None else f"of at least {least}"
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number {bounds}")
        return value

    return whole_number


def _tolerance(text: str) -> float:
    """A relative tolerance: a finite number, at least 0 (for ``--float-tolerance``)."""
    value = _finite(text)
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a relative tolerance: a number of at least 0 (0: none)"
        )
    return value


def _write(args, text: str) -> None:
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        print(text, end="" if text.endswith("\n") else "\n")


def _cmd_compile(args) -> int:
    name, definition, query = _view_definition(args)
    compiled = _compiled(args, name, query)
    if args.emit == "job":
        from ivm.job import job_program
        from ivm.runtime.spark.jars import delta_packages

        job = Path(args.output).name if args.output else f"refresh_{name.split('.')[-1]}.py"
        _write(args, job_program(name, definition, compiled, job, packages=delta_packages()))
    elif args.emit == "dot":
        return _emit_dot(args, compiled)
    else:
        sql = "".join(
            f"-- state table {table}: the change of its store, per affected key:\n"
            f"{state.delta_sql};\n\n{_inserting_sql(state, table)}"
            f"-- state table {table} computed from scratch:\n"
            f"{state.full_sql};\n\n"
            for table, state in compiled.states
        )
        sql += (
            f"-- the change of the view's store, per affected key:\n{compiled.delta_sql};"
            f"\n\n{_inserting_sql(compiled, None)}"
            f"-- the view's store computed from scratch:\n{compiled.full_sql};\n"
        )
        explain = f"{compiled.explain()}\n{_read_estimate(args, name, compiled)}"
        _write(args, {"sql": sql, "explain": explain}.get(args.emit, f"{explain}\n\n{sql}"))
    return 0


def _inserting_sql(compiled, table: str | None) -> str:
    """The delta query for changes that insert rows only, where ``compiled`` (the view, or
    its state table ``table``) has one, commented."""
    inserting = compiled.inserting()
    if inserting is None:
        return ""
    whose = f"state table {table}" if table else "the view's store"
    return (
        f"-- the change of {whose} where every source's change inserts rows only:\n"
        f"{inserting.delta_sql};\n\n"
    )


def _read_estimate(args, name: str, compiled) -> str:
    """What a refresh reads, sized from the sources' Delta logs; those need the catalog."""
    if args.schema:
        return (
            "estimate of what a refresh reads: needs the sources' Delta logs "
            "(run without --schema, where the tables are)"
        )
    from ivm.runtime.catalog.tables import qualified_name
    from ivm.runtime.refresh.read_estimate import read_estimate

    spark = _session(args)
    return read_estimate(spark, compiled, qualified_name(spark, name))


def _emit_dot(args, compiled) -> int:
    """DOT text; a PNG instead when ``-o`` names a ``.png`` (Graphviz's ``dot`` renders it)."""
    import shutil
    import subprocess

    if not (args.output or "").endswith(".png"):
        _write(args, compiled.to_dot())
        return 0
    if shutil.which("dot") is None:
        raise IvmError(
            "rendering a PNG needs Graphviz's dot, which is not installed",
            hint="install graphviz, or write DOT text with -o circuit.dot",
        )
    subprocess.run(
        ["dot", "-Tpng", "-o", args.output], input=compiled.to_dot(), text=True, check=True
    )
    print(f"wrote {args.output}")
    return 0


def _cmd_explain(args) -> int:
    args.emit = "dot" if args.format == "dot" else "explain"
    return _cmd_compile(args)


def _cmd_package(args) -> int:
    from ivm.job import build_archive

    print(f"wrote {build_archive(args.output)} (for spark-submit --py-files)")
    return 0


def _cmd_run(args) -> int:
    from ivm.runtime.commands.scheduler import run
    from ivm.runtime.observation import status_service
    from ivm.runtime.spark.connect_service import served
    from ivm.runtime.spark.session import resolve_home

    spark, stop = _session(args), threading.Event()

    def finish(signum, frame):
        """The first Ctrl-C (or SIGTERM) lets a running refresh finish, a second one not."""
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGINT, finish)
    signal.signal(signal.SIGTERM, finish)
    vacuum = {} if args.vacuum_every is None else {"vacuum_every": args.vacuum_every}
    home = resolve_home(args.home)
    # to the ivm commands of the home; ivm status from a session of its own
    with served(spark, home), status_service.served(spark.newSession(), home):
        run(
            spark,
            tick=args.tick,
            stop=stop,
            **vacuum,
            report=lambda line: print(f"{time.strftime('%H:%M:%S')} {line}", flush=True),
        )
    return 0


def _cmd_status(args) -> int:
    import os

    from ivm.runtime.catalog.graph import materialized_views
    from ivm.runtime.observation import status_service
    from ivm.runtime.observation.describe import describe_view
    from ivm.runtime.observation.status import status_table, view_status
    from ivm.runtime.spark.session import REMOTE_ENVIRONMENT, resolve_home

    if not (args.verbose or args.remote or os.environ.get(REMOTE_ENVIRONMENT)):
        answered = status_service.ask(resolve_home(args.home), args.views or None)
        if answered is not None:  # by the ivm run of the home
            for error in answered.errors:
                print(error, file=sys.stderr, flush=True)
            if answered.table or not answered.views:
                print(answered.table or "no materialized views")
            return 1 if answered.errors else 0
    spark = _session(args)
    views = _checked_views(spark, args.views) if args.views else materialized_views(spark)
    if not views:
        print("no materialized views")
        return 0
    if args.verbose:

        def describe(view: str) -> bool:
            facts = describe_view(spark, view).collect()
            print(view)
            for fact, value in sorted(facts, key=lambda f: f[0] != "warning"):  # warnings first
                if fact not in ("view", "definition", "store"):
                    print(f"  {fact}: {value}")
            return True

        return 0 if _each_view(views, describe) else 1
    statuses = []

    def status(view: str) -> bool:
        statuses.append(view_status(spark, view))
        return True

    succeeded = _each_view(views, status)
    if statuses:
        print(status_table(statuses))
    return 0 if succeeded else 1


def _views_or_all(args, verb: str) -> None:
    """Refuse a command given neither views nor ``--all``, or both."""
    if args.views and args.all:
        raise UsageError(f"name the views to {verb} or give --all, not both")
    if not args.views and not args.all:
        raise UsageError(f"no view named: name the views to {verb}, or --all for every one")


def _views(spark: Session, args) -> list[str]:
    """The views a command acts on: every materialized view with ``--all``, else those named
    (see :func:`_checked_views`)."""
    from ivm.runtime.catalog.graph import materialized_views

    return materialized_views(spark) if args.all else _checked_views(spark, args.views)


def _checked_views(spark: Session, names: list[str]) -> list[str]:
    """The materialized views ``names`` name, qualified, each once, after checking that every
    one is a materialized view: before any work, one error names every one that is not, and
    what it is instead."""
    from ivm.runtime.catalog.definition import view_properties
    from ivm.runtime.catalog.tables import qualified_name

    found: dict[str, None] = {}
    wrong = []
    for name in names:
        try:
            view = qualified_name(spark, name)
            view_properties(spark, view)
        except IvmError as error:
            wrong.append(error.message)
        else:
            found[view] = None
    if len(wrong) == 1:
        raise UsageError(
            f"{wrong[0]}; nothing was done", hint="ivm status lists the materialized views"
        )
    if wrong:
        raise UsageError(
            f"{len(wrong)} of the views named are not materialized views; nothing "
            f"was done:\n" + "\n".join(f"  {line}" for line in wrong),
            hint="ivm status lists the materialized views",
        )
    return list(found)


def _each_view(views: list[str], work) -> bool:
    """``work(view)`` for each of ``views``, in turn: where one fails with an error a user can
    act on, the error is reported for that view and the others still run. Whether every
    ``work`` succeeded and returned true."""
    succeeded = True
    for view in views:
        try:
            succeeded = work(view) and succeeded
        except Exception as error:
            message = user_message(error)
            if message is None:
                raise
            print(f"ivm: {view}: {message}", file=sys.stderr, flush=True)
            succeeded = False
    return succeeded


def _cmd_upkeep(args) -> int:
    from ivm.runtime.refresh.upkeep import upkeep

    _views_or_all(args, "keep up")
    spark = _session(args)

    def keep_up(view: str) -> bool:
        done = upkeep(spark, view, vacuum_too=not args.no_vacuum)
        print(f"{view}: {'; '.join(map(str, done)) or 'nothing was due'}", flush=True)
        return True

    return 0 if _each_view(_views(spark, args), keep_up) else 1


def _cmd_verify(args) -> int:
    from ivm.runtime.observation.verify import verify

    _views_or_all(args, "verify")
    spark = _session(args)
    views = _views(spark, args)
    tolerance = {} if args.float_tolerance is None else {"float_tolerance": args.float_tolerance}

    def verified(view: str) -> bool:
        verdict = verify(spark, view, shown=args.rows, **tolerance)
        print(verdict, flush=True)
        return verdict.equal

    if not views:
        print("no materialized views")
    return 0 if _each_view(views, verified) else 1


def _cmd_check(args) -> int:
    from ivm.testing.check import ViewCheckFailed, check_view

    schema = _schema(args.schema) if args.schema else None
    sql = Path(args.file).read_text()
    spark = _session(args)
    try:
        given = {"examples": args.examples, "shrink_seconds": args.shrink_seconds}
        options = {name: value for name, value in given.items() if value is not None}
        with _Progress(sys.stderr) as progress:
            checked = check_view(
                spark,
                sql,
                schema=schema,
                seed=args.seed,
                name=args.name,
                progress=progress,
                **options,
            )
        print(checked)
    except ViewCheckFailed as failure:
        print(failure)
        if args.output:
            Path(args.output).write_text(failure.reproduction)
            print(f"wrote {args.output}")
        return 1
    return 0


def _cmd_metastore(args) -> int:
    from ivm.runtime.spark.catalog_server import open_alone
    from ivm.runtime.spark.metastore import serve
    from ivm.runtime.spark.session import resolve_home

    home = resolve_home(args.home)
    open_alone(home, hint="its processes share it already; stop them to serve it here")
    return serve(home, args.host, args.port)


def _cmd_connect_server(args) -> int:
    import os

    from ivm.runtime.spark.connect_service import record
    from ivm.runtime.spark.metastore import ENVIRONMENT, client_environment
    from ivm.runtime.spark.session import (
        connect_server_command,
        launch_conf,
        resolve_home,
        served_metastore,
    )

    home = resolve_home(args.home)
    home.mkdir(parents=True, exist_ok=True)
    metastore = served_metastore(home, os.environ.get(ENVIRONMENT), launch_conf())
    command = connect_server_command(home, host=args.host, port=args.port, metastore=metastore)
    url = f"sc://{args.host}:{args.port}"
    print(
        f"ivm: Spark Connect server of {home} at {url} (clients: --remote or SPARK_REMOTE); "
        "Ctrl-C stops it",
        flush=True,
    )
    # for the ivm commands of the home; the server is this process, as its pid stays
    record(home, url if args.host not in ("0.0.0.0", "::") else f"sc://localhost:{args.port}")
    os.environ.update(client_environment() if metastore else {})
    os.execv(command[0], command)  # the server in this process: signals reach it


def _cmd_demo(args) -> int:
    from ivm.demo import run

    run(args.home, args.remote)
    return 0


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="ivm", description="Incremental view maintenance for Apache Spark and Delta Lake."
    )
    main.add_argument(
        "--home",
        help="directory of the catalog and warehouse (default: $IVM_HOME or ./ivm_home)",
    )
    main.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="be a client of this Spark Connect server instead (default: $SPARK_REMOTE)",
    )
    commands = main.add_subparsers(dest="command", required=True)
    run_sql = commands.add_parser("sql", help="run a SQL statement, or a script of them")
    run_sql.add_argument("statement", nargs="?")
    run_sql.add_argument("-f", "--file", help="a script: statements separated by ;")
    run_sql.add_argument(
        "--limit", type=_whole_number(0), default=50, help="rows to show of a query"
    )
    run_sql.set_defaults(run=_cmd_sql)

    def view_file(command):
        command.add_argument(
            "file",
            help="a .sql file: CREATE MATERIALIZED VIEW name ... AS "
            "SELECT, or a SELECT (named by --name, else by the file)",
        )
        command.add_argument("--name", help="the view's name (default: the definition's)")
        command.add_argument(
            "--schema",
            help="JSON file {table: {column: type}}; without it the Spark catalog is read",
        )
        command.add_argument(
            "-o",
            "--output",
            help="write to this file (default: stdout; for check: the reproduction script)",
        )

    comp = commands.add_parser(
        "compile", help="compile a view: its delta circuit, SQL, or a refresh job for spark-submit"
    )
    view_file(comp)
    comp.add_argument(
        "--emit",
        choices=["explain", "sql", "job", "dot"],
        help="explain: the circuit; sql: the delta and full SQL (default: "
        "both); "
        "job: a PySpark program for spark-submit; dot: Graphviz "
        "(a PNG if -o ends in .png)",
    )
    comp.set_defaults(run=_cmd_compile)
    explain = commands.add_parser(
        "explain", help="a view's delta circuit: operators, rules, state and snapshots read"
    )
    view_file(explain)
    explain.add_argument("--format", choices=["text", "dot"], default="text")
    explain.set_defaults(run=_cmd_explain)
    package = commands.add_parser("package", help="zip the ivm runtime for spark-submit --py-files")
    package.add_argument("-o", "--output", default="ivm_runtime.zip")
    package.set_defaults(run=_cmd_package)
    loop = commands.add_parser(
        "run",
        help="keep every materialized view within its "
        "FRESHNESS, refreshing in dependency order, until Ctrl-C",
    )
    loop.add_argument("--tick", type=_seconds, default=1.0, help="seconds between passes")
    loop.add_argument(
        "--vacuum-every",
        type=_seconds,
        help="seconds between two VACUUMs of a view's stores (default: a day)",
    )
    loop.set_defaults(run=_cmd_run)
    keep_up = commands.add_parser(
        "upkeep",
        help="compact views' stores where due and VACUUM them (ivm run does both on its own)",
    )
    keep_up.add_argument("views", nargs="*", help="qualified view names")
    keep_up.add_argument("--all", action="store_true", help="every materialized view")
    keep_up.add_argument("--no-vacuum", action="store_true", help="compact only")
    keep_up.set_defaults(run=_cmd_upkeep)
    status = commands.add_parser(
        "status",
        help="one line per view: its freshness, lag, "
        "last refresh and what its next refresh would do now",
    )
    status.add_argument("views", nargs="*", metavar="VIEW", help="these views (default: all)")
    status.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="everything DESCRIBE MATERIALIZED VIEW says of each view",
    )
    status.set_defaults(run=_cmd_status)
    verifying = commands.add_parser(
        "verify",
        help="compare views with their queries run by Spark on the source versions "
        "each view reflects (Delta time travel): exact while sources keep changing; costs one "
        "full recompute per view; exit status 1 if one differs",
    )
    verifying.add_argument("views", nargs="*", metavar="VIEW")
    verifying.add_argument("--all", action="store_true", help="every materialized view")
    verifying.add_argument(
        "--rows", type=_whole_number(0), default=10, help="differing rows to show"
    )
    verifying.add_argument(
        "--float-tolerance",
        type=_tolerance,
        help="relative difference allowed in float columns, where rows "
        "differ exactly (default 1e-9; 0: none)",
    )
    verifying.set_defaults(run=_cmd_verify)
    checking = commands.add_parser(
        "check",
        help="property-test a view before deploying it: draw source rows and "
        "changes from the sources' schemas, create the view in a scratch database, refresh "
        "after every batch and compare with recomputation; on a difference print a minimal "
        "reproduction script and exit 1 (5-20 s per example)",
    )
    view_file(checking)
    checking.add_argument(
        "--examples", type=_whole_number(1), help="scenarios to draw (default 25)"
    )
    checking.add_argument("--seed", type=int, help="draw the scenarios of an earlier run again")
    checking.add_argument(
        "--shrink-seconds",
        type=_whole_number(0),
        help="how long to make a failing scenario smaller before reporting the smallest "
        "found (default 120; 0: report it as found)",
    )
    checking.set_defaults(run=_cmd_check)
    served = commands.add_parser(
        "metastore",
        help="serve the catalog of --home on a port of your choosing, to processes that set "
        "IVM_METASTORE=host:port (the processes of a home share its catalog without it)",
    )
    served.add_argument("--host", default="localhost")
    served.add_argument("--port", type=_whole_number(1, 65535), default=1527)
    served.set_defaults(run=_cmd_metastore)
    connect = commands.add_parser(
        "connect-server",
        help="serve Spark Connect clients (--remote) with Delta and the catalog of --home",
    )
    connect.add_argument("--host", default="localhost")
    connect.add_argument("--port", type=_whole_number(1, 65535), default=15002)
    connect.set_defaults(run=_cmd_connect_server)
    demo = commands.add_parser(
        "demo", help="create sample sources and a view, change them, refresh, show"
    )
    demo.set_defaults(run=_cmd_demo)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except Exception as error:
        message = user_message(error)
        if message is None:
            raise
        print(f"ivm: {message}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1


if __name__ == "__main__":
    sys.exit(main())
