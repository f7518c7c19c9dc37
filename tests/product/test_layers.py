"""The layers hold at run time: compiling with a schema mapping loads no Spark, and
Hypothesis is needed by ivm.testing alone (the ``testing`` extra).

(``lint-imports`` checks the import layers themselves; see ``[tool.importlinter]``.)"""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[2]


def test_import_ivm_and_compile_load_no_pyspark():
    program = """
import sys
import ivm, ivm.job
from ivm.frontend.statements import parse_statement
compiled = ivm.compile("SELECT k, COUNT(*) AS n FROM t GROUP BY k", schema={"t": {"k": "INT"}})
assert compiled.delta_sql and parse_statement("DROP MATERIALIZED VIEW v")
loaded = sorted(m for m in ("pyspark", "py4j", "delta", "hypothesis") if m in sys.modules)
assert not loaded, loaded
"""
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_ivm_testing_without_hypothesis_names_the_extra(tmp_path):
    """Where Hypothesis is not installed (``pip install ivm`` without ``[testing]``), ivm
    compiles, and ``import ivm.testing`` and ``ivm check`` say which extra to install,
    before any Spark starts."""
    view, schema = tmp_path / "view.sql", tmp_path / "schema.json"
    view.write_text("SELECT k FROM t")
    schema.write_text('{"t": {"k": "INT"}}')
    program = f"""
import sys
sys.modules["hypothesis"] = None  # as if not installed: importing it raises ImportError
import ivm
from ivm.cli import main
from ivm.errors import MissingExtra
assert ivm.compile("SELECT k FROM t", schema={{"t": {{"k": "INT"}}}}).delta_sql
try:
    import ivm.testing
except MissingExtra as error:
    assert isinstance(error, ImportError)
    print(error)
else:
    raise AssertionError("ivm.testing imported without Hypothesis")
status = main(["check", {str(view)!r}, "--schema", {str(schema)!r}])
assert status == 1, status
assert "pyspark" not in sys.modules
"""
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'ivm[testing]'" in result.stdout
    assert "ivm: ivm.testing (ivm check) needs Hypothesis" in result.stderr
