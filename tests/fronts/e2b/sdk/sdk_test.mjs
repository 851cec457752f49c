// SPDX-License-Identifier: Apache-2.0
// The real `e2b` package (pinned in package-lock.json) against the E2B
// front of a daemon on a loop store: `node sdk_test.mjs <case>` with
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY set, ALLOX_RPC naming the
// native RPC (to look at the same session from our side). Prints
// "ok <case>" and exits 0 when every assertion of the case held.
// Driven by tests/integration/e2b_sdk_test.cpp.
import assert from 'node:assert/strict'
import {
  ALL_TRAFFIC,
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  NotEnoughSpaceError,
  NotFoundError,
  Sandbox,
  SandboxError,
  SandboxNotFoundError,
} from 'e2b'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** A native RPC call (the daemon's own wire) on the same daemon. */
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

/** Expects `fn` to reject with an instance of `cls`. */
async function rejects(fn, cls, what) {
  try {
    await fn()
  } catch (e) {
    assert.ok(e instanceof cls, `${what}: ${e?.constructor?.name}: ${e?.message}`)
    return e
  }
  assert.fail(`${what}: did not fail`)
}

const cases = {
  /** create, getInfo, list (filters, pages), setTimeout, connect, kill. */
  async lifecycle() {
    const a = await Sandbox.create({ metadata: { team: 'red', run: '1' } })
    const b = await Sandbox.create({ metadata: { team: 'red', run: '2' } })
    const c = await Sandbox.create({ metadata: { team: 'blue' }, timeoutMs: 60_000 })
    const info = await a.getInfo()
    assert.equal(info.sandboxId, a.sandboxId)
    assert.equal(info.templateId, 'base')
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { team: 'red', run: '1' })
    assert.ok(info.endAt > info.startedAt)

    // The sandbox is a session of agent "e2b": the native wire sees it.
    const sessions = await rpc('session.list', { agent_id: 'e2b' })
    for (const s of [a, b, c]) assert.ok(JSON.stringify(sessions).includes(s.sandboxId))

    const red = await Sandbox.list({ query: { metadata: { team: 'red' } } }).nextItems()
    assert.deepEqual(red.map((s) => s.sandboxId).sort(), [a.sandboxId, b.sandboxId].sort())
    const paginator = Sandbox.list({ limit: 2 })
    const first = await paginator.nextItems()
    assert.equal(first.length, 2)
    assert.ok(paginator.hasNext)
    const second = await paginator.nextItems()
    assert.equal(second.length, 1)
    assert.ok(!paginator.hasNext)
    const seen = [...first, ...second].map((s) => s.sandboxId).sort()
    assert.deepEqual(seen, [a.sandboxId, b.sandboxId, c.sandboxId].sort())
    const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
    assert.equal(paused.length, 0)

    const before = (await c.getInfo()).endAt
    await c.setTimeout(600_000)
    assert.ok((await c.getInfo()).endAt > before)
    const again = await Sandbox.connect(a.sandboxId)
    assert.equal((await again.commands.run('echo again')).stdout, 'again\n')

    for (const s of [a, b, c]) assert.equal(await s.kill(), true)
    assert.equal(await Sandbox.kill(a.sandboxId), false)
    await rejects(() => Sandbox.getInfo(a.sandboxId), SandboxNotFoundError, 'info after kill')
    const gone = await rpc('session.list', { agent_id: 'e2b' })
    assert.ok(!JSON.stringify(gone).includes(a.sandboxId))

    // The metadata key allox.agent picks the sandbox's agent.
    const own = await Sandbox.create({ metadata: { 'allox.agent': 'team-green' } })
    const green = await rpc('session.list', { agent_id: 'team-green' })
    assert.ok(JSON.stringify(green).includes(own.sandboxId))
    await own.kill()
  },

  /** A sandbox past its timeout is killed; an extended one lives on. */
  async timeout() {
    const short = await Sandbox.create({ timeoutMs: 2_000 })
    const kept = await Sandbox.create({ timeoutMs: 2_000 })
    await kept.setTimeout(60_000)
    // A live process does not keep an expired sandbox alive.
    await short.commands.run('sleep 60', { background: true })
    await sleep(3_500)
    await rejects(() => short.getInfo(), SandboxNotFoundError, 'expired sandbox')
    const left = await rpc('session.list', { agent_id: 'e2b' })
    assert.ok(!JSON.stringify(left).includes(short.sandboxId))
    assert.equal((await kept.getInfo()).state, 'running')
    await kept.kill()
  },

  /** Every commands call. */
  async commands() {
    const sbx = await Sandbox.create({ envs: { FROM_CREATE: 'c1' } })
    const r = await sbx.commands.run('echo out; echo err >&2; pwd; echo $HOME; echo $FROM_CREATE-$FROM_RUN', {
      envs: { FROM_RUN: 'r1' },
    })
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'out\n/home/user\n/home/user\nc1-r1\n')
    assert.equal(r.stderr, 'err\n')

    const failed = await rejects(() => sbx.commands.run('echo partial; exit 7'), CommandExitError, 'exit 7')
    assert.equal(failed.exitCode, 7)
    assert.equal(failed.stdout, 'partial\n')

    await sbx.files.makeDir('/home/user/sub/dir')
    assert.equal((await sbx.commands.run('pwd', { cwd: '/home/user/sub/dir' })).stdout, '/home/user/sub/dir\n')
    assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
    // root is served as the sandbox user (docs/e2b.md), never uid 0.
    assert.notEqual((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n')

    // Streaming callbacks see output as it comes.
    const chunks = []
    await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.1; done', {
      onStdout: (d) => chunks.push(d),
    })
    assert.equal(chunks.join(''), 'line1\nline2\nline3\n')

    // Background, list, connect (the output from the start), kill.
    const bg = await sbx.commands.run('echo started; sleep 60', { background: true })
    assert.ok(bg.pid > 0)
    let listed = await sbx.commands.list()
    assert.ok(listed.some((p) => p.pid === bg.pid && p.args.includes('echo started; sleep 60')))
    await sleep(300)
    const attached = await sbx.commands.connect(bg.pid)
    for (let i = 0; i < 50 && !attached.stdout.includes('started'); i++) await sleep(50)
    assert.equal(attached.stdout, 'started\n')
    assert.equal(await sbx.commands.kill(bg.pid), true)
    await rejects(() => attached.wait(), CommandExitError, 'killed run')
    listed = await sbx.commands.list()
    assert.ok(!listed.some((p) => p.pid === bg.pid))
    assert.equal(await sbx.commands.kill(999_999_999), false)

    // stdin: sendStdin, then closeStdin ends `cat`.
    const cat = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(cat.pid, 'hello stdin\n')
    await sbx.commands.closeStdin(cat.pid)
    const catted = await cat.wait()
    assert.equal(catted.stdout, 'hello stdin\n')

    // A PTY: input, resize, output.
    const out = []
    const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => out.push(Buffer.from(d).toString()) })
    await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 })
    await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo pty-$TERM; exit\n'))
    await pty.wait().catch(() => {})
    const text = out.join('')
    assert.ok(text.includes('30 100'), text)
    assert.ok(text.includes('pty-xterm-256color'), text)

    // The runs are the session's: the native wire lists them.
    const runs = await rpc('process.list', { agent_id: 'e2b', session_id: sbx.sandboxId })
    assert.ok(runs.length >= 8)
    await sbx.kill()
  },

  /** Every files call, and what the session's checkpoints see of them. */
  async files() {
    const sbx = await Sandbox.create()
    const info = await sbx.files.write('/home/user/notes/a.txt', 'hello files')
    assert.equal(info.path, '/home/user/notes/a.txt')
    assert.equal(info.name, 'a.txt')
    assert.equal(await sbx.files.read('/home/user/notes/a.txt'), 'hello files')
    assert.equal(await sbx.files.read('notes/a.txt'), 'hello files')
    const bytes = new Uint8Array(256).map((_, i) => i)
    await sbx.files.write('/home/user/bin.dat', bytes)
    assert.deepEqual(await sbx.files.read('/home/user/bin.dat', { format: 'bytes' }), bytes)
    // Bigger than one read or write of the core (1 MiB).
    const big = 'x'.repeat(5 * 1024 * 1024 + 17)
    await sbx.files.write('/home/user/big.txt', big)
    assert.equal((await sbx.files.read('/home/user/big.txt')).length, big.length)
    assert.equal((await sbx.commands.run('wc -c < big.txt')).stdout.trim(), String(big.length))
    // Past what a request held in memory could take (/files streams): 96 MiB
    // as a form part and as a stream, into a directory made on the way, and
    // read back whole and as a stream.
    const { createHash } = await import('node:crypto')
    const { Readable } = await import('node:stream')
    const sha = (b) => createHash('sha256').update(b).digest('hex')
    const huge = Buffer.alloc(96 << 20, Buffer.from(Array.from({ length: 251 }, (_, i) => i)))
    const hugeSha = sha(huge)
    const asForm = await sbx.files.write('/home/user/huge/form.bin', huge)
    assert.equal(asForm.path, '/home/user/huge/form.bin')
    await sbx.files.write('/home/user/huge/stream.bin',
      Readable.toWeb(Readable.from([huge.subarray(0, 50 << 20), huge.subarray(50 << 20)])))
    const sums = (await sbx.commands.run('sha256sum huge/form.bin huge/stream.bin')).stdout
    assert.deepEqual(sums.trim().split('\n').map((l) => l.split(' ')[0]), [hugeSha, hugeSha])
    assert.equal(sha(Buffer.from(await sbx.files.read('/home/user/huge/form.bin', { format: 'bytes' }))), hugeSha)
    const streamed = createHash('sha256')
    for await (const chunk of await sbx.files.read('/home/user/huge/stream.bin', { format: 'stream' })) streamed.update(chunk)
    assert.equal(streamed.digest('hex'), hugeSha)
    await sbx.files.remove('/home/user/huge')
    // Several files at once.
    const many = await sbx.files.write([
      { path: '/home/user/m/1.txt', data: 'one' },
      { path: '/home/user/m/2.txt', data: 'two' },
    ])
    assert.equal(many.length, 2)
    assert.equal(await sbx.files.read('/home/user/m/2.txt'), 'two')
    // Each upload is audited once, as the E2B front's, naming its files.
    const uploads = (await rpc('audit.list', { agent_id: 'e2b', session_id: sbx.sandboxId, op: 'file.upload', limit: 1000 })).events
    const named = (f) => uploads.filter((e) => e.origin === 'e2b' && e.files.includes(f))
    assert.equal(named('huge/form.bin').length, 1, JSON.stringify(uploads))
    assert.equal(named('huge/stream.bin').length, 1)
    assert.deepEqual(named('m/2.txt')[0].files, ['m/1.txt', 'm/2.txt'])

    assert.equal(await sbx.files.exists('/home/user/notes/a.txt'), true)
    assert.equal(await sbx.files.exists('/home/user/nope'), false)
    const stat = await sbx.files.getInfo('/home/user/notes/a.txt')
    assert.equal(stat.type, 'file')
    assert.equal(stat.size, 11)
    await rejects(() => sbx.files.getInfo('/home/user/nope'), FileNotFoundError, 'getInfo missing')

    assert.equal(await sbx.files.makeDir('/home/user/d1/d2'), true)
    assert.equal(await sbx.files.makeDir('/home/user/d1/d2'), false)
    const top = await sbx.files.list('/home/user')
    assert.ok(top.some((e) => e.name === 'notes' && e.type === 'dir'))
    assert.ok(!top.some((e) => e.path === '/home/user/notes/a.txt'))
    const deep = await sbx.files.list('/home/user', { depth: 2 })
    assert.ok(deep.some((e) => e.path === '/home/user/notes/a.txt'))
    assert.ok(deep.some((e) => e.path === '/home/user/d1/d2'))

    const moved = await sbx.files.rename('/home/user/notes/a.txt', '/home/user/notes/b.txt')
    assert.equal(moved.path, '/home/user/notes/b.txt')
    assert.equal(await sbx.files.exists('/home/user/notes/a.txt'), false)
    await sbx.files.remove('/home/user/d1')
    assert.equal(await sbx.files.exists('/home/user/d1'), false)

    // A process sees what files.write wrote, and the other way round.
    await sbx.commands.run('echo from-run > made.txt')
    assert.equal(await sbx.files.read('/home/user/made.txt'), 'from-run\n')

    // The same tree checkpoints and rollback see (what E2B cannot do).
    const cp = await rpc('checkpoint.create', { agent_id: 'e2b', session_id: sbx.sandboxId, checkpoint_id: 'before' })
    assert.ok(cp)
    await sbx.files.write('/home/user/notes/b.txt', 'changed')
    await rpc('session.rollback', { agent_id: 'e2b', session_id: sbx.sandboxId, checkpoint_id: 'before' })
    assert.equal(await sbx.files.read('/home/user/notes/b.txt'), 'hello files')
    await sbx.kill()
  },

  /** Paths that leave the workspace are refused, and nothing is lost. */
  async escapes() {
    const sbx = await Sandbox.create()
    await sbx.files.write('/home/user/keep.txt', 'kept')
    await rejects(() => sbx.files.read('/etc/passwd'), InvalidArgumentError, 'outside home')
    await rejects(() => sbx.files.read('/home/user/../../etc/passwd'), SandboxError, 'dot-dot read')
    await rejects(() => sbx.files.write('/home/user/../x.txt', 'x'), SandboxError, 'dot-dot write')
    await rejects(() => sbx.files.list('/home/user/..'), SandboxError, 'dot-dot list')
    await sbx.commands.run('ln -s /etc /home/user/etc-link; ln -s /etc/passwd /home/user/pw')
    await rejects(() => sbx.files.read('/home/user/etc-link/passwd'), SandboxError, 'symlinked dir')
    await rejects(() => sbx.files.read('/home/user/pw'), SandboxError, 'symlinked file')
    await rejects(() => sbx.files.write('/home/user/etc-link/evil', 'x'), SandboxError, 'write through link')
    assert.equal(await sbx.files.read('/home/user/keep.txt'), 'kept')
    await sbx.kill()
  },

  /** Keys and tokens: run against a daemon with --token secret-token. */
  async auth() {
    const ok = await Sandbox.create({ apiKey: 'secret-token' })
    await rejects(() => Sandbox.create({ apiKey: 'e2b_wrong' }), AuthenticationError, 'wrong key')
    await rejects(() => Sandbox.list({ apiKey: 'e2b_wrong' }).nextItems(), AuthenticationError, 'wrong key list')
    // envd without the sandbox's access token, or with another's.
    const base = process.env.E2B_SANDBOX_URL
    const stat = (token) =>
      fetch(`${base}/filesystem.Filesystem/Stat`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'e2b-sandbox-id': ok.sandboxId,
          ...(token ? { 'x-access-token': token } : {}),
        },
        body: JSON.stringify({ path: '/home/user' }),
      })
    for (const token of [undefined, 'not-the-token']) {
      const res = await stat(token)
      assert.equal(res.status, 401)
      assert.equal((await res.json()).code, 'unauthenticated')
    }
    const unknown = await fetch(`${base}/filesystem.Filesystem/Stat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'e2b-sandbox-id': 'i-not-there' },
      body: '{"path":"/home/user"}',
    })
    assert.equal((await unknown.json()).code, 'unavailable')
    // A sandbox's port under the same rule: the daemon's token, or the
    // sandbox's access token as the traffic token.
    const portHost = ok.getHost(8000)
    assert.equal((await toPort(portHost)).status, 401)
    assert.equal((await toPort(portHost, { headers: { 'X-API-Key': 'e2b_wrong' } })).status, 401)
    assert.equal((await toPort(portHost, { headers: { 'X-API-Key': 'secret-token' } })).status, 502)
    assert.equal((await toPort(portHost, { headers: { 'E2b-Traffic-Access-Token': ok.envdAccessToken } })).status, 502)
    assert.equal((await ok.commands.run('echo fine')).stdout, 'fine\n')
    await ok.kill()
  },

  /** Malformed Connect requests get Connect errors and lose nothing. */
  async malformed() {
    const sbx = await Sandbox.create()
    await sbx.files.write('/home/user/keep.txt', 'kept')
    const base = process.env.E2B_SANDBOX_URL
    const token = sbx.envdAccessToken
    const post = (method, type, body) =>
      fetch(`${base}/${method}`, {
        method: 'POST',
        headers: { 'content-type': type, 'e2b-sandbox-id': sbx.sandboxId, 'x-access-token': token },
        body,
      })
    const frame = (json) => {
      const payload = Buffer.from(json)
      const head = Buffer.alloc(5)
      head.writeUInt32BE(payload.length, 1)
      return Buffer.concat([head, payload])
    }
    // A stream's end-stream frame carries the error.
    const endError = async (res) => {
      assert.equal(res.status, 200)
      const body = Buffer.from(await res.arrayBuffer())
      assert.equal(body[0], 0x02)
      return JSON.parse(body.subarray(5).toString()).error
    }
    const cut = frame('{"process":{"cmd":"/bin/true"}}').subarray(0, 12)
    assert.equal((await endError(await post('process.Process/Start', 'application/connect+json', cut))).code, 'invalid_argument')
    const two = Buffer.concat([frame('{}'), frame('{}')])
    assert.equal((await endError(await post('process.Process/Start', 'application/connect+json', two))).code, 'invalid_argument')
    const noCmd = frame('{"process":{}}')
    assert.equal((await endError(await post('process.Process/Start', 'application/connect+json', noCmd))).code, 'invalid_argument')
    const badJson = await post('filesystem.Filesystem/Stat', 'application/json', '{not json')
    assert.equal(badJson.status, 400)
    assert.equal((await badJson.json()).code, 'invalid_argument')
    const input = await post('process.Process/StreamInput', 'application/connect+json', frame('{}'))
    assert.equal((await input.json()).code, 'unimplemented')
    const unknownCall = await post('process.Process/Nope', 'application/json', '{}')
    assert.equal((await unknownCall.json()).code, 'unimplemented')
    // A stream cut by its client mid-way: the process goes on, the front too.
    const ac = new AbortController()
    const res = await fetch(`${base}/process.Process/Start`, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'content-type': 'application/connect+json', 'e2b-sandbox-id': sbx.sandboxId, 'x-access-token': token },
      body: frame(JSON.stringify({ process: { cmd: '/bin/bash', args: ['-c', 'sleep 1; echo late > late.txt'] } })),
    })
    const reader = res.body.getReader()
    await reader.read()
    ac.abort()
    await sleep(1_800)
    assert.equal(await sbx.files.read('/home/user/late.txt'), 'late\n')
    assert.equal(await sbx.files.read('/home/user/keep.txt'), 'kept')
    // Unknown sandboxes and routes, in E2B's shapes.
    await rejects(() => Sandbox.connect('i-not-there'), SandboxError, 'connect unknown')
    await rejects(() => sbx.commands.connect(12345), NotFoundError, 'connect unknown pid')
    await sbx.kill()
  },
}

/** Snapshots are live checkpoints; forks are independent sandboxes. */
cases.snapshots = async () => {
  const src = await Sandbox.create({ metadata: { team: 'snap' } })
  await src.files.write('/home/user/v.txt', 'one')
  const bg = await src.commands.run('sleep 60', { background: true })
  const snap = await src.createSnapshot({ name: 'first' })
  assert.ok(snap.snapshotId.startsWith(src.sandboxId + '_'))
  await src.files.write('/home/user/v.txt', 'two')
  // The source kept its process through the snapshot.
  assert.ok((await src.commands.list()).some((p) => p.pid === bg.pid))

  const fromSnap = await Sandbox.create(snap.snapshotId, { metadata: { from: 'snap' } })
  assert.equal(await fromSnap.files.read('/home/user/v.txt'), 'one')
  assert.deepEqual((await fromSnap.getInfo()).metadata, { from: 'snap' })
  const snaps = await Sandbox.listSnapshots({ sandboxId: src.sandboxId }).nextItems()
  assert.deepEqual(snaps.map((x) => x.snapshotId), [snap.snapshotId])
  assert.deepEqual(snaps[0].names, ['first'])

  const forks = await src.fork({ count: 3 })
  assert.equal(forks.length, 3)
  for (const [i, f] of forks.entries()) {
    assert.ok(f instanceof Sandbox, String(f))
    assert.equal(await f.files.read('/home/user/v.txt'), 'two')
    await f.files.write('/home/user/v.txt', `fork-${i}`)
  }
  for (const [i, f] of forks.entries())
    assert.equal(await f.files.read('/home/user/v.txt'), `fork-${i}`)
  assert.equal(await src.files.read('/home/user/v.txt'), 'two')
  await rejects(() => Sandbox.create('code-interpreter-v1'), SandboxError, 'unknown template')
  await rejects(() => Sandbox.fork('i-not-there', { count: 1 }), SandboxNotFoundError, 'fork unknown')
  for (const s of [src, fromSnap, ...forks]) await s.kill()
}

/** A file of the sandbox read through the native RPC (envd refuses a
 * paused sandbox). */
async function nativeRead(sbx, path) {
  const r = await rpc('file.read', { agent_id: 'e2b', session_id: sbx.sandboxId, path })
  return r.data
}

/** watchDir (recursive and not) and the polling watchers, on inotify. */
cases.watch = async () => {
  const sbx = await Sandbox.create()
  await sbx.files.makeDir('/home/user/w')
  const seen = []
  const handle = await sbx.files.watchDir('/home/user/w', (e) => seen.push(`${e.type} ${e.name}`),
                                           { recursive: true })
  const flat = []
  const top = await sbx.files.watchDir('/home/user/w', (e) => flat.push(`${e.type} ${e.name}`))
  await sbx.files.write('/home/user/w/a.txt', 'one')
  await sbx.files.makeDir('/home/user/w/sub/deeper')
  await sleep(300) // the new directories are watched from the next read on
  await sbx.files.write('/home/user/w/sub/deeper/b.txt', 'two')
  await sbx.commands.run('echo more >> /home/user/w/a.txt && chmod 600 /home/user/w/a.txt')
  await sbx.files.rename('/home/user/w/a.txt', '/home/user/w/c.txt')
  await sbx.files.remove('/home/user/w/c.txt')
  const want = ['create sub', 'create sub/deeper', 'create sub/deeper/b.txt', 'write a.txt',
                'chmod a.txt', 'rename a.txt', 'create c.txt', 'remove c.txt']
  for (let i = 0; i < 50 && !want.every((w) => seen.includes(w)); i++) await sleep(100)
  for (const w of want) assert.ok(seen.includes(w), `missing "${w}" in ${JSON.stringify(seen)}`)
  assert.ok(seen.some((e) => e.endsWith(' a.txt') && e.startsWith('create')))
  // Without recursive, only the directory's own entries.
  assert.ok(flat.includes('create sub'))
  assert.ok(!flat.some((e) => e.includes('deeper/')), JSON.stringify(flat))
  await handle.stop()
  await top.stop()
  // The polling watcher set, over the Connect wire as envd serves it.
  const call = async (method, body) => {
    const res = await fetch(`${process.env.E2B_SANDBOX_URL}/filesystem.Filesystem/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'e2b-sandbox-id': sbx.sandboxId,
                 'x-access-token': sbx.envdAccessToken },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: await res.json() }
  }
  const created = await call('CreateWatcher', { path: '/home/user/w', recursive: true })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const watcherId = created.body.watcherId
  await sbx.files.write('/home/user/w/sub/p.txt', 'polled')
  let events = []
  for (let i = 0; i < 30 && !events.some((e) => e.name === 'sub/p.txt'); i++) {
    await sleep(100)
    events = events.concat((await call('GetWatcherEvents', { watcherId })).body.events)
  }
  assert.ok(events.some((e) => e.name === 'sub/p.txt' && e.type === 'EVENT_TYPE_CREATE'),
            JSON.stringify(events))
  assert.equal((await call('RemoveWatcher', { watcherId })).status, 200)
  const gone = await call('GetWatcherEvents', { watcherId })
  assert.equal(gone.status, 404)
  assert.equal(gone.body.code, 'not_found')
  // Outside the home, and a file instead of a directory, are refused.
  await rejects(() => sbx.files.watchDir('/etc', () => {}), InvalidArgumentError, 'watch outside')
  await rejects(() => sbx.files.watchDir('/home/user/w/sub/p.txt', () => {}), SandboxError, 'watch a file')
  await sbx.kill()
}

