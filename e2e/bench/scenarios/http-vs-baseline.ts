// The service over HTTP against the bare express + pg baseline: a write (POST /tokens against a
// bare INSERT) and a read by id (GET /tokens/{id} against a bare SELECT by primary key), at the
// same body and load, each with its cost per request (support/request-cost.ts); and the service's
// write and read again in the other PROJECTIONS mode.
import { createHash, randomBytes } from 'node:crypto';
import { readModelLagHeader } from '@tokenvault/cqrs';
import { log } from '../support/log.ts';
import { measureHttp, type HttpScenario, type Measured } from '../support/measure.ts';
import { baselineCost, serviceCost, startServiceOnFreshDatabase, type Stack } from '../support/stack.ts';

const bareInsertScenario = 'bare INSERT (POST /rows)';
const bareGetScenario = 'bare GET (GET /rows/:id)';

const tokenBody = JSON.stringify({
  type: 'token',
  data: { name: 'Ada Lovelace', email: 'ada@example.test' },
});

/** POST /tokens with the body of the write scenarios (the Kafka group loads it too). */
export function postTokensScenario(
  stack: Stack,
  name: string,
  onResponse?: HttpScenario['onResponse'],
): HttpScenario {
  return {
    name,
    url: `${stack.serviceUrl}/tokens`,
    method: 'POST',
    headers: stack.auth,
    body: tokenBody,
    ...(onResponse ? { onResponse } : {}),
  };
}

/** A measured write run, with the ids it created, for the read run that follows. */
export interface MeasuredWrites extends Measured {
  ids: string[];
}

export async function measureBareInsert(stack: Stack): Promise<MeasuredWrites> {
  const ids: string[] = [];
  const measured = await measureHttp(
    {
      name: bareInsertScenario,
      url: `${stack.baselineUrl}/rows`,
      method: 'POST',
      body: tokenBody,
      onResponse: (status, body) => {
        const id = status === 201 ? createdId(body) : undefined;
        if (id) ids.push(id);
      },
    },
    { cost: baselineCost(stack) },
  );
  return { ...measured, ids };
}

/** Responses flagged with the read-model lag header (the read-your-writes wait timed out) are counted. */
export async function measurePostTokens(stack: Stack, scenario = 'POST /tokens'): Promise<MeasuredWrites> {
  const ids: string[] = [];
  let lagging = 0;
  const measured = await measureHttp(
    postTokensScenario(stack, scenario, (status, body, headers) => {
      const id = status === 201 ? createdId(body) : undefined;
      if (id) ids.push(id);
      if (Object.keys(headers).some((name) => name.toLowerCase() === readModelLagHeader)) lagging++;
    }),
    {
      beforeMeasured: () => (lagging = 0),
      cost: serviceCost(stack, bareInsertScenario),
      note: () => `includes the read-your-writes wait; ${lagging} responses flagged ${readModelLagHeader}`,
    },
  );
  return { ...measured, ids };
}

/** Cycles through the ids of the bare INSERT run. */
export async function measureBareGet(stack: Stack, ids: readonly string[]): Promise<Measured> {
  return measureHttp(
    {
      name: bareGetScenario,
      url: stack.baselineUrl,
      method: 'GET',
      nextPath: cycle(ids, '/rows/'),
    },
    { cost: baselineCost(stack), note: () => `cycling ${ids.length} ids` },
  );
}

/** Cycles through the ids of the POST /tokens run. */
export async function measureGetToken(
  stack: Stack,
  ids: readonly string[],
  scenario = 'GET /tokens/{id}',
): Promise<Measured> {
  return measureHttp(
    {
      name: scenario,
      url: stack.serviceUrl,
      method: 'GET',
      headers: stack.auth,
      nextPath: cycle(ids, '/tokens/'),
    },
    { cost: serviceCost(stack, bareGetScenario), note: () => `cycling ${ids.length} ids` },
  );
}

/**
 * The same reads with a member's session (Authorization: Bearer) instead of the key: the session
 * and its membership are read on every request. The session row is seeded as POST /sessions
 * writes it (a sign-in needs an e-mail round trip, which is not what this measures).
 */
export async function measureGetTokenWithSession(stack: Stack, ids: readonly string[]): Promise<Measured> {
  const token = `tvs_${randomBytes(32).toString('base64url')}`;
  await stack.servicePool.query(
    `INSERT INTO sessions (id, token_hash, user_id, created_at, last_seen_at, expires_at)
       VALUES (gen_random_uuid(), $1, $2, now(), now(), now() + interval '12 hours')`,
    [createHash('sha256').update(token, 'utf8').digest('hex'), stack.ownerUserId],
  );
  return measureHttp(
    {
      name: 'GET /tokens/{id} with a session',
      url: stack.serviceUrl,
      method: 'GET',
      headers: { authorization: `Bearer ${token}` },
      nextPath: cycle(ids, '/tokens/'),
    },
    {
      cost: serviceCost(stack, bareGetScenario),
      note: () => `cycling ${ids.length} ids; bearer session`,
    },
  );
}

/**
 * POST /tokens, then GET /tokens/{id} on its ids, on a service in the other PROJECTIONS mode (read
 * models are built in one mode): started beside the stack's, on a fresh database, stopped after.
 */
export async function measureOtherProjectionMode(stack: Stack): Promise<{ post: Measured; get: Measured }> {
  const projections = stack.projections === 'inline' ? 'async' : 'inline';
  log(`a service with PROJECTIONS=${projections}, on a database of its own`);
  const other = await startServiceOnFreshDatabase(stack, projections, { PROJECTIONS: projections });
  try {
    const post = await measurePostTokens(other.stack, `POST /tokens, PROJECTIONS=${projections}`);
    const get = await measureGetToken(other.stack, post.ids, `GET /tokens/{id}, PROJECTIONS=${projections}`);
    return { post, get };
  } finally {
    await other.stop();
  }
}

function createdId(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}

function cycle(ids: readonly string[], prefix: string): () => string {
  if (ids.length === 0) throw new Error(`no ids to read for ${prefix}`);
  let next = 0;
  return () => `${prefix}${ids[next++ % ids.length]}`;
}
