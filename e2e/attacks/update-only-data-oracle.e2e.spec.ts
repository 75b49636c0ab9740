// A data patch as an oracle on the data it patches. The attacker holds a key that may update
// cards but not read them (GET is 403), or one whose reads are masked. It sends partial patches
// whose checks, or whose effect, depend on what the stored data holds, and compares the answers:
// (a) a merge is checked as a whole: `{ expiration_month: 1 }` is "card expired" or not by the
//     stored year, `{ cvc: "1234" }` is a wrong CVC length or not by the stored number's brand;
// (b) a patch whose CVC equals the stored one kept the token as it was (its CVC's time too);
// (c) a patch equal to the stored data appended nothing, so the answer's modified_at did not move.
// A right and a wrong guess must get the same status and body (ids and times aside, where they
// cannot depend on the data), and the token must change alike.
import { beforeAll, describe, expect, it } from 'vitest';
import { passesLuhn } from '@tokenvault/contracts';
import { uniqueCardNumber } from '../support/cards.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  status: number;
  body: unknown;
}
interface Written {
  id: string;
  modified_at?: string | null;
}

/** What of an answer may be compared across guesses: the status and the body without ids or times. */
const shapeOf = ({ status, body }: Answer) => {
  const {
    id: _id,
    request_id: _requestId,
    instance: _instance,
    created_at: _createdAt,
    modified_at: _modifiedAt,
    ...rest
  } = body as Record<string, unknown>;
  return { status, body: rest };
};

/** A Luhn-valid American Express number (15 digits, 4-digit CVC) of this run only. */
const uniqueAmexNumber = () => {
  const body = `37${String(Date.now()).slice(-8)}${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}`;
  return body + [...'0123456789'].find((digit) => passesLuhn(body + digit))!;
};

describe('attack: a data patch answers a guess of the data it patches', () => {
  const env = useStack();
  const now = new Date();
  const thisYear = now.getUTCFullYear();
  let updateOnly: string;
  let maskingUpdater: string;

  const keyOf = async (name: string, rules: object[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name, type: 'private', permissions: [], rules },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };
  const createToken = async (body: object) => {
    const created = await env.tenant.client.request<Written>('POST', '/tokens', { body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.id;
  };
  const patchAs = (apiKey: string, id: string, data: unknown) =>
    env.tenant.client.request<Written>('PATCH', `/tokens/${id}`, { body: { data }, apiKey });

  beforeAll(async () => {
    updateOnly = await keyOf('card updater', [{ container: '/', permissions: ['token:update'] }]);
    maskingUpdater = await keyOf('masked support tool that may update', [
      { container: '/', transform: 'mask', permissions: ['token:read', 'token:update'] },
    ]);
  });

  it('(a) a partial patch is not checked against the stored expiry: the stored year is not told', async () => {
    // Stored this year or in five years, both in December: a patch to January (of the stored
    // year, as a merge makes it) is expired for the first from February on, never for the second.
    const card = (year: number) => ({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 12, expiration_year: year, cvc: '482' },
    });
    const expiringThisYear = await createToken(card(thisYear));
    const expiringLater = await createToken(card(thisYear + 5));
    for (const apiKey of [updateOnly, maskingUpdater]) {
      const onThisYear = await patchAs(apiKey, expiringThisYear, { expiration_month: 1 });
      const onLater = await patchAs(apiKey, expiringLater, { expiration_month: 1 });
      expect(shapeOf(onThisYear), JSON.stringify(onThisYear.body)).toEqual(shapeOf(onLater));
    }
  });

  it('(a) a partial patch is not checked against the stored number: its brand is not told', async () => {
    const visa = await createToken({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 6, expiration_year: thisYear + 3, cvc: '482' },
    });
    const amex = await createToken({
      type: 'card',
      data: { number: uniqueAmexNumber(), expiration_month: 6, expiration_year: thisYear + 3, cvc: '4821' },
    });
    const onVisa = await patchAs(updateOnly, visa, { cvc: '1234' });
    const onAmex = await patchAs(updateOnly, amex, { cvc: '1234' });
    expect(shapeOf(onVisa), JSON.stringify(onVisa.body)).toEqual(shapeOf(onAmex));
    // What the answer says instead: the patch alone must be complete data, and how to merge.
    expect(onVisa.status).toBe(400);
    expect(JSON.stringify(onVisa.body)).toContain('body.data');
    expect(JSON.stringify(onVisa.body)).toMatch(/reveals/);
  });

  it('(b) a patch of the CVC alone is answered alike whether it is the stored CVC or not', async () => {
    const card = () => ({
      type: 'card',
      data: { number: uniqueCardNumber(), expiration_month: 6, expiration_year: thisYear + 3, cvc: '482' },
    });
    const [rightGuessed, wrongGuessed] = [await createToken(card()), await createToken(card())];
    for (const apiKey of [updateOnly, maskingUpdater]) {
      const right = await patchAs(apiKey, rightGuessed, { cvc: '482' });
      const wrong = await patchAs(apiKey, wrongGuessed, { cvc: '113' });
      expect(shapeOf(right), JSON.stringify(right.body)).toEqual(shapeOf(wrong));
      // Whichever way it went, the answer's modified_at moved alike for both.
      expect(Boolean(right.body.modified_at)).toBe(Boolean(wrong.body.modified_at));
    }
  });

  it('(c) a patch of the whole data is a new version whether it equals the stored data or not', async () => {
    // Data the key's patch replaces whole: a guess of all of it, right for one token, wrong for the other.
    const secret = `secret-${Math.random().toString(36).slice(2)}`;
    for (const apiKey of [updateOnly, maskingUpdater]) {
      const [rightGuessed, wrongGuessed] = [
        await createToken({ type: 'token', data: secret, containers: ['/general/'] }),
        await createToken({ type: 'token', data: secret, containers: ['/general/'] }),
      ];
      const right = await patchAs(apiKey, rightGuessed, secret);
      const wrong = await patchAs(apiKey, wrongGuessed, `${secret}-not`);
      expect(shapeOf(right), JSON.stringify(right.body)).toEqual(shapeOf(wrong));
      expect(right.status).toBe(200);
      // Both were written now: an unchanged token would answer its old modified_at (none).
      expect(right.body.modified_at, 'the right guess appended nothing').toBeTruthy();
      expect(wrong.body.modified_at).toBeTruthy();
      // And a complete card is taken as it is, the CVC with it.
      const card = await createToken({
        type: 'card',
        data: { number: uniqueCardNumber(), expiration_month: 6, expiration_year: thisYear + 3, cvc: '482' },
      });
      const replaced = await patchAs(apiKey, card, {
        number: uniqueCardNumber(),
        expiration_month: 7,
        expiration_year: thisYear + 4,
      });
      expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
      const read = await env.tenant.client.request<{ data: Record<string, unknown> }>(
        'GET',
        `/tokens/${card}`,
      );
      expect(read.body.data).not.toHaveProperty('cvc');
      expect(read.body.data.expiration_month).toBe(7);
    }
  });
});
