// Finding 9: the console's Tokens page said "Data stays hidden until you reveal it" but listed
// tokens with their data: every card number and CVC on the page reached the browser (anyone
// looking over the member's network panel, a browser extension, a cached response), and each
// page view was a read of every listed token in the log. A member opens the Tokens page in
// Chromium: no response carries a card's data, nothing is read until Reveal, and Reveal reads
// exactly the one token.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { uniqueCardNumber } from '../support/cards.ts';
import { signInThroughConsole, useConsoleStack } from '../support/console.ts';
import { ownerEmailOf } from '../support/sign-in.ts';
import type { TestTenant } from '../support/stack.ts';

interface LogRow {
  operation: string;
  actor_type?: string;
  actor_id?: string;
}

describe('attack: the Tokens page of the console carries token data to the browser', () => {
  const env = useConsoleStack();
  let page: Page;
  let tenant: TestTenant;
  let ownerEmail: string;
  const cards: { id: string; number: string; cvc: string }[] = [];
  /** The text of every answer the browser received from the service. */
  const received: Promise<string>[] = [];

  beforeAll(async () => {
    tenant = await env.stack.createTenant('Card Holder Corp');
    ownerEmail = await ownerEmailOf(tenant);
    for (let index = 0; index < 3; index++) {
      const number = uniqueCardNumber();
      const cvc = String(100 + Math.floor(Math.random() * 900));
      const created = await tenant.client.request<{ id: string }>('POST', '/tokens', {
        body: { type: 'card', data: { number, expiration_month: 12, expiration_year: 2031, cvc } },
      });
      expect(created.status).toBe(201);
      cards.push({ id: created.body.id, number, cvc });
    }
    page = await env.newPage();
    page.on('response', (response) => {
      if (response.url().startsWith(env.stack.url)) received.push(response.text().catch(() => ''));
    });
  });

  /** The reads on record naming this token (of TokensReadBatch events): appended before any data leaves the service. */
  const readsOf = async (tokenId: string) => {
    const result = await env.stack.service.runtime.ownerPool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM es_events, jsonb_array_elements(data->'reads') AS read
        WHERE event_type = 'TokensReadBatch'
          AND read->'tokens' @> jsonb_build_array(jsonb_build_object('token_id', $1::text))`,
      [tokenId],
    );
    return result.rows[0]!.count;
  };
  const logReads = async (tokenId: string) => {
    const logs = await tenant.client.request<{ data: LogRow[] }>('GET', '/logs', {
      query: { entity_id: tokenId, size: 100 },
    });
    return logs.body.data.filter((row) => row.operation === 'read');
  };

  it('lists the tokens without their data: no card number or CVC reaches the browser, no read is recorded', async () => {
    await signInThroughConsole(page, env.stack.url, env.smtp, ownerEmail);
    await page.goto(`${env.stack.url}/console#/tokens`);
    for (const card of cards) {
      await page.getByRole('button', { name: `Reveal the data of ${card.id}` }).waitFor();
    }
    await page.waitForLoadState('networkidle');
    const bodies = await Promise.all(received);
    for (const card of cards) {
      for (const body of bodies) {
        expect(body).not.toContain(card.number);
        expect(body).not.toContain(`"cvc":"${card.cvc}"`);
      }
      expect(await readsOf(card.id), `reads of ${card.id}`).toBe(0);
    }
  });

  it('GET /tokens?include_data=false answers every field but data and reads nothing; other values are a 400 naming it', async () => {
    const listed = await tenant.client.request<{ data: Record<string, unknown>[] }>('GET', '/tokens', {
      query: { include_data: 'false', type: 'card' },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((token) => token.id).sort()).toEqual(cards.map((card) => card.id).sort());
    for (const token of listed.body.data) {
      expect(token).not.toHaveProperty('data');
      expect(token).toMatchObject({ type: 'card', containers: ['/pci/high/'], metadata: {} });
      expect(token.fingerprint).toEqual(expect.any(String));
    }
    for (const card of cards) expect(await readsOf(card.id)).toBe(0);
    const wrong = await tenant.client.request<{ errors: Record<string, string[]> }>('GET', '/tokens', {
      query: { include_data: 'no' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toHaveProperty(['query.include_data']);
  });

  it('Reveal fetches that one token: exactly one read, by the member, in the log; the others stay unread', async () => {
    const [revealed, ...others] = cards as [(typeof cards)[0], ...typeof cards];
    await page.getByRole('button', { name: `Reveal the data of ${revealed.id}` }).click();
    await page.getByText(revealed.number).waitFor();
    expect(await readsOf(revealed.id)).toBe(1);
    await expect.poll(async () => (await logReads(revealed.id)).length, { timeout: 30_000 }).toBe(1);
    expect((await logReads(revealed.id))[0]).toMatchObject({
      actor_type: 'user',
      actor_id: tenant.ownerUserId,
    });
    for (const other of others) {
      expect(await readsOf(other.id)).toBe(0);
      expect(await logReads(other.id)).toEqual([]);
      expect(await page.content()).not.toContain(other.number);
    }
  });
});
