import { describe, expect, it } from 'vitest';
import { readPermissionOf, subscriptionNotHeld } from './subscription-grant.ts';

describe('subscriptionNotHeld: a webhook subscribes to no more than its key reads, and does not outlive it', () => {
  it('maps each event type to the permission reading its resource', () => {
    expect(readPermissionOf('token:created')).toBe('token:read');
    expect(readPermissionOf('application:deleted')).toBe('application:read');
  });

  it('names every event type whose resource the key does not read tenant-wide (body.events)', () => {
    const errors = subscriptionNotHeld({ permissions: new Set(['webhook:create', 'token:read']) }, [
      'token:created',
      'application:created',
      'proxy:updated',
    ]);
    expect(Object.keys(errors ?? {})).toEqual(['body.events']);
    expect(errors!['body.events']!.join(' ')).toMatch(/application:read.*proxy:read/);
  });

  it('refuses a key that expires (body.url), and allows one reading everything without an expiry', () => {
    const reads = new Set(['token:read', 'application:read']);
    expect(
      Object.keys(
        subscriptionNotHeld({ permissions: reads, keyExpiresAt: '2030-01-01T00:00:00Z' }, [
          'token:created',
        ]) ?? {},
      ),
    ).toEqual(['body.url']);
    expect(
      subscriptionNotHeld({ permissions: reads }, ['token:created', 'application:updated']),
    ).toBeUndefined();
  });
});
