// The client against a live `memlane serve`: every group of operations, and errors as MemlaneError with the status.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { readFileSync } from "node:fs";

import { MemlaneClient, MemlaneError } from "../src/index.js";
import { startServer } from "./server.js";

/** @type {Awaited<ReturnType<typeof startServer>>} */
let server;
/** @type {MemlaneClient} */
let client;

before(async () => {
  server = await startServer();
  client = new MemlaneClient(server.url, { apiKey: server.key });
});
after(async () => { await server?.stop(); });

test("every operation of the document has a method", () => {
  const doc = JSON.parse(readFileSync(new URL("../../../docs/openapi.json", import.meta.url), "utf8"));
  const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
  const camel = (/** @type {string} */ id) => id.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  const proto = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (MemlaneClient.prototype));
  const missing = ids.map(camel).filter((name) => typeof proto[name] !== "function");
  assert.deepEqual(missing, []);
});

test("add, search with explain, context, get, update, history, delete", async () => {
  const added = await client.addMemories({
    user_id: "ana",
    messages: ["My sister Mel lives in Denver.", "I adopted a beagle called Biscuit."],
  });
  assert.equal(added.items.length, 2);
  assert.ok(added.memories.length > 0, "typed memories extracted");
  const found = await client.search({ user_id: "ana", query: "Where does my sister live?", explain: true });
  assert.ok(found.hits.length > 0);
  const best = found.hits[0];
  const total = Object.values(best.breakdown ?? {}).reduce((sum, part) => sum + part.contribution, 0);
  assert.ok(Math.abs(total - best.score) < 1e-6, "the breakdown sums to the score");
  const ctx = await client.context({ user_id: "ana", query: "Biscuit", token_budget: 200 });
  assert.ok(ctx.text.includes("Biscuit"));
  const id = added.items[1].id;
  assert.equal((await client.getMemory(id, { user_id: "ana" })).text, "I adopted a beagle called Biscuit.");
  const changed = await client.updateMemory(id, { user_id: "ana", text: "I adopted a beagle called Toast." });
  assert.equal(changed.text, "I adopted a beagle called Toast.");
  const events = (await client.getHistory(id, { user_id: "ana" })).map((e) => e.event);
  assert.deepEqual(events.slice(0, 2), ["ADD", "UPDATE"]);
  const listed = await client.listMemories({ user_id: "ana", limit: 100 });
  assert.ok(listed.some((m) => m.id === id));
  const typed = await client.queryMemories({ user_id: "ana", filters: { kind: ["fact", "relation"] } });
  assert.ok(typed.length > 0 && typed.every((m) => m.kind === "fact" || m.kind === "relation"));
  const first = await client.timeline({ user_id: "ana", limit: 1 });
  assert.equal(first.items.length, 1);
  assert.ok(first.next, "more than one memory: a next page");
  const second = await client.timeline({ user_id: "ana", limit: 1, after: first.next });
  assert.equal(second.items.length, 1);
  assert.notEqual(second.items[0].id, first.items[0].id);
  const facts = await client.timeline({ user_id: "ana", kind: "fact" });
  assert.ok(facts.items.length > 0 && facts.items.every((m) => m.kind === "fact"));
  await assert.rejects(client.timeline({ user_id: "ana", after: "not a cursor" }),
    (err) => err instanceof MemlaneError && err.status === 400);
  await client.recordFeedback({ user_id: "ana", memory_id: best.memory.id, query: best.query ?? "", useful: true });
  const gone = await client.deleteMemory(id, { user_id: "ana" });
  assert.equal(gone.deleted?.[0], id);
  await assert.rejects(client.getMemory(id, { user_id: "ana" }), (err) => err instanceof MemlaneError && err.status === 404);
});

test("ask, graph, relations, a queued job and what it wrote", async () => {
  const queued = await client.addMemories({ user_id: "bo", messages: ["My brother Sam lives in Oslo."], async: true });
  assert.ok(queued.job_id);
  let job = await client.getJob(queued.job_id, { user_id: "bo" });
  for (let i = 0; i < 600 && job.state !== "done" && job.state !== "failed"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    job = await client.getJob(queued.job_id, { user_id: "bo" });
  }
  assert.equal(job.state, "done");
  const result = await client.getJobResult(queued.job_id);
  assert.equal(result.job.id, queued.job_id);
  assert.ok(result.memories && result.memories.length > 0);
  const answer = await client.ask({ user_id: "bo", question: "Where does Sam live?" });
  assert.ok(answer.hits && answer.hits.length > 0);
  const graph = await client.getGraph({ user_id: "bo", entity: "Sam" });
  assert.equal(graph.node.display, "Sam");
  const relations = await client.listRelations({ user_id: "bo", entity: "Sam" });
  assert.ok(relations.some((r) => r.predicate === "lives_in" && r.object === "oslo"));
  assert.deepEqual(await client.listArchived({ user_id: "bo" }), []);
  assert.deepEqual(await client.forgetMemories({ user_id: "bo" }), []);
  assert.deepEqual(await client.retryJobs({ user_id: "bo" }), { count: 0 });
});

test("export and import JSON Lines", async () => {
  await client.addMemories({ user_id: "cy", messages: ["I keep bees."], infer: false });
  const jsonl = await client.exportMemories({ user_id: "cy" });
  assert.equal(jsonl.trim().split("\n").length, 2);
  assert.equal((await client.deleteAllMemories({ user_id: "cy" })).count, 1);
  const imported = await client.importMemories(jsonl, { user_id: "cy" });
  assert.equal(imported.imported, 1);
  assert.equal((await client.listMemories({ user_id: "cy" }))[0].text, "I keep bees.");
});

test("keys: create, use, list, revoke", async () => {
  const made = await client.createKey({ scopes: ["read"], name: "reader" });
  const reader = new MemlaneClient(server.url, { apiKey: made.secret });
  assert.deepEqual(await reader.listMemories({ user_id: "nobody" }), []);
  await assert.rejects(reader.addMemories({ user_id: "x", messages: ["hi"] }), (err) => err instanceof MemlaneError && err.status === 403);
  assert.ok((await client.listKeys()).some((k) => k.prefix === made.prefix));
  const revoked = await client.revokeKey(made.prefix);
  assert.ok(revoked.revoked_at);
  await assert.rejects(reader.listMemories({ user_id: "nobody" }), (err) => err instanceof MemlaneError && err.status === 401);
});

test("bad input is a 4xx MemlaneError naming the field", async () => {
  await assert.rejects(
    client.search({ user_id: "ana", query: "x", top_k: 0 }),
    (err) => err instanceof MemlaneError && err.status >= 400 && err.status < 500 && /top_k/.test(err.detail),
  );
});
