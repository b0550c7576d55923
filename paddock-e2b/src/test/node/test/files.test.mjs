// envd's /files through the `e2b` SDK: text and bytes, one file and many, on each tier.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { meta, rejectsWith, runtimes } from '../helpers.mjs'

for (const runtime of runtimes) {
  test(`files on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime) })
    try {
      const info = await sbx.files.write('/workspace/notes/a.txt', 'hello from e2b\n')
      assert.equal(info.path, '/workspace/notes/a.txt')
      assert.equal(info.name, 'a.txt')
      assert.equal(await sbx.files.read('/workspace/notes/a.txt'), 'hello from e2b\n')

      const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) & 0xff)
      await sbx.files.write('/tmp/blob.bin', bytes)
      const back = await sbx.files.read('/tmp/blob.bin', { format: 'bytes' })
      assert.equal(back.length, bytes.length)
      assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'bytes round-trip')

      const many = await sbx.files.write([
        { path: '/workspace/m/one.txt', data: 'one' },
        { path: '/workspace/m/two.txt', data: new Uint8Array([116, 119, 111]) },
      ])
      assert.deepEqual(many.map((f) => f.path), ['/workspace/m/one.txt', '/workspace/m/two.txt'])
      assert.equal(await sbx.files.read('/workspace/m/two.txt'), 'two')

      await sbx.files.write('/workspace/empty.txt', '')
      assert.equal(await sbx.files.read('/workspace/empty.txt'), '')

      await rejectsWith(() => sbx.files.read('/workspace/missing.txt'), ['FileNotFoundError', 'NotFoundError'], assert)

      // The access token is the credential: without it, or with another sandbox's, nothing is served.
      for (const token of [undefined, 'pdk_wrong']) {
        const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' }
        if (token) headers['X-Access-Token'] = token
        const res = await fetch(`${process.env.E2B_SANDBOX_URL}/files?path=/workspace/notes/a.txt`, { headers })
        assert.equal(res.status, 401)
        assert.equal((await res.json()).code, 401)
      }
    } finally {
      await sbx.kill()
    }
  })
}

test('an upload over the daemon limit is refused', async () => {
  const limit = Number(process.env.PADDOCK_E2B_MAX_UPLOAD || 0)
  if (!limit) return
  const sbx = await Sandbox.create({ timeoutMs: 60_000, metadata: meta('runc') })
  try {
    const e = await rejectsWith(() => sbx.files.write('/tmp/big.bin', new Uint8Array(limit + 1024)), ['SandboxError', 'Error', 'TypeError'], assert)
    assert.match(e.message, /413: the upload is larger than the limit/)
    await rejectsWith(() => sbx.files.read('/tmp/big.bin'), ['FileNotFoundError', 'NotFoundError'], assert)
  } finally {
    await sbx.kill()
  }
})
