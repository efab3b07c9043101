// Start a real `memlane serve` on 127.0.0.1 for the tests: a fresh data dir, a free port, the hash embedder (fast,
// no model download), no rate limit; the admin key is read from its first start's output.
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** @returns {Promise<{ url: string, key: string, stop: () => Promise<void> }>} */
export async function startServer() {
  const python = process.env.MEMLANE_PYTHON || "python3";
  const home = mkdtempSync(join(tmpdir(), "memlane-ts-"));
  const port = await freePort();
  const logPath = join(home, "serve.out");
  const log = openSync(logPath, "w");
  const args = ["-c", "from memlane.cli import main; main()", "serve", "--port", String(port), "--data-dir", home,
    "--db", join(home, "memlane.db"), "--embedder", "hash", "--rate", "0"];
  const child = spawn(python, args, { stdio: ["ignore", log, log], env: { ...process.env, MEMLANE_HOME: home } });
  let exited = false;
  child.on("exit", () => { exited = true; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`memlane serve exited early:\n${readFileSync(logPath, "utf8")}`);
    if (Date.now() > deadline) throw new Error(`memlane serve not ready in time:\n${readFileSync(logPath, "utf8")}`);
    try {
      if ((await fetch(`${url}/ready`)).status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const match = readFileSync(logPath, "utf8").match(/ml_[0-9a-f]{12}_[0-9a-f]{64}/);
  if (!match) throw new Error("memlane serve printed no admin key");
  const stop = async () => {
    if (!exited) {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
    }
    rmSync(home, { recursive: true, force: true });
  };
  return { url, key: match[0], stop };
}
