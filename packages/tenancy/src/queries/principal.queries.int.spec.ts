import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { withTenant, type Authenticate, type Clock } from '@tokenvault/platform';
import { problemWith } from '@tokenvault/platform/testing';
import { ApplicationCommands } from '../commands/applications.commands.ts';
import { streams } from '../domain/tenancy.events.ts';
import { tenancyMigrations } from '../migrations.ts';
import { tenancyProjection } from '../projections/tenancy.projection.ts';
import { createAuthenticator } from './principal.queries.ts';

const tenant = randomUUID();
const member = testPrincipal(tenant, randomUUID(), [], { actorType: 'user' });
const body = { name: 'Backend', type: 'private' as const, permissions: ['token:read' as const], rules: [] };

/** The service's clock, moved forward by the spec. */
class MovableClock implements Clock {
  private current = Date.parse('2026-05-01T12:00:00.000Z');
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

describe('the API-key authenticator, on the keys of an application', () => {
  const side = useReadSide(tenancyMigrations, [tenancyProjection]);
  const clock = new MovableClock();
  let commands: ApplicationCommands;
  let authenticate: Authenticate;

  /** A command's outcome is readable, and its invalidations have reached this process. */
  const readable = async <
    T extends { position: Parameters<typeof side.consistency.writeReadable>[0] | null },
  >(
    written: T,
  ) => {
    expect(await side.consistency.writeReadable(written.position!)).toBe(true);
    return written;
  };
  const resolves = async (key: string) => (await authenticate(key)).actorId;

  beforeAll(async () => {
    await side.store.given(streams.tenant(tenant), [
      {
        type: 'TenantCreated',
        data: {
          tenant_id: tenant,
          name: 'Tenant',
          owner_id: member.actorId,
          settings: { deduplicate_tokens: 'false' },
          created_by: member.actorId,
          created_at: clock.now().toISOString(),
        },
        metadata: { tenant_id: tenant },
      },
    ]);
    commands = new ApplicationCommands(side.store, 0, clock);
    // A cache that would trust a key for an hour: expiry and deletion must not wait for it.
    authenticate = createAuthenticator(side.ownerPool, side.consistency, { cacheTtlMs: 3_600_000, clock });
  });

  it('resolves every live key of an application to it; a deleted key is refused at once, cached or not, and the others go on', async () => {
    const { application, key: first } = await readable(await commands.create(member, body, 'r1'));
    const { key: second } = await readable(await commands.createKey(member, application.id, undefined, 'r2'));
    expect(await resolves(first)).toBe(application.id);
    expect(await resolves(second.key)).toBe(application.id);
    expect((await authenticate(first)).keyExpiresAt).toBeUndefined();
    await readable(await commands.deleteKey(member, application.id, application.id, 'r3'));
    await expect(authenticate(first)).rejects.toSatisfy(problemWith(401));
    expect(await resolves(second.key)).toBe(application.id);
  });

  it('refuses a key from its expires_at on, though it was cached for longer', async () => {
    const { application } = await readable(await commands.create(member, body, 'r4'));
    const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString();
    const { key } = await readable(
      await commands.createKey(member, application.id, { expires_at: expiresAt }, 'r5'),
    );
    expect(await resolves(key.key)).toBe(application.id);
    // The principal says when its key expires (what bounds the keys it mints), a key without one says nothing.
    expect((await authenticate(key.key)).keyExpiresAt).toBe(expiresAt);
    clock.advance(59_999);
    expect(await resolves(key.key)).toBe(application.id);
    clock.advance(1);
    await expect(authenticate(key.key)).rejects.toSatisfy(problemWith(401));
    // A fresh authenticator (another process) reads the same from the table.
    const other = createAuthenticator(side.ownerPool, side.consistency, { cacheTtlMs: 0, clock });
    await expect(other(key.key)).rejects.toSatisfy(problemWith(401));
  });

  it('refuses every key of a deleted application', async () => {
    const { application, key: first } = await readable(await commands.create(member, body, 'r6'));
    const { key: second } = await readable(await commands.createKey(member, application.id, undefined, 'r7'));
    expect(await resolves(second.key)).toBe(application.id);
    await readable(await commands.delete(member, application.id, 'r8'));
    for (const key of [first, second.key]) {
      await expect(authenticate(key)).rejects.toSatisfy(problemWith(401));
    }
  });

  it('lets the app role read a key’s id and dates, of its own tenant only, and never its digest', async () => {
    const { application } = await readable(await commands.create(member, body, 'r9'));
    const rows = await withTenant(
      side.appPool,
      tenant,
      async (client) =>
        (
          await client.query<{ id: string }>('SELECT id FROM api_keys WHERE application_id = $1', [
            application.id,
          ])
        ).rows,
    );
    expect(rows).toEqual([{ id: application.id }]);
    const elsewhere = await withTenant(
      side.appPool,
      randomUUID(),
      async (client) => (await client.query<{ id: string }>('SELECT id FROM api_keys')).rows,
    );
    expect(elsewhere).toEqual([]);
    await expect(
      withTenant(side.appPool, tenant, (client) => client.query('SELECT key_hash FROM api_keys')),
    ).rejects.toThrow(/permission denied/);
  });
});
