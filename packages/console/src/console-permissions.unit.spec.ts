import { describe, expect, it } from 'vitest';
import { permissions } from '@tokenvault/contracts';
import { consolePermissions } from '../app/console-permissions.ts';

describe('the console', () => {
  it('offers exactly the permissions the service knows', () => {
    expect([...consolePermissions]).toEqual([...permissions]);
  });
});
