"""How many guest tokens one source address may mint: GUEST_MINTS_PER_HOUR per clock hour (UTC),
counted on the table so the limit holds across every function instance (docs/auth.md).

The address is the connection's as the platform reports it (API Gateway's `sourceIp`, which Mangum
puts in the ASGI scope), never a header the client could write. An IPv6 address counts by its /64,
the block one subscriber gets.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta

from fastapi import Request

from rag_orchestrator.conversations.window_counters import WindowCounter
from rag_orchestrator.errors import TooManyRequests

NAME = "guest-mints"
KEEP = timedelta(days=1)  # a window's counter outlives its hour by a day (TTL)


def source_key(request: Request) -> str:
    """The address a mint is counted against: an IPv4 address, or an IPv6 /64."""
    host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host or "unknown"
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


async def check_mint(
    counter: WindowCounter, request: Request, per_hour: int, now: datetime | None = None
) -> None:
    """Count this mint against its address's hour; TooManyRequests (429, Retry-After) beyond the limit."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    hour = moment.replace(minute=0, second=0, microsecond=0)
    ends = hour + timedelta(hours=1)
    counted = await counter.hit(
        NAME, source_key(request), hour.strftime("%Y-%m-%dT%H"), per_hour, int((ends + KEEP).timestamp())
    )
    if not counted:
        wait = max(1, int((ends - moment).total_seconds() + 0.999))
        raise TooManyRequests(
            f"Too many guest tokens from this address: at most {per_hour} an hour; try again in {wait} s",
            retry_after=wait,
        )
