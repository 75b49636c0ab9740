import { describe, expect, it } from 'vitest';
import { problemThrownBy } from '@tokenvault/platform/testing';
import { alias_card, alias_preserve_format, alias_preserve_length } from './aliases.ts';
import { FilterError } from './filters.ts';
import { DataExpressionError, evaluateAliasExpression, evaluateDataExpression, renderText } from './index.ts';

const passesLuhn = (number: string) =>
  [...number].reverse().reduce((sum, character, fromRight) => {
    const weighted = Number(character) * (fromRight % 2 === 1 ? 2 : 1);
    return sum + (weighted > 9 ? weighted - 9 : weighted);
  }, 0) %
    10 ===
  0;

/** Enough draws that a filter keeping one drawn character fixed would show. */
const draws = 200;
const drawn = (alias: () => string) => Array.from({ length: draws }, alias);

describe('alias_preserve_format', () => {
  it('keeps every character but letters and digits, a digit drawn as a digit and a letter as a letter of its case', () => {
    for (const alias of drawn(() => alias_preserve_format('123-45-6789 Ab.c'))) {
      expect(alias).toMatch(/^\d{3}-\d{2}-\d{4} [A-Z][a-z]\.[a-z]$/);
    }
  });

  it('draws every position at random, never the same alias twice in a row of many', () => {
    const aliases = drawn(() => alias_preserve_format('123-45-6789'));
    expect(new Set(aliases).size).toBe(draws);
    // Each digit position takes many values: nothing of the data is kept there.
    for (const position of [0, 1, 2, 4, 5, 7, 8, 9, 10]) {
      expect(new Set(aliases.map((alias) => alias[position])).size).toBeGreaterThan(5);
    }
  });

  it('refuses a value with nothing to replace, and what is not text or a number', () => {
    expect(() => alias_preserve_format('--')).toThrow(FilterError);
    expect(() => alias_preserve_format({ number: '1' })).toThrow(/expects a text or a number/);
    expect(alias_preserve_format(1234)).toMatch(/^\d{4}$/);
  });
});

describe('alias_preserve_length', () => {
  it('draws letters and digits, as many as the value has characters', () => {
    for (const alias of drawn(() => alias_preserve_length('jane.doe@example.com'))) {
      expect(alias).toMatch(/^[A-Za-z0-9]{20}$/);
    }
    expect(alias_preserve_length('€uro')).toHaveLength(4);
  });

  it('never the same alias twice of many', () => {
    expect(new Set(drawn(() => alias_preserve_length('jane.doe@example.com'))).size).toBe(draws);
  });
});

describe('alias_card', () => {
  const number = '4242421234564242';

  it('keeps the BIN (first 6) and last 4, draws the digits between, and passes the Luhn check', () => {
    for (const alias of drawn(() => alias_card(number))) {
      expect(alias).toMatch(/^424242\d{6}4242$/);
      expect(passesLuhn(alias)).toBe(true);
      expect(alias.slice(6, -4)).not.toBe('123456');
    }
  });

  it('draws the middle anew each time', () => {
    expect(new Set(drawn(() => alias_card(number))).size).toBeGreaterThan(draws - 3);
  });

  it('never gives the card’s own middle digits, even when they leave few aliases (13 digits: 3 of them)', () => {
    const short = '4222222222222';
    for (const alias of drawn(() => alias_card(short))) {
      expect(alias).toMatch(/^422222\d{3}2222$/);
      expect(passesLuhn(alias)).toBe(true);
      expect(alias).not.toBe(short);
    }
  });

  it('takes 13 to 19 digits only', () => {
    for (const length of [13, 15, 19]) expect(alias_card('4'.repeat(length))).toHaveLength(length);
    for (const wrong of ['4242 4242 4242 4242', '424242424242', '4'.repeat(20), 4242424242424242]) {
      expect(() => alias_card(wrong)).toThrow('alias_card expects a card number of 13 to 19 digits');
    }
  });
});

describe('evaluateAliasExpression', () => {
  const card = { number: '4242421234564242', expiration_month: 4, expiration_year: 2031 };

  it('evaluates one alias filter on data or a path into it', () => {
    expect(evaluateAliasExpression('{{ data | alias_preserve_format }}', '123-45-6789')).toMatch(
      /^\d{3}-\d{2}-\d{4}$/,
    );
    expect(evaluateAliasExpression('{{data|alias_preserve_length}}', 'abcdef')).toMatch(/^[A-Za-z0-9]{6}$/);
    expect(evaluateAliasExpression('{{ data.number | alias_card }}', card)).toMatch(/^424242\d{6}4242$/);
  });

  it('refuses any other expression, a path the data lacks and a value the filter cannot shape, never quoting the data', () => {
    for (const other of [
      '{{ data | last4 }}',
      '{{ data | alias_preserve_format | upcase }}',
      '{{ data | upcase | alias_card }}',
      '{{ tok-1 | alias_card }}',
      '{{ data | alias_unknown }}',
    ]) {
      expect(() => evaluateAliasExpression(other, '123')).toThrow(/^Must be an alias expression/);
    }
    expect(() => evaluateAliasExpression('{{ data.pan | alias_card }}', card)).toThrow(
      'The data has no value at this path',
    );
    expect(() => evaluateAliasExpression('{{ data | alias_card }}', card)).toThrow(DataExpressionError);
    expect(() => evaluateAliasExpression('{{ data | alias_card }}', '4242 4242 4242 4242')).toThrow(
      /^alias_card expects a card number of 13 to 19 digits$/,
    );
  });

  it('is never a filter of search indexes, fingerprints or detokenization: randomness means nothing there', () => {
    expect(() => evaluateDataExpression('{{ data | alias_card }}', '4242424242424242')).toThrow(
      'Unknown filter alias_card',
    );
    const opened = { data: new Map([['tok-1', '1234']]) };
    expect(
      problemThrownBy(() => renderText('{{ tok-1 | alias_preserve_format }}', opened, 'body.x')).errors,
    ).toEqual({ 'body.x': ['Unknown filter alias_preserve_format'] });
  });
});
