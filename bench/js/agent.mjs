// The agent an operator would otherwise write with the official A2A
// JavaScript SDK (@a2a-js/sdk 1.x) on Node: the SDK's DefaultRequestHandler,
// InMemoryTaskStore and JSON-RPC transport handler, and an executor that
// makes the same upstream call as caddy-a2a's "item" skill and answers the
// same task: completed, with the upstream's JSON body as a data artifact
// named "result".
//
// It serves JSON-RPC on node:http directly rather than through the SDK's
// Express middleware, so the figures are the SDK's own cost, without
// Express's on top.
//
//   node agent.mjs --upstream http://127.0.0.1:9090 [--port 0]
//
// It prints its address (127.0.0.1:port) as the first line of stdout.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import { TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  defaultServerCallContextBuilder,
} from '@a2a-js/sdk/server';

const { values: args } = parseArgs({
  options: {
    upstream: { type: 'string' },
    port: { type: 'string', default: '0' },
  },
});
if (!args.upstream) {
  console.error('agent.mjs: --upstream is required');
  process.exit(2);
}
const itemURL = `${args.upstream}/item`;

function status(state) {
  return { state, message: undefined, timestamp: new Date().toISOString() };
}

class ItemExecutor {
  async execute(requestContext, eventBus) {
    const { taskId, contextId } = requestContext;
    if (!requestContext.task) {
      eventBus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [requestContext.userMessage],
          metadata: undefined,
        }),
      );
    }
    let data;
    try {
      const res = await fetch(itemURL);
      if (!res.ok) throw new Error(`GET ${itemURL}: HTTP ${res.status}`);
      data = await res.json();
    } catch (err) {
      eventBus.publish(
        AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_FAILED), metadata: undefined }),
      );
      console.error(`upstream call failed: ${err.message}`);
      return;
    }
    eventBus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: 'result',
          description: '',
          parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' }],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    eventBus.publish(
      AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }),
    );
  }

  async cancelTask(taskId, eventBus) {
    eventBus.publish(
      AgentEvent.statusUpdate({ taskId, contextId: '', status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined }),
    );
  }
}

const server = http.createServer();
const user = new UnauthenticatedUser();
let transport;

server.on('request', (req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'POST' }).end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    try {
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user,
        headers: req.headers,
        requestedVersion: req.headers['a2a-version'] || undefined,
      });
      const answer = await transport.handle(Buffer.concat(chunks).toString('utf8'), context);
      if (typeof answer?.[Symbol.asyncIterator] === 'function') {
        // Streaming methods are not part of this benchmark.
        res.writeHead(501).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    } catch (err) {
      console.error(`request failed: ${err.stack || err}`);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
});

server.listen(Number(args.port), '127.0.0.1', () => {
  const { port } = server.address();
  const url = `http://127.0.0.1:${port}/`;
  const card = {
    name: 'Bench JS SDK Agent',
    description: 'The benchmark agent written with @a2a-js/sdk',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [
      {
        id: 'item',
        name: 'Item',
        description: 'One catalogue item, as the upstream answers it.',
        tags: ['bench'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
  transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), new ItemExecutor()));
  console.log(`127.0.0.1:${port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}
