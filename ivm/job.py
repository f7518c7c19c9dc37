"""Generated refresh jobs: a view definition → a standalone PySpark program for spark-submit.

The program holds the definition, the delta circuit (as comments) and the SQL a refresh runs,
as named steps, so that reviewing the job is reviewing the refresh. At run time
(:mod:`ivm.runtime.job`) it compiles the definition again and refuses to run if the SQL it
would execute is not the SQL it shows: the reviewed text is the executed text.

It needs pyspark and Delta (``--packages``) and the ivm runtime, which ``ivm package`` zips
with its pure-Python dependencies for ``--py-files``.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ivm.compiler import CompiledView
from ivm.rules import append

ARCHIVE = "ivm_runtime.zip"
"""The default name of the archive ``ivm package`` builds."""

PACKAGES = ("ivm", "sqlglot", "networkx")
"""What the job imports beyond pyspark and delta-spark (both pure Python)."""


INSERTS_ONLY = "delta inserts only"
"""The step a refresh runs in place of ``delta`` where every source's change inserts rows
only (:mod:`ivm.rules.append`), for views that have one."""


def steps(compiled: CompiledView) -> dict[str, str]:
    """The SQL a refresh executes, by step name: ``delta`` (incremental), :data:`INSERTS_ONLY`
    where the view has it, and ``full``, and those of each state table ``table`` (``table
    delta``, ``table full``, …)."""
    found = {}
    for table, state in compiled.states:
        found |= {f"{table} {step}": sql for step, sql in _own_steps(state).items()}
    return found | _own_steps(compiled)


def _own_steps(compiled: CompiledView) -> dict[str, str]:
    inserting = compiled.inserting()
    return (
        {"delta": compiled.delta_sql}
        | ({INSERTS_ONLY: inserting.delta_sql} if inserting is not None else {})
        | {"full": compiled.full_sql}
    )


def _inserts_only_step(compiled: CompiledView, constant: str) -> tuple[str, str]:
    """The job's section for the step :data:`INSERTS_ONLY` of ``compiled`` as ``constant``,
    and its name; nothing where it has none."""
    inserting = compiled.inserting()
    if inserting is None:
        return "", ""
    rule = append.RULE
    return (
        f"""\
# Step "{INSERTS_ONLY}": "delta" where every source's change since the last refresh inserts
# rows only (its commits add data files and remove none). Rule {rule.name}: {rule.formula}
{constant} = {_string(inserting.delta_sql)}

""",
        constant,
    )


def _state_steps(compiled: CompiledView) -> tuple[str, str]:
    """The job's section for the state tables, and the entries of its steps."""
    section, entries = [], []
    for number, (table, state) in enumerate(compiled.states, start=1):
        inserting, constant = _inserts_only_step(state, f"STATE{number}_DELTA_INSERTS_ONLY")
        section.append(f"""\
# State table {table}: a hidden view of this one, refreshed before it in a commit of its
# own; its steps are those of a view.
STATE{number}_DELTA = {_string(state.delta_sql)}

{inserting}STATE{number}_FULL = {_string(state.full_sql)}

""")
        entries += [
            f"        {table + ' delta'!r}: STATE{number}_DELTA,\n",
            *([f"        {table + ' ' + INSERTS_ONLY!r}: {constant},\n"] if constant else []),
            f"        {table + ' full'!r}: STATE{number}_FULL,\n",
        ]
    return "".join(section), "".join(entries)


def _comment(text: str) -> str:
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines())


def _string(text: str) -> str:
    """``text`` as a Python literal that keeps its lines."""
    if '"""' not in text and not text.endswith('"') and "\\" not in text:
        return f'"""\\\n{text}"""'
    return repr(text)


STANDALONE_MASTER = "HOST:7077"
"""Where a job's header puts the address of a standalone cluster's master."""


def submit_command(job: str, packages: Sequence[str], master: str | None = None) -> str:
    """The spark-submit line of ``job``: Delta's Maven ``packages``, the ivm runtime as
    ``--py-files``."""
    master_option = f"--master {master} " if master else ""
    return f"spark-submit {master_option}--packages {','.join(packages)} --py-files {ARCHIVE} {job}"


