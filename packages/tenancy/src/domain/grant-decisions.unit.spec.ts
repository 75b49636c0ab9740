import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  classifications,
  decidingRule,
  impactLevels,
  readDecision,
  restrictionPolicies,
  useDecision,
  type AccessRuleGrant,
  type AccessTarget,
  type AccessTransform,
} from '@tokenvault/contracts';
import { grantsNotHeld, type ApplicationGrants } from './grant-rule.ts';

// The grant check compares decisions, not rules (issue 48, finding 4): whatever rule sets it
// accepts, the requested grants decide no more than the caller's on every token, as the token reads
// decide (readDecision, useDecision of contracts, which tokens' readTransform and useTransform are).

const permissions = ['token:read', 'token:use', 'token:update'] as const;
const readsData = new Set<string>(['token:read', 'token:use']);
const ruleContainers = [
  '/',
  '/pci/',
  '/pci/low/',
  '/pci/high/',
  '/pci/high/eu/',
  '/pii/',
  '/pii/low/',
  '/pii/moderate/',
  '/pii/high/',
  '/general/',
  '/general/orders/',
];
const tokenContainers = [
  '/pci/high/',
  '/pci/high/eu/',
  '/pci/low/',
  '/pii/low/',
  '/pii/moderate/',
  '/pii/high/',
  '/general/orders/',
  '/general/other/',
  '/other/',
];

const rule: fc.Arbitrary<AccessRuleGrant> = fc.record(
  {
    container: fc.constantFrom(...ruleContainers),
    permissions: fc.subarray([...permissions], { minLength: 1 }),
    transform: fc.constantFrom<AccessTransform>('reveal', 'mask', 'redact'),
    priority: fc.integer({ min: 1, max: 3 }),
  },
  { requiredKeys: ['container', 'permissions', 'transform'] },
);
const grants = (type: ApplicationGrants['type']): fc.Arbitrary<ApplicationGrants> =>
  fc.record({
    type: fc.constant(type),
    permissions: fc.subarray([...permissions], { maxLength: 1 }),
    rules: fc.array(rule, { maxLength: 5 }),
  });
/**
 * Requested grants near the caller's, which the rule-by-rule check accepts and which can still
 * decide otherwise: some of its rules, in another order, at other priorities, each showing as
 * much or less.
 */
const lowerOrEqual: Record<AccessTransform, AccessTransform[]> = {
  reveal: ['reveal', 'mask', 'redact'],
  mask: ['mask', 'redact'],
  redact: ['redact'],
};
const derivedFrom = (caller: ApplicationGrants): fc.Arbitrary<ApplicationGrants> =>
  fc.shuffledSubarray([...caller.rules]).chain((rules) =>
    fc
      .tuple(
        fc.subarray([...caller.permissions]),
        ...rules.map((kept) =>
          fc.record(
            {
              container: fc.constant(kept.container),
              permissions: fc.subarray([...kept.permissions], { minLength: 1 }),
              transform: fc.constantFrom(...lowerOrEqual[kept.transform ?? 'reveal']),
              priority: fc.integer({ min: 1, max: 3 }),
            },
            { requiredKeys: ['container', 'permissions', 'transform'] },
          ),
        ),
      )
      .map(([permissions, ...derived]) => ({ type: caller.type, permissions, rules: derived })),
  );
/** A caller and requested grants: unrelated ones, or ones near the caller's. */
const callerAndRequested = grants('private').chain((caller) =>
  fc.tuple(fc.constant(caller), fc.oneof(grants('private'), derivedFrom(caller))),
);

const token: fc.Arbitrary<AccessTarget> = fc.record({
  containers: fc.uniqueArray(fc.constantFrom(...tokenContainers), { minLength: 1, maxLength: 3 }),
  privacy: fc.record({
    classification: fc.constantFrom(...classifications),
    impact_level: fc.constantFrom(...impactLevels),
    restriction_policy: fc.constantFrom(...restrictionPolicies),
  }),
});

/** How much a decision shows: none < redact < mask < reveal; for the writes, only whether it allows. */
function rank(permission: string, decision: AccessTransform | undefined): number {
  if (decision === undefined) return -1;
  if (!readsData.has(permission)) return 0;
  return { redact: 0, mask: 1, reveal: 2 }[decision];
}

/** Each decision the service takes on a token for this permission, by grants. */
function decisionsOn(grantsOf: ApplicationGrants, permission: string, target: AccessTarget) {
  const tenantWide = grantsOf.permissions.includes(permission);
  const covered = (container: string) => decidingRule(grantsOf.rules, permission, [container]) !== undefined;
  return {
    read: tenantWide ? 'reveal' : readDecision(grantsOf.rules, permission, target),
    use: tenantWide ? 'reveal' : useDecision(grantsOf.rules, permission, target.containers),
    anyContainer: tenantWide || target.containers.some(covered) ? 'reveal' : undefined,
    everyContainer: tenantWide || target.containers.every(covered) ? 'reveal' : undefined,
  } satisfies Record<string, AccessTransform | undefined>;
}

