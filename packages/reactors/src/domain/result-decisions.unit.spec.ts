import { describe, expect, it } from 'vitest';
import type { SeenDecisions } from '@tokenvault/code-runs';
import { seenStillShown, unchangedSince, useTransformOf, type TokenNow } from './result-decisions.ts';

const card: TokenNow = {
  containers: ['/pci/high/'],
  privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
};
const tokens = new Map([['card', card]]);
const grants = (permission: string, transform: 'reveal' | 'mask' | 'redact') => ({
  permissions: [],
  rules: [{ container: '/pci/', permissions: [permission], transform }],
});

describe('seenStillShown: a result is answered while what decides now shows as much as the run saw', () => {
  const args = (transform: string): SeenDecisions => ({ args: { card: transform } });

  it('compares the caller’s use decision now with what its args were given', () => {
    const now = (transform: 'reveal' | 'mask' | 'redact') => ({
      caller: grants('token:use', transform),
      application: undefined,
    });
    expect(seenStillShown(args('reveal'), now('reveal'), tokens)).toBe(true);
    expect(seenStillShown(args('reveal'), now('mask'), tokens)).toBe(false);
    expect(seenStillShown(args('mask'), now('reveal'), tokens)).toBe(true);
    expect(seenStillShown(args('mask'), now('redact'), tokens)).toBe(false);
    // No use at all now: nothing is shown.
    expect(
      seenStillShown(
        args('redact'),
        { caller: grants('token:read', 'reveal'), application: undefined },
        tokens,
      ),
    ).toBe(false);
    expect(seenStillShown(args('whatever'), now('reveal'), tokens)).toBe(false);
  });

  it('compares the run’s application’s read decision now with what its grants then decided on the token as answered', () => {
    const svc = (transform: 'reveal' | 'mask'): SeenDecisions => ({
      svc: {
        application_id: 'app',
        ...grants('token:read', transform),
        tokens: { card: { containers: ['/pci/high/'] } },
      },
    });
    const caller = { permissions: ['token:use'], rules: [] };
    expect(
      seenStillShown(svc('reveal'), { caller, application: grants('token:read', 'reveal') }, tokens),
    ).toBe(true);
    expect(seenStillShown(svc('reveal'), { caller, application: grants('token:read', 'mask') }, tokens)).toBe(
      false,
    );
    expect(seenStillShown(svc('mask'), { caller, application: grants('token:read', 'mask') }, tokens)).toBe(
      true,
    );
    expect(
      seenStillShown(
        svc('mask'),
        { caller, application: { permissions: ['token:read'], rules: [] } },
        tokens,
      ),
    ).toBe(true);
    // The application is gone: nothing it read is shown.
    expect(seenStillShown(svc('mask'), { caller, application: undefined }, tokens)).toBe(false);
  });

  it('leaves a token no longer there to the liveness check, and a result that saw nothing decided alone', () => {
    const caller = grants('token:use', 'redact');
    expect(seenStillShown(args('reveal'), { caller, application: undefined }, new Map())).toBe(true);
    expect(seenStillShown(undefined, { caller, application: undefined }, tokens)).toBe(true);
  });

  it('decides a use as token reads do: tenant-wide reveals, else the least revealing rule on every container', () => {
    expect(useTransformOf({ permissions: new Set(['token:use']), rules: [] }, ['/pci/'])).toBe('reveal');
    expect(
      useTransformOf(
        {
          permissions: [],
          rules: [
            { container: '/pci/', permissions: ['token:use'], transform: 'reveal' },
            { container: '/general/', permissions: ['token:use'], transform: 'mask' },
          ],
        },
        ['/pci/high/', '/general/'],
      ),
    ).toBe('mask');
  });
});

describe('unchangedSince: a result goes with data changed after its run began', () => {
  const seenAt = new Date('2026-01-01T00:00:10Z');
  it('a token never changed, or changed before, keeps it; one changed at or after the run began does not', () => {
    expect(unchangedSince(null, seenAt)).toBe(true);
    expect(unchangedSince(new Date('2026-01-01T00:00:09Z'), seenAt)).toBe(true);
    expect(unchangedSince(seenAt, seenAt)).toBe(false);
    expect(unchangedSince(new Date('2026-01-01T00:00:11Z'), seenAt)).toBe(false);
  });
});
