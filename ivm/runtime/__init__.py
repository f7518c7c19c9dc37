"""Runtime: Spark sessions, sources as Z-sets, and the lifecycle of materialized views.

Its sub-packages, each importing only those below it (``[tool.importlinter]`` in
``pyproject.toml``): :mod:`~ivm.runtime.commands`, :mod:`~ivm.runtime.observation`,
:mod:`~ivm.runtime.refresh`, :mod:`~ivm.runtime.catalog`, :mod:`~ivm.runtime.log`,
:mod:`~ivm.runtime.spark`; above them :mod:`~ivm.runtime.job`, the body of a generated job,
and below them :mod:`~ivm.runtime.messages`, what ivm tells its user.
"""