/** Where the requested grants decide more than the caller's on one of the tokens: a description, or undefined. */
function firstExceeding(caller: ApplicationGrants, requested: ApplicationGrants, tokens: AccessTarget[]) {
  for (const target of tokens) {
    for (const permission of permissions) {
      const held = decisionsOn(caller, permission, target);
      const granted = decisionsOn(requested, permission, target);
      for (const kind of Object.keys(held) as (keyof typeof held)[]) {
        if (rank(permission, granted[kind]) > rank(permission, held[kind])) {
          return `${kind} ${permission} on ${JSON.stringify(target)}: ${granted[kind]} > ${held[kind]}`;
        }
      }
    }
  }
  return undefined;
}

describe('grantsNotHeld compares decisions (property-based)', () => {
  it('whenever it accepts, the requested grants decide no more than the caller’s on every token', () => {
    fc.assert(
      fc.property(
        callerAndRequested,
        fc.array(token, { minLength: 1, maxLength: 8 }),
        ([caller, requested], tokens) => {
          if (Object.keys(grantsNotHeld(caller, requested)).length > 0) return;
          expect(firstExceeding(caller, requested, tokens)).toBeUndefined();
        },
      ),
      { numRuns: 1_000 },
    );
  }, 60_000);

  it('whenever it accepts the caller’s own rules reordered (priorities dropped), they decide no more on every token', () => {
    // Reordered rules are the finding's case: a generator of them finds the tokens that tell them apart.
    fc.assert(
      fc.property(grants('private'), fc.array(token, { minLength: 1, maxLength: 8 }), (caller, tokens) => {
        const reordered = {
          ...caller,
          rules: [...caller.rules].reverse().map(({ priority: _p, ...r }) => r),
        };
        const accepted = Object.keys(grantsNotHeld(caller, reordered)).length === 0;
        if (accepted) expect(firstExceeding(caller, reordered, tokens)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  }, 60_000);

  it('accepts the caller’s own grants, and the same rules all redacting', () => {
    fc.assert(
      fc.property(grants('private'), (caller) => {
        expect(grantsNotHeld(caller, caller)).toEqual({});
        const redacting = {
          ...caller,
          rules: caller.rules.map((r) => ({ ...r, transform: 'redact' as const })),
        };
        expect(grantsNotHeld(caller, redacting)).toEqual({});
      }),
      { numRuns: 300 },
    );
  }, 60_000);
});

describe('grantsNotHeld on the tokens the review named', () => {
  const read = (container: string, transform: AccessTransform, priority?: number): AccessRuleGrant => ({
    container,
    permissions: ['token:read'],
    transform,
    ...(priority === undefined ? {} : { priority }),
  });
  const of = (...rules: AccessRuleGrant[]): ApplicationGrants => ({
    type: 'private',
    permissions: [],
    rules,
  });

  it('refuses the caller’s rules at swapped priorities: on a card in /pci/high/ and /general/orders/ they reveal where the caller masks', () => {
    const caller = of(read('/pci/', 'mask', 1), read('/general/', 'reveal', 2));
    const swapped = of(read('/pci/', 'mask', 2), read('/general/', 'reveal', 1));
    expect(grantsNotHeld(caller, swapped)).toEqual({
      'body.rules.1.transform': [
        expect.stringMatching(
          /^reveal of token:read on a .* token .* in \/pci\/ and \/general\/ is more than this key holds there \(mask\)$/,
        ),
      ],
    });
    const card = {
      containers: ['/pci/high/', '/general/orders/'],
      privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
    } as const;
    expect([
      readDecision(caller.rules, 'token:read', card),
      readDecision(swapped.rules, 'token:read', card),
    ]).toEqual(['mask', 'reveal']);
  });

  it('refuses dropping a redacting rule where a lower-level rule would give the token’s restriction policy (mask) instead', () => {
    const caller = of(read('/pii/low/', 'reveal', 1), read('/pii/high/', 'redact', 2));
    expect(grantsNotHeld(caller, of(read('/pii/low/', 'reveal', 1)))).toEqual({
      'body.rules.0.transform': [
        'mask of token:read on a pii/high token (restriction policy mask) in /pii/high/ is more than this key holds there (redact)',
      ],
    });
    // What decides as the caller does is granted: its own rules, or the redacting one alone.
    expect(grantsNotHeld(caller, caller)).toEqual({});
    expect(grantsNotHeld(caller, of(read('/pii/high/', 'redact')))).toEqual({});
  });
});
