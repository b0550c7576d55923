// The scenario both transports run: the official MCP TypeScript SDK's client calling every Paddock tool.
import assert from 'node:assert/strict';

export const TOOLS = ['sandbox_create', 'sandbox_list', 'sandbox_destroy', 'run_command', 'run_code',
  'read_file', 'write_file', 'list_files'];

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

export async function listsTheTools(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.ok(tool.description.length > 20, tool.name);
  }
  const run = tools.find((t) => t.name === 'run_command');
  assert.deepEqual(run.inputSchema.required.sort(), ['command', 'sandbox']);
  assert.equal(run.inputSchema.properties.command.type, 'array');
}

export async function usesASandbox(client, label) {
  const created = await client.callTool({ name: 'sandbox_create', arguments: { labels: { via: label }, memory: '512m' } });
  assert.ok(!created.isError, text(created));
  const id = /created sandbox (\S+)/.exec(text(created))[1];
  try {
    const listed = await client.callTool({ name: 'sandbox_list', arguments: { labels: { via: label } } });
    assert.ok(!listed.isError, text(listed));
    assert.match(text(listed), new RegExp(id));

    const echo = await client.callTool({ name: 'run_command', arguments: { sandbox: id, command: ['echo', 'hello', 'mcp'] } });
    assert.ok(!echo.isError, text(echo));
    assert.match(text(echo), /exited with code 0/);
    assert.match(text(echo), /hello mcp/);

    const failing = await client.callTool({ name: 'run_command',
      arguments: { sandbox: id, command: ['sh', '-c', 'echo out; echo oops >&2; exit 3'] } });
    assert.equal(failing.isError, true);
    assert.match(text(failing), /exited with code 3/);
    assert.match(text(failing), /--- stderr ---\noops/);

    const wrote = await client.callTool({ name: 'write_file',
      arguments: { sandbox: id, path: '/workspace/notes/a.txt', content: 'héllo from node\n' } });
    assert.ok(!wrote.isError, text(wrote));
    const read = await client.callTool({ name: 'read_file', arguments: { sandbox: id, path: 'notes/a.txt' } });
    assert.equal(text(read), 'héllo from node\n');
    const files = await client.callTool({ name: 'list_files', arguments: { sandbox: id, path: '/workspace/notes' } });
    assert.match(text(files), /file\t17\t.*\ta\.txt/);

    const plot = await client.callTool({ name: 'run_code', arguments: { sandbox: id, language: 'python',
      code: 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9]); plt.show()\nprint(6 * 7)\n' } });
    assert.ok(!plot.isError, text(plot));
    assert.match(text(plot), /--- stdout ---\n42\n/);
    const images = plot.content.filter((c) => c.type === 'image');
    assert.equal(images.length, 1, JSON.stringify(plot.content.map((c) => c.type)));
    assert.equal(images[0].mimeType, 'image/png');
    assert.ok(Buffer.from(images[0].data, 'base64').subarray(1, 4).toString() === 'PNG');

    const first = await client.callTool({ name: 'run_code', arguments: { sandbox: id, language: 'python', context: 'nb', code: 'x = 41' } });
    assert.ok(!first.isError, text(first));
    const second = await client.callTool({ name: 'run_code', arguments: { sandbox: id, language: 'python', context: 'nb', code: 'x + 1' } });
    assert.match(text(second), /--- value ---\n42\n/);

    const crash = await client.callTool({ name: 'run_code', arguments: { sandbox: id, language: 'python', code: '1/0' } });
    assert.equal(crash.isError, true);
    assert.match(text(crash), /ZeroDivisionError/);
  } finally {
    const destroyed = await client.callTool({ name: 'sandbox_destroy', arguments: { sandbox: id } });
    assert.ok(!destroyed.isError, text(destroyed));
  }
  const gone = await client.callTool({ name: 'run_command', arguments: { sandbox: id, command: ['true'] } });
  assert.equal(gone.isError, true);
}

export async function reportsErrorsClearly(client) {
  const unknown = await client.callTool({ name: 'run_command', arguments: { sandbox: 'no-such-sandbox', command: ['true'] } });
  assert.equal(unknown.isError, true);
  assert.match(text(unknown), /^NOT_FOUND: /);
  const invalid = await client.callTool({ name: 'sandbox_create', arguments: { memory: 'lots' } });
  assert.equal(invalid.isError, true);
  assert.match(text(invalid), /^INVALID_ARGUMENT: memory/);
  const missing = await client.callTool({ name: 'run_command', arguments: { command: ['true'] } });
  assert.equal(missing.isError, true);
  assert.match(text(missing), /sandbox/);
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool|-32602/);
}

// A run longer than the client's own timeout finishes: the server reports progress, which resets the timeout.
export async function reportsProgressOnLongRuns(client) {
  const created = await client.callTool({ name: 'sandbox_create', arguments: {} });
  const id = /created sandbox (\S+)/.exec(text(created))[1];
  try {
    const ticks = [];
    const slept = await client.callTool({ name: 'run_command', arguments: { sandbox: id, command: ['sleep', '9'] } },
      undefined, { timeout: 6000, resetTimeoutOnProgress: true, onprogress: (p) => ticks.push(p) });
    assert.ok(!slept.isError, text(slept));
    assert.ok(ticks.length >= 1, 'progress notifications');
    assert.match(ticks[0].message, /^run_command running for 5 s$/);
  } finally {
    await client.callTool({ name: 'sandbox_destroy', arguments: { sandbox: id } });
  }
}
