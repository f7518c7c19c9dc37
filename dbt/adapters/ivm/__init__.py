"""dbt's adapter for ivm: ``type: ivm`` in a profile (see docs/dbt.md)."""

import importlib

from dbt.adapters.base.plugin import AdapterPlugin

from .connections import IvmConnectionManager, IvmCredentials
from .impl import IvmAdapter

__all__ = ["IvmAdapter", "IvmConnectionManager", "IvmCredentials", "Plugin"]

Plugin = AdapterPlugin(
    adapter=IvmAdapter,  # type: ignore[arg-type]
    credentials=IvmCredentials,
    include_path=importlib.import_module("dbt.include.ivm").PACKAGE_PATH,
    dependencies=["spark"],
)
