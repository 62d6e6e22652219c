"""VirtualMedia InsertMedia / EjectMedia (and PATCH of Image/Inserted) where the tree has media."""

from __future__ import annotations

from provision.lab.bmcsim import events
from provision.lab.bmcsim.reply import Reply, error, no_content
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.tree import Json, Resources


def insert_action(node: str, res: Resources, sel: Sel, uri: str, body: Json) -> Reply:
    """The InsertMedia action, refused while the drive holds media: a client ejects first (iDRAC answers
    VRM0012, OpenBMC's bmcweb ResourceInUse). A PATCH of Image still swaps the image in place."""
    if (res.get(uri) or {}).get("Inserted"):
        sel.add(f"Virtual media insert refused: {uri.rsplit('/', 1)[-1]} already holds media", severity="Warning")
        return error(409, "ResourceInUse")
    return insert(node, res, sel, uri, body)


def insert(node: str, res: Resources, sel: Sel, uri: str, body: Json) -> Reply:
    image = body.get("Image")
    if not isinstance(image, str) or not image:
        return error(400, "ActionParameterMissing", "VirtualMedia.InsertMedia", "Image")
    media = res.mutable(uri)
    media.update(Image=image, ImageName=image.rstrip("/").rsplit("/", 1)[-1], Inserted=bool(body.get("Inserted", True)),
                 WriteProtected=bool(body.get("WriteProtected", True)), ConnectedVia="URI")
    sel.add(f"Virtual media inserted at {uri.rsplit('/', 1)[-1]}")
    events.record(node, "vmedia.insert", media=uri)
    return no_content()


def eject(node: str, res: Resources, sel: Sel, uri: str) -> Reply:
    media = res.mutable(uri)
    media.update(Image=None, ImageName=None, Inserted=False, ConnectedVia="NotConnected")
    sel.add(f"Virtual media ejected from {uri.rsplit('/', 1)[-1]}")
    events.record(node, "vmedia.eject", media=uri)
    return no_content()


def patch(node: str, res: Resources, sel: Sel, uri: str, body: Json) -> Reply:
    unknown = [k for k in body if k not in ("Image", "Inserted", "WriteProtected") and not k.startswith("@")]
    if unknown:
        return error(400, "PropertyNotWritable", unknown[0], related=[f"/{unknown[0]}"])
    if body.get("Image"):
        return insert(node, res, sel, uri, body)
    if body.get("Image", "") is None or body.get("Inserted") is False:
        return eject(node, res, sel, uri)
    return no_content()
