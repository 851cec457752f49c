// SPDX-License-Identifier: Apache-2.0
// The E2B front through the real e2b SDK (bench/e2b.py starts the daemon
// and sets the SDK's variables; docs/benchmarks.md, "E2B"). Prints one
// JSON object of figures, each next to its raw baseline of the same run.
import { createRequire } from 'node:module'
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync, rmSync } from 'node:fs'

const require = createRequire(process.env.E2B_SDK_DIR + '/package.json')
const { Sandbox } = require('e2b')
const N = Number(process.env.BENCH_SAMPLES || 30)
const now = () => Number(process.hrtime.bigint()) / 1e6

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const summary = (xs) => ({ p50_ms: +pct(xs, 50).toFixed(2), p99_ms: +pct(xs, 99).toFixed(2), n: xs.length })

async function rpc(action, params) {
  const res = await fetch(process.env.ALLOX_RPC, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action, params }),
  })
  const body = await res.json()
  if (!body.ok) throw new Error(`${action}: ${JSON.stringify(body)}`)
  return body.result
}

const out = {}

// 1. Sandbox.create + the first commands.run('true'), alternating with
// the bound: native process.start + process.wait of the argv the SDK
// sends for it (`bash -l -c true`: the login shell reads the sandbox's
// profile) in a session of the same daemon. The first sandbox, which also
// creates the agent and opens the client's connections, is reported apart.
{
  await rpc('session.create', { agent_id: 'bench', session_id: 'anchor' })
  const argv = ['/bin/bash', '-l', '-c', 'true']
  const nativeRun = async () => {
    const t = now()
    const row = await rpc('process.start', { agent_id: 'bench', session_id: 'anchor', argv, home: '/home/user' })
    await rpc('process.wait', { agent_id: 'bench', session_id: 'anchor', run_id: row.run_id })
    return now() - t
  }
  let t = now()
  const first = await Sandbox.create()
  await first.commands.run('true')
  const cold = now() - t
  await first.kill()
  const both = [], create = [], run = []
  for (let i = 0; i < Number(process.env.BENCH_CREATE_SAMPLES || 100); i++) {
    t = now()
    const s = await Sandbox.create()
    create.push(now() - t)
    await s.commands.run('true')
    both.push(now() - t)
    await s.kill()
    run.push(await nativeRun())
  }
  out.create_and_first_run = { ...summary(both), cold_first_ms: +cold.toFixed(2),
    create_alone: summary(create), native_run: summary(run),
    ratio_p99_to_run: +(pct(both, 99) / pct(run, 99)).toFixed(3) }
}

