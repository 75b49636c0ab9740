import { STATUS_CODES } from 'node:http';
import type { z } from 'zod';
import { DomainError, type DomainErrorKind, type FieldErrors } from './domain-errors.ts';

const problemBase = 'https://tokenvault.dev/problems/';

/** An error that the central handler turns into an RFC 9457 problem+json response. */
export class Problem extends Error {
  readonly status: number;
  readonly slug: string;
  readonly title: string;
  readonly detail?: string;
  readonly errors?: FieldErrors;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    slug: string,
    title: string,
    detail?: string,
    errors?: FieldErrors,
    headers: Record<string, string> = {},
  ) {
    super(detail ?? title);
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.detail = detail;
    this.errors = errors;
    this.headers = headers;
  }

  get type(): string {
    return problemBase + this.slug;
  }

  toJSON(): Record<string, unknown> {
    return {
      type: this.type,
      title: this.title,
      status: this.status,
      ...(this.detail === undefined ? {} : { detail: this.detail }),
      ...(this.errors === undefined ? {} : { errors: this.errors }),
    };
  }
}

/** What a problem carries beyond its status and detail. */
export interface ProblemOptions {
  /** The slug of the problem's own type, where it has one (`idempotency-key-in-use`); else the status's. */
  type?: string;
  errors?: FieldErrors;
  /** Seconds after which a retry may succeed: the Retry-After header. */
  retryAfter?: number;
  /** Any other header of the answer (a challenge's WWW-Authenticate). */
  headers?: Record<string, string>;
}

function problem(status: number, slug: string, title: string, detail: string, options: ProblemOptions = {}) {
  const headers = {
    ...options.headers,
    ...(options.retryAfter === undefined ? {} : { 'retry-after': String(options.retryAfter) }),
  };
  return new Problem(status, options.type ?? slug, title, detail, options.errors, headers);
}

// The problems the HTTP edge answers with. A decider throws a DomainError instead (domain-errors.ts),
// which problemOf below maps to one of these.
export const badRequest = (detail: string, errors?: FieldErrors, options?: Omit<ProblemOptions, 'errors'>) =>
  problem(400, 'bad-request', 'Bad Request', detail, { ...options, errors });
export const unauthorized = (
  detail = 'A valid API key is required in the SVC-API-KEY header.',
  options?: ProblemOptions,
) => problem(401, 'unauthorized', 'Unauthorized', detail, options);
export const forbidden = (detail: string, options?: ProblemOptions) =>
  problem(403, 'forbidden', 'Forbidden', detail, options);
export const notFound = (detail = 'The resource was not found.', options?: ProblemOptions) =>
  problem(404, 'not-found', 'Not Found', detail, options);
export const requestTimeout = (detail: string) => problem(408, 'request-timeout', 'Request Timeout', detail);
export const conflict = (detail: string, options?: ProblemOptions) =>
  problem(409, 'conflict', 'Conflict', detail, options);
export const gone = (detail: string, options?: ProblemOptions) =>
  problem(410, 'gone', 'Gone', detail, options);
export const payloadTooLarge = (detail: string) =>
  problem(413, 'payload-too-large', 'Payload Too Large', detail);
export const unsupportedMediaType = (detail: string) =>
  problem(415, 'unsupported-media-type', 'Unsupported Media Type', detail);
export const unprocessable = (detail: string, options?: ProblemOptions) =>
  problem(422, 'unprocessable', 'Unprocessable Entity', detail, options);
export const tooManyRequests = (detail: string, retryAfter: number) =>
  problem(429, 'too-many-requests', 'Too Many Requests', detail, { retryAfter });
export const internalError = (detail = 'An unexpected error occurred.', options?: ProblemOptions) =>
  problem(500, 'internal', 'Internal Server Error', detail, options);
export const badGateway = (detail: string) => problem(502, 'bad-gateway', 'Bad Gateway', detail);
export const serviceUnavailable = (detail: string, options?: ProblemOptions) =>
  problem(503, 'service-unavailable', 'Service Unavailable', detail, options);