cases.pause = async () => {
  const sbx = await Sandbox.create({ metadata: { team: 'pause' } })
  await sbx.files.write('/home/user/note.txt', 'acknowledged')
  const counter = await sbx.commands.run(
    'i=0; while true; do i=$((i+1)); echo $i > count.txt; sleep 0.1; done',
    { background: true })
  for (let i = 0; i < 50 && !(await sbx.files.exists('/home/user/count.txt')); i++) await sleep(100)
  assert.equal(await sbx.pause(), true)
  assert.equal(await Sandbox.pause(sbx.sandboxId), false) // paused already
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused')
  const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
  assert.deepEqual(paused.map((x) => x.sandboxId), [sbx.sandboxId])
  // Held: the counter stands still, and envd refuses the sandbox.
  const held = await nativeRead(sbx, 'count.txt')
  await sleep(500)
  assert.equal(await nativeRead(sbx, 'count.txt'), held)
  await rejects(() => sbx.commands.run('true'), SandboxError, 'run while paused')
  // The pause's checkpoint holds the acknowledged write.
  const cps = await rpc('checkpoint.list', { agent_id: 'e2b', session_id: sbx.sandboxId })
  const cp = cps.checkpoints.find((c) => c.metadata?.pause)
  assert.ok(cp, JSON.stringify(cps))
  // Connect resumes it: the same process counts on.
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running')
  assert.ok((await back.commands.list()).some((p) => p.pid === counter.pid))
  let moved = false
  for (let i = 0; i < 50 && !moved; i++) {
    moved = (await back.files.read('/home/user/count.txt')) !== held
    if (!moved) await sleep(100)
  }
  assert.ok(moved, 'the counter did not go on after the resume')
  assert.equal(await back.files.read('/home/user/note.txt'), 'acknowledged')

  // Without memory the processes stop; the files stay.
  assert.equal(await back.pause({ keepMemory: false }), true)
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.ok(!(await again.commands.list()).some((p) => p.pid === counter.pid))
  assert.equal(await again.files.read('/home/user/note.txt'), 'acknowledged')
  assert.equal((await again.commands.run('echo fresh')).stdout, 'fresh\n')

  // A sandbox whose lifecycle pauses it at its timeout is paused, not
  // killed, and stays until connected.
  const lazy = await Sandbox.create({ timeoutMs: 2_000, lifecycle: { onTimeout: 'pause' } })
  await lazy.files.write('/home/user/kept.txt', 'kept')
  let state = 'running'
  for (let i = 0; i < 100 && state !== 'paused'; i++) {
    await sleep(100)
    state = (await Sandbox.getInfo(lazy.sandboxId)).state
  }
  assert.equal(state, 'paused')
  const woke = await Sandbox.connect(lazy.sandboxId, { timeoutMs: 60_000 })
  assert.equal(await woke.files.read('/home/user/kept.txt'), 'kept')
  await rejects(() => Sandbox.pause('i-not-there'), SandboxNotFoundError, 'pause unknown')
  await sbx.kill()
  await lazy.kill()
}

