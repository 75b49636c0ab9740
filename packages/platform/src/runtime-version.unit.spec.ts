import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The tests run on the pinned Node (.nvmrc), which scripts/node.mjs installs and puts first on PATH:
// this proves it reaches vitest's workers, not just the launcher.
describe('runtime', () => {
  it('is the pinned Node major (24 or later)', () => {
    const pinned = readFileSync(new URL('../../../.nvmrc', import.meta.url), 'utf8').trim();
    const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);
    expect(major(process.versions.node)).toBeGreaterThanOrEqual(24);
    expect(major(process.versions.node)).toBe(major(pinned));
  });
});
