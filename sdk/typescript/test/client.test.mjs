// The SDK against a real paddockd: PADDOCK_HOST and PADDOCK_TOKEN name it
// (testbed/e2e starts one and runs these tests).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
// PADDOCK_SDK points at an installed copy of the package (the e2e test
// installs the npm pack tarball); by default, this tree's build.
const { Client, PaddockError, makeTar } = await import(process.env.PADDOCK_SDK ?? "../dist/index.js");

const c = new Client();

before(async () => {
  const box = await c.createBox({ name: "ts-box", ttl: 3600, env: { GREETING: "hi" }, labels: { sdk: "ts" } });
  assert.equal(box.status, "running");
  assert.equal(box.ttl_seconds, 3600);
  assert.deepEqual(box.labels, { sdk: "ts" });
  assert.deepEqual((await c.boxes({ sdk: "ts" })).map((b) => b.name), ["ts-box"]);
  assert.deepEqual(await c.boxes({ sdk: "none" }), []);
});

after(async () => {
  for (const b of await c.boxes()) {
    if (b.name.startsWith("ts-")) await c.removeBox(b.name);
  }
  c.close();
});

test("exec streams stdin and output and returns the exit code", async () => {
  const r = await c.exec("ts-box", ["sh", "-c", "cat; echo $GREETING $EXTRA; pwd; echo oops >&2; exit 3"], {
    stdin: "from stdin\n", env: { EXTRA: "there" }, workdir: "/tmp",
  });
  assert.equal(r.exitCode, 3);
  assert.equal(r.stdout.toString(), "from stdin\nhi there\n/tmp\n");
  assert.equal(r.stderr.toString(), "oops\n");
  const big = randomBytes(3 << 20); // more than one frame
  const sum = await c.exec("ts-box", ["sha256sum"], { stdin: big });
  assert.equal(sum.stdout.toString().split(" ")[0], createHash("sha256").update(big).digest("hex"));
});

test("exec: callbacks, a conversation over execStream, and a timeout", async () => {
  const chunks = [];
  const r = await c.exec("ts-box", ["sh", "-c", "echo one; sleep 0.3; echo two >&2; exit 4"], {
    onStdout: (b) => chunks.push(["out", b.toString()]), onStderr: (b) => chunks.push(["err", b.toString()]),
  });
  assert.deepEqual([r.exitCode, r.stdout.length, r.stderr.length], [4, 0, 0]);
  assert.deepEqual(chunks, [["out", "one\n"], ["err", "two\n"]]);

  const s = await c.execStream("ts-box", ["sh", "-c", "while read l; do echo got-$l; done; echo bye"]);
  const it = s[Symbol.asyncIterator]();
  for (const w of ["a", "b"]) {
    s.write(w + "\n");
    const { value } = await it.next();
    assert.deepEqual([value.stream, value.data.toString()], ["stdout", `got-${w}\n`]);
  }
  s.end();
  assert.equal((await it.next()).value.data.toString(), "bye\n");
  assert.equal((await it.next()).done, true);
  assert.equal(await s.exitCode, 0);

  const t = await c.exec("ts-box", ["sh", "-c", "echo start; sleep 300"], { timeout: 1 });
  assert.deepEqual([t.exitCode, t.stdout.toString()], [124, "start\n"]);
  await assert.rejects(c.exec("ts-box", ["true"], { timeout: "soon" }), (e) => e instanceof PaddockError && e.field === "timeout");
});

test("streams: push, pull, drive restore and backup without holding the archive", async () => {
  const data = randomBytes(1 << 20);
  const tar = makeTar({ "big.bin": data });
  // Stream it in small pieces, as a file or a pipe would come.
  const pieces = function* () { for (let i = 0; i < tar.length; i += 10000) yield tar.subarray(i, i + 10000); };
  await c.pushTar("ts-box", "/config/streamed", Readable.from(pieces()));
  const sum = await c.exec("ts-box", ["sh", "-c", "sha256sum < /config/streamed/big.bin"]);
  assert.equal(sum.stdout.toString().split(" ")[0], createHash("sha256").update(data).digest("hex"));
  let n = 0;
  for await (const chunk of await c.pullStream("ts-box", "/config/streamed/big.bin")) n += chunk.length;
  assert.ok(n > data.length, `pulled ${n} bytes`);
  await c.createDrive("ts-stream");
  await c.restoreDrive("ts-stream", Readable.from(pieces()));
  const parts = [];
  for await (const chunk of await c.backupDriveStream("ts-stream")) parts.push(chunk);
  assert.ok(Buffer.concat(parts).includes(data.subarray(0, 4096)));
  await c.removeDrive("ts-stream");
  await assert.rejects(c.pullStream("ts-box", "/config/nosuch"), (e) => e instanceof PaddockError && e.status === 404);
});

