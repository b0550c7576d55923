// Paddock code layer: the JavaScript kernel's worker. Runs cells in this process's global context, so
// top-level declarations, required modules and functions persist from cell to cell. Uploaded by Paddock.
'use strict';
const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');

const nonce = process.argv[2];
const MAX_TEXT = 1 << 20;
let count = 0;
let interrupt = null;     // rejects the awaited value of the running cell on SIGINT

function installGlobals() {
  const base = path.join(process.cwd(), '<paddock-cell>');
  const req = Module.createRequire(base);
  const mod = new Module(base, null);
  mod.filename = base;
  mod.paths = Module._nodeModulePaths(process.cwd());
  globalThis.require = req;
  globalThis.module = mod;
  globalThis.exports = mod.exports;
  globalThis.__filename = base;
  globalThis.__dirname = process.cwd();
}

function richOutput(value) {
  const data = {};
  let text;
  try {
    text = util.inspect(value, { depth: 4, maxArrayLength: 200, maxStringLength: MAX_TEXT, breakLength: 100 });
  } catch (e) {
    text = `<uninspectable ${typeof value}>`;
  }
  data['text/plain'] = text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) + '…' : text;
  if (value !== null && typeof value === 'object' && typeof value._repr_html_ === 'function') {
    try {
      const html = value._repr_html_();
      if (typeof html === 'string' && html.length <= MAX_TEXT) data['text/html'] = html;
    } catch (e) { /* the value's problem */ }
  }
  const t = typeof value;
  if (t === 'string' || t === 'boolean' || (t === 'number' && Number.isFinite(value)) || (t === 'object' && value !== null)) {
    try {
      const json = JSON.stringify(value);
      if (typeof json === 'string' && json.length <= MAX_TEXT) data['application/json'] = json;
    } catch (e) { /* cycles, BigInt: text only */ }
  }
  return data;
}

function describeError(e, filename) {
  if (e instanceof Error || (e && typeof e === 'object' && 'stack' in e)) {
    const lines = String(e.stack || e).split('\n').filter((l) =>
      !l.includes('_paddock_worker.js') && !/^\s+at .*\bnode:/.test(l));
    return { ename: e.name || 'Error', evalue: String(e.message), traceback: lines.join('\n') + '\n' };
  }
  return { ename: 'Thrown', evalue: util.inspect(e), traceback: 'Uncaught ' + util.inspect(e) + '\n' };
}

function walkArtifacts(dir, limit = 1000) {
  const out = [];
  if (!dir) return out;
  const visit = (d) => {
    let entries;
    try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch (e) { return; }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const ent of entries) {
      if (out.length >= limit) return;
      const p = path.join(d, ent.name);
      if (ent.isDirectory()) visit(p);
      else if (ent.isFile()) {
        try { out.push({ path: path.relative(dir, p), size: fs.lstatSync(p).size }); } catch (e) { /* gone */ }
      }
    }
  };
  visit(dir);
  return out;
}

async function runCell(req) {
  count += 1;
  const filename = `cell-${count}.js`;
  const artifacts = req.artifacts_dir;
  if (artifacts) {
    process.env.PADDOCK_ARTIFACTS_DIR = artifacts;
    try { fs.mkdirSync(artifacts, { recursive: true }); } catch (e) { /* reported by the user's own writes */ }
  }
  let status = 'ok';
  let error;
  const started = process.hrtime.bigint();
  try {
    let script;
    let wrapped = false;
    try {
      script = new vm.Script(req.code, { filename });
    } catch (e) {
      if (e instanceof SyntaxError && /await is only valid/.test(e.message)) {
        // top-level await: run as an async function (its declarations stay local to the cell)
        script = new vm.Script('(async () => {\n' + req.code + '\n})()', { filename, lineOffset: -1 });
        wrapped = true;
      } else {
        throw e;
      }
    }
    let value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
    if (value !== null && typeof value === 'object' && typeof value.then === 'function') {
      value = await new Promise((resolve, reject) => {
        interrupt = reject;
        value.then(resolve, reject);
      });
    }
    if (value !== undefined && !wrapped) {
      globalThis._ = value;
      process.send({ type: 'result', id: req.id, data: richOutput(value) });
    }
  } catch (e) {
    const interrupted = e && typeof e.message === 'string'
      && (e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED' || e.message === 'Script execution was interrupted by `SIGINT`'
        || e.paddockInterrupt);
    status = interrupted ? 'interrupted' : 'error';
    error = describeError(e, filename);
    if (interrupted) error.ename = 'Interrupted';
    try { fs.writeSync(2, error.traceback); } catch (w) { /* stderr gone */ }
  } finally {
    interrupt = null;
  }
  let listing = [];
  if (artifacts) {
    // most cells write none: one rmdir(2) instead of a walk (on runsc every syscall is a trip through the Sentry)
    try { fs.rmdirSync(artifacts); } catch (e) { listing = walkArtifacts(artifacts); }
  }
  const done = { type: 'done', id: req.id, status,
    duration_ms: Number(process.hrtime.bigint() - started) / 1e6, artifacts: listing };
  if (error) done.error = error;
  // the marker follows every byte this cell wrote (pipe writes are synchronous on Linux)
  const mark = '\u0000\u001bPADDOCK-' + nonce + '-' + req.id + '\u0000';
  try { fs.writeSync(1, mark); } catch (e) { /* stdout gone */ }
  try { fs.writeSync(2, mark); } catch (e) { /* stderr gone */ }
  process.send(done);
}

process.on('SIGINT', () => {
  if (interrupt) {
    const e = new Error('Script execution was interrupted by `SIGINT`');
    e.paddockInterrupt = true;
    interrupt(e);
  }
});
process.on('uncaughtException', (e) => {
  try { fs.writeSync(2, 'Uncaught ' + (e && e.stack ? e.stack : String(e)) + '\n'); } catch (w) { /* gone */ }
});
process.on('unhandledRejection', (e) => {
  try { fs.writeSync(2, 'Unhandled rejection: ' + (e && e.stack ? e.stack : String(e)) + '\n'); } catch (w) { /* gone */ }
});

let queue = Promise.resolve();
process.on('message', (req) => {
  if (req.op === 'execute') queue = queue.then(() => runCell(req));
});
process.on('disconnect', () => process.exit(0));

installGlobals();
process.send({ type: 'ready' });
