// Expressions evaluated on stored data, read back through their errors. The attacker may not read
// the card: it holds an update-only key (GET is 403), or the public key of a card form (it may
// only create tokens and intents). It sends search indexes that fail or not depending on one
// character of the number (`slice: i, 1 | replace: "7", "true" | to_boolean`), beside one that
// always fails so that nothing is ever written, and reads which index the 400 names: PATCH
// /tokens/{id} on the card, POST /tokens { token_intent_id } on a pending intent. Or it patches
// a token's data under a stored expression that a revealing key set, and reads whether the
// re-evaluation fails. Every guess must get the same answer.
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueCardNumber } from '../support/cards.ts';
import { answerShape, type Answer } from '../support/oracle.ts';
import { useStack } from '../support/stack.ts';

const digitProbe = (position: number, digit: string) =>
  `{{ data.number | slice: ${position}, 1 | replace: "${digit}", "true" | to_boolean }}`;
/** Fails on any card: nothing is ever written, whatever the probe did. */
const alwaysFails = '{{ data.number | to_boolean }}';

describe('attack: expression errors on stored data read a card number character by character', () => {
  const env = useStack();
  const number = uniqueCardNumber();
  const card = { number, expiration_month: 7, expiration_year: 2038, cvc: '482' };
  let cardId: string;
  let updateOnly: string;
  let publicKey: string;

  beforeAll(async () => {
    const admin = env.tenant.client;
    const created = await admin.request<{ id: string }>('POST', '/tokens', {
      body: { type: 'card', data: card },
    });
    expect(created.status).toBe(201);
    cardId = created.body.id;
    const updater = await admin.request<{ key: string }>('POST', '/applications', {
      body: {
        name: 'card updater',
        type: 'private',
        permissions: [],
        rules: [{ container: '/', permissions: ['token:update'] }],
      },
    });
    expect(updater.status).toBe(201);
    updateOnly = updater.body.key;
    const form = await admin.request<{ key: string }>('POST', '/applications', {
      body: { name: 'card form', type: 'public', permissions: ['token:create', 'token-intent:create'] },
    });
    expect(form.status).toBe(201);
    publicKey = form.body.key;
  });

  /** The digits at the first positions, as the attacker would read them off the answers. */
  const recover = async (probe: (indexes: string[]) => Promise<Answer>, positions: number) => {
    const answersAt: string[][] = [];
    for (let position = 0; position < positions; position++) {
      const answers: string[] = [];
      for (const digit of '0123456789') {
        answers.push(JSON.stringify(answerShape(await probe([digitProbe(position, digit), alwaysFails]))));
      }
      answersAt.push(answers);
    }
    return answersAt;
  };

  it('an update-only key PATCHes search indexes that probe the number: every guess is answered alike', async () => {
    const admin = env.tenant.client;
    expect((await admin.request('GET', `/tokens/${cardId}`, { apiKey: updateOnly })).status).toBe(403);
    const answersAt = await recover(
      (indexes) =>
        admin.request('PATCH', `/tokens/${cardId}`, {
          body: { search_indexes: indexes },
          apiKey: updateOnly,
        }),
      3,
    );
    for (const answers of answersAt) expect(new Set(answers).size, answers.join('\n')).toBe(1);
    expect(answersAt[0]![0]).not.toContain('search_indexes.');
  });

  it('a public key converts a pending intent with probing indexes: every guess is answered alike', async () => {
    const admin = env.tenant.client;
    const intent = await admin.request<{ id: string }>('POST', '/token-intents', {
      body: { type: 'card', data: { ...card, number: uniqueCardNumber() } },
      apiKey: publicKey,
    });
    expect(intent.status).toBe(201);
    const answersAt = await recover(
      (indexes) =>
        admin.request('POST', '/tokens', {
          body: { token_intent_id: intent.body.id, search_indexes: indexes },
          apiKey: publicKey,
        }),
      3,
    );
    for (const answers of answersAt) expect(new Set(answers).size, answers.join('\n')).toBe(1);
    expect(answersAt[0]![0]).not.toContain('search_indexes.');
  });

  it('an update-only key patches data under a stored expression: the re-evaluation answers alike', async () => {
    const admin = env.tenant.client;
    // A revealing key indexes a token by an expression that reads a secret field and a note.
    const token = await admin.request<{ id: string }>('POST', '/tokens', {
      body: {
        type: 'token',
        data: { secret: 'tango', note: 'rue' },
        search_indexes: ['{{ data.secret | slice: 0, 1 | append: data.note | to_boolean }}'],
      },
    });
    expect(token.status).toBe(201);
    // "t" + "RUE" evaluates, "f" + "alse" would too: the attacker guesses the first letter.
    const guess = async (letter: string) =>
      answerShape(
        await admin.request('PATCH', `/tokens/${token.body.id}`, {
          body: { data: { note: letter === 't' ? 'RUE' : 'alse' } },
          apiKey: updateOnly,
        }),
      );
    const [right, wrong] = [await guess('t'), await guess('f')];
    expect(wrong).toEqual(right);
    expect(JSON.stringify(wrong)).not.toContain('search_indexes.');
  });
});
