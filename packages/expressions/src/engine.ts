// The one detokenization expression engine (reactor args, proxy bodies and header values).
// An expression is `{{ <token id> | filter: arg | … }}` (filters see the token's data) or
// `{{ token: <token id> | … }}` (filters see the whole token); the filters are Liquid's (liquidjs)
// plus Basis Theory's (./filters.ts). Text outside the braces is kept as it is: no Liquid tags run,
// so nothing can include files, loop or assign. A `{{` that does not open a whole expression is a
// syntax error naming its character position and text. Errors name where the expression is (a
// dotted field, `body.card.number`, or a header name), never a token's data.
import { Liquid } from 'liquidjs';
import { badRequest, type FieldErrors } from '@tokenvault/platform';
import { aliasFilters, type AliasFilter } from './aliases.ts';
import { customFilters, FilterError, isPlainObject, to_string } from './filters.ts';

/** The most distinct tokens one request may detokenize. */
export const maxTokensPerRequest = 100;

/** Characters one rendered text may reach. */
export const maxRenderedLength = 1024 * 1024;

const tokenId = '[A-Za-z0-9][A-Za-z0-9._:~-]{0,199}';
/** Filters: `|` then anything but braces, quoted texts kept whole (they may hold braces). */
const filterChain = String.raw`(?:\|(?:[^{}'"]|'[^']*'|"[^"]*")*)?`;
const expressionSource = String.raw`\{\{\s*(token\s*:\s*)?(${tokenId})\s*(${filterChain})\}\}`;
const anyExpression = () => new RegExp(expressionSource, 'g');
const wholeExpression = new RegExp(`^${expressionSource}$`);
const expressionAt = new RegExp(expressionSource, 'y');

const liquid = new Liquid({
  strictFilters: true,
  strictVariables: true,
  ownPropertyOnly: true,
  // Bounds on what standard filters may build (liquidjs counts string and array sizes).
  memoryLimit: 8 * maxRenderedLength,
  renderLimit: 1_000,
  parseLimit: 100_000,
  relativeReference: false,
  root: [],
  partials: [],
  layouts: [],
});
for (const [name, filter] of Object.entries(customFilters)) liquid.registerFilter(name, filter);

/** The tokens an expression may name, as the detokenizer opened them. */
export interface OpenedTokens {
  /** Token id → its data (what `{{ <id> }}` sees). */
  data: ReadonlyMap<string, unknown>;
  /** Token id → the whole token, data included (what `{{ token: <id> }}` sees). */
  tokens?: ReadonlyMap<string, unknown>;
}

/** The distinct token ids named in these texts, in order of first appearance. */
export function tokenIdsIn(texts: Iterable<string>): string[] {
  const ids = new Set<string>();
  for (const text of texts) {
    if (!text.includes('{{')) continue;
    for (const match of text.matchAll(anyExpression())) ids.add(match[2]!);
  }
  return [...ids];
}

/** Every string value of a JSON value, however deeply nested (keys excluded). */
export function* stringsIn(value: unknown): Generator<string> {
  if (typeof value === 'string') yield value;
  else if (Array.isArray(value)) for (const item of value) yield* stringsIn(item);
  else if (isPlainObject(value)) for (const item of Object.values(value)) yield* stringsIn(item);
}

/** tokenIdsIn, with the cap: more than 100 distinct tokens is a 400 naming `field`. */
export function findTokenIds(texts: Iterable<string>, field: string): string[] {
  const ids = tokenIdsIn(texts);
  if (ids.length > maxTokensPerRequest) {
    throw badRequest('Too many tokens in one request.', {
      [field]: [`At most ${maxTokensPerRequest} distinct tokens per request (found ${ids.length})`],
    });
  }
  return ids;
}

/** A failure at one place of the input, gathered so that every wrong place is named at once. */
class ExpressionFailure extends Error {}

/** What a filter's failure may say: its own message (never a value), or a neutral one. */
function failureMessage(error: unknown): string {
  const cause = (error as { originalError?: unknown }).originalError ?? error;
  if (cause instanceof FilterError) return cause.message;
  const message = cause instanceof Error ? cause.message : '';
  const undefinedFilter = /^undefined filter: ([A-Za-z0-9_]+)/.exec(message);
  if (undefinedFilter) return `Unknown filter ${undefinedFilter[1]}`;
  if (/memory alloc limit exceeded/i.test(message)) return 'The expression’s result is too large';
  return 'The expression could not be evaluated';
}

function evaluate(match: RegExpExecArray, tokens: OpenedTokens): unknown {
  const [, wholeToken, id, filters] = match;
  const source = wholeToken ? tokens.tokens : tokens.data;
  if (id === undefined || !source?.has(id)) throw new ExpressionFailure(`Unknown token ${id}`);
  const input = source.get(id);
  if (!filters) return input;
  try {
    return liquid.evalValueSync(`input ${filters}`, { input }) ?? null;
  } catch (error) {
    throw new ExpressionFailure(failureMessage(error));
  }
}

/** Text quoted in a syntax error: enough to find it, never a long value. */
const excerpt = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

