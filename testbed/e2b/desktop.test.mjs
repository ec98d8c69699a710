// E2B's desktop SDK (@e2b/desktop, pinned), unchanged, against a real
// paddockd: it starts its X server and XFCE in a box, takes a
// screenshot, moves the mouse, and types into a window. Run by
// testbed/e2e's TestE2BSDK with the environment sdk.test.mjs has.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import http from 'node:http'
import { Sandbox } from '@e2b/desktop'

// A request to a box's preview of port (Paddock's, at
// PORT-BOX.localhost in local mode), with the owner's Paddock token as
// an API client would send it (a browser signs in instead).
function preview(box, port, path, headers = {}) {
  const api = new URL(process.env.PADDOCK_URL)
  return http.request({
    host: api.hostname, port: api.port, path,
    headers: { Host: `${port}-${box}.localhost:${api.port}`, Authorization: `Bearer ${process.env.PADDOCK_TOKEN}`, ...headers },
  })
}

function get(box, port, path) {
  return new Promise((resolve, reject) => {
    const req = preview(box, port, path)
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => { body += c })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

// The first message of noVNC's websocket: the VNC server's banner.
function vncBanner(box, port) {
  return new Promise((resolve, reject) => {
    const req = preview(box, port, '/websockify', {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), 'Sec-WebSocket-Protocol': 'binary',
    })
    req.on('upgrade', (_res, socket, head) => {
      let buf = head
      const frame = () => { // a server's frame: unmasked, a short length
        if (buf.length < 2 || buf.length < 2 + (buf[1] & 0x7f)) return
        socket.destroy()
        resolve(buf.subarray(2, 2 + (buf[1] & 0x7f)).toString())
      }
      socket.on('data', (d) => { buf = Buffer.concat([buf, d]); frame() })
      frame()
    })
    req.on('response', (res) => reject(new Error(`no websocket: ${res.statusCode}`)))
    req.on('error', reject)
    req.end()
  })
}

test('the desktop: a screenshot, the mouse, typed text landing in a window, the stream', async () => {
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

    // The stream: x11vnc and noVNC in the box (the SDK starts them), on
    // port 6080, whose address is the box's preview of that port.
    await desk.stream.start()
    const url = new URL(desk.stream.getUrl())
    assert.ok(url.host.startsWith(`6080-${desk.sandboxId}.`) && url.pathname === '/vnc.html', url.toString())
    const page = await get(desk.sandboxId, 6080, '/vnc.html')
    assert.equal(page.status, 200)
    assert.match(page.body, /noVNC/)
    assert.match(await vncBanner(desk.sandboxId, 6080), /^RFB 003\.00\d\n$/)
    await desk.stream.stop()
  } finally {
    await desk.kill()
  }
})
