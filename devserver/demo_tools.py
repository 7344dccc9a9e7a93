"""The demo tool API `make dev` serves under /demo-tools, behind the sample catalogue demo_catalog.yaml.

A few fictional orders and one workflow, so HTTP tools, pinned parameters (contextParams) and previews
can be tried with no external service. Never deployed: only the dev server mounts it.

It does what docs/tools.md asks of an API behind the service: every request must carry a caller
assertion (`X-Caller-Assertion`) that verifies against the service's key set, for this API's origin,
and it serves only the account its own directory (ACCOUNTS) gives the assertion's `sub` — whatever
account a request names, even one the model or the request's context chose.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import jwt
from fastapi import Depends, FastAPI, Header, HTTPException, Query
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
# This API's own users: whose account each caller is. The service tells it who the caller is; which
# account that caller may see is this API's to decide. `alice-<anything>` is alice too, so each test,
# or each person sharing a dev stack, can keep conversations of its own.
ACCOUNTS = {"alice": "acct-1001", "bob": "acct-2002"}


def account_of(caller: str) -> str | None:
    """The caller's own account in this API's directory (`alice-<anything>` is alice)."""
    return ACCOUNTS.get(caller.split("-", 1)[0])


class Cancellation(BaseModel):
    account_id: str = Field(alias="accountId", min_length=1, max_length=100)


class DryRun(BaseModel):
    change: str = Field(min_length=1, max_length=500)


class Assertions:
    """Verifies caller assertions against the service's key set, as any API behind it would."""

    def __init__(self, service_url: str, issuer: str, audience: str) -> None:
        self.keys = jwt.PyJWKClient(f"{service_url}/.well-known/jwks.json", lifespan=300)
        self.issuer = issuer
        self.audience = audience

    def caller(self, assertion: str | None) -> str:
        """The caller the assertion names; 401 when there is none or it does not verify."""
        try:
            return self.verified(assertion)
        except ValueError as exc:
            raise HTTPException(401, str(exc)) from None

    def verified(self, assertion: str | None) -> str:
        """The caller the assertion names; ValueError when there is none or it does not verify."""
        if not assertion:
            raise ValueError("X-Caller-Assertion is required")
        try:
            key = self.keys.get_signing_key_from_jwt(assertion)
            claims = jwt.decode(
                assertion,
                key.key,
                algorithms=["ES256"],
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "sub", "aud", "iss"]},
            )
        except jwt.PyJWTError as exc:
            raise ValueError(f"The caller assertion does not verify: {exc}") from None
        return str(claims["sub"])


def demo_tools_app(service_url: str, issuer: str) -> FastAPI:
    """The demo API; `service_url` is the dev server's (its key set), which is also this API's origin."""
    app = FastAPI(title="Demo tool API", docs_url=None, redoc_url=None, openapi_url=None)
    cancelled: set[str] = set()  # this app's cancellations (the catalogue's approval tool)
    assertions = Assertions(service_url, issuer, audience=service_url)

    def account(x_caller_assertion: Annotated[str | None, Header()] = None) -> str:
        """The caller's own account; 403 for a caller this API does not know."""
        caller = assertions.caller(x_caller_assertion)
        found = account_of(caller)
        if found is None:
            raise HTTPException(403, f"{caller} has no account here")
        return found

    def own(requested: str, mine: str) -> None:
        if requested != mine:
            raise HTTPException(403, f"Account {requested} is not the caller's")

    @app.get("/orders/{order_id}")
    def order(
        order_id: str, account_id: str = Query(alias="accountId"), mine: str = Depends(account)
    ) -> dict[str, Any]:
        own(account_id, mine)
        found = ORDERS.get(order_id)
        if found is None or found["accountId"] != account_id:
            raise HTTPException(404, f"No order {order_id} in account {account_id}")
        return {"orderId": order_id, **found} | ({"status": "cancelled"} if order_id in cancelled else {})

    @app.post("/orders/{order_id}/cancel")
    def cancel(order_id: str, body: Cancellation, mine: str = Depends(account)) -> dict[str, Any]:
        own(body.account_id, mine)
        found = ORDERS.get(order_id)
        if found is None or found["accountId"] != body.account_id:
            raise HTTPException(404, f"No order {order_id} in account {body.account_id}")
        if found["status"] != "processing":
            raise HTTPException(409, f"Order {order_id} has {found['status']}: it can no longer be cancelled")
        cancelled.add(order_id)
        return {"orderId": order_id, "status": "cancelled"}

    @app.get("/accounts/{account_id}/orders")
    def orders(account_id: str, status: str | None = None, mine: str = Depends(account)) -> dict[str, Any]:
        own(account_id, mine)
        listed = [
            {"orderId": oid, "status": o["status"]}
            for oid, o in ORDERS.items()
            if o["accountId"] == account_id and status in (None, o["status"])
        ]
        return {"accountId": account_id, "orders": listed}

    @app.post("/workflows/{workflow_id}/dry-run", dependencies=[Depends(account)])
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


def service_url(environ: dict[str, str] | None = None) -> str:
    """The dev server's own URL, from DEMO_TOOLS_URL (use_demo_catalog set it)."""
    demo = (os.environ if environ is None else environ).get("DEMO_TOOLS_URL", f"http://127.0.0.1:8000{MOUNT}")
    return demo.removesuffix(MOUNT)