cases.metrics = async () => {
  const sbx = await Sandbox.create()
  await sbx.files.write('/home/user/blob.bin', new Uint8Array(1 << 20).fill(7))
  await sbx.commands.run('timeout 2 sh -c "while :; do :; done" &', { background: true })
  await sbx.commands.run('sleep 30', { background: true })
  await sleep(1000)
  const [m] = await sbx.getMetrics()
  assert.ok(m.timestamp instanceof Date && !Number.isNaN(m.timestamp.getTime()))
  assert.ok(m.cpuCount >= 1)
  assert.ok(m.cpuUsedPct > 0 && m.cpuUsedPct <= 100, String(m.cpuUsedPct))
  assert.ok(m.memUsed > 0 && m.memTotal >= m.memUsed, JSON.stringify(m))
  assert.ok(m.diskUsed >= 1 << 20 && m.diskTotal > m.diskUsed, JSON.stringify(m))
  const [later] = await Sandbox.getMetrics(sbx.sandboxId)
  assert.ok(later.timestamp >= m.timestamp)
  await rejects(() => Sandbox.getMetrics('i-not-there'), SandboxNotFoundError, 'metrics unknown')
  await sbx.kill()
}

cases.network = async () => {
  const status = (sbx) => rpc('network.status', { agent_id: 'e2b', session_id: sbx.sandboxId })
  // Only example.com: everything else denied.
  const only = await Sandbox.create({
    network: { denyOut: [ALL_TRAFFIC], allowOut: ['example.com', '*.example.org'] },
  })
  let st = await status(only)
  assert.equal(st.mode, 'proxy')
  assert.deepEqual(st.egress, { allow: ['example.com:*', '*.example.org:*'], deny: [] })
  // A proxy sandbox runs; its processes see the broker as their proxy.
  assert.equal((await only.commands.run('echo $HTTPS_PROXY')).stdout, 'http://127.0.0.1:3128\n')
  // Replaced whole: everything but 10.0.0.0/8, applied while a process lives.
  const bg = await only.commands.run('sleep 30', { background: true })
  await only.updateNetwork({ denyOut: ['10.0.0.0/8'] })
  st = await status(only)
  assert.deepEqual(st.egress, { allow: ['*:*'], deny: ['10.0.0.0/8:*'] })
  // A change of mode waits for the processes to end.
  await rejects(() => only.updateNetwork({}), SandboxError, 'mode change with a live process')
  await bg.kill()
  await only.updateNetwork({})
  assert.equal((await status(only)).mode, 'inherit')
  const bad = await rejects(() => only.updateNetwork({ allowOut: ['bad host!'] }), SandboxError, 'bad entry')
  assert.match(bad.message, /^400: network entry 'bad host!'/)
  await rejects(() => Sandbox.updateNetwork('i-not-there', {}), SandboxNotFoundError, 'unknown')
  // No internet: isolated, loopback only.
  const cut = await Sandbox.create({ allowInternetAccess: false })
  assert.equal((await status(cut)).mode, 'isolated')
  assert.equal((await Sandbox.getInfo(cut.sandboxId)).allowInternetAccess, false)
  assert.equal((await cut.commands.run("sed -n '3,$s/:.*//p' /proc/net/dev | tr -d ' '")).stdout, 'lo\n')
  await only.kill()
  await cut.kill()
}

