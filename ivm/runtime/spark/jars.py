"""Make sure the Delta Lake jars (and Derby's network server) are available to Spark.

The ``delta-spark`` wheel holds no jars: Spark's Ivy resolves the Maven coordinates in
``spark.jars.packages`` on every session start and downloads them (once) into
``~/.ivy2.5.2``.  Ivy looks into ``~/.m2/repository`` first, so where Ivy cannot reach Maven
Central by itself, ``mvn dependency:get`` can pre-fetch the artifacts.

``python -m ivm.runtime.spark.jars`` checks the Ivy cache and, if jars are missing and ``mvn`` is on
the PATH, pre-fetches them into ``~/.m2``.  It never fails on a network problem: it reports it
and leaves the fetch to Ivy at the next session start.

>>> delta_packages()[0].startswith("io.delta:delta-spark_2.13:")
True
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

SCALA_VERSION = "2.13"
ANTLR_VERSION = "4.13.1"  # antlr4-runtime version delta-spark 4.0.x depends on
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"  # Spark 4's default Ivy cache (spark.jars.ivy)
M2_REPO = Path.home() / ".m2" / "repository"
# A modern plugin version on purpose: the old default (2.8) also resolves test- and
# provided-scope dependencies (Spark, AWS SDK: > 1 GB); 3.x fetches only what Ivy needs
# (jars, poms and parent poms of delta-spark, delta-storage, antlr4-runtime, scala-library).
MVN_GET = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get"


def delta_version() -> str:
    """Version of the installed ``delta-spark`` Python package (= the jar version to use)."""
    return importlib.metadata.version("delta-spark")


def delta_packages() -> list[str]:
    """Maven coordinates ``configure_spark_with_delta_pip`` puts into ``spark.jars.packages``."""
    try:
        from delta.pip_utils import configure_spark_with_delta_pip
        from pyspark.sql import SparkSession

        # A fresh builder only records options; nothing JVM-side happens here.
        builder = configure_spark_with_delta_pip(SparkSession.Builder())
        packages = builder._options["spark.jars.packages"]
        return [p for p in packages.split(",") if p]
    except Exception:  # pragma: no cover - same derivation as delta.pip_utils
        return [f"io.delta:delta-spark_{SCALA_VERSION}:{delta_version()}"]


def required_artifacts() -> list[str]:
    """Every jar Spark needs for Delta: the packages and their runtime dependencies."""
    version = delta_packages()[0].rsplit(":", 1)[1]
    return delta_packages() + [
        f"io.delta:delta-storage:{version}",
        f"org.antlr:antlr4-runtime:{ANTLR_VERSION}",
    ]


DERBY_VERSION = "10.16.1.1"  # the Derby pyspark bundles (pyspark/jars/derby-*.jar)
METASTORE_ARTIFACTS = [
    f"org.apache.derby:derbynet:{DERBY_VERSION}",
    f"org.apache.derby:derbyclient:{DERBY_VERSION}",
]
"""The Derby network server and its client driver, for a catalog shared by several processes
(see :mod:`ivm.runtime.spark.metastore`); ``mvn`` brings derby, derbyshared and derbytools along."""


def metastore_jars(m2_repo: Path = M2_REPO) -> list[Path]:
    """The jars of the Derby network server and client, from ``~/.m2``."""
    artifacts = ["derby", "derbyshared", "derbytools", "derbynet", "derbyclient"]
    return [m2_jar(f"org.apache.derby:{a}:{DERBY_VERSION}", m2_repo) for a in artifacts]


def ivy_jar(coordinate: str, ivy_jars: Path = IVY_JARS) -> Path:
    """Where Spark's Ivy keeps the jar of ``group:artifact:version``."""
    group, artifact, version = coordinate.split(":")
    return ivy_jars / f"{group}_{artifact}-{version}.jar"


def cached_jars(ivy_jars: Path = IVY_JARS) -> list[Path] | None:
    """The Delta jars in Spark's Ivy cache, or ``None`` unless all of them are there."""
    paths = [ivy_jar(c, ivy_jars) for c in required_artifacts()]
    return paths if all(p.is_file() for p in paths) else None


def m2_jar(coordinate: str, m2_repo: Path = M2_REPO) -> Path:
    """Where Maven keeps the jar of ``group:artifact:version``."""
    group, artifact, version = coordinate.split(":")
    return m2_repo.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")


def ensure_jars(ivy_jars: Path = IVY_JARS, m2_repo: Path = M2_REPO) -> str:
    """Pre-fetch missing Delta jars with ``mvn``; return a one-line report.  Never raises."""
    wanted = required_artifacts() + METASTORE_ARTIFACTS
    missing = [
        c for c in wanted if not ivy_jar(c, ivy_jars).is_file() and not m2_jar(c, m2_repo).is_file()
    ]
    if not missing:
        return f"jars present ({', '.join(wanted)})"
    mvn = shutil.which("mvn")
    if mvn is None:
        return f"mvn not found; Spark's Ivy will fetch {', '.join(missing)} on first session start"
    failed = []
    for coordinate in missing:
        if m2_jar(coordinate, m2_repo).is_file():  # came along with an earlier transitive get
            continue
        command = [mvn, "-q", "-B", MVN_GET, f"-Dartifact={coordinate}"]
        if m2_repo != M2_REPO:
            command.append(f"-Dmaven.repo.local={m2_repo}")
        try:
            subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        except (OSError, subprocess.SubprocessError):
            pass
        if not m2_jar(coordinate, m2_repo).is_file():
            failed.append(coordinate)
    if failed:
        return f"mvn could not fetch {', '.join(failed)}; Spark's Ivy will retry on session start"
    return f"fetched {', '.join(missing)} into {m2_repo} with mvn"


def main() -> int:
    try:
        print(ensure_jars())
    except Exception as exc:  # never break `make test` over a jar pre-fetch
        print(f"could not check delta jars ({exc}); Spark's Ivy will fetch them on session start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
