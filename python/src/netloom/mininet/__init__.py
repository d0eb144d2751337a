"""Mininet's Python API on netloom: ``from netloom.mininet.net import Mininet`` (and ``topo``,
``node``, ``link``, ``log``, ``util``, ``clean``, ``cli``, ``topolib``) as from ``mininet.*``;
``python -m netloom.mininet SCRIPT`` runs a script that imports ``mininet.*`` unchanged.
docs/mininet.md says what maps to what and what differs."""
