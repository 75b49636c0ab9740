import { describe, expect, it } from 'vitest';
import { logMappings } from '@tokenvault/audit';
import { tenancyEventTypes } from '@tokenvault/tenancy';
import { tokenEventTypes } from '@tokenvault/tokens';
import { reactorsEventTypes } from '@tokenvault/reactors';
import { vaultEventTypes } from '@tokenvault/vault';
import { proxiesEventTypes } from '@tokenvault/proxy';

/** Every event type of every context: a new context adds its list here. */
const allEventTypes = [
  ...tenancyEventTypes,
  ...tokenEventTypes,
  ...reactorsEventTypes,
  ...vaultEventTypes,
  ...proxiesEventTypes,
];

describe('every event type', () => {
  it('has exactly one audit log mapping', () => {
    expect(Object.keys(logMappings).sort()).toEqual([...allEventTypes].sort());
  });
});
