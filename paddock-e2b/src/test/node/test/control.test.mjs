// E2B's control plane through the official `e2b` SDK, unchanged: create, connect, list, getInfo,
// setTimeout, isRunning, kill, and the errors its exceptions are made from.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { meta, rejectsWith, runId, otherKey, runtimes } from '../helpers.mjs'

test('create, getInfo, connect, list by metadata, setTimeout, kill', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta('runc', { owner: 'alice' }), envs: { GREETING: 'hi' } })
  try {
    assert.match(sbx.sandboxId, /^sb-[a-z0-9]+$/)
    assert.equal(await sbx.isRunning(), true)
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, 'base')
    assert.equal(info.state, 'running')
    assert.equal(info.metadata.owner, 'alice')
    assert.equal(info.metadata.suite, runId)
    const left = info.endAt.getTime() - Date.now()
    assert.ok(left > 60_000 && left <= 121_000, `endAt ${info.endAt.toISOString()}`)

    await sbx.setTimeout(600_000)
    const later = await Sandbox.getInfo(sbx.sandboxId)
    assert.ok(later.endAt.getTime() - Date.now() > 500_000, 'setTimeout moved endAt')

    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal(again.sandboxId, sbx.sandboxId)
    assert.equal(await again.isRunning(), true)

    const found = await Sandbox.list({ query: { metadata: { suite: runId, owner: 'alice' } } }).nextItems()
    assert.deepEqual(found.map((s) => s.sandboxId), [sbx.sandboxId])
    assert.equal(found[0].metadata.owner, 'alice')
    const none = await Sandbox.list({ query: { metadata: { suite: runId, owner: 'bob' } } }).nextItems()
    assert.deepEqual(none, [])
  } finally {
    assert.equal(await sbx.kill(), true)
  }
  assert.equal(await sbx.isRunning(), false)
  assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'a killed sandbox is gone: kill answers false')
  await rejectsWith(() => Sandbox.getInfo(sbx.sandboxId), ['SandboxNotFoundError', 'NotFoundError'], assert)
  await rejectsWith(() => Sandbox.connect(sbx.sandboxId), ['SandboxNotFoundError', 'NotFoundError'], assert)
  await rejectsWith(() => sbx.files.read('/etc/hostname'), ['TimeoutError'], assert)
})

test('unknown ids, wrong keys, unknown templates, unsupported calls', async () => {
  const unknown = '0123456789abcdef0123456789abcdef'
  await rejectsWith(() => Sandbox.getInfo(unknown), ['SandboxNotFoundError', 'NotFoundError'], assert)
  await rejectsWith(() => Sandbox.getInfo('not-an-id'), ['SandboxNotFoundError', 'NotFoundError'], assert)
  await rejectsWith(() => Sandbox.connect(unknown), ['SandboxNotFoundError', 'NotFoundError'], assert)
  assert.equal(await Sandbox.kill(unknown), false)
  await rejectsWith(() => Sandbox.create({ apiKey: 'e2b_' + 'x'.repeat(40) }), ['AuthenticationError'], assert)
  await rejectsWith(() => Sandbox.list({ apiKey: 'wrong' }).nextItems(), ['AuthenticationError'], assert)
  const e = await rejectsWith(() => Sandbox.create('no-such-template'), ['SandboxError', 'NotFoundError'], assert)
  assert.match(e.message, /no-such-template/)
  const m = await rejectsWith(() => Sandbox.getMetrics(unknown), ['SandboxError'], assert)
  assert.match(m.message, /not supported by Paddock/)
})

test('a tenant sees only its own sandboxes', { skip: !otherKey }, async () => {
  const sbx = await Sandbox.create({ timeoutMs: 60_000, metadata: meta('runc') })
  try {
    await rejectsWith(() => Sandbox.getInfo(sbx.sandboxId, { apiKey: otherKey }), ['SandboxNotFoundError', 'NotFoundError'], assert)
    await rejectsWith(() => Sandbox.connect(sbx.sandboxId, { apiKey: otherKey }), ['SandboxNotFoundError', 'NotFoundError'], assert)
    assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: otherKey }), false)
    const theirs = await Sandbox.list({ apiKey: otherKey, query: { metadata: { suite: runId } } }).nextItems()
    assert.deepEqual(theirs, [])
    assert.equal(await sbx.isRunning(), true)
  } finally {
    await sbx.kill()
  }
})

for (const runtime of runtimes) {
  test(`pause, and connect resumes, on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime) })
    try {
      await sbx.files.write('/workspace/kept.txt', 'kept')
      assert.equal(await sbx.pause(), true)
      assert.equal((await sbx.getInfo()).state, 'paused')
      assert.equal(await sbx.isRunning(), false)
      assert.equal(await sbx.pause(), false, 'pausing a paused sandbox answers 409: false')
      const paused = await Sandbox.list({ query: { metadata: { suite: runId }, state: ['paused'] } }).nextItems()
      assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId))
      const resumed = await Sandbox.connect(sbx.sandboxId)
      assert.equal((await resumed.getInfo()).state, 'running')
      assert.equal(await resumed.files.read('/workspace/kept.txt'), 'kept')
    } finally {
      await sbx.kill()
    }
  })
}
