// E2B's own SDK (e2b, pinned in package.json), unchanged, against a real
// paddockd: E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY are what
// 'paddock e2b env' printed. MIA_KEY is another member's E2B key,
// VIC_KEY a viewer's; PADDOCK_URL and PADDOCK_TOKEN reach Paddock's own
// API (to share a box with the viewer). Run by testbed/e2e's TestE2BSDK.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError, NotFoundError, SandboxNotFoundError, InvalidArgumentError, FileNotFoundError, AuthenticationError } from 'e2b'

const made = []
after(async () => {
  for (const id of made) await Sandbox.kill(id).catch(() => {})
})

async function create(opts = {}) {
  const sbx = await Sandbox.create({ timeoutMs: 600_000, ...opts })
  made.push(sbx.sandboxId)
  return sbx
}

let sbx
test('create, info, list with filters', async () => {
  sbx = await create({ metadata: { purpose: 'e2e' }, envs: { GREETING: 'hello' } })
  assert.match(sbx.sandboxId, /^[a-z0-9-]+$/)
  const info = await sbx.getInfo()
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
  assert.deepEqual(info.metadata, { purpose: 'e2e' })
  assert.ok(info.endAt > new Date(), 'the timeout lies ahead')
  assert.ok(await sbx.isRunning())

  const found = await Sandbox.list({ query: { metadata: { purpose: 'e2e' } } }).nextItems()
  assert.deepEqual(found.map((s) => s.sandboxId), [sbx.sandboxId])
  const none = await Sandbox.list({ query: { metadata: { purpose: 'other' } } }).nextItems()
  assert.equal(none.length, 0)
  const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
  assert.ok(!paused.some((s) => s.sandboxId === sbx.sandboxId))
})

test('commands: output, exit codes, env, cwd, stdin, background, kill', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2; echo $GREETING $EXTRA; pwd; whoami', { envs: { EXTRA: 'there' } })
  assert.equal(r.exitCode, 0)
  assert.deepEqual(r.stdout.trim().split('\n'), ['out', 'hello there', '/home/user', 'paddock'])
  assert.equal(r.stderr, 'err\n')

  const root = await sbx.commands.run('whoami; pwd', { user: 'root', cwd: '/tmp' })
  assert.equal(root.stdout, 'root\n/tmp\n')

  await assert.rejects(sbx.commands.run('echo before; exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3 && e.stdout === 'before\n')

  // Streaming: each line reaches the callback as it comes.
  const lines = []
  await sbx.commands.run('for i in 1 2 3; do echo line$i; sleep 0.2; done', { onStdout: (d) => lines.push(d) })
  assert.equal(lines.join(''), 'line1\nline2\nline3\n')

  // Input, then its end.
  const cat = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(cat.pid, 'fed through stdin\n')
  await sbx.commands.closeStdin(cat.pid)
  const catDone = await cat.wait()
  assert.equal(catDone.stdout, 'fed through stdin\n')

  // A background command is listed, reached again by pid, and killed.
  const sleeper = await sbx.commands.run('echo started; sleep 600', { background: true })
  const listed = await sbx.commands.list()
  assert.ok(listed.some((p) => p.pid === sleeper.pid), `pid ${sleeper.pid} in ${JSON.stringify(listed)}`)
  const again = await sbx.commands.connect(sleeper.pid)
  assert.equal(again.pid, sleeper.pid)
  assert.equal(await sbx.commands.kill(sleeper.pid), true)
  await assert.rejects(sleeper.wait(), CommandExitError)
  assert.equal(await sbx.commands.kill(sleeper.pid), false, 'a process that ended is not found')
})

test('a terminal (pty): typed input runs in it, at its size, resized, reached again', async () => {
  let shown = ''
  const dec = new TextDecoder()
  const keys = (s) => new TextEncoder().encode(s)
  // Waits for what the terminal shows to match re: the bound is for a
  // failure's sake, not a measure.
  const shows = async (re) => {
    for (let i = 0; i < 600 && !re.test(shown); i++) await new Promise((r) => setTimeout(r, 50))
    assert.match(shown, re)
  }
  const term = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => { shown += dec.decode(d, { stream: true }) } })
  await sbx.pty.sendInput(term.pid, keys('tty; stty size; echo "[$TERM]"\n'))
  await shows(/\/dev\/pts\/\d+\r?\n30 100\r?\n\[xterm-256color\]/)

  await sbx.pty.resize(term.pid, { cols: 120, rows: 40 })
  await sbx.pty.sendInput(term.pid, keys('stty size\n'))
  await shows(/40 120/)

  // A second client of the same terminal sees what it shows next.
  let also = ''
  const again = await sbx.pty.connect(term.pid, { onData: (d) => { also += dec.decode(d, { stream: true }) } })
  await sbx.pty.sendInput(term.pid, keys('echo second-$((40+2))\n'))
  await shows(/second-42/)
  for (let i = 0; i < 600 && !/second-42/.test(also); i++) await new Promise((r) => setTimeout(r, 50))
  assert.match(also, /second-42/)

  await sbx.pty.sendInput(term.pid, keys('exit 5\n'))
  await assert.rejects(term.wait(), (e) => e instanceof CommandExitError && e.exitCode === 5)
  await again.wait().catch(() => {})
  await assert.rejects(sbx.pty.resize(term.pid, { cols: 80, rows: 24 }), NotFoundError, 'an ended terminal is not found')
})

