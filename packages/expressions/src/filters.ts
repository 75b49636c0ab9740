// Basis Theory's custom filters, added to Liquid's standard ones. A filter that cannot apply
// throws a FilterError whose message names the filter and what it expected, never the value.
import { JSONPath } from 'jsonpath-plus';

export class FilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilterError';
  }
}

/** A JSON object that is not an array (the shape a `{...}` value or a card token's data has). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function textOf(filter: string, value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new FilterError(`${filter} expects text or a number`);
}

/**
 * `json: '<JSONPath>'`: the one value the path selects, an array when it selects several, null
 * when it selects none. Script expressions (`?()`, `()`) are refused: a path reads, never runs.
 */
export function json(value: unknown, path: unknown): unknown {
  if (typeof path !== 'string' || path.length === 0) throw new FilterError('json expects a JSONPath');
  if (value === null || typeof value !== 'object') throw new FilterError('json expects an object or array');
  let matches: unknown[];
  try {
    matches = JSONPath<unknown[]>({ path, json: value, wrap: true, eval: false });
  } catch {
    throw new FilterError(`json: the path ${path} is not a valid JSONPath`);
  }
  if (matches.length === 0) return null;
  return matches.length === 1 ? matches[0] : matches;
}

/** The last four characters. */
export const last4 = (value: unknown): string => textOf('last4', value).slice(-4);

/** A card number's BIN: its first 8 digits when it has 16 or more, else its first 6. */
export function card_bin(value: unknown): string {
  const digits = textOf('card_bin', value).replace(/\D/g, '');
  return digits.slice(0, digits.length >= 16 ? 8 : 6);
}

/**
 * A card's expiration in a format of `MM` (month, 2 digits), `M` (month), `YYYY` and `YY`
 * (year), with any other characters kept: `card_exp: 'MM/YY'` → `04/29`. The input is a card
 * (an object with `expiration_month` and `expiration_year`).
 */
export function card_exp(value: unknown, format: unknown = 'MM/YY'): string {
  if (!isPlainObject(value))
    throw new FilterError('card_exp expects a card with expiration_month and expiration_year');
  if (typeof format !== 'string') throw new FilterError('card_exp expects a format text');
  const month = Number(value.expiration_month);
  const year = Number(value.expiration_year);
  if (!Number.isInteger(month) || !Number.isInteger(year)) {
    throw new FilterError('card_exp expects a card with expiration_month and expiration_year');
  }
  const parts: Record<string, string> = {
    YYYY: String(year).padStart(4, '0'),
    YY: String(year % 100).padStart(2, '0'),
    MM: String(month).padStart(2, '0'),
    M: String(month),
  };
  return format.replace(/YYYY|YY|MM|M/g, (part) => parts[part]!);
}

function countOf(filter: string, value: unknown): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 0 || count > 10_000) {
    throw new FilterError(`${filter} expects a whole number from 0 to 10000`);
  }
  return count;
}

function characterOf(filter: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || [...value].length !== 1)
    throw new FilterError(`${filter} expects one character`);
  return value;
}

/** All but the last `count` characters replaced by `mask` (default `X`). */
export function reveal_last(value: unknown, count: unknown, mask?: unknown): string {
  const characters = [...textOf('reveal_last', value)];
  const shown = Math.min(countOf('reveal_last', count), characters.length);
  const masked = characterOf('reveal_last', mask, 'X');
  return masked.repeat(characters.length - shown) + characters.slice(characters.length - shown).join('');
}

/** All but the first `count` characters replaced by `mask` (default `X`). */
export function reveal_first(value: unknown, count: unknown, mask?: unknown): string {
  const characters = [...textOf('reveal_first', value)];
  const shown = Math.min(countOf('reveal_first', count), characters.length);
  const masked = characterOf('reveal_first', mask, 'X');
  return characters.slice(0, shown).join('') + masked.repeat(characters.length - shown);
}

/** The text padded on the left with `padding` (default a space) to `length` characters. */
export function pad_left(value: unknown, length: unknown, padding?: unknown): string {
  return textOf('pad_left', value).padStart(
    countOf('pad_left', length),
    characterOf('pad_left', padding, ' '),
  );
}

/** The value as JSON text (a text stays itself). */
export const stringify = (value: unknown): string =>
  typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');

/** A number from a number or a numeric text. */
export function to_number(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(value))
    return Number(value);
  throw new FilterError('to_number expects a number or a numeric text');
}

/** Text: a text as it is, numbers and booleans as they read, anything else as JSON. */
export const to_string = (value: unknown): string =>
  typeof value === 'number' || typeof value === 'boolean' ? String(value) : stringify(value);

/** A boolean from a boolean or the text `true`/`false` (any case). */
export function to_boolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^\s*(true|false)\s*$/i.test(value))
    return value.trim().toLowerCase() === 'true';
  throw new FilterError('to_boolean expects a boolean or the text true or false');
}

export const customFilters = {
  json,
  last4,
  card_bin,
  card_exp,
  reveal_last,
  reveal_first,
  pad_left,
  stringify,
  to_number,
  to_string,
  to_boolean,
} as const;
