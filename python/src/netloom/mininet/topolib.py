"""``TreeTopo`` of ``mininet.topolib``: a tree of switches with hosts at its leaves."""

from __future__ import annotations

from typing import Any

from .topo import Topo


class TreeTopo(Topo):
    """A tree ``depth`` switches deep, each with ``fanout`` children; hosts h1.. at the leaves,
    switches s1.. numbered as they are made (parent before children)."""

    def build(self, depth: int = 1, fanout: int = 2, **_opts: Any) -> None:  # type: ignore[override]
        self.hostNum = 1
        self.switchNum = 1
        self._add_tree(depth, fanout)

    def _add_tree(self, depth: int, fanout: int) -> str:
        if depth > 0:
            node = self.addSwitch(f"s{self.switchNum}")
            self.switchNum += 1
            for _ in range(fanout):
                self.addLink(node, self._add_tree(depth - 1, fanout))
        else:
            node = self.addHost(f"h{self.hostNum}")
            self.hostNum += 1
        return node
