"""The table property that turns on a Delta table's change data feed, which a source needs."""

CDF = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
