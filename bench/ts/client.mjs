// The TypeScript SDK's client, as most MCP users meet it (the desktop clients and editors are
// built on it): `Client` over `StreamableHTTPClientTransport`, default settings. The benchmark
// (`bench/src/ts_sdk.rs`) starts it as `node client.mjs URL` and sends one command a line on
// stdin; each is measured here, in this process, so no hop to the benchmark counts:
//
//   {"latency": N, "arguments": {...}}
//     -> {"p50_us": .., "p99_us": .., "len": ..}  (N/10 untimed calls, then N timed)
//   {"throughput": TASKS, "window_ms": MS, "arguments": {...}}
//     -> {"calls_per_s": .., "errors": .., "cpu_us_per_call": ..}
//
// Every call checks the length of the text that comes back, as the benchmark's do. An answer
// line is {"error": "..."} when something failed.

import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const client = new Client({ name: "bench-ts-sdk", version: "0" });
await client.connect(new StreamableHTTPClientTransport(url));

async function call(args, expected) {
  const result = await client.callTool({ name: "echo", arguments: args });
  const text = result.content?.[0]?.text ?? "";
  if (text.length < expected) {
    throw new Error(`the answer has ${text.length} characters, expected ${expected}`);
  }
  return text.length;
}

function percentile(sorted, pct) {
  const rank = Math.max(1, Math.ceil((sorted.length * pct) / 100));
  return sorted[Math.min(rank, sorted.length) - 1];
}

async function latency(n, args, expected) {
  for (let i = 0; i < Math.floor(n / 10); i++) await call(args, expected);
  const samples = [];
  let len = 0;
  for (let i = 0; i < n; i++) {
    const started = process.hrtime.bigint();
    len = await call(args, expected);
    samples.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50_us: percentile(samples, 50), p99_us: percentile(samples, 99), len };
}

async function throughput(tasks, windowMs, args, expected) {
  await Promise.all(Array.from({ length: tasks }, () => call(args, expected)));
  let completed = 0;
  let errors = 0;
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(windowMs) * 1000000n;
  const loop = async () => {
    while (process.hrtime.bigint() < deadline) {
      try {
        await call(args, expected);
        completed++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: tasks }, loop));
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    calls_per_s: completed / elapsedS,
    errors,
    cpu_us_per_call: (cpu.user + cpu.system) / Math.max(1, completed),
  };
}

console.log(JSON.stringify({ ready: true }));
for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  const expected = command.expected ?? 0;
  try {
    const answer =
      command.latency !== undefined
        ? await latency(command.latency, command.arguments, expected)
        : await throughput(command.throughput, command.window_ms, command.arguments, expected);
    console.log(JSON.stringify(answer));
  } catch (error) {
    console.log(JSON.stringify({ error: String(error) }));
  }
}
await client.close();