cases.signed = async () => {
  const sbx = await Sandbox.create()
  await sbx.files.write('/home/user/shared.txt', 'for a browser')
  // A plain fetch with no E2B headers, as a browser would.
  const down = await sbx.downloadUrl('/home/user/shared.txt')
  assert.ok(new URL(down).searchParams.get('signature').startsWith('v1_'))
  let res = await fetch(down)
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'for a browser')
  res = await fetch(await sbx.downloadUrl('/home/user/shared.txt', { useSignatureExpiration: 60 }))
  assert.equal(await res.text(), 'for a browser')
  // Expired, tampered with, for another path, or unsigned: refused.
  res = await fetch(await sbx.downloadUrl('/home/user/shared.txt', { useSignatureExpiration: -5 }))
  assert.equal(res.status, 401)
  const tampered = new URL(down)
  tampered.searchParams.set('path', '/home/user/other.txt')
  assert.equal((await fetch(tampered)).status, 401)
  const unsigned = new URL(down)
  unsigned.searchParams.delete('signature')
  assert.equal((await fetch(unsigned)).status, 401)
  // An upload URL writes that path only.
  const up = await sbx.uploadUrl('/home/user/uploaded.txt')
  const form = new FormData()
  form.append('file', new Blob(['sent by URL']), 'uploaded.txt')
  res = await fetch(up, { method: 'POST', body: form })
  assert.equal(res.status, 200, await res.text())
  assert.equal(await sbx.files.read('/home/user/uploaded.txt'), 'sent by URL')
  // A download that declares a body is answered and its connection
  // closed: the body is never read as a next request (here, one that
  // would write the file through the upload URL).
  const net = await import('node:net')
  const root = new URL(up)
  const smuggled = `POST ${root.pathname}${root.search} HTTP/1.1\r\nHost: x\r\n` +
    'Content-Type: application/octet-stream\r\nContent-Length: 9\r\n\r\nsmuggled!'
  const raw = await new Promise((resolve, reject) => {
    const sock = net.connect(Number(root.port), root.hostname)
    let got = ''
    sock.on('data', (d) => (got += d))
    sock.on('end', () => resolve(got))
    sock.on('error', reject)
    sock.write(`GET /files?path=/home/user/uploaded.txt HTTP/1.1\r\nHost: x\r\n` +
      `E2b-Sandbox-Id: ${sbx.sandboxId}\r\nX-Access-Token: ${sbx.envdAccessToken}\r\n` +
      `Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`)
  })
  assert.equal(raw.split('HTTP/1.').length - 1, 1, raw)
  assert.match(raw, /^HTTP\/1.1 400/)
  assert.equal(await sbx.files.read('/home/user/uploaded.txt'), 'sent by URL')
  // A read signature does not write.
  res = await fetch(await sbx.downloadUrl('/home/user/uploaded.txt'), { method: 'POST', body: form })
  assert.equal(res.status, 401)
  await sbx.kill()
  assert.notEqual((await fetch(down)).status, 200)
}

