// Interoperability of caddy-a2a's MCP endpoint with the official MCP
// TypeScript SDK (@modelcontextprotocol/sdk, its Client over Streamable HTTP).
//
// The Go interop suite (mcp_typescript_test.go) sets:
//   MCP_URL       the interop agent's MCP endpoint (no authentication)
//   DEMO_URL      the demo API behind it (GET /stats counts its slow calls)
// and, for an agent that requires a bearer token or an API key:
//   MCP_AUTH_URL, MCP_AUTH_A2A_URL   its MCP and A2A JSON-RPC endpoints
//   MCP_AUTH_ISSUER                   the authorization server its tokens come from
//   MCP_CLIENT_ID, MCP_CLIENT_SECRET  a client that server grants tokens to
//   MCP_API_KEY, MCP_OTHER_API_KEY    two callers' API keys (header X-API-Key)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const mcpURL = process.env.MCP_URL;
if (!mcpURL) {
  throw new Error('MCP_URL is not set: point it at the agent MCP endpoint, e.g. http://127.0.0.1:8080/mcp');
}
const auth = process.env.MCP_AUTH_URL
  ? {
      mcpURL: process.env.MCP_AUTH_URL,
      a2aURL: process.env.MCP_AUTH_A2A_URL,
      issuer: process.env.MCP_AUTH_ISSUER,
      clientID: process.env.MCP_CLIENT_ID,
      clientSecret: process.env.MCP_CLIENT_SECRET,
      apiKey: process.env.MCP_API_KEY,
      otherAPIKey: process.env.MCP_OTHER_API_KEY,
    }
  : null;
const noAuth = auth ? false : 'MCP_AUTH_URL is not set: no agent that requires authentication';
/** A connected client; closed when the test ends. */
async function connect(t, { url = mcpURL, capabilities = {}, headers, authProvider } = {}) {
  const client = new Client({ name: 'caddy-a2a-interop', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: headers ? { headers } : undefined,
    authProvider,
  });
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

const texts = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text);

/** The A2A task id the endpoint puts in a result's _meta. */
function taskIdOf(result) {
  const id = result._meta?.['a2a/taskId'];
  assert.equal(typeof id, 'string', `no a2a/taskId in the result's _meta: ${JSON.stringify(result._meta)}`);
  return id;
}

/** Polls cond (an async predicate) every 20 ms until it holds, for at most 10 s. */
async function eventually(what, cond) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) assert.fail(`never saw ${what} within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20)); // poll interval, not synchronization
  }
}

async function demoStats() {
  const res = await fetch(new URL('/stats', process.env.DEMO_URL));
  assert.equal(res.status, 200);
  return res.json();
}

test('tools/list lists the skills as tools, with their argument schemas and hints', async (t) => {
  const { client } = await connect(t);
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
  for (const want of ['weather', 'avatar', 'fail', 'slow', 'report', 'count', 'echo']) {
    assert.ok(byName[want], `no tool ${want} in ${Object.keys(byName)}`);
  }
  const weather = byName.weather;
  assert.ok(weather.description.startsWith('Current weather for a city'), weather.description);
  assert.equal(weather.inputSchema.type, 'object');
  assert.equal(weather.inputSchema.properties.city.type, 'string');
  assert.deepEqual(weather.inputSchema.required, ['city']);
  assert.equal(weather.annotations?.readOnlyHint, true, `weather is a GET: ${JSON.stringify(weather.annotations)}`);
  assert.equal(byName.place_order.annotations?.readOnlyHint, false, 'place_order is a POST');
});

test('a JSON skill answers structuredContent and its text copy', async (t) => {
  const { client } = await connect(t);
  await client.listTools(); // the SDK then checks structuredContent against each outputSchema
  const result = await client.callTool({ name: 'weather', arguments: { city: 'Paris' } });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent?.city, 'Paris', JSON.stringify(result));
  assert.equal(result.structuredContent?.conditions, 'sunny');
  const all = texts(result);
  assert.ok(all.some((s) => s.includes('Paris: 17 °C, sunny.')), `no status text in ${all}`);
  assert.ok(
    all.some((s) => { try { return JSON.parse(s).city === 'Paris'; } catch { return false; } }),
    `no JSON text copy of the data in ${all}`,
  );
  taskIdOf(result);
});

test('a text skill answers text content', async (t) => {
  const { client } = await connect(t);
  const result = await client.callTool({ name: 'echo', arguments: {} });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.ok(texts(result).includes('The service got GET /echo.'), JSON.stringify(result.content));
});

test('a file skill answers image content', async (t) => {
  const { client } = await connect(t);
  const result = await client.callTool({ name: 'avatar', arguments: { id: 2 } });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const image = result.content.find((c) => c.type === 'image');
  assert.ok(image, `no image content in ${JSON.stringify(result.content)}`);
  assert.equal(image.mimeType, 'image/png');
  const png = Buffer.from(image.data, 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
});

test('a failing skill is a result with isError and the reason, not a protocol error', async (t) => {
  const { client } = await connect(t);
  const result = await client.callTool({ name: 'fail', arguments: {} });
  assert.equal(result.isError, true, JSON.stringify(result));
  const all = texts(result).join('\n');
  assert.match(all, /HTTP 500/);
  assert.match(all, /boom/);
});

test('an unknown tool is a protocol error', async (t) => {
  const { client } = await connect(t);
  await assert.rejects(client.callTool({ name: 'no_such_skill', arguments: {} }), /no_such_skill|not found|unknown/i);
});

test('missing arguments are asked for through elicitation', async (t) => {
  const { client } = await connect(t, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { city: 'Tokyo' } };
  });
  const result = await client.callTool({ name: 'weather', arguments: {} });
  assert.equal(asked.length, 1, `elicitations: ${JSON.stringify(asked)}`);
  const schema = asked[0].requestedSchema;
  assert.equal(schema.properties.city.type, 'string', JSON.stringify(schema));
  assert.deepEqual(schema.required, ['city']);
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent?.city, 'Tokyo', JSON.stringify(result));
});

test('a declined elicitation ends the call with isError', async (t) => {
  const { client } = await connect(t, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  const result = await client.callTool({ name: 'weather', arguments: {} });
  assert.equal(result.isError, true, JSON.stringify(result));
});

test('without the elicitation capability, missing arguments are an isError naming them', async (t) => {
  const { client } = await connect(t);
  const result = await client.callTool({ name: 'weather', arguments: {} });
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.match(texts(result).join('\n'), /city/);
});

for (const [name, args, min] of [
  ['count', { to: 5 }, 3], // a streamed answer: each chunk
  ['report', {}, 2], // a polled job: each poll's message
]) {
  test(`progress notifications follow the ${name} skill`, async (t) => {
    const { client } = await connect(t);
    const progress = [];
    const result = await client.callTool({ name, arguments: args }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.ok(progress.length >= min, `${progress.length} progress notifications, want ${min} or more: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(progress[i].progress > progress[i - 1].progress, `progress does not increase: ${JSON.stringify(progress)}`);
    }
  });
}

