import { describe, expect, it } from 'vitest';
import { allowedOnAll, allowedOnAny } from './access.ts';

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
