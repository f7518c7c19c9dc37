"""The TPC-H view tests reuse the property tests' harness (the oracle check); it lives beside
them in tests/property, which is not a package."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "property"))
