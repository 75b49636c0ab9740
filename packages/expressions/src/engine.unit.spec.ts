import { describe, expect, it } from 'vitest';
import { problemThrownBy } from '@tokenvault/platform/testing';
import {
  DataExpressionError,
  evaluateDataExpression,
  findTokenIds,
  expressionSyntaxError,
  fieldUnder,
  isDataExpression,
  maxTokensPerRequest,
  renderJson,
  renderText,
  stringsIn,
  tokenIdsIn,
  type OpenedTokens,
} from './index.ts';

const card = { number: '4242424242424242', expiration_month: 4, expiration_year: 2029, cvc: '123' };
const cardToken = {
  id: 'card-1',
  type: 'card',
  containers: ['/pci/high/'],
  metadata: { region: 'eu' },
  data: card,
};

const opened: OpenedTokens = {
  data: new Map<string, unknown>([
    ['card-1', card],
    ['amount', '12.50'],
    ['flag', 'TRUE'],
    ['name', 'ada lovelace'],
    ['short', '42'],
    ['amex', '378282246310005'],
  ]),
  tokens: new Map<string, unknown>([['card-1', cardToken]]),
};

/** One whole-value expression rendered (typed: what its last filter returns). */
const value = (expression: string) =>
  renderJson({ v: expression }, opened, fieldUnder('body')) as { v: unknown };
const one = (expression: string) => value(expression).v;

describe('expressions: the two forms', () => {
  it('{{ <id> }} alone as a JSON value injects the whole data: a card stays an object', () => {
    expect(one('{{ card-1 }}')).toEqual(card);
    expect(one('{{card-1}}')).toEqual(card);
  });

  it('{{ <id> }} inside a longer string reads as text (objects as JSON)', () => {
    expect(one('Hello {{ name }}!')).toBe('Hello ada lovelace!');
    expect(one('card={{ card-1 }}')).toBe(`card=${JSON.stringify(card)}`);
  });

  it('{{ token: <id> | … }} sees the whole token (metadata, type, containers and data)', () => {
    expect(one("{{ token: card-1 | json: '$.metadata.region' }}")).toBe('eu');
    expect(one("{{ token: card-1 | json: '$.data.number' | last4 }}")).toBe('4242');
    expect(one('{{ token: card-1 }}')).toEqual(cardToken);
    expect(one('type {{ token:card-1 | json: "$.type" }}')).toBe('type card');
  });

  it('text without expressions, numbers, booleans, null and keys are kept as they are', () => {
    const input = { '{{ name }}': 'plain', n: 3, b: false, z: null, list: ['a', 1] };
    expect(renderJson(input, opened, fieldUnder('body'))).toEqual(input);
  });
});

describe('expressions: standard Liquid filters', () => {
  it('upcase, downcase, capitalize, append, prepend, slice, replace, size, default, split/join', () => {
    expect(one('{{ name | upcase }}')).toBe('ADA LOVELACE');
    expect(one('{{ flag | downcase }}')).toBe('true');
    expect(one('{{ name | capitalize }}')).toBe('Ada lovelace');
    expect(one("{{ name | append: '!' | prepend: '> ' }}")).toBe('> ada lovelace!');
    expect(one('{{ name | slice: 0, 3 }}')).toBe('ada');
    expect(one("{{ name | replace: 'ada', 'grace' }}")).toBe('grace lovelace');
    expect(one('{{ name | size }}')).toBe(12);
    expect(one("{{ card-1 | json: '$.missing' | default: 'none' }}")).toBe('none');
    expect(one("{{ name | split: ' ' | join: '-' }}")).toBe('ada-lovelace');
  });
});

