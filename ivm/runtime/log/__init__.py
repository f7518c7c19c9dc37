"""The Delta log: a table's state, its commits and their change, read from its transaction
log; and how its columns changed over a range of commits."""
