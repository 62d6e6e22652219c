"""Resources the dynamic behaviour needs and a capture may lack (sessions, tasks, SEL, media).

These are added to the shared seed in both modes: `--as-captured` keeps every captured resource
byte-for-byte and only adds the services the simulator itself implements.
"""

from __future__ import annotations

from provision.lab.bmcsim import accounts, certs
from provision.lab.bmcsim.tree import ROOT, Json, norm

SESSION_SERVICE = f"{ROOT}/SessionService"
SESSIONS = f"{SESSION_SERVICE}/Sessions"
TASK_SERVICE = f"{ROOT}/TaskService"
TASKS = f"{TASK_SERVICE}/Tasks"


def _collection(uri: str, type_name: str, name: str) -> Json:
    return {"@odata.id": uri, "@odata.type": f"#{type_name}.{type_name}", "Name": name,
            "Members": [], "Members@odata.count": 0}


def add_services(res: dict[str, Json]) -> list[str]:
    """Add SessionService and TaskService where missing; returns the URIs it added."""
    added: list[str] = []
    root = res[ROOT]
    if SESSION_SERVICE not in res:
        res[SESSION_SERVICE] = {
            "@odata.id": SESSION_SERVICE, "@odata.type": "#SessionService.v1_1_8.SessionService",
            "Id": "SessionService", "Name": "Session Service", "ServiceEnabled": True,
            "SessionTimeout": 1800, "Status": {"State": "Enabled", "Health": "OK"},
            "Sessions": {"@odata.id": SESSIONS},
        }
        added.append(SESSION_SERVICE)
    if SESSIONS not in res:
        res[SESSIONS] = _collection(SESSIONS, "SessionCollection", "Session Collection")
        added.append(SESSIONS)
    root.setdefault("SessionService", {"@odata.id": SESSION_SERVICE})
    root.setdefault("Links", {}).setdefault("Sessions", {"@odata.id": SESSIONS})
    if TASK_SERVICE not in res:
        res[TASK_SERVICE] = {
            "@odata.id": TASK_SERVICE, "@odata.type": "#TaskService.v1_2_0.TaskService",
            "Id": "TaskService", "Name": "Task Service", "ServiceEnabled": True,
            "Status": {"State": "Enabled", "Health": "OK"}, "Tasks": {"@odata.id": TASKS},
        }
        added.append(TASK_SERVICE)
    if TASKS not in res:
        res[TASKS] = _collection(TASKS, "TaskCollection", "Task Collection")
        added.append(TASKS)
    root.setdefault("Tasks", {"@odata.id": TASK_SERVICE})
    return added + _add_accounts(res)


def _add_accounts(res: dict[str, Json]) -> list[str]:
    """AccountService with its roles and accounts collection where the tree has none (a filled tree's is
    a stub from `links`, made after this): the simulator's accounts live in it."""
    if accounts.ACCOUNT_SERVICE in res:
        return []
    made = accounts.service_resources()
    fresh = [u for u in made if u not in res]
    res.update({u: made[u] for u in fresh})
    res[ROOT].setdefault("AccountService", {"@odata.id": accounts.ACCOUNT_SERVICE})
    return fresh


def sel_service(res: dict[str, Json]) -> str:
    """URI of the log service that plays the SEL: a captured one if any, else a new one."""
    services = [u for u, r in res.items() if str(r.get("@odata.type", "")).startswith("#LogService.")]
    for pick in (
        [u for u in services if u.rsplit("/", 1)[-1].lower() == "sel"],
        [u for u in services if "/Systems/" in u and res[u].get("LogEntryType") == "SEL"],
        [u for u in services if "/Systems/" in u],
        [u for u in services if "/Managers/" in u],
    ):
        for uri in sorted(pick):
            if isinstance(res[uri].get("Entries"), dict):
                _ensure_entries(res, res[uri]["Entries"]["@odata.id"])
                return uri
    return _new_sel(res)


def _ensure_entries(res: dict[str, Json], entries: str) -> None:
    if entries not in res:
        res[entries] = _collection(entries, "LogEntryCollection", "Log Service Entries")


def _new_sel(res: dict[str, Json]) -> str:
    system = first_member(res, f"{ROOT}/Systems")
    owner = system or first_member(res, f"{ROOT}/Managers") or ROOT
    services = f"{owner}/LogServices"
    uri = f"{services}/SEL"
    entries = f"{uri}/Entries"
    if services not in res:
        res[services] = _collection(services, "LogServiceCollection", "Log Services")
        if owner in res:
            res[owner]["LogServices"] = {"@odata.id": services}
    res[services]["Members"].append({"@odata.id": uri})
    res[services]["Members@odata.count"] = len(res[services]["Members"])
    res[uri] = {"@odata.id": uri, "@odata.type": "#LogService.v1_2_0.LogService", "Id": "SEL",
                "Name": "System Event Log", "LogEntryType": "SEL", "ServiceEnabled": True,
                "OverWritePolicy": "WrapsWhenFull", "Entries": {"@odata.id": entries},
                "Status": {"State": "Enabled", "Health": "OK"}}
    _ensure_entries(res, entries)
    return uri


def first_member(res: dict[str, Json], collection: str) -> str | None:
    coll = res.get(collection)
    for m in (coll or {}).get("Members", []):
        if isinstance(m, dict) and m.get("@odata.id"):
            return str(m["@odata.id"]).rstrip("/")
    return None