cases.gzip = async () => {
  const sbx = await Sandbox.create()
  const text = 'compress me '.repeat(200_000) // 2.4 MB: read in several pieces
  await sbx.files.write('/home/user/z.txt', text, { gzip: true })
  assert.equal(await sbx.files.read('/home/user/z.txt'), text)
  assert.equal(await sbx.files.read('/home/user/z.txt', { gzip: true }), text)
  const small = await sbx.files.read('/home/user/z.txt', { gzip: true, format: 'bytes' })
  assert.equal(small.length, text.length)
  // On the wire: a gzip answer, and the raw bytes a client without gzip gets.
  const url = await sbx.downloadUrl('/home/user/z.txt')
  const zipped = await fetch(url, { headers: { 'Accept-Encoding': 'gzip' } })
  assert.equal(zipped.headers.get('content-encoding'), 'gzip')
  assert.equal(await zipped.text(), text) // fetch inflates it
  // A body that is not gzip, or an encoding we do not take: refused, and
  // the file stays as it was.
  const up = await sbx.uploadUrl('/home/user/z.txt')
  let res = await fetch(up, { method: 'POST', body: 'not gzip',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'gzip' } })
  assert.equal(res.status, 400)
  res = await fetch(up, { method: 'POST', body: 'x',
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Encoding': 'br' } })
  assert.equal(res.status, 415)
  assert.equal(await sbx.files.read('/home/user/z.txt'), text)
  await sbx.kill()
}

/** A POST /files declaring `length` bytes, of which it sends 1 MiB; the
 * answer's status and body. */
async function declaredUpload(sbx, length) {
  const http = await import('node:http')
  const url = new URL(process.env.E2B_SANDBOX_URL + '/files?path=/home/user/huge.bin')
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(length),
        'E2b-Sandbox-Id': sbx.sandboxId,
        'X-Access-Token': sbx.envdAccessToken,
      },
    }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.write(Buffer.alloc(1 << 20))
  })
}

