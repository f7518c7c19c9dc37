"""The layers hold at run time: compiling with a schema mapping loads no Spark.

(``lint-imports`` checks the import layers themselves; see ``[tool.importlinter]``.)"""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]


def test_import_ivm_and_compile_load_no_pyspark():
    program = """
import sys
import ivm, ivm.job
from ivm.frontend.statements import parse_statement
compiled = ivm.compile("SELECT k, COUNT(*) AS n FROM t GROUP BY k", schema={"t": {"k": "INT"}})
assert compiled.delta_sql and parse_statement("DROP MATERIALIZED VIEW v")
loaded = sorted(m for m in ("pyspark", "py4j", "delta") if m in sys.modules)
assert not loaded, loaded
"""
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
