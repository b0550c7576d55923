// The daemon's streamable-HTTP MCP endpoint (PADDOCK_MCP_URL, PADDOCK_MCP_TOKEN) driven by the official TypeScript SDK client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { listsTheTools, reportsErrorsClearly, reportsProgressOnLongRuns, usesASandbox } from './scenario.mjs';

const url = process.env.PADDOCK_MCP_URL;
const token = process.env.PADDOCK_MCP_TOKEN;
const skip = url && token ? false : 'PADDOCK_MCP_URL and PADDOCK_MCP_TOKEN are not set (McpHttpTest sets them)';
let client;

const transport = (bearer) => new StreamableHTTPClientTransport(new URL(url),
  bearer ? { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } } : {});

before(async () => {
  if (skip) return;
  client = new Client({ name: 'paddock-node-test', version: '1.0.0' });
  await client.connect(transport(token));
});

after(async () => { await client?.close(); });

test('http: lists the tools', { skip }, () => listsTheTools(client));
test('http: creates, uses and destroys a sandbox', { skip }, () => usesASandbox(client, 'node-http'));
test('http: reports errors clearly', { skip }, () => reportsErrorsClearly(client));
test('http: reports progress on long runs', { skip }, () => reportsProgressOnLongRuns(client));
test('http: refuses a client without the token, or with a wrong one', { skip }, async () => {
  for (const bearer of [undefined, 'wrong-token']) {
    const c = new Client({ name: 'paddock-node-test', version: '1.0.0' });
    await assert.rejects(c.connect(transport(bearer)), /401|Unauthorized|bearer|token/i);
  }
});
