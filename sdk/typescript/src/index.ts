/**
 * Paddock's TypeScript SDK (Node.js 20 or newer): a client for a paddockd
 * server's HTTP API. It is a view over the same declared state as the CLI:
 * creating a box declares it and the server's reconciler makes it.
 *
 *     const c = new Client();          // PADDOCK_HOST and PADDOCK_TOKEN, or 'paddock login' 
 *     const box = await c.createBox({ type: "small", ttl: "1h" });
 *     await c.pushFiles(box.name, "/config/project", { "package.json": "{}" });
 *     const r = await c.exec(box.name, ["bash", "-lc", "cd /config/project && npm test"]);
 *     console.log(r.exitCode, r.stdout.toString());
 */
import * as http from "node:http";
import * as https from "node:https";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "node:net";
import { Readable } from "node:stream";
import { extractTar, packDir } from "./tar.js";
export { extractTar, packDir } from "./tar.js";

const API = "/v1";
const UPGRADE_EXEC = "paddock-exec/1";

// Frame types of an attached exec (appliance/stream in the server).
const STDIN = 0, STDOUT = 1, STDERR = 2, STDIN_EOF = 4, EXIT = 5, ERROR = 6;
const MAX_FRAME = 1 << 20;

/** An error the server answered. */
export class PaddockError extends Error {
  constructor(
    readonly status: number,
    /** not_found, invalid, conflict, unauthorized or internal */
    readonly code: string,
    message: string,
    /** the request field the error concerns, when there is one */
    readonly field = "",
  ) {
    super(message);
    this.name = "PaddockError";
  }
}

import type {
  ApplyResult, AuditCheck, AuditEntry, AuditMark, Box, BuildEvent, Image, ImageShares, BoxMetrics, Grant, QuotaPut, UserQuota, BoxAgent, Agent, BoxPost, Dir, Drained, Drive, CodeContext, DesktopAction, DesktopActionsResult, InviteCreated, Job, JobInput, Key, Node, NodeJoin, Plan, Policy,
  PolicyReport, PolicySpec, Port, Project, ProjectSpec, RunResult, Sample, WatchEvent, Screenshot, Secret, SecretBroker, Snapshot, TokenCreated, TokenInfo, User, Whoami,
} from "./models.js";
export type * from "./models.js";

/** What audit() picks; empty fields pick all. */
export interface AuditFilter {
  box?: string;
  user?: string;
  /** an action, or a kind of them: "box" picks box.create, box.stop... */
  action?: string;
  since?: string;
  after?: number;
  limit?: number;
}

/** What createBox takes: the API's BoxPost, with a TTL also as seconds. */
export type CreateBox = Omit<BoxPost, "ttl"> & {
  /** seconds, or a duration such as "1h" */
  ttl?: string | number;
};

/** A box as a handle. `await using box = await client.createHandle({...})`
 * removes the box when the scope ends, unless keep() was called (in
 * TypeScript 5.2 or newer, which compiles it for Node.js 20; plain
 * JavaScript has `await using` from Node.js 24: on 20 and 22 call
 * `await box.remove()` in a `finally`). */
export class BoxHandle {
  private kept = false;
  constructor(readonly client: Client, public data: Box) {}
  get name(): string { return this.data.name; }
  keep(): this { this.kept = true; return this; }
  exec(cmd: string[], opts: ExecOptions = {}): Promise<ExecResult> { return this.client.exec(this.name, cmd, opts); }
  execStream(cmd: string[], opts: ExecStreamOptions = {}): Promise<ExecStream> { return this.client.execStream(this.name, cmd, opts); }
  readFile(path: string): Promise<Buffer> { return this.client.readFile(this.name, path); }
  writeFile(path: string, data: string | Uint8Array): Promise<void> { return this.client.writeFile(this.name, path, data); }
  push(local: string, to: string): Promise<void> { return this.client.push(this.name, local, to); }
  pull(path: string): Promise<Buffer> { return this.client.pull(this.name, path); }
  async stop(): Promise<Box> { return (this.data = await this.client.stopBox(this.name)); }
  async start(): Promise<Box> { return (this.data = await this.client.startBox(this.name)); }
  remove(): Promise<void> { return this.client.removeBox(this.name); }
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.kept) return;
    try {
      await this.remove();
    } catch (e) {
      if (!(e instanceof PaddockError && e.status === 404)) throw e;
    }
  }
}

export interface ExecResult { exitCode: number; stdout: Buffer; stderr: Buffer }
export interface ExecStreamOptions {
  env?: Record<string, string>;
  workdir?: string;
  /** ends the command on the server after this long (seconds, or "90s"):
   * its process group gets SIGTERM, then SIGKILL; the exit code is 124 */
  timeout?: string | number;
}
export interface ExecOptions extends ExecStreamOptions {
  stdin?: Uint8Array | string;
  /** called with each chunk of stdout as it arrives (then not kept in the result) */
  onStdout?: (chunk: Buffer) => void;
  /** called with each chunk of stderr as it arrives (then not kept in the result) */
  onStderr?: (chunk: Buffer) => void;
}
export interface ExecChunk { stream: "stdout" | "stderr"; data: Buffer }

