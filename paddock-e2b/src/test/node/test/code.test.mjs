// The code interpreter through `@e2b/code-interpreter`, unchanged: runCode with streaming callbacks,
// results (text, json, png), errors, contexts that keep state, other languages; on each tier.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'
import { meta, rejectsWith, runtimes } from '../helpers.mjs'

for (const runtime of runtimes) {
  test(`runCode on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 180_000, metadata: meta(runtime) })
    try {
      assert.equal((await sbx.getInfo()).templateId, 'code-interpreter-v1')
      const out = []
      const results = []
      const first = await sbx.runCode('x = 41\nprint("hello")', { onStdout: (m) => out.push(m.line), onResult: (r) => results.push(r) })
      assert.equal(first.error, undefined)
      assert.deepEqual(first.logs.stdout.join(''), 'hello\n')
      assert.equal(out.join(''), 'hello\n')

      const second = await sbx.runCode('x + 1', { onResult: (r) => results.push(r) })
      assert.equal(second.text, '42', 'state is kept in the default python context')
      assert.deepEqual(results.map((r) => [r.text, r.isMainResult]), [['42', true]], 'onResult saw the value')
      assert.ok(second.executionCount >= 2)

      const json = await sbx.runCode('{"a": 1, "b": [1, 2]}')
      assert.deepEqual(json.results[0].json, { a: 1, b: [1, 2] })

      const err = await sbx.runCode('1 / 0')
      assert.equal(err.error.name, 'ZeroDivisionError')
      assert.match(err.error.value, /division by zero/)
      assert.match(err.error.traceback, /ZeroDivisionError/)

      const stderr = []
      await sbx.runCode('import sys; sys.stderr.write("oops\\n")', { onStderr: (m) => stderr.push(m.line) })
      assert.equal(stderr.join(''), 'oops\n')

      const plot = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()')
      const png = plot.results.find((r) => r.png)
      assert.ok(png, `a png result: ${JSON.stringify(plot.results.map((r) => r.formats()))}`)
      assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG')

      const ctx = await sbx.createCodeContext({ language: 'python' })
      assert.equal(ctx.language, 'python')
      await sbx.runCode('y = "in ctx"', { context: ctx })
      assert.equal((await sbx.runCode('y', { context: ctx })).text, 'in ctx')
      const missing = await sbx.runCode('y')
      assert.equal(missing.error?.name, 'NameError', 'contexts are independent of the default one')
      const listed = await sbx.listCodeContexts()
      assert.ok(listed.some((c) => c.id === ctx.id))
      await sbx.removeCodeContext(ctx)
      await rejectsWith(() => sbx.runCode('1', { context: ctx }), ['NotFoundError'], assert)

      const js = await sbx.runCode('const z = 20; z + 22', { language: 'js' })
      assert.equal(js.text, '42')

      await rejectsWith(() => sbx.runCode('1', { context: ctx, language: 'python' }), ['InvalidArgumentError'], assert)

      const env = await sbx.runCode('import os\nos.environ.get("E2B_TEST_VAR")', { envs: { E2B_TEST_VAR: 'from-envs' } })
      assert.equal(env.text, 'from-envs', 'envs reach the cell')

      const bash = await sbx.runCode('echo "$((6 * 7))"', { language: 'bash' })
      assert.equal(bash.error, undefined)
      assert.equal(bash.logs.stdout.join(''), '42\n', 'a language without contexts runs once')

      const cwd = await sbx.createCodeContext({ language: 'python', cwd: '/tmp' })
      assert.equal(cwd.cwd, '/tmp')
      assert.equal((await sbx.runCode('import os\nos.getcwd()', { context: cwd })).text, '/tmp')
      await rejectsWith(() => sbx.createCodeContext({ language: 'python', cwd: '/no/such/dir' }), ['SandboxError'], assert)
    } finally {
      await sbx.kill()
    }
  })
}
