"""The demo tool API `make dev` serves under /demo-tools, behind the sample catalogue demo_catalog.yaml.

A few fictional orders and one workflow, so HTTP tools, context ids (contextParams) and previews can
be tried with no external service. Never deployed: only the dev server mounts it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from pydantic import BaseModel, Field

CATALOG = Path(__file__).with_name("demo_catalog.yaml")
MOUNT = "/demo-tools"

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {
        "accountId": "acct-1001",
        "status": "shipped",
        "items": [{"sku": "KB-87", "name": "Mechanical keyboard", "quantity": 1}],
        "carrier": "PostNL",
        "estimatedDelivery": "2026-11-26",
    },
    "A-1002": {
        "accountId": "acct-1001",
        "status": "processing",
        "items": [{"sku": "MS-12", "name": "Wireless mouse", "quantity": 2}],
        "carrier": None,
        "estimatedDelivery": "2026-11-30",
    },
    "B-2001": {
        "accountId": "acct-2002",
        "status": "delivered",
        "items": [{"sku": "HD-01", "name": "USB-C hub", "quantity": 1}],
        "carrier": "DHL",
        "estimatedDelivery": "2026-11-10",
    },
}
WORKFLOWS: dict[str, list[str]] = {"wf-onboarding": ["form submitted", "manager approval", "account created"]}


class Cancellation(BaseModel):
    account_id: str = Field(alias="accountId", min_length=1, max_length=100)


class DryRun(BaseModel):
    change: str = Field(min_length=1, max_length=500)


def demo_tools_app() -> FastAPI:
    app = FastAPI(title="Demo tool API", docs_url=None, redoc_url=None, openapi_url=None)
    cancelled: set[str] = set()  # this app's cancellations (the catalogue's approval tool)

    @app.get("/orders/{order_id}")
    def order(order_id: str, account_id: str = Query(alias="accountId")) -> dict[str, Any]:
        found = ORDERS.get(order_id)
        if found is None or found["accountId"] != account_id:
            raise HTTPException(404, f"No order {order_id} in account {account_id}")
        return {"orderId": order_id, **found} | ({"status": "cancelled"} if order_id in cancelled else {})

    @app.post("/orders/{order_id}/cancel")
    def cancel(order_id: str, body: Cancellation) -> dict[str, Any]:
        found = ORDERS.get(order_id)
        if found is None or found["accountId"] != body.account_id:
            raise HTTPException(404, f"No order {order_id} in account {body.account_id}")
        if found["status"] != "processing":
            raise HTTPException(409, f"Order {order_id} has {found['status']}: it can no longer be cancelled")
        cancelled.add(order_id)
        return {"orderId": order_id, "status": "cancelled"}

    @app.get("/accounts/{account_id}/orders")
    def orders(account_id: str, status: str | None = None) -> dict[str, Any]:
        listed = [
            {"orderId": oid, "status": o["status"]}
            for oid, o in ORDERS.items()
            if o["accountId"] == account_id and status in (None, o["status"])
        ]
        return {"accountId": account_id, "orders": listed}

    @app.post("/workflows/{workflow_id}/dry-run")
    def dry_run(workflow_id: str, body: DryRun) -> dict[str, Any]:
        steps = WORKFLOWS.get(workflow_id)
        if steps is None:
            raise HTTPException(404, f"No workflow {workflow_id}")
        return {"workflowId": workflow_id, "steps": [*steps, body.change], "added": body.change}

    return app


def use_demo_catalog(port: str, environ: dict[str, str] | None = None) -> None:
    """Point the catalogue at the demo API on this port, unless TOOL_CATALOG_PATH names another."""
    environ = os.environ if environ is None else environ
    environ.setdefault("TOOL_CATALOG_PATH", str(CATALOG))
    environ["DEMO_TOOLS_URL"] = f"http://127.0.0.1:{port}{MOUNT}"