/** A command running in a box, attached: `for await` over its output
 * chunks until it ends; write() and end() feed its stdin; exitCode
 * resolves when it ends. close() hangs up early (the command goes on
 * unless it has a timeout). */
export class ExecStream implements AsyncIterable<ExecChunk> {
  /** the command's exit code (124: its timeout ran out) */
  readonly exitCode: Promise<number>;
  private chunks: ExecChunk[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private failure: Error | null = null;
  private reading = false;
  private settle!: (code: number | Error) => void;

  constructor(private readonly socket: Socket, head: Buffer) {
    this.exitCode = new Promise((resolve, reject) => {
      this.settle = (r) => (r instanceof Error ? reject(r) : resolve(r));
    });
    this.exitCode.catch(() => {}); // also thrown by the iterator
    let buf: Buffer = Buffer.alloc(0);
    const finish = (r: number | Error) => {
      if (this.ended) return;
      this.ended = true;
      if (r instanceof Error) this.failure = r;
      this.settle(r);
      socket.destroy();
      this.notify();
    };
    const onData = (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (buf.length >= 5) {
        const size = buf.readUInt32BE(1);
        if (buf.length < 5 + size) break;
        const kind = buf[0], payload = Buffer.from(buf.subarray(5, 5 + size));
        buf = buf.subarray(5 + size);
        if (kind === STDOUT || kind === STDERR) {
          this.chunks.push({ stream: kind === STDOUT ? "stdout" : "stderr", data: payload });
          // Flow control once someone reads: resumed as the reader catches up.
          if (this.reading && this.chunks.length > 64) socket.pause();
          this.notify();
        } else if (kind === EXIT) return finish(payload.readInt32BE(0));
        else if (kind === ERROR) return finish(new PaddockError(500, "internal", payload.toString()));
      }
    };
    socket.on("data", onData);
    socket.on("error", (e) => finish(e));
    socket.on("close", () => finish(new Error("the exec stream ended without an exit code")));
    if (head.length) onData(head); // frames that came with the upgrade
  }

  /** Sends bytes to the command's stdin. */
  write(data: Uint8Array | string): void {
    const b = typeof data === "string" ? Buffer.from(data) : Buffer.from(data);
    for (let i = 0; i < b.length; i += MAX_FRAME) this.socket.write(frame(STDIN, b.subarray(i, i + MAX_FRAME)));
  }
  /** Closes the command's stdin. */
  end(): void { this.socket.write(frame(STDIN_EOF, Buffer.alloc(0))); }
  /** Hangs up. */
  close(): void { this.socket.destroy(); }

  private notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ExecChunk> {
    this.reading = true;
    for (;;) {
      const c = this.chunks.shift();
      if (c) {
        if (this.chunks.length < 16) this.socket.resume();
        yield c;
        continue;
      }
      if (this.ended) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }
}

export interface ClientOptions {
  /** the server's URL (default $PADDOCK_HOST, else the CLI's login) */
  host?: string;
  /** an API token (default $PADDOCK_TOKEN, else the CLI's login) */
  token?: string;
  /** extra certificate authorities in PEM, e.g. Caddy's internal root */
  ca?: string | Buffer;
}

/** The login `paddock login` saved: config.json in $PADDOCK_CONFIG_DIR,
 * else in the CLI's folder of the user's configuration directory (as Go's
 * os.UserConfigDir finds it). Undefined when there is none. */
export function cliLogin(env: NodeJS.ProcessEnv = process.env): { server: string; token: string; ca?: string } | undefined {
  let dir = env.PADDOCK_CONFIG_DIR;
  if (!dir) {
    const home = env.HOME ?? env.USERPROFILE ?? "";
    if (process.platform === "win32") dir = env.AppData ? join(env.AppData, "paddock") : "";
    else if (process.platform === "darwin") dir = home ? join(home, "Library", "Application Support", "paddock") : "";
    else dir = env.XDG_CONFIG_HOME ? join(env.XDG_CONFIG_HOME, "paddock") : home ? join(home, ".config", "paddock") : "";
  }
  if (!dir) return undefined;
  let raw: string;
  try { raw = readFileSync(join(dir, "config.json"), "utf8"); } catch { return undefined; }
  const c = JSON.parse(raw) as { server?: string; token?: string; ca_cert?: string };
  if (!c.server || !c.token) return undefined;
  return { server: c.server, token: c.token, ca: c.ca_cert || undefined };
}

export class Client {
  private readonly url: URL;
  private readonly token: string;
  private readonly agent: http.Agent;

  constructor(opts: ClientOptions = {}) {
    let host = opts.host ?? process.env.PADDOCK_HOST ?? "";
    let token = opts.token ?? process.env.PADDOCK_TOKEN ?? "";
    let ca = opts.ca;
    // Neither given: the CLI's login, whole (server, token and CA).
    if (!host && !token) {
      const l = cliLogin();
      if (l) { host = l.server; token = l.token; ca ??= l.ca; }
    }
    if (!host) throw new Error("no server: give host, set PADDOCK_HOST, or run 'paddock login'");
    if (!token) throw new Error("no token: give token or set PADDOCK_TOKEN");
    this.url = new URL(host);
    if (this.url.protocol !== "http:" && this.url.protocol !== "https:") {
      throw new Error(`host ${host} must be an http:// or https:// URL`);
    }
    this.token = token;
    this.agent = this.url.protocol === "https:"
      ? new https.Agent({ keepAlive: true, ca })
      : new http.Agent({ keepAlive: true });
  }

  /** Frees the client's kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  // --- boxes ---

  /** The boxes this token's user sees; with labels, those that have all of them. */
  boxes(labels: Record<string, string> = {}): Promise<Box[]> {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(labels)) p.append("label", `${k}=${v}`);
    const qs = p.toString();
    return this.json("GET", "/boxes" + (qs ? "?" + qs : ""));
  }
  box(name: string): Promise<Box> { return this.json("GET", `/boxes/${q(name)}`); }
  /** Declares a box and resolves once it runs. */
  createBox(post: CreateBox = {}): Promise<Box> {
    return this.json("POST", "/boxes", { ...post, ttl: post.ttl === undefined ? undefined : String(post.ttl) });
  }
  /** Snapshots the box's filesystem, then stops it. */
  stopBox(name: string): Promise<Box> { return this.json("POST", `/boxes/${q(name)}/stop`); }
  startBox(name: string): Promise<Box> { return this.json("POST", `/boxes/${q(name)}/start`); }
  async removeBox(name: string): Promise<void> { await this.json("DELETE", `/boxes/${q(name)}`); }
  snapshot(name: string): Promise<Snapshot> { return this.json("POST", `/boxes/${q(name)}/snapshots`); }
  snapshots(name: string): Promise<Snapshot[]> { return this.json("GET", `/boxes/${q(name)}/snapshots`); }
  restore(name: string, snapshot?: string): Promise<Box> {
    return this.json("POST", `/boxes/${q(name)}/restore`, snapshot ? { snapshot } : {});
  }
  /** Fork a box; `node` puts the fork on that server (made where its snapshot is, then moved). */
  fork(name: string, opts: { name?: string; snapshot?: string; node?: string } = {}): Promise<Box> {
    return this.json("POST", `/boxes/${q(name)}/fork`, opts);
  }

  // --- drives and policies ---

  drives(): Promise<Drive[]> { return this.json("GET", "/drives"); }
  createDrive(name: string): Promise<Drive> { return this.json("POST", "/drives", { name }); }
  async removeDrive(name: string): Promise<void> { await this.json("DELETE", `/drives/${q(name)}`); }
  setPolicy(box: string, policy: string): Promise<Box> {
    return this.json("PUT", `/boxes/${q(box)}/policy`, { policy });
  }
  policyReport(box: string): Promise<PolicyReport> { return this.json("GET", `/boxes/${q(box)}/policy`); }

  // --- projects ---

  plan(spec: ProjectSpec, opts: { destroy?: boolean; drives?: boolean } = {}): Promise<Plan> {
    return this.json("POST", "/plan", { spec, ...opts });
  }
  /** Applies the plan made at serial; refused (409) if the state moved. */
  apply(spec: ProjectSpec, serial: number, opts: { destroy?: boolean; drives?: boolean } = {}): Promise<ApplyResult> {
    return this.json("POST", "/apply", { spec, serial, ...opts });
  }

  // --- files ---

  /** Copies a local directory's contents (or a file) into directory `to`
   * in the box, streamed (as the CLI's push, and Python's push). */
  push(box: string, local: string, to: string): Promise<void> {
    return this.pushTar(box, to, packDir(local));
  }
  /** Extracts a tar archive into directory `to` in the box. The server
   * refuses, whole, an archive that would write outside it. */
  async pushTar(box: string, to: string, tar: Uint8Array | Readable): Promise<void> {
    await this.request("PUT", `/boxes/${q(box)}/files?path=${encodeURIComponent(to)}`, body(tar), "application/x-tar");
  }
  /** Writes files (relative names → contents) into directory `to`. */
  pushFiles(box: string, to: string, files: Record<string, string | Uint8Array>): Promise<void> {
    return this.pushTar(box, to, makeTar(files));
  }
  /** A tar of path in the box; every name starts with path's base name. */
  async pull(box: string, path: string): Promise<Buffer> {
    return (await this.request("GET", `/boxes/${q(box)}/files?path=${encodeURIComponent(path)}`)).body;
  }
  /** The TCP ports something listens on in a running box, each with its
   * preview URL (or a note on why no preview reaches it). */
  ports(box: string): Promise<Port[]> { return this.json("GET", `/boxes/${q(box)}/ports`); }

  /** Who a box is shared with (its owner's to ask). */
  grants(box: string): Promise<Grant[]> { return this.json("GET", `/boxes/${q(box)}/grants`); }

  /** Share a box with a user: as a "viewer" (reads it) or a "member"
   * (works in it, but cannot remove, move, fork or share it, or change its
   * policy). */
  share(box: string, user: string, access: "viewer" | "member" = "viewer"): Promise<Grant> {
    return this.json("PUT", `/boxes/${q(box)}/grants/${q(user)}`, { access });
  }

  /** Stop sharing a box with a user. */
  async unshare(box: string, user: string): Promise<void> { await this.json("DELETE", `/boxes/${q(box)}/grants/${q(user)}`); }

  /** The newest sample of each running box the caller sees: CPU (a
   * percentage of one CPU), memory, disk, network, processes. */
  metrics(): Promise<Sample[]> { return this.json("GET", "/metrics"); }

  /** A box's samples since a duration back ("90m", "1h", "2d") or a time
   * (default: the last 15 minutes), oldest first. */
  boxMetrics(box: string, opts: { since?: string } = {}): Promise<BoxMetrics> {
    const qs = opts.since ? `?since=${encodeURIComponent(opts.since)}` : "";
    return this.json("GET", `/boxes/${q(box)}/metrics${qs}`);
  }
  /** Copies path from the box into the local directory (path's base name
   * appears in it), refusing entries that would land outside it. */
  async pullTree(box: string, path: string, local: string): Promise<string[]> {
    return extractTar(await this.pullStream(box, path), local);
  }
  /** pull as a stream (for trees too big to hold in memory). */
  pullStream(box: string, path: string): Promise<Readable> {
    return this.stream("GET", `/boxes/${q(box)}/files?path=${encodeURIComponent(path)}`);
  }

  // --- the desktop's mouse and keyboard ---

  /** Runs actions on a box's desktop, in order (Anthropic's computer-use
   * vocabulary: { action: "left_click", coordinate: [120, 40] }, and
   * windows, launch, wait_idle), and resolves with each one's result and,
   * with screenshot, a PNG (base64) once they are done. With scale,
   * screenshots are shrunk and coordinates are in their pixels. */
  desktopActions(box: string, actions: DesktopAction[], opts: { screenshot?: boolean; scale?: number } = {}): Promise<DesktopActionsResult> {
    return this.json("POST", `/boxes/${q(box)}/desktop/actions`, { actions, ...opts });
  }

  // --- the code interpreter ---

  /** Runs code in the box's code interpreter: a Jupyter kernel that keeps
   * its state between runs (a context; default: the language's own).
   * Resolves with its output, the last expression's value by MIME type,
   * what it displayed (figures: "image/png", base64) and its error, if
   * any; past timeout the kernel is interrupted and keeps its state. */
  runCode(box: string, code: string, opts: { lang?: string; context?: string; timeout?: string | number } = {}): Promise<RunResult> {
    const timeout = opts.timeout === undefined ? undefined : String(opts.timeout);
    return this.json("POST", `/boxes/${q(box)}/run`, { code, lang: opts.lang, context: opts.context, timeout });
  }
  contexts(box: string): Promise<CodeContext[]> { return this.json("GET", `/boxes/${q(box)}/contexts`); }
  createContext(box: string, opts: { name?: string; lang?: string } = {}): Promise<CodeContext> {
    return this.json("POST", `/boxes/${q(box)}/contexts`, opts);
  }
  restartContext(box: string, name: string): Promise<CodeContext> {
    return this.json("POST", `/boxes/${q(box)}/contexts/${q(name)}/restart`);
  }
  async removeContext(box: string, name: string): Promise<void> { await this.json("DELETE", `/boxes/${q(box)}/contexts/${q(name)}`); }

  // --- jobs (detached commands whose output the server keeps) ---

  /** Starts cmd in the box and resolves with the job at once. With
   * stdin, the job's input stays open for sendJobInput. */
  startJob(box: string, cmd: string[], opts: { env?: Record<string, string>; workdir?: string; stdin?: boolean; timeout?: string } = {}): Promise<Job> {
    return this.json("POST", `/boxes/${q(box)}/jobs`, { cmd, ...opts });
  }
  /** Sends a signal ("TERM" by default, "INT", "KILL", "HUP", "QUIT",
   * "USR1", "USR2") to a running job's process group. */
  signalJob(box: string, id: string, signal = "TERM"): Promise<Job> {
    return this.json("POST", `/boxes/${q(box)}/jobs/${q(id)}/signal`, { signal });
  }
  /** Sends data (bytes, text or a stream) to the input of a running job
   * started with stdin; with eof, its input ends after it. */
  async sendJobInput(box: string, id: string, data: string | Uint8Array | Readable, opts: { eof?: boolean } = {}): Promise<JobInput> {
    const b = data instanceof Readable ? data : Buffer.from(data);
    const res = await this.request("POST", `/boxes/${q(box)}/jobs/${q(id)}/input${opts.eof ? "?eof=1" : ""}`, b, "application/octet-stream");
    return JSON.parse(res.body.toString()) as JobInput;
  }
  jobs(box: string): Promise<Job[]> { return this.json("GET", `/boxes/${q(box)}/jobs`); }
  job(box: string, id: string): Promise<Job> { return this.json("GET", `/boxes/${q(box)}/jobs/${q(id)}`); }
  /** The job's output so far; with follow, all of it once the job ends. */
  async jobLog(box: string, id: string, opts: { follow?: boolean } = {}): Promise<Buffer> {
    return (await this.request("GET", `/boxes/${q(box)}/jobs/${q(id)}/log${opts.follow ? "?follow=1" : ""}`)).body;
  }

  // --- exec ---

  /** Runs cmd in the box, feeds it stdin, and resolves with its exit code
   * and output once it ends (or hands each chunk to onStdout/onStderr). */
  async exec(box: string, cmd: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const s = await this.execStream(box, cmd, opts);
    const stdin = opts.stdin ?? "";
    if (stdin.length) s.write(stdin);
    s.end();
    const out: Buffer[] = [], err: Buffer[] = [];
    for await (const c of s) {
      if (c.stream === "stdout") opts.onStdout ? opts.onStdout(c.data) : out.push(c.data);
      else opts.onStderr ? opts.onStderr(c.data) : err.push(c.data);
    }
    return { exitCode: await s.exitCode, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
  }

  /** Starts cmd in the box, attached; resolves once it runs. */
  execStream(box: string, cmd: string[], opts: ExecStreamOptions = {}): Promise<ExecStream> {
    const timeout = opts.timeout === undefined ? undefined : String(opts.timeout);
    const body = Buffer.from(JSON.stringify({ cmd, env: opts.env, workdir: opts.workdir, timeout }));
    return new Promise((resolve, reject) => {
      const req = this.transport().request({
        ...this.target("POST", `/boxes/${q(box)}/exec`),
        headers: {
          ...this.headers("application/json"),
          "Content-Length": body.length,
          Connection: "Upgrade",
          Upgrade: UPGRADE_EXEC,
        },
        agent: false,
      });
      req.on("error", reject);
      req.on("response", (res) => collect(res).then((b) => reject(toError(res.statusCode ?? 0, b)), reject));
      req.on("upgrade", (_res, socket: Socket, head: Buffer) => resolve(new ExecStream(socket, head)));
      req.end(body);
    });
  }

  // --- the rest of the API ---

  whoami(): Promise<Whoami> { return this.json("GET", "/whoami"); }
  /** A new TTL from now ("" or undefined: none). */
  setTTL(name: string, ttl?: string | number): Promise<Box> {
    return this.json("PUT", `/boxes/${q(name)}/ttl`, { ttl: ttl === undefined ? "" : String(ttl) });
  }
  /** Creates a box and returns a handle that `await using` removes at the
   * end of its scope (unless keep() is called). */
  async createHandle(post: CreateBox = {}): Promise<BoxHandle> {
    return new BoxHandle(this, await this.createBox(post));
  }
  listDir(box: string, path: string): Promise<Dir> {
    return this.json("GET", `/boxes/${q(box)}/dir?path=${encodeURIComponent(path)}`);
  }
  /** One regular file's bytes. */
  async readFile(box: string, path: string): Promise<Buffer> {
    return (await this.request("GET", `/boxes/${q(box)}/download?path=${encodeURIComponent(path)}`)).body;
  }
  /** Writes a file in the box (its folder is made). */
  writeFile(box: string, path: string, data: string | Uint8Array): Promise<void> {
    const i = path.lastIndexOf("/");
    return this.pushTar(box, path.slice(0, i) || "/", makeTar({ [path.slice(i + 1)]: data }));
  }
  /** A PNG of the box's desktop now. */
  async screenshot(box: string): Promise<Buffer> {
    return (await this.request("GET", `/boxes/${q(box)}/screenshot`)).body;
  }
  /** Takes a screenshot and keeps it in the box's gallery. */
  takeScreenshot(box: string): Promise<Screenshot> { return this.json("POST", `/boxes/${q(box)}/screenshots`); }
  screenshots(box: string): Promise<Screenshot[]> { return this.json("GET", `/boxes/${q(box)}/screenshots`); }
  /** A single-use URL of the box's desktop page (two minutes). */
  async desktopURL(box: string): Promise<string> {
    const t = await this.json<{ path: string }>("POST", `/boxes/${q(box)}/desktop`);
    return this.url.origin + t.path;
  }
  /** The server's agents, or a box's with whether each has credentials. */
  agents(box?: string): Promise<Agent[] | BoxAgent[]> {
    return this.json("GET", box ? `/boxes/${q(box)}/agents` : "/agents");
  }
  /** Hands an agent a task; it runs as a job (see jobLog). */
  prompt(box: string, task: string, opts: { agent?: string; workdir?: string } = {}): Promise<Job> {
    return this.json("POST", `/boxes/${q(box)}/prompt`, { task, ...opts });
  }
  policies(): Promise<Policy[]> { return this.json("GET", "/policies"); }
  /** A named allowlist policy (as Python's create_policy(name, allow_domains, allow_cidrs)). */
  createPolicy(name: string, opts: Omit<PolicySpec, "name"> = {}): Promise<Policy> { return this.json("POST", "/policies", { ...opts, name }); }
  updatePolicy(name: string, opts: Omit<PolicySpec, "name"> = {}): Promise<Policy> { return this.json("PUT", `/policies/${q(name)}`, { ...opts, name }); }
  async removePolicy(name: string): Promise<void> { await this.json("DELETE", `/policies/${q(name)}`); }
  /** A drive's contents as tar bytes. */
  async backupDrive(name: string): Promise<Buffer> { return (await this.request("GET", `/drives/${q(name)}/archive`)).body; }
  /** backupDrive as a stream. */
  backupDriveStream(name: string): Promise<Readable> { return this.stream("GET", `/drives/${q(name)}/archive`); }
  /** Replaces a drive's contents with a tar's, given whole or as a stream
   * (refused while mounted). */
  async restoreDrive(name: string, tar: Uint8Array | Readable): Promise<void> {
    await this.request("PUT", `/drives/${q(name)}/archive`, body(tar), "application/x-tar");
  }
  secrets(): Promise<Secret[]> { return this.json("GET", "/secrets"); }
  /** Sets a secret. With broker (the hosts its value may be sent to), it
   * is brokered: boxes get a stand-in, never the value; header says where
   * the value goes (x-api-key, bearer, token, a header's name, or
   * "NAME: PREFIX"), limit how many requests a box may send (N/min, ...). */
  async setSecret(name: string, value: string, opts: { shared?: boolean; broker?: string[]; header?: string; limit?: string } = {}): Promise<void> {
    const p = new URLSearchParams();
    if (opts.shared) p.set("shared", "true");
    for (const h of opts.broker ?? []) p.append("broker", h);
    if (opts.header) p.set("header", opts.header);
    if (opts.limit) p.set("limit", opts.limit);
    const qs = p.toString();
    await this.request("PUT", `/secrets/${q(name)}${qs ? "?" + qs : ""}`, Buffer.from(value), "text/plain");
  }
  /** Changes how a secret is brokered, keeping its value (no hosts: not brokered). */
  async setSecretBroker(name: string, broker: SecretBroker): Promise<void> {
    await this.json("PUT", `/secrets/${q(name)}/broker`, broker);
  }
  async removeSecret(name: string): Promise<void> { await this.json("DELETE", `/secrets/${q(name)}`); }
  tokens(): Promise<TokenInfo[]> { return this.json("GET", "/tokens"); }
  /** A new API token; its value is in this answer only. */
  createToken(name: string): Promise<TokenCreated> { return this.json("POST", "/tokens", { name }); }
  async revokeToken(name: string): Promise<void> { await this.json("DELETE", `/tokens/${q(name)}`); }
  keys(): Promise<Key[]> { return this.json("GET", "/keys"); }
  addKey(key: string, name?: string): Promise<Key> { return this.json("POST", "/keys", { key, name }); }
  async removeKey(name: string): Promise<void> { await this.json("DELETE", `/keys/${q(name)}`); }
  users(): Promise<User[]> { return this.json("GET", "/users"); }
  invite(role: "member" | "admin" | "owner" = "member"): Promise<InviteCreated> {
    return this.json("POST", "/users/invites", { role });
  }
  async removeUser(name: string): Promise<void> { await this.json("DELETE", `/users/${q(name)}`); }
  /** A user's quota and use (a member reads their own). */
  quota(user: string): Promise<UserQuota> { return this.json("GET", `/users/${q(user)}/quota`); }
  /** Set a member's quota: each field given (0: no bound); those in `default` go back to the server's (the owner or an admin). */
  setQuota(user: string, quota: QuotaPut): Promise<UserQuota> { return this.json("PUT", `/users/${q(user)}/quota`, quota); }
  /** The audit log's entries the caller may see, oldest first; `since` is
   * a duration back from now ("1h", "2d") or a time; `after` an entry's
   * number, to follow the log. */
  audit(filter: AuditFilter = {}): Promise<AuditEntry[]> {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== undefined && v !== "") p.set(k, String(v));
    return this.json("GET", "/audit?" + p.toString());
  }
  /** Check the audit log's chain, and its end against seen (the head a check answered before, which the caller kept): where it breaks, or what is missing (the owner or an admin). */
  verifyAudit(seen?: AuditMark): Promise<AuditCheck> {
    return this.json("GET", "/audit/verify" + (seen ? "?seen=" + encodeURIComponent(`${seen.seq}:${seen.hash}`) : ""));
  }
  /** The images you may make boxes from: your own, those shared with you (an admin: everyone's). */
  images(): Promise<Image[]> { return this.json("GET", "/images"); }
  /** One image, by NAME[:TAG], OWNER/NAME[:TAG], its id or an id prefix. */
  image(ref: string): Promise<Image> { return this.json("GET", `/images/${q(ref)}`); }
  /** Remove one of your images; boxes made from it keep it until they go. */
  async removeImage(ref: string): Promise<void> { await this.json("DELETE", `/images/${q(ref)}`); }
  /** Set who else may make boxes from an image (every tag of its name). */
  shareImage(ref: string, shares: ImageShares): Promise<Image> { return this.json("PUT", `/images/${q(ref)}/shares`, shares); }
  /** Build an image of yours from a build context (relative names →
   * contents, the Dockerfile among them) in a builder box, whose steps
   * reach what `policy` lets them; `onLog` gets each line of the build's
   * output as it comes. A context the same as the last build's gives that
   * image at once (`cached`). */
  async buildImage(name: string, files: Record<string, string | Uint8Array>, opts: { tag?: string; dockerfile?: string; policy?: string; project?: string; onLog?: (line: string) => void } = {}): Promise<Image> {
    const p = new URLSearchParams({ name });
    for (const k of ["tag", "dockerfile", "policy", "project"] as const) if (opts[k]) p.set(k, opts[k] as string);
    for await (const e of this.sse(`/images?${p.toString()}`, "POST", makeTar(files))) {
      const ev = e.data as BuildEvent;
      if (e.kind === "log") opts.onLog?.(ev.text ?? "");
      else if (e.kind === "image" && ev.image) return ev.image;
      else if (e.kind === "error") throw new PaddockError(200, ev.code ?? "", ev.message ?? "the build failed");
    }
    throw new PaddockError(0, "internal", "the build's stream ended before its result");
  }
  /** The servers boxes are placed on, the control plane's first (the owner's). */
  nodes(): Promise<Node[]> { return this.json("GET", "/nodes"); }
  /** A one-time command that lets another server join (the owner's). */
  nodeJoin(): Promise<NodeJoin> { return this.json("POST", "/nodes/joins"); }
  labelNode(name: string, labels: Record<string, string>): Promise<Node> {
    return this.json("PUT", `/nodes/${q(name)}/labels`, { labels });
  }
  /** Keep a warm pool of the server's own: ready boxes of each type on it (0: none), beside warm_pool's. */
  setNodePool(name: string, pool: Record<string, number>): Promise<Node> {
    return this.json("PUT", `/nodes/${q(name)}/pool`, { pool });
  }
  /** No new box goes to the server, and its boxes move to others. */
  drainNode(name: string): Promise<Drained> { return this.json("POST", `/nodes/${q(name)}/drain`); }
  async undrainNode(name: string): Promise<void> { await this.json("DELETE", `/nodes/${q(name)}/drain`); }
  async removeNode(name: string): Promise<void> { await this.json("DELETE", `/nodes/${q(name)}`); }
  /** Move a box, with the drives it mounts and the boxes in `with` that share them, to another server. */
  moveBox(name: string, node: string, withBoxes: string[] = []): Promise<Box> {
    return this.json("POST", `/boxes/${q(name)}/move`, { node, with: withBoxes });
  }
  /** Move a drive, with the boxes that mount it (all of them, in `with`), to another server. */
  moveDrive(name: string, node: string, withBoxes: string[] = []): Promise<Drive> {
    return this.json("POST", `/drives/${q(name)}/move`, { node, with: withBoxes });
  }
  /** Boxfile projects, their last apply and their drift. */
  projects(): Promise<Project[]> { return this.json("GET", "/projects"); }

  /** The events stream: every object first, then "ready", then each
   * change, for as long as the loop reads (break to stop). With
   * metrics, also a "metrics" event (a Sample) per running box at each
   * sampling pass. */
  async *events(opts: { metrics?: boolean } = {}): AsyncGenerator<{ kind: string; data: unknown }> {
    yield* this.sse(opts.metrics ? "/events?metrics=1" : "/events");
  }

  /** Watches a folder (or file) of a box: yields its events as they
   * happen, first "ready", then created, modified, removed and renamed
   * (with from), each with its path, kind and size; "dropped" says how
   * many this client read too slowly for. Stop by breaking out. */
  async *watchDir(box: string, path: string, opts: { recursive?: boolean } = {}): AsyncGenerator<WatchEvent> {
    const qs = `path=${encodeURIComponent(path)}${opts.recursive ? "&recursive=1" : ""}`;
    for await (const e of this.sse(`/boxes/${q(box)}/watch?${qs}`)) yield e.data as WatchEvent;
  }

  /** A server-sent events stream, as { kind, data } (data parsed). */
  private async *sse(path: string, method = "GET", payload?: Buffer): AsyncGenerator<{ kind: string; data: unknown }> {
    const res: http.IncomingMessage = await new Promise((resolve, reject) => {
      const req = this.transport().request({ ...this.target(method, path), headers: this.headers(payload ? "application/x-tar" : undefined), agent: false }, resolve);
      req.on("error", reject);
      req.end(payload);
    });
    if ((res.statusCode ?? 0) >= 400) throw toError(res.statusCode ?? 0, await collect(res));
    let buf = "", kind = "", data: string[] = [];
    try {
      for await (const chunk of res) {
        buf += chunk.toString();
        let i: number;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i).replace(/\r$/, "");
          buf = buf.slice(i + 1);
          if (line.startsWith("event: ")) kind = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
          else if (line === "" && kind) {
            yield { kind, data: JSON.parse(data.join("\n") || "null") };
            kind = "";
            data = [];
          }
        }
      }
    } finally {
      res.destroy();
    }
  }

  // --- plumbing ---

  private transport(): typeof http | typeof https {
    return this.url.protocol === "https:" ? https : http;
  }

  private target(method: string, path: string): http.RequestOptions {
    return { method, hostname: this.url.hostname, port: this.url.port, path: API + path };
  }

  private headers(contentType?: string): Record<string, string> {
    const h: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (contentType) h["Content-Type"] = contentType;
    return h;
  }

  private request(method: string, path: string, body?: Buffer | Readable, contentType?: string): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = this.transport().request({ ...this.target(method, path), headers: this.headers(contentType), agent: this.agent }, (res) => {
        collect(res).then((b) => {
          const status = res.statusCode ?? 0;
          if (status >= 400) reject(toError(status, b));
          else resolve({ status, body: b });
        }, reject);
      });
      req.on("error", reject);
      if (body instanceof Readable) {
        body.on("error", (e) => req.destroy(e));
        body.pipe(req); // chunked: the length need not be known
      } else {
        req.end(body);
      }
    });
  }

  /** A GET whose answer is read as a stream (errors still reject). */
  private stream(method: string, path: string): Promise<Readable> {
    return new Promise((resolve, reject) => {
      const req = this.transport().request({ ...this.target(method, path), headers: this.headers(), agent: this.agent }, (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 400) collect(res).then((b) => reject(toError(status, b)), reject);
        else resolve(res);
      });
      req.on("error", reject);
      req.end();
    });
  }

  private async json<T>(method: string, path: string, payload?: unknown): Promise<T> {
    const body = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
    const res = await this.request(method, path, body, body ? "application/json" : undefined);
    return (res.body.length ? JSON.parse(res.body.toString()) : undefined) as T;
  }
}

