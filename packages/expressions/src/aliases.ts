// Basis Theory's alias filters, which draw a token's id in the format of its data. They are never
// registered in the Liquid engine: an alias is random, so it means something only as a new
// token's id (a search index or a detokenization of one would give another value at each call).
// Every character drawn comes from crypto's randomInt: an alias is never derived from the data,
// only shaped like it.
import { randomInt } from 'node:crypto';
import { FilterError } from './filters.ts';

const digits = '0123456789';
const lowercase = 'abcdefghijklmnopqrstuvwxyz';
const uppercase = lowercase.toUpperCase();
const alphanumerics = digits + lowercase + uppercase;

const drawFrom = (alphabet: string): string => alphabet[randomInt(alphabet.length)]!;

function textOf(filter: string, value: unknown): string {
  if (typeof value === 'string' && value.length > 0) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new FilterError(`${filter} expects a text or a number`);
}

/**
 * Each digit replaced by a random digit and each letter by a random letter of its case; every
 * other character kept where it is (`123-45-6789` → `804-17-2265`).
 */
export function alias_preserve_format(value: unknown): string {
  const text = textOf('alias_preserve_format', value);
  if (!/[A-Za-z0-9]/.test(text)) {
    throw new FilterError('alias_preserve_format expects a text with letters or digits to replace');
  }
  return text
    .replace(/[0-9]/g, () => drawFrom(digits))
    .replace(/[a-z]/g, () => drawFrom(lowercase))
    .replace(/[A-Z]/g, () => drawFrom(uppercase));
}

/** Random letters and digits, as many as the value has characters. */
export function alias_preserve_length(value: unknown): string {
  const length = [...textOf('alias_preserve_length', value)].length;
  return Array.from({ length }, () => drawFrom(alphanumerics)).join('');
}

/** Digits' sum by Luhn's rule (every second digit from the right doubled), mod 10. */
function luhnSum(number: string): number {
  let sum = 0;
  for (let fromRight = 0; fromRight < number.length; fromRight++) {
    const digit = Number(number[number.length - 1 - fromRight]);
    const weighted = fromRight % 2 === 1 ? digit * 2 : digit;
    sum += weighted > 9 ? weighted - 9 : weighted;
  }
  return sum % 10;
}

/**
 * A card number's BIN (first 6 digits) and last 4 kept, the digits between drawn at random so that
 * the whole passes the Luhn check, and never the card's own middle digits. The fifth digit from
 * the right is the one Luhn's rule leaves undoubled next to the last four: it is set last, to the
 * one value that makes the sum a multiple of 10.
 */
export function alias_card(value: unknown): string {
  const number = typeof value === 'string' ? value : '';
  if (!/^\d{13,19}$/.test(number))
    throw new FilterError('alias_card expects a card number of 13 to 19 digits');
  const bin = number.slice(0, 6);
  const last4 = number.slice(-4);
  const middle = number.slice(6, -4);
  for (;;) {
    const drawn = Array.from({ length: middle.length - 1 }, () => drawFrom(digits)).join('');
    const withZero = `${bin}${drawn}0${last4}`;
    const checkDigit = (10 - luhnSum(withZero)) % 10;
    const aliasMiddle = `${drawn}${checkDigit}`;
    if (aliasMiddle !== middle) return `${bin}${aliasMiddle}${last4}`;
  }
}

export const aliasFilters = { alias_preserve_format, alias_preserve_length, alias_card } as const;
export type AliasFilter = keyof typeof aliasFilters;
