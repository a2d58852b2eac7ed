"""A dual-era MCP server on the Python SDK (`mcp`, pinned in requirements.txt), for the tests
in `tests/python_sdk.rs`: it speaks 2026-07-28 and the session-based revisions on one
endpoint, as the SDK does by default.

It binds 127.0.0.1 on a port the system picks, prints `listening <port>` on stdout, and serves
Streamable HTTP at /mcp until it is killed. Its tools show the client what the server saw:
the request's headers, the `Mcp-Param-*` header of an `x-mcp-header` parameter, whether a
call the client dropped was cancelled here.
"""

import asyncio
import socket
import sys
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import InputRequiredResult
from pydantic import Field

server = MCPServer("python-sdk-peer")

# Calls to `slow` that began, and those the server saw cancelled.
started = 0
cancelled = 0


@server.tool()
def echo(text: str) -> str:
    """Echoes the text back."""
    return text


@server.tool()
def headers(ctx: Context) -> dict[str, str]:
    """The request's HTTP headers, as the server received them."""
    return dict(ctx.headers or {})


@server.tool()
def region(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    ctx: Context,
) -> dict[str, str]:
    """The region argument and the Mcp-Param-Region header that carried it."""
    seen = dict(ctx.headers or {})
    return {"argument": region, "header": seen.get("mcp-param-region", "")}


@server.tool()
def needs_input() -> InputRequiredResult:
    """Asks the client for input it cannot give."""
    return InputRequiredResult(request_state="awaiting-a-form")


@server.tool()
async def slow() -> str:
    """Waits until it is cancelled."""
    global started, cancelled
    started += 1
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        cancelled += 1
        raise
    return "finished"


@server.tool()
def slow_calls() -> dict[str, int]:
    """How many `slow` calls began, and how many the server saw cancelled."""
    return {"started": started, "cancelled": cancelled}


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
