// E2B's SDK beside Paddock's own TypeScript SDK, in one process, against
// one paddockd: create + first command, a command's round trip, 100 MB
// up and 100 MB down. A command is the same on both sides: E2B's SDK
// runs each as '/bin/bash -l -c CMD', and so does Paddock's side here.
// Files go to the box user's home on both sides (/home/user is a link
// to it in a box made through E2B). Each pair of runs alternates which side goes
// first. Prints one JSON document: per row the milliseconds of each run
// of each side. Run by testbed/bench's e2b section (go run ./testbed/bench
// -section e2b), which sets E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY,
// PADDOCK_URL, PADDOCK_TOKEN and PADDOCK_SDK (the built SDK's entry).
import { Sandbox } from 'e2b'

const { Client } = await import(process.env.PADDOCK_SDK)
const paddock = new Client({ host: process.env.PADDOCK_URL, token: process.env.PADDOCK_TOKEN })
const n = Number(process.argv[2] || 5)

async function timed(fn) {
  const t = performance.now()
  await fn()
  return performance.now() - t
}

// pair runs e2b and pd n times each, alternating which goes first.
async function pair(runs, e2b, pd) {
  const out = { e2b: [], paddock: [] }
  for (let i = 0; i < runs; i++) {
    const sides = i % 2 === 0 ? [['e2b', e2b], ['paddock', pd]] : [['paddock', pd], ['e2b', e2b]]
    for (const [name, fn] of sides) out[name].push(await fn(i))
  }
  return out
}

// sh is a command as E2B's SDK sends it.
const sh = (cmd) => ['/bin/bash', '-l', '-c', cmd]

const rows = {}
rows['create + first command'] = await pair(n, async () => {
  let sbx
  const ms = await timed(async () => {
    sbx = await Sandbox.create({ timeoutMs: 600_000 })
    await sbx.commands.run('true')
  })
  await sbx.kill()
  return ms
}, async () => {
  let box
  const ms = await timed(async () => {
    box = await paddock.createBox({ desktop: false })
    const r = await paddock.exec(box.name, sh('true'))
    if (r.exitCode !== 0) throw new Error(`exec: ${JSON.stringify(r)}`)
  })
  await paddock.removeBox(box.name)
  return ms
})

const sbx = await Sandbox.create({ timeoutMs: 600_000 })
const box = (await paddock.createBox({ desktop: false })).name
try {
  rows["a command's round trip"] = await pair(n * 4, () => timed(() => sbx.commands.run('true')),
    () => timed(() => paddock.exec(box, sh('true'))))
  const blob = new Uint8Array(100 << 20).map((_, i) => (i * 131) & 255)
  rows['100 MB up'] = await pair(n, () => timed(() => sbx.files.write('/home/user/blob.bin', blob)),
    () => timed(() => paddock.writeFile(box, '/config/blob.bin', blob)))
  rows['100 MB down'] = await pair(n, () => timed(async () => {
    const b = await sbx.files.read('/home/user/blob.bin', { format: 'bytes' })
    if (b.length !== blob.length) throw new Error(`read ${b.length} bytes`)
  }), () => timed(async () => {
    const b = await paddock.readFile(box, '/config/blob.bin')
    if (b.length !== blob.length) throw new Error(`read ${b.length} bytes`)
  }))
} finally {
  await sbx.kill()
  await paddock.removeBox(box)
}
paddock.close()
console.log(JSON.stringify(rows))