def add_virtual_media(res: dict[str, Json]) -> list[str]:
    """Give each linked-but-missing VirtualMedia collection a CD and a USB stick (complete mode)."""
    added: list[str] = []
    for owner in list(res):
        link = res[owner].get("VirtualMedia")
        if not isinstance(link, dict) or "@odata.id" not in link:
            continue
        coll = str(link["@odata.id"]).rstrip("/")
        if coll in res:
            continue
        res[coll] = _collection(coll, "VirtualMediaCollection", "Virtual Media Services")
        added.append(coll)
        for ident, types in (("CD1", ["CD", "DVD"]), ("USB1", ["USBStick"])):
            uri = f"{coll}/{ident}"
            res[uri] = _media(uri, ident, types)
            res[coll]["Members"].append({"@odata.id": uri})
            added.append(uri)
        res[coll]["Members@odata.count"] = 2
    return added


def _media(uri: str, ident: str, types: list[str]) -> Json:
    return {
        "@odata.id": uri, "@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia", "Id": ident,
        "Name": f"Virtual {ident}", "MediaTypes": types, "Image": None, "ImageName": None,
        "ConnectedVia": "NotConnected", "Inserted": False, "WriteProtected": True,
        "Actions": {
            "#VirtualMedia.InsertMedia": {"target": f"{uri}/Actions/VirtualMedia.InsertMedia"},
            "#VirtualMedia.EjectMedia": {"target": f"{uri}/Actions/VirtualMedia.EjectMedia"},
        },
    }


def accounts_collection(res: dict[str, Json], added: list[str]) -> tuple[str, bool]:
    """The Accounts collection the simulator's accounts join, and whether it is the simulator's own (made
    here, in `added`: its member `1` a placeholder each BMC overwrites) rather than a captured one (each
    BMC's account is added after the captured members)."""
    service = res.get(accounts.ACCOUNT_SERVICE) or {}
    coll = norm(str((service.get("Accounts") or {}).get("@odata.id", accounts.ACCOUNTS)))
    if coll not in res:
        res[coll] = _collection(coll, "ManagerAccountCollection", "Accounts")
    return coll, f"{coll}/1" in added


def add_certificates(res: dict[str, Json]) -> list[str]:
    """CertificateService for the first manager's HTTPS certificate where the tree has none (complete mode;
    before `links` stubs what the service root names)."""
    manager = first_member(res, f"{ROOT}/Managers")
    proto_uri = norm(str(((res.get(manager or "") or {}).get("NetworkProtocol") or {}).get("@odata.id", "")))
    proto = res.get(proto_uri)
    if proto is None or certs.CERT_SERVICE in res:
        return []
    https = proto.setdefault("HTTPS", {"ProtocolEnabled": True, "Port": 443})
    coll = norm(str((https.get("Certificates") or {}).get("@odata.id", f"{proto_uri}/HTTPS/Certificates")))
    https["Certificates"] = {"@odata.id": coll}
    made = certs.service_resources(coll)
    fresh = [u for u in made if u not in res]
    res.update({u: made[u] for u in fresh})
    res[ROOT].setdefault("CertificateService", {"@odata.id": certs.CERT_SERVICE})
    return fresh


def https_certificates(res: dict[str, Json]) -> str | None:
    """The HTTPS certificate collection the CertificateService's actions work on, if the tree has both."""
    if certs.CERT_SERVICE not in res:
        return None
    locations = res.get(certs.LOCATIONS) or {}
    for link in (locations.get("Links") or {}).get("Certificates") or []:
        entry = norm(str(link.get("@odata.id", "")))
        if "/NetworkProtocol/HTTPS/Certificates/" in entry and entry.rsplit("/", 1)[0] in res:
            return entry.rsplit("/", 1)[0]
    return None


_STUB_KEYS = {"@odata.id", "@odata.type", "Id", "Name"}


def manager_network(res: dict[str, Json]) -> list[str]:
    """Complete mode: the first manager's NetworkProtocol shows NTP, SSDP and IPMI, and its EthernetInterfaces
    (stubs from `links` where the capture had none) the name and DNS settings the simulator lets one write."""
    manager = first_member(res, f"{ROOT}/Managers")
    mgr = res.get(manager or "") or {}
    proto = res.get(norm(str((mgr.get("NetworkProtocol") or {}).get("@odata.id", ""))))
    if proto is not None:
        proto.setdefault("HostName", None)
        proto.setdefault("FQDN", None)
        proto.setdefault("NTP", {"ProtocolEnabled": False, "NTPServers": []})
        proto.setdefault("SSDP", {"ProtocolEnabled": True, "Port": 1900})
        proto.setdefault("IPMI", {"ProtocolEnabled": True, "Port": 623})
    coll = res.get(norm(str((mgr.get("EthernetInterfaces") or {}).get("@odata.id", "")))) or {}
    for link in coll.get("Members") or []:
        nic = res.get(norm(str(link.get("@odata.id", ""))))
        if nic is None or set(nic) - _STUB_KEYS:
            continue  # captured: kept as it is
        nic.update({"@odata.type": "#EthernetInterface.v1_6_0.EthernetInterface", "Description": "Manager NIC",
                    "Status": {"State": "Enabled", "Health": "OK"}, "InterfaceEnabled": True, "LinkStatus": "LinkUp",
                    "HostName": (proto or {}).get("HostName"), "FQDN": (proto or {}).get("FQDN"),
                    "NameServers": [], "StaticNameServers": []})
    return []
