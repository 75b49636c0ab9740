import { describe, expect, it } from 'vitest';
import type { ContainerRule } from '@tokenvault/platform';
import {
  allowedOnAll,
  allowedOnAny,
  readableContainers,
  readTransform,
  revealsOnEvery,
  revealableContainers,
  revealsEveryToken,
  revealsToken,
  useTransform,
} from './access.ts';

describe('container access', () => {
  const scoped = { permissions: [], rules: [{ container: '/pci/', permissions: ['token:read'] }] };

  it('a rule on a container covers the containers below it, not its siblings', () => {
    expect(allowedOnAny(scoped, 'token:read', ['/pci/high/'])).toBe(true);
    expect(allowedOnAny(scoped, 'token:read', ['/pci/'])).toBe(true);
    expect(allowedOnAny(scoped, 'token:read', ['/pcix/'])).toBe(false);
    expect(allowedOnAny(scoped, 'token:delete', ['/pci/high/'])).toBe(false);
  });

  it('reads need one container, changes need all', () => {
    expect(allowedOnAny(scoped, 'token:read', ['/general/', '/pci/high/'])).toBe(true);
    expect(allowedOnAll(scoped, 'token:read', ['/general/', '/pci/high/'])).toBe(false);
  });

  it('a tenant-wide permission covers every container', () => {
    expect(
      allowedOnAll({ permissions: new Set(['token:create']), rules: [] }, 'token:create', ['/a/', '/b/c/']),
    ).toBe(true);
  });
});

