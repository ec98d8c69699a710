// tarFiles packs browser File objects into a ustar archive (a Blob) for
// an upload: plain files under their own names, mode 0644. The server
// checks it like any pushed archive.
export async function tarFiles(files) {
  const parts = [];
  const te = new TextEncoder();
  for (const f of files) {
    const name = te.encode(f.name);
    if (name.length > 100) throw new Error(`file name too long for an upload (over 100 bytes): ${f.name}`);
    if (f.size > 0o77777777777) throw new Error(`${f.name} is too large for an upload`);
    const h = new Uint8Array(512);
    h.set(name, 0);
    const put = (off, len, s) => h.set(te.encode(s.padStart(len - 1, "0") + "\0"), off);
    put(100, 8, "644");
    put(108, 8, "0");
    put(116, 8, "0");
    put(124, 12, f.size.toString(8));
    put(136, 12, Math.floor(f.lastModified / 1000).toString(8));
    h.fill(0x20, 148, 156); // the checksum counts its own field as spaces
    h[156] = 0x30; // regular file
    h.set(te.encode("ustar\0"), 257);
    h.set(te.encode("00"), 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.set(te.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
    parts.push(h, f);
    const pad = (512 - (f.size % 512)) % 512;
    if (pad) parts.push(new Uint8Array(pad));
  }
  parts.push(new Uint8Array(1024));
  return new Blob(parts, { type: "application/x-tar" });
}
