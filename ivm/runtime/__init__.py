"""Runtime: Spark sessions, sources as Z-sets, and the lifecycle of materialized views."""
