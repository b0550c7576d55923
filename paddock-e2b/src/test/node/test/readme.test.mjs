// The README's E2B example, verbatim apart from the assertion.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from '@e2b/code-interpreter'

test('the README example', async () => {
  const sbx = await Sandbox.create('base', { timeoutMs: 60_000 })   // 'base': the host image; the default,
  const run = await sbx.runCode('x = 6 * 7\nx')                      //   code-interpreter-v1, is the code image
  assert.equal(run.text, '42')                                       // console.log(run.text) prints 42
  await sbx.kill()
})
