"""The macros of dbt's ivm adapter."""

import os

PACKAGE_PATH = os.path.dirname(__file__)