cases.full = async () => {
  const sbx = await Sandbox.create()
  await sbx.files.write('/home/user/keep.txt', 'kept')
  const old = new Uint8Array(8 << 20).fill(1) // several chunks: temp file + rename
  await sbx.files.write('/home/user/big.bin', old)
  // 10 GiB declared on a small store: refused at once, nothing written.
  const huge = await declaredUpload(sbx, 10 * 2 ** 30)
  assert.equal(huge.status, 413, JSON.stringify(huge))
  assert.equal(await sbx.files.exists('/home/user/huge.bin'), false)
  // Fill the store until a write is refused as E2B refuses it.
  let full = null
  let n = 0
  for (; n < 100 && !full; n++) {
    try {
      await sbx.files.write(`/home/user/fill-${n}.bin`, new Uint8Array(16 << 20).fill(n))
    } catch (e) {
      full = e
    }
  }
  assert.ok(full instanceof NotEnoughSpaceError, String(full))
  // A replacement that does not fit leaves the old file whole.
  await rejects(() => sbx.files.write('/home/user/big.bin', new Uint8Array(32 << 20).fill(2)),
    NotEnoughSpaceError, 'replace on a full store')
  const back = await sbx.files.read('/home/user/big.bin', { format: 'bytes' })
  assert.equal(back.length, old.length)
  assert.ok(back.every((b) => b === 1))
  assert.equal(await sbx.files.read('/home/user/keep.txt'), 'kept')
  assert.ok(!(await sbx.files.list('/home/user')).some((e) => e.name.startsWith('.allox-upload-')))
  // Space freed: writes and checkpoints work again.
  // The write that failed left nothing behind.
  assert.equal(await sbx.files.exists(`/home/user/fill-${n - 1}.bin`), false)
  for (let i = 0; i < n - 1; i++) await sbx.files.remove(`/home/user/fill-${i}.bin`)
  await rpc('checkpoint.create', { agent_id: 'e2b', session_id: sbx.sandboxId })
  await sbx.files.write('/home/user/after.txt', 'room again')
  assert.equal(await sbx.files.read('/home/user/after.txt'), 'room again')
  await sbx.kill()
}

