import { isPlainObject } from '@tokenvault/expressions';

// The token requests of a bulk tokenize (POST /tokenize): the caller's own JSON, with a token
// request wherever an object has both `type` and `data` (as the anchor reads it); everything else
// is answered as it came.

export type JsonPath = readonly (string | number)[];

/** Token requests a call may hold: one append of at most this many tokens. */
export const maxTokenRequestsPerCall = 100;

const isTokenRequest = (value: unknown): value is Record<string, unknown> =>
  isPlainObject(value) && 'type' in value && 'data' in value;

/** Every token request of the body with its place, in document order; none inside another. */
export function tokenRequestsIn(body: unknown): { path: JsonPath; request: Record<string, unknown> }[] {
  const found: { path: JsonPath; request: Record<string, unknown> }[] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (isTokenRequest(value)) found.push({ path, request: value });
    else if (Array.isArray(value)) value.forEach((item, index) => walk(item, [...path, index]));
    else if (isPlainObject(value))
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
  };
  walk(body, []);
  return found;
}

/** The body with the token request at each path replaced by its answer (same order as found). */
export function withTokenRequestsAnswered(body: unknown, answers: readonly unknown[]): unknown {
  let next = 0;
  const walk = (value: unknown): unknown => {
    if (isTokenRequest(value)) return answers[next++];
    if (Array.isArray(value)) return value.map(walk);
    if (isPlainObject(value))
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]));
    return value;
  };
  const answered = walk(body);
  if (next !== answers.length) throw new Error(`${answers.length} answers for ${next} token requests`);
  return answered;
}

/** A place in the body as errors name it: `body.cards.0`. */
export const bodyPath = (path: JsonPath) => ['body', ...path].join('.');
