import { isPlainObject } from '@tokenvault/expressions';
import { asProblem, problemFromParts } from '@tokenvault/platform';
import { runtimeProblem } from './run-problems.ts';

/** Creates one token from a token-create body (the tokens API's answer), or throws its problem. */
export type CreateToken = (body: Record<string, unknown>) => Promise<unknown>;

/** Levels of nested objects `tokenize` may have (its shape is names, not data). */
const maxTokenizeDepth = 16;

/**
 * Token creations happen after the sandbox, outside its limits: at most as many as the run's
 * service calls, in a shape of bounded depth, checked before the first one is made.
 */
export function checkTokenizeSize(tokenize: unknown, maxTokens: number): void {
  let bodies = 0;
  const pending: { value: unknown; depth: number }[] = [{ value: tokenize, depth: 1 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.depth > maxTokenizeDepth) {
      throw runtimeProblem(`tokenize is nested deeper than ${maxTokenizeDepth} levels.`);
    }
    if (!isPlainObject(next.value)) continue;
    if (Object.hasOwn(next.value, 'data')) {
      if (++bodies > maxTokens) throw runtimeProblem(`tokenize holds more than ${maxTokens} tokens.`);
      continue;
    }
    for (const item of Object.values(next.value)) pending.push({ value: item, depth: next.depth + 1 });
  }
}

/**
 * The same shape with every token-create body (an object with `data`) replaced by the token it
 * created (without its data). A body the tokens API refuses fails the run with its field errors,
 * named under `tokenize.<path>`.
 */
export async function tokenize(
  value: unknown,
  createToken: CreateToken,
  path: string[] = [],
): Promise<unknown> {
  if (!isPlainObject(value)) {
    throw runtimeProblem(`tokenize${path.map((key) => `.${key}`).join('')} must be an object.`);
  }
  if (Object.hasOwn(value, 'data')) {
    try {
      return await createToken(value);
    } catch (error) {
      // The tokens API's problem (a decider's refusal mapped as the API answers it), its fields
      // named where they were in the answer.
      const problem = asProblem(error);
      if (!problem) throw error;
      const prefix = ['tokenize', ...path].join('.');
      const errors = problem.errors
        ? Object.fromEntries(
            Object.entries(problem.errors).map(([field, messages]) => [
              field.replace(/^body/, prefix),
              messages,
            ]),
          )
        : undefined;
      const { status, slug, title, detail } = problem;
      throw problemFromParts({ status, slug, title, detail, errors });
    }
  }
  const tokens: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    tokens[key] = await tokenize(item, createToken, [...path, key]);
  }
  return tokens;
}
