// The rules of a reactor invocation's `args` (spec: "Invoking a reactor: validation and
// detokenization rules"), as pure functions the invocation endpoint runs in this order:
//   1. findTokenExpressions(args): the token ids to detokenize (at most 100);
//   2. the caller detokenizes them (permissions per container: not here);
//   3. substituteTokens(args, opened): the expressions rendered (@tokenvault/expressions);
//   4. prepareArguments(request_parameters, args): declared names only, nested, required, cast.
import type { ParameterType, RequestParameterDeclaration } from '@tokenvault/contracts';
import { invalidCommand, type FieldErrors } from '@tokenvault/platform';
import {
  fieldUnder,
  findTokenIds,
  isPlainObject,
  renderJson,
  type OpenedTokens,
  stringsIn,
} from '@tokenvault/expressions';
import { typeMessage } from './values.ts';

const fieldOf = fieldUnder('body.args');

/**
 * The distinct token ids of every expression in args' string values (`{{ <id> | … }}` and
 * `{{ token: <id> | … }}`), in order of first appearance. More than 100: a 400 naming `body.args`.
 */
export const findTokenExpressions = (args: unknown): string[] => findTokenIds(stringsIn(args), 'body.args');

/**
 * Args with each expression rendered by the one expression engine (@tokenvault/expressions): a
 * string that is exactly one filterless expression becomes the token's data itself (an object for
 * card and bank tokens); an expression inside a longer string becomes text. An unknown token or
 * a failing filter: a 400 naming the field (`body.args.<dotted path>`).
 */
export const substituteTokens = (args: unknown, opened: OpenedTokens): unknown =>
  renderJson(args, opened, fieldOf);

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
    throw invalidCommand('args must be an object.', { 'body.args': ['Must be an object'] });
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
    throw invalidCommand('args do not satisfy the formula’s request parameters; see errors.', errors);
  }
  return prepared;
}