test('files: text, binary, large, many, list, stat, rename, remove, watch', async () => {
  const info = await sbx.files.write('notes/hello.txt', 'hello from the SDK\n')
  assert.equal(info.path, '/home/user/notes/hello.txt')
  assert.equal(await sbx.files.read('/home/user/notes/hello.txt'), 'hello from the SDK\n')
  assert.equal((await sbx.commands.run('cat notes/hello.txt')).stdout, 'hello from the SDK\n')

  const bin = new Uint8Array(256).map((_, i) => i)
  await sbx.files.write('/home/user/bin.dat', bin)
  assert.deepEqual(await sbx.files.read('/home/user/bin.dat', { format: 'bytes' }), bin)

  const big = new Uint8Array(8 << 20).map((_, i) => (i * 31) & 255)
  await sbx.files.write('/home/user/big.dat', big)
  const back = await sbx.files.read('/home/user/big.dat', { format: 'bytes' })
  assert.equal(back.length, big.length)
  assert.ok(Buffer.from(back).equals(Buffer.from(big)))

  // Compressed on the way up, and read as a stream.
  await sbx.files.write('/home/user/zipped.txt', 'sent gzipped\n'.repeat(1000), { gzip: true })
  assert.equal(await sbx.files.read('/home/user/zipped.txt', { gzip: true }), 'sent gzipped\n'.repeat(1000))
  const chunks = []
  for await (const c of await sbx.files.read('/home/user/zipped.txt', { format: 'stream' })) chunks.push(Buffer.from(c))
  assert.equal(Buffer.concat(chunks).toString(), 'sent gzipped\n'.repeat(1000))

  const many = Array.from({ length: 20 }, (_, i) => ({ path: `/home/user/many/f${i}.txt`, data: `file ${i}` }))
  const written = await sbx.files.write(many)
  assert.equal(written.length, 20)
  const entries = await sbx.files.list('/home/user/many')
  assert.equal(entries.length, 20)
  assert.equal(entries.find((e) => e.name === 'f7.txt').size, 6)
  assert.equal(entries[0].type, 'file')
  const deep = await sbx.files.list('/home/user/notes', { depth: 2 })
  assert.deepEqual(deep.map((e) => e.name), ['hello.txt'])

  assert.equal(await sbx.files.exists('/home/user/many/f1.txt'), true)
  assert.equal(await sbx.files.exists('/home/user/nothing-here'), false)
  const st = await sbx.files.getInfo('/home/user/notes')
  assert.equal(st.type, 'dir')
  assert.equal(st.owner, 'paddock')

  assert.equal(await sbx.files.makeDir('/home/user/made/deep'), true)
  assert.equal(await sbx.files.makeDir('/home/user/made/deep'), false, 'made already')
  const moved = await sbx.files.rename('/home/user/notes/hello.txt', '/home/user/made/hello.txt')
  assert.equal(moved.path, '/home/user/made/hello.txt')
  await sbx.files.remove('/home/user/made')
  assert.equal(await sbx.files.exists('/home/user/made'), false)

  await assert.rejects(sbx.files.read('/home/user/nothing-here'), (e) => e instanceof FileNotFoundError || e instanceof NotFoundError)

  const events = []
  const watch = await sbx.files.watchDir('/home/user/many', (ev) => events.push(ev))
  await sbx.files.write('/home/user/many/new.txt', 'new')
  for (let i = 0; i < 100 && !events.some((e) => e.name === 'new.txt'); i++) await new Promise((r) => setTimeout(r, 100))
  await watch.stop()
  assert.ok(events.some((e) => e.name === 'new.txt' && (e.type === 'create' || e.type === 'write')), JSON.stringify(events))
})

test('timeout, pause and connect (files survive, processes do not)', async () => {
  await sbx.setTimeout(900_000)
  const info = await sbx.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() > 800_000)

  await sbx.files.write('/home/user/kept.txt', 'kept across a pause')
  assert.equal(await sbx.pause(), true)
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused')
  const listed = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
  assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId))

  const back = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 })
  assert.equal((await back.getInfo()).state, 'running')
  assert.equal(await back.files.read('/home/user/kept.txt'), 'kept across a pause')
  sbx = back
})

