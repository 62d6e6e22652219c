"""Where callers of several controllers on one campaign import the engine from (provision.campaign.engine)."""

from provision.campaign.engine import TAKEOVER_SETTLE_S, SharedEngine

__all__ = ["TAKEOVER_SETTLE_S", "SharedEngine"]
