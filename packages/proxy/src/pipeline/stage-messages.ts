// A proxied request or a destination's answer as a stage's code sees it (`args.body`,
// `args.headers`) and back: pure conversions. Every value crosses the run queue sealed as JSON.
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { unprocessable } from '@tokenvault/platform';
import { isPlainObject } from '@tokenvault/expressions';
import type { DestinationResponse } from '@tokenvault/destinations';
import {
  bodyKindOf,
  decodeBody,
  encodeBody,
  forwardedRequestHeaders,
  type BodyKind,
  type ProxiedRequest,
} from '../request/forwarding.ts';

/** `args` of a stage: the body (JSON value, form fields as an object, text, bytes as base64). */
export interface StageMessage {
  headers: Record<string, string | string[]>;
  body?: unknown;
}

/** What a stage answered: each part present replaces the message's. */
export interface StageAnswer {
  headers?: unknown;
  body?: unknown;
}

function stageBody(kind: BodyKind, body: unknown): unknown {
  if (body === undefined) return undefined;
  if (kind === 'form') return Object.fromEntries(body as [string, string][]);
  if (kind === 'bytes') return (body as Buffer).toString('base64');
  return body;
}

/**
 * A stage's body as a body of a kind: a string goes as it is (bytes as base64), an object to a
 * form-encoded message as its fields, anything else as JSON.
 */
function bodyOfStage(kind: BodyKind, body: unknown): { kind: BodyKind; body: unknown } {
  if (body === undefined || body === null) return { kind, body: undefined };
  if (typeof body === 'string') {
    return kind === 'bytes' ? { kind, body: Buffer.from(body, 'base64') } : { kind: 'text', body };
  }
  if (kind === 'form' && isPlainObject(body)) {
    const fields = Object.entries(body).map(([name, value]) => [
      name,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]);
    return { kind, body: fields };
  }
  return { kind: 'json', body };
}

/** Whether HTTP takes it (node:http's own check, which would otherwise throw where it is sent). */
const sendable = (check: () => void): boolean => {
  try {
    check();
    return true;
  } catch {
    return false;
  }
};

/**
 * A stage's headers, names lower-cased; a value that is not text, or a name or value HTTP does not
 * take, is the stage's error: caught here, not as node:http's error where it is sent, whose
 * message quotes the name (tenant code's text, which can hold a card) into the log as a 500.
 */
function headersOfStage(headers: unknown, stage: string): Record<string, string | string[]> {
  const invalid = (detail: string) => unprocessable(detail, { type: 'invalid-proxy-stage-answer' });
  if (!isPlainObject(headers)) throw invalid(`The ${stage} answered headers that are not an object.`);
  const normalized: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue;
    if (!sendable(() => validateHeaderName(name))) {
      throw invalid(
        `The ${stage} answered a header name that is not an HTTP token (letters, digits, !#$%&'*+-.^_\`|~).`,
      );
    }
    const text = (item: unknown) => {
      if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean')
        throw invalid(`The ${stage} answered a value of header ${name} that is not text.`);
      const sent = String(item);
      if (!sendable(() => validateHeaderValue(name, sent))) {
        throw invalid(
          `The ${stage} answered a value of header ${name} that HTTP does not take (a control character, or beyond Latin-1).`,
        );
      }
      return sent;
    };
    normalized[name.toLowerCase()] = Array.isArray(value) ? value.map(text) : text(value);
  }
  return normalized;
}

export const requestMessage = (request: ProxiedRequest): StageMessage => ({
  headers: request.headers,
  body: stageBody(request.kind, request.body),
});

/** The message as the request forwarded: the service's own and hop-by-hop headers never go. */
export function requestOfMessage(kind: BodyKind, message: StageMessage, stage: string): ProxiedRequest {
  return {
    headers: forwardedRequestHeaders(headersOfStage(message.headers, stage)),
    ...bodyOfStage(kind, message.body),
  };
}

/** The destination's answer as a message (a JSON body that does not parse is text). */
export function responseMessage(response: DestinationResponse): { kind: BodyKind; message: StageMessage } {
  let kind = bodyKindOf(response.headers['content-type']);
  let parsed: unknown;
  if (kind === 'json' && response.body.length > 0) {
    try {
      parsed = JSON.parse(response.body.toString('utf8'));
    } catch {
      kind = 'text';
    }
  }
  const body = decodeBody(kind, response.body, parsed);
  return {
    kind,
    message: { headers: headersOfStage(response.headers, 'destination'), body: stageBody(kind, body) },
  };
}

export function responseOfMessage(
  status: number,
  kind: BodyKind,
  message: StageMessage,
  stage: string,
): DestinationResponse {
  const body = bodyOfStage(kind, message.body);
  return {
    status,
    headers: headersOfStage(message.headers, stage),
    body: encodeBody(body.kind, body.body) ?? Buffer.alloc(0),
  };
}

/** A stage's answer applied to the message it was given. */
export function answered(message: StageMessage, answer: StageAnswer, stage: string): StageMessage {
  return {
    headers: answer.headers === undefined ? message.headers : headersOfStage(answer.headers, stage),
    body: Object.hasOwn(answer, 'body') ? answer.body : message.body,
  };
}