test('fork, snapshots, a sandbox from a snapshot, metrics', async () => {
  await sbx.files.write('/home/user/forked.txt', 'from the parent')
  const forks = await sbx.fork({ count: 2, timeoutMs: 600_000 })
  assert.equal(forks.length, 2)
  for (const f of forks) {
    assert.ok(!(f instanceof Error), String(f))
    made.push(f.sandboxId)
    assert.equal(await f.files.read('/home/user/forked.txt'), 'from the parent')
  }
  assert.notEqual(forks[0].sandboxId, forks[1].sandboxId)
  await forks[0].files.write('/home/user/forked.txt', 'changed in a fork')
  assert.equal(await sbx.files.read('/home/user/forked.txt'), 'from the parent')
  assert.equal(await forks[1].files.read('/home/user/forked.txt'), 'from the parent')

  const snap = await sbx.createSnapshot()
  assert.ok(snap.snapshotId.startsWith(sbx.sandboxId + '-'), snap.snapshotId)
  const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems()
  assert.ok(listed.some((s) => s.snapshotId === snap.snapshotId), JSON.stringify(listed))
  const fromSnap = await Sandbox.create(snap.snapshotId, { timeoutMs: 600_000 })
  made.push(fromSnap.sandboxId)
  assert.equal(await fromSnap.files.read('/home/user/forked.txt'), 'from the parent')
  assert.equal((await fromSnap.commands.run('pwd')).stdout, '/home/user\n')

  const metrics = await sbx.getMetrics()
  assert.ok(Array.isArray(metrics))
  for (const m of metrics) assert.ok(m.timestamp instanceof Date && m.cpuCount >= 1 && m.memUsed > 0, JSON.stringify(m))
})

test('errors in E2B shapes', async () => {
  await assert.rejects(Sandbox.connect('no-such-sandbox'), (e) => e instanceof SandboxNotFoundError || e instanceof NotFoundError)
  await assert.rejects(Sandbox.getInfo('no-such-sandbox'), SandboxNotFoundError)
  assert.equal(await Sandbox.kill('no-such-sandbox'), false)
  await assert.rejects(Sandbox.create({ timeoutMs: 10 * 86_400_000 }), (e) => e.statusCode === 400 && /give 1 to 86400 seconds/.test(e.message))
  await assert.rejects(Sandbox.create({ metadata: { userId: 'x' } }), (e) => e.statusCode === 400 && /lower-case/.test(e.message))
  await assert.rejects(Sandbox.create({ apiKey: 'e2b_' + '0'.repeat(64) }), AuthenticationError)
  await assert.rejects(sbx.createSnapshot({ name: 'mine' }), (e) => /named snapshots are not supported by Paddock/.test(e.message))
  await assert.rejects(Sandbox.deleteSnapshot(`${sbx.sandboxId}-20260101-000000`), (e) => /not supported by Paddock/.test(e.message))
})

test("another user's sandbox is invisible and untouchable", async () => {
  const other = { apiKey: process.env.MIA_KEY }
  const mine = await Sandbox.list(other).nextItems()
  assert.ok(!mine.some((s) => s.sandboxId === sbx.sandboxId), 'listed for mia')
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId, other), SandboxNotFoundError)
  assert.equal(await Sandbox.kill(sbx.sandboxId, other), false)
  await assert.rejects(Sandbox.connect(sbx.sandboxId, other), (e) => e instanceof SandboxNotFoundError || e instanceof NotFoundError)
  await assert.rejects(Sandbox.fork(sbx.sandboxId, other), (e) => e instanceof SandboxNotFoundError || e instanceof NotFoundError)
  await assert.rejects(Sandbox.getMetrics(sbx.sandboxId, other), SandboxNotFoundError)
  assert.equal((await Sandbox.listSnapshots({ ...other, sandboxId: undefined }).nextItems()).length, 0, 'mia lists no snapshot of ours')
  // envd with mia's key as the access token reaches nothing either.
  const asMia = new Sandbox({ sandboxId: sbx.sandboxId, envdAccessToken: process.env.MIA_KEY, envdVersion: '0.5.7', apiKey: process.env.MIA_KEY })
  await assert.rejects(asMia.commands.run('id'), (e) => /not found/i.test(e.message))
  await assert.rejects(asMia.files.read('/home/user/kept.txt'), (e) => /not found/i.test(e.message))
  assert.ok(await sbx.isRunning(), 'still running')
})

