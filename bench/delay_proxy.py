"""`python -m bench.delay_proxy TARGET_PORT:DELAY_MS ...`: loopback TCP proxies that add network time.

It prints `LISTEN <port>` for its control listener, then for one listener per target, in order,
and serves until killed. While the delays are on, each request waits DELAY_MS before it is passed
on: the first bytes a client sends after the last reply (or on a new connection) are held that long,
the rest of the request follows them at once. Replies pass unchanged. A client of the control port
sends `on` or `off` and reads `ok`: the benchmark alternates turns with and without the delays
through the same connections. A process of its own, so its work is not counted in the measuring one.
"""

from __future__ import annotations

import asyncio
import sys

_delays_on = [True]


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: dict, delay: float | None
) -> None:
    """Copy one direction: requests (held `delay` at the start of each) or, with delay None, replies."""
    try:
        while data := await reader.read(65536):
            if delay is None:
                state["idle"] = True  # a reply came: the client's next bytes start a new request
            elif delay and state["idle"] and _delays_on[0]:
                await asyncio.sleep(delay)
            if delay is not None:
                state["idle"] = False
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _serve(target: int, delay: float) -> asyncio.Server:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_w.close()
            return
        state = {"idle": True}
        await asyncio.gather(_pipe(client_r, server_w, state, delay), _pipe(server_r, client_w, state, None))

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _control(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    _delays_on[0] = (await reader.read(16)).strip() == b"on"
    writer.write(b"ok")
    await writer.drain()
    writer.close()


async def main(specs: list[str]) -> None:
    servers = [await asyncio.start_server(_control, "127.0.0.1", 0)]
    for spec in specs:
        target, _, delay_ms = spec.partition(":")
        servers.append(await _serve(int(target), float(delay_ms or 0) / 1000))
    for server in servers:
        print(f"LISTEN {server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
