// The TypeScript SDK's client (`@modelcontextprotocol/client`, pinned in package-lock.json)
// driving `runvil serve --http`, for crates/runvil-host/tests/clients.rs.
//
// Usage: node client.mjs URL MODE NAMESPACE, where MODE is `legacy` (the SDK's default: the
// 2025-11-25 session) or `2026-07-28` (pinned to that revision). It lists the gateway's tools,
// lists NAMESPACE's, calls its `echo`, calls its `progress` with a progress handler, then
// starts its `slow`, prints that it did, and aborts it when a line arrives on stdin. Each step
// prints one JSON line on stdout.

import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode, namespace] = process.argv.slice(2);
const say = (fields) => process.stdout.write(`${JSON.stringify(fields)}\n`);
const call = (tool, args = {}) => ({
  name: 'call_dynamic_tool',
  arguments: { namespace, toolName: tool, arguments: args },
});

const options = mode === 'legacy' ? {} : { versionNegotiation: { mode: { pin: mode } } };
const client = new Client({ name: 'runvil-test', version: '0' }, options);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
say({ protocolVersion: client.getNegotiatedProtocolVersion() });

const tools = await client.listTools();
say({ tools: tools.tools.map((tool) => tool.name) });
const listing = await client.callTool({ name: 'get_dynamic_tools', arguments: { namespace } });
say({ listing: JSON.parse(listing.content[0].text) });
const echo = await client.callTool(call('echo', { text: 'from typescript' }));
say({ echo: echo.content[0].text, isError: echo.isError });

const notices = [];
const onprogress = (notice) => notices.push([notice.progress, notice.total, notice.message]);
const answer = await client.callTool(call('progress'), { onprogress });
say({ progress: notices, answer: answer.content[0].text });

const abort = new AbortController();
const slow = client.callTool(call('slow'), { signal: abort.signal }).then(
  () => 'answered',
  () => 'cancelled',
);
say({ slow: 'started' });
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));
lines.close();
process.stdin.destroy();
abort.abort();
say({ slow: await slow });
await client.close();
