// An SMTP sink with the part of Mailpit's HTTP API the tests read, so that the same checks run
// against the real Mailpit: GET /api/v1/messages (newest first) and GET /api/v1/message/{ID}.
// Messages live in memory only. Plain SMTP (no TLS, no auth), as Mailpit accepts by default.
import { createServer as createTcpServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { randomUUID } from 'node:crypto';

const messages = [];

function parseAddresses(value = '') {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^(.*)<([^>]+)>$/.exec(part);
      return match
        ? { Name: match[1].trim().replace(/^"|"$/g, ''), Address: match[2].trim() }
        : { Name: '', Address: part };
    });
}

function splitHeaders(raw) {
  const at = raw.indexOf('\r\n\r\n');
  const head = at === -1 ? raw : raw.slice(0, at);
  const body = at === -1 ? '' : raw.slice(at + 4);
  const headers = {};
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { headers, body };
}

function decodeWord(value = '') {
  // Adjacent encoded words join without the whitespace between them (RFC 2047), and a character
  // may be split across two of them: decode runs of words to bytes, then the bytes as UTF-8.
  return value.replace(/(=\?[^?]+\?[BbQq]\?[^?]*\?=\s*)+/g, (run) => {
    const bytes = [...run.matchAll(/=\?[^?]+\?([BbQq])\?([^?]*)\?=/g)].map(([, encoding = 'Q', text = '']) =>
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-F]{2})/gi, (_m, hex) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          ),
    );
    return Buffer.concat(bytes).toString('utf8') + (/\s$/.test(run) ? ' ' : '');
  });
}

function decodeBody(body, encoding = '') {
  const kind = encoding.toLowerCase();
  if (kind === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (kind === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_m, hex) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

/** The text and HTML parts of a message (one level of multipart is what mailers send here). */
function partsOf(headers, body, found = { Text: '', HTML: '' }) {
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (type.toLowerCase().startsWith('multipart/') && boundary) {
    for (const chunk of body.split(`--${boundary}`).slice(1)) {
      if (chunk.startsWith('--')) break;
      const part = splitHeaders(chunk.replace(/^\r\n/, ''));
      partsOf(part.headers, part.body, found);
    }
  } else if (type.toLowerCase().startsWith('text/html')) {
    found.HTML ||= decodeBody(body, headers['content-transfer-encoding']);
  } else {
    found.Text ||= decodeBody(body, headers['content-transfer-encoding']);
  }
  return found;
}

function store(raw, envelope) {
  const { headers, body } = splitHeaders(raw);
  const { Text, HTML } = partsOf(headers, body);
  messages.push({
    ID: randomUUID(),
    MessageID: (headers['message-id'] ?? '').replace(/^<|>$/g, ''),
    From: parseAddresses(headers.from)[0] ?? { Name: '', Address: envelope.from },
    To: headers.to ? parseAddresses(headers.to) : envelope.to.map((Address) => ({ Name: '', Address })),
    Subject: decodeWord(headers.subject),
    Created: new Date().toISOString(),
    Size: Buffer.byteLength(raw),
    Text,
    HTML,
  });
}

const smtp = createTcpServer((socket) => {
  socket.setEncoding('latin1');
  let buffer = '';
  let data = null;
  let envelope = { from: '', to: [] };
  const reply = (line) => socket.write(`${line}\r\n`);
  reply('220 mailpit ESMTP');
  socket.on('error', () => {});
  socket.on('data', (chunk) => {
    buffer += chunk;
    for (;;) {
      if (data !== null) {
        const end = buffer.indexOf('\r\n.\r\n');
        if (end === -1 && !(data === '' && buffer.startsWith('.\r\n'))) return;
        const raw = data === '' && buffer.startsWith('.\r\n') ? '' : buffer.slice(0, end);
        buffer = buffer.slice(raw === '' && buffer.startsWith('.\r\n') ? 3 : end + 5);
        store(Buffer.from(raw.replace(/^\.\./gm, '.'), 'latin1').toString('utf8'), envelope);
        data = null;
        envelope = { from: '', to: [] };
        reply('250 2.0.0 Ok: queued');
        continue;
      }
      const end = buffer.indexOf('\r\n');
      if (end === -1) return;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const verb = line.slice(0, 4).toUpperCase();
      if (verb === 'EHLO') socket.write('250-mailpit\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 0\r\n');
      else if (verb === 'HELO') reply('250 mailpit');
      else if (verb === 'MAIL') {
        envelope = { from: /<([^>]*)>/.exec(line)?.[1] ?? '', to: [] };
        reply('250 2.1.0 Ok');
      } else if (verb === 'RCPT') {
        envelope.to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
        reply('250 2.1.5 Ok');
      } else if (verb === 'DATA') {
        data = '';
        reply('354 End data with <CR><LF>.<CR><LF>');
      } else if (verb === 'RSET') {
        envelope = { from: '', to: [] };
        reply('250 2.0.0 Ok');
      } else if (verb === 'NOOP') reply('250 2.0.0 Ok');
      else if (verb === 'QUIT') {
        reply('221 2.0.0 Bye');
        socket.end();
        return;
      } else reply('502 5.5.2 Error: command not recognized');
    }
  });
});

const summary = ({ Text, HTML: _html, ...rest }) => ({ ...rest, Snippet: Text.slice(0, 250) });
const http = createHttpServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://mailpit');
  const send = (status, body) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  if (request.method !== 'GET') return send(405, { error: 'method not allowed' });
  if (url.pathname === '/readyz' || url.pathname === '/livez') return send(200, { status: 'ok' });
  if (url.pathname === '/api/v1/messages') {
    const start = Number(url.searchParams.get('start') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const newestFirst = [...messages].reverse();
    const page = newestFirst.slice(start, start + limit).map(summary);
    return send(200, {
      total: messages.length,
      unread: messages.length,
      count: page.length,
      messages_count: messages.length,
      start,
      tags: [],
      messages: page,
    });
  }
  const match = /^\/api\/v1\/message\/([^/]+)$/.exec(url.pathname);
  if (match) {
    const found = messages.find((message) => message.ID === match[1]);
    return found ? send(200, found) : send(404, { error: 'message not found' });
  }
  return send(404, { error: 'not found' });
});

smtp.listen(1025, '0.0.0.0');
http.listen(8025, '0.0.0.0');
const stop = () => {
  smtp.close();
  http.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
console.log('mailpit stand-in: SMTP on 1025, HTTP on 8025');
