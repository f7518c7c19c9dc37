"""The refresh: its plan (the refresh policy and cost model, the obstacles, how long the
sources keep the change), the sources' change read and pruned, the committed write, and the
upkeep of the stores."""
