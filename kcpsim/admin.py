"""The admin API under `/_kcpsim/`: the request log, faults, watch history and the topology.

It is the tests' and the newcomer's control panel, not part of the simulated APIs: it needs no
credentials and is never faulted or logged.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from aiohttp import web

from kcpsim import errors
from kcpsim.faults import FaultPlan

if TYPE_CHECKING:
    from kcpsim.sim import KcpSim


async def handle(sim: KcpSim, request: web.Request) -> web.StreamResponse:
    from kcpsim.server import json_response

    path = request.path[len("/_kcpsim/") :].strip("/")
    try:
        if path == "requests":
            if request.method == "DELETE":
                sim.requests.clear()
                return json_response({})
            return json_response([r.as_dict() for r in sim.requests.records()])
        if path == "faults":
            if request.method in ("PUT", "POST"):
                sim.faults.set_plan(FaultPlan.from_dict(json.loads(await request.read() or b"{}")))
            elif request.method == "DELETE":
                sim.faults.clear()
            return json_response(sim.faults.plan.as_dict())
        if path == "faults/cut-watches" and request.method == "POST":
            count = sim.server.cut_watches(abort=request.query.get("abort") in ("true", "1"))
            return json_response({"cut": count})
        if path == "faults/refuse" and request.method == "POST":
            seconds = float(request.query.get("seconds", "1"))
            # Answer first: the listening socket closes right after this response.
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(sim.refuse(seconds)))
            return json_response({"refusingSeconds": seconds})
        if path == "history" and request.method in ("PUT", "POST"):
            sim.world.store.set_history_size(int(request.query["size"]))
            return json_response({"historySize": int(request.query["size"])})
        if path == "topology":
            return json_response(sim.describe())
    except (ValueError, KeyError, TypeError) as exc:
        return json_response(errors.bad_request(f"bad admin request: {exc}").body(), status=400)
    return json_response(errors.resource_not_served().body(), status=404)
