#!/usr/bin/env node
// An A2A client on the real `@a2a-js/sdk`, for a2a-mod's peer tests of `a2a-mod serve`: the same
// command line and output as tests/peers/client.py, on a second, independent implementation.
//
// The SDK does the protocol: its DefaultAgentCardResolver fetches the card, its ClientFactory
// picks the interface, its JsonRpcTransportFactory / RestTransportFactory (both with the v0.3
// compatibility layer on) make the transport, and its Client sends. So it speaks v1.0 or v0.3,
// over JSON-RPC or HTTP+JSON, as the card and --binding / --version say.
//
//   client.mjs --card-url URL [--binding jsonrpc|rest] [--version 1|0.3] [--token T]
//              [--timeout S] [--modules DIR]
//              ( --message TEXT [--stream | --no-wait] [--context-id ID] [--task-id ID]
//              | --get TASK_ID [--history-length N] | --cancel TASK_ID | --list )
//
// stdout: one JSON object per line, exactly as client.py prints them (tests/peers/README.md,
// "The clients"): with --stream one line per event, then always one last line without
// "event", `{"final": true, ...}` or `{"final": true, "error": {"code", "message", ...}}`.
// Exit 0 when the server answered (errors included), 1 when it did not, 2 on bad usage.
// The packages live outside the repo, in the directory tests/peers/setup.sh installs them to
// (`--modules`, default $A2A_PEERS_DIR/js).

import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const BINDINGS = { jsonrpc: "JSONRPC", rest: "HTTP+JSON" };

