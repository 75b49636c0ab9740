import { describe, expect, it } from 'vitest';
import { permissions, tokenPermissions, typeMayHold } from '@tokenvault/contracts';
import {
  consolePermissions,
  permissionGroups,
  permissionPresets,
  publicApplicationPermissions,
  tokenPermissions as consoleTokenPermissions,
} from '../app/console-permissions.ts';

describe('the console', () => {
  it('offers exactly the permissions the service knows', () => {
    expect([...consolePermissions]).toEqual([...permissions]);
  });
});

describe('the console’s permission groups', () => {
  it('hold every permission once', () => {
    const grouped = permissionGroups.flatMap((group) => group.permissions);
    expect([...grouped].sort()).toEqual([...permissions].sort());
    expect(new Set(grouped).size).toBe(grouped.length);
  });

  it('leave to a public application exactly what the service lets it hold', () => {
    expect([...publicApplicationPermissions]).toEqual(permissions.filter((p) => typeMayHold('public', p)));
  });

  it('offer for container rules exactly the token permissions', () => {
    expect([...consoleTokenPermissions]).toEqual([...tokenPermissions]);
  });

  it('have presets: read-only holds no write, tokenize-only holds only token:create', () => {
    const preset = (title: string) => permissionPresets.find((item) => item.title === title)!.permissions;
    expect(preset('Read-only').every((p) => p.endsWith(':read') || p === 'token:search')).toBe(true);
    expect(preset('Read-only')).toContain('token:read');
    expect(preset('Tokenize only')).toEqual(['token:create']);
    expect([...preset('Admin')]).toEqual([...permissions]);
  });
});
