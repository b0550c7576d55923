// Paddock code layer: the JavaScript kernel behind one code context (supervisor). Uploaded by Paddock.
//
// Protocol: requests arrive on stdin as JSON lines; replies leave on this process's stdout as frames
// (4-byte big-endian length, then UTF-8 JSON). Cells run in a forked worker whose stdout and stderr are
// pipes this supervisor reads, so console output, process.stdout writes and subprocess output are all
// captured as "stream" messages and can never be mistaken for a protocol frame. The worker ends each cell
// by writing a random marker to both pipes before it reports over IPC; the cell is done when all three
// have arrived, so no output is attributed to the wrong cell.
'use strict';
const { fork } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { StringDecoder } = require('string_decoder');

const MAX_FRAME = 32 << 20;
const nonce = crypto.randomBytes(16).toString('hex');
const MARK = Buffer.from('\u0000\u001bPADDOCK-' + nonce + '-', 'latin1');

function send(msg) {
  let data = Buffer.from(JSON.stringify(msg), 'utf8');
  if (data.length > MAX_FRAME) {
    data = Buffer.from(JSON.stringify({ type: 'stream', id: msg.id, name: 'stderr',
      text: `paddock: a ${msg.type} message of ${data.length} bytes was dropped (limit ${MAX_FRAME})\n` }));
  }
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length, 0);
  const frame = Buffer.concat([head, data]);
  let off = 0;
  while (off < frame.length) {
    try {
      off += fs.writeSync(1, frame, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

let worker = null;
let cell = null;            // { id, cap, used, truncated, marks, done, msg }
const streams = {};

function newStream(name) {
  return { name, pending: Buffer.alloc(0), decoder: new StringDecoder('utf8') };
}

function forward(s, buf) {
  if (buf.length === 0) return;
  if (cell) {
    const room = cell.cap - cell.used[s.name];
    if (room <= 0) { cell.truncated[s.name] = true; return; }
    if (buf.length > room) { buf = buf.subarray(0, room); cell.truncated[s.name] = true; }
    cell.used[s.name] += buf.length;
  }
  const text = s.decoder.write(buf);
  if (text) send({ type: 'stream', id: cell ? cell.id : null, name: s.name, text });
}

// Length of the longest suffix of buf that is a prefix of MARK (bytes that may start a marker).
function partialMark(buf) {
  const max = Math.min(buf.length, MARK.length - 1);
  for (let n = max; n > 0; n--) {
    if (buf.subarray(buf.length - n).equals(MARK.subarray(0, n))) return n;
  }
  return 0;
}

function onData(s, chunk) {
  let buf = s.pending.length ? Buffer.concat([s.pending, chunk]) : chunk;
  s.pending = Buffer.alloc(0);
  for (;;) {
    const at = buf.indexOf(MARK);
    if (at < 0) break;
    const end = buf.indexOf(0, at + MARK.length);
    if (end < 0) { forward(s, buf.subarray(0, at)); s.pending = Buffer.from(buf.subarray(at)); return; }
    forward(s, buf.subarray(0, at));
    const id = buf.subarray(at + MARK.length, end).toString('latin1');
    const rest = s.decoder.end();
    if (rest) send({ type: 'stream', id: cell ? cell.id : null, name: s.name, text: rest });
    s.decoder = new StringDecoder('utf8');
    if (cell && String(cell.id) === id) { cell.marks[s.name] = true; maybeFinish(); }
    buf = buf.subarray(end + 1);
  }
  const keep = partialMark(buf);
  forward(s, buf.subarray(0, buf.length - keep));
  if (keep) s.pending = Buffer.from(buf.subarray(buf.length - keep));
}

function maybeFinish() {
  if (!cell || !cell.done || !cell.marks.stdout || !cell.marks.stderr) return;
  const msg = cell.done;
  for (const m of cell.held) send(m);   // results follow the cell's output
  msg.stdout_truncated = cell.truncated.stdout;
  msg.stderr_truncated = cell.truncated.stderr;
  cell = null;
  send(msg);
}

function startWorker() {
  streams.stdout = newStream('stdout');
  streams.stderr = newStream('stderr');
  const w = fork(path.join(__dirname, '_paddock_worker.js'), [nonce], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv: [], serialization: 'json',
  });
  w.stdout.on('data', (c) => onData(streams.stdout, c));
  w.stderr.on('data', (c) => onData(streams.stderr, c));
  w.on('message', (m) => {
    if (m.type === 'ready') {
      send({ type: 'ready', pid: process.pid, language: 'javascript', version: process.version });
    } else if (m.type === 'done') {
      if (cell && cell.id === m.id) { cell.done = m; maybeFinish(); }
    } else if (cell && m.id === cell.id) {
      if (cell.held.length < 200) cell.held.push(m);
    } else {
      send(m);
    }
  });
  w.on('exit', (code, signal) => {
    if (worker !== w) return;
    worker = null;
    if (cell) {
      const id = cell.id;
      cell = null;
      send({ type: 'done', id, status: 'died', duration_ms: 0, stdout_truncated: false, stderr_truncated: false,
        artifacts: [], error: { ename: 'ContextDied', evalue: `the context's process ended (${signal || 'code ' + code})`,
          traceback: '' } });
    }
    send({ type: 'died', code, signal });
    process.exit(3);   // Paddock restarts the context
  });
  worker = w;
}

process.on('SIGINT', () => { /* the worker handles interrupts; the supervisor lives on */ });

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  let req;
  try { req = JSON.parse(line); } catch (e) { send({ type: 'protocol_error', message: 'bad request line' }); return; }
  if (req.op === 'ping') { send({ type: 'pong', id: req.id }); return; }
  if (req.op === 'shutdown') { if (worker) worker.kill('SIGKILL'); process.exit(0); }
  if (req.op === 'execute') {
    cell = { id: req.id, cap: req.max_output || (1 << 20), used: { stdout: 0, stderr: 0 },
      truncated: { stdout: false, stderr: false }, marks: { stdout: false, stderr: false }, done: null, held: [] };
    worker.send(req);
    return;
  }
  send({ type: 'protocol_error', message: 'unknown op ' + req.op });
});
rl.on('close', () => { if (worker) worker.kill('SIGKILL'); process.exit(0); });

startWorker();
