// envd's Connect-RPC services (paddock-envd) through the listener's router, with the `e2b` SDK: commands
// (streamed output, exit codes, stdin) and the filesystem RPCs, on each tier.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError } from 'e2b'
import { meta, runtimes } from '../helpers.mjs'

for (const runtime of runtimes) {
  test(`commands and filesystem RPCs on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime), envs: { GREETING: 'hi' } })
    try {
      const chunks = []
      const r = await sbx.commands.run('echo "$GREETING from $(uname -s)"; echo err >&2', { onStdout: (d) => chunks.push(d) })
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'hi from Linux\n')
      assert.equal(r.stderr, 'err\n')
      assert.equal(chunks.join(''), 'hi from Linux\n')

      await assert.rejects(() => sbx.commands.run('exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3)

      await sbx.files.write('/workspace/d/x.txt', 'x')
      const names = (await sbx.files.list('/workspace/d')).map((e) => e.name)
      assert.deepEqual(names, ['x.txt'])
      assert.equal(await sbx.files.exists('/workspace/d/x.txt'), true)
      assert.equal(await sbx.files.exists('/workspace/d/nope'), false)
    } finally {
      await sbx.kill()
    }
  })
}
