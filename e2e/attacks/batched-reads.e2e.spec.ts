// Reads that commit together are one record (a TokensReadBatch) naming the reads of every tenant
// in it. An attacker reads its own tokens at the very moment another tenant reads theirs, so that
// both land in the same record, and then looks for the other tenant's reads wherever its own
// reads show up: its audit log (rows, filters, proofs), its webhooks and the Kafka messages the
// relay makes of the record. It finds only its own.
import { webhookEventTypes, toPublicMessages } from '@tokenvault/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { useStack, type TestTenant } from '../support/stack.ts';
import { allEvents } from '../kafka/support.ts';

interface LogRow {
  id: string;
  event_id: string;
  event_hash: string | null;
  tenant_id: string;
  actor_id?: string;
  entity_id: string;
  operation: string;
}

describe('attack: reading at the same moment as another tenant, to see its reads', () => {
  const env = useStack({ WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let other: TestTenant;
  let receiver: TestDestination;
  const mine: string[] = [];
  const theirs: string[] = [];

  beforeAll(async () => {
    other = await env.stack.createTenant('Other tenant');
    receiver = await startHttpDestination();
    const subscribed = await env.tenant.client.request('POST', '/webhooks', {
      body: { name: 'Everything', url: `${receiver.url}/hooks`, events: webhookEventTypes },
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    for (let index = 0; index < 10; index++) {
      mine.push((await env.tenant.client.tokens.create({ data: `mine ${index}` })).id);
      theirs.push((await other.client.tokens.create({ data: `theirs ${index}` })).id);
    }
    // Both tenants read all at once, several rounds: their reads commit in shared records.
    for (let round = 0; round < 3; round++)
      await Promise.all(
        mine.flatMap((id, index) => [
          env.tenant.client.request('GET', `/tokens/${id}`),
          other.client.request('GET', `/tokens/${theirs[index]}`),
        ]),
      );
  });
  afterAll(async () => receiver?.close());

  /** The record events that hold reads of both tenants: what the attack needs to exist. */
  const sharedRecords = async () =>
    (await allEvents(env.stack.service.runtime.ownerPool)).filter((event) => {
      if (event.type !== 'TokensReadBatch') return false;
      const tenants = new Set(
        (event.data as { reads: { tenant_id: string }[] }).reads.map((read) => read.tenant_id),
      );
      return tenants.has(env.tenant.tenantId) && tenants.has(other.tenantId);
    });

  it('the reads did share records (else this spec proves nothing)', async () => {
    expect((await sharedRecords()).length).toBeGreaterThan(0);
  });

  it('my audit log has a row per read of mine, by my key, and nothing of the other tenant’s reads', async () => {
    const rows = await eventually(async () => {
      const page = await env.tenant.client.request<{ data: LogRow[] }>('GET', '/logs', {
        query: { size: 100 },
      });
      const reads = page.body.data.filter((row) => row.operation === 'read');
      expect(reads).toHaveLength(mine.length * 3);
      return page.body.data;
    }, 30_000);
    const text = JSON.stringify(rows);
    for (const id of theirs) expect(text).not.toContain(id);
    expect(text).not.toContain(other.tenantId);
    expect(text).not.toContain(other.applicationId);
    for (const row of rows.filter((one) => one.operation === 'read')) {
      expect(mine).toContain(row.entity_id);
      expect(row).toMatchObject({ tenant_id: env.tenant.tenantId, actor_id: env.tenant.applicationId });
    }
    // Asking for their token by id, or for a row of a shared record's other reads, finds nothing.
    for (const id of theirs) {
      const filtered = await env.tenant.client.request<{ data: LogRow[] }>('GET', '/logs', {
        query: { entity_id: id },
      });
      expect(filtered.body.data).toEqual([]);
    }
    const theirRows = await eventually(async () => {
      const page = await other.client.request<{ data: LogRow[] }>('GET', '/logs', { query: { size: 100 } });
      const reads = page.body.data.filter((row) => row.operation === 'read');
      expect(reads).toHaveLength(theirs.length * 3);
      return reads;
    }, 30_000);
    for (const row of theirRows)
      expect((await env.tenant.client.request('GET', `/logs/${row.id}/proof`)).status).toBe(404);
  });

  it('the proof of my read row shows the record without any read of it: no other tenant, token or key', async () => {
    const row = await eventually(async () => {
      const page = await env.tenant.client.request<{ data: LogRow[] }>('GET', '/logs', {
        query: { size: 100 },
      });
      const read = page.body.data.find((one) => one.operation === 'read' && one.event_hash !== null);
      expect(read).toBeDefined();
      return read!;
    }, 30_000);
    const proof = await env.tenant.client.request<Record<string, unknown>>('GET', `/logs/${row.id}/proof`);
    expect(proof.status).toBe(200);
    const text = JSON.stringify(proof.body);
    for (const secret of [...theirs, other.tenantId, other.applicationId]) expect(text).not.toContain(secret);
    // Nor my own reads' ids: the record's data enters only as its hash.
    for (const id of mine) expect(text).not.toContain(id);
  });

  it('my webhook carries none of the reads, theirs or mine', async () => {
    const created = await env.tenant.client.tokens.create({ data: 'after the reads' });
    await eventually(async () =>
      expect(receiver.received.map((request) => request.body.toString('utf8')).join('\n')).toContain(
        created.id,
      ),
    );
    const bodies = receiver.received.map((request) => request.body.toString('utf8')).join('\n');
    for (const id of theirs) expect(bodies).not.toContain(id);
    expect(bodies).not.toContain(other.tenantId);
  });

  it('on Kafka, each read of a shared record is a message of its own tenant naming only its tokens', async () => {
    for (const record of await sharedRecords()) {
      for (const message of toPublicMessages(record)) {
        const text = JSON.stringify(message.value.data);
        const ownIds = message.value.tenantid === env.tenant.tenantId ? mine : theirs;
        const foreignIds = message.value.tenantid === env.tenant.tenantId ? theirs : mine;
        expect(message.value.type).toBe('tokenvault.audit.TokensRead');
        expect(message.key).toBe(message.value.tenantid);
        expect(message.value.data).toMatchObject({ tenant_id: message.value.tenantid });
        expect(ownIds.some((id) => text.includes(id))).toBe(true);
        for (const id of foreignIds) expect(text).not.toContain(id);
      }
    }
  });
});
