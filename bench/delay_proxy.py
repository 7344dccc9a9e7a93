"""`python -m bench.delay_proxy TARGET_PORT:DELAY_MS ...`: loopback TCP proxies that add network time.

One listener per target; it prints `LISTEN <port>` for each, in order, then serves until killed.
Each request waits DELAY_MS before it is passed on: the first bytes a client sends after the last
reply (or on a new connection) are held that long, the rest of the request follows them at once.
Replies pass unchanged. Runs as its own process, so its work is not counted in the measuring one.
"""

from __future__ import annotations

import asyncio
import sys


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: dict, delay: float
) -> None:
    try:
        while data := await reader.read(65536):
            if delay and state["idle"]:
                await asyncio.sleep(delay)
            state["idle"] = False
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _replies(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: dict) -> None:
    try:
        while data := await reader.read(65536):
            state["idle"] = True  # the next bytes from the client start a new request
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
        await asyncio.gather(_pipe(client_r, server_w, state, delay), _replies(server_r, client_w, state))

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def main(specs: list[str]) -> None:
    servers = []
    for spec in specs:
        target, _, delay_ms = spec.partition(":")
        server = await _serve(int(target), float(delay_ms or 0) / 1000)
        servers.append(server)
        print(f"LISTEN {server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