/**
 * The first `{{` of the text that does not open a whole expression, as a message with its
 * position (1-based, in characters) and its text: a missing `}}`, or braces around something that
 * is not `<token id> | filters` (a mistyped id, a Liquid tag, a stray quote).
 */
export function expressionSyntaxError(text: string): string | undefined {
  let from = text.indexOf('{{');
  while (from !== -1) {
    expressionAt.lastIndex = from;
    const match = expressionAt.exec(text);
    if (match) {
      from = text.indexOf('{{', from + match[0].length);
      continue;
    }
    const close = text.indexOf('}}', from + 2);
    const position = `at character ${from + 1}`;
    if (close === -1 || text.lastIndexOf('{{', close) !== from) {
      const end = text.indexOf('{{', from + 2);
      return `Expression syntax error ${position}: ${JSON.stringify(excerpt(text.slice(from, end === -1 ? undefined : end)))} has no closing }}`;
    }
    return `Expression syntax error ${position}: ${JSON.stringify(excerpt(text.slice(from, close + 2)))} is not {{ <token id> | filter: argument }}`;
  }
  return undefined;
}

function renderString(text: string, tokens: OpenedTokens, whole: boolean): unknown {
  if (!text.includes('{{')) return text;
  const syntaxError = expressionSyntaxError(text);
  if (syntaxError) throw new ExpressionFailure(syntaxError);
  if (whole) {
    const single = wholeExpression.exec(text);
    if (single) return evaluate(single, tokens);
  }
  let failure: ExpressionFailure | undefined;
  let rendered = '';
  let copied = 0;
  for (const match of text.matchAll(anyExpression())) {
    rendered += text.slice(copied, match.index);
    copied = match.index + match[0].length;
    try {
      rendered += to_string(evaluate(match, tokens));
    } catch (error) {
      if (!(error instanceof ExpressionFailure)) throw error;
      failure ??= error;
    }
  }
  rendered += text.slice(copied);
  if (failure) throw failure;
  if (rendered.length > maxRenderedLength) {
    throw new ExpressionFailure(`The rendered text exceeds ${maxRenderedLength} characters`);
  }
  return rendered;
}

const expressionProblem = (errors: FieldErrors) =>
  badRequest('Some detokenization expressions could not be rendered; see errors.', errors);

function collect(errors: FieldErrors, location: string, error: unknown): void {
  if (!(error instanceof ExpressionFailure)) throw error;
  const messages = (errors[location] ??= []);
  if (!messages.includes(error.message)) messages.push(error.message);
}

/**
 * A JSON value with every expression rendered: a string that is exactly one expression becomes
 * its value (no filter: the token's data itself, so a card stays an object; filters: what they
 * return, so `to_number` gives a number); an expression inside a longer string becomes text.
 * Every failure is a 400 naming its place through `locate(path)`.
 */
export function renderJson(
  value: unknown,
  tokens: OpenedTokens,
  locate: (path: readonly (string | number)[]) => string,
): unknown {
  const errors: FieldErrors = {};
  const walk = (item: unknown, path: (string | number)[]): unknown => {
    if (typeof item === 'string') {
      try {
        return renderString(item, tokens, true);
      } catch (error) {
        collect(errors, locate(path), error);
        return item;
      }
    }
    if (Array.isArray(item)) return item.map((entry, index) => walk(entry, [...path, index]));
    if (isPlainObject(item)) {
      return Object.fromEntries(
        Object.entries(item).map(([key, entry]) => [key, walk(entry, [...path, key])]),
      );
    }
    return item;
  };
  const rendered = walk(value, []);
  if (Object.keys(errors).length > 0) throw expressionProblem(errors);
  return rendered;
}

/** A text with every expression rendered as text; a failure is a 400 naming `location`. */
export function renderText(text: string, tokens: OpenedTokens, location: string): string {
  try {
    return renderString(text, tokens, false) as string;
  } catch (error) {
    const errors: FieldErrors = {};
    collect(errors, location, error);
    throw expressionProblem(errors);
  }
}

/**
 * The field name of a place in a JSON body, as every error of the API names one: `body.card.number`,
 * `body.args.list.0` (the prefix, then each key or index, dotted).
 */
export const fieldUnder =
  (prefix: string) =>
  (path: readonly (string | number)[]): string =>
    [prefix, ...path].join('.');

/**
 * An expression on one token's own data, as search indexes and fingerprint expressions give it:
 * `{{ data }}`, `{{ data.number | last4 }}`, `{{ data | replace: '-', '' }}` (the variable
 * `data`, a path of names or indexes into it, the filters of detokenization).
 */
const dataPath = String.raw`data(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*`;
const dataExpression = new RegExp(String.raw`^\{\{\s*(${dataPath})\s*(${filterChain})\}\}$`);

/** Whether a text is one expression on a token's own data (see dataExpression). */
export const isDataExpression = (text: string): boolean => dataExpression.test(text);

/**
 * A data expression evaluated on a token's data, as text: what a search index or fingerprint
 * holds. Null when it gives nothing (null, an empty text); a FilterError-like failure is thrown
 * as an Error whose message names the filter, never the data.
 */
