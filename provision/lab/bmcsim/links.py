"""Complete mode: give every dangling link of a pruned capture a minimal resource of the right type.

The type comes from where the link sits: the collection it is a member of, the schema its last
path segment or its property names (checked against DMTF's schema list), or the owner's name plus
`Metrics`. OEM links are left alone (no public schema says what they are). A BIOS attribute
registry that the tree names but lacks is written from the current attributes (names and types).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from provision.lab.bmcsim.fill import _ensure_in_collection
from provision.lab.bmcsim.metadata import dmtf_schemas
from provision.lab.bmcsim.tree import ROOT, Json, norm

COLLECTION_OF = {
    "SimpleStorage": "SimpleStorageCollection", "Memory": "MemoryCollection", "Storage": "StorageCollection",
    "Processors": "ProcessorCollection", "BootOptions": "BootOptionCollection", "Tasks": "TaskCollection",
    "SerialInterfaces": "SerialInterfaceCollection", "JsonSchemas": "JsonSchemaFileCollection",
    "Registries": "MessageRegistryFileCollection", "LogServices": "LogServiceCollection",
    "Entries": "LogEntryCollection", "Accounts": "ManagerAccountCollection", "Roles": "RoleCollection",
    "Certificates": "CertificateCollection", "VirtualMedia": "VirtualMediaCollection",
    "Sensors": "SensorCollection", "Drives": "DriveCollection", "Volumes": "VolumeCollection",
    "Controllers": "StorageControllerCollection", "NetworkProtocol": "ManagerNetworkProtocol",
    "Subscriptions": "EventDestinationCollection", "Sessions": "SessionCollection",
}


def fill_dangling(res: dict[str, Json]) -> list[str]:
    added: list[str] = []
    for _round in range(4):
        todo = {t: (p, o) for t, p, o in _dangling(res) if t not in res}
        if not todo:
            break
        for target, (prop, owner) in sorted(todo.items()):
            stub = _stub(res, target, prop, owner)
            if stub is not None:
                res[target] = stub
                added.append(target)
                _ensure_in_collection(res, target)
    return added


def _dangling(res: dict[str, Json]) -> Iterator[tuple[str, str, str]]:
    for uri, obj in list(res.items()):
        for target, prop in _links(obj, ""):
            t = norm(target)
            oem_ok = "/Oem/" not in t or prop == "@Redfish.ActionInfo"
            if t.startswith(ROOT + "/") and oem_ok and "#" not in target and t not in res:
                yield t, prop, uri


def _links(node: Any, prop: str, in_oem: bool = False) -> Iterator[tuple[str, str]]:
    """(target, property) of every link; inside Oem objects only ActionInfo links (a DMTF type)."""
    if isinstance(node, dict):
        if set(node) == {"@odata.id"} and isinstance(node["@odata.id"], str):
            if not in_oem:
                yield node["@odata.id"], prop
            return
        for key, val in node.items():
            if key == "@Redfish.ActionInfo" and isinstance(val, str):
                yield val, key
            else:
                yield from _links(val, key, in_oem or key == "Oem")
    elif isinstance(node, list):
        for val in node:
            yield from _links(val, prop, in_oem)


def _schema_for(res: dict[str, Json], target: str, prop: str, owner: str) -> str | None:
    known = dmtf_schemas()
    parent_uri, last = target.rsplit("/", 1)
    parent_type = str((res.get(parent_uri) or {}).get("@odata.type", ""))
    if "Collection." in parent_type:
        member = parent_type.lstrip("#").split(".")[0].removesuffix("Collection")
        return member if member in known else None
    if prop == "@Redfish.ActionInfo":
        return "ActionInfo"
    owner_type = str((res.get(owner) or {}).get("@odata.type", "")).lstrip("#").split(".")[0]
    for cand in (COLLECTION_OF.get(last), last, COLLECTION_OF.get(prop), prop,
                 last[:-1] + "Collection", prop[:-1] + "Collection", owner_type + prop):
        if cand and cand in known:
            return cand
    return None


def _stub(res: dict[str, Json], target: str, prop: str, owner: str) -> Json | None:
    schema = _schema_for(res, target, prop, owner)
    if schema is None:
        return None
    last = target.rsplit("/", 1)[1]
    if schema.endswith("Collection"):
        return {"@odata.id": target, "@odata.type": f"#{schema}.{schema}", "Name": f"{last} Collection",
                "Members": [], "Members@odata.count": 0}
    stub: Json = {"@odata.id": target, "@odata.type": f"#{schema}.v1_0_0.{schema}", "Id": last,
                  "Name": f"{schema} {last}"}
    if schema == "ActionInfo":
        stub["Parameters"] = _action_parameters(res.get(owner) or {}, target)
    if schema == "MessageRegistryFile":
        stub.update(Languages=["en"], Registry=f"{last}.1.0", Location=[{"Language": "en"}])
    return stub


def _action_parameters(owner: Json, info_uri: str) -> list[Json]:
    acts = owner.get("Actions") or {}
    for action in [*acts.values(), *(acts.get("Oem") or {}).values()]:
        if isinstance(action, dict) and action.get("@Redfish.ActionInfo") == info_uri:
            params = [{"Name": key.split("@")[0], "Required": True, "DataType": "String", "AllowableValues": vals}
                      for key, vals in action.items() if key.endswith("@Redfish.AllowableValues")]
            if params:
                return params
    if info_uri.endswith("ResetActionInfo"):
        from provision.lab.bmcsim.power import RESET_TYPES

        return [{"Name": "ResetType", "Required": True, "DataType": "String",
                 "AllowableValues": [t for t in RESET_TYPES if t != "ForceOn"]}]
    return []


def bios_registry(res: dict[str, Json]) -> list[str]:
    """Write the BIOS attribute registry a MessageRegistryFile points at but the capture lacks."""
    added: list[str] = []
    bios = next((o for o in res.values() if str(o.get("@odata.type", "")).startswith("#Bios.")
                 and isinstance(o.get("Attributes"), dict) and o.get("Attributes")), None)
    if bios is None:
        return added
    for obj in list(res.values()):
        if not str(obj.get("@odata.type", "")).startswith("#MessageRegistryFile."):
            continue
        if "BiosAttributeRegistry" not in str(obj.get("Registry", "")):
            continue
        for loc in obj.get("Location") or []:
            uri = norm(str(loc.get("Uri", "")))
            if uri and uri not in res:
                res[uri] = _registry(uri, str(obj.get("Registry")), bios["Attributes"])
                added.append(uri)
    return added


def _registry(uri: str, name: str, current: Json) -> Json:
    kinds = {bool: "Boolean", int: "Integer", str: "String"}
    attrs = [{"AttributeName": k, "Type": kinds.get(type(v), "String"), "ReadOnly": False,
              "DisplayName": k, "ResetRequired": True} for k, v in sorted(current.items())]
    return {"@odata.id": uri, "@odata.type": "#AttributeRegistry.v1_3_0.AttributeRegistry", "Id": name,
            "Name": "BIOS Attribute Registry", "Language": "en", "RegistryVersion": "1.0.0",
            "OwningEntity": "provision lab (inferred from the captured current values)",
            "RegistryEntries": {"Attributes": attrs}}
