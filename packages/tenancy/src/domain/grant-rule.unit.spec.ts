import { describe, expect, it } from 'vitest';
import { grantsNotHeld, type ApplicationGrants } from './grant-rule.ts';

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
