"""A dbt connection to ivm: a Spark session (local, on an ivm home, or a Spark Connect client)
whose statements run through ``ivm.sql``, so that the materialized-view statements the
materialization writes are ivm's and everything else is Spark's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.contracts.connection import (
    AdapterResponse,
    Connection,
    ConnectionState,
    Credentials,
)
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.exceptions.connection import FailedToConnectError
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionWrapper
from dbt.adapters.spark.session import SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import DataFrame

import ivm

logger = AdapterLogger("ivm")


@dataclass
class IvmCredentials(Credentials):
    """The profile of ``type: ivm``: ``schema`` (the database the models go to), ``home``
    (the ivm home that holds the catalog and the warehouse, as ``ivm --home``; default
    ``$IVM_HOME``, else ``./ivm_home``), ``metastore`` (``host:port`` of that home's served
    catalog, for several processes at once), ``remote`` (``sc://host:port`` of a Spark
    Connect server, which then holds all of those) and ``conf`` (Spark settings)."""

    schema: str | None = None  # pyright: ignore[reportIncompatibleVariableOverride]
    database: str | None = None  # pyright: ignore[reportIncompatibleVariableOverride]
    home: str | None = None
    metastore: str | None = None
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        data.setdefault("database", None)
        return data

    def __post_init__(self) -> None:
        if self.schema is None:
            raise DbtRuntimeError("the ivm profile needs a `schema`: the database of the models")
        # Spark has databases alone, which dbt calls schemas
        if self.database is not None and self.database != self.schema:
            raise DbtRuntimeError(
                f"the ivm profile has schema {self.schema} and database {self.database}: on "
                f"Spark they are one, so leave `database` out or give it the schema's value"
            )
        self.database = None  # pyright: ignore[reportIncompatibleVariableOverride]
        self.conf = {str(key): str(value) for key, value in self.conf.items()}

    @property
    def type(self) -> str:
        return "ivm"

    @property
    def unique_field(self) -> str:
        return self.remote or self.home or "ivm_home"

    def _connection_keys(self) -> tuple[str, ...]:
        return "schema", "home", "metastore", "remote"


class IvmCursor(SparkConnectionWrapper):
    """A connection's cursor: each statement run by ``ivm.sql`` in the connection's own
    session (its own settings, temporary views and current database, as each dbt thread
    needs); a materialized-view statement's result kept as the response's message."""

    def __init__(self, spark) -> None:
        self.spark = spark
        self._frame: DataFrame | None = None
        self._rows: list | None = None
        self.message = "OK"

    def cursor(self) -> IvmCursor:
        return self

    def cancel(self) -> None:
        logger.debug("a running statement is not cancelled: Spark runs it to its end")

    def close(self) -> None:
        self._frame, self._rows = None, None

    def rollback(self, *args: Any, **kwargs: Any) -> None:
        logger.debug("no rollback: each ivm and Delta statement commits on its own")

    def execute(self, sql: str, bindings: list[Any] | None = None) -> None:
        statement = sql.strip().removesuffix(";")
        if bindings:  # a seed's rows
            fixed = tuple(SessionConnectionWrapper._fix_binding(value) for value in bindings)
            statement = statement % fixed
        self._frame, self._rows = None, None
        result = ivm.sql(self.spark, statement)
        if isinstance(result, DataFrame):  # Spark's answer, or ivm's DESCRIBE or EXPLAIN
            self._frame, self.message = result, "OK"
        else:  # a CREATE or REFRESH (a RefreshResult), or None for ALTER and DROP
            self.message = "OK" if result is None else str(result)

    def fetchall(self) -> list | None:
        if self._rows is None and self._frame is not None:
            self._rows = self._frame.collect()
        return self._rows

    def fetchone(self):
        rows = self.fetchall()
        return rows.pop(0) if rows else None

    @property
    def description(self) -> list[tuple]:
        if self._frame is None:
            return []
        return [
            (f.name, f.dataType.simpleString(), None, None, None, None, f.nullable)
            for f in self._frame.schema.fields
        ]


class IvmConnectionManager(SparkConnectionManager):
    TYPE = "ivm"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        creds: IvmCredentials = connection.credentials  # type: ignore[assignment]
        try:
            spark = ivm.spark_session(
                creds.home, conf=creds.conf, metastore=creds.metastore, remote=creds.remote
            )
        except Exception as error:
            raise FailedToConnectError(f"ivm could not start its Spark session: {error}") from error
        # each connection (each dbt thread) in a session of its own; a Connect client has one
        own = spark if creds.remote else spark.newSession()
        connection.handle = IvmCursor(own)
        connection.state = ConnectionState.OPEN
        return connection

    @classmethod
    def get_response(cls, cursor: Any) -> AdapterResponse:
        """The statement's outcome, which dbt shows beside the model: for a materialized view,
        what its CREATE or REFRESH did (incremental or full, and why)."""
        return AdapterResponse(_message=getattr(cursor, "message", "OK"))

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """ivm's errors as ivm words them (what is wrong, where in the SQL, what to do), and
        Spark's without their Java stack."""
        try:
            yield
        except DbtRuntimeError:
            raise
        except ivm.IvmError as error:
            raise DbtRuntimeError(str(error)) from error
        except Exception as error:
            logger.debug(f"error while running:\n{sql}")
            text = str(error).split("\n\tat ", 1)[0].strip()
            raise DbtRuntimeError(text or type(error).__name__) from error
