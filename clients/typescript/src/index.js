// A typed fetch client for the memlane REST API. No runtime dependency: it needs only `fetch` (Node 18+, browsers,
// Deno, Bun). The types come from ../types/schema.d.ts, generated from the server's OpenAPI document (npm run generate).

/** @typedef {import("../types/schema.js").operations} Operations */
/** @typedef {import("../types/schema.js").components["schemas"]} Schemas */
/**
 * The JSON body an operation takes.
 * @template {keyof Operations} K
 * @typedef {Operations[K] extends { requestBody: { content: { "application/json": infer B } } } ? B : never} Body
 */
/**
 * The query parameters an operation takes.
 * @template {keyof Operations} K
 * @typedef {Operations[K] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never} Query
 */
/**
 * What an operation answers with on success.
 * @template {keyof Operations} K
 * @typedef {Operations[K] extends { responses: { 200: { content: { "application/json": infer R } } } } ? R
 *   : Operations[K] extends { responses: { 201: { content: { "application/json": infer R } } } } ? R : never} Result
 */

/** An error answer of the server: `status` is the HTTP status, `detail` its message, `body` the parsed body. */
export class MemlaneError extends Error {
  /**
   * @param {number} status
   * @param {string} detail
   * @param {unknown} body
   */
  constructor(status, detail, body) {
    super(`memlane: HTTP ${status}: ${detail}`);
    this.name = "MemlaneError";
    this.status = status;
    this.detail = detail;
    this.body = body;
  }
}

/** @param {unknown} body @param {string} raw @returns {string} */
function detailOf(body, raw) {
  if (body && typeof body === "object" && "detail" in body) {
    const detail = /** @type {{ detail: unknown }} */ (body).detail;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail.map((e) => (e && typeof e === "object" && "msg" in e ? `${(e.loc ?? []).join(".")}: ${e.msg}` : String(e))).join("; ");
    }
  }
  return raw.slice(0, 500) || "no detail";
}

/** @param {string} id */
const seg = (id) => encodeURIComponent(id);

/** A memlane server. Each method is one operation of the API, named after its operation id. */
export class MemlaneClient {
  /** @type {string} */
  #base;
  /** @type {Record<string, string>} */
  #headers;
  /** @type {typeof fetch} */
  #fetch;

