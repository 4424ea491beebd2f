// Interoperability of caddy-a2a with the official A2A JavaScript SDK
// (@a2a-js/sdk 1.x, protocol 1.0 over JSON-RPC + SSE, and over HTTP+JSON
// when the card lists it).
//
// A2A_URL is the agent's endpoint (the Go interop suite sets it, and
// A2A_AGENT_NAME, the name the card must carry):
//   A2A_URL=http://127.0.0.1:8080/ node --test
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { Role, TaskState } from '@a2a-js/sdk';
import {
  AgentCardResolver,
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import {
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
} from '@a2a-js/sdk/errors';

const url = process.env.A2A_URL;
if (!url) {
  throw new Error('A2A_URL is not set: point it at the agent endpoint, e.g. http://127.0.0.1:8080/');
}

/** A user message selecting a skill, with its arguments in a data part. */
function skillMessage(skill, args) {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'data', value: args }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: { skill },
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(message) {
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

/** The JSON text of every data part of the artifacts. */
function artifactData(artifacts) {
  return artifacts.flatMap((a) =>
    a.parts.filter((p) => p.content?.$case === 'data').map((p) => JSON.stringify(p.content.value)),
  );
}

function assertWeatherArtifact(artifacts) {
  const data = artifactData(artifacts);
  assert.ok(
    data.some((d) => d.includes('"Paris"') && d.includes('"sunny"')),
    `no data artifact with the Paris weather report: ${JSON.stringify(artifacts)}`,
  );
}

const isTask = (result) => !('messageId' in result);

test('card resolution picks the 1.0 JSON-RPC interface', async () => {
  const client = await new ClientFactory().createFromUrl(url);
  assert.equal(client.protocolVersion, '1.0');
  const card = await client.getAgentCard();
  if (process.env.A2A_AGENT_NAME) assert.equal(card.name, process.env.A2A_AGENT_NAME);
  assert.ok(card.capabilities?.streaming, 'capabilities.streaming should be true');
  const ids = card.skills.map((s) => s.id);
  for (const want of ['weather', 'slow', 'fail', 'echo']) {
    assert.ok(ids.includes(want), `card skills ${ids} lack ${want}`);
  }
});

test('sendMessage (blocking) answers the completed task with a data artifact', async () => {
  const client = await new ClientFactory().createFromUrl(url);
  const result = await client.sendMessage(sendRequest(skillMessage('weather', { city: 'Paris' })));
  assert.ok(isTask(result), `expected a Task, got ${JSON.stringify(result)}`);
  assert.ok(result.id && result.contextId, 'task id and context id are set');
  assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(result.status));
  assertWeatherArtifact(result.artifacts);

  const got = await client.getTask({ tenant: '', id: result.id, historyLength: 1 });
  assert.equal(got.id, result.id);
  assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.ok(got.history.length <= 1, `historyLength 1 returned ${got.history.length} messages`);
  assertWeatherArtifact(got.artifacts);
});

test('sendMessageStream: the Task first, then updates, ending with the terminal status', async () => {
  const client = await new ClientFactory().createFromUrl(url);
  const events = [];
  for await (const ev of client.sendMessageStream(sendRequest(skillMessage('weather', { city: 'Paris' })))) {
    events.push(ev);
  }
  const kinds = events.map((e) => e.payload?.$case);
  assert.equal(kinds[0], 'task', `first event should be the Task: ${kinds}`);
  const taskId = events[0].payload.value.id;
  for (const ev of events) {
    const v = ev.payload.value;
    assert.equal(ev.payload.$case === 'task' ? v.id : v.taskId, taskId, `event of another task: ${JSON.stringify(ev)}`);
  }
  const statuses = events.filter((e) => e.payload.$case === 'statusUpdate');
  const last = statuses.at(-1);
  assert.ok(last, `no status update: ${kinds}`);
  assert.equal(last.payload.value.status?.state, TaskState.TASK_STATE_COMPLETED);
  const lastIdx = events.lastIndexOf(last);
  assert.ok(lastIdx >= events.length - 2, `events after the terminal status: ${kinds}`);
  const artifacts = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value.artifact);
  assert.ok(artifacts.length > 0, `no artifact update: ${kinds}`);
  assertWeatherArtifact(artifacts);
});

