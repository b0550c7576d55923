// sandbox.pty.* through the `e2b` SDK (paddock-envd's process.Process with a pty): create, sendInput, resize,
// connect, kill and wait, and commands.list showing a terminal, on each tier.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { meta, rejectsWith, runtimes } from '../helpers.mjs'

const typed = (text) => new TextEncoder().encode(text)

/** What a terminal showed, as text; until() waits for what comes next and consumes up to the end of it. */
class Screen {
  text = ''
  #decoder = new TextDecoder()
  #pos = 0
  onData = (bytes) => { this.text += this.#decoder.decode(bytes, { stream: true }) }

  async until(re, ms = 15_000) {
    const deadline = Date.now() + ms
    for (;;) {
      const m = re.exec(this.text.slice(this.#pos))
      if (m) {
        this.#pos += m.index + m[0].length
        return m
      }
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${re}; the terminal showed ${JSON.stringify(this.text.slice(this.#pos))}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

// Type only at a prompt, as a person does: an interactive shell may drop what is typed before it reads.
const PROMPT = /\$ /

for (const runtime of runtimes) {
  test(`pty on ${runtime}`, async () => {
    const sbx = await Sandbox.create({ timeoutMs: 120_000, metadata: meta(runtime) })
    try {
      const screen = new Screen()
      const term = await sbx.pty.create({ cols: 80, rows: 24, onData: screen.onData, cwd: '/tmp', envs: { GREETING: 'hi there' } })
      assert.ok(term.pid > 0)
      const listed = await sbx.commands.list()
      assert.ok(listed.some((p) => p.pid === term.pid && p.cmd === '/bin/bash' && p.args.join(' ') === '-i -l'), JSON.stringify(listed))
      await screen.until(PROMPT)

      // a real terminal: TERM, a /dev/pts device, its size, the envs and cwd given, \r\n line endings
      await sbx.pty.sendInput(term.pid, typed('echo $TERM; tty; stty size; echo "$GREETING"; pwd\n'))
      await screen.until(/xterm-256color\r\n\/dev\/pts\/\d+\r\n24 80\r\nhi there\r\n\/tmp\r\n/)
      await screen.until(PROMPT)

      // resize: the next stty size sees it
      await sbx.pty.resize(term.pid, { cols: 120, rows: 40 })
      await sbx.pty.sendInput(term.pid, typed('stty size\n'))
      await screen.until(/40 120\r\n/)
      await screen.until(PROMPT)

      // connect: a second handle sees the same terminal
      const seen = new Screen()
      const again = await sbx.pty.connect(term.pid, { onData: seen.onData })
      await sbx.pty.sendInput(term.pid, typed("echo con''nected\n"))
      await seen.until(/connected\r\n/)
      await screen.until(/connected\r\n/)
      await screen.until(PROMPT)

      // exit: both handles end with the shell's exit code, and it is no longer listed
      await sbx.pty.sendInput(term.pid, typed('exit\n'))
      const done = await term.wait()
      assert.equal(done.exitCode, 0)
      assert.equal((await again.wait()).exitCode, 0)
      assert.deepEqual((await sbx.commands.list()).filter((p) => p.pid === term.pid), [])

      // Ctrl-D at the prompt ends a shell too
      const eofScreen = new Screen()
      const eof = await sbx.pty.create({ cols: 80, rows: 24, onData: eofScreen.onData })
      await eofScreen.until(PROMPT)
      await sbx.pty.sendInput(eof.pid, new Uint8Array([4]))
      assert.equal((await eof.wait()).exitCode, 0)

      // kill: true while it runs, then false; its handle ends killed
      const doomed = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
      assert.equal(await sbx.pty.kill(doomed.pid), true)
      const killed = await rejectsWith(() => doomed.wait(), ['CommandExitError'], assert)
      assert.equal(killed.error, 'signal: killed')
      assert.equal(await sbx.pty.kill(doomed.pid), false)

      // a command without a pty takes neither pty input nor a resize
      const cat = await sbx.commands.run('cat', { background: true, stdin: true })
      const resize = await rejectsWith(() => sbx.pty.resize(cat.pid, { cols: 100, rows: 30 }), ['SandboxError'], assert)
      assert.match(resize.message, /tty not assigned/)
      const input = await rejectsWith(() => sbx.pty.sendInput(cat.pid, typed('x')), ['SandboxError'], assert)
      assert.match(input.message, /tty not assigned/)
      assert.equal(await cat.kill(), true)
    } finally {
      await sbx.kill()
    }
  })
}