test('cancelling a call (AbortSignal) cancels the upstream request', async (t) => {
  const { client } = await connect(t);
  const before = await demoStats();
  const abort = new AbortController();
  const call = client.callTool({ name: 'slow', arguments: { seconds: 30 } }, undefined, { signal: abort.signal });
  await eventually('the slow call reach the upstream', async () => (await demoStats()).slowStarted > before.slowStarted);
  abort.abort('the test cancels it');
  await assert.rejects(call);
  await eventually('the upstream see the cancellation', async () => (await demoStats()).slowCanceled > before.slowCanceled);
});

/** A JSON-RPC GetTask on the A2A endpoint with an API key: its result or error. */
async function getTask(id, apiKey) {
  const res = await fetch(auth.a2aURL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', 'X-API-Key': apiKey },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } }),
  });
  assert.equal(res.status, 200);
  return res.json();
}

test('without credentials, the agent answers 401 naming its protected resource metadata', { skip: noAuth }, async () => {
  const res = await fetch(auth.mcpURL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate') ?? '';
  const metadataURL = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  assert.ok(metadataURL, `no resource_metadata in WWW-Authenticate: ${challenge}`);
  const metadata = await (await fetch(metadataURL)).json();
  assert.equal(metadata.resource, auth.mcpURL);
  assert.deepEqual(metadata.authorization_servers, [auth.issuer]);
});

test('the SDK discovers the authorization server from the 401 and gets a token for the agent', { skip: noAuth }, async (t) => {
  // Without credentials the SDK's client fails with the 401 ...
  await assert.rejects(connect(t, { url: auth.mcpURL }), (err) => err.code === 401);
  // ... and with an OAuth client it follows resource_metadata to the
  // authorization server, asks a token for this resource, and connects.
  const provider = new ClientCredentialsProvider({ clientId: auth.clientID, clientSecret: auth.clientSecret });
  const { client } = await connect(t, { url: auth.mcpURL, authProvider: provider });
  assert.ok(provider.tokens()?.access_token, 'the provider holds no token');
  const result = await client.callTool({ name: 'weather', arguments: { city: 'London' } });
  assert.equal(result.structuredContent?.city, 'London', JSON.stringify(result));
});

test('a call started over MCP is a task its caller reads over A2A, and no other caller', { skip: noAuth }, async (t) => {
  const { client } = await connect(t, { url: auth.mcpURL, headers: { 'X-API-Key': auth.apiKey } });
  const result = await client.callTool({ name: 'weather', arguments: { city: 'Paris' } });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const id = taskIdOf(result);

  const mine = await getTask(id, auth.apiKey);
  assert.equal(mine.result?.id, id, JSON.stringify(mine));
  assert.equal(mine.result.status.state, 'TASK_STATE_COMPLETED');
  const data = mine.result.artifacts.flatMap((a) => a.parts).find((p) => p.data)?.data;
  assert.equal(data?.city, 'Paris', JSON.stringify(mine.result.artifacts));

  const theirs = await getTask(id, auth.otherAPIKey);
  assert.equal(theirs.error?.code, -32001, `another caller read the task: ${JSON.stringify(theirs)}`);
});

// A session serves only the caller that opened it (MCP 2025-11-25, security
// best practices, "Session Hijacking").
test("another caller cannot use a caller's MCP session", { skip: noAuth }, async (t) => {
  const { transport } = await connect(t, { url: auth.mcpURL, headers: { 'X-API-Key': auth.apiKey } });
  const session = transport.sessionId;
  assert.ok(session, 'the endpoint gave the 2025-11-25 client no session');
  const res = await fetch(auth.mcpURL, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': session, 'Mcp-Protocol-Version': '2025-11-25', 'X-API-Key': auth.otherAPIKey,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method: 'tools/list', params: {} }),
  });
  const body = await res.text();
  assert.ok(res.status >= 400 && res.status < 500, `the other caller's request on the session got ${res.status}: ${body}`);
});
