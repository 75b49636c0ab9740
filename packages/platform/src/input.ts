import type { FieldErrors } from './domain-errors.ts';
import { badRequest } from './errors.ts';

/**
 * Input limits every route shares (docs/decisions.md, "Input limits"). They are checked on the
 * parsed request before any schema runs, so nothing recursive ever sees an input past them.
 */
export const inputLimits = {
  /** Levels of nested objects and arrays in a body, the body itself counting as one. */
  maxJsonDepth: 64,
  /** Values of one repeatable query parameter (`?id=a&id=b…`). */
  maxRepeatedValues: 100,
} as const;

// A surrogate half without its partner cannot be encoded as UTF-8: PostgreSQL refuses it and
// encryption would silently turn it into U+FFFD.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const messages = {
  nul: 'Must not contain NUL (U+0000)',
  surrogate: 'Must not contain a lone surrogate (U+D800–U+DFFF): it is not valid Unicode',
  nulInName: 'A field name must not contain NUL (U+0000)',
  surrogateInName: 'A field name must not contain a lone surrogate (U+D800–U+DFFF)',
  tooDeep: `Must not be nested deeper than ${inputLimits.maxJsonDepth} levels`,
};

export interface ScreenOptions {
  /**
   * Top-level body fields that are sealed (encrypted) before they are stored: NUL may appear in
   * their strings because they never become a PostgreSQL text value. Problems inside them are
   * reported on the field itself, so none of their keys ever reaches an error body.
   */
  sealedFields?: readonly string[];
}

interface Pending {
  value: unknown;
  path: string[];
  depth: number;
  /** Set inside a sealed field: where its problems are reported. */
  sealedAt?: string[];
}

/**
 * Rejects what no field may hold, before any schema or query runs: lone surrogates anywhere, NUL
 * outside sealed fields, nesting past the depth limit. Iterative, so a deep input cannot exhaust
 * the stack here either. Throws a 400 naming each field (`<where>.<path>`).
 */
export function screenInput(
  value: unknown,
  where: 'body' | 'query' | 'path',
  options: ScreenOptions = {},
): void {
  const errors: FieldErrors = {};
  const add = (path: string[], message: string) => {
    const messagesOfField = (errors[[where, ...path].join('.')] ??= []);
    if (!messagesOfField.includes(message)) messagesOfField.push(message);
  };
  const sealed = new Set(options.sealedFields ?? []);
  const pending: Pending[] = [{ value, path: [], depth: 1 }];
  while (pending.length) {
    const { value: current, path, depth, sealedAt } = pending.pop()!;
    const reportAt = sealedAt ?? path;
    if (typeof current === 'string') {
      if (!sealedAt && current.includes('\0')) add(reportAt, messages.nul);
      if (loneSurrogate.test(current)) add(reportAt, messages.surrogate);
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    if (depth > inputLimits.maxJsonDepth) {
      // Named by its top-level field (or as a whole when it is an array): the full path of a deep
      // value would be as long as the value.
      add(sealedAt ?? (Array.isArray(value) ? [] : path.slice(0, 1)), messages.tooDeep);
      continue;
    }
    const entries = Array.isArray(current)
      ? current.map((item, index) => [String(index), item] as const)
      : Object.entries(current);
    for (const [key, item] of entries) {
      // A bad key is reported on its object: echoing the key back would echo what is wrong.
      if (!sealedAt && key.includes('\0')) add(reportAt, messages.nulInName);
      if (loneSurrogate.test(key)) add(reportAt, sealedAt ? messages.surrogate : messages.surrogateInName);
      const itemPath = [...path, key];
      const itemSealedAt =
        sealedAt ?? (where === 'body' && depth === 1 && sealed.has(key) ? itemPath : undefined);
      pending.push({
        value: item,
        path: itemPath,
        depth: depth + 1,
        ...(itemSealedAt ? { sealedAt: itemSealedAt } : {}),
      });
    }
  }
  if (Object.keys(errors).length) {
    throw badRequest('The request holds characters or nesting no field may hold; see errors.', errors);
  }
}
