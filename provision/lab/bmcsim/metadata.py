"""The `$metadata` document and the OData service document, derived from the types a tree uses.

Only DMTF schemas are referenced (names listed in data/csdl-schemas.txt, from DMTF's CSDL
bundle); OEM namespaces have no public CSDL here and are left out.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from provision.lab.bmcsim.tree import ROOT, Json, SeedTree

_SCHEMAS = Path(__file__).resolve().parent.parent / "data" / "csdl-schemas.txt"
ALWAYS = {"ServiceRoot": {"ServiceRoot", "ServiceRoot.v1_0_0"},
          "RedfishExtensions": {"RedfishExtensions.v1_0_0"},
          "Resource": {"Resource", "Resource.v1_0_0"}}


@cache
def dmtf_schemas() -> frozenset[str]:
    return frozenset(line.strip() for line in _SCHEMAS.read_text().splitlines() if line.strip())


def namespaces(tree: SeedTree) -> dict[str, set[str]]:
    """schema file stem -> namespaces used, e.g. ComputerSystem -> {ComputerSystem, ComputerSystem.v1_14_0}."""
    known = dmtf_schemas()
    out: dict[str, set[str]] = {k: set(v) for k, v in ALWAYS.items()}
    for uri in tree.uris():
        _collect(tree.get(uri) or {}, known, out)
    return out


def _collect(node: object, known: frozenset[str], out: dict[str, set[str]]) -> None:
    if isinstance(node, dict):
        kind = node.get("@odata.type")
        if isinstance(kind, str) and kind.startswith("#"):
            ns = kind[1:].rsplit(".", 1)[0]
            stem = ns.split(".", 1)[0]
            if stem in known:
                out.setdefault(stem, set()).update({stem, ns})
        for val in node.values():
            _collect(val, known, out)
    elif isinstance(node, list):
        for val in node:
            _collect(val, known, out)


@cache
def metadata_xml(tree: SeedTree) -> bytes:
    refs = []
    for stem, spaces in sorted(namespaces(tree).items()):
        incl = "".join(f'\n    <edmx:Include Namespace="{ns}"/>' for ns in sorted(spaces))
        alias = ' Alias="Redfish"' if stem == "RedfishExtensions" else ""
        incl = incl.replace('Namespace="RedfishExtensions.v1_0_0"/>', f'Namespace="RedfishExtensions.v1_0_0"{alias}/>')
        refs.append(f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{stem}_v1.xml">{incl}\n'
                    "  </edmx:Reference>")
    body = "\n".join(refs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
        f"{body}\n"
        "  <edmx:DataServices>\n"
        '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
        '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_0_0.ServiceContainer"/>\n'
        "    </Schema>\n"
        "  </edmx:DataServices>\n"
        "</edmx:Edmx>\n"
    ).encode()


def service_document(tree: SeedTree) -> Json:
    root = tree.get(ROOT) or {}
    value = [{"name": "Service", "kind": "Singleton", "url": f"{ROOT}/"}]
    for key, link in sorted(root.items()):
        if isinstance(link, dict) and "@odata.id" in link:
            value.append({"name": key, "kind": "Singleton", "url": str(link["@odata.id"])})
    return {"@odata.context": f"{ROOT}/$metadata", "value": value}