test('a streamed upstream reaches the client as chunks of one artifact', async () => {
  const client = await new ClientFactory().createFromUrl(url);
  const chunks = [];
  for await (const ev of client.sendMessageStream(sendRequest(skillMessage('count', { to: 3 })))) {
    if (ev.payload?.$case === 'artifactUpdate') chunks.push(ev.payload.value);
  }
  assert.equal(chunks.length, 3, `want 3 numbers, the last one marked so: ${JSON.stringify(chunks)}`);
  chunks.forEach((c, i) => {
    assert.equal(c.artifact.artifactId, chunks[0].artifact.artifactId, `chunk ${i} of another artifact`);
    assert.equal(c.append, i > 0, `chunk ${i} append`);
    assert.equal(c.lastChunk, i === 2, `chunk ${i} lastChunk`);
  });
  assert.deepEqual(artifactData(chunks.map((c) => c.artifact)), ['{"n":1}', '{"n":2}', '{"n":3}']);
});

test('an unknown task is TaskNotFoundError', async () => {
  const client = await new ClientFactory().createFromUrl(url);
  await assert.rejects(client.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError);
});

// A 1.0 SDK reaches an agent's 0.3 side through the interface the card
// lists with protocolVersion 0.3 (the SDK's legacyCompat picks it by that).
test('the card lists a 0.3 JSON-RPC interface', async () => {
  const card = await AgentCardResolver.default.resolve(url);
  const legacy = (card.supportedInterfaces ?? []).filter(
    (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion?.startsWith('0.3'),
  );
  assert.ok(legacy.length > 0, `supportedInterfaces has no 0.3 JSON-RPC entry: ${JSON.stringify(card.supportedInterfaces)}`);
  assert.equal(legacy[0].url, url);
});

// The same flow over protocol 0.3, through the SDK's legacy compat layer,
// pointed at the endpoint as a 0.3 interface whatever the card lists.
test('0.3 via legacyCompat: sendMessage, sendMessageStream, errors', async () => {
  const card = await AgentCardResolver.default.resolve(url);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
  });
  const client = await factory.createFromAgentCard({
    ...card,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' }],
  });
  assert.equal(client.protocolVersion, '0.3');

  const result = await client.sendMessage(sendRequest(skillMessage('weather', { city: 'Paris' })));
  assert.ok(isTask(result), `expected a Task, got ${JSON.stringify(result)}`);
  assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(result.status));
  assertWeatherArtifact(result.artifacts);

  const events = [];
  for await (const ev of client.sendMessageStream(sendRequest(skillMessage('weather', { city: 'Paris' })))) {
    events.push(ev);
  }
  const kinds = events.map((e) => e.payload?.$case);
  assert.equal(kinds[0], 'task', `first event should be the Task: ${kinds}`);
  const last = events.filter((e) => e.payload.$case === 'statusUpdate').at(-1);
  assert.equal(last?.payload.value.status?.state, TaskState.TASK_STATE_COMPLETED, `no completed status: ${kinds}`);

  await assert.rejects(client.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError);
});

// An A2A-Version the agent does not speak reaches the SDK as
// VersionNotSupportedError, on a unary call (a JSON-RPC error) as on a
// stream (one SSE event holding the error, as every error of a streaming
// method comes).
test('an unsupported A2A-Version is VersionNotSupportedError, streaming or not', async () => {
  const futureVersion = (input, init = {}) => {
    const headers = new Headers(init.headers);
    if (headers.has('A2A-Version')) headers.set('A2A-Version', '9.9');
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: futureVersion })] });
  const client = await factory.createFromUrl(url);
  const request = sendRequest(skillMessage('weather', { city: 'Paris' }));
  await assert.rejects(client.sendMessage(request), VersionNotSupportedError);
  // The SDK wraps an error read from the stream; the typed error is its cause.
  await assert.rejects(async () => {
    for await (const ev of client.sendMessageStream(request)) {
      assert.fail(`an event before the error: ${JSON.stringify(ev)}`);
    }
  }, (err) => err instanceof VersionNotSupportedError || err.cause instanceof VersionNotSupportedError);
});

