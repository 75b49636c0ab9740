import { describe, expect, it } from 'vitest';
import { problemThrownBy } from '@tokenvault/platform/testing';
import type { RequestParameterDeclaration } from '@tokenvault/contracts';
import { findTokenExpressions, prepareArguments, substituteTokens } from './arguments.ts';

const parameter = (
  name: string,
  type: RequestParameterDeclaration['type'] = 'string',
  optional = false,
): RequestParameterDeclaration => ({ name, type, optional });

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' };

describe('invocation arguments (spec: "Invoking a reactor", rules 1-9)', () => {
  it('rule 1: args match declared names case-sensitively', () => {
    // Given a formula that declares `amount`
    const declared = [parameter('amount', 'number')];
    // When args hold `amount` and `Amount`, Then only `amount` is taken
    expect(prepareArguments(declared, { amount: 5, Amount: 7 })).toEqual({ amount: 5 });
    // And `Amount` alone does not satisfy `amount`
    expect(problemThrownBy(() => prepareArguments(declared, { Amount: 7 })).errors).toEqual({
      'body.args.amount': ['Required'],
    });
  });

  it('rule 2: undeclared properties are removed', () => {
    const declared = [parameter('name'), parameter('note', 'string', true)];
    expect(prepareArguments(declared, { name: 'a', extra: 1, nested: { x: 1 } })).toEqual({ name: 'a' });
  });

  it('rule 3: a dotted name is a property of nested objects; undeclared sub-properties go', () => {
    const declared = [parameter('user.address.city'), parameter('user.name')];
    const args = { user: { name: 'Ada', age: 36, address: { city: 'London', street: 'x' } } };
    expect(prepareArguments(declared, args)).toEqual({ user: { name: 'Ada', address: { city: 'London' } } });
  });

  it('rule 4: a required parameter missing (or null) is a 400 naming it; an optional one may be absent', () => {
    const declared = [
      parameter('user.address.city'),
      parameter('amount', 'number'),
      parameter('memo', 'string', true),
    ];
    const problem = problemThrownBy(() =>
      prepareArguments(declared, { user: { address: {} }, amount: null }),
    );
    expect(problem.status).toBe(400);
    expect(problem.errors).toEqual({
      'body.args.user.address.city': ['Required'],
      'body.args.amount': ['Required'],
    });
    expect(prepareArguments([parameter('memo', 'string', true)], null)).toEqual({});
  });

  it('rule 5: values are cast to the declared type where possible, else a 400 naming the field', () => {
    const declared = [
      parameter('count', 'number'),
      parameter('flag', 'boolean'),
      parameter('label', 'string'),
      parameter('items', 'array'),
      parameter('meta', 'object'),
    ];
    expect(
      prepareArguments(declared, { count: ' 42 ', flag: 'false', label: 7, items: [1], meta: { a: 1 } }),
    ).toEqual({ count: 42, flag: false, label: '7', items: [1], meta: { a: 1 } });
    const problem = problemThrownBy(() =>
      prepareArguments(declared, { count: 'forty', flag: 'yes', label: { a: 1 }, items: 'x', meta: [1] }),
    );
    expect(problem.status).toBe(400);
    expect(problem.errors).toEqual({
      'body.args.count': ['Must be a number'],
      'body.args.flag': ['Must be a boolean'],
      'body.args.label': ['Must be a string'],
      'body.args.items': ['Must be an array'],
      'body.args.meta': ['Must be an object'],
    });
  });

  it('rule 6: plaintext mixes with {{ token }} expressions, spaces allowed inside the braces', () => {
    const args = { greeting: 'Hello {{name-1}}, card {{ card_1 }}!', plain: 'no tokens', n: 3 };
    expect(findTokenExpressions(args)).toEqual(['name-1', 'card_1']);
    const data = new Map<string, unknown>([
      ['name-1', 'Ada'],
      ['card_1', { last4: '4242' }],
    ]);
    expect(substituteTokens(args, { data })).toEqual({
      greeting: 'Hello Ada, card {"last4":"4242"}!',
      plain: 'no tokens',
      n: 3,
    });
    expect(findTokenExpressions({ a: ['{{ x }}', { b: '{{y}} and {{ x }}' }], k: '{{ }}' })).toEqual([
      'x',
      'y',
    ]);
    // A token the caller could not resolve is a 400 naming where it was.
    expect(
      problemThrownBy(() => substituteTokens({ a: { b: '{{ gone }}' } }, { data: new Map() })).errors,
    ).toEqual({
      'body.args.a.b': ['Unknown token gone'],
    });
  });

  it('rule 7: a complex token is injected whole and can supply several nested parameters', () => {
    const declared = [
      parameter('card.number'),
      parameter('card.expiration_month', 'number'),
      parameter('card.expiration_year', 'number'),
    ];
    const substituted = substituteTokens(
      { card: '{{ card-token }}' },
      { data: new Map([['card-token', card]]) },
    );
    expect(substituted).toEqual({ card });
    expect(prepareArguments(declared, substituted)).toEqual({
      card: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
    });
  });

  it('rule 8: validation applies to the arguments after detokenization', () => {
    const declared = [parameter('amount', 'number'), parameter('approved', 'boolean')];
    const args = { amount: '{{ amount-token }}', approved: '{{ flag-token }}' };
    const data = new Map<string, unknown>([
      ['amount-token', '1250'],
      ['flag-token', 'true'],
    ]);
    // Before substitution the expressions are not numbers; after it they cast.
    expect(problemThrownBy(() => prepareArguments(declared, args)).errors).toHaveProperty([
      'body.args.amount',
    ]);
    expect(prepareArguments(declared, substituteTokens(args, { data }))).toEqual({
      amount: 1250,
      approved: true,
    });
    const wrong = new Map<string, unknown>([
      ['amount-token', 'a lot'],
      ['flag-token', true],
    ]);
    expect(
      problemThrownBy(() => prepareArguments(declared, substituteTokens(args, { data: wrong }))).errors,
    ).toEqual({
      'body.args.amount': ['Must be a number'],
    });
  });

  it('rule 9: at most 100 distinct tokens per invocation (repeats count once)', () => {
    const ids = Array.from({ length: 100 }, (_, index) => `t${index}`);
    const hundred = { list: ids.map((id) => `{{ ${id} }}`), again: '{{t0}}{{t1}}' };
    expect(findTokenExpressions(hundred)).toHaveLength(100);
    const problem = problemThrownBy(() => findTokenExpressions({ ...hundred, more: '{{ t100 }}' }));
    expect(problem.status).toBe(400);
    expect(Object.keys(problem.errors ?? {})).toEqual(['body.args']);
  });

  it('args that are not an object are a 400 naming body.args', () => {
    expect(problemThrownBy(() => prepareArguments([], [1, 2])).errors).toEqual({
      'body.args': ['Must be an object'],
    });
  });
});