  /**
   * @param {string} baseUrl e.g. "http://127.0.0.1:8000"
   * @param {{ apiKey?: string, fetch?: typeof fetch }} [options]
   */
  constructor(baseUrl, options = {}) {
    this.#base = baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`;
    this.#headers = {};
    if (options.apiKey) this.#headers.Authorization = `Bearer ${options.apiKey}`;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * One request; the parsed JSON answer (or the text, for JSON Lines).
   * @param {string} method
   * @param {string} path
   * @param {{ query?: object, json?: unknown, text?: string }} [parts]
   * @returns {Promise<{ response: Response, raw: string }>}
   */
  async request(method, path, parts = {}) {
    const url = new URL(path.replace(/^\//, ""), this.#base);
    for (const [key, value] of Object.entries(parts.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    /** @type {Record<string, string>} */
    const headers = { ...this.#headers };
    let body;
    if (parts.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(parts.json);
    } else if (parts.text !== undefined) {
      headers["Content-Type"] = "application/x-ndjson";
      body = parts.text;
    }
    const response = await this.#fetch(url, { method, headers, body });
    const raw = await response.text();
    if (!response.ok) {
      let parsed = raw;
      try {
        parsed = JSON.parse(raw);
      } catch {
        // not JSON: keep the text
      }
      throw new MemlaneError(response.status, detailOf(parsed, raw), parsed);
    }
    return { response, raw };
  }

  /** @param {string} method @param {string} path @param {{ query?: object, json?: unknown, text?: string }} [parts] */
  async #json(method, path, parts) {
    const { raw } = await this.request(method, path, parts);
    return raw ? JSON.parse(raw) : undefined;
  }

  // -- memories ------------------------------------------------------------------------------------------------------
  /** Store messages and extract typed memories (`async: true` queues that and names the job).
   * @param {Body<"add_memories">} body @returns {Promise<Result<"add_memories">>} */
  addMemories(body) { return this.#json("POST", "/v1/memories", { json: body }); }

  /** Store documents or notes, each a memory of its own (no session, no neighbours), scored by their best passage.
   * @param {Body<"add_documents">} body @returns {Promise<Result<"add_documents">>} */
  addDocuments(body) { return this.#json("POST", "/v1/documents", { json: body }); }

  /** The memories that best answer a query (`explain: true` keeps each hit's breakdown).
   * @param {Body<"search">} body @returns {Promise<Result<"search">>} */
  search(body) { return this.#json("POST", "/v1/search", { json: body }); }

  /** Memories fenced as quoted data for a prompt, within a token budget.
   * @param {Body<"context">} body @returns {Promise<Result<"context">>} */
  context(body) { return this.#json("POST", "/v1/context", { json: body }); }

  /** Answer a question from a user's memories.
   * @param {Body<"ask">} body @returns {Promise<Result<"ask">>} */
  ask(body) { return this.#json("POST", "/v1/ask", { json: body }); }

  /** @param {string} memoryId @param {Query<"get_memory">} query @returns {Promise<Result<"get_memory">>} */
  getMemory(memoryId, query) { return this.#json("GET", `/v1/memories/${seg(memoryId)}`, { query }); }

  /** @param {Query<"list_memories">} query @returns {Promise<Result<"list_memories">>} */
  listMemories(query) { return this.#json("GET", "/v1/memories", { query }); }

  /** A user's memories matching any of the library's filters (kind, role, speaker, since, until, metadata, ...).
   * @param {Body<"query_memories">} body @returns {Promise<Result<"query_memories">>} */
  queryMemories(body) { return this.#json("POST", "/v1/memories/query", { json: body }); }

  /** One page of a user's memories newest first by when they happened; pass the page's `next` as `after`.
   * @param {Query<"timeline">} query @returns {Promise<Result<"timeline">>} */
  timeline(query) { return this.#json("GET", "/v1/timeline", { query }); }

  /** @param {string} memoryId @param {Body<"update_memory">} body @returns {Promise<Result<"update_memory">>} */
  updateMemory(memoryId, body) { return this.#json("PATCH", `/v1/memories/${seg(memoryId)}`, { json: body }); }

  /** @param {string} memoryId @param {Query<"delete_memory">} query @returns {Promise<Result<"delete_memory">>} */
  deleteMemory(memoryId, query) { return this.#json("DELETE", `/v1/memories/${seg(memoryId)}`, { query }); }

  /** @param {Query<"delete_all_memories">} query @returns {Promise<Result<"delete_all_memories">>} */
  deleteAllMemories(query) { return this.#json("DELETE", "/v1/memories", { query }); }

  /** @param {string} memoryId @param {Query<"get_history">} query @returns {Promise<Result<"get_history">>} */
  getHistory(memoryId, query) { return this.#json("GET", `/v1/memories/${seg(memoryId)}/history`, { query }); }

  /** @param {Body<"record_feedback">} body @returns {Promise<void>} */
  async recordFeedback(body) { await this.request("POST", "/v1/feedback", { json: body }); }

  /** @param {Body<"observe">} body @returns {Promise<Result<"observe">>} */
  observe(body) { return this.#json("POST", "/v1/observations", { json: body }); }

  /** @param {Body<"detect_routines">} body @returns {Promise<Result<"detect_routines">>} */
  detectRoutines(body) { return this.#json("POST", "/v1/routines", { json: body }); }

  // -- graph and archive ---------------------------------------------------------------------------------------------
  /** @param {Query<"get_graph">} query @returns {Promise<Result<"get_graph">>} */
  getGraph(query) { return this.#json("GET", "/v1/graph", { query }); }

  /** @param {Query<"list_relations">} query @returns {Promise<Result<"list_relations">>} */
  listRelations(query) { return this.#json("GET", "/v1/relations", { query }); }

  /** @param {Query<"list_archived">} query @returns {Promise<Result<"list_archived">>} */
  listArchived(query) { return this.#json("GET", "/v1/archive", { query }); }

  /** @param {string} memoryId @param {Body<"restore_memory">} body @returns {Promise<Result<"restore_memory">>} */
  restoreMemory(memoryId, body) { return this.#json("POST", `/v1/archive/${seg(memoryId)}/restore`, { json: body }); }

  /** Enforce the configured capacity now; the ids evicted.
   * @param {Body<"forget_memories">} body @returns {Promise<Result<"forget_memories">>} */
  forgetMemories(body) { return this.#json("POST", "/v1/forget", { json: body }); }

  /** @param {Body<"merge_entities">} body @returns {Promise<Result<"merge_entities">>} */
  mergeEntities(body) { return this.#json("POST", "/v1/entities/merge", { json: body }); }

  /** @param {Body<"split_entity">} body @returns {Promise<Result<"split_entity">>} */
  splitEntity(body) { return this.#json("POST", "/v1/entities/split", { json: body }); }

  /** @param {Body<"retry_jobs">} body @returns {Promise<Result<"retry_jobs">>} */
  retryJobs(body) { return this.#json("POST", "/v1/jobs/retry", { json: body }); }

  // -- transfer ------------------------------------------------------------------------------------------------------
  /** One user's memories as JSON Lines (without `user_id`: the tenant's, admin keys).
   * @param {Query<"export_memories">} [query] @returns {Promise<string>} */
  async exportMemories(query) { return (await this.request("GET", "/v1/export", { query })).raw; }

  /** Load JSON Lines into one user, all or nothing.
   * @param {string} jsonl @param {Query<"import_memories">} [query] @returns {Promise<Result<"import_memories">>} */
  importMemories(jsonl, query) { return this.#json("POST", "/v1/import", { query, text: jsonl }); }

  // -- jobs ----------------------------------------------------------------------------------------------------------
  /** @param {Query<"list_jobs">} query @returns {Promise<Result<"list_jobs">>} */
  listJobs(query) { return this.#json("GET", "/v1/jobs", { query }); }

  /** @param {string} jobId @param {Query<"get_job">} query @returns {Promise<Result<"get_job">>} */
  getJob(jobId, query) { return this.#json("GET", `/v1/jobs/${seg(jobId)}`, { query }); }

  /** A job of the key's tenant by its id alone, and the memories it wrote.
   * @param {string} jobId @returns {Promise<Result<"get_job_result">>} */
  getJobResult(jobId) { return this.#json("GET", `/v1/jobs/${seg(jobId)}/result`); }

  /** @param {Query<"get_stats">} query @returns {Promise<Result<"get_stats">>} */
  getStats(query) { return this.#json("GET", "/v1/stats", { query }); }

  // -- keys and operations (admin keys) ------------------------------------------------------------------------------
  /** @returns {Promise<Result<"list_keys">>} */
  listKeys() { return this.#json("GET", "/admin/keys"); }

  /** @param {Body<"create_key">} body @returns {Promise<Result<"create_key">>} */
  createKey(body) { return this.#json("POST", "/admin/keys", { json: body }); }

  /** @param {string} prefix @returns {Promise<Result<"revoke_key">>} */
  revokeKey(prefix) { return this.#json("DELETE", `/admin/keys/${seg(prefix)}`); }

  /** @param {Query<"list_flagged">} query @returns {Promise<Result<"list_flagged">>} */
  listFlagged(query) { return this.#json("GET", "/admin/flagged", { query }); }

  /** @param {Query<"get_audit_log">} [query] @returns {Promise<Result<"get_audit_log">>} */
  getAuditLog(query) { return this.#json("GET", "/admin/audit", { query }); }

  /** @returns {Promise<string>} Prometheus text */
  async metrics() { return (await this.request("GET", "/metrics")).raw; }

  /** @returns {Promise<Result<"health">>} */
  health() { return this.#json("GET", "/health"); }

  /** @returns {Promise<Result<"ready">>} */
  ready() { return this.#json("GET", "/ready"); }
}
