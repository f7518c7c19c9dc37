"""What materialized views say about themselves: how far they lag, ``DESCRIBE``, ``ivm
status``, ``verify`` against their query, and a view's changelog."""