/** A request to `<port>-<id>.<domain>` (getHost), sent to the daemon's
 * listener: the status, the body and, for an upgrade, its socket. */
async function toPort(host, { path = '/', headers = {}, upgrade = false } = {}) {
  const http = await import('node:http')
  const listener = new URL(process.env.E2B_SANDBOX_URL)
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: listener.hostname, port: listener.port, path, agent: false,
      headers: { Host: host, ...headers,
        ...(upgrade ? { Connection: 'Upgrade', Upgrade: 'websocket' } : {}) },
    }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('upgrade', (res, socket, head) => resolve({ status: res.statusCode, socket, head }))
    req.on('error', reject)
    req.end()
  })
}

cases.ports = async () => {
  const sbx = await Sandbox.create()
  await sbx.files.write('/home/user/site/hello.txt', 'served from the sandbox')
  // A dev server, and an upgrade server that echoes what follows the 101.
  await sbx.files.write('/home/user/echo.py', [
    'import socket',
    's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    "s.bind(('127.0.0.1', 8001)); s.listen()",
    'while True:',
    '    c, _ = s.accept(); head = b""',
    '    while b"\\r\\n\\r\\n" not in head: head += c.recv(1024)',
    '    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n" + head)',
    '    while True:',
    '        d = c.recv(65536)',
    '        if not d: break',
    '        c.sendall(d)',
    '    c.close()',
  ].join('\n'))
  const web = await sbx.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory site', { background: true })
  const echo = await sbx.commands.run('python3 echo.py', { background: true })
  const host = sbx.getHost(8000)
  assert.equal(host, `8000-${sbx.sandboxId}.${host.split('.').slice(1).join('.')}`)
  let res
  for (let i = 0; i < 100; i++) {
    res = await toPort(host, { path: '/hello.txt' })
    if (res.status === 200) break
    await sleep(100)
  }
  assert.equal(res.status, 200, JSON.stringify(res))
  assert.equal(res.body, 'served from the sandbox')
  // Whatever the target: /v1/rpc of that Host is the sandbox's, not ours.
  assert.equal((await toPort(host, { path: '/v1/rpc' })).status, 404)
  // An upgrade: bytes both ways after the 101. The server sends back the
  // head it got first: the daemon's credentials were taken off it.
  let up
  for (let i = 0; i < 100; i++) {
    up = await toPort(sbx.getHost(8001), { upgrade: true,
      headers: { 'X-API-Key': 'e2b_daemon_key', 'E2b-Traffic-Access-Token': 'tok' } })
    if (up.status === 101) break
    await sleep(100)
  }
  assert.equal(up.status, 101)
  const readUntil = (pred) => new Promise((resolve) => {
    let got = up.head.toString()
    if (pred(got)) return resolve(got)
    const on = (d) => { got += d; if (pred(got)) { up.socket.off('data', on); resolve(got) } }
    up.socket.on('data', on)
  })
  const seen = await readUntil((t) => t.includes('\r\n\r\n'))
  assert.match(seen, /^GET \/ HTTP\/1.1\r\n/)
  assert.doesNotMatch(seen.toLowerCase(), /x-api-key|e2b-traffic-access-token/)
  up.head = Buffer.alloc(0)
  up.socket.write('ping-ping!')
  assert.equal(await readUntil((t) => t.length >= 10), 'ping-ping!')
  up.socket.destroy()
  // One request per tunnel: a second one pipelined behind the first never
  // reaches the sandbox, and the connection closes after the answer.
  const net = await import('node:net')
  const listener = new URL(process.env.E2B_SANDBOX_URL)
  const raw = await new Promise((resolve, reject) => {
    const sock = net.connect(Number(listener.port), listener.hostname)
    let got = ''
    sock.on('data', (d) => (got += d))
    sock.on('end', () => resolve(got))
    sock.on('error', reject)
    const one = `GET /hello.txt HTTP/1.1\r\nHost: ${host}\r\n\r\n`
    sock.write(one + one)
  })
  assert.equal(raw.split('HTTP/1.').length - 1, 1, raw)
  assert.match(raw, /served from the sandbox$/)
  // A port nothing listens on, an unknown sandbox: 502.
  let bad = await toPort(sbx.getHost(8009))
  assert.equal(bad.status, 502)
  assert.match(JSON.parse(bad.body).message, /nothing listens on port 8009/)
  bad = await toPort(`8000-i0123456789abcdef012.${host.split('.').slice(1).join('.')}`)
  assert.equal(bad.status, 502)
  // An isolated sandbox's port is reached in its own namespace.
  const cut = await Sandbox.create({ allowInternetAccess: false })
  await cut.files.write('/home/user/site/hello.txt', 'isolated')
  // Never another sandbox's port: the first one's server is in the
  // daemon's namespace, where this one's launcher is too.
  const idle = await cut.commands.run('sleep 30', { background: true })
  assert.equal((await toPort(cut.getHost(8000))).status, 502)
  await idle.kill()
  await cut.commands.run('python3 -m http.server 8000 --bind 127.0.0.1 --directory site', { background: true })
  for (let i = 0; i < 100; i++) {
    res = await toPort(cut.getHost(8000), { path: '/hello.txt' })
    if (res.status === 200) break
    await sleep(100)
  }
  assert.equal(res.body, 'isolated')
  await web.kill()
  await echo.kill()
  await sbx.kill()
  await cut.kill()
}

