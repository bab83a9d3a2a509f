// A scripted, OpenAI-compatible chat-completions server for end-to-end tests.
//
// OpenCode talks to it through its built-in `@ai-sdk/openai-compatible` provider. Every request is
// parsed, recorded and handed to a user script that decides the reply. Title-generation calls
// (OpenCode's extra "small model" request that has no tools) are answered with a fixed short title
// before the script sees them, so scripts only deal with real turns.
//
// Several OpenCode instances can share one mock: give each its own base URL with
// `mock.baseURL(tag)` (→ `http://127.0.0.1:P/t/<tag>/v1`) and the script sees `request.instance`.

import http from 'node:http';

/**
 * @typedef {object} ToolCallReply
 * @property {string} name                   tool name as OpenCode registered it
 * @property {object|string} [arguments]     JSON object (serialized for you) or a raw JSON string
 * @property {string} [id]                   call id; generated when omitted
 */

/**
 * @typedef {object} Reply
 * @property {string} [text]                 assistant text (streamed in a few chunks)
 * @property {ToolCallReply[]} [toolCalls]   tool calls; finish_reason becomes "tool_calls"
 * @property {number} [delayMs]              wait this long before answering
 * @property {number} [status]               answer with this HTTP error status instead (e.g. 500)
 * @property {string} [finishReason]         override the finish_reason
 */

/**
 * @typedef {object} MockRequest
 * @property {number} index                  0-based order of arrival across the whole mock
 * @property {string|null} instance          tag from the `/t/<tag>/v1` base URL, or null
 * @property {number} port                   the mock's own port
 * @property {string} path                   request path
 * @property {Record<string,string|string[]|undefined>} headers
 * @property {any} body                      the parsed JSON body
 * @property {any[]} messages                body.messages (OpenAI format)
 * @property {any[]} tools                   body.tools (may be empty)
 * @property {string[]} toolNames            names of the offered tools
 * @property {boolean} stream                whether the client asked for SSE
 * @property {boolean} isTitle               looks like OpenCode's title-generation call
 * @property {string} systemText             all system messages joined
 * @property {any} lastMessage               last element of messages
 * @property {string} lastUserText           text of the last user message
 * @property {boolean} lastIsToolResult      the last message is a tool result
 * @property {{toolCallId:string, content:string}[]} toolResults  tool results after the last user message
 * @property {number} turnStep               assistant messages after the last user message (0 = first call of a turn)
 * @property {Reply} [reply]                 the reply that was sent (set after the script ran)
 */

/**
 * @typedef {object} MockModel
 * @property {number} port
 * @property {(tag?: string) => string} baseURL   provider base URL; `tag` shows up as `request.instance`
 * @property {MockRequest[]} requests            every request, title calls included, in arrival order
 * @property {() => MockRequest[]} turnRequests  requests that were not title-generation calls
 * @property {(fn: (req: MockRequest) => Reply | Promise<Reply>) => void} setScript
 * @property {() => void} clear                  forget recorded requests
 * @property {() => Promise<void>} stop          close the listener and all connections
 */

/** @param {any} content */
function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === 'string' ? p : p && p.type === 'text' ? p.text : ''))
      .join('');
  }
  return '';
}

/**
 * Build the helper view of a parsed body.
 * @param {any} body
 * @param {{index:number, instance:string|null, port:number, path:string, headers:any}} meta
 * @returns {MockRequest}
 */
export function describeRequest(body, meta) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const tools = Array.isArray(body?.tools) ? body.tools : [];
  const toolNames = tools.map((t) => t?.function?.name).filter(Boolean);
  const systemText = messages
    .filter((m) => m.role === 'system')
    .map((m) => contentText(m.content))
    .join('\n');
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      lastUser = i;
      break;
    }
  }
  const after = lastUser >= 0 ? messages.slice(lastUser + 1) : [];
  const lastMessage = messages[messages.length - 1];
  // OpenCode 1.18.33's title call: streaming, no tools, system prompt "You are a title generator…".
  const isTitle = tools.length === 0 && /title generator|generate a (brief |short )?title/i.test(systemText);
  return {
    ...meta,
    body,
    messages,
    tools,
    toolNames,
    stream: body?.stream === true,
    isTitle,
    systemText,
    lastMessage,
    lastUserText: lastUser >= 0 ? contentText(messages[lastUser].content) : '',
    lastIsToolResult: lastMessage?.role === 'tool',
    toolResults: after
      .filter((m) => m.role === 'tool')
      .map((m) => ({ toolCallId: m.tool_call_id, content: contentText(m.content) })),
    turnStep: after.filter((m) => m.role === 'assistant').length,
  };
}