describe('expressions: Basis Theory’s filters', () => {
  it('json: a JSONPath into the data; several matches an array; none null', () => {
    expect(one("{{ card-1 | json: '$.number' }}")).toBe('4242424242424242');
    expect(one("{{ card-1 | json: '$.expiration_month' }}")).toBe(4);
    expect(one("{{ card-1 | json: '$' }}")).toEqual(card);
    expect(one("{{ card-1 | json: '$.[expiration_month,expiration_year]' }}")).toEqual([4, 2029]);
    expect(one("{{ card-1 | json: '$.nothing' }}")).toBeNull();
  });

  it('json refuses script expressions and non-objects', () => {
    expect(problemThrownBy(() => one("{{ card-1 | json: '$[?(@.cvc)]' }}")).errors).toEqual({
      'body.v': ['json: the path $[?(@.cvc)] is not a valid JSONPath'],
    });
    expect(problemThrownBy(() => one("{{ name | json: '$.a' }}")).errors).toEqual({
      'body.v': ['json expects an object or array'],
    });
  });

  it('last4', () => {
    expect(one("{{ card-1 | json: '$.number' | last4 }}")).toBe('4242');
    expect(one('{{ short | last4 }}')).toBe('42');
  });

  it('card_bin: 8 digits of a 16-digit number, else 6', () => {
    expect(one("{{ card-1 | json: '$.number' | card_bin }}")).toBe('42424242');
    expect(one('{{ amex | card_bin }}')).toBe('378282');
  });

  it('card_exp: the card’s expiration in a format', () => {
    expect(one("{{ card-1 | card_exp: 'MM/YY' }}")).toBe('04/29');
    expect(one("{{ card-1 | card_exp: 'MM/YYYY' }}")).toBe('04/2029');
    expect(one("{{ card-1 | card_exp: 'YYYY-MM' }}")).toBe('2029-04');
    expect(one("{{ card-1 | card_exp: 'M-YY' }}")).toBe('4-29');
    expect(one('{{ card-1 | card_exp }}')).toBe('04/29');
    expect(problemThrownBy(() => one("{{ name | card_exp: 'MM/YY' }}")).errors?.['body.v']).toEqual([
      'card_exp expects a card with expiration_month and expiration_year',
    ]);
  });

  it('reveal_last: all but the last n characters masked (X, or a given character)', () => {
    expect(one("{{ card-1 | json: '$.number' | reveal_last: 4 }}")).toBe('XXXXXXXXXXXX4242');
    expect(one("{{ card-1 | json: '$.number' | reveal_last: 6, '*' }}")).toBe('**********424242');
    expect(one('{{ short | reveal_last: 4 }}')).toBe('42');
  });

  it('pad_left: padded to a length with a character (default a space)', () => {
    expect(one("{{ short | pad_left: 6, '0' }}")).toBe('000042');
    expect(one('{{ short | pad_left: 4 }}')).toBe('  42');
    expect(problemThrownBy(() => one("{{ short | pad_left: 4, 'ab' }}")).errors?.['body.v']).toEqual([
      'pad_left expects one character',
    ]);
  });

  it('stringify: any value as JSON text', () => {
    expect(one('{{ card-1 | stringify }}')).toBe(JSON.stringify(card));
    expect(one("{{ card-1 | json: '$.expiration_year' | stringify }}")).toBe('2029');
  });

  it('to_number, to_string, to_boolean keep the type of a whole-value expression', () => {
    expect(one('{{ amount | to_number }}')).toBe(12.5);
    expect(one("{{ card-1 | json: '$.expiration_year' | to_string }}")).toBe('2029');
    expect(one('{{ flag | to_boolean }}')).toBe(true);
    expect(problemThrownBy(() => one('{{ name | to_number }}')).errors?.['body.v']).toEqual([
      'to_number expects a number or a numeric text',
    ]);
    expect(problemThrownBy(() => one('{{ name | to_boolean }}')).errors?.['body.v']).toEqual([
      'to_boolean expects a boolean or the text true or false',
    ]);
  });
});

