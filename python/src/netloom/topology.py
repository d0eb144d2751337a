"""A topology built in code (or loaded from a file), written as netloom's native TOML and checked
by ``netloom check``."""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any, Dict, List, Optional, Union

from ._binary import PathLike, as_path, run_netloom

#: Keys TOML can write bare; anything else is quoted.
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Topology:
    """Hosts, routers and links, with netloom's own parameter names and units as strings.

    >>> t = Topology("lab")
    >>> t.defaults.update(bw="100Mbit", delay="1ms")
    >>> for name in ("h1", "h2"):
    ...     _ = t.add_host(name)
    >>> t.add_router("r1")
    'r1'
    >>> _ = t.add_link("h1", "r1"); _ = t.add_link("r1", "h2", delay="20ms", loss="1%")
    >>> print(t.to_toml().splitlines()[0])
    hosts = ["h1", "h2"]

    ``defaults`` is the ``[defaults]`` table, ``classes`` maps a class name to its parameters
    (``add_link(a, b, cls="access")`` or ``**{"class": "access"}`` uses one). Nested tables
    (``red``, ``a_to_b``, ``b_to_a``, a Gilbert-Elliott ``loss``) are dicts. Nothing is checked
    until :meth:`check` (or a run) hands the file to netloom, whose message is raised as
    :class:`netloom.TopologyError`; its line numbers refer to :meth:`to_toml`'s text.
    """

    def __init__(
        self,
        name: Optional[str] = None,
        *,
        routing: Optional[str] = None,
        defaults: Optional[Dict[str, Any]] = None,
        classes: Optional[Dict[str, Dict[str, Any]]] = None,
        addresses: Optional[str] = None,
    ) -> None:
        self.name = name
        self.routing = routing
        #: ``[topology] addresses``: the IPv4 network hosts are numbered from in a live run
        #: (``"10.0.0.0/8"``); None for netloom's 198.18.0.0/15.
        self.addresses = addresses
        self.defaults: Dict[str, Any] = dict(defaults or {})
        self.classes: Dict[str, Dict[str, Any]] = {k: dict(v) for k, v in (classes or {}).items()}
        self.hosts: List[Union[str, Dict[str, Any]]] = []
        self.routers: List[Union[str, Dict[str, Any]]] = []
        self.links: List[Dict[str, Any]] = []
        #: Top-level sections this class does not model (kept as loaded, written back as they were).
        self.extra: Dict[str, Any] = {}

    # Building.

    def add_host(self, name: str, *, group: Optional[str] = None, **attrs: Any) -> str:
        """Adds a host (``group`` labels it for traffic patterns; ``lat``/``lon`` or ``x``/``y``
        place it; ``ipv4="10.0.0.7"`` gives its own address, ``cpu=0.25`` limits its programs to
        a quarter of one CPU) and returns its name."""
        attrs = dict(attrs)
        if group is not None:
            attrs["group"] = group
        self.hosts.append({"name": name, **attrs} if attrs else name)
        return name

    def add_router(self, name: str, **position: Any) -> str:
        """Adds a router and returns its name."""
        self.routers.append({"name": name, **position} if position else name)
        return name

    def add_link(
        self, a: str, b: str, *, cls: Optional[str] = None, **params: Any
    ) -> Dict[str, Any]:
        """Adds a link between nodes ``a`` and ``b`` with the keys of a ``[[link]]`` table
        (``bw="10Mbit"``, ``delay="5ms"``, ``queue="64KB"``, ``aqm="codel"``, ...); ``cls`` names
        its class. Returns the link's table, which may still be changed."""
        link: Dict[str, Any] = {"a": a, "b": b}
        if cls is not None:
            link["class"] = cls
        link.update(params)
        self.links.append(link)
        return link

    def add_class(self, name: str, **params: Any) -> Dict[str, Any]:
        """Defines (or replaces) class ``name`` with these link parameters."""
        self.classes[name] = dict(params)
        return self.classes[name]

    # Mininet's names for the same calls. A Mininet switch forwards as a netloom router does.
    addHost = add_host
    addRouter = add_router
    addSwitch = add_router

    def addLink(self, a: str, b: str, **params: Any) -> Dict[str, Any]:  # noqa: N802
        """Mininet's spelling of :meth:`add_link`."""
        return self.add_link(a, b, **params)

    @property
    def host_names(self) -> List[str]:
        """The hosts' names, in order."""
        return [_node_name(h) for h in self.hosts]

    @property
    def router_names(self) -> List[str]:
        """The routers' names, in order."""
        return [_node_name(r) for r in self.routers]

    # Writing.

    def to_dict(self) -> Dict[str, Any]:
        """The native document (the shape of ``netloom convert -o x.json``)."""
        doc: Dict[str, Any] = {}
        section = {
            k: v
            for k, v in (
                ("name", self.name),
                ("routing", self.routing),
                ("addresses", self.addresses),
            )
            if v is not None
        }
        if section:
            doc["topology"] = section
        doc["hosts"] = list(self.hosts)
        if self.routers:
            doc["routers"] = list(self.routers)
        if self.defaults:
            doc["defaults"] = dict(self.defaults)
        if self.classes:
            doc["classes"] = {k: dict(v) for k, v in self.classes.items()}
        doc.update(self.extra)
        doc["link"] = [dict(link) for link in self.links]
        return doc

    def to_json(self) -> str:
        """The topology as a native JSON file's text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_toml(self) -> str:
        """The topology as a native TOML file's text (docs/topology.md)."""
        doc = self.to_dict()
        out: List[str] = []
        tables: List[str] = []
        for key, value in doc.items():
            if key == "link":
                continue
            if isinstance(value, dict):
                tables.append(key)
            else:
                out.append(f"{_key(key)} = {_value(value)}")
        for key in tables:
            value = doc[key]
            if key == "classes":
                for cls, params in value.items():
                    out += ["", f"[classes.{_key(cls)}]"] + _lines(params)
            else:
                out += ["", f"[{_key(key)}]"] + _lines(value)
        for link in doc["link"]:
            out += ["", "[[link]]"] + _lines(link)
        return "\n".join(out) + "\n"

    def save(self, path: PathLike) -> str:
        """Writes the topology to ``path`` (``.toml`` or ``.json`` by its extension) and returns
        the path."""
        path = as_path(path)
        text = self.to_json() if path.endswith(".json") else self.to_toml()
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return path

    # Reading and checking.

    @classmethod
    def from_dict(cls, doc: Dict[str, Any]) -> "Topology":
        """A topology from a native document (as :meth:`to_dict` makes)."""
        doc = dict(doc)
        section = doc.pop("topology", {}) or {}
        topo = cls(
            section.get("name"),
            routing=section.get("routing"),
            addresses=section.get("addresses"),
        )
        topo.defaults = dict(doc.pop("defaults", {}) or {})
        topo.classes = {k: dict(v) for k, v in (doc.pop("classes", {}) or {}).items()}
        topo.hosts = list(doc.pop("hosts", []))
        topo.routers = list(doc.pop("routers", []))
        topo.links = [dict(link) for link in doc.pop("link", [])]
        topo.extra = doc
        return topo

    @classmethod
    def load(
        cls, path: PathLike, *, binary: Optional[PathLike] = None, **import_options: Any
    ) -> "Topology":
        """Loads any file netloom reads (native TOML or JSON, GraphML, GML, ModelNet, Inet; the
        import flags of ``netloom convert`` as keywords, ``hosts_per_router=1``): netloom
        converts it to native JSON, so a bad file raises netloom's own message."""
        from ._binary import options_to_flags

        path = as_path(path)
        with tempfile.TemporaryDirectory(prefix="netloom-py-") as tmp:
            out = os.path.join(tmp, "topology.json")
            run_netloom(
                ["convert", path, "-o", out, *options_to_flags(import_options)],
                binary=binary,
                topology_files=[path],
                timeout=120,
            )
            with open(out, encoding="utf-8") as text:
                return cls.from_dict(json.load(text))

    def check(self, *, binary: Optional[PathLike] = None) -> Dict[str, Any]:
        """Validates the topology with ``netloom check --json`` and returns its summary (hosts,
        links, diameter, ...: docs/json.md); raises :class:`netloom.TopologyError` with netloom's
        message, which names the line of :meth:`to_toml`'s text, otherwise."""
        with self.written() as path:
            done = run_netloom(
                ["check", path, "--json"],
                binary=binary,
                rename={path: self.file_name},
                timeout=120,
            )
        return dict(json.loads(done.stdout))

    @property
    def file_name(self) -> str:
        """The name the topology's file goes by in netloom's messages: ``NAME.toml``."""
        return f"{self.name or 'topology'}.toml"

    def written(self) -> "_Written":
        """A context manager that writes the topology to a temporary ``NAME.toml`` and yields its
        path, removed afterwards."""
        return _Written(self)

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}: {len(self.hosts)} hosts, {len(self.routers)} routers, "
            f"{len(self.links)} links)"
        )


class _Written:
    """A topology written to a temporary directory for as long as the ``with`` lasts."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self._dir: Optional["tempfile.TemporaryDirectory[str]"] = None

    def __enter__(self) -> str:
        self._dir = tempfile.TemporaryDirectory(prefix="netloom-py-")
        path = os.path.join(self._dir.name, self._topology.file_name)
        with open(path, "w", encoding="utf-8") as out:
            out.write(self._topology.to_toml())
        return path

    def __exit__(self, *exc: object) -> None:
        assert self._dir is not None
        self._dir.cleanup()


def _node_name(node: Union[str, Dict[str, Any]]) -> str:
    return node if isinstance(node, str) else str(node["name"])


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    """A TOML value: strings as basic strings (JSON's escapes are TOML's), tables inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(
        f"netloom: {value!r} ({type(value).__name__}) cannot be written to a topology file"
    )


def _lines(table: Dict[str, Any]) -> List[str]:
    return [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