/**
 * Start the mock.
 * @param {object} [opts]
 * @param {(req: MockRequest) => Reply | Promise<Reply>} [opts.script]  decides each non-title reply
 * @param {string} [opts.title]        reply to title-generation calls
 * @param {boolean} [opts.answerTitles] false → title calls go to the script too
 * @returns {Promise<MockModel>}
 */
export async function startMockModel(opts = {}) {
  let script = opts.script ?? (() => ({ text: 'ok' }));
  const title = opts.title ?? 'Test session';
  const answerTitles = opts.answerTitles !== false;
  /** @type {MockRequest[]} */
  const requests = [];
  /** @type {Set<import('node:net').Socket>} */
  const sockets = new Set();
  let counter = 0;
  let idSeq = 0;

  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://x');
      const m = /^(?:\/t\/([^/]+))?(\/v1\/.*)$/.exec(url.pathname);
      const instance = m && m[1] ? decodeURIComponent(m[1]) : null;
      const rest = m ? m[2] : url.pathname;
      if (req.method === 'GET' && rest === '/v1/models') {
        return json(res, 200, { object: 'list', data: [{ id: 'm', object: 'model', owned_by: 'mock' }] });
      }
      if (req.method !== 'POST' || rest !== '/v1/chat/completions') {
        return json(res, 404, { error: { message: `mock: no route ${req.method} ${url.pathname}` } });
      }
      const raw = await readBody(req);
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        return json(res, 400, { error: { message: 'mock: body is not JSON' } });
      }
      const request = describeRequest(body, {
        index: counter++,
        instance,
        port: /** @type {any} */ (server.address()).port,
        path: url.pathname,
        headers: req.headers,
      });
      requests.push(request);
      /** @type {Reply} */
      let reply;
      if (request.isTitle && answerTitles) reply = { text: title };
      else {
        try {
          reply = (await script(request)) ?? { text: '' };
        } catch (err) {
          reply = { status: 500, text: `mock script threw: ${err && err.stack ? err.stack : err}` };
        }
      }
      request.reply = reply;
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (reply.status && reply.status >= 400) {
        return json(res, reply.status, { error: { message: reply.text ?? 'mock error', type: 'mock' } });
      }
      const calls = (reply.toolCalls ?? []).map((c) => ({
        id: c.id ?? `call_mock_${++idSeq}`,
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
      }));
      const finish = reply.finishReason ?? (calls.length ? 'tool_calls' : 'stop');
      const id = `chatcmpl-mock-${request.index}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model ?? 'm';
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      if (!request.stream) {
        return json(res, 200, {
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: reply.text ?? null,
                ...(calls.length
                  ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
                  : {}),
              },
              finish_reason: finish,
            },
          ],
          usage,
        });
      }
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      const chunk = (delta, finish_reason = null, extra = {}) =>
        res.write(
          `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`,
        );
      chunk({ role: 'assistant', content: '' });
      if (reply.text) {
        for (const piece of splitText(reply.text)) chunk({ content: piece });
      }
      calls.forEach((c, index) => {
        chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
        chunk({ tool_calls: [{ index, function: { arguments: c.arguments } }] });
      });
      chunk({}, finish, { usage });
      res.write('data: [DONE]\n\n');
      res.end();
    } catch (err) {
      if (!res.headersSent) json(res, 500, { error: { message: String(err) } });
      else res.end();
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(undefined));
  });
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port;

  /** @type {MockModel} */
  const api = {
    port,
    /** Base URL for the provider; `tag` names the instance in `request.instance`. */
    baseURL: (/** @type {string} */ tag) =>
      tag ? `http://127.0.0.1:${port}/t/${encodeURIComponent(tag)}/v1` : `http://127.0.0.1:${port}/v1`,
    /** Every request seen, title calls included, in arrival order. */
    requests,
    /** Requests that were not title-generation calls. */
    turnRequests: () => requests.filter((r) => !r.isTitle),
    /** Replace the script (e.g. per test). */
    setScript: (/** @type {(req: MockRequest) => Reply | Promise<Reply>} */ fn) => {
      script = fn;
    },
    /** Forget recorded requests. */
    clear: () => {
      requests.length = 0;
    },
    /** Close the listener and every open connection. */
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(() => r(undefined)));
    },
  };
  return api;
}

/** @param {string} text */
function splitText(text) {
  const out = [];
  const step = Math.max(1, Math.ceil(text.length / 3));
  for (let i = 0; i < text.length; i += step) out.push(text.slice(i, i + step));
  return out;
}

/** @param {http.IncomingMessage} req */
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** @param {http.ServerResponse} res @param {number} status @param {any} obj */
function json(res, status, obj) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}
