// SPDX-License-Identifier: Apache-2.0
// The MCP front driven by the official TypeScript SDK (version pinned in
// package-lock.json): `node mcp_test.mjs <case>` against the daemon at
// ALLOX_URL; prints "ok <case>" and exits 0 when every check held. Run by
// tests/integration/mcp_sdk_test.cpp.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv from 'ajv';
import assert from 'node:assert/strict';

const base = process.env.ALLOX_URL;
const alloxctl = process.env.ALLOXCTL;

async function connect(query = '') {
  const client = new Client({ name: 'allox-mcp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp${query}`)));
  return client;
}

/// Calls a tool that must succeed; its structured content.
async function ok(client, name, args, options) {
  const r = await client.callTool({ name, arguments: args }, undefined, options);
  assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r.structuredContent;
}

/// Calls a tool that must fail as a tool; its {error, code}.
async function fails(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r)}`);
  assert.equal(r.structuredContent, undefined);
  return JSON.parse(r.content[0].text);
}

async function rpc(action, params) {
  const res = await fetch(`${base}/v1/rpc`, {
    method: 'POST', body: JSON.stringify({ action, params }) });
  const body = await res.json();
  assert.ok(body.ok, `${action}: ${JSON.stringify(body)}`);
  return body.result;
}

async function poll(client, session, run_id, limit_s) {
  let cursor;
  let out = '';
  const until = Date.now() + limit_s * 1000;
  for (;;) {
    const r = await ok(client, 'command_output', { session, run_id, cursor });
    out += r.stdout;
    cursor = r.cursor;
    if (!['starting', 'running'].includes(r.state) && !r.truncated)
      return { ...r, stdout: out };
    assert.ok(Date.now() < until, `run ${run_id} still ${r.state}`);
    await new Promise(f => setTimeout(f, 500));
  }
}

const cases = {
  // Every tool listed with valid schemas and annotations, then an agent's
  // day: write, test, checkpoint, edit, diff, roll back, fork.
  async flow() {
    const c = await connect();
    assert.equal(c.getServerVersion().name, 'allox-os');
    const { tools } = await c.listTools();
    assert.equal(tools.length, 22);
    const ajv = new Ajv({ strict: false });
    for (const t of tools) {
      ajv.compile(t.inputSchema);
      ajv.compile(t.outputSchema);
      for (const h of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'])
        assert.equal(typeof t.annotations[h], 'boolean', `${t.name} ${h}`);
      assert.ok(t.name === 'session_list' || t.inputSchema.required.includes('session'), t.name);
    }
    const s = 'agent-1/s1';
    const made = await ok(c, 'session_create', { session: s });
    assert.equal(made.session, s);
    assert.equal(made.agent_id, 'agent-1');
    await ok(c, 'file_write', { session: s, path: 'src/add.sh',
                                content: 'add() { echo $(($1 + $2)); }\n' });
    await ok(c, 'file_write', { session: s, path: '/workspace/test.sh',
      content: '. ./src/add.sh\n[ "$(add 2 3)" = 5 ] && echo pass || { echo fail >&2; exit 1; }\n' });
    const green = await ok(c, 'command_run', { session: s, command: 'sh test.sh' });
    assert.equal(green.state, 'completed');
    assert.equal(green.exit_code, 0);
    assert.equal(green.stdout, 'pass\n');
    assert.equal(green.stderr, '');
    const cp = await ok(c, 'checkpoint_create', { session: s, checkpoint_id: 'green', message: 'tests pass' });
    assert.equal(cp.checkpoint_id, 'green');
    const found = await ok(c, 'file_search', { session: s, pattern: '$1 + $2', glob: '*.sh' });
    assert.deepEqual(found.matches.map(m => `${m.path}:${m.line}`), ['src/add.sh:1']);
    const edit = await ok(c, 'file_replace', { session: s, path: 'src/add.sh',
                                               old_string: '$1 + $2', new_string: '$1 - $2' });
    assert.equal(edit.replacements, 1);
    const red = await ok(c, 'command_run', { session: s, argv: ['sh', 'test.sh'] });
    assert.equal(red.exit_code, 1);
    assert.equal(red.stderr, 'fail\n');
    const diff = await ok(c, 'checkpoint_diff', { session: s, from: 'green' });
    assert.deepEqual(diff.changes.map(x => [x.path, x.change]), [['src/add.sh', 'modified']]);
    // The edit was the daemon's, for this MCP call: named by action and
    // origin (write provenance), not by a run's process.
    const who = await ok(c, 'checkpoint_diff', { session: s, from: 'green', writers: true });
    assert.deepEqual(who.changes[0].writers,
                     [{ kind: 'daemon', action: 'file.replace', origin: 'mcp', ops: ['write'] }]);
    assert.equal(who.changes[0].unattributed, null);
    const back = await ok(c, 'session_rollback', { session: s, checkpoint_id: 'green', confirm: true });
    assert.equal(back.checkpoint_id, 'green');
    const read = await ok(c, 'file_read', { session: s, path: 'src/add.sh' });
    assert.equal(read.data, 'add() { echo $(($1 + $2)); }\n');
    const fork = await ok(c, 'session_fork', { session: s, new_session: 's2' });
    assert.equal(fork.session, 'agent-1/s2');
    await ok(c, 'file_write', { session: 'agent-1/s2', path: 'only-in-fork.txt', content: 'x' });
    await fails(c, 'file_stat', { session: s, path: 'only-in-fork.txt' });
    const listed = await ok(c, 'session_list', {});
    assert.deepEqual(listed.sessions, ['agent-1/s1', 'agent-1/s2']);
    const cps = await ok(c, 'checkpoint_list', { session: s });
    assert.ok(cps.checkpoint_ids.includes('green'));
    // The daemon's own scratch directory of runs is listed as natively.
    const mine = (page) => page.entries.map(e => e.path).filter(p => !p.startsWith('.allox-tmp'));
    const top = await ok(c, 'file_list', { session: s });
    assert.deepEqual(mine(top), ['src', 'test.sh']);
    const deep = await ok(c, 'file_list', { session: s, depth: 2 });
    assert.deepEqual(mine(deep), ['src', 'src/add.sh', 'test.sh']);
    const st = await ok(c, 'file_stat', { session: s, path: 'src' });
    assert.equal(st.type, 'directory');
    await ok(c, 'file_move', { session: s, from: 'test.sh', to: 'src/test.sh' });
    const b64 = await ok(c, 'file_read', { session: s, path: 'src/test.sh', limit: 2, encoding: 'base64' });
    assert.equal(Buffer.from(b64.data, 'base64').toString(), '. ');
    await ok(c, 'file_remove', { session: s, path: 'src/test.sh' });
    // Interactive: stdin, then its end.
    const cat = await ok(c, 'command_start', { session: s, command: 'tr a-z A-Z' });
    assert.ok(['starting', 'running'].includes(cat.state));
    await ok(c, 'command_input', { session: s, run_id: cat.run_id, data: 'hello\n' });
    await ok(c, 'command_input', { session: s, run_id: cat.run_id, eof: true });
    const upper = await poll(c, s, cat.run_id, 20);
    assert.equal(upper.stdout, 'HELLO\n');
    assert.equal(upper.exit_code, 0);
    const tree = await ok(c, 'process_tree', { session: s, run_id: cat.run_id });
    assert.equal(tree.run_id, cat.run_id);
    const sleeper = await ok(c, 'command_start', { session: s, command: 'sleep 60' });
    const stopped = await ok(c, 'command_stop', { session: s, run_id: sleeper.run_id, confirm: true });
    assert.equal(stopped.state, 'stopped');
    await ok(c, 'session_delete', { session: 'agent-1/s2', confirm: true });
    // Every call was audited with origin mcp.
    const audit = await rpc('audit.list', { agent_id: 'agent-1', session_id: 's1', limit: 1000 });
    const calls = audit.events.filter(e => e.op === 'mcp.call');
    assert.ok(calls.length >= 20, `mcp.call records: ${calls.length}`);
    assert.ok(calls.every(e => e.origin === 'mcp' && e.tool));
    const edits = audit.events.filter(e => e.op === 'file.replace');
    assert.equal(edits[0].origin, 'mcp');
    await c.close();
  },

  // A 90 s command through start and poll, a command longer than
  // command_run's wait (no error: its run id and the output so far), and
  // progress notifications while command_run waits.
  async long() {
    const c = await connect();
    const s = 'agent-1/long';
    await ok(c, 'session_create', { session: s });
    const started = Date.now();
    const long = await ok(c, 'command_start', { session: s, command: 'echo begin; sleep 90; echo end' });
    const early = await ok(c, 'command_run', { session: s, command: 'echo first; sleep 4; echo second', timeout_s: 1 });
    assert.equal(early.state, 'running');
    assert.equal(early.exit_code, null);
    assert.equal(early.stdout, 'first\n');
    const rest = await poll(c, s, early.run_id, 30);
    assert.equal(rest.stdout, 'first\nsecond\n');
    const progress = [];
    const r = await ok(c, 'command_run', { session: s, command: 'sleep 4; echo hi' },
                       { onprogress: p => progress.push(p), timeout: 60000 });
    assert.equal(r.stdout, 'hi\n');
    assert.ok(progress.length >= 2, `progress notifications: ${progress.length}`);
    assert.ok(progress.every(p => p.total > 0 && p.progress <= p.total));
    const done = await poll(c, s, long.run_id, 150);
    assert.equal(done.stdout, 'begin\nend\n');
    assert.equal(done.exit_code, 0);
    assert.ok(Date.now() - started >= 90000);
    await c.close();
  },

  // The stdio transport: alloxctl mcp serve, with a default session.
  async stdio() {
    await rpc('session.create', { agent_id: 'a', session_id: 's' });
    const c = new Client({ name: 'allox-mcp-stdio', version: '1.0.0' });
    await c.connect(new StdioClientTransport({
      command: alloxctl, args: ['--url', base, 'mcp', 'serve', '--agent', 'a', '--session', 's'],
      stderr: 'inherit' }));
    const { tools } = await c.listTools();
    assert.equal(tools.length, 22);
    assert.ok(!tools.find(t => t.name === 'file_read').inputSchema.required.includes('session'));
    await ok(c, 'file_write', { path: 'hello.txt', content: 'from stdio' });
    const r = await ok(c, 'command_run', { command: 'cat hello.txt' });
    assert.equal(r.stdout, 'from stdio');
    const other = await fails(c, 'file_read', { session: 'a/nope', path: 'hello.txt' });
    assert.equal(other.code, 'not_found');
    await c.close();
    // A default session on the HTTP endpoint too.
    const h = await connect('?agent=a&session=s');
    const read = await ok(h, 'file_read', { path: 'hello.txt' });
    assert.equal(read.data, 'from stdio');
    await h.close();
  },

  // Destructive tools need confirm; refused, they change nothing.
  async confirm() {
    const c = await connect();
    const s = 'agent-1/c';
    await ok(c, 'session_create', { session: s });
    await ok(c, 'file_write', { session: s, path: 'dir/f.txt', content: 'keep' });
    await ok(c, 'checkpoint_create', { session: s, checkpoint_id: 'c1' });
    await ok(c, 'file_write', { session: s, path: 'dir/f.txt', content: 'newer' });
    for (const [name, args] of [
      ['session_delete', { session: s }],
      ['session_delete', { session: s, confirm: false }],
      ['file_remove', { session: s, path: 'dir', recursive: true }],
      ['session_rollback', { session: s, checkpoint_id: 'c1' }]]) {
      const e = await fails(c, name, args);
      assert.equal(e.code, 'invalid_argument');
      assert.match(e.error, /confirm: true/);
    }
    const run = await ok(c, 'command_start', { session: s, command: 'sleep 30' });
    assert.match((await fails(c, 'command_stop', { session: s, run_id: run.run_id })).error, /confirm/);
    assert.equal((await ok(c, 'command_output', { session: s, run_id: run.run_id })).state, 'running');
    await ok(c, 'command_stop', { session: s, run_id: run.run_id, confirm: true });
    assert.equal((await ok(c, 'file_read', { session: s, path: 'dir/f.txt' })).data, 'newer');
    assert.deepEqual((await ok(c, 'session_list', { agent: 'agent-1' })).sessions, ['agent-1/c']);
    // A file needs no confirmation; a kept pre-rollback checkpoint makes
    // rollback undoable, so it needs none either.
    await rpc('policy.set', { agent_id: 'agent-1', session_id: 'c', keep_pre_rollback: true });
    const back = await ok(c, 'session_rollback', { session: s, checkpoint_id: 'c1' });
    assert.ok(back.pre_rollback_checkpoint_id);
    await ok(c, 'file_remove', { session: s, path: 'dir/f.txt' });
    await ok(c, 'file_remove', { session: s, path: 'dir', confirm: true });
    await ok(c, 'session_delete', { session: s, confirm: true });
    await c.close();
  },

  // Bad arguments are tool errors with the daemon's message and code, and
  // change nothing.
  async bad() {
    const c = await connect();
    const s = 'agent-1/b';
    await ok(c, 'session_create', { session: s });
    await ok(c, 'file_write', { session: s, path: 'f.txt', content: 'one one' });
    const cases = [
      ['file_read', { session: s, path: 'missing.txt' }, 'not_found'],
      ['file_read', { session: s, path: '../../etc/passwd' }, 'invalid_argument'],
      ['file_read', { session: s, path: 'f.txt', limit: -1 }, 'invalid_argument'],
      ['file_write', { session: s, path: 'g.txt' }, 'invalid_argument'],
      ['file_read', { session: 'agent-1/nope', path: 'f.txt' }, 'not_found'],
      ['file_read', { session: 'bad id!/x', path: 'f.txt' }, 'invalid_argument'],
      ['file_read', { path: 'f.txt' }, 'invalid_argument'],
      ['command_run', { session: s }, 'invalid_argument'],
      ['command_run', { session: s, command: 'true', timeout_s: -1 }, 'invalid_argument'],
      ['command_output', { session: s, run_id: 'nope' }, 'not_found'],
      ['command_output', { session: s, run_id: '0123456789abcdef0123456789abcdef' }, 'not_found'],
      ['file_replace', { session: s, path: 'f.txt', old_string: 'one', new_string: 'two' }, 'conflict'],
      ['file_replace', { session: s, path: 'f.txt', old_string: 'three', new_string: 'two' }, 'not_found'],
      ['file_search', { session: s, pattern: '(', regex: true }, 'invalid_argument'],
      ['file_list', { session: s, depth: 99 }, 'invalid_argument'],
      ['checkpoint_diff', { session: s, from: 'nope' }, 'not_found'],
      ['session_fork', { session: s, new_session: 'other/x' }, 'invalid_argument'],
      ['session_create', { session: s }, 'already_exists'],
    ];
    for (const [name, args, code] of cases) {
      const e = await fails(c, name, args);
      assert.equal(e.code, code, `${name} ${JSON.stringify(args)}: ${JSON.stringify(e)}`);
    }
    assert.equal((await ok(c, 'file_read', { session: s, path: 'f.txt' })).data, 'one one');
    await fails(c, 'file_stat', { session: s, path: 'g.txt' });
    const two = await ok(c, 'file_replace', { session: s, path: 'f.txt', old_string: 'one',
                                              new_string: 'two', expected_count: 2 });
    assert.equal(two.replacements, 2);
    await c.close();
  },

  // The transport's and JSON-RPC's errors, over plain HTTP.
  async protocol() {
    const post = (body, headers = {}) => fetch(`${base}/mcp`, {
      method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json',
                 accept: 'application/json, text/event-stream', ...headers } });
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize',
                   params: { protocolVersion: '2025-03-26', capabilities: {},
                             clientInfo: { name: 't', version: '1' } } };
    let r = await post(init);
    assert.equal(r.status, 200);
    let b = await r.json();
    assert.equal(b.result.protocolVersion, '2025-03-26');
    assert.equal(r.headers.get('mcp-session-id'), null);
    r = await post({ ...init, params: { ...init.params, protocolVersion: '2024-01-01' } });
    assert.equal((await r.json()).result.protocolVersion, '2025-11-25');
    for (const v of ['2025-06-18', '2025-11-25']) {
      r = await post({ ...init, params: { ...init.params, protocolVersion: v } });
      assert.equal((await r.json()).result.protocolVersion, v);
    }
    // A session id sent by the client is ignored.
    r = await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': 'whatever' });
    assert.deepEqual((await r.json()).result, {});
    r = await post('{not json');
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32700);
    r = await post({ id: 3, method: 'ping' });
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32600);
    r = await post({ jsonrpc: '2.0', id: 4, method: 'resources/list' });
    assert.equal((await r.json()).error.code, -32601);
    r = await post({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'no_such_tool' } });
    b = await r.json();
    assert.equal(b.error.code, -32602);
    assert.equal(b.id, 5);
    r = await post({ jsonrpc: '2.0', id: 6, method: 'tools/call',
                     params: { name: 'file_read', arguments: [1] } });
    assert.equal((await r.json()).error.code, -32602);
    r = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(r.status, 202);
    r = await post([{ jsonrpc: '2.0', id: 7, method: 'ping' },
                    { jsonrpc: '2.0', method: 'notifications/initialized' },
                    { jsonrpc: '2.0', id: 8, method: 'nope' }]);
    b = await r.json();
    assert.deepEqual(b.map(x => x.id), [7, 8]);
    assert.equal(b[1].error.code, -32601);
    r = await fetch(`${base}/mcp`);
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'POST');
    r = await fetch(`${base}/mcp`, { method: 'DELETE' });
    assert.equal(r.status, 405);
    r = await post({ jsonrpc: '2.0', id: 9, method: 'ping' }, { origin: 'http://evil.example' });
    assert.equal(r.status, 403);
    r = await post({ jsonrpc: '2.0', id: 10, method: 'ping' }, { origin: 'http://localhost:3000' });
    assert.equal(r.status, 200);
    r = await post({ jsonrpc: '2.0', id: 11, method: 'ping' }, { 'mcp-protocol-version': '1999-01-01' });
    assert.equal(r.status, 400);
    r = await post({ jsonrpc: '2.0', id: 12, method: 'ping' }, { 'content-type': 'text/plain' });
    assert.equal(r.status, 415);
  },
};

const name = process.argv[2];
if (!cases[name]) {
  console.error(`no such case: ${name}`);
  process.exit(2);
}
try {
  await cases[name]();
  console.log(`ok ${name}`);
  process.exit(0);
} catch (e) {
  console.error(e);
  process.exit(1);
}