def job_program(
    name: str,
    definition: str,
    compiled: CompiledView,
    job: str = "refresh.py",
    *,
    packages: Sequence[str],
) -> str:
    """The source of the refresh job of view ``name``, defined by the CREATE statement
    ``definition`` and compiled to ``compiled``; ``job`` is the file name it is saved as,
    ``packages`` the Maven coordinates of Delta it is submitted with
    (:func:`ivm.runtime.spark.jars.delta_packages`)."""
    rule = compiled.maintenance.rule
    states, state_steps = _state_steps(compiled)
    inserting, constant = _inserts_only_step(compiled, "DELTA_INSERTS_ONLY")
    inserting_entry = f'        "{INSERTS_ONLY}": {constant},\n' if constant else ""
    local = submit_command(job, packages)
    standalone = submit_command(job, packages, master=f"spark://{STANDALONE_MASTER}")
    cluster = submit_command(
        f"{job} --warehouse s3://bucket/warehouse", packages, master="yarn --deploy-mode cluster"
    )
    return f'''\
"""Refresh the materialized view {name}, or create it if it does not exist.

Generated by `ivm compile --emit job`; regenerate it when the definition changes.

Run it in local mode, with the catalog and warehouse of ./ivm_home (as `ivm sql` and
`ivm.spark_session()` in the same directory):

    ivm package -o {ARCHIVE}
    {local}

While other processes use the same ivm home, add `--driver-class-path` with Derby's client jar:
the job then shares the home's catalog with them (it names the jar when it is refused).

On a Spark standalone cluster, the driver here and the executors on its workers (each
executor a JVM of its own; they read and write the warehouse, which every worker must see
at the same path, as on one machine or a shared filesystem):

    {standalone}

On a cluster, with a shared metastore (spark.hadoop.hive.metastore.uris) or table locations:

    {cluster}

Options: --home DIR (catalog and warehouse), --warehouse URI, --full (recompute),
--partition "col = 'value'" (recompute one partition), --loop (keep the view within its
FRESHNESS until stopped), --tick SECONDS. Exit status 0 on success, 1 with a message on
stderr on failure (a retry is safe: refreshes are applied exactly once), 2 on bad arguments.
"""

VIEW = {name!r}

DEFINITION = {_string(definition.strip())}

{_comment(compiled.explain())}

{states}# Step "delta": per affected key of the store, the change of every accumulator, computed
# from the sources' change data feed and their snapshots before/after the change.
# Rule {rule.name} ({rule.kind.value}): {rule.formula}
# The step's result is folded into the store with one MERGE (one Delta commit).
DELTA = {_string(compiled.delta_sql)}

{inserting}# Step "full": every row of the store from the sources as of the consumed versions; run
# by CREATE, by --full, by --partition (restricted to the partition) and by a refresh that
# cannot be incremental (the reason is recorded in the view's history).
FULL = {_string(compiled.full_sql)}

if __name__ == "__main__":
    from ivm.runtime.job import main

    steps = {{
{state_steps}        "delta": DELTA,
{inserting_entry}        "full": FULL,
    }}
    raise SystemExit(main(VIEW, DEFINITION, steps))
'''


def build_archive(path: str | os.PathLike) -> Path:
    """Zip the packages of :data:`PACKAGES`, as installed here, into ``path`` for
    ``spark-submit --py-files``: each module's source and, beside it, its bytecode for this
    Python (``module.pyc``, which Python's zip importer loads first). Python cannot cache
    the bytecode of what it imports from a zip, so without it every job compiled some 1,400
    modules again as it started (3.6 s of its Python start, cProfile); a Python of another
    version finds the bytecode's magic number not its own and compiles the source."""
    import importlib
    import py_compile
    import tempfile

    path = Path(path)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        tempfile.TemporaryDirectory() as scratch,
    ):
        bytecode = Path(scratch) / "module.pyc"
        for package in PACKAGES:
            init = importlib.import_module(package).__file__
            assert init is not None  # each of PACKAGES is a regular package, not a namespace
            root = Path(init).parent
            for file in sorted(root.rglob("*.py")):
                name = file.relative_to(root.parent).as_posix()
                archive.write(file, name)
                py_compile.compile(
                    str(file),
                    cfile=str(bytecode),
                    dfile=name,
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                )
                archive.write(bytecode, name + "c")
    return path
