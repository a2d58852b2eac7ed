"""A dual-era MCP server on the Python SDK (`mcp`, pinned in requirements.txt), for the tests
in `tests/python_sdk.rs`: it speaks 2026-07-28 and the session-based revisions on one
endpoint, as the SDK does by default.

It binds 127.0.0.1 on a port the system picks, prints `listening <port>` on stdout, and serves
Streamable HTTP at /mcp until it is killed. Its tools show the client what the server saw:
the request's headers, the `Mcp-Param-*` header of an `x-mcp-header` parameter, whether a
call the client dropped was cancelled here; and `change_tools` changes its tools and tells
of it, as the era spoken says (a `subscriptions/listen` stream at 2026-07-28, the session's
standalone stream before).

With `--legacy` it refuses every 2026-07-28 request with a plain 400, so a dual-era client
falls back to the `initialize` handshake, and it declares `tools.listChanged` there.
"""

import asyncio
import functools
import socket
import sys
from typing import Annotated

import uvicorn
from mcp.server.lowlevel.server import NotificationOptions
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


def added(text: str = "") -> str:
    """A tool added while the server runs."""
    return text or "added"


@server.tool()
async def change_tools(action: str, name: str, ctx: Context) -> str:
    """Changes the server's tools (`add` a tool, `remove` one, `describe` one anew) and
    tells the client, on a stream of its own (not this call's)."""
    if action == "add":
        server.add_tool(added, name=name)
    elif action == "remove":
        server.remove_tool(name)
    elif action == "describe":
        server.remove_tool(name)
        server.add_tool(added, name=name, description=f"{name}, described anew")
    # 2026-07-28: to every subscription.
    await ctx.notify_tools_changed()
    # Before: on the session's standalone stream, once this call is answered.
    session = ctx.session

    async def later() -> None:
        await asyncio.sleep(0.2)
        await session.send_tool_list_changed()

    asyncio.get_running_loop().create_task(later())
    return "changed"


def refuse_modern(app):
    """An ASGI app that answers every 2026-07-28 request with a plain 400."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"mcp-protocol-version") == b"2026-07-28":
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    legacy = "--legacy" in sys.argv[1:]
    if legacy:
        lowlevel = server._lowlevel_server
        lowlevel.create_initialization_options = functools.partial(
            lowlevel.create_initialization_options,
            notification_options=NotificationOptions(tools_changed=True),
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    config = uvicorn.Config(refuse_modern(app) if legacy else app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