describe('expressions: the rules', () => {
  it('finds each distinct id once, in order, in both forms', () => {
    const body = { a: ['{{ x }}', { b: '{{y | last4}} and {{ token: x }}' }], k: '{{ }}', n: 5 };
    expect(tokenIdsIn(stringsIn(body))).toEqual(['x', 'y']);
  });

  it(`at most ${maxTokensPerRequest} distinct tokens per request, a 400 naming the field`, () => {
    const texts = Array.from({ length: maxTokensPerRequest }, (_, index) => `{{ t${index} }}`);
    expect(findTokenIds([...texts, '{{ t0 }}'], 'body')).toHaveLength(maxTokensPerRequest);
    const problem = problemThrownBy(() => findTokenIds([...texts, '{{ t100 }}'], 'body'));
    expect(problem.status).toBe(400);
    expect(Object.keys(problem.errors ?? {})).toEqual(['body']);
  });

  it('an unknown token is a 400 naming every place (a dotted field), never any data', () => {
    const problem = problemThrownBy(() =>
      renderJson(
        { card: { 'a/b': '{{ nope }}' }, list: ['ok', 'x {{ other }}'] },
        opened,
        fieldUnder('body'),
      ),
    );
    expect(problem.status).toBe(400);
    expect(problem.errors).toEqual({
      'body.card.a/b': ['Unknown token nope'],
      'body.list.1': ['Unknown token other'],
    });
  });

  it('a whole token asked for but not opened as one is unknown', () => {
    const dataOnly: OpenedTokens = { data: opened.data };
    expect(
      problemThrownBy(() => renderJson('{{ token: card-1 }}', dataOnly, fieldUnder('body'))).errors,
    ).toEqual({
      body: ['Unknown token card-1'],
    });
  });

  it('a {{ that opens no whole expression is a syntax error naming its position and text', () => {
    const problem = problemThrownBy(() =>
      renderJson(
        {
          card: "{{ card-1 | json: '$.number' }",
          note: 'paid with {{ card 1 }} today',
          fine: '{{ short }}',
        },
        opened,
        fieldUnder('body.args'),
      ),
    );
    expect(problem.status).toBe(400);
    expect(problem.errors).toEqual({
      'body.args.card': [
        `Expression syntax error at character 1: "{{ card-1 | json: '$.number' }" has no closing }}`,
      ],
      'body.args.note': [
        'Expression syntax error at character 11: "{{ card 1 }}" is not {{ <token id> | filter: argument }}',
      ],
    });
    expect(expressionSyntaxError('{{ short }} and {{ short')).toBe(
      'Expression syntax error at character 17: "{{ short" has no closing }}',
    );
    expect(expressionSyntaxError('{{ a {{ short }}')).toMatch(
      /^Expression syntax error at character 1: "{{ a " has no closing/,
    );
    expect(expressionSyntaxError("{{ short | append: '}}' }} plain }} text")).toBeUndefined();
  });

  it('errors of texts name the header (or other location) given, never the data', () => {
    expect(renderText("Bearer {{ card-1 | json: '$.number' }}", opened, 'authorization')).toBe(
      'Bearer 4242424242424242',
    );
    const problem = problemThrownBy(() => renderText('{{ card-1 | no_such_filter }}', opened, 'x-card'));
    expect(problem.errors).toEqual({ 'x-card': ['Unknown filter no_such_filter'] });
    expect(JSON.stringify(problem.toJSON())).not.toContain('4242');
    const failing = problemThrownBy(() =>
      renderText("{{ card-1 | json: '$.number' | to_number | append }}", opened, 'h'),
    );
    expect(JSON.stringify(failing.toJSON())).not.toContain('4242');
  });

  it('no Liquid tags run: text outside {{ }} stays as it is (no include, no file system)', () => {
    expect(renderText("{% include '/etc/passwd' %}{{ short }}", opened, 'body')).toBe(
      "{% include '/etc/passwd' %}42",
    );
    expect(one("{% assign x = 'y' %}{{ short }}")).toBe("{% assign x = 'y' %}42");
  });

  it('rendering is bounded: a filter building a huge text is refused', () => {
    const joiner = 'x'.repeat(200);
    const huge = `{{ short | pad_left: 10000, '0' | split: '' | join: '${joiner}' }}`;
    const problem = problemThrownBy(() => renderText(huge, opened, 'body'));
    expect(problem.errors?.body?.[0]).toMatch(/too large|exceeds/);
  });
});

describe('data expressions (search indexes, fingerprint expressions)', () => {
  const card = { number: '4242424242424242', expiration_month: 4 };

  it('evaluates a path into the data and filters, as text', () => {
    expect(evaluateDataExpression('{{ data.number | last4 }}', card)).toBe('4242');
    expect(evaluateDataExpression('{{ data | replace: "-", "" }}', '123-45-6789')).toBe('123456789');
    expect(evaluateDataExpression('{{data.expiration_month}}', card)).toBe('4');
    expect(evaluateDataExpression('{{ data | json: "$.number" | card_bin }}', card)).toBe('42424242');
  });

  it('gives nothing for a missing path, a null or an empty text', () => {
    expect(evaluateDataExpression('{{ data.missing }}', card)).toBeNull();
    expect(evaluateDataExpression('{{ data }}', '')).toBeNull();
    expect(evaluateDataExpression('{{ data.number }}', { number: null })).toBeNull();
  });

  it('refuses anything but one expression on data, and names a failing filter without the data', () => {
    expect(isDataExpression('{{ data | last4 }}')).toBe(true);
    for (const text of ['{{ token-1 }}', 'x {{ data }}', '{{ data }}{{ data }}', '{% raw %}']) {
      expect(isDataExpression(text), text).toBe(false);
      expect(() => evaluateDataExpression(text, 'secret'), text).toThrow(DataExpressionError);
    }
    expect(() => evaluateDataExpression('{{ data | nosuch }}', 'secret-4242')).toThrow(
      /^Unknown filter nosuch$/,
    );
    expect(() => evaluateDataExpression('{{ data | json: "$.x" }}', 'secret-4242')).toThrow(
      DataExpressionError,
    );
  });
});