// 2. commands.run('true') against native process.start + process.wait of
// the same argv in a session of the same daemon, alternating.
{
  const sbx = await Sandbox.create()
  await rpc('session.create', { agent_id: 'bench', session_id: 'native' })
  const argv = ['/bin/bash', '-l', '-c', 'true']
  const sdk = [], native = []
  for (let i = 0; i < 3; i++) await sbx.commands.run('true') // warm
  for (let i = 0; i < N * 2; i++) {
    let t = now()
    await sbx.commands.run('true')
    sdk.push(now() - t)
    t = now()
    const row = await rpc('process.start', { agent_id: 'bench', session_id: 'native', argv, home: '/home/user' })
    await rpc('process.wait', { agent_id: 'bench', session_id: 'native', run_id: row.run_id })
    native.push(now() - t)
  }
  out.run_true = { sdk: summary(sdk), native: summary(native),
    ratio_p50: +(pct(sdk, 50) / pct(native, 50)).toFixed(3) }

  // 3. files.write / files.read of a big file against cp (+ fsync) into
  // the same store, and cp out of it.
  const mib = Number(process.env.BENCH_FILE_MIB || 100)
  const data = Buffer.alloc(mib << 20, 7)
  const src = `${process.env.BENCH_WORK}/src.bin`
  const dst = `${process.env.BENCH_STORE}/bench-copy.bin`
  writeFileSync(src, data)
  const w = [], r = [], cpw = [], cpr = []
  for (let i = 0; i < 5; i++) {
    let t = now()
    await sbx.files.write('/home/user/big.bin', data)
    w.push(now() - t)
    t = now()
    const back = await sbx.files.read('/home/user/big.bin', { format: 'bytes' })
    r.push(now() - t)
    if (back.length !== data.length) throw new Error('short read')
    t = now()
    execFileSync('dd', [`if=${src}`, `of=${dst}`, 'bs=1M', 'conv=fsync', 'status=none'])
    cpw.push(now() - t)
    t = now()
    execFileSync('dd', [`if=${dst}`, 'of=/dev/null', 'bs=1M', 'status=none'])
    cpr.push(now() - t)
  }
  rmSync(dst)
  // The same route from a client that is not the bound (curl: a form part
  // streamed from the file, the answer to /dev/null).
  const envd = process.env.E2B_SANDBOX_URL + '/files'
  const keys = ['-H', `E2b-Sandbox-Id: ${sbx.sandboxId}`, '-H', `X-Access-Token: ${sbx.envdAccessToken}`]
  const cw = [], cr = []
  for (let i = 0; i < 5; i++) {
    let t = now()
    execFileSync('curl', ['-sf', '-o', '/dev/null', '-F', `file=@${src};filename=/home/user/big.bin`, ...keys, envd])
    cw.push(now() - t)
    t = now()
    execFileSync('curl', ['-sf', '-o', '/dev/null', ...keys, `${envd}?path=/home/user/big.bin`])
    cr.push(now() - t)
  }
  // The bound the SDK's client sets: Node's fetch with the SDK's request
  // shapes (a FormData of one Blob; a GET read whole) against a server
  // that keeps nothing, in a process of its own.
  const sink = spawn(process.execPath, ['-e', `
    const big = Buffer.alloc(${mib} << 20, 7)
    const s = require('node:http').createServer((q, r) => {
      if (q.method === 'POST') { q.on('data', () => {}); q.on('end', () => r.end('[]')) }
      else { r.setHeader('content-length', big.length); r.end(big) }
    })
    s.listen(0, '127.0.0.1', () => console.log(s.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise((res) => sink.stdout.once('data', (d) => res(Number(String(d).trim()))))
  const fw = [], fr = []
  for (let i = 0; i < 5; i++) {
    let t = now()
    const form = new FormData()
    form.append('file', new Blob([data]), '/home/user/big.bin')
    await (await fetch(`http://127.0.0.1:${port}/files`, { method: 'POST', body: form })).text()
    fw.push(now() - t)
    t = now()
    const got = await (await fetch(`http://127.0.0.1:${port}/files`)).arrayBuffer()
    fr.push(now() - t)
    if (got.byteLength !== data.length) throw new Error('short read from the sink')
  }
  sink.kill()
  const mbps = (ms) => +(mib / (ms / 1000)).toFixed(1)
  const ratio = (base, x) => +(pct(base, 50) / pct(x, 50)).toFixed(3)
  out.files = {
    mib,
    write_mib_s: mbps(pct(w, 50)), cp_fsync_mib_s: mbps(pct(cpw, 50)),
    write_ratio: ratio(cpw, w),
    read_mib_s: mbps(pct(r, 50)), cp_read_mib_s: mbps(pct(cpr, 50)),
    read_ratio: ratio(cpr, r),
    client_bound_write_mib_s: mbps(pct(fw, 50)), write_ratio_to_client_bound: ratio(fw, w),
    client_bound_read_mib_s: mbps(pct(fr, 50)), read_ratio_to_client_bound: ratio(fr, r),
    curl_write_mib_s: mbps(pct(cw, 50)), curl_write_ratio: ratio(cpw, cw),
    curl_read_mib_s: mbps(pct(cr, 50)), curl_read_ratio: ratio(cpr, cr),
  }
  await sbx.kill()
}

// 4. fork({count: 10}) of a sandbox with a small tree, against 10
// sequential native session.fork of a session with the same tree,
// alternating rounds.
{
  const rounds = Number(process.env.BENCH_FORK_ROUNDS || 5)
  const src = await Sandbox.create()
  await rpc('session.create', { agent_id: 'bench', session_id: 'forksrc' })
  for (let i = 0; i < 20; i++) {
    const body = `file ${i}\n`.repeat(200)
    await src.files.write(`/home/user/src/f${i}.txt`, body)
    await rpc('file.mkdir', { agent_id: 'bench', session_id: 'forksrc', path: 'src', parents: true })
    await rpc('file.write', { agent_id: 'bench', session_id: 'forksrc', path: `src/f${i}.txt`, data: body })
  }
  const sdk = [], native = []
  for (let r = 0; r < rounds; r++) {
    let t = now()
    const forks = await src.fork({ count: 10 })
    sdk.push(now() - t)
    if (forks.length !== 10 || forks.some((f) => f instanceof Error)) throw new Error('fork failed')
    for (const f of forks) await f.kill()
    t = now()
    for (let i = 0; i < 10; i++)
      await rpc('session.fork', { agent_id: 'bench', session_id: 'forksrc', new_session_id: `f${r}-${i}` })
    native.push(now() - t)
    for (let i = 0; i < 10; i++)
      await rpc('session.delete', { agent_id: 'bench', session_id: `f${r}-${i}` })
  }
  out.fork_10 = { sdk: summary(sdk), native: summary(native),
    ratio_p50: +(pct(sdk, 50) / pct(native, 50)).toFixed(3) }
  await src.kill()
}
console.log(JSON.stringify(out, null, 2))
