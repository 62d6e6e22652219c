"""What the BMC stages share: the node's one BMC session, and their base class."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.redfish.ops.session import Node, open_node, options_for
from provision.redfish.ops.waiting import Clock


@contextmanager
def bmc(ctx: StageContext, opts: BringupOptions) -> Iterator[Node]:
    """The node's BMC session: logged in once per run and shared by its stages (the connector logs in
    again by itself when a BMC reset ends the session). Each use runs within the connector's deadline,
    so a BMC that stalls in a stage's reads fails it with one line naming the node and the URI; the
    waits an apply makes are bounded by their own timeouts (Connector.waiting)."""
    node = ctx.keep("bmc", lambda: open_node(options_for(ctx.host.name, ctx.host.bmc, insecure=opts.insecure)))
    with node.conn.deadline():
        yield node


class BmcStage:
    name = "bmc"

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts
        self.clock = Clock(poll_s=opts.poll_s)
