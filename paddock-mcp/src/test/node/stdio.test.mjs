// Paddock's stdio MCP server (PADDOCK_MCP_COMMAND, a JSON argv) driven by the official TypeScript SDK client.
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { listsTheTools, reportsErrorsClearly, reportsProgressOnLongRuns, usesASandbox } from './scenario.mjs';

const argv = process.env.PADDOCK_MCP_COMMAND && JSON.parse(process.env.PADDOCK_MCP_COMMAND);
const skip = argv ? false : 'PADDOCK_MCP_COMMAND is not set (McpNodeStdioTest sets it)';
let client;

before(async () => {
  if (skip) return;
  client = new Client({ name: 'paddock-node-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: process.env, stderr: 'inherit' }));
});

after(async () => { await client?.close(); });

test('stdio: lists the tools', { skip }, () => listsTheTools(client));
test('stdio: creates, uses and destroys a sandbox', { skip }, () => usesASandbox(client, 'node-stdio'));
test('stdio: reports errors clearly', { skip }, () => reportsErrorsClearly(client));
test('stdio: reports progress on long runs', { skip }, () => reportsProgressOnLongRuns(client));
