"""The table properties ivm keeps on a view's store (and one on its catalog view): each one's
name, and what it holds.

A store's properties are the view's catalog (:mod:`ivm.runtime.catalog.tables`): they say
which view it stores, the definition it was created from and how it is refreshed. ivm writes
them on CREATE and ALTER, and reads them back on every statement; a state table's store
names the view it is part of in ``STATE_OF``. (Delta's change data feed, which every store
turns on, is :data:`~ivm.runtime.log.delta_log.CDF_PROPERTY`, a property of sources too.)
"""

VIEW = "ivm.view"
"""The view the store stores (a state table: its own name)."""
DEFINITION = "ivm.definition"
"""The view's SELECT, as its CREATE spelled it."""
DATABASE = "ivm.database"
"""The database in which the definition's names resolve."""
SETTINGS = "ivm.settings"
"""The session settings pinned at CREATE, as JSON (:mod:`ivm.runtime.catalog.definition`)."""
COLUMNS = "ivm.columns"
"""The view's column names as Spark spells them."""
STATE_OF = "ivm.stateOf"
"""Of a state table: the view it is part of."""
FRESHNESS = "ivm.freshness"
"""The most seconds ``ivm run`` lets the view lag behind its sources."""
SUSPENDED = "ivm.suspended"
"""``true`` where ``ivm run`` leaves the view alone."""
POLICY = "ivm.refreshPolicy"
"""The view's refresh policy (:class:`~ivm.runtime.decision.terms.Policy`; ``AUTO`` where it
is not set)."""
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
"""Delta's: how long VACUUM keeps the files a commit removed; the view's ``RETENTION``."""
LOG_RETENTION = "delta.logRetentionDuration"
"""Delta's: how long the log keeps its commits; the view's ``RETENTION`` too."""

LAYOUT = "ivm.storeLayout"
"""How the store takes a change: ``merge`` (absent: a MERGE folds each change into the stored
rows) or ``log`` (each change is appended, reads fold it in; :mod:`ivm.codegen.store`)."""
MERGED_LAYOUT, LOGGED_LAYOUT = "merge", "log"


def is_logged(properties: dict[str, str]) -> bool:
    """Whether the store with ``properties`` takes its changes as appends (``log`` layout)."""
    return properties.get(LAYOUT) == LOGGED_LAYOUT


def layout_description(logged: bool) -> str:
    """A store's layout as ``DESCRIBE`` and ``EXPLAIN CREATE`` name it.

    >>> layout_description(True)
    'log: each refresh appends its change, reads fold it in'
    """
    if logged:
        return f"{LOGGED_LAYOUT}: each refresh appends its change, reads fold it in"
    return f"{MERGED_LAYOUT}: each refresh merges its change into the stored rows"


STORE = "ivm.store"
"""The property of the view's catalog view (not of its store) that names its store."""
