"""What ivm keeps of each materialized view: its names and its store's properties in the
Spark catalog, what its definition means (checked by Spark at CREATE), the record each
write of its store carries, and which views read which."""
