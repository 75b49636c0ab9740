// Every route that evaluates a caller's expression on stored data, from the side of a key that may
// not reveal that data: an update-only key, a key whose rule masks, a public key and a private
// key that may only create tokens. For each route and each field that takes an expression (a
// token's search indexes, fingerprint expression and mask on PATCH; the same and an alias id on
// POST /tokens { token_intent_id }; the stored expressions a data patch evaluates again), the
// attacker sends a right and a wrong guess about the stored data: the answers must be alike
// (same status, same body but for its ids), so that nothing of the data can be read off them.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { createReactor, react } from '../support/reactors.ts';
import { answerShape, type Answer } from '../support/oracle.ts';
import { useStack } from '../support/stack.ts';

/** Evaluates (to `true`) only when the number's first digit is the guess; fails otherwise. */
const firstDigitIs = (digit: string) =>
  `{{ data.number | slice: 0, 1 | replace: "${digit}", "true" | to_boolean }}`;

type Guess = (right: boolean) => Promise<Answer>;

describe('attack: a key without reveal reads stored data off the answers to its expressions', () => {
  const env = useStack();
  const keys: Record<string, string> = {};
  const cardOf = (number: string) => ({ number, expiration_month: 5, expiration_year: 2037 });
  const wrongDigit = (number: string) => String((Number(number[0]) + 1) % 10);

  const keyOf = async (name: string, type: 'private' | 'public', permissions: string[], rules: object[]) => {
    const created = await env.tenant.client.request<{ key: string }>('POST', '/applications', {
      body: { name, type, permissions, ...(type === 'private' ? { rules } : {}) },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.key;
  };

  beforeAll(async () => {
    keys['update-only'] = await keyOf(
      'updater',
      'private',
      [],
      [{ container: '/', permissions: ['token:update'] }],
    );
    keys['masking updater'] = await keyOf(
      'support',
      'private',
      [],
      [{ container: '/', transform: 'mask', permissions: ['token:read', 'token:update'] }],
    );
    keys['create-only'] = await keyOf(
      'backend',
      'private',
      [],
      [{ container: '/', permissions: ['token:create'] }],
    );
    keys['public'] = await keyOf('card form', 'public', ['token:create', 'token-intent:create'], []);
  });

  let svcReactorId: string | undefined;
  /** A reactor whose `svc` acts as an application that may only create tokens; it answers what svc said. */
  const svcReactor = async () => {
    if (svcReactorId) return svcReactorId;
    const application = await env.tenant.client.request<{ id: string }>('POST', '/applications', {
      body: {
        name: 'reactor backend',
        type: 'private',
        permissions: [],
        rules: [{ container: '/', permissions: ['token:create'] }],
      },
    });
    expect(application.status).toBe(201);
    svcReactorId = await createReactor(
      env.tenant,
      {
        code: `module.exports = async (req) => {
          try {
            // Braces written as (( )): the react call's own args would be detokenized otherwise.
            const request = JSON.parse(JSON.stringify(req.args.request).replaceAll('((', '{{').replaceAll('))', '}}'));
            const token = await req.svc.tokens.create(request);
            return { raw: { made: Object.keys(token).sort() } };
          } catch (error) {
            return { raw: { status: error.status ?? null, message: error.message, data: error.data ?? null } };
          }
        };`,
        request_parameters: [{ name: 'request', type: 'object' }],
      },
      { applicationId: application.body.id },
    );
    return svcReactorId;
  };

  /** A new card (a PATCH that goes through changes it: each guess gets one of its own). */
  const newCard = async () => {
    const number = uniqueCardNumber();
    const created = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'card', data: cardOf(number) },
    });
    expect(created.status).toBe(201);
    return { id: created.body.id, number };
  };
  /** A new pending intent of a card (a conversion that goes through consumes it). */
  const newIntent = async (data: object = cardOf(uniqueCardNumber())) => {
    const created = await env.tenant.client.request<{ id: string }>('POST', '/token-intents', {
      body: { type: 'card', data },
      apiKey: keys['public'],
    });
    expect(created.status).toBe(201);
    return { id: created.body.id, number: (data as { number: string }).number };
  };

  const patchOf =
    (key: string, body: (number: string, right: boolean) => object): Guess =>
    async (right) => {
      const card = await newCard();
      return env.tenant.client.request('PATCH', `/tokens/${card.id}`, {
        body: body(card.number, right),
        apiKey: keys[key],
      });
    };
  const conversionOf =
    (key: string, fields: (number: string, right: boolean) => object): Guess =>
    async (right) => {
      const intent = await newIntent();
      return env.tenant.client.request('POST', '/tokens', {
        body: { token_intent_id: intent.id, ...fields(intent.number, right) },
        apiKey: keys[key],
      });
    };
  const guessOf = (number: string, right: boolean) => firstDigitIs(right ? number[0]! : wrongDigit(number));

  const routes: [string, Guess][] = [];
  for (const key of ['update-only', 'masking updater']) {
    routes.push(
      [`PATCH search_indexes (${key})`, patchOf(key, (n, r) => ({ search_indexes: [guessOf(n, r)] }))],
      [
        `PATCH fingerprint_expression (${key})`,
        patchOf(key, (n, r) => ({ fingerprint_expression: guessOf(n, r) })),
      ],
      [`PATCH mask (${key})`, patchOf(key, (n, r) => ({ mask: { number: guessOf(n, r) } }))],
    );
  }
  for (const key of ['public', 'create-only']) {
    routes.push(
      [
        `POST /tokens from an intent, search_indexes (${key})`,
        conversionOf(key, (n, r) => ({ search_indexes: [guessOf(n, r)] })),
      ],
      [
        `POST /tokens from an intent, fingerprint_expression (${key})`,
        conversionOf(key, (n, r) => ({ fingerprint_expression: guessOf(n, r) })),
      ],
      [
        `POST /tokens from an intent, mask (${key})`,
        conversionOf(key, (n, r) => ({ mask: { number: guessOf(n, r) } })),
      ],
      // An alias of a field the intent may lack: whether it holds a CVC.
      [
        `POST /tokens from an intent, alias id (${key})`,
        async (right) => {
          const intent = await newIntent({ ...cardOf(uniqueCardNumber()), ...(right ? { cvc: '123' } : {}) });
          return env.tenant.client.request('POST', '/tokens', {
            body: { token_intent_id: intent.id, id: '{{ data.cvc | alias_preserve_length }}' },
            apiKey: keys[key],
          });
        },
      ],
    );
  }
  // A reactor bound to the create-only application converts the intent through `svc`.
  for (const field of ['search_indexes', 'mask'] as const) {
    routes.push([
      `svc.tokens.create from an intent, ${field} (reactor of a create-only application)`,
      async (right) => {
        const intent = await newIntent();
        const guess = guessOf(intent.number, right).replace('{{', '((').replace('}}', '))');
        const request = {
          token_intent_id: intent.id,
          ...(field === 'search_indexes' ? { search_indexes: [guess] } : { mask: { number: guess } }),
        };
        const answer = await react(env.tenant, await svcReactor(), { request });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        // What svc answered, as an answer of the route: the token's fields, or the problem whole.
        const raw = answer.body.raw as {
          made?: string[];
          status?: number;
          message?: string;
          data?: Record<string, unknown>;
        };
        if (raw.made) return { status: 201, body: Object.fromEntries(raw.made.map((key) => [key, true])) };
        return { status: raw.status ?? 500, body: { message: raw.message, ...raw.data } };
      },
    ]);
  }
  // Stored expressions, set by a revealing key, evaluated again on the data an update-only key
  // patches: a note that completes the secret's first letter into a boolean, or not.
  for (const field of ['search_indexes', 'fingerprint_expression'] as const) {
    routes.push([
      `PATCH data under a stored ${field} (update-only)`,
      async (right) => {
        const expression = '{{ data.secret | slice: 0, 1 | append: data.note | to_boolean }}';
        const created = await env.tenant.client.request<{ id: string }>('POST', '/tokens', {
          body: {
            type: 'token',
            data: { secret: 'tango', note: 'rue' },
            ...(field === 'search_indexes'
              ? { search_indexes: [expression] }
              : { fingerprint_expression: expression }),
          },
        });
        expect(created.status).toBe(201);
        return env.tenant.client.request('PATCH', `/tokens/${created.body.id}`, {
          body: { data: { note: right ? 'RUE' : 'alse' } },
          apiKey: keys['update-only'],
        });
      },
    ]);
  }

  it.each(routes)('%s: a right and a wrong guess are answered alike', async (_name, guess) => {
    const right = answerShape(await guess(true));
    const wrong = answerShape(await guess(false));
    expect(wrong).toEqual(right);
    // Nothing names one expression of several either.
    expect(JSON.stringify(right)).not.toMatch(/search_indexes\.\d|body\.mask\./);
  });
});
