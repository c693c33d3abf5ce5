// An agent's side of `triohooks serve`, in Node.js. An ES module (hence .mjs); needs `ws` 8.
// Usage: node node-client.mjs [URL [TOKEN_FILE]]
//   URL:        else $TRIOHOOKS_URL, else ws://127.0.0.1:8765/
//   TOKEN_FILE: else $TRIOHOOKS_TOKEN_FILE, else <state dir>/serve-token (what serve writes)
// Exit status: 0 when done, 1 when the token cannot be read, the server refuses it (HTTP 401)
// or the connection fails.
import {readFileSync} from "node:fs";
import {homedir} from "node:os";
import {join} from "node:path";
import WebSocket from "ws";

// The state dir of `triohooks serve`: $TRIOHOOKS_STATE_DIR, else the platform's.
function stateDir() {
  const env = process.env;
  if (env.TRIOHOOKS_STATE_DIR) return env.TRIOHOOKS_STATE_DIR;
  if (process.platform === "darwin") {
    return join(homedir(), "Library", "Application Support", "triohooks");
  }
  if (process.platform === "win32") return join(env.LOCALAPPDATA ?? homedir(), "triohooks");
  return join(env.XDG_STATE_HOME || join(homedir(), ".local", "state"), "triohooks");
}

const url = process.argv[2] ?? process.env.TRIOHOOKS_URL ?? "ws://127.0.0.1:8765/";
const tokenFile =
  process.argv[3] ?? process.env.TRIOHOOKS_TOKEN_FILE ?? join(stateDir(), "serve-token");

class ServerError extends Error {
  constructor({code, message}) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

// Open the websocket. The token goes in the Authorization header; a refused handshake (401: a
// missing or wrong token; 503: at the connection limit or shutting down) rejects.
function connect(token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {headers: {Authorization: `Bearer ${token}`}});
    ws.once("open", () => resolve(ws));
    ws.once("error", (err) => reject(new Error(`cannot connect to ${url}: ${err.message}`)));
    ws.once("unexpected-response", (req, res) => {
      const why =
        res.statusCode === 401
          ? `the server does not accept the token in ${tokenFile}`
          : `try again later (Retry-After: ${res.headers["retry-after"] ?? "-"})`;
      reject(new Error(`refused: HTTP ${res.statusCode}: ${why}`));
      ws.terminate();
    });
  });
}

const pending = new Map(); // request id -> {resolve, reject}
const records = []; // the event stream (`event` and `lagged` frames), printed at the end
let lastId = 0;
let ws;

// Every frame the server sends. Replies carry the id of their request; stream frames don't.
function onMessage(data) {
  const msg = JSON.parse(data);
  if (msg.type === "event" || msg.type === "lagged") {
    records.push(msg);
    return;
  }
  const waiter = pending.get(msg.id);
  if (waiter === undefined) {
    // An error about a frame whose id could not be read, or a type newer than this script.
    if (msg.type === "error") console.error(`server error: ${new ServerError(msg.error).message}`);
    else console.error(`ignored a ${msg.type} frame`);
    return;
  }
  pending.delete(msg.id);
  if (msg.type === "error") waiter.reject(new ServerError(msg.error));
  else waiter.resolve(msg); // outcome, subscribed, unsubscribed, pong or stats
}

// Send a request; resolves with its reply, rejects with a ServerError for an `error` reply.
function request(message) {
  const id = `n${++lastId}`;
  ws.send(JSON.stringify({...message, id}));
  return new Promise((resolve, reject) => pending.set(id, {resolve, reject}));
}

const fire = (event, payload) => request({type: "fire", event, payload});

function describe(msg) {
  if (msg.type === "lagged") return `lost ${msg.missed} records (read too slowly)`;
  const {data} = msg;
  let what = JSON.stringify(data);
  if (msg.kind === "hook_finished") what = `${data.hook}: ${data.outcome}, exit ${data.exit_code}`;
  if (msg.kind === "outcome") what = data.outcome.blocked ? "blocked" : "allowed";
  return `record ${msg.seq}: ${msg.kind} ${msg.event ?? "-"}: ${what}`;
}

async function main() {
  let token;
  try {
    token = readFileSync(tokenFile, "utf8").trim();
  } catch (err) {
    throw new Error(`cannot read the token file (is triohooks serve running?): ${err.message}`);
  }
  ws = await connect(token);
  const closed = new Promise((resolve) => ws.once("close", resolve));
  ws.on("error", (err) => console.error(`websocket error: ${err.message}`));
  ws.on("message", onMessage);
  ws.on("close", (code, reason) => {
    const err = new Error(`connection closed: ${code} ${reason}`);
    for (const {reject} of pending.values()) reject(err);
    pending.clear();
  });

  await request({type: "ping"}); // a pong: the server reads us
  console.log(`connected to ${url}`);
  const kinds = ["hook_finished", "outcome"];
  const sub = await request({type: "subscribe", events: ["pre_tool"], kinds});
  console.log(`subscribed to ${sub.events} (${sub.kinds.join(", ")}), buffer ${sub.buffer}`);

  for (const command of ["rm -rf /tmp/x", "ls /tmp"]) {
    const {outcome} = await fire("pre_tool", {tool: "bash", args: {command}, session_id: "s1"});
    if (outcome.blocked) console.log(`blocked: ${command}: ${outcome.message_for_model}`);
    else console.log(`allowed: ${command} (args ${JSON.stringify(outcome.args)})`);
  }
  try {
    await fire("pre_tool", {tool: "bash", args: "ls"}); // args must be an object
  } catch (err) {
    if (!(err instanceof ServerError)) throw err;
    console.log(`error: ${err.message}`);
  }

  // Records arrive interleaved with the replies; no event frame follows `unsubscribed`.
  await request({type: "unsubscribe"});
  for (const msg of records) console.log(describe(msg));
  const stats = await request({type: "stats"});
  console.log(`server: ${stats.fires} fires, ${stats.connections} connection(s)`);
  ws.close(1000);
  await closed;
}

main().catch((err) => {
  console.error(`node-client: ${err.message}`);
  ws?.terminate();
  process.exitCode = 1;
});
