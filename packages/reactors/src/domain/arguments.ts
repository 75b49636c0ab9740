// The rules of a reactor invocation's `args` (spec: "Invoking a reactor: validation and
// detokenization rules"), as pure functions the invocation endpoint runs in this order:
//   1. findTokenExpressions(args): the token ids to detokenize (at most 100);
//   2. the caller detokenizes them (permissions per container: not here);
//   3. substituteTokens(args, data): the expressions replaced by the tokens' data;
//   4. prepareArguments(request_parameters, args): declared names only, nested, required, cast.
import type { ParameterType, RequestParameterDeclaration } from '@tokenvault/contracts';
import { badRequest, type FieldErrors } from '@tokenvault/platform';
import { isPlainObject, typeMessage } from './values.ts';

/** The most distinct tokens one invocation may detokenize. */
export const maxTokensPerInvocation = 100;

/** `{{ <token id> }}`, spaces allowed inside the braces; token ids as tokens allow them. */
const expressionSource = String.raw`\{\{\s*([A-Za-z0-9][A-Za-z0-9._:~-]{0,199})\s*\}\}`;
const anyExpression = () => new RegExp(expressionSource, 'g');
const wholeExpression = new RegExp(`^${expressionSource}$`);

/** Every string value in args, however deeply nested in objects and arrays (keys excluded). */
function eachString(value: unknown, visit: (text: string) => void): void {
  if (typeof value === 'string') visit(value);
  else if (Array.isArray(value)) for (const item of value) eachString(item, visit);
  else if (isPlainObject(value)) for (const item of Object.values(value)) eachString(item, visit);
}

/**
 * The distinct token ids of every `{{ <token_id> }}` expression in args' string values, in
 * order of first appearance. More than 100: a 400 naming `body.args`.
 */
export function findTokenExpressions(args: unknown): string[] {
  const ids = new Set<string>();
  eachString(args, (text) => {
    for (const match of text.matchAll(anyExpression())) ids.add(match[1]!);
  });
  if (ids.size > maxTokensPerInvocation) {
    throw badRequest('Too many tokens in args.', {
      'body.args': [`At most ${maxTokensPerInvocation} distinct tokens per invocation (found ${ids.size})`],
    });
  }
  return [...ids];
}

/** How a token's data reads inside a longer string: text as it is, anything else as JSON. */
const asText = (data: unknown) =>
  typeof data === 'string'
    ? data
    : typeof data === 'number' || typeof data === 'boolean'
      ? String(data)
      : JSON.stringify(data);

const fieldOf = (path: readonly (string | number)[]) => ['body.args', ...path].join('.');

/**
 * Args with each expression replaced by its token's data: a string that is exactly one
 * expression becomes the data itself (an object for card and bank tokens); an expression inside
 * a longer string is replaced by the data as text (strings, numbers and booleans as they read,
 * objects, arrays and null as JSON). A token missing from `tokenData`: a 400 naming the field.
 */
export function substituteTokens(args: unknown, tokenData: ReadonlyMap<string, unknown>): unknown {
  const errors: FieldErrors = {};
  const dataOf = (id: string, path: readonly (string | number)[]) => {
    if (tokenData.has(id)) return tokenData.get(id);
    (errors[fieldOf(path)] ??= []).push(`Unknown token ${id}`);
    return undefined;
  };
  const walk = (value: unknown, path: (string | number)[]): unknown => {
    if (typeof value === 'string') {
      const whole = wholeExpression.exec(value);
      if (whole) return dataOf(whole[1]!, path);
      return value.replace(anyExpression(), (_expression, id: string) => asText(dataOf(id, path)));
    }
    if (Array.isArray(value)) return value.map((item, index) => walk(item, [...path, index]));
    if (isPlainObject(value)) {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [key, walk(item, [...path, key])]),
      );
    }
    return value;
  };
  const substituted = walk(args, []);
  if (Object.keys(errors).length > 0) throw badRequest('args name unknown tokens.', errors);
  return substituted;
}

const numeric = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * The value cast to the declared type, or undefined when it cannot be: numeric strings become
 * numbers, "true"/"false" booleans, numbers and booleans strings; objects and arrays are never
 * cast (nor anything to them).
 */
export function castTo(value: unknown, type: ParameterType): unknown {
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value;
      if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean')
        return String(value);
      return undefined;
    case 'number':
      if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
      if (typeof value === 'string' && numeric.test(value.trim())) return Number(value.trim());
      return undefined;
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true') return true;
      if (value === 'false') return false;
      return undefined;
    case 'object':
      return isPlainObject(value) ? value : undefined;
    case 'array':
      return Array.isArray(value) ? value : undefined;
  }
}

/** The value at a dotted name: own properties of nested objects only; undefined when absent. */
function valueAt(args: Record<string, unknown>, segments: readonly string[]): unknown {
  let current: unknown = args;
  for (const segment of segments) {
    if (!isPlainObject(current) || !Object.hasOwn(current, segment)) return undefined;
    current = current[segment];
  }
  return current;
}

function setAt(target: Record<string, unknown>, segments: readonly string[], value: unknown): void {
  let current = target;
  for (const segment of segments.slice(0, -1)) {
    if (!isPlainObject(current[segment])) current[segment] = {};
    current = current[segment] as Record<string, unknown>;
  }
  current[segments.at(-1)!] = value;
}

/**
 * The arguments a reactor runs with, from args AFTER substitution (rule 8): only the declared
 * names, matched case-sensitively (rules 1, 2), a dotted name read from and written to nested
 * objects (rule 3; one token's object can supply several, rule 7), every required name present
 * (rule 4: null counts as absent) and every value of its type or cast to it (rule 5). Every
 * wrong name is reported at once, as `body.args.<dotted name>`.
 */
export function prepareArguments(
  requestParameters: readonly RequestParameterDeclaration[],
  args: unknown,
): Record<string, unknown> {
  if (args === undefined || args === null) args = {};
  if (!isPlainObject(args))
    throw badRequest('args must be an object.', { 'body.args': ['Must be an object'] });
  const prepared: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  for (const { name, type, optional } of requestParameters) {
    const segments = name.split('.');
    const value = valueAt(args, segments);
    if (value === undefined || value === null) {
      if (!optional) errors[fieldOf([name])] = ['Required'];
      continue;
    }
    const cast = castTo(value, type);
    if (cast === undefined) errors[fieldOf([name])] = [typeMessage(type)];
    else setAt(prepared, segments, cast);
  }
  if (Object.keys(errors).length > 0) {
    throw badRequest('args do not satisfy the formula’s request parameters; see errors.', errors);
  }
  return prepared;
}
