import { describe, expect, it } from 'vitest';
import { publicEvents, publishedInParts } from '@tokenvault/contracts';
import { logMappings } from '@tokenvault/audit';
import { vaultEventTypes } from '@tokenvault/vault';
import { contextEventTypes, contexts } from './contexts.ts';

/** Every event type: the contexts' (each from its manifest) and the vault's key rotations. */
const allEventTypes = [...contextEventTypes, ...vaultEventTypes];

describe('every event type', () => {
  it('has exactly one audit log mapping', () => {
    expect(Object.keys(logMappings).sort()).toEqual([...allEventTypes].sort());
  });
});

// The relay refuses (and stops at) an event type without a public contract, so every event type a
// context appends must have one: add its entry to packages/contracts/src/public-events.ts (or,
// for an event of several tenants' facts, to its publishedInParts).
describe('every event type has a public contract', () => {
  it.each(contexts.map((context) => [context.name, context.eventTypes] as const))('%s', (_context, types) => {
    const missing = types.filter((type) => !publicEvents[type] && !publishedInParts[type]);
    expect(missing, 'event types without an entry in publicEvents').toEqual([]);
  });
});
