import { describe, expect, it } from 'vitest';
import { passesAbaChecksum, passesLuhn } from './checksums.ts';
import { displayName } from './common.ts';
import { createTokenBody } from './tokens.schemas.ts';

describe('checksums', () => {
  it('Luhn accepts real test card numbers and rejects a changed digit', () => {
    for (const number of ['4242424242424242', '5555555555554444', '378282246310005', '6011111111111117']) {
      expect(passesLuhn(number)).toBe(true);
    }
    expect(passesLuhn('4242424242424241')).toBe(false);
  });

  it('ABA accepts real routing numbers and rejects a changed digit', () => {
    for (const routing of ['011000015', '021000021', '111000025'])
      expect(passesAbaChecksum(routing)).toBe(true);
    expect(passesAbaChecksum('011000016')).toBe(false);
    expect(passesAbaChecksum('01100001')).toBe(false);
  });
});

describe('create token body', () => {
  it('defaults the type and lower-cases containers', () => {
    const body = createTokenBody.parse({ data: { a: 1 }, containers: ['/PCI/High/'] });
    expect(body).toMatchObject({ type: 'token', containers: ['/pci/high/'] });
  });

  it('names nested card fields by their path', () => {
    const result = createTokenBody.safeParse({ type: 'card', data: { number: '123', expiration_month: 0 } });
    expect(result.success).toBe(false);
    const paths = result.error!.issues.map((issue) => issue.path.join('.')).sort();
    expect(paths).toEqual(['data.expiration_month', 'data.expiration_year', 'data.number']);
  });

  it('refuses an expiry whose year PostgreSQL cannot read back (past 9999 UTC)', () => {
    const expiresAt = (value: string) => createTokenBody.safeParse({ data: 1, expires_at: value });
    expect(expiresAt('9999-12-31T23:59:59.999Z').success).toBe(true);
    const past9999 = expiresAt('9999-12-31T23:59:59-23:59');
    expect(past9999.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['expires_at']);
  });

  it('rejects malformed containers and metadata that is not a string map', () => {
    expect(createTokenBody.safeParse({ data: 1, containers: ['pci'] }).success).toBe(false);
    expect(createTokenBody.safeParse({ data: 1, containers: ['/a//'] }).success).toBe(false);
    expect(createTokenBody.safeParse({ data: 1, metadata: { a: 1 } }).success).toBe(false);
  });
});

describe('display names', () => {
  it('refuse control characters, line breaks and bidi controls; allow ordinary Unicode', () => {
    for (const bad of [
      'a\r\nb',
      'a\u0000',
      '\u0085',
      'x\u2028',
      '\u202Eabc',
      'a\u2066b',
      'tab\there',
      '\u007f',
    ]) {
      expect(displayName.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    for (const good of ['Acme', 'Café Ünïcode', '株式会社', '🚀 Rocket', "O'Brien & Sons"]) {
      expect(displayName.parse(` ${good} `)).toBe(good);
    }
  });
});
