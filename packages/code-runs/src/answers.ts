import { isPlainObject } from '@tokenvault/expressions';
import { runtimeProblem } from './run-problems.ts';
import { checkTokenizeSize, tokenize, type CreateToken } from './tokenize.ts';

/**
 * A `raw-and-tokens` answer: `{ raw, tokenize }` → `{ raw, tokens }`, each token-create body in
 * `tokenize` made a token (at most `maxTokens`, checked before the first is made).
 */
export async function rawAndTokens(
  result: unknown,
  createToken: CreateToken,
  maxTokens: number,
): Promise<{ tokens?: unknown; raw?: unknown }> {
  if (result === undefined || result === null) return {};
  if (!isPlainObject(result)) {
    throw runtimeProblem('The reactor must return an object ({ raw, tokenize }).');
  }
  const body: { tokens?: unknown; raw?: unknown } = {};
  if (result.raw !== undefined) body.raw = result.raw;
  if (result.tokenize !== undefined) {
    checkTokenizeSize(result.tokenize, maxTokens);
    body.tokens = await tokenize(result.tokenize, createToken);
  }
  return body;
}

/**
 * A `headers-and-body` answer, as the code gave it (anything but an object is its error). Whoever
 * asked for the run checks the headers themselves (the proxy: a 422, as for a reactor stage's).
 */
export function headersAndBody(result: unknown): { headers?: unknown; body?: unknown } {
  if (!isPlainObject(result)) {
    throw runtimeProblem('The transform must return an object ({ headers, body }).');
  }
  return {
    ...(result.headers === undefined ? {} : { headers: result.headers }),
    ...(result.body === undefined ? {} : { body: result.body }),
  };
}