/** Before a restart of the daemon: sandboxes whose ids go to ALLOX_STATE. */
cases.before_restart = async () => {
  const kept = await Sandbox.create({ metadata: { keep: 'yes' }, timeoutMs: 120_000 })
  await kept.files.write('/home/user/kept.txt', 'acknowledged')
  const short = await Sandbox.create({ timeoutMs: 3_000 })
  // Processes outlive the daemon: one waits for a file written after the
  // restart, one ends while no daemon runs.
  const waiting = await kept.commands.run(
    'echo before; while [ ! -e go ]; do sleep 0.1; done; echo after; exit 7',
    { background: true })
  const quick = await kept.commands.run('sleep 1; echo gone; exit 5', { background: true })
  const { writeFileSync } = await import('node:fs')
  writeFileSync(process.env.ALLOX_STATE, JSON.stringify({
    kept: kept.sandboxId, endAt: (await kept.getInfo()).endAt, short: short.sandboxId,
    waiting: waiting.pid, quick: quick.pid,
  }))
}

/** After it: the same sandboxes, deadlines and files; expired ones gone. */
cases.after_restart = async () => {
  const { readFileSync } = await import('node:fs')
  const state = JSON.parse(readFileSync(process.env.ALLOX_STATE, 'utf8'))
  const info = await Sandbox.getInfo(state.kept)
  assert.deepEqual(info.metadata, { keep: 'yes' })
  assert.equal(info.endAt.getTime(), new Date(state.endAt).getTime())
  const kept = await Sandbox.connect(state.kept)
  assert.equal(await kept.files.read('/home/user/kept.txt'), 'acknowledged')
  assert.equal((await kept.commands.run('cat kept.txt')).stdout, 'acknowledged')
  // Connect to processes an earlier daemon started: the output from the
  // start, and the exit code, whether they ended after the restart or
  // before it.
  const waiting = await kept.commands.connect(state.waiting)
  await kept.files.write('/home/user/go', '')
  const late = await waiting.wait().catch((e) => e)
  assert.ok(late instanceof CommandExitError, String(late))
  assert.equal(late.exitCode, 7)
  assert.equal(late.stdout, 'before\nafter\n')
  const quick = await kept.commands.connect(state.quick)
  const early = await quick.wait().catch((e) => e)
  assert.ok(early instanceof CommandExitError, String(early))
  assert.equal(early.exitCode, 5)
  assert.equal(early.stdout, 'gone\n')
  for (let i = 0; i < 50; i++) {
    try {
      await Sandbox.getInfo(state.short)
    } catch (e) {
      assert.ok(e instanceof SandboxNotFoundError, String(e))
      await kept.kill()
      return
    }
    await sleep(200)
  }
  assert.fail('the expired sandbox outlived the restart')
}

const name = process.argv[2]
if (!cases[name]) {
  console.error(`usage: node sdk_test.mjs <${Object.keys(cases).join('|')}>`)
  process.exit(2)
}
try {
  await cases[name]()
  console.log(`ok ${name}`)
  process.exit(0)
} catch (e) {
  console.error(`FAILED ${name}:`, e)
  process.exit(1)
}
