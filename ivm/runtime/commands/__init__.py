"""The commands: ``ivm.sql``'s statements, a view's CREATE, ALTER and DROP, and ``ivm run``."""
