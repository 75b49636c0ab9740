import { describe, expect, it } from 'vitest';
import { Problem } from '@tokenvault/platform';
import { parseSearchQuery } from './search-query.ts';

/** What parsing the query throws: a problem's status and field errors. */
function refusalOf(query: string) {
  try {
    parseSearchQuery(query);
  } catch (error) {
    if (error instanceof Problem) return { status: error.status, errors: error.errors };
    throw error;
  }
  return undefined;
}

describe('search query', () => {
  it('reads terms joined by AND, quoted values with escapes, metadata keys and date ranges', () => {
    expect(
      parseSearchQuery(
        'data:6789 AND metadata.customer:"c 42" AND type:card AND container:/pci/ AND fingerprint:abc AND data:"say \\"hi\\""',
      ),
    ).toEqual([
      { field: 'data', value: '6789' },
      { field: 'metadata', key: 'customer', value: 'c 42' },
      { field: 'type', value: 'card' },
      { field: 'container', value: '/pci/' },
      { field: 'fingerprint', value: 'abc' },
      { field: 'data', value: 'say "hi"' },
    ]);
    expect(parseSearchQuery('created_at:[2026-01-01 TO *]')).toEqual([
      { field: 'created_at', from: '2026-01-01T00:00:00.000Z' },
    ]);
    expect(parseSearchQuery('  ')).toEqual([]);
  });

  it('names a field that is not searchable, and the fields that are', () => {
    expect(refusalOf('data:1 AND number:4242')).toEqual({
      status: 400,
      errors: { 'body.query': [expect.stringMatching(/^number is not searchable.*data, metadata/)] },
    });
  });

  it('refuses OR, NOT, a missing value, an open quote and a bad range', () => {
    for (const query of [
      'data:1 OR data:2',
      'data:1 data:2',
      'data:',
      'data:"open',
      'created_at:2026',
      'created_at:[x TO *]',
      'nofield',
    ]) {
      expect(refusalOf(query), query).toMatchObject({
        status: 400,
        errors: { 'body.query': [expect.any(String)] },
      });
    }
  });
});
