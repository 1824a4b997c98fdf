#!/usr/bin/env node
// A scripted A2A worker on the real `@a2a-js/sdk`, for a2a-mod's peer tests: the same worker
// as tests/peers/worker.py (and `a2a-mod fake-worker`), on a second, independent implementation.
//
// The SDK does the protocol: its DefaultRequestHandler, InMemoryTaskStore, the express
// jsonRpcHandler and agentCardHandler, both with the v0.3 compatibility layer on. So one
// endpoint serves v1.0 JSON-RPC (`A2A-Version: 1.0`) and v0.3 JSON-RPC (no header), streaming
// included (`SendStreamingMessage`/`SubscribeToTask`, `message/stream`/`tasks/resubscribe`),
// and the card advertises `capabilities.streaming: true`. `--v03-only` lists only the 0.3
// interface in the card, so a client that picks by the card talks v0.3.
//
// The message text is the script (the verbs of worker.py):
//   slow N <words>  working, then completed after N seconds with the artifact `done: <words>`
//   ask <question>  input-required, the question as the status message; a follow-up on the
//                   same taskId completes it with the artifact `you said: <answer>`
//   fail <why>      failed, status message `<why>`
//   reject          rejected
//   auth            auth-required (a follow-up completes it, like `ask`)
//   silent          submitted, then working; every GetTask / tasks/get on it hangs
//   anything else   completed at once, the artifact echoing the text
// Cancel works on any live task.
//
// The layer in front of the SDK (ours): the bearer and OAuth2 client-credentials checks, the
// hang for silent tasks, and the request log, in worker.py's format (tests/peers/README.md).
//
// stdout carries exactly one line, the base URL, once the socket accepts connections.
// Everything else goes to stderr. The packages live outside the repo, in the directory
// tests/peers/setup.sh installs them to (`--modules`, default $A2A_PEERS_DIR/js).

import { appendFileSync, closeSync, openSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { randomBytes, randomUUID } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));

function fail(msg) {
  process.stderr.write(`a2a-peer-worker-js: ${msg}\n`);
  process.exit(2);
}

// --- arguments --------------------------------------------------------------------------

