// E2B's interpreter SDK (@e2b/code-interpreter, pinned), unchanged,
// against a real paddockd: run by testbed/e2e's TestE2BSDK, with the
// environment sdk.test.mjs has.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'

let sbx
after(async () => { if (sbx) await sbx.kill().catch(() => {}) })

test('runs keep their state; output, results, charts and errors come back', async () => {
  sbx = await Sandbox.create({ timeoutMs: 600_000 })
  assert.equal((await sbx.getInfo()).templateId, 'code-interpreter-v1')

  const first = await sbx.runCode('x = 41\nprint("hello")\nx + 1')
  assert.deepEqual(first.logs.stdout, ['hello\n'])
  assert.equal(first.text, '42')
  assert.equal(first.error, undefined)

  const out = []
  const second = await sbx.runCode('import sys\nprint(x, file=sys.stderr)\nx', { onStderr: (m) => out.push(m.line) })
  assert.deepEqual(out, ['41\n'])
  assert.equal(second.text, '41')
  assert.ok(second.executionCount > first.executionCount)

  const chart = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  const png = chart.results.find((r) => r.png)
  assert.ok(png, JSON.stringify(chart.results.map((r) => r.formats())))
  assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG')

  const failed = await sbx.runCode('1 / 0')
  assert.equal(failed.error.name, 'ZeroDivisionError')
  assert.match(failed.error.traceback, /ZeroDivisionError/)
})

test('output comes as the code prints it; a run cut by its timeout is interrupted, its state kept', async () => {
  // The code waits for a file the test writes only once the first line
  // has reached it: a run whose output came only at its end would wait
  // until its own timeout.
  const seen = []
  const run = await sbx.runCode(
    'import os, time\nprint("waiting", flush=True)\nwhile not os.path.exists("/tmp/go"): time.sleep(0.05)\nprint("done")\nx',
    {
      timeoutMs: 120_000,
      onStdout: async (m) => {
        seen.push(m.line)
        if (m.line === 'waiting\n') await sbx.files.write('/tmp/go', '')
      },
    },
  )
  assert.deepEqual(seen, ['waiting\n', 'done\n'])
  assert.equal(run.text, '41')

  // E2B's timeoutMs ends the request; the kernel is interrupted, so the
  // next run in the same context answers, with the state it had.
  await assert.rejects(sbx.runCode('z = 1\nwhile True: pass', { timeoutMs: 3000 }), (e) => e.name === 'TimeoutError')
  const after = await sbx.runCode('(x, z)', { timeoutMs: 120_000 })
  assert.equal(after.text, '(41, 1)')
})

test('contexts: made, listed, apart, restarted, removed', async () => {
  const ctx = await sbx.createCodeContext({ language: 'python' })
  assert.ok(ctx.id)
  await sbx.runCode('y = "in the context"', { context: ctx })
  assert.equal((await sbx.runCode('y', { context: ctx })).text, "'in the context'")
  const elsewhere = await sbx.runCode('y')
  assert.equal(elsewhere.error.name, 'NameError', 'the default context does not see it')
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  await sbx.restartCodeContext(ctx)
  assert.equal((await sbx.runCode('y', { context: ctx })).error.name, 'NameError', 'a restart forgets')
  await sbx.removeCodeContext(ctx)
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id))
  // Not supported: refused, not ignored (the SDK shows E2B's status; its
  // message when CI=true). A short request timeout: the SDK leaves its
  // timer running when a run is refused, which would hold node open.
  await assert.rejects(sbx.runCode('1', { envs: { A: 'b' }, requestTimeoutMs: 2000 }), /400/)
})