export const gatewayTimeout = (detail: string, options?: ProblemOptions) =>
  problem(504, 'gateway-timeout', 'Gateway Timeout', detail, options);

/** A problem named after its HTTP status (`Request Timeout`, slug `request-timeout`). */
export function problemOfStatus(status: number, detail: string): Problem {
  const title = STATUS_CODES[status] ?? 'Bad Request';
  return new Problem(status, title.toLowerCase().replace(/\W+/g, '-'), title, detail);
}

/** A problem as data, to carry it between processes (a code run's outcome). */
export interface ProblemParts {
  status: number;
  slug: string;
  title: string;
  detail?: string;
  errors?: FieldErrors;
}

/** The problem its parts describe, as it was before it was carried as data. */
export const problemFromParts = (parts: ProblemParts): Problem =>
  new Problem(parts.status, parts.slug, parts.title, parts.detail, parts.errors);

/** A refusal's field errors and code, as a problem's errors and type. */
const fieldsAndCode = (error: DomainError): ProblemOptions => ({ type: error.code, errors: error.fields });

/**
 * The one mapping of a decider's refusal to HTTP: each kind's status, type and title (a code
 * names a type of its own), the detail and the field errors as they are. A new kind does not
 * compile until it is mapped here.
 */
const problemOfKind: Record<DomainErrorKind, (error: DomainError) => Problem> = {
  invalid: (error) => badRequest(error.detail, error.fields, { type: error.code }),
  'not-allowed': (error) => forbidden(error.detail, fieldsAndCode(error)),
  'not-found': (error) => notFound(error.detail, fieldsAndCode(error)),
  'already-exists': (error) => conflict(error.detail, fieldsAndCode(error)),
  conflict: (error) => conflict(error.detail, fieldsAndCode(error)),
  gone: (error) => gone(error.detail, fieldsAndCode(error)),
  unprocessable: (error) => unprocessable(error.detail, fieldsAndCode(error)),
};

/** The problem+json a decider's refusal answers with. */
export function problemOf(error: DomainError): Problem {
  return problemOfKind[error.kind](error);
}

/** The problem an error answers with: a Problem as it is, a DomainError mapped; undefined for anything else. */
export function asProblem(error: unknown): Problem | undefined {
  if (error instanceof Problem) return error;
  if (error instanceof DomainError) return problemOf(error);
  return undefined;
}

/**
 * The issues a caller can act on. A union (a repeatable query parameter: one value or several)
 * fails as a whole with zod's bare "Invalid input": its alternative that got furthest speaks instead
 * (the one not refused for its very type), so `?type=cards` is told the valid types.
 */
function actionableIssues(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [issue];
  const alternatives = issue.errors.filter((issues) => issues.length > 0);
  const furthest =
    alternatives.find((issues) => issues.some((inner) => inner.code !== 'invalid_type')) ?? alternatives[0];
  if (!furthest) return [issue];
  return furthest.flatMap((inner) => actionableIssues({ ...inner, path: [...issue.path, ...inner.path] }));
}

/** An enum's refusal lists what it takes. */
const messageOf = (issue: z.core.$ZodIssue): string =>
  issue.code === 'invalid_value' && issue.values.length > 1
    ? `Must be one of: ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`
    : issue.message;

/** Names each wrong field by its path, prefixed by where it came from (body, query, path). */
export function validationProblem(
  error: z.ZodError,
  location: 'body' | 'query' | 'path' | 'header',
): Problem {
  const errors: FieldErrors = {};
  const add = (path: readonly PropertyKey[], message: string) => {
    const messages = (errors[[location, ...path.map(String)].join('.')] ??= []);
    if (!messages.includes(message)) messages.push(message);
  };
  for (const issue of error.issues.flatMap(actionableIssues)) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...issue.path, key], 'Unknown field');
    } else if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
      add(issue.path, 'Required');
    } else {
      add(issue.path, messageOf(issue));
    }
  }
  return badRequest('The request is not valid; see errors for each field.', errors);
}
