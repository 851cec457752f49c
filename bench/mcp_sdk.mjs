// SPDX-License-Identifier: Apache-2.0
// The MCP front through the official SDK (bench/mcp.py starts the daemon;
// docs/benchmarks.md, "MCP"). Prints one JSON object of figures, each
// next to its native RPC baseline of the same run, rounds alternating.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const require = createRequire(process.env.MCP_SDK_DIR + '/package.json')
const load = (p) => import(pathToFileURL(require.resolve(p)).href)
const { Client } = await load('@modelcontextprotocol/sdk/client/index.js')
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js')
const N = Number(process.env.BENCH_SAMPLES || 400)
const base = process.env.ALLOX_URL
const now = () => Number(process.hrtime.bigint()) / 1e6

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const summary = (xs) => ({ p50_ms: +pct(xs, 50).toFixed(3), p99_ms: +pct(xs, 99).toFixed(3), n: xs.length })

async function rpc(action, params) {
  const res = await fetch(`${base}/v1/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action, params }),
  })
  const body = await res.json()
  if (!body.ok) throw new Error(`${action}: ${JSON.stringify(body)}`)
  return body.result
}

const c = new Client({ name: 'bench', version: '1' })
await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
const ids = { agent_id: 'bench', session_id: 's' }
await rpc('session.create', ids)
await rpc('file.write', { ...ids, path: 'f.txt', data: 'x'.repeat(4096) })
const session = 'bench/s'

async function compare(n, viaMcp, viaRpc) {
  const mcp = [], native = []
  for (let i = 0; i < 10; i++) { await viaMcp(); await viaRpc() } // warm
  for (let i = 0; i < n; i++) {
    let t = now()
    await viaMcp()
    mcp.push(now() - t)
    t = now()
    await viaRpc()
    native.push(now() - t)
  }
  return { mcp: summary(mcp), native: summary(native),
           ratio_p50: +(pct(mcp, 50) / pct(native, 50)).toFixed(3),
           ratio_p99: +(pct(mcp, 99) / pct(native, 99)).toFixed(3) }
}

const out = {}
out.file_read_4k = await compare(N,
  async () => {
    const r = await c.callTool({ name: 'file_read', arguments: { session, path: 'f.txt' } })
    if (r.isError || r.structuredContent.data.length !== 4096) throw new Error('file_read')
  },
  async () => { await rpc('file.read', { ...ids, path: 'f.txt' }) })
const argv = ['/bin/sh', '-c', 'true']
const runTool = async () => {
  const r = await c.callTool({ name: 'command_run', arguments: { session, argv } })
  if (r.isError || r.structuredContent.exit_code !== 0) throw new Error('command_run')
}
const startAndWait = async () => {
  const row = await rpc('process.start', { ...ids, argv, timeout: 3600 })
  await rpc('process.wait', { ...ids, run_id: row.run_id })
  return row
}
const runs = Math.max(50, N / 4)
// Against the four native calls that give the same answer...
out.command_run_true = await compare(runs, runTool, async () => {
  const row = await startAndWait()
  await rpc('process.output', { ...ids, run_id: row.run_id })
  await rpc('process.output', { ...ids, run_id: row.run_id, stream: 'stderr' })
})
// ...and against the two that only start and wait (no output read).
out.command_run_true_vs_start_wait = await compare(runs, runTool, startAndWait)
await c.close()
console.log(JSON.stringify(out, null, 2))