// The HTTP+JSON binding, which the card lists when the agent serves it: a
// client that prefers it picks it from the card.
async function restClient(t) {
  const card = await AgentCardResolver.default.resolve(url);
  const iface = (card.supportedInterfaces ?? []).find((i) => i.protocolBinding === 'HTTP+JSON');
  if (!iface) {
    t.skip('the card lists no HTTP+JSON interface');
    return undefined;
  }
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ['HTTP+JSON'] }),
  );
  const client = await factory.createFromAgentCard(card);
  assert.equal(client.transport.protocolName, 'HTTP+JSON');
  return client;
}

test('HTTP+JSON: send, get, list, stream, multi-turn', async (t) => {
  const client = await restClient(t);
  if (!client) return;
  const result = await client.sendMessage(sendRequest(skillMessage('weather', { city: 'Paris' })));
  assert.ok(isTask(result), `expected a Task, got ${JSON.stringify(result)}`);
  assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(result.status));
  assertWeatherArtifact(result.artifacts);

  const got = await client.getTask({ tenant: '', id: result.id, historyLength: 1 });
  assert.equal(got.id, result.id);
  assert.ok(got.history.length <= 1, `historyLength 1 returned ${got.history.length} messages`);
  const list = await client.listTasks({ tenant: '', contextId: result.contextId, includeArtifacts: true });
  assert.deepEqual(list.tasks.map((x) => x.id), [result.id]);
  assertWeatherArtifact(list.tasks[0].artifacts);

  const events = [];
  for await (const ev of client.sendMessageStream(sendRequest(skillMessage('count', { to: 3 })))) {
    events.push(ev);
  }
  const kinds = events.map((e) => e.payload?.$case);
  assert.equal(kinds[0], 'task', `first event should be the Task: ${kinds}`);
  assert.equal(events.at(-1).payload.value.status?.state, TaskState.TASK_STATE_COMPLETED, `last event: ${kinds}`);
  const chunks = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value.artifact);
  assert.deepEqual(artifactData(chunks), ['{"n":1}', '{"n":2}', '{"n":3}']);

  // A missing argument asks for input; the follow-up on the task completes it.
  const asked = await client.sendMessage(sendRequest(skillMessage('weather', {})));
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(asked.status));
  const followUp = skillMessage('weather', { city: 'Paris' });
  followUp.taskId = asked.id;
  followUp.contextId = asked.contextId;
  const done = await client.sendMessage(sendRequest(followUp));
  assert.equal(done.id, asked.id);
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(done.status));
});

test('HTTP+JSON: cancel ends the subscribers\' streams; errors are typed', async (t) => {
  const client = await restClient(t);
  if (!client) return;
  const started = await client.sendMessage({
    ...sendRequest(skillMessage('slow', { seconds: 30 })),
    configuration: { acceptedOutputModes: [], returnImmediately: true, historyLength: undefined, taskPushNotificationConfig: undefined },
  });
  assert.equal(started.status?.state, TaskState.TASK_STATE_WORKING, JSON.stringify(started.status));

  const stream = client.resubscribeTask({ tenant: '', id: started.id });
  const first = await stream.next();
  assert.equal(first.value?.payload?.$case, 'task', JSON.stringify(first.value));
  const canceled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
  assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
  let last;
  for await (const ev of stream) last = ev;
  assert.equal(last?.payload.value.status?.state, TaskState.TASK_STATE_CANCELED, JSON.stringify(last));

  await assert.rejects(client.getTask({ tenant: '', id: randomUUID() }), TaskNotFoundError);
  await assert.rejects(client.cancelTask({ tenant: '', id: started.id, metadata: undefined }), TaskNotCancelableError);
  await assert.rejects(async () => {
    for await (const ev of client.resubscribeTask({ tenant: '', id: started.id })) {
      assert.fail(`an event before the error: ${JSON.stringify(ev)}`);
    }
  }, UnsupportedOperationError);
});
