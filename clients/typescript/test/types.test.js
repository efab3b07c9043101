// The committed types are what the generators make from the current OpenAPI document, and the client type-checks.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (/** @type {string} */ rel) => join(root, "node_modules", rel);

/** @param {string[]} args */
function run(args) {
  const out = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8" });
  assert.equal(out.status, 0, `${args.join(" ")}\n${out.stdout}\n${out.stderr}`);
}

test("types/schema.d.ts is openapi-typescript's output for docs/openapi.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "memlane-types-"));
  try {
    const fresh = join(dir, "schema.d.ts");
    run([bin("openapi-typescript/bin/cli.js"), "../../docs/openapi.json", "--default-non-nullable", "false", "-o", fresh]);
    const committed = readFileSync(join(root, "types", "schema.d.ts"), "utf8");
    assert.ok(committed === readFileSync(fresh, "utf8"), "types/schema.d.ts is stale: run `npm run generate`");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("types/index.d.ts is tsc's declaration of src/index.js (which type-checks against the schema)", () => {
  const dir = mkdtempSync(join(tmpdir(), "memlane-decl-"));
  try {
    run([bin("typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", dir]);
    const committed = readFileSync(join(root, "types", "index.d.ts"), "utf8");
    assert.ok(committed === readFileSync(join(dir, "index.d.ts"), "utf8"), "types/index.d.ts is stale: run `npm run generate`");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