test("a user's quota holds: past it, E2B's limit error with the quota's words", async () => {
  const quota = (body) => fetch(`${process.env.PADDOCK_URL}/v1/users/mia/quota`, {
    method: 'PUT', headers: { Authorization: `Bearer ${process.env.PADDOCK_TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  })
  const set = await quota({ running: 1 })
  assert.equal(set.status, 200, await set.text())
  const asMia = { apiKey: process.env.MIA_KEY }
  const first = await create(asMia)
  await assert.rejects(Sandbox.create({ ...asMia, timeoutMs: 600_000 }), (e) => e.name === 'RateLimitError' && /mia has 1 box running, the most allowed/.test(e.message))
  assert.equal((await Sandbox.list(asMia).nextItems()).length, 1, 'nothing made past the quota')
  await first.kill()
  const reset = await quota({ default: ['running'] })
  assert.equal(reset.status, 200, await reset.text())
})

test("a viewer's key reads and changes nothing", async () => {
  const res = await fetch(`${process.env.PADDOCK_URL}/v1/boxes/${sbx.sandboxId}/grants/vic`, {
    method: 'PUT', headers: { Authorization: `Bearer ${process.env.PADDOCK_TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ access: 'viewer' }),
  })
  assert.equal(res.status, 200, await res.text())
  const asVic = { apiKey: process.env.VIC_KEY }
  assert.equal((await Sandbox.getInfo(sbx.sandboxId, asVic)).state, 'running')
  await assert.rejects(Sandbox.create(asVic), (e) => /viewer/.test(e.message))
  await assert.rejects(Sandbox.kill(sbx.sandboxId, asVic), (e) => /viewer/.test(e.message))
  const vic = new Sandbox({ sandboxId: sbx.sandboxId, envdAccessToken: process.env.VIC_KEY, envdVersion: '0.5.7', apiKey: process.env.VIC_KEY })
  assert.equal(await vic.files.read('/home/user/kept.txt'), 'kept across a pause')
  await assert.rejects(vic.files.write('/home/user/vic.txt', 'no'), (e) => /viewer/.test(e.message))
  await assert.rejects(vic.commands.run('touch /home/user/vic.txt'), (e) => /viewer/.test(e.message))
  assert.equal(await sbx.files.exists('/home/user/vic.txt'), false)

  // A member the box is shared with as a viewer: the same, by the box's
  // own access (not the role's).
  const share = await fetch(`${process.env.PADDOCK_URL}/v1/boxes/${sbx.sandboxId}/grants/mia`, {
    method: 'PUT', headers: { Authorization: `Bearer ${process.env.PADDOCK_TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ access: 'viewer' }),
  })
  assert.equal(share.status, 200, await share.text())
  const mia = new Sandbox({ sandboxId: sbx.sandboxId, envdAccessToken: process.env.MIA_KEY, envdVersion: '0.5.7', apiKey: process.env.MIA_KEY })
  assert.equal(await mia.files.read('/home/user/kept.txt'), 'kept across a pause')
  assert.ok((await mia.files.list('/home/user')).length > 0)
  await assert.rejects(mia.commands.run('touch /home/user/mia.txt'), (e) => /viewer/.test(e.message))
  await assert.rejects(mia.files.write('/home/user/mia.txt', 'no'), (e) => /viewer/.test(e.message))
  await assert.rejects(mia.files.remove('/home/user/kept.txt'), (e) => /viewer/.test(e.message))
  await assert.rejects(Sandbox.setTimeout(sbx.sandboxId, 60_000, { apiKey: process.env.MIA_KEY }), (e) => /viewer/.test(e.message))
  assert.equal(await sbx.files.exists('/home/user/mia.txt'), false)
  assert.equal(await sbx.files.exists('/home/user/kept.txt'), true)
})

// The testbed's internet (a namespace that owns 198.18.0.0/16 and
// 169.254.169.254): no packet of this test leaves the machine.
test('egress: Paddock policies hold for sandboxes made through the SDK', async () => {
  const open = await create()
  const shut = await create({ allowInternetAccess: false })
  const curl = (s, url) => s.commands.run(`curl -sS -m 3 ${url}`)
  assert.equal((await curl(open, 'http://198.18.2.2/')).stdout.trim(), 'hello from 198.18.2.2')
  await assert.rejects(curl(open, 'http://169.254.169.254/'), CommandExitError, 'the metadata server')
  await assert.rejects(curl(shut, 'http://198.18.2.2/'), CommandExitError, 'allowInternetAccess: false')
  const res = await fetch(`${process.env.PADDOCK_URL}/v1/boxes/${shut.sandboxId}`, { headers: { Authorization: `Bearer ${process.env.PADDOCK_TOKEN}` } })
  assert.equal((await res.json()).policy, 'deny-all')
  await open.kill()
  await shut.kill()
})

test('kill removes the sandbox', async () => {
  assert.equal(await sbx.kill().then(() => true), true)
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError)
})
