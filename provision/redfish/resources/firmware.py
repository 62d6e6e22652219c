"""UpdateService and FirmwareInventory entries."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Resource, dig, link_ids, text_or_none, texts


class SoftwareInventory(Resource):
    """One FirmwareInventory entry."""

    version: str | None = None
    updateable: bool | None = None
    manufacturer: str | None = None
    software_id: str | None = None
    description: str | None = None
    related_item: list[Any] = Field(default_factory=list)

    @property
    def related(self) -> tuple[str, ...]:
        return link_ids(self.related_item)


class UpdateService(Resource):
    """How this BMC takes firmware."""

    multipart_http_push_uri: str | None = None
    multipart_apply_time_support: dict[str, Any] | None = Field(
        default=None, alias="MultipartHttpPushUri@Redfish.OperationApplyTimeSupport")
    """What `@Redfish.OperationApplyTime` a multipart push's UpdateParameters may carry (DSP0266 "Multipart
    HTTP push updates"; GH200 capture: Immediate only)."""
    http_push_uri: str | None = None
    actions: dict[str, Any] = Field(default_factory=dict)
    oem: dict[str, Any] = Field(default_factory=dict)

    @property
    def simple_update_target(self) -> str | None:
        return text_or_none(dig(self.actions, "#UpdateService.SimpleUpdate", "target"))

    @property
    def transfer_protocols(self) -> tuple[str, ...]:
        return texts(dig(self.actions, "#UpdateService.SimpleUpdate", "TransferProtocol@Redfish.AllowableValues"))

    def oem_action(self, name: str) -> str | None:
        """Target of an OEM action such as #SmcUpdateService.Install."""
        return text_or_none(dig(self.actions, "Oem", name, "target"))
