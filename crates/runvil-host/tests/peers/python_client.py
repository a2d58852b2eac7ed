"""The Python SDK's Streamable HTTP client (pip `mcp`, pinned in tests/peers/requirements.txt)
driving `runvil serve --http`, for crates/runvil-host/tests/clients.rs.

Usage: python_client.py URL MODE NAMESPACE, where MODE is `legacy` (the 2025-11-25 session)
or `2026-07-28`. It lists the gateway's tools, lists NAMESPACE's, calls its `echo`, calls its
`progress` with a progress callback, then starts its `slow`, prints that it did, and cancels it
when a line arrives on stdin. Each step prints one JSON line on stdout.
"""

import json
import sys

import anyio
from mcp import Client


def say(**fields):
    print(json.dumps(fields), flush=True)


async def main(url, mode, namespace):
    async with Client(url, mode=mode) as client:
        say(protocolVersion=client.protocol_version)
        tools = await client.list_tools()
        say(tools=[tool.name for tool in tools.tools])
        listing = await client.call_tool("get_dynamic_tools", {"namespace": namespace})
        say(listing=json.loads(listing.content[0].text))

        def call(tool, arguments=None):
            return {"namespace": namespace, "toolName": tool, "arguments": arguments or {}}

        echo = await client.call_tool("call_dynamic_tool", call("echo", {"text": "from python"}))
        say(echo=echo.content[0].text, isError=echo.is_error)

        notices = []

        async def progress(done, total, message):
            notices.append([done, total, message])

        answer = await client.call_tool(
            "call_dynamic_tool", call("progress"), progress_callback=progress
        )
        say(progress=notices, answer=answer.content[0].text)

        async with anyio.create_task_group() as calls:

            async def slow():
                await client.call_tool("call_dynamic_tool", call("slow"))

            calls.start_soon(slow)
            say(slow="started")
            await anyio.to_thread.run_sync(sys.stdin.readline)
            calls.cancel_scope.cancel()
        say(slow="cancelled")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
