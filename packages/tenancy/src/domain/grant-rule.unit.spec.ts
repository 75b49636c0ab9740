import { describe, expect, it } from 'vitest';
import {
  grantsNotHeld,
  invitationNotHeld,
  invitedMemberGrants,
  operatorGrants,
  type ApplicationGrants,
} from './grant-rule.ts';

const grants = (
  type: ApplicationGrants['type'],
  permissions: string[] = [],
  rules: ApplicationGrants['rules'] = [],
): ApplicationGrants => ({ type, permissions, rules });

/** caller, requested, the fields expected to be named (empty: allowed). */
const cases: [string, ApplicationGrants, ApplicationGrants, Record<string, string[]>][] = [
  // Types rank public < private < management.
  ['management grants management', grants('management'), grants('management'), {}],
  ['management grants private', grants('management'), grants('private'), {}],
  ['private grants private', grants('private'), grants('private'), {}],
  ['private grants public', grants('private'), grants('public'), {}],
  [
    'private cannot grant management',
    grants('private'),
    grants('management'),
    { 'body.type': ['management is not held by this key (it is private)'] },
  ],
  [
    'public cannot grant private',
    grants('public'),
    grants('private'),
    { 'body.type': ['private is not held by this key (it is public)'] },
  ],
  // Tenant-wide permissions need the same permission tenant-wide.
  ['a held permission', grants('private', ['token:read']), grants('private', ['token:read']), {}],
  [
    'a permission not held',
    grants('private', ['application:create']),
    grants('private', ['application:create', 'token:read', 'token:read']),
    { 'body.permissions': ['token:read is not held by this key'] },
  ],
  [
    'a rule does not cover a tenant-wide permission',
    grants('private', [], [{ container: '/', permissions: ['token:read'] }]),
    grants('private', ['token:read']),
    { 'body.permissions': ['token:read is not held by this key'] },
  ],
  // Container rules: tenant-wide, the same container or a parent.
  [
    'tenant-wide covers a rule',
    grants('private', ['token:read']),
    grants('private', [], [{ container: '/pci/high/', permissions: ['token:read'] }]),
    {},
  ],
  [
    'the same container covers a rule',
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    {},
  ],
  [
    'a parent container covers a rule',
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pci/high/', permissions: ['token:read'] }]),
    {},
  ],
  [
    'a child container does not cover its parent',
    grants('private', [], [{ container: '/pci/high/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    { 'body.rules.0.permissions': ['token:read on /pci/ is not held by this key'] },
  ],
  [
    'a sibling container does not cover',
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/bank/', permissions: ['token:read'] }]),
    { 'body.rules.0.permissions': ['token:read on /bank/ is not held by this key'] },
  ],
  [
    'a prefix that is not a parent path does not cover',
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pcix/', permissions: ['token:read'] }]),
    { 'body.rules.0.permissions': ['token:read on /pcix/ is not held by this key'] },
  ],
  [
    'another permission on the same container does not cover',
    grants('private', [], [{ container: '/pci/', permissions: ['token:create'] }]),
    grants('private', [], [{ container: '/pci/', permissions: ['token:create', 'token:delete'] }]),
    { 'body.rules.0.permissions': ['token:delete on /pci/ is not held by this key'] },
  ],
  [
    'everything not held is named at once',
    grants('private', ['token:create']),
    grants(
      'management',
      ['token:create', 'log:read'],
      [
        { container: '/a/', permissions: ['token:create'] },
        { container: '/b/', permissions: ['token:use'] },
      ],
    ),
    {
      'body.type': ['management is not held by this key (it is private)'],
      'body.permissions': ['log:read is not held by this key'],
      'body.rules.1.permissions': ['token:use on /b/ is not held by this key'],
    },
  ],
  // Transforms: reveal > mask > redact, compared wherever a requested rule decides a read.
  [
    'a masking key grants mask and redact on its container',
    grants('private', [], [{ container: '/pci/', transform: 'mask', permissions: ['token:read'] }]),
    grants(
      'private',
      [],
      [
        { container: '/pci/high/', transform: 'redact', permissions: ['token:read'] },
        { container: '/pci/', transform: 'mask', permissions: ['token:read'] },
      ],
    ),
    {},
  ],
  [
    'a masking key cannot grant reveal (a rule given without transform reveals)',
    grants('private', [], [{ container: '/pci/', transform: 'mask', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pci/high/', permissions: ['token:read'] }]),
    {
      'body.rules.0.transform': ['reveal of token:read on /pci/high/ is more than this key holds (mask)'],
    },
  ],
  [
    'a redacting key cannot grant mask of token:use',
    grants('private', [], [{ container: '/', transform: 'redact', permissions: ['token:use'] }]),
    grants('private', [], [{ container: '/bank/', transform: 'mask', permissions: ['token:use'] }]),
    {
      'body.rules.0.transform': ['mask of token:use on /bank/ is more than this key holds (redact)'],
    },
  ],
  [
    'a stored rule without transform reveals, and grants reveal',
    grants('private', [], [{ container: '/pci/', permissions: ['token:read'] }]),
    grants('private', [], [{ container: '/pci/', transform: 'reveal', permissions: ['token:read'] }]),
    {},
  ],
  [
    'tenant-wide token:read reveals, and grants any transform',
    grants('private', ['token:read']),
    grants('private', [], [{ container: '/', transform: 'reveal', permissions: ['token:read'] }]),
    {},
  ],
  [
    'a rule on / reveals only where the caller reveals: its own mask on /pci/ decides first',
    grants(
      'private',
      [],
      [
        { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
        { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
      ],
    ),
    grants('private', [], [{ container: '/', transform: 'reveal', permissions: ['token:read'] }]),
    { 'body.rules.0.transform': ['reveal of token:read on /pci/ is more than this key holds (mask)'] },
  ],
  [
    'the same rules in another array order decide the same by priority',
    grants(
      'private',
      [],
      [
        { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
        { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
      ],
    ),
    grants(
      'private',
      [],
      [
        { container: '/pci/', priority: 1, transform: 'mask', permissions: ['token:read'] },
        { container: '/', priority: 2, transform: 'reveal', permissions: ['token:read'] },
      ],
    ),
    {},
  ],
  [
    'the transform of a permission that reads no data is not compared',
    grants('private', [], [{ container: '/pci/', transform: 'redact', permissions: ['token:create'] }]),
    grants('private', [], [{ container: '/pci/', transform: 'reveal', permissions: ['token:create'] }]),
    {},
  ],
];

describe('grantsNotHeld: no key grants what it does not hold', () => {
  it.each(cases)('%s', (_name, caller, requested, expected) => {
    expect(grantsNotHeld(caller, requested)).toEqual(expected);
  });

  it('names the type where it came from (an update names the application)', () => {
    expect(grantsNotHeld(grants('private'), grants('management'), 'path.id')).toEqual({
      'path.id': ['management is not held by this key (it is private)'],
    });
  });
});

describe('invitationNotHeld (an invitation grants the ADMIN role)', () => {
  const everything = {
    type: 'management' as const,
    permissions: [...invitedMemberGrants.permissions],
    rules: [],
  };

  it('lets a caller holding every permission tenant-wide, as management, with no expiry, invite', () => {
    expect(invitationNotHeld(everything)).toEqual([]);
    expect(invitationNotHeld(operatorGrants)).toEqual([]);
  });

  it('names each permission a key holding only tenant:invitation:create lacks', () => {
    const notHeld = invitationNotHeld({
      type: 'management',
      permissions: ['tenant:invitation:create'],
      rules: [],
    });
    expect(notHeld).toContain('token:read is held by an ADMIN member but not by this key');
    expect(notHeld).not.toContainEqual(expect.stringContaining('tenant:invitation:create'));
  });

  it('counts a rule revealing every container as no tenant-wide permission, and a lower type as less', () => {
    const byRule = invitationNotHeld({
      type: 'private',
      permissions: everything.permissions.filter((permission) => permission !== 'token:read'),
      rules: [{ container: '/', permissions: ['token:read'], transform: 'reveal' }],
    });
    expect(byRule).toEqual([
      'management is held by an ADMIN member but not by this key (it is private)',
      'token:read is held by an ADMIN member but not by this key',
    ]);
  });

  it('refuses a key that expires, whatever it holds: a member outlives it', () => {
    const expiring = { ...everything, keyExpiresAt: '2026-12-08T00:00:00.000Z' };
    expect(invitationNotHeld(expiring)).toEqual([
      'This key expires (2026-12-08T00:00:00.000Z) and an ADMIN member does not: only a key without an expiry, or a member, may invite',
    ]);
  });
});
