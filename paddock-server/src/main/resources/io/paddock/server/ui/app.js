// Paddock's dashboard: the REST API (/v1) seen through a session of this tab. No framework, no innerHTML: every
// value the daemon returns reaches the page as text (textContent), so a name, label or log line is never markup.
'use strict';

(() => {
  const CSRF_KEY = 'paddock.csrf'; // this tab's only: sessionStorage is per tab and per origin
  const REFRESH_MS = 3000;
  const LOGS_MS = 2000;
  const DISARM_MS = 5000;

  let csrf = sessionStorage.getItem(CSRF_KEY);
  let refreshTimer = null;
  let refreshing = false;
  let logsTimer = null;
  let logsId = null;
  let states = new Map(); // sandbox id -> state, from the last list
  const armed = new Map(); // sandbox id -> timer: its Destroy button waits for a second click

  const $ = (id) => document.getElementById(id);

  function el(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) {
      e.textContent = String(text);
    }
    if (className) {
      e.className = className;
    }
    return e;
  }

  function row(cells) {
    const tr = document.createElement('tr');
    for (const c of cells) {
      const td = document.createElement('td');
      if (c instanceof Node) {
        td.appendChild(c);
      } else {
        td.textContent = c === undefined || c === null ? '' : String(c);
      }
      tr.appendChild(td);
    }
    return tr;
  }

  class SessionEnded extends Error {}

  /** A call to the API with this tab's session; its answer's JSON, or an Error saying what went wrong. */
  async function api(method, path) {
    const r = await fetch(path, {
      method,
      headers: { 'X-Paddock-CSRF': csrf || '' },
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (r.status === 401) {
      signedOut('Your session has ended; sign in again.');
      throw new SessionEnded();
    }
    if (!r.ok) {
      throw new Error(await errorText(r));
    }
    return r.status === 204 ? null : r.json();
  }

  async function errorText(r) {
    try {
      const b = await r.json();
      return b.error.code + ': ' + b.error.message;
    } catch (e) {
      return 'HTTP ' + r.status;
    }
  }

  // ---- formatting ----

  function bytes(n) {
    if (n === null || n === undefined) {
      return '';
    }
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
  }

  function seconds(s) {
    if (s < 60) {
      return Math.floor(s) + 's';
    }
    if (s < 3600) {
      return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
    }
    if (s < 86400) {
      return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
    }
    return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
  }

  function age(iso) {
    return seconds(Math.max(0, (Date.now() - Date.parse(iso)) / 1000));
  }

  function cpu(ms) {
    return ms < 1000 ? Math.round(ms) + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  }

  function decode(b64) {
    const raw = atob(b64 || '');
    const buf = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) {
      buf[i] = raw.charCodeAt(i);
    }
    return new TextDecoder('utf-8').decode(buf);
  }

  // ---- sign in and out ----

  function show(signedIn) {
    $('login').hidden = signedIn;
    $('app').hidden = !signedIn;
    $('logout').hidden = !signedIn;
    if (!signedIn) {
      $('who').textContent = '';
    }
  }

  function signedIn(who) {
    $('who').textContent = who.operator ? 'operator' : 'tenant ' + who.tenant;
    $('login-error').textContent = '';
    show(true);
    refresh();
    clearInterval(refreshTimer);
    refreshTimer = setInterval(refresh, REFRESH_MS);
  }

  function signedOut(message) {
    csrf = null;
    sessionStorage.removeItem(CSRF_KEY);
    clearInterval(refreshTimer);
    refreshTimer = null;
    closeLogs();
    show(false);
    $('login-error').textContent = message || '';
    $('token').focus();
  }

  async function login(event) {
    event.preventDefault();
    const token = $('token').value.trim();
    $('login-error').textContent = '';
    let r;
    try {
      r = await fetch('/ui/login', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token }),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch (e) {
      $('login-error').textContent = 'The daemon did not answer: ' + e.message;
      return;
    }
    $('token').value = '';
    if (!r.ok) {
      $('login-error').textContent = r.status === 401 ? 'That token is not known to this daemon.' : await errorText(r);
      return;
    }
    const who = await r.json();
    csrf = who.csrf_token;
    sessionStorage.setItem(CSRF_KEY, csrf);
    signedIn(who);
  }

  async function logout() {
    try {
      await fetch('/ui/logout', { method: 'POST', headers: { 'X-Paddock-CSRF': csrf || '' }, credentials: 'same-origin' });
    } finally {
      signedOut('Signed out.');
    }
  }

  // ---- the lists ----

  async function refresh() {
    if (refreshing || !csrf) {
      return;
    }
    refreshing = true;
    try {
      const [list, version, images] = await Promise.all([
        api('GET', '/v1/sandboxes?limit=1000'), api('GET', '/v1/version'), api('GET', '/v1/images')]);
      const usage = await Promise.all(list.sandboxes.map((s) => s.state === 'RUNNING' || s.state === 'PAUSED'
        ? api('GET', '/v1/sandboxes/' + encodeURIComponent(s.id) + '/usage').catch(() => null)
        : Promise.resolve(null)));
      renderSandboxes(list.sandboxes, usage, list.next_page_token !== null);
      renderPools(version.pools || []);
      renderImages(images.images || []);
      $('error').textContent = '';
      $('updated').textContent = 'Updated at ' + new Date().toLocaleTimeString() + '; every ' + REFRESH_MS / 1000 + ' s.';
    } catch (e) {
      if (!(e instanceof SessionEnded)) {
        $('error').textContent = 'Could not refresh: ' + e.message;
      }
    } finally {
      refreshing = false;
    }
  }

  function renderSandboxes(sandboxes, usage, more) {
    const body = $('sandboxes').tBodies[0];
    const rows = [];
    states = new Map();
    sandboxes.forEach((s, i) => {
      states.set(s.id, s.state);
      const u = usage[i];
      const labels = el('span');
      for (const [k, v] of Object.entries(s.labels || {})) {
        labels.appendChild(el('span', k + '=' + v, 'label'));
      }
      const state = el('span', s.state + (s.stop_reason ? ' (' + s.stop_reason.toLowerCase() + ')' : ''),
        'state state-' + s.state.toLowerCase());
      const actions = el('span', null, 'actions');
      const logs = el('button', 'Logs', 'logs');
      logs.type = 'button';
      logs.addEventListener('click', () => openLogs(s.id));
      actions.appendChild(logs);
      if (s.state !== 'STOPPED' && s.state !== 'STOPPING') {
        const destroy = el('button', armed.has(s.id) ? 'Confirm destroy' : 'Destroy', 'destroy');
        destroy.type = 'button';
        if (armed.has(s.id)) {
          destroy.classList.add('armed');
        }
        destroy.addEventListener('click', () => destroyClicked(s.id, destroy));
        actions.appendChild(destroy);
      }
      const tr = row([el('code', s.id), s.name || '', state, labels, s.image, s.runtime, age(s.created_at),
        u ? bytes(u.memory_bytes) + (u.memory_limit_bytes !== null ? ' / ' + bytes(u.memory_limit_bytes) : '') : '',
        u ? cpu(u.cpu_time_ms) : '', u ? u.processes : '', actions]);
      tr.dataset.id = s.id;
      tr.dataset.state = s.state;
      tr.children[7].className = 'memory';
      tr.children[8].className = 'cpu';
      tr.children[9].className = 'tasks';
      rows.push(tr);
    });
    body.replaceChildren(...rows);
    $('no-sandboxes').hidden = sandboxes.length > 0;
    $('sandbox-count').textContent = '(' + sandboxes.length + (more ? '+' : '') + ')';
    if (logsId) {
      $('logs-state').textContent = states.has(logsId) ? states.get(logsId) : 'gone';
    }
  }

  function renderPools(pools) {
    $('pools').tBodies[0].replaceChildren(...pools.map((p) => row([p.shape, p.size, p.idle, p.creating, p.hits,
      p.misses, p.failures, p.refillP50Ms + ' ms'])));
    $('no-pools').hidden = pools.length > 0;
    $('pools').hidden = pools.length === 0;
  }

  function renderImages(images) {
    $('images').tBodies[0].replaceChildren(...images.map((i) => row([
      i.names.length ? i.names.join(', ') : '(no name)', el('code', i.id.replace(/^sha256:/, '').slice(0, 12)),
      bytes(i.size), i.layers, i.created ? new Date(i.created).toLocaleString() : ''])));
    $('no-images').hidden = images.length > 0;
    $('images').hidden = images.length === 0;
  }

  // ---- destroy: two clicks, the second within a few seconds ----

  async function destroyClicked(id, button) {
    if (!armed.has(id)) {
      armed.set(id, setTimeout(() => {
        armed.delete(id);
        button.textContent = 'Destroy';
        button.classList.remove('armed');
      }, DISARM_MS));
      button.textContent = 'Confirm destroy';
      button.classList.add('armed');
      return;
    }
    clearTimeout(armed.get(id));
    armed.delete(id);
    button.disabled = true;
    button.textContent = 'Destroying…';
    try {
      await api('DELETE', '/v1/sandboxes/' + encodeURIComponent(id));
    } catch (e) {
      if (!(e instanceof SessionEnded)) {
        $('error').textContent = 'Could not destroy ' + id + ': ' + e.message;
      }
    }
    refresh();
  }

  // ---- live logs ----

  function openLogs(id) {
    closeLogs();
    logsId = id;
    $('logs-id').textContent = id;
    $('logs-state').textContent = states.get(id) || '';
    $('logs-stdout').textContent = '';
    $('logs-stderr').textContent = '';
    $('logs').hidden = false;
    pollLogs();
    logsTimer = setInterval(pollLogs, LOGS_MS);
    $('logs').scrollIntoView({ block: 'nearest' });
  }

  function closeLogs() {
    clearInterval(logsTimer);
    logsTimer = null;
    logsId = null;
    $('logs').hidden = true;
  }

  function fill(pre, text) {
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (pre.textContent !== text) {
      pre.textContent = text;
      if (atEnd) {
        pre.scrollTop = pre.scrollHeight;
      }
    }
  }

  async function pollLogs() {
    const id = logsId;
    if (!id) {
      return;
    }
    try {
      const l = await api('GET', '/v1/sandboxes/' + encodeURIComponent(id) + '/logs');
      if (id !== logsId) {
        return;
      }
      fill($('logs-stdout'), decode(l.stdout));
      fill($('logs-stderr'), decode(l.stderr));
      $('logs-stdout-truncated').textContent = l.stdout_truncated ? '(older output dropped)' : '';
      $('logs-stderr-truncated').textContent = l.stderr_truncated ? '(older output dropped)' : '';
    } catch (e) {
      if (!(e instanceof SessionEnded) && id === logsId) {
        $('logs-state').textContent = e.message;
      }
    }
  }

  // ---- start ----

  $('login-form').addEventListener('submit', login);
  $('logout').addEventListener('click', logout);
  $('logs-close').addEventListener('click', closeLogs);

  (async () => {
    if (!csrf) {
      signedOut('');
      return;
    }
    try {
      const r = await fetch('/ui/session', { headers: { 'X-Paddock-CSRF': csrf }, credentials: 'same-origin', cache: 'no-store' });
      if (r.ok) {
        signedIn(await r.json());
        return;
      }
    } catch (e) {
      // the daemon did not answer: sign in again
    }
    signedOut('');
  })();
})();
