"""Spark plumbing: a session with Delta and a persistent catalog, Spark Connect, the Delta
jars, the metastore several processes share, the Spark settings each statement runs under,
and which failure of Spark or Delta is which."""