test("trees: push (a folder) and pullTree, and a link out of the target refused", async () => {
  const { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readlinkSync, symlinkSync, existsSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const d = mkdtempSync(join(tmpdir(), "ts-tree-"));
  const long = "n".repeat(120); // past ustar's 100 bytes: a PAX name
  mkdirSync(join(d, "src", long), { recursive: true });
  writeFileSync(join(d, "src", long, "deep.txt"), "deep\n");
  writeFileSync(join(d, "src", "a.txt"), "alpha\n");
  symlinkSync("a.txt", join(d, "src", "link"));
  await c.push("ts-box", join(d, "src"), "/config/tree");
  const r = await c.exec("ts-box", ["sh", "-c", `cat /config/tree/${long}/deep.txt /config/tree/link; readlink /config/tree/link`]);
  assert.equal(r.stdout.toString(), "deep\nalpha\na.txt\n");
  await c.pullTree("ts-box", "/config/tree", join(d, "back"));
  assert.equal(readFileSync(join(d, "back", "tree", long, "deep.txt"), "utf8"), "deep\n");
  assert.equal(readlinkSync(join(d, "back", "tree", "link")), "a.txt");
  await c.exec("ts-box", ["sh", "-c", "mkdir -p /config/evil && ln -s /etc/passwd /config/evil/pw"]);
  await assert.rejects(c.pullTree("ts-box", "/config/evil", join(d, "evil")), /points out of/);
  assert.equal(existsSync(join(d, "evil", "evil", "pw")), false);
});

test("jobs keep their output on the server", async () => {
  const j = await c.startJob("ts-box", ["sh", "-c", "echo first; sleep 1; echo second; exit 5"]);
  assert.equal(j.state, "running");
  assert.equal((await c.jobLog("ts-box", j.id, { follow: true })).toString(), "first\nsecond\n");
  const done = await c.job("ts-box", j.id);
  assert.deepEqual([done.state, done.exit_code], ["exited", 5]);
  assert.ok((await c.jobs("ts-box")).some((x) => x.id === j.id));
});

test("job control: input for a job, a signal for its group", async () => {
  const j = await c.startJob("ts-box", ["sh", "-c", "while read l; do echo got:$l; done; echo eof"], { stdin: true });
  assert.deepEqual(await c.sendJobInput("ts-box", j.id, "héllo\n"), { bytes: 7, closed: false });
  assert.deepEqual(await c.sendJobInput("ts-box", j.id, Buffer.from("two\n"), { eof: true }), { bytes: 4, closed: true });
  assert.equal((await c.jobLog("ts-box", j.id, { follow: true })).toString(), "got:héllo\ngot:two\neof\n");
  const k = await c.startJob("ts-box", ["sh", "-c", "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.1; done"]);
  for (let i = 0; i < 600 && !(await c.jobLog("ts-box", k.id)).toString().includes("ready"); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal((await c.signalJob("ts-box", k.id)).id, k.id);
  assert.match((await c.jobLog("ts-box", k.id, { follow: true })).toString(), /term\n/);
  assert.equal((await c.job("ts-box", k.id)).exit_code, 3);
  await assert.rejects(c.signalJob("ts-box", k.id, "NOPE"), (e) => e instanceof PaddockError && e.field === "signal");
  await assert.rejects(c.sendJobInput("ts-box", k.id, "late"), (e) => e instanceof PaddockError && e.status === 409);
});

test("the code interpreter: state kept, a timeout, contexts", async () => {
  await c.runCode("ts-box", "x = 41");
  assert.equal((await c.runCode("ts-box", "x + 1")).result["text/plain"], "42");
  assert.equal((await c.runCode("ts-box", "while True: pass", { timeout: 1 })).timed_out, true);
  assert.equal((await c.runCode("ts-box", "x")).result["text/plain"], "41");
  assert.equal((await c.createContext("ts-box", { name: "ts-scratch" })).state, "running");
  assert.equal((await c.runCode("ts-box", "x", { context: "ts-scratch" })).error.name, "NameError");
  assert.deepEqual((await c.contexts("ts-box")).map((x) => x.name).sort(), ["python", "ts-scratch"]);
  await c.restartContext("ts-box", "python");
  assert.equal((await c.runCode("ts-box", "x")).error.name, "NameError");
  await c.removeContext("ts-box", "ts-scratch");
  await assert.rejects(c.runCode("ts-box", "1", { context: "ts-scratch" }), (e) => e instanceof PaddockError && e.status === 404);
});

test("watchDir: a file made in the box arrives as an event", async () => {
  await c.exec("ts-box", ["mkdir", "-p", "/config/tw"]);
  const seen = [];
  for await (const e of c.watchDir("ts-box", "/config/tw")) {
    seen.push(`${e.type} ${e.path ?? ""}`.trim());
    if (e.type === "ready") await c.exec("ts-box", ["sh", "-c", "echo hi > /config/tw/a"]);
    else break;
  }
  assert.deepEqual(seen, ["ready /config/tw", "created /config/tw/a"]);
  await assert.rejects(c.watchDir("ts-box", "/root").next(), (e) => e instanceof PaddockError && e.status === 403);
});

test("pushFiles writes files the box user owns; pull returns a tar", async () => {
  await c.pushFiles("ts-box", "/config/pushed", { "a.txt": "alpha\n", "sub/b.txt": "beta\n" });
  const r = await c.exec("ts-box", ["sh", "-c", "cat /config/pushed/a.txt /config/pushed/sub/b.txt; stat -c %U /config/pushed/sub/b.txt"]);
  assert.equal(r.stdout.toString(), "alpha\nbeta\npaddock\n");
  const tar = await c.pull("ts-box", "/config/pushed/sub/b.txt");
  assert.equal(tar.subarray(0, 5).toString(), "b.txt");
  assert.ok(tar.includes(Buffer.from("beta\n")));
  assert.throws(() => makeTar({ "../escape": "x" }), /stay inside the target/);
});

test("errors carry status, code and field", async () => {
  await assert.rejects(c.box("ts-nosuch"), (e) =>
    e instanceof PaddockError && e.status === 404 && e.code === "not_found" && /no box named "ts-nosuch"/.test(e.message));
  await assert.rejects(c.createBox({ name: "ts-bad", type: "huge" }), (e) =>
    e instanceof PaddockError && e.status === 400 && e.code === "invalid" && e.field === "type");
  await assert.rejects(c.exec("ts-nosuch", ["true"]), (e) => e instanceof PaddockError && e.status === 404);
  const stranger = new Client({ token: "pdk_0000" });
  await assert.rejects(stranger.boxes(), (e) => e instanceof PaddockError && e.status === 401);
  stranger.close();
});

test("policies apply to the running box", async () => {
  await c.setPolicy("ts-box", "deny-all");
  assert.equal((await c.box("ts-box")).policy, "deny-all");
  const rep = await c.policyReport("ts-box");
  assert.equal(rep.policy, "deny-all");
  assert.ok("metadata" in rep.drops);
  await c.setPolicy("ts-box", "allow-all");
  // Both changes are in the audit log, which chains.
  const es = await c.audit({ box: "ts-box", action: "box.policy" });
  assert.equal(es.length, 2);
  assert.deepEqual(es.map((e) => e.result), ["ok", "ok"]);
  assert.equal((await c.verifyAudit()).ok, true);
  // The owner has no quota.
  const me = await c.whoami();
  assert.equal((await c.quota(me.user)).role, "owner");
});

test("stop snapshots, start brings the files back, fork copies them", async () => {
  const life = await c.createBox({ name: "ts-life", idle_stop: "2h" });
  assert.deepEqual([life.idle_stop, life.sleeping], ["2h0m0s", undefined]);
  await c.exec("ts-life", ["sh", "-c", "echo kept > /config/f"]);
  assert.equal((await c.stopBox("ts-life")).status, "stopped");
  assert.deepEqual((await c.snapshots("ts-life")).map((s) => s.reason), ["stop"]);
  await c.startBox("ts-life");
  assert.equal((await c.exec("ts-life", ["cat", "/config/f"])).stdout.toString(), "kept\n");
  const child = await c.fork("ts-life", { name: "ts-child" });
  assert.equal(child.name, "ts-child");
  assert.equal((await c.exec("ts-child", ["cat", "/config/f"])).stdout.toString(), "kept\n");
});

test("a project is planned and applied; a stale plan is refused", async () => {
  const spec = { project: "tssdk", boxes: [{ name: "ts-proj", ttl: "2h" }], drives: [{ name: "ts-cache" }] };
  const plan = await c.plan(spec);
  assert.deepEqual(plan.changes.map((ch) => [ch.address, ch.action]).sort(),
    [["box.ts-proj", "create"], ["drive.ts-cache", "create"]]);
  const res = await c.apply(spec, plan.serial);
  assert.equal(res.failed, undefined);
  assert.deepEqual((await c.plan(spec)).changes, []);
  await assert.rejects(c.apply(spec, plan.serial), (e) => e instanceof PaddockError && e.status === 409);
  const gone = await c.plan(spec, { destroy: true, drives: true });
  await c.apply(spec, gone.serial, { destroy: true, drives: true });
  assert.ok(!(await c.boxes()).some((b) => b.name === "ts-proj"));
  assert.ok(!(await c.drives()).some((d) => d.name === "ts-cache"));
});

test("whoami and TTL", async () => {
  assert.equal((await c.whoami()).role, "owner");
  assert.equal((await c.setTTL("ts-box", "2h")).ttl_seconds, 7200);
  assert.equal((await c.setTTL("ts-box")).ttl_seconds, undefined);
  await c.setTTL("ts-box", 3600);
});

test("files one by one", async () => {
  await c.writeFile("ts-box", "/config/one/note.txt", "written\n");
  assert.equal((await c.readFile("ts-box", "/config/one/note.txt")).toString(), "written\n");
  assert.deepEqual((await c.listDir("ts-box", "/config/one")).entries.map((e) => e.name), ["note.txt"]);
  await assert.rejects(c.readFile("ts-box", "/config/one/none"), (e) => e instanceof PaddockError && e.status === 404);
});

test("a box handle is removed when its scope is disposed, unless kept", async () => {
  {
    const h = await c.createHandle({ name: "ts-ctx" });
    try {
      assert.equal((await h.exec(["echo", "in"])).stdout.toString(), "in\n");
    } finally {
      await h[Symbol.asyncDispose](); // what `await using` calls
    }
  }
  assert.ok(!(await c.boxes()).some((b) => b.name === "ts-ctx"));
  const kept = (await c.createHandle({ name: "ts-kept" })).keep();
  await kept[Symbol.asyncDispose]();
  assert.ok((await c.boxes()).some((b) => b.name === "ts-kept"));
});

test("tokens, secrets, keys and users", async () => {
  const t = await c.createToken("ts-token");
  assert.equal((await new Client({ token: t.token }).whoami()).token, "ts-token");
  await c.revokeToken("ts-token");
  assert.ok(!(await c.tokens()).some((x) => x.name === "ts-token"));
  await c.setSecret("TS_SECRET", "s3cret");
  const secrets = await c.secrets();
  assert.ok(secrets.some((s) => s.name === "TS_SECRET"));
  assert.ok(!JSON.stringify(secrets).includes("s3cret"));
  await c.setSecret("TS_SECRET", "s3cret", { broker: ["api.model.test"], header: "x-api-key", limit: "5/min" });
  let b = (await c.secrets()).find((s) => s.name === "TS_SECRET")?.broker;
  assert.deepEqual(b, { hosts: ["api.model.test"], header: "x-api-key", limit: "5/min" });
  await c.setSecretBroker("TS_SECRET", { hosts: ["api.model.test"], header: "bearer" });
  b = (await c.secrets()).find((s) => s.name === "TS_SECRET")?.broker;
  assert.deepEqual(b, { hosts: ["api.model.test"], header: "bearer" });
  await c.removeSecret("TS_SECRET");
  // Images: none yet; this server's boxes run on runc, so a build is
  // refused before it starts, saying why.
  assert.deepEqual(await c.images(), []);
  await assert.rejects(c.image("nosuch:1"), (e) => e.status === 404);
  await assert.rejects(c.buildImage("tools", { Dockerfile: "FROM scratch\n" }, { tag: "1" }),
    (e) => e.status === 409 && e.code === "conflict" && /Docker inside a box does not work/.test(e.message));
  await assert.rejects(c.removeImage("nosuch"), (e) => e.status === 404);
  assert.ok(Array.isArray(await c.keys()));
  assert.ok((await c.users()).some((u) => u.role === "owner"));
  assert.match((await c.invite()).url ?? "", /\/invite\//);
  // One server: its own, and nowhere to move a box to.
  const ns = await c.nodes();
  assert.equal(ns.length, 1);
  assert.ok(ns[0].control_plane && ns[0].state === "up");
  await assert.rejects(c.drainNode("nosuch"), (e) => e.status === 404);
  const own = await c.setNodePool(ns[0].name, { small: 0 });
  assert.deepEqual([own.name, own.own_pool], [ns[0].name, undefined]);
  await assert.rejects(c.setNodePool(ns[0].name, { huge: 1 }), (e) => e.status === 400 && e.field === "pool");
  await assert.rejects(c.moveBox("nosuch", ns[0].name), (e) => e.status === 404);
});

test("named policies and drive backups", async () => {
  await c.createPolicy("ts-pol", { allow_domains: ["example.test"] });
  await c.updatePolicy("ts-pol", { allow_cidrs: ["10.9.0.0/16"] });
  const pol = (await c.policies()).find((p) => p.name === "ts-pol");
  assert.deepEqual(pol?.allow_cidrs, ["10.9.0.0/16"]);
  await c.removePolicy("ts-pol");
  await c.createDrive("ts-drive");
  await c.restoreDrive("ts-drive", makeTar({ "data.txt": "drive" }));
  assert.ok((await c.backupDrive("ts-drive")).includes(Buffer.from("drive")));
  await c.removeDrive("ts-drive");
});

test("agents and a prompt", async () => {
  assert.ok((await c.agents()).some((a) => a.name === "say"));
  const j = await c.prompt("ts-box", "hello typescript", { agent: "say" });
  assert.match((await c.jobLog("ts-box", j.id, { follow: true })).toString(), /said=hello typescript/);
});

test("desktop: screenshots and the desktop URL", async () => {
  await c.createBox({ name: "ts-desk", desktop: true });
  assert.equal((await c.screenshot("ts-desk")).subarray(1, 4).toString(), "PNG");
  const kept = await c.takeScreenshot("ts-desk");
  assert.deepEqual((await c.screenshots("ts-desk")).map((s) => s.id), [kept.id]);
  assert.match(await c.desktopURL("ts-desk"), /\/desktop\/ts-desk\/#ticket=/);
  const r = await c.desktopActions("ts-desk", [{ action: "mouse_move", coordinate: [40, 30] }, { action: "cursor_position" }], { screenshot: true, scale: 0.5 });
  assert.deepEqual(r.results[1].coordinate, [40, 30]);
  assert.deepEqual([r.width, r.height], [640, 400]);
  assert.equal(Buffer.from(r.screenshot, "base64").subarray(1, 4).toString(), "PNG");
});

test("metrics: the newest sample, a box's samples, and on the events stream", async () => {
  // Boxes are sampled every 5 s (metrics_interval).
  let m;
  for (let i = 0; i < 100 && !m; i++) {
    m = (await c.metrics()).find((s) => s.box === "ts-box");
    if (!m) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(m, "no sample of ts-box");
  assert.equal(m.memory_limit_bytes, 2048 * 1024 * 1024);
  assert.ok(m.processes > 0 && m.memory_bytes > 0);
  const h = await c.boxMetrics("ts-box", { since: "1h" });
  assert.equal(h.box, "ts-box");
  assert.ok(h.samples.length > 0);
  await assert.rejects(c.boxMetrics("ts-box", { since: "soon" }), (e) => e instanceof PaddockError && e.field === "since");
  for await (const ev of c.events({ metrics: true })) {
    if (ev.kind === "metrics" && ev.data.box === "ts-box") break;
  }
});

test("sharing: who a box is shared with; a user that is not there", async () => {
  assert.deepEqual(await c.grants("ts-box"), []);
  await assert.rejects(c.share("ts-box", "nobody-here", "member"), (e) => e instanceof PaddockError && e.status === 404 && /no user named "nobody-here"/.test(e.message));
  await assert.rejects(c.share("ts-box", "nobody-here", "owner"), (e) => e instanceof PaddockError && e.field === "access");
});

test("events and projects", async () => {
  const seen = new Set();
  for await (const ev of c.events()) {
    if (ev.kind === "box") seen.add(ev.data.name);
    if (ev.kind === "ready") break;
  }
  assert.ok(seen.has("ts-box"));
  assert.ok(Array.isArray(await c.projects()));
});
