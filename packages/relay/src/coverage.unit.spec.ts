import { describe, expect, it } from 'vitest';
import { publicEvents } from '@tokenvault/contracts';
import { tenancyEventTypes } from '@tokenvault/tenancy';
import { tokenEventTypes } from '@tokenvault/tokens';
import { reactorsEventTypes } from '@tokenvault/reactors';
import { proxiesEventTypes } from '@tokenvault/proxy';

// The relay refuses (and stops at) an event type without a public contract, so every event type a
// context appends must have one: add its entry to packages/contracts/src/events.ts.
describe('every event type has a public contract', () => {
  it.each([
    ['tokens', tokenEventTypes],
    ['tenancy', tenancyEventTypes],
    ['reactors', reactorsEventTypes],
    ['proxies', proxiesEventTypes],
  ] as const)('%s', (_context, types) => {
    const missing = types.filter((type) => !publicEvents[type]);
    expect(missing, 'event types without an entry in publicEvents').toEqual([]);
  });
});