describe('readTransform: the first rule by priority that covers the token and holds the permission decides', () => {
  const card = {
    containers: ['/pci/high/'],
    privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
  } as const;
  const rules = (...list: ContainerRule[]) => ({ permissions: [], rules: list });

  it('given a mask rule on /pci/ and a reveal rule on /, when priority puts /pci/ first, then a card is masked', () => {
    const grants = rules(
      { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
      { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
    );
    expect(readTransform(grants, 'token:read', card)).toBe('mask');
    expect(readTransform(grants, 'token:read', { ...card, containers: ['/general/high/'] })).toBe('reveal');
  });

  it('given rules of equal priority, when both cover the token, then the first in the array decides', () => {
    const grants = rules(
      { container: '/pci/', priority: 1, transform: 'redact', permissions: ['token:read'] },
      { container: '/', priority: 1, transform: 'reveal', permissions: ['token:read'] },
    );
    expect(readTransform(grants, 'token:read', card)).toBe('redact');
  });

  it('given a rule without a priority, when another has one, then the one with a priority decides first', () => {
    const grants = rules(
      { container: '/', transform: 'reveal', permissions: ['token:read'] },
      { container: '/pci/', priority: 5, transform: 'mask', permissions: ['token:read'] },
    );
    expect(readTransform(grants, 'token:read', card)).toBe('mask');
  });

  it('given a first rule that lacks the permission, when a later one holds it, then the later one decides', () => {
    const grants = rules(
      { container: '/pci/', priority: 1, transform: 'redact', permissions: ['token:create'] },
      { container: '/', priority: 2, transform: 'mask', permissions: ['token:read'] },
    );
    expect(readTransform(grants, 'token:read', card)).toBe('mask');
  });

  it('given a rule stored without transform, when it decides, then it reveals', () => {
    expect(
      readTransform(rules({ container: '/pci/', permissions: ['token:read'] }), 'token:read', card),
    ).toBe('reveal');
  });

  it('given tenant-wide token:read, when rules would mask, then it reveals', () => {
    const grants = {
      permissions: ['token:read'],
      rules: [{ container: '/', transform: 'redact' as const, permissions: ['token:read'] }],
    };
    expect(readTransform(grants, 'token:read', card)).toBe('reveal');
  });

  it('given no rule covering the token, when nothing is on a lower impact level, then no access', () => {
    expect(
      readTransform(rules({ container: '/bank/', permissions: ['token:read'] }), 'token:read', card),
    ).toBe(undefined);
  });
});

describe('readTransform: the restriction policy for a rule on a lower impact level', () => {
  const lowReader = { permissions: [], rules: [{ container: '/pci/low/', permissions: ['token:read'] }] };
  const token = (restriction_policy: 'mask' | 'redact', containers = ['/pci/high/']) => ({
    containers,
    privacy: { classification: 'pci', impact_level: 'high', restriction_policy } as const,
  });

  it('given a reveal rule on /pci/low/, when it reads a pci/high token, then its restriction policy decides', () => {
    expect(readTransform(lowReader, 'token:read', token('mask'))).toBe('mask');
    expect(readTransform(lowReader, 'token:read', token('redact'))).toBe('redact');
  });

  it('given a rule on /pci/moderate/, when it reads a pci/high token, then its restriction policy decides', () => {
    const moderate = {
      permissions: [],
      rules: [{ container: '/pci/moderate/', permissions: ['token:read'] }],
    };
    expect(readTransform(moderate, 'token:read', token('mask'))).toBe('mask');
  });

  it('given a rule on /pci/high/, when it reads a pci/moderate token, then a higher level gives nothing', () => {
    const high = { permissions: [], rules: [{ container: '/pci/high/', permissions: ['token:read'] }] };
    const moderateToken = {
      containers: ['/pci/moderate/'],
      privacy: { classification: 'pci', impact_level: 'moderate', restriction_policy: 'mask' } as const,
    };
    expect(readTransform(high, 'token:read', moderateToken)).toBe(undefined);
  });

  it('given a token outside its privacy container, when only the lower level is held, then no access', () => {
    expect(readTransform(lowReader, 'token:read', token('mask', ['/payments/']))).toBe(undefined);
  });

  it('given a rule on another classification lower level, when it reads a pci token, then no access', () => {
    const bankLow = { permissions: [], rules: [{ container: '/bank/low/', permissions: ['token:read'] }] };
    expect(readTransform(bankLow, 'token:read', token('mask'))).toBe(undefined);
  });

  it('given a rule on /pci/low/, when a list filters by container, then the higher pci levels are listed', () => {
    expect(readableContainers(lowReader, 'token:read')).toEqual([
      '/pci/low/',
      '/pci/moderate/',
      '/pci/high/',
    ]);
    expect(readableContainers({ permissions: ['token:read'], rules: [] }, 'token:read')).toBe(null);
  });
});

describe('useTransform: a use needs every container, and shows the least revealing', () => {
  it('given reveal on /a/ and mask on /b/, when a token is in both, then it is masked', () => {
    const grants = {
      permissions: [],
      rules: [
        { container: '/a/', transform: 'reveal' as const, permissions: ['token:use'] },
        { container: '/b/', transform: 'mask' as const, permissions: ['token:use'] },
      ],
    };
    expect(useTransform(grants, 'token:use', ['/a/', '/b/'])).toBe('mask');
    expect(useTransform(grants, 'token:use', ['/a/'])).toBe('reveal');
    expect(useTransform(grants, 'token:use', ['/a/', '/c/'])).toBe(undefined);
  });
});

describe("revealsOnEvery: who may set or evaluate expressions on a token's data", () => {
  const rules: ContainerRule[] = [
    { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read', 'token:update'] },
    { container: '/general/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
    { container: '/pii/low/', priority: 3, transform: 'reveal', permissions: ['token:read'] },
    { container: '/bank/', priority: 4, transform: 'reveal', permissions: ['token:update'] },
  ];
  const grants = { permissions: [], rules };

  it('given a rule that reveals on each container, then it reveals', () => {
    expect(revealsOnEvery(grants, ['/general/orders/'])).toBe(true);
  });

  it('given a masking rule on one of the containers, then it does not reveal', () => {
    expect(revealsOnEvery(grants, ['/general/orders/', '/pci/high/'])).toBe(false);
    expect(revealsOnEvery(grants, ['/pci/high/'])).toBe(false);
  });

  it('given only a lower impact level (the restriction policy decides), or another permission, then it does not', () => {
    expect(revealsOnEvery(grants, ['/pii/high/'])).toBe(false);
    expect(revealsOnEvery(grants, ['/bank/high/'])).toBe(false);
    expect(revealsOnEvery(grants, [])).toBe(false);
  });

  it('given a tenant-wide token:read, then it reveals everywhere', () => {
    expect(revealsOnEvery({ permissions: ['token:read'], rules: [] }, ['/pci/high/', '/x/'])).toBe(true);
  });
});

describe('terms on stored data: revealsToken, revealableContainers, revealsEveryToken', () => {
  const card = {
    containers: ['/pci/high/'],
    privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
  } as const;
  const general = {
    containers: ['/general/high/'],
    privacy: { classification: 'general', impact_level: 'high', restriction_policy: 'redact' },
  } as const;
  const rule = (container: string, priority: number, transform?: 'reveal' | 'mask' | 'redact') =>
    ({
      container,
      priority,
      permissions: ['token:read'],
      ...(transform ? { transform } : {}),
    }) as ContainerRule;
  const masker = { permissions: [], rules: [rule('/pci/', 1, 'mask'), rule('/', 2)] };

  it('a token is revealed only where the deciding rule reveals, never by a restriction policy', () => {
    expect(revealsToken(masker, general)).toBe(true);
    expect(revealsToken(masker, card)).toBe(false);
    expect(revealsToken({ permissions: [], rules: [rule('/pci/low/', 1)] }, card)).toBe(false);
    expect(revealsToken({ permissions: ['token:read'], rules: [] }, card)).toBe(true);
    expect(revealsToken({ permissions: ['token:search'], rules: [] }, card)).toBe(false);
  });

  it('the SQL filter of a search by data is the revealing rules’ containers (null: tenant-wide)', () => {
    expect(revealableContainers(masker)).toEqual(['/']);
    expect(revealableContainers({ permissions: [], rules: [rule('/pci/', 1, 'mask')] })).toEqual([]);
    expect(revealableContainers({ permissions: ['token:read'], rules: [] })).toBeNull();
  });

  it('every token is revealed only tenant-wide, or from a rule on / with no rule masking or redacting', () => {
    expect(revealsEveryToken({ permissions: ['token:read'], rules: [] })).toBe(true);
    expect(revealsEveryToken({ permissions: [], rules: [rule('/', 1)] })).toBe(true);
    expect(revealsEveryToken(masker)).toBe(false);
    expect(revealsEveryToken({ permissions: [], rules: [rule('/general/', 1)] })).toBe(false);
    expect(revealsEveryToken({ permissions: ['token:create'], rules: [] })).toBe(false);
  });
});