export function evaluateDataExpression(expression: string, data: unknown): string | null {
  const match = dataExpression.exec(expression);
  if (!match) throw new DataExpressionError('Must be one expression on data, as {{ data | filter }}');
  let value: unknown;
  try {
    value = liquid.evalValueSync(`${match[1]} ${match[2] ?? ''}`, { data });
  } catch (error) {
    // A path the data does not have gives nothing, as a null does (a field only some tokens hold).
    const cause = (error as { originalError?: unknown }).originalError ?? error;
    if (cause instanceof Error && /^undefined variable/.test(cause.message)) return null;
    throw new DataExpressionError(failureMessage(error));
  }
  if (value === null || value === undefined) return null;
  const text = to_string(value);
  return text.length === 0 ? null : text;
}

const aliasExpression = new RegExp(
  String.raw`^\{\{\s*(${dataPath})\s*\|\s*(${Object.keys(aliasFilters).join('|')})\s*\}\}$`,
);

/**
 * A new token's id drawn by an alias expression on its data: `{{ data | alias_preserve_format }}`,
 * `{{ data | alias_preserve_length }}`, `{{ data.number | alias_card }}` (one alias filter, alone,
 * on data or a path into it). Each call draws anew. Anything else, a path the data does not have
 * or a value the filter cannot shape is a DataExpressionError naming what, never the data.
 */
export function evaluateAliasExpression(expression: string, data: unknown): string {
  const match = aliasExpression.exec(expression);
  if (!match) {
    throw new DataExpressionError(
      'Must be an alias expression: {{ data | alias_preserve_format }}, {{ data | alias_preserve_length }} or {{ data.number | alias_card }}',
    );
  }
  let value: unknown;
  try {
    value = liquid.evalValueSync(match[1]!, { data });
  } catch {
    value = undefined;
  }
  if (value === null || value === undefined)
    throw new DataExpressionError('The data has no value at this path');
  try {
    return aliasFilters[match[2] as AliasFilter](value);
  } catch (error) {
    throw new DataExpressionError(failureMessage(error));
  }
}

/** A data expression that cannot be evaluated: its message names the filter, never the data. */
export class DataExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataExpressionError';
  }
}

// Masks: `{{ data.number | reveal_last: 4 }}`, evaluated on a token's own data (not on tokens
// named by id). A mask is a text or an object or array of texts mirroring the data.

const maskSource = String.raw`\{\{\s*(${dataPath})\s*(${filterChain})\}\}`;
const anyMaskExpression = () => new RegExp(maskSource, 'g');
const wholeMaskExpression = new RegExp(`^${maskSource}$`);

/** Why a mask could not be evaluated on a token's data: named by where in the mask, never a value. */
export class MaskFailure extends Error {
  readonly location: string;
  constructor(location: string, message: string) {
    super(message);
    this.name = 'MaskFailure';
    this.location = location;
  }
}

function maskFailureMessage(error: unknown): string {
  const cause = (error as { originalError?: unknown }).originalError ?? error;
  const message = cause instanceof Error ? cause.message : '';
  if (/undefined variable/i.test(message)) return 'The mask names a field the data does not have';
  return failureMessage(error);
}

function evaluateMaskExpression(match: RegExpExecArray, data: unknown, location: string): unknown {
  const [, path, filters] = match;
  try {
    return liquid.evalValueSync(`${path} ${filters ?? ''}`, { data }) ?? null;
  } catch (error) {
    throw new MaskFailure(location, maskFailureMessage(error));
  }
}

function renderMaskString(text: string, data: unknown, location: string): unknown {
  const single = wholeMaskExpression.exec(text);
  if (single) return evaluateMaskExpression(single, data, location);
  if (text.includes('{{') && !anyMaskExpression().test(text)) {
    throw new MaskFailure(location, 'A mask expression reads the token’s data: {{ data… | filter }}');
  }
  let rendered = '';
  let copied = 0;
  for (const match of text.matchAll(anyMaskExpression())) {
    rendered += text.slice(copied, match.index);
    copied = match.index + match[0].length;
    rendered += to_string(evaluateMaskExpression(match, data, location));
  }
  rendered += text.slice(copied);
  if (rendered.length > maxRenderedLength) {
    throw new MaskFailure(location, `The mask exceeds ${maxRenderedLength} characters`);
  }
  return rendered;
}

/**
 * A mask evaluated on a token's data: each text of it rendered (a text that is exactly one
 * expression becomes its value), objects and arrays kept as they are. The first failure is a
 * MaskFailure naming where in the mask (`mask`, `mask.number`).
 */
export function evaluateMask(mask: unknown, data: unknown, location = 'mask'): unknown {
  if (typeof mask === 'string') return renderMaskString(mask, data, location);
  if (Array.isArray(mask)) return mask.map((item, index) => evaluateMask(item, data, `${location}.${index}`));
  if (isPlainObject(mask)) {
    return Object.fromEntries(
      Object.entries(mask).map(([key, item]) => [key, evaluateMask(item, data, `${location}.${key}`)]),
    );
  }
  return mask;
}