function body(tar: Uint8Array | Readable): Buffer | Readable {
  return tar instanceof Readable ? tar : Buffer.from(tar);
}

function q(name: string): string {
  return encodeURIComponent(name);
}

function frame(kind: number, payload: Uint8Array): Buffer {
  const h = Buffer.alloc(5);
  h[0] = kind;
  h.writeUInt32BE(payload.length, 1);
  return Buffer.concat([h, payload]);
}

function collect(res: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on("data", (c: Buffer) => parts.push(c));
    res.on("end", () => resolve(Buffer.concat(parts)));
    res.on("error", reject);
  });
}

function toError(status: number, body: Buffer): PaddockError {
  try {
    const e = JSON.parse(body.toString());
    return new PaddockError(status, e.error ?? "", e.message ?? "", e.field ?? "");
  } catch {
    return new PaddockError(status, "", body.toString().trim() || `HTTP ${status}`);
  }
}

/** makeTar writes files (relative names → contents) as a ustar archive,
 * with the directories their names need. */
export function makeTar(files: Record<string, string | Uint8Array>): Buffer {
  const blocks: Buffer[] = [];
  const dirs = new Set<string>();
  const entry = (name: string, data: Buffer | null) => {
    const h = Buffer.alloc(512);
    let prefix = "";
    if (Buffer.byteLength(name) > 100) {
      const cut = name.lastIndexOf("/", 155);
      if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new Error(`name too long for a tar header: ${name}`);
      prefix = name.slice(0, cut);
      name = name.slice(cut + 1);
    }
    h.write(name, 0, 100);
    h.write(data ? "0000644\0" : "0000755\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write((data ? data.length : 0).toString(8).padStart(11, "0") + "\0", 124);
    h.write(Math.floor(Date.now() / 1000).toString(8).padStart(11, "0") + "\0", 136);
    h.write("        ", 148);
    h.write(data ? "0" : "5", 156);
    h.write("ustar\0" + "00", 257);
    h.write(prefix, 345, 155);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
    blocks.push(h);
    if (data) {
      blocks.push(data, Buffer.alloc((512 - (data.length % 512)) % 512));
    }
  };
  for (const [raw, contents] of Object.entries(files)) {
    const name = raw.replace(/^\.\//, "");
    if (!name || name.startsWith("/") || name.split("/").includes("..")) {
      throw new Error(`file name ${raw} must be relative and stay inside the target`);
    }
    const parts = name.split("/");
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join("/") + "/";
      if (!dirs.has(d)) {
        dirs.add(d);
        entry(d, null);
      }
    }
    entry(name, Buffer.from(contents));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}
