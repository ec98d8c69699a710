// Compiled (not run) by the e2e SDK test: the package's types as a user
// meets them, from the built declarations.
import { Client, type Box, type ExecChunk, type Job } from "../../dist/index.js";

export async function use(c: Client): Promise<number> {
  await using box = await c.createHandle({ type: "small", ttl: 60 });
  const b: Box = box.data;
  const code: number = (await box.exec(["true"], { timeout: "10s" })).exitCode;
  const s = await box.execStream(["cat"]);
  s.write("x");
  s.end();
  for await (const chunk of s) {
    const c2: ExecChunk = chunk;
    void c2.data.length;
  }
  const jobs: Job[] = await c.jobs(b.name);
  // @ts-expect-error: a Box has no such field, so this must not compile.
  void b.no_such_field;
  return code + jobs.length + (b.mounts?.length ?? 0);
}
