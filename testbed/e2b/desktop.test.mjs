// E2B's desktop SDK (@e2b/desktop, pinned), unchanged, against a real
// paddockd: it starts its X server and XFCE in a box, takes a
// screenshot, moves the mouse, and types into a window. Run by
// testbed/e2e's TestE2BSDK with the environment sdk.test.mjs has.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/desktop'

test('the desktop: a screenshot, the mouse, and typed text landing in a window', async () => {
  const desk = await Sandbox.create({ timeoutMs: 600_000 })
  try {
    assert.equal((await desk.getInfo()).templateId, 'desktop')
    const png = await desk.screenshot()
    assert.equal(Buffer.from(png).subarray(1, 4).toString(), 'PNG')
    await desk.moveMouse(100, 120)
    assert.deepEqual(await desk.getCursorPosition(), { x: 100, y: 120 })

    // A window that writes the line typed into it to a file.
    await desk.commands.run(`xterm -title e2b-typing -e sh -c 'read line; echo "$line" > /home/user/typed.txt'`, { background: true })
    let id = ''
    for (let i = 0; i < 100 && !id; i++) {
      id = (await desk.commands.run('xdotool search --name e2b-typing || true')).stdout.trim().split('\n')[0]
      if (!id) await desk.wait(200)
    }
    assert.ok(id, 'the window came up')
    await desk.commands.run(`xdotool windowactivate --sync ${id}`)
    await desk.write('typed through the desktop SDK')
    await desk.press('enter')
    let typed = ''
    for (let i = 0; i < 100 && !typed; i++) {
      typed = await desk.files.read('/home/user/typed.txt').catch(() => '')
      if (!typed) await desk.wait(200)
    }
    assert.equal(typed, 'typed through the desktop SDK\n')
    const after = await desk.screenshot()
    assert.ok(!Buffer.from(after).equals(Buffer.from(png)), 'the screen changed')
  } finally {
    await desk.kill()
  }
})
