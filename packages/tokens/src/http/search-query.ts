import { badRequest } from '@tokenvault/platform';

// The query of POST /v2/tokens/search and POST /tokens/search: Basis Theory's Lucene-style terms,
// `field:value` joined by AND. Only what an index answers is searchable: nothing scans plaintext.

/** The fields a query may name (`metadata.` takes a key after it). */
export const searchableFields = ['data', 'metadata.<key>', 'type', 'container', 'fingerprint', 'created_at'];

export type SearchTerm =
  | { field: 'data' | 'type' | 'container' | 'fingerprint'; value: string }
  | { field: 'metadata'; key: string; value: string }
  | { field: 'created_at'; from?: string; to?: string };

const invalidQuery = (message: string) =>
  badRequest('The search query is not valid; see errors.', { 'body.query': [message] });

/** A value: a quoted text (`\"` and `\\` escaped inside) or a run of characters up to a space. */
function readValue(query: string, at: number): { value: string; end: number } {
  if (query[at] !== '"') {
    let end = at;
    while (end < query.length && !/\s/.test(query[end]!)) end++;
    if (end === at) throw invalidQuery(`A value must follow the colon at character ${at}`);
    return { value: query.slice(at, end), end };
  }
  let value = '';
  for (let index = at + 1; index < query.length; index++) {
    const character = query[index]!;
    if (character === '\\' && index + 1 < query.length) value += query[++index];
    else if (character === '"') return { value, end: index + 1 };
    else value += character;
  }
  throw invalidQuery(`The quoted value starting at character ${at} is not closed`);
}

/** `[<from> TO <to>]`, either end `*` (open); each end an ISO 8601 date or date and time. */
function readRange(query: string, at: number): { from?: string; to?: string; end: number } {
  const match = /^\[\s*(\S+)\s+TO\s+(\S+)\s*\]/.exec(query.slice(at));
  if (!match) throw invalidQuery('created_at takes a range: created_at:[<from> TO <to>], * for an open end');
  const end = (text: string) => {
    if (text === '*') return undefined;
    if (Number.isNaN(Date.parse(text))) throw invalidQuery(`${text} is not an ISO 8601 date or time`);
    return new Date(text).toISOString();
  };
  const from = end(match[1]!);
  const to = end(match[2]!);
  return { ...(from ? { from } : {}), ...(to ? { to } : {}), end: at + match[0].length };
}

/**
 * The terms of a query, all of which a token must match; an empty query has none. A field that is
 * not searchable is a 400 naming it and the fields that are, as is anything but AND between terms.
 */
export function parseSearchQuery(query: string): SearchTerm[] {
  const terms: SearchTerm[] = [];
  let at = 0;
  const skipSpaces = () => {
    while (at < query.length && /\s/.test(query[at]!)) at++;
  };
  skipSpaces();
  while (at < query.length) {
    if (terms.length > 0) {
      const joiner = /^(\S+)\s+/.exec(query.slice(at));
      if (joiner?.[1] !== 'AND') {
        throw invalidQuery(`Terms are joined by AND only (found ${joiner?.[1] ?? 'the end of the query'})`);
      }
      at += joiner[0].length;
    }
    const field = /^([A-Za-z_][A-Za-z0-9_.-]*):/.exec(query.slice(at));
    if (!field) throw invalidQuery(`Expected a term field:value at character ${at}`);
    const name = field[1]!;
    at += field[0].length;
    if (name === 'created_at') {
      const range = readRange(query, at);
      at = range.end;
      terms.push({
        field: 'created_at',
        ...(range.from ? { from: range.from } : {}),
        ...(range.to ? { to: range.to } : {}),
      });
    } else {
      const { value, end } = readValue(query, at);
      at = end;
      if (name.startsWith('metadata.') && name.length > 'metadata.'.length) {
        terms.push({ field: 'metadata', key: name.slice('metadata.'.length), value });
      } else if (name === 'data' || name === 'type' || name === 'container' || name === 'fingerprint') {
        terms.push({ field: name, value });
      } else {
        throw invalidQuery(
          `${name} is not searchable; the searchable fields are ${searchableFields.join(', ')}`,
        );
      }
    }
    if (at < query.length && !/\s/.test(query[at]!)) {
      throw invalidQuery(`Expected a space after the term ending at character ${at}`);
    }
    skipSpaces();
  }
  return terms;
}
