import type { z } from 'zod';

export type FieldErrors = Record<string, string[]>;

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

export const badRequest = (detail: string, errors?: FieldErrors) =>
  new Problem(400, 'bad-request', 'Bad Request', detail, errors);
export const unauthorized = (detail = 'A valid API key is required in the SVC-API-KEY header.') =>
  new Problem(401, 'unauthorized', 'Unauthorized', detail);
export const forbidden = (detail: string) => new Problem(403, 'forbidden', 'Forbidden', detail);
export const notFound = (detail = 'The resource was not found.') =>
  new Problem(404, 'not-found', 'Not Found', detail);
export const conflict = (detail: string) => new Problem(409, 'conflict', 'Conflict', detail);
export const unprocessable = (detail: string) =>
  new Problem(422, 'unprocessable', 'Unprocessable Entity', detail);
export const payloadTooLarge = (detail: string) =>
  new Problem(413, 'payload-too-large', 'Payload Too Large', detail);

/** Names each wrong field by its path, prefixed by where it came from (body, query, path). */
export function validationProblem(
  error: z.ZodError,
  location: 'body' | 'query' | 'path' | 'header',
): Problem {
  const errors: FieldErrors = {};
  const add = (path: readonly PropertyKey[], message: string) =>
    (errors[[location, ...path.map(String)].join('.')] ??= []).push(message);
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...issue.path, key], 'Unknown field');
    } else if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
      add(issue.path, 'Required');
    } else {
      add(issue.path, issue.message);
    }
  }
  return badRequest('The request is not valid; see errors for each field.', errors);
}
