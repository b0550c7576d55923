// envd's Connect-RPC services (paddock-envd) through the `e2b` SDK: sandbox.commands.* and the
// filesystem RPCs of sandbox.files.* (list, exists, makeDir, remove, rename, getInfo, watchDir), on each tier.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, CommandExitError } from 'e2b'
import { meta, rejectsWith, runtimes } from '../helpers.mjs'

/** Waits until check() is true, polling every 50 ms, for at most ms. */
async function until(check, ms, what) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

for (const runtime of runtimes) {
  test(`commands on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime) })
    try {
      const r = await sbx.commands.run('echo hi; echo oops >&2')
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'hi\n')
      assert.equal(r.stderr, 'oops\n')

      const failed = await rejectsWith(() => sbx.commands.run('echo partial; exit 3'), ['CommandExitError'], assert)
      assert.ok(failed instanceof CommandExitError)
      assert.equal(failed.exitCode, 3)
      assert.equal(failed.stdout, 'partial\n')
      assert.equal(failed.error, 'exit status 3')

      const where = await sbx.commands.run('pwd; echo "$FOO"; id -un', { cwd: '/tmp', envs: { FOO: 'bar baz' } })
      assert.equal(where.stdout, '/tmp\nbar baz\nsandbox\n')
      const chunks = []
      await sbx.commands.run('for i in 1 2 3; do echo $i; done', { onStdout: (d) => chunks.push(d) })
      assert.equal(chunks.join(''), '1\n2\n3\n')

      // stdin: sendStdin and closeStdin on a background command; list shows it while it runs
      let out = ''
      const cat = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => { out += d } })
      assert.ok(cat.pid > 0)
      const listed = await sbx.commands.list()
      assert.ok(listed.some((p) => p.pid === cat.pid && p.cmd === '/bin/bash' && p.args.includes('cat')), JSON.stringify(listed))
      await sbx.commands.sendStdin(cat.pid, 'ping\n')
      await until(() => out === 'ping\n', 10_000, 'cat to echo its stdin')
      await cat.sendStdin('pong\n')
      await until(() => out === 'ping\npong\n', 10_000, 'the second line')
      await sbx.commands.closeStdin(cat.pid)
      const catResult = await cat.wait()
      assert.equal(catResult.exitCode, 0)
      assert.equal(catResult.stdout, 'ping\npong\n')

      // connect: a second handle on a running command sees its output and its end
      const ticker = await sbx.commands.run('sleep 0.5; for i in 1 2 3; do echo tick$i; sleep 0.2; done', { background: true })
      let seen = ''
      const again = await sbx.commands.connect(ticker.pid, { onStdout: (d) => { seen += d } })
      const connected = await again.wait()
      assert.equal(connected.exitCode, 0)
      assert.ok(seen.includes('tick3'), seen)
      await ticker.wait()

      // kill: true while it runs, then false; its handle ends with an error
      const sleeper = await sbx.commands.run('sleep 300', { background: true })
      assert.equal(await sbx.commands.kill(sleeper.pid), true)
      const killed = await rejectsWith(() => sleeper.wait(), ['CommandExitError'], assert)
      assert.equal(killed.error, 'signal: killed')
      assert.equal(await sbx.commands.kill(sleeper.pid), false)
      assert.deepEqual((await sbx.commands.list()).filter((p) => p.pid === sleeper.pid), [])

      // the command's timeout ends it as a TimeoutError; root is refused, as Paddock never runs tenant code as root
      await rejectsWith(() => sbx.commands.run('sleep 30', { timeoutMs: 1000 }), ['TimeoutError'], assert)
      const root = await rejectsWith(() => sbx.commands.run('id', { user: 'root' }), ['SandboxError', 'AuthenticationError', 'InvalidArgumentError'], assert)
      assert.match(root.message, /root/)
    } finally {
      await sbx.kill()
    }
  })

  test(`filesystem rpcs on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime) })
    try {
      assert.equal(await sbx.files.makeDir('/workspace/d/e'), true)
      assert.equal(await sbx.files.makeDir('/workspace/d/e'), false)
      assert.equal(await sbx.files.exists('/workspace/d'), true)
      assert.equal(await sbx.files.exists('/workspace/nope'), false)

      // files are made with commands, so that this suite needs only the RPCs (not /files)
      await sbx.commands.run("printf hello > /workspace/d/a.txt")
      const info = await sbx.files.getInfo('/workspace/d/a.txt')
      assert.equal(info.type, 'file')
      assert.equal(info.name, 'a.txt')
      assert.equal(info.path, '/workspace/d/a.txt')
      assert.equal(info.size, 5)
      assert.ok(info.modifiedTime instanceof Date)
      assert.equal((await sbx.files.getInfo('/workspace/d/e')).type, 'dir')
      await rejectsWith(() => sbx.files.getInfo('/workspace/nope'), ['FileNotFoundError', 'NotFoundError'], assert)

      const top = await sbx.files.list('/workspace/d')
      assert.deepEqual(top.map((e) => [e.name, e.type]).sort(), [['a.txt', 'file'], ['e', 'dir']])
      await sbx.commands.run('printf x > /workspace/d/e/deep.txt')
      const deep = await sbx.files.list('/workspace/d', { depth: 2 })
      assert.deepEqual(deep.map((e) => e.path).sort(), ['/workspace/d/a.txt', '/workspace/d/e', '/workspace/d/e/deep.txt'])
      await rejectsWith(() => sbx.files.list('/workspace/nope'), ['FileNotFoundError', 'NotFoundError'], assert)

      const moved = await sbx.files.rename('/workspace/d/a.txt', '/workspace/d/b.txt')
      assert.equal(moved.path, '/workspace/d/b.txt')
      assert.equal((await sbx.commands.run('cat /workspace/d/b.txt')).stdout, 'hello')
      assert.equal(await sbx.files.exists('/workspace/d/a.txt'), false)
      await rejectsWith(() => sbx.files.rename('/workspace/d/a.txt', '/workspace/d/c.txt'), ['FileNotFoundError', 'NotFoundError'], assert)

      await sbx.files.remove('/workspace/d')
      assert.equal(await sbx.files.exists('/workspace/d'), false)

      // watchDir polls; events arrive within a poll interval
      await sbx.files.makeDir('/workspace/w')
      const events = []
      const handle = await sbx.files.watchDir('/workspace/w', (e) => { events.push(e) }, { recursive: true })
      await sbx.commands.run('printf data > /workspace/w/new.txt')
      await until(() => events.some((e) => e.name === 'new.txt' && e.type === 'create'), 10_000, 'a create event')
      await sbx.files.remove('/workspace/w/new.txt')
      await until(() => events.some((e) => e.name === 'new.txt' && e.type === 'remove'), 10_000, 'a remove event')
      await handle.stop()
    } finally {
      await sbx.kill()
    }
  })
}
