/**
 * Tar archives of local trees, both ways, with no dependencies: packDir
 * streams a directory as an archive (one file in memory at a time), and
 * extractTar unpacks one into a directory, refusing whatever would land
 * outside it (absolute names, "..", links out of it, devices), as the CLI
 * does. Long names use PAX headers.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";

const BLOCK = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, type: string, size: number, mode: number, mtime: number, link = ""): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100);
  h.write(octal(mode & 0o7777, 8), 100);
  h.write(octal(0, 8), 108);
  h.write(octal(0, 8), 116);
  h.write(octal(size, 12), 124);
  h.write(octal(Math.floor(mtime), 12), 136);
  h.write("        ", 148);
  h.write(type, 156);
  h.write(link, 157, 100);
  h.write("ustar\0" + "00", 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
  return h;
}

function pad(n: number): Buffer {
  return Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);
}

/** A PAX record set for names or link targets ustar cannot hold. */
function pax(name: string, link: string): Buffer[] {
  const recs: string[] = [];
  const rec = (k: string, v: string) => {
    const body = ` ${k}=${v}\n`;
    const b = Buffer.byteLength(body);
    // The length counts its own digits.
    let n = b + String(b).length;
    while (b + String(n).length !== n) n = b + String(n).length;
    recs.push(`${n}${body}`);
  };
  if (Buffer.byteLength(name) > 99) rec("path", name);
  if (Buffer.byteLength(link) > 99) rec("linkpath", link);
  if (!recs.length) return [];
  const data = Buffer.from(recs.join(""));
  return [header("PaxHeader", "x", data.length, 0o644, 0), data, pad(data.length)];
}

/** The archive of a local directory's contents (names relative to it),
 * or of one file (its base name), as a stream. */
export function packDir(local: string): Readable {
  async function* gen(): AsyncGenerator<Buffer> {
    const st = await fs.lstat(local);
    const roots: [string, string][] = st.isDirectory()
      ? (await fs.readdir(local)).sort().map((e) => [path.join(local, e), e])
      : [[local, path.basename(local)]];
    const walk = async function* (abs: string, rel: string): AsyncGenerator<Buffer> {
      const s = await fs.lstat(abs);
      const mtime = s.mtimeMs / 1000;
      if (s.isDirectory()) {
        yield* pax(rel + "/", "");
        yield header((rel + "/").slice(-100), "5", 0, s.mode, mtime);
        for (const e of (await fs.readdir(abs)).sort()) yield* walk(path.join(abs, e), `${rel}/${e}`);
      } else if (s.isSymbolicLink()) {
        const target = await fs.readlink(abs);
        yield* pax(rel, target);
        yield header(rel.slice(-100), "2", 0, s.mode, mtime, target.slice(0, 100));
      } else if (s.isFile()) {
        const data = await fs.readFile(abs);
        yield* pax(rel, "");
        yield header(rel.slice(-100), "0", data.length, s.mode, mtime);
        yield data;
        yield pad(data.length);
      }
      // sockets, FIFOs and devices are left out
    };
    for (const [abs, rel] of roots) yield* walk(abs, rel);
    yield Buffer.alloc(2 * BLOCK);
  }
  return Readable.from(gen());
}

/** Reads exactly n bytes from an async byte source, or fewer at its end. */
class ByteReader {
  private buf = Buffer.alloc(0);
  private done = false;
  constructor(private readonly it: AsyncIterator<Buffer>) {}
  async read(n: number): Promise<Buffer> {
    while (this.buf.length < n && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else this.buf = this.buf.length ? Buffer.concat([this.buf, r.value]) : Buffer.from(r.value);
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(out.length);
    return out;
  }
}

function field(h: Buffer, off: number, len: number): string {
  const s = h.subarray(off, off + len);
  const z = s.indexOf(0);
  return (z < 0 ? s : s.subarray(0, z)).toString();
}

/** Unpacks an archive into dest (made if need be). An entry whose name is
 * absolute or climbs out with "..", a link whose target would resolve
 * outside dest, a hard link, or a device refuses the archive: it rejects
 * at that entry, having written only entries before it, all inside. */
export async function extractTar(src: Readable, dest: string): Promise<string[]> {
  const root = path.resolve(dest);
  await fs.mkdir(root, { recursive: true });
  const r = new ByteReader(src[Symbol.asyncIterator]());
  const written: string[] = [];
  let paxName = "", paxLink = "";
  for (;;) {
    const h = await r.read(BLOCK);
    if (h.length < BLOCK || h.every((b) => b === 0)) return written;
    const size = parseInt(field(h, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(h[156] || 48);
    const data = await r.read(size);
    await r.read((BLOCK - (size % BLOCK)) % BLOCK);
    if (type === "x") {
      for (const line of data.toString().split("\n")) {
        const m = /^\d+ (path|linkpath)=(.*)$/.exec(line);
        if (m) m[1] === "path" ? (paxName = m[2]) : (paxLink = m[2]);
      }
      continue;
    }
    if (type === "g") continue;
    const prefix = field(h, 345, 155);
    let name = paxName || (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    const link = paxLink || field(h, 157, 100);
    paxName = paxLink = "";
    name = name.replace(/\/+$/, "");
    if (!name || name === ".") continue;
    if (path.isAbsolute(name) || name.split("/").includes("..")) {
      throw new Error(`the archive's entry ${JSON.stringify(name)} would land outside ${dest}`);
    }
    const target = path.join(root, name);
    const mode = parseInt(field(h, 100, 8).trim() || "644", 8) & 0o777;
    await fs.mkdir(path.dirname(target), { recursive: true });
    if ((await realInside(root, path.dirname(target))) === false) {
      throw new Error(`the archive's entry ${JSON.stringify(name)} goes through a link out of ${dest}`);
    }
    switch (type) {
      case "0":
      case "\0":
      case "7":
        await fs.writeFile(target, data, { mode });
        break;
      case "5":
        await fs.mkdir(target, { recursive: true, mode: mode | 0o700 });
        break;
      case "2": {
        const resolved = path.resolve(path.dirname(target), link);
        if (path.isAbsolute(link) || (resolved !== root && !resolved.startsWith(root + path.sep))) {
          throw new Error(`the archive's link ${JSON.stringify(name)} points out of ${dest} (to ${link})`);
        }
        await fs.symlink(link, target);
        break;
      }
      default:
        throw new Error(`the archive's entry ${JSON.stringify(name)} is of a kind not extracted (type ${JSON.stringify(type)}): only files, folders and links inside`);
    }
    written.push(name);
  }
}

/** Whether dir, with its links resolved, is still inside root. */
async function realInside(root: string, dir: string): Promise<boolean> {
  const realRoot = await fs.realpath(root);
  const real = await fs.realpath(dir);
  return real === realRoot || real.startsWith(realRoot + path.sep);
}
