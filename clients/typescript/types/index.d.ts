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
    constructor(status: number, detail: string, body: unknown);
    status: number;
    detail: string;
    body: unknown;
}
/** A memlane server. Each method is one operation of the API, named after its operation id. */
export class MemlaneClient {
    /**
     * @param {string} baseUrl e.g. "http://127.0.0.1:8000"
     * @param {{ apiKey?: string, fetch?: typeof fetch }} [options]
     */
    constructor(baseUrl: string, options?: {
        apiKey?: string;
        fetch?: typeof fetch;
    });
    /**
     * One request; the parsed JSON answer (or the text, for JSON Lines).
     * @param {string} method
     * @param {string} path
     * @param {{ query?: object, json?: unknown, text?: string }} [parts]
     * @returns {Promise<{ response: Response, raw: string }>}
     */
    request(method: string, path: string, parts?: {
        query?: object;
        json?: unknown;
        text?: string;
    }): Promise<{
        response: Response;
        raw: string;
    }>;
    /** Store messages and extract typed memories (`async: true` queues that and names the job).
     * @param {Body<"add_memories">} body @returns {Promise<Result<"add_memories">>} */
    addMemories(body: Body<"add_memories">): Promise<Result<"add_memories">>;
    /** Store documents or notes, each a memory of its own (no session, no neighbours), scored by their best passage.
     * @param {Body<"add_documents">} body @returns {Promise<Result<"add_documents">>} */
    addDocuments(body: Body<"add_documents">): Promise<Result<"add_documents">>;
    /** The memories that best answer a query (`explain: true` keeps each hit's breakdown).
     * @param {Body<"search">} body @returns {Promise<Result<"search">>} */
    search(body: Body<"search">): Promise<Result<"search">>;
    /** Memories fenced as quoted data for a prompt, within a token budget.
     * @param {Body<"context">} body @returns {Promise<Result<"context">>} */
    context(body: Body<"context">): Promise<Result<"context">>;
    /** Answer a question from a user's memories.
     * @param {Body<"ask">} body @returns {Promise<Result<"ask">>} */
    ask(body: Body<"ask">): Promise<Result<"ask">>;
    /** @param {string} memoryId @param {Query<"get_memory">} query @returns {Promise<Result<"get_memory">>} */
    getMemory(memoryId: string, query: Query<"get_memory">): Promise<Result<"get_memory">>;
    /** @param {Query<"list_memories">} query @returns {Promise<Result<"list_memories">>} */
    listMemories(query: Query<"list_memories">): Promise<Result<"list_memories">>;
    /** A user's memories matching any of the library's filters (kind, role, speaker, since, until, metadata, ...).
     * @param {Body<"query_memories">} body @returns {Promise<Result<"query_memories">>} */
    queryMemories(body: Body<"query_memories">): Promise<Result<"query_memories">>;
    /** One page of a user's memories newest first by when they happened; pass the page's `next` as `after`.
     * @param {Query<"timeline">} query @returns {Promise<Result<"timeline">>} */
    timeline(query: Query<"timeline">): Promise<Result<"timeline">>;
    /** @param {string} memoryId @param {Body<"update_memory">} body @returns {Promise<Result<"update_memory">>} */
    updateMemory(memoryId: string, body: Body<"update_memory">): Promise<Result<"update_memory">>;
    /** @param {string} memoryId @param {Query<"delete_memory">} query @returns {Promise<Result<"delete_memory">>} */
    deleteMemory(memoryId: string, query: Query<"delete_memory">): Promise<Result<"delete_memory">>;
    /** @param {Query<"delete_all_memories">} query @returns {Promise<Result<"delete_all_memories">>} */
    deleteAllMemories(query: Query<"delete_all_memories">): Promise<Result<"delete_all_memories">>;
    /** @param {string} memoryId @param {Query<"get_history">} query @returns {Promise<Result<"get_history">>} */
    getHistory(memoryId: string, query: Query<"get_history">): Promise<Result<"get_history">>;
    /** @param {Body<"record_feedback">} body @returns {Promise<void>} */
    recordFeedback(body: Body<"record_feedback">): Promise<void>;
    /** @param {Body<"observe">} body @returns {Promise<Result<"observe">>} */
    observe(body: Body<"observe">): Promise<Result<"observe">>;
    /** @param {Body<"detect_routines">} body @returns {Promise<Result<"detect_routines">>} */
    detectRoutines(body: Body<"detect_routines">): Promise<Result<"detect_routines">>;
    /** @param {Query<"get_graph">} query @returns {Promise<Result<"get_graph">>} */
    getGraph(query: Query<"get_graph">): Promise<Result<"get_graph">>;
    /** @param {Query<"list_relations">} query @returns {Promise<Result<"list_relations">>} */
    listRelations(query: Query<"list_relations">): Promise<Result<"list_relations">>;
    /** @param {Query<"list_archived">} query @returns {Promise<Result<"list_archived">>} */
    listArchived(query: Query<"list_archived">): Promise<Result<"list_archived">>;
    /** @param {string} memoryId @param {Body<"restore_memory">} body @returns {Promise<Result<"restore_memory">>} */
    restoreMemory(memoryId: string, body: Body<"restore_memory">): Promise<Result<"restore_memory">>;
    /** Enforce the configured capacity now; the ids evicted.
     * @param {Body<"forget_memories">} body @returns {Promise<Result<"forget_memories">>} */
    forgetMemories(body: Body<"forget_memories">): Promise<Result<"forget_memories">>;
    /** @param {Body<"merge_entities">} body @returns {Promise<Result<"merge_entities">>} */
    mergeEntities(body: Body<"merge_entities">): Promise<Result<"merge_entities">>;
    /** @param {Body<"split_entity">} body @returns {Promise<Result<"split_entity">>} */
    splitEntity(body: Body<"split_entity">): Promise<Result<"split_entity">>;
    /** @param {Body<"retry_jobs">} body @returns {Promise<Result<"retry_jobs">>} */
    retryJobs(body: Body<"retry_jobs">): Promise<Result<"retry_jobs">>;
    /** One user's memories as JSON Lines (without `user_id`: the tenant's, admin keys).
     * @param {Query<"export_memories">} [query] @returns {Promise<string>} */
    exportMemories(query?: Query<"export_memories">): Promise<string>;
    /** Load JSON Lines into one user, all or nothing.
     * @param {string} jsonl @param {Query<"import_memories">} [query] @returns {Promise<Result<"import_memories">>} */
    importMemories(jsonl: string, query?: Query<"import_memories">): Promise<Result<"import_memories">>;
    /** @param {Query<"list_jobs">} query @returns {Promise<Result<"list_jobs">>} */
    listJobs(query: Query<"list_jobs">): Promise<Result<"list_jobs">>;
    /** @param {string} jobId @param {Query<"get_job">} query @returns {Promise<Result<"get_job">>} */
    getJob(jobId: string, query: Query<"get_job">): Promise<Result<"get_job">>;
    /** A job of the key's tenant by its id alone, and the memories it wrote.
     * @param {string} jobId @returns {Promise<Result<"get_job_result">>} */
    getJobResult(jobId: string): Promise<Result<"get_job_result">>;
    /** @param {Query<"get_stats">} query @returns {Promise<Result<"get_stats">>} */
    getStats(query: Query<"get_stats">): Promise<Result<"get_stats">>;
    /** @returns {Promise<Result<"list_keys">>} */
    listKeys(): Promise<Result<"list_keys">>;
    /** @param {Body<"create_key">} body @returns {Promise<Result<"create_key">>} */
    createKey(body: Body<"create_key">): Promise<Result<"create_key">>;
    /** @param {string} prefix @returns {Promise<Result<"revoke_key">>} */
    revokeKey(prefix: string): Promise<Result<"revoke_key">>;
    /** @param {Query<"list_flagged">} query @returns {Promise<Result<"list_flagged">>} */
    listFlagged(query: Query<"list_flagged">): Promise<Result<"list_flagged">>;
    /** @param {Query<"get_audit_log">} [query] @returns {Promise<Result<"get_audit_log">>} */
    getAuditLog(query?: Query<"get_audit_log">): Promise<Result<"get_audit_log">>;
    /** @returns {Promise<string>} Prometheus text */
    metrics(): Promise<string>;
    /** @returns {Promise<Result<"health">>} */
    health(): Promise<Result<"health">>;
    /** @returns {Promise<Result<"ready">>} */
    ready(): Promise<Result<"ready">>;
    #private;
}
export type Operations = import("../types/schema.js").operations;
export type Schemas = import("../types/schema.js").components["schemas"];
/**
 * The JSON body an operation takes.
 */
export type Body<K extends keyof Operations> = Operations[K] extends {
    requestBody: {
        content: {
            "application/json": infer B;
        };
    };
} ? B : never;
/**
 * The query parameters an operation takes.
 */
export type Query<K extends keyof Operations> = Operations[K] extends {
    parameters: {
        query?: infer Q;
    };
} ? NonNullable<Q> : never;
/**
 * What an operation answers with on success.
 */
export type Result<K extends keyof Operations> = Operations[K] extends {
    responses: {
        200: {
            content: {
                "application/json": infer R;
            };
        };
    };
} ? R : Operations[K] extends {
    responses: {
        201: {
            content: {
                "application/json": infer R;
            };
        };
    };
} ? R : never;