function usage(msg) {
  process.stderr.write(`a2a-peer-client-js: ${msg}\n`);
  process.exit(2);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// --- arguments --------------------------------------------------------------------------

let opts;
try {
  opts = parseArgs({
    options: {
      "card-url": { type: "string" },
      binding: { type: "string", default: "jsonrpc" },
      version: { type: "string" },
      stream: { type: "boolean", default: false },
      "no-stream": { type: "boolean", default: false },
      token: { type: "string" },
      timeout: { type: "string", default: "60" },
      message: { type: "string" },
      "context-id": { type: "string" },
      "task-id": { type: "string" },
      "history-length": { type: "string" },
      "no-wait": { type: "boolean", default: false },
      get: { type: "string" },
      cancel: { type: "string" },
      list: { type: "boolean", default: false },
      modules: { type: "string" },
    },
  }).values;
} catch (e) {
  usage(e.message);
}
if (!opts["card-url"]) usage("--card-url URL is required");
try {
  const u = new URL(opts["card-url"]);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
} catch {
  usage(`--card-url ${opts["card-url"]} is not an http(s) URL`);
}
const binding = BINDINGS[opts.binding];
if (!binding) usage(`--binding ${opts.binding}: give jsonrpc or rest`);
if (opts.version !== undefined && opts.version !== "1" && opts.version !== "0.3") {
  usage(`--version ${opts.version}: give 1 or 0.3`);
}
const stream = opts.stream && !opts["no-stream"];
const actions = [opts.get !== undefined, opts.cancel !== undefined, opts.list].filter(Boolean).length;
if (actions > 1) usage("give one of --get, --cancel, --list");
const sending = actions === 0;
if (sending && opts.message === undefined) usage("give --message TEXT, or one of --get, --cancel, --list");
if (!sending && (opts.message !== undefined || stream || opts["no-wait"] || opts["task-id"] || opts["context-id"])) {
  usage("--message, --stream, --no-wait, --task-id and --context-id go with a send only");
}
if (stream && opts["no-wait"]) usage("--no-wait is a non-blocking SendMessage; it does not go with --stream");
if (opts.list && opts.version === "0.3") usage("--list: ListTasks has no v0.3 binding");
let historyLength;
if (opts["history-length"] !== undefined) {
  historyLength = Number(opts["history-length"]);
  if (!Number.isInteger(historyLength) || historyLength < 0) usage(`--history-length ${opts["history-length"]} is not a count`);
}
const timeoutMs = Number(opts.timeout) * 1000;
if (!(timeoutMs > 0)) usage(`--timeout ${opts.timeout} is not a positive number of seconds`);

const modules = resolve(
  opts.modules ?? join(process.env.A2A_PEERS_DIR ?? join(here, "../../../target/peers"), "js"),
);
// The packages are not beside this file, so they are loaded from the install directory (the
// CommonJS builds: createRequire resolves from any directory, ESM imports only from ours).
const require = createRequire(join(modules, "package.json"));
let sdk, sdkClient, sdkErrors;
try {
  sdk = require("@a2a-js/sdk");
  sdkClient = require("@a2a-js/sdk/client");
  sdkErrors = require("@a2a-js/sdk/errors");
} catch (e) {
  process.stderr.write(`a2a-peer-client-js: cannot load @a2a-js/sdk from "${modules}" (${e.code ?? e.message}) — run tests/peers/setup.sh\n`);
  process.exit(2);
}
const { Role, TaskState } = sdk;
const {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  createAuthenticatingFetchWithRetry,
} = sdkClient;

// --- SDK objects -> plain objects (the shapes client.py prints) --------------------------

const KNOWN = new Set(["submitted", "working", "completed", "failed", "canceled", "rejected", "input-required", "auth-required"]);

function normalState(state) {
  const name = typeof state === "number" ? TaskState[state] ?? "" : String(state ?? "");
  const s = name.toLowerCase().replace(/^task_state_/, "").replaceAll("_", "-");
  return KNOWN.has(s) ? s : "unknown";
}

function partsText(parts) {
  const texts = (parts ?? []).filter((p) => p?.content?.$case === "text").map((p) => p.content.value);
  return texts.length ? texts.join("") : null;
}

const roleName = (role) =>
  (typeof role === "number" ? Role[role] ?? "" : String(role ?? "")).toLowerCase().replace(/^role_/, "");

const orNull = (s) => (s === undefined || s === "" ? null : s);

function statusOf(status) {
  return [normalState(status?.state), status?.message ? partsText(status.message.parts) : null];
}

/** The data parts of a status message (a question's structured form), or null. */
function statusData(status) {
  const data = (status?.message?.parts ?? []).filter((p) => p?.content?.$case === "data").map((p) => p.content.value);
  return data.length ? data : null;
}

function taskObj(task) {
  const [state, statusText] = statusOf(task.status);
  const metadata = task.metadata && Object.keys(task.metadata).length ? task.metadata : null;
  return {
    taskId: orNull(task.id),
    contextId: orNull(task.contextId),
    state,
    statusText,
    statusData: statusData(task.status),
    artifacts: (task.artifacts ?? []).map((a) => [a.artifactId, partsText(a.parts) ?? ""]),
    metadata,
    history: (task.history ?? []).map((m) => ({ role: roleName(m.role), text: partsText(m.parts) })),
  };
}

const messageObj = (m) => ({ taskId: orNull(m.taskId), contextId: orNull(m.contextId), text: partsText(m.parts) });

/** A StreamResponse as [kind, object]. */
function streamEvent(resp) {
  const p = resp.payload;
  switch (p?.$case) {
    case "task":
      return ["task", taskObj(p.value)];
    case "message":
      return ["message", messageObj(p.value)];
    case "statusUpdate": {
      const [state, statusText] = statusOf(p.value.status);
      return [
        "status-update",
        { taskId: orNull(p.value.taskId), contextId: orNull(p.value.contextId), state, statusText, statusData: statusData(p.value.status) },
      ];
    }
    case "artifactUpdate": {
      const ev = p.value;
      return [
        "artifact-update",
        {
          taskId: orNull(ev.taskId),
          contextId: orNull(ev.contextId),
          artifactId: ev.artifact?.artifactId ?? "",
          text: partsText(ev.artifact?.parts),
          append: Boolean(ev.append),
          lastChunk: Boolean(ev.lastChunk),
        },
      ];
    }
    default:
      throw new Error(`a StreamResponse without a payload: ${JSON.stringify(resp)}`);
  }
}

// --- the result -------------------------------------------------------------------------

const finalOfTask = (t, where) => ({
  final: true,
  taskId: t.taskId,
  contextId: t.contextId,
  state: t.state,
  text: t.artifacts.map(([, text]) => text).join("\n"),
  statusText: t.statusText,
  statusData: t.statusData,
  metadata: t.metadata,
  history: t.history,
  ...where,
});

// The agent answered with a bare Message: there is no task, hence no state.
const finalOfMessage = (m, where) => ({
  final: true,
  taskId: m.taskId,
  contextId: m.contextId,
  state: "unknown",
  text: m.text ?? "",
  statusText: null,
  metadata: null,
  message: true,
  ...where,
});

/** Folds streamed events into the final line: the last state and status text, and every
 *  artifact's text rebuilt from its chunks in order (append=false replaces, true appends). */
class StreamFold {
  taskId = null;
  contextId = null;
  state = "unknown";
  statusText = null;
  statusData = null;
  metadata = null;
  artifacts = new Map(); // insertion order = first appearance
  message = null;

  add(kind, ev) {
    this.taskId = ev.taskId ?? this.taskId;
    this.contextId = ev.contextId ?? this.contextId;
    const line = { event: kind, taskId: ev.taskId, contextId: ev.contextId };
    if (kind === "task") {
      this.state = ev.state;
      this.statusText = ev.statusText;
      this.statusData = ev.statusData;
      this.metadata = ev.metadata ?? this.metadata;
      for (const [id, text] of ev.artifacts) this.artifacts.set(id, text);
      Object.assign(line, {
        state: ev.state,
        statusText: ev.statusText,
        text: ev.artifacts.map(([, t]) => t).join("\n") || null,
      });
    } else if (kind === "status-update") {
      this.state = ev.state;
      this.statusText = ev.statusText;
      this.statusData = ev.statusData;
      Object.assign(line, { state: ev.state, text: ev.statusText });
    } else if (kind === "artifact-update") {
      const text = ev.text ?? "";
      this.artifacts.set(ev.artifactId, ev.append ? (this.artifacts.get(ev.artifactId) ?? "") + text : text);
      Object.assign(line, { text: ev.text, append: ev.append, lastChunk: ev.lastChunk });
    } else if (kind === "message") {
      this.message = ev;
      line.text = ev.text;
    }
    return line;
  }

  final(where) {
    if (this.message && this.taskId === null) return finalOfMessage(this.message, where);
    return {
      final: true,
      taskId: this.taskId,
      contextId: this.contextId,
      state: this.state,
      text: [...this.artifacts.values()].join("\n"),
      statusText: this.statusText,
      statusData: this.statusData,
      metadata: this.metadata,
      ...where,
    };
  }
}

// --- errors -----------------------------------------------------------------------------

class NoInterface extends Error {}

// The last HTTP answer seen by our fetch: some SDK errors lose the status (the v0.3 REST
// transport rebuilds a bare TaskNotFoundError from the body), and none keeps the body.
const lastHttp = { status: undefined, body: undefined };

// Semantic SDK errors without a transport envelope, by name, to their JSON-RPC code.
const { A2A_ERROR_CODE: C } = sdkErrors;
const CODE_OF_ERROR = {
  TaskNotFoundError: C.TASK_NOT_FOUND,
  TaskNotCancelableError: C.TASK_NOT_CANCELABLE,
  PushNotificationNotSupportedError: C.PUSH_NOTIFICATION_NOT_SUPPORTED,
  UnsupportedOperationError: C.UNSUPPORTED_OPERATION,
  ContentTypeNotSupportedError: C.CONTENT_TYPE_NOT_SUPPORTED,
  InvalidAgentResponseError: C.INVALID_AGENT_RESPONSE,
  ExtendedAgentCardNotConfiguredError: C.EXTENDED_CARD_NOT_CONFIGURED,
  ExtensionSupportRequiredError: C.EXTENSION_SUPPORT_REQUIRED,
  VersionNotSupportedError: C.VERSION_NOT_SUPPORTED,
  RequestMalformedError: C.INVALID_PARAMS,
};

/** The error line for an SDK exception, and the exit status (0: the server answered). */
function errorLine(e) {
  const chain = [];
  for (let x = e; x && typeof x === "object" && !chain.includes(x); x = x.cause) chain.push(x);
  const rpc = chain.find((x) => typeof x.envelopeCode === "number");
  const rest = chain.find((x) => typeof x.statusCode === "number");
  let status = rest?.statusCode ?? (lastHttp.status >= 400 ? lastHttp.status : undefined);
  if (status === undefined) {
    // Plain HTTP failures are bare Errors; the status is only in their message.
    for (const x of chain) {
      const m = /(?:Status: |HTTP error establishing stream for \S+: |Agent Card from \S+: |HTTP error for \S+: )(\d{3})\b/.exec(
        x.message ?? "",
      );
      if (m) {
        status = Number(m[1]);
        break;
      }
    }
  }
  const err = { message: (rpc ?? rest ?? e).message ?? String(e), type: (rpc ?? rest ?? e).name ?? "Error" };
  if (status !== undefined) err.httpStatus = status;
  if (status !== undefined && lastHttp.body !== undefined) {
    // The error body as the server sent it (the SDK's message may not say what it said).
    try {
      err.body = JSON.parse(lastHttp.body);
    } catch {
      err.body = lastHttp.body;
    }
  }
  // JSON-RPC errors are reported by their code; REST errors (and any HTTP error on JSON-RPC,
  // e.g. a 401) by their HTTP status; an A2A error inside a REST stream by the code it maps to.
  const named = chain.map((x) => CODE_OF_ERROR[x.name]).find((c) => c !== undefined);
  if (rpc && (binding === "JSONRPC" || status === undefined)) err.code = rpc.envelopeCode;
  else if (status !== undefined) err.code = status;
  else if (named !== undefined) err.code = named;
  if (err.code !== undefined) return [{ final: true, error: err }, 0];
  err.code = 0;
  const noAnswer = chain.some(
    (x) => x.name === "TimeoutError" || x.name === "AbortError" || /fetch failed|ECONNREFUSED|ECONNRESET/.test(x.message ?? ""),
  );
  if (!noAnswer) process.stderr.write(`a2a-peer-client-js: ${e?.stack ?? e}\n`);
  return [{ final: true, error: err }, 1];
}

// --- the run ----------------------------------------------------------------------------

const versionMatches = (v, want) => {
  const version = v || "0.3"; // an interface without a version is a v0.3 one
  return want === "0.3" ? version.startsWith("0.") : version === "1" || version.startsWith("1.");
};

async function run() {
  // Every request (the card fetch included) goes through this fetch: the bearer token through
  // the SDK's own authenticating wrapper, and a deadline per request.
  const timedFetch = async (url, init) => {
    const res = await fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
    lastHttp.status = res.status;
    lastHttp.body = res.ok ? undefined : await res.clone().text().catch(() => undefined);
    return res;
  };
  const fetchImpl = opts.token
    ? createAuthenticatingFetchWithRetry(timedFetch, {
        headers: async () => ({ Authorization: `Bearer ${opts.token}` }),
        shouldRetryWithHeaders: async () => undefined,
      })
    : timedFetch;
  const legacyCompat = { enabled: true };
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
  const card = await resolver.resolve(opts["card-url"], "");

  const all = card.supportedInterfaces ?? [];
  let ours = all.filter((i) => (i.protocolBinding ?? "").toUpperCase() === binding);
  if (opts.version) {
    const keep = ours.filter((i) => versionMatches(i.protocolVersion, opts.version));
    if (!keep.length) {
      const listed = all.map((i) => `${i.protocolBinding} ${i.protocolVersion || "(none)"}`);
      throw new NoInterface(`the card lists no ${binding} interface for version ${opts.version}: ${JSON.stringify(listed)}`);
    }
    // The SDK picks the 1.0 interface whenever the card has one; to speak another version it
    // must not see it.
    card.supportedInterfaces = all.filter((i) => !ours.includes(i) || keep.includes(i));
    ours = keep;
  }
  // With preferredTransports the factory still falls back to the card's other bindings.
  if (!ours.length) throw new NoInterface(`the card lists no ${binding} interface`);

  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl, legacyCompat })],
      preferredTransports: [binding],
      cardResolver: resolver,
      clientConfig: { polling: opts["no-wait"] },
    }),
  );
  const client = await factory.createFromAgentCard(card);
  const where = { binding: client.transport.protocolName, protocol: client.protocolVersion };
  if (opts.list && where.protocol.startsWith("0.")) usage("--list: ListTasks has no v0.3 binding");

  if (opts.get !== undefined) {
    const task = await client.getTask({ tenant: "", id: opts.get, historyLength });
    emit(finalOfTask(taskObj(task), where));
  } else if (opts.cancel !== undefined) {
    const task = await client.cancelTask({ tenant: "", id: opts.cancel, metadata: undefined });
    emit(finalOfTask(taskObj(task), where));
  } else if (opts.list) {
    const tasks = [];
    let pageToken = "";
    do {
      const resp = await client.listTasks({
        tenant: "",
        contextId: "",
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken,
        historyLength,
        statusTimestampAfter: undefined,
      });
      tasks.push(...resp.tasks);
      pageToken = resp.nextPageToken;
    } while (pageToken);
    const out = [];
    for (const t of tasks.map(taskObj)) {
      emit({
        event: "task",
        taskId: t.taskId,
        contextId: t.contextId,
        state: t.state,
        statusText: t.statusText,
        text: t.artifacts.map(([, x]) => x).join("\n") || null,
      });
      out.push({ taskId: t.taskId, contextId: t.contextId, state: t.state });
    }
    emit({ final: true, tasks: out, ...where });
  } else {
    await send(client, where);
  }
}

async function send(client, where) {
  const request = {
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: opts["context-id"] ?? "",
      taskId: opts["task-id"] ?? "",
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: opts.message }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: historyLength === undefined ? undefined : { historyLength },
    metadata: undefined,
  };
  if (stream) {
    const fold = new StreamFold();
    for await (const resp of client.sendMessageStream(request)) emit(fold.add(...streamEvent(resp)));
    emit(fold.final(where));
    return;
  }
  const result = await client.sendMessage(request);
  // A Message has a messageId; a Task has not.
  emit("messageId" in result ? finalOfMessage(messageObj(result), where) : finalOfTask(taskObj(result), where));
}

try {
  await run();
} catch (e) {
  if (e instanceof NoInterface) {
    // The card does not offer what was asked for: the server answered, with a card.
    emit({ final: true, error: { code: 0, message: e.message, type: "NoMatchingInterface" } });
    process.exitCode = 1;
  } else {
    const [line, status] = errorLine(e);
    emit(line);
    process.exitCode = status;
  }
}