let opts;
try {
  opts = parseArgs({
    options: {
      port: { type: "string", default: "0" },
      bearer: { type: "string" },
      "bearer-env": { type: "string" },
      "oauth-ttl": { type: "string" },
      "oauth-claimed-ttl": { type: "string" },
      log: { type: "string" },
      "exit-on-stdin-eof": { type: "boolean", default: false },
      "v03-only": { type: "boolean", default: false },
      modules: { type: "string" },
      check: { type: "boolean", default: false },
    },
  }).values;
} catch (e) {
  fail(e.message);
}
if (opts["bearer-env"]) {
  if (opts.bearer) fail("give --bearer or --bearer-env, not both");
  opts.bearer = process.env[opts["bearer-env"]];
  if (!opts.bearer) fail(`--bearer-env: environment variable ${opts["bearer-env"]} is unset or empty`);
}
let oauthTtl = null;
let claimedTtl = null;
if (opts["oauth-ttl"] !== undefined) {
  if (opts.bearer) fail("give --bearer or --oauth-ttl, not both");
  oauthTtl = Number(opts["oauth-ttl"]);
  if (!(oauthTtl > 0)) fail(`--oauth-ttl ${opts["oauth-ttl"]} is not a positive number of seconds`);
  claimedTtl =
    opts["oauth-claimed-ttl"] !== undefined ? Number(opts["oauth-claimed-ttl"]) : Math.ceil(oauthTtl);
} else if (opts["oauth-claimed-ttl"] !== undefined) {
  fail("--oauth-claimed-ttl needs --oauth-ttl");
}
const port = Number(opts.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port ${opts.port} is not a port`);

const modules = resolve(
  opts.modules ?? join(process.env.A2A_PEERS_DIR ?? join(here, "../../../target/peers"), "js"),
);
// The packages are not beside this file, so they are loaded from the install directory (the
// CommonJS builds: createRequire resolves from any directory, ESM imports only from ours).
const require = createRequire(join(modules, "package.json"));
let sdk, server, sdkExpress, express, sdkVersion;
try {
  sdk = require("@a2a-js/sdk");
  server = require("@a2a-js/sdk/server");
  sdkExpress = require("@a2a-js/sdk/server/express");
  express = require("express");
  // The package's exports do not include its package.json.
  sdkVersion = JSON.parse(readFileSync(join(modules, "node_modules/@a2a-js/sdk/package.json"), "utf8")).version;
} catch (e) {
  fail(`cannot load @a2a-js/sdk and express from "${modules}" (${e.code ?? e.message}) — run tests/peers/setup.sh`);
}
if (opts.check) process.exit(0); // setup.sh: the packages load
const { Role, TaskState } = sdk;
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = server;
const { agentCardHandler, jsonRpcHandler, UserBuilder } = sdkExpress;

const RPC_PATH = "/";
const TOKEN_PATH = "/oauth/token";
const GET_METHODS = new Set(["GetTask", "tasks/get"]);
const SEND_METHODS = new Set(["SendMessage", "SendStreamingMessage", "message/send", "message/stream"]);
const TASK_ID_METHODS = new Set([...GET_METHODS, "CancelTask", "tasks/cancel", "SubscribeToTask", "tasks/resubscribe"]);
const INTERRUPTED = new Set([TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);
const MAX_CAPTURE = 1 << 20;

// --- the script -------------------------------------------------------------------------

/** A message text read as a script; anything unrecognised is an echo. */
function parseScript(text) {
  const stripped = text.trim();
  const sp = stripped.indexOf(" ");
  const head = sp < 0 ? stripped : stripped.slice(0, sp);
  const rest = sp < 0 ? "" : stripped.slice(sp + 1).trim();
  if (head === "slow") {
    const m = /^(\S+)\s*(.*)$/s.exec(rest);
    const seconds = m && /^[0-9.eE+-]+$/.test(m[1]) ? Number(m[1]) : NaN;
    if (Number.isFinite(seconds) && seconds >= 0) return { verb: "slow", text: m[2].trim(), seconds };
    return { verb: "echo", text: stripped };
  }
  if (head === "ask" || head === "fail") return { verb: head, text: rest };
  if (["reject", "auth", "silent"].includes(stripped)) return { verb: stripped, text: "" };
  return { verb: "echo", text: stripped };
}

const textPart = (text) => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

function userText(message) {
  return (message?.parts ?? [])
    .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
    .join("\n");
}

/** Plays a script per task. `silentIds` is shared with the gate; `running` lets cancel stop a run. */
class ScriptedExecutor {
  constructor(silentIds) {
    this.silentIds = silentIds;
    this.running = new Map(); // taskId -> AbortController
    this.contexts = new Map(); // taskId -> contextId, for the cancel event
  }

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    this.contexts.set(taskId, contextId);
    const text = userText(ctx.userMessage);
    const resuming = ctx.task !== undefined && INTERRUPTED.has(ctx.task.status?.state);
    // The SDK requires every run to begin with a task (or message) event, follow-ups included.
    const task = ctx.task ?? {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    };
    const status = (state, words) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message: words === undefined ? undefined : say(words), timestamp: now() },
          metadata: undefined,
        }),
      );
    const say = (words) => ({
      messageId: randomUUID(),
      contextId,
      taskId,
      role: Role.ROLE_AGENT,
      parts: [textPart(words)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    const finish = (result) => {
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: randomUUID(),
            name: "result",
            description: "",
            parts: [textPart(result)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      status(TaskState.TASK_STATE_COMPLETED);
    };

    const script = parseScript(text);
    if (!resuming && script.verb === "silent") {
      // Registered before the task is visible to any client.
      this.silentIds.add(taskId);
    }
    bus.publish(AgentEvent.task(task));
    if (resuming) {
      finish(`you said: ${text.trim()}`);
      return;
    }
    const abort = new AbortController();
    this.running.set(taskId, abort);
    try {
      switch (script.verb) {
        case "slow":
          status(TaskState.TASK_STATE_WORKING);
          if (await sleep(script.seconds * 1000, abort.signal)) finish(`done: ${script.text}`);
          break;
        case "ask":
          status(TaskState.TASK_STATE_INPUT_REQUIRED, script.text);
          break;
        case "fail":
          status(TaskState.TASK_STATE_FAILED, script.text);
          break;
        case "reject":
          status(TaskState.TASK_STATE_REJECTED, "rejected");
          break;
        case "auth":
          status(TaskState.TASK_STATE_AUTH_REQUIRED, "authorization required");
          break;
        case "silent":
          status(TaskState.TASK_STATE_WORKING);
          await sleep(Infinity, abort.signal); // until cancelled
          break;
        default:
          finish(script.text);
      }
    } finally {
      this.running.delete(taskId);
    }
  }

  async cancelTask(taskId, bus) {
    // The run (if any) stops without a last word. The SDK calls this only for a task whose
    // event bus is alive (a run, or an interrupted task); it answers others itself.
    this.running.get(taskId)?.abort();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: this.contexts.get(taskId) ?? "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
        metadata: undefined,
      }),
    );
  }
}

const now = () => new Date().toISOString();

/** Resolves true after `ms`, false as soon as `signal` aborts. */
function sleep(ms, signal) {
  return new Promise((done) => {
    if (signal.aborted) return done(false);
    const timer = Number.isFinite(ms) ? setTimeout(() => done(true), ms) : undefined;
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      done(false);
    });
  });
}

// --- the agent card ---------------------------------------------------------------------

function buildCard(baseUrl, auth) {
  const jsonrpc = (protocolVersion) => ({ url: baseUrl, protocolBinding: "JSONRPC", tenant: "", protocolVersion });
  const card = {
    name: "a2a-mod peer worker",
    description: `Scripted test worker on @a2a-js/sdk ${sdkVersion}`,
    supportedInterfaces: opts["v03-only"] ? [jsonrpc("0.3")] : [jsonrpc("1.0"), jsonrpc("0.3")],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "script",
        name: "Scripted replies",
        description: "slow N <words> | ask <q> | fail <why> | reject | auth | silent | <echo>",
        tags: ["test"],
        examples: ["slow 2 build", "ask Which colour?", "fail out of disk"],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  if (auth === "bearer") {
    card.securitySchemes.bearer = {
      scheme: { $case: "httpAuthSecurityScheme", value: { description: "", scheme: "Bearer", bearerFormat: "" } },
    };
  } else if (auth === "oauth") {
    card.securitySchemes.oauth = {
      scheme: {
        $case: "oauth2SecurityScheme",
        value: {
          description: "",
          flows: {
            flow: {
              $case: "clientCredentials",
              value: { tokenUrl: baseUrl + TOKEN_PATH, refreshUrl: "", scopes: { tasks: "run tasks" } },
            },
          },
          oauth2MetadataUrl: "",
        },
      },
    };
  }
  if (auth) card.securityRequirements.push({ schemes: { [auth]: { list: [] } } });
  return card;
}

// --- the gate: auth, silent hang, request log -------------------------------------------

function logLine(atMs, method, taskId, status) {
  if (!opts.log) return;
  appendFileSync(opts.log, JSON.stringify({ at_ms: atMs, method, task_id: taskId, status }) + "\n");
}

function taskIdOfRequest(method, params) {
  if (params === null || typeof params !== "object") return null;
  let value;
  if (TASK_ID_METHODS.has(method)) value = params.id;
  else if (SEND_METHODS.has(method)) {
    const m = params.message ?? params.request;
    value = m && typeof m === "object" ? m.taskId : undefined;
  } else value = params.taskId ?? params.id;
  return typeof value === "string" && value ? value : null;
}

/** The task id in a send's response: plain JSON, or the first SSE `data:` event. */
function taskIdOfResult(text) {
  let doc = null;
  try {
    doc = JSON.parse(text);
  } catch {
    const line = text.split(/\r?\n/).find((l) => l.startsWith("data:"));
    try {
      doc = line ? JSON.parse(line.slice(5)) : null;
    } catch {
      doc = null;
    }
  }
  let result = doc && typeof doc === "object" ? doc.result : null;
  if (!result || typeof result !== "object") return null;
  // v1 wraps the object: {"task": {..}}, {"statusUpdate": {..}}, ...; v0.3 returns it bare.
  for (const key of ["task", "message", "statusUpdate", "artifactUpdate"]) {
    if (result[key] && typeof result[key] === "object") {
      result = result[key];
      break;
    }
  }
  const value = result.kind === "task" || ("status" in result && !("taskId" in result)) ? result.id : result.taskId;
  return typeof value === "string" && value ? value : null;
}

const tokens = new Map(); // token -> expiry (ms, monotonic)
const mono = () => performance.now();

function authorized(req) {
  const given = req.get("authorization") ?? "";
  if (opts.bearer) return given === `Bearer ${opts.bearer}`;
  if (oauthTtl !== null) return given.startsWith("Bearer ") && mono() < (tokens.get(given.slice(7)) ?? 0);
  return true;
}

let stopping = false;
const hanging = new Set(); // responses of silent GetTasks, answered 503 on shutdown

function gate(silentIds) {
  return (req, res, next) => {
    const atMs = Date.now();
    const body = req.body;
    const method = body && typeof body === "object" && typeof body.method === "string" ? body.method : null;
    let taskId = taskIdOfRequest(method, body?.params);

    if (!authorized(req)) {
      logLine(atMs, method, taskId, 401);
      res.status(401).set("WWW-Authenticate", 'Bearer realm="a2a-peer-worker"');
      res.json({ error: "missing, invalid or expired bearer token" });
      return;
    }
    if (GET_METHODS.has(method) && silentIds.has(taskId)) {
      // The response never comes, so the line is written now, with no status.
      logLine(atMs, method, taskId, null);
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
      return;
    }

    const chunks = [];
    let captured = 0;
    let logged = false;
    const capture = (chunk, encoding) => {
      if (chunk === undefined || chunk === null || typeof chunk === "function" || captured >= MAX_CAPTURE) return;
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, typeof encoding === "string" ? encoding : "utf8");
      chunks.push(buf);
      captured += buf.length;
    };
    const logOnce = () => {
      if (logged) return;
      logged = true;
      if (SEND_METHODS.has(method) && taskId === null) {
        taskId = taskIdOfResult(Buffer.concat(chunks).toString("utf8"));
      }
      logLine(atMs, method, taskId, res.statusCode);
    };
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = (chunk, encoding, cb) => {
      capture(chunk, encoding);
      return write(chunk, encoding, cb);
    };
    res.end = (chunk, encoding, cb) => {
      capture(chunk, encoding);
      // Logged before the last byte goes out: a client that has its answer (and a test
      // reading the log right then) finds the request there.
      logOnce();
      return end(chunk, encoding, cb);
    };
    res.on("close", logOnce);
    next();
  };
}

function tokenRoute(req, res) {
  const atMs = Date.now();
  const form = req.body && typeof req.body === "object" ? req.body : {};
  const basic = (req.get("authorization") ?? "").startsWith("Basic ");
  if (form.grant_type !== "client_credentials") {
    logLine(atMs, "token", null, 400);
    res.status(400).json({ error: "unsupported_grant_type" });
  } else if (!basic) {
    logLine(atMs, "token", null, 401);
    res.status(401).json({ error: "invalid_client" });
  } else {
    logLine(atMs, "token", null, 200);
    const token = randomBytes(18).toString("base64url");
    tokens.set(token, mono() + oauthTtl * 1000);
    res.json({ access_token: token, token_type: "Bearer", expires_in: claimedTtl });
  }
}

// --- serving ----------------------------------------------------------------------------

if (opts.log) {
  try {
    closeSync(openSync(opts.log, "a"));
  } catch (e) {
    fail(`cannot append to --log "${opts.log}": ${e.message}`);
  }
}

const store = new InMemoryTaskStore();
const silentIds = new Set();
const auth = opts.bearer ? "bearer" : oauthTtl !== null ? "oauth" : null;
const app = express();
const http = app.listen(port, "127.0.0.1");
http.on("error", (e) => fail(`cannot bind 127.0.0.1:${port}: ${e.message}`));
http.on("listening", () => {
  const baseUrl = `http://127.0.0.1:${http.address().port}`;
  const card = buildCard(baseUrl, auth);
  const handler = new DefaultRequestHandler(card, store, new ScriptedExecutor(silentIds));
  const legacyCompat = { enabled: true };
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler, legacyCompat }));
  if (oauthTtl !== null) app.post(TOKEN_PATH, express.urlencoded({ extended: false }), tokenRoute);
  // Parsed here, once, for the gate; the SDK's own express.json() sees it parsed and skips.
  app.post(RPC_PATH, express.json({ limit: "4mb" }), gate(silentIds));
  app.use(RPC_PATH, jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  process.stderr.write(`a2a-peer-worker-js: @a2a-js/sdk ${sdkVersion} on ${baseUrl}\n`);
  process.stdout.write(baseUrl + "\n");
});

function shutdown(why) {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`a2a-peer-worker-js: ${why}; shutting down\n`);
  for (const res of hanging) {
    if (!res.headersSent) res.status(503).set("Connection", "close").json({ error: "shutting down" });
  }
  http.close(() => process.exit(0));
  http.closeAllConnections();
  // Open streams of live tasks do not end by themselves; do not wait on them.
  setTimeout(() => process.exit(0), 300).unref();
}

process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
if (opts["exit-on-stdin-eof"]) {
  process.stdin.on("data", () => {});
  process.stdin.on("end", () => shutdown("stdin closed"));
  process.stdin.on("error", () => shutdown("stdin closed"));
}
