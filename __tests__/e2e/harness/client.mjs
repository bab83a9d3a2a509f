// Small fetch helpers for OpenCode's HTTP API, always scoped to one instance directory.
//
// OpenCode picks the instance from the `directory` query parameter, then the
// `x-opencode-directory` header, then its own cwd. We always send the query parameter.

import { withDirectory } from './opencode.mjs';

/**
 * @typedef {{url: string, projectDir: string}} Target  an OpencodeHandle or anything like it
 */

/**
 * Poll `fn` until it returns a truthy value (or resolves to one); return that value.
 * Errors thrown by `fn` count as "not yet" and the last one is reported on timeout.
 * @template T
 * @param {() => T | Promise<T>} fn
 * @param {{timeoutMs?: number, intervalMs?: number, message?: string}} [o]
 * @returns {Promise<NonNullable<Awaited<T>>>}
 */
export async function waitFor(fn, o = {}) {
  const timeoutMs = o.timeoutMs ?? 20000;
  const intervalMs = o.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastErr;
  for (;;) {
    try {
      const v = await fn();
      if (v) return /** @type {any} */ (v);
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      const why = lastErr ? `; last error: ${lastErr instanceof Error ? lastErr.message : lastErr}` : '';
      throw new Error(`waitFor timed out after ${timeoutMs} ms${o.message ? ` (${o.message})` : ''}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * HTTP helpers bound to one instance.
 * @param {Target} oc
 */
export function client(oc) {
  /** @param {string} p @param {RequestInit & {json?: any}} [init] */
  async function call(p, init = {}) {
    const { json, ...rest } = init;
    const res = await fetch(withDirectory(oc.url + p, oc.projectDir), {
      ...rest,
      headers: { ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...(rest.headers ?? {}) },
      body: json !== undefined ? JSON.stringify(json) : rest.body,
    });
    const text = await res.text();
    if (!res.ok) {
      const err = /** @type {Error & {status?: number, body?: string}} */ (
        new Error(`${rest.method ?? 'GET'} ${p} → ${res.status}: ${text.slice(0, 500)}`)
      );
      err.status = res.status;
      err.body = text;
      throw err;
    }
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  return {
    call,
    /** POST /session → session info `{id, title, directory, ...}` */
    createSession: (/** @type {any} */ body = {}) => call('/session', { method: 'POST', json: body }),
    /** GET /session/:id */
    getSession: (/** @type {string} */ id) => call(`/session/${id}`),
    /**
     * POST /session/:id/prompt_async (204, returns at once). `input` is text or a parts array.
     * @param {string} sessionId
     * @param {string | any[]} input
     * @param {{noReply?: boolean, messageID?: string, agent?: string, model?: any, system?: string}} [extra]
     */
    promptAsync: (sessionId, input, extra = {}) =>
      call(`/session/${sessionId}/prompt_async`, {
        method: 'POST',
        json: { ...extra, parts: typeof input === 'string' ? [{ type: 'text', text: input }] : input },
      }),
    /** POST /session/:id/message: synchronous prompt; resolves with the final assistant message. */
    prompt: (/** @type {string} */ sessionId, /** @type {string | any[]} */ input, extra = {}) =>
      call(`/session/${sessionId}/message`, {
        method: 'POST',
        json: { ...extra, parts: typeof input === 'string' ? [{ type: 'text', text: input }] : input },
      }),
    /** GET /session/:id/message → [{info, parts}] oldest first */
    messages: (/** @type {string} */ sessionId) => call(`/session/${sessionId}/message`),
    /** GET /permission → pending permission requests of this instance */
    permissions: () => call('/permission'),
    /** POST /permission/:id/reply {reply: "once"|"always"|"reject"} */
    replyPermission: (/** @type {string} */ id, /** @type {'once'|'always'|'reject'} */ reply, message) =>
      call(`/permission/${id}/reply`, { method: 'POST', json: { reply, ...(message ? { message } : {}) } }),
    /** GET /session/status → {[sessionID]: {type: "busy"|"retry"|...}}; idle sessions are absent */
    sessionStatus: () => call('/session/status'),
    /** POST /session/:id/abort */
    abort: (/** @type {string} */ sessionId) => call(`/session/${sessionId}/abort`, { method: 'POST' }),
    /** Wait until the session is no longer busy (absent or idle in /session/status). */
    waitIdle: async (/** @type {string} */ sessionId, o = {}) =>
      waitFor(
        async () => {
          const st = await call('/session/status');
          const s = st?.[sessionId];
          return !s || s.type === 'idle';
        },
        { message: `session ${sessionId} idle`, ...o },
      ),
    /** Subscribe to GET /event; see `events()`. */
    events: (/** @type {EventOptions} */ o = {}) => events(oc, o),
  };
}

/**
 * @typedef {{type: string, properties: any}} OcEvent
 * @typedef {{filter?: (e: OcEvent) => boolean, path?: string}} EventOptions
 */

/**
 * Subscribe to the instance's SSE stream (GET /event) and collect every event.
 * Resolves once the stream is open and `server.connected` arrived, so nothing after it is lost.
 * @param {Target} oc
 * @param {EventOptions} [o]
 */
export async function events(oc, o = {}) {
  const ctrl = new AbortController();
  const res = await fetch(withDirectory(oc.url + (o.path ?? '/event'), oc.projectDir), {
    headers: { accept: 'text/event-stream' },
    signal: ctrl.signal,
  });
  if (!res.ok || !res.body) throw new Error(`GET /event → ${res.status}`);
  /** @type {(OcEvent & {at: number})[]} */
  const list = [];
  /** @type {Set<() => void>} */
  const wakers = new Set();
  let closed = false;
  /** @type {(v?: unknown) => void} */
  let connected = () => {};
  const connectedP = new Promise((r) => (connected = r));
  const decoder = new TextDecoder();
  const pump = (async () => {
    let buf = '';
    try {
      for await (const chunk of /** @type {any} */ (res.body)) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).replace(/^ /, ''))
            .join('\n');
          if (!data) continue;
          let ev;
          try {
            ev = JSON.parse(data);
          } catch {
            continue;
          }
          if (ev?.type === 'server.connected') connected();
          if (o.filter && !o.filter(ev)) continue;
          list.push({ ...ev, at: Date.now() });
          for (const w of wakers) w();
        }
      }
    } catch {
      /* aborted or server gone */
    } finally {
      closed = true;
      connected();
      for (const w of wakers) w();
    }
  })();
  await Promise.race([connectedP, new Promise((r) => setTimeout(r, 5000))]);

  return {
    /** Every event received so far, in order, each with `at` (Date.now()). */
    list,
    /** Events of one type. */
    ofType: (/** @type {string} */ type) => list.filter((e) => e.type === type),
    /**
     * Resolve with the first event (already received or future) matching `pred`.
     * @param {(e: OcEvent) => boolean} pred
     * @param {{timeoutMs?: number, from?: number}} [w]  `from`: index in `list` to start looking
     */
    waitFor: (pred, w = {}) =>
      new Promise((resolve, reject) => {
        let idx = w.from ?? 0;
        const check = () => {
          for (; idx < list.length; idx++) {
            if (pred(list[idx])) {
              done();
              resolve(list[idx]);
              return;
            }
          }
          if (closed) {
            done();
            reject(new Error('event stream closed'));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no matching event within ${w.timeoutMs ?? 20000} ms`));
        }, w.timeoutMs ?? 20000);
        const done = () => {
          clearTimeout(timer);
          wakers.delete(check);
        };
        wakers.add(check);
        check();
      }),
    /** Stop listening. */
    close: async () => {
      ctrl.abort();
      await pump;
    },
  };
}
