"""Scan: the delta of a table is its change.

    Δ scan(R) = ΔR

The runtime binds ``ΔR`` to the net change of the source over the consumed version range:
Delta's change data feed, each row weighted (+1 insert / postimage, -1 delete / preimage), the
weights of identical rows summed and zeros dropped.

>>> from ivm.ir import Scan
>>> delta = derive_scan(Scan("shop.orders", "o", ("id",)), None)
>>> [t.read.value for t in delta.inputs]
['delta']
"""

from ivm.ir import Scan, Union
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.zset import Read


def derive_scan(node: Scan, differentiate: Differentiate) -> Union:
    return Union((node.reading(Read.DELTA),))


RULE = Rule(
    Scan, "scan", Kind.LINEAR, "Δ scan(R) = ΔR", "the source's change data feed", derive_scan
)
