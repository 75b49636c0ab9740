// docs/compatibility.md stays true: every call of Basis Theory's Node SDK is served by a route of
// the OpenAPI document or has a reason in e2e/compatibility/unserved-calls.ts, no reason outlives
// its call's route, and the file is what the generator writes from them. No stack: the SDK's
// compiled clients and the checked-in document are read from disk. In the e2e project because
// only e2e may read the SDK (e2e/package.json).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  classifyCalls,
  compatibilityDocPath,
  countCalls,
  generateCompatibilityDoc,
  readOpenApiDocument,
  type OpenApiPaths,
} from './compatibility/compatibility-doc.ts';
import { readSdkSurface, type SdkCall, type SdkSurface } from './compatibility/sdk-calls.ts';
import { unservedCalls, type UnservedReason } from './compatibility/unserved-calls.ts';

/** How many calls the SDK's compiled clients name in their timeout errors, counted apart from the extractor. */
function callsNamedByTheSdk(): number {
  const manifest = createRequire(import.meta.url).resolve('@basis-theory/node-sdk/package.json');
  const resources = join(dirname(manifest), 'dist', 'cjs', 'api', 'resources');
  return readdirSync(resources, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('Client.js'))
    .map(
      (file) =>
        readFileSync(join(resources, file), 'utf8').match(/Timeout exceeded when calling /g)?.length ?? 0,
    )
    .reduce((sum, count) => sum + count, 0);
}

const call = (client: string, method: string, httpMethod: string, path: string): SdkCall => ({
  client,
  method,
  httpMethod,
  path,
});
const surfaceOf = (...calls: SdkCall[]): SdkSurface => ({ version: '0.0.0', calls });
const documentOf = (paths: Record<string, string[]>): OpenApiPaths => ({
  paths: Object.fromEntries(
    Object.entries(paths).map(([path, methods]) => [
      path,
      Object.fromEntries(methods.map((method) => [method, { operationId: `${method}:${path}` }])),
    ]),
  ),
});

describe("the compatibility table of Basis Theory's Node SDK (docs/compatibility.md)", () => {
  it('reads every call of the compiled clients, named by client and method', () => {
    const { version, calls } = readSdkSurface();
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    expect(calls).toHaveLength(callsNamedByTheSdk());
    expect(calls).toEqual(
      expect.arrayContaining([
        call('tokens', 'create', 'POST', '/tokens'),
        call('tokens', 'listV2', 'GET', '/v2/tokens'),
        call('reactors.results', 'get', 'GET', '/reactors/{id}/results/{requestId}'),
        call('tenants.members', 'update', 'PUT', '/tenants/self/members/{memberId}'),
        call('applications', 'getByKey', 'GET', '/applications/key'),
      ]),
    );
    const names = calls.map((entry) => `${entry.client}.${entry.method}`);
    expect(new Set(names).size, 'one call per client method').toBe(names.length);
  });

  it('has a route or a reason for every call, and no reason for a served call', () => {
    const { problems, calls } = classifyCalls(readSdkSurface(), readOpenApiDocument(), unservedCalls);
    expect(problems).toEqual([]);
    const counts = countCalls(calls);
    expect(counts.served + counts.planned + counts.notPlanned + counts.outOfScope).toBe(counts.total);
  });

  it('is what `npm run docs:compatibility` writes', async () => {
    expect(
      readFileSync(compatibilityDocPath, 'utf8'),
      'docs/compatibility.md is out of date: run npm run docs:compatibility',
    ).toBe(await generateCompatibilityDoc());
  });
});

describe('the check of the compatibility table', () => {
  const tokensGet = call('tokens', 'get', 'GET', '/tokens/{id}');
  const outOfScope = (covers: string): UnservedReason => ({
    covers,
    category: 'out of scope',
    why: 'Cards.',
  });

  it('names a call that has neither a route nor a reason', () => {
    const { problems } = classifyCalls(surfaceOf(tokensGet), documentOf({ '/tokens': ['post'] }), []);
    expect(problems).toEqual([expect.stringContaining('tokens.get (GET /tokens/{id}) is neither served')]);
  });

  it('serves a call whose method and path the document has, whatever the parameters are called', () => {
    const { problems, calls } = classifyCalls(
      surfaceOf(tokensGet),
      documentOf({ '/tokens/{tokenId}': ['get'] }),
      [],
    );
    expect(problems).toEqual([]);
    expect(calls[0]!.status).toEqual({ served: true, operationId: 'get:/tokens/{tokenId}' });
  });

  it('does not take a fixed segment for a path parameter', () => {
    const byKey = call('applications', 'getByKey', 'GET', '/applications/key');
    const { problems } = classifyCalls(surfaceOf(byKey), documentOf({ '/applications/{id}': ['get'] }), []);
    expect(problems).toEqual([
      expect.stringContaining('applications.getByKey (GET /applications/key) is neither'),
    ]);
  });

  it('calls a reason stale once its call is served, by name or under a path', () => {
    const served = documentOf({ '/tokens/{id}': ['get'] });
    for (const reason of [outOfScope('GET /tokens/{id}'), outOfScope('/tokens')]) {
      const { problems } = classifyCalls(surfaceOf(tokensGet), served, [reason]);
      expect(problems).toEqual([
        expect.stringContaining(`tokens.get (GET /tokens/{id}) is served now (get:/tokens/{id}), but`),
      ]);
    }
  });

  it('calls a reason stale when it covers no call of the SDK', () => {
    const { problems } = classifyCalls(surfaceOf(tokensGet), documentOf({ '/tokens/{id}': ['get'] }), [
      outOfScope('/apple-pay'),
    ]);
    expect(problems).toEqual([expect.stringContaining('/apple-pay explains no call of the SDK now')]);
  });

  it('takes the reason naming a call over one for its path, and refuses two alike', () => {
    const named: UnservedReason = { covers: 'GET /tokens/{}', category: 'not planned', why: 'No.' };
    const { problems, calls } = classifyCalls(surfaceOf(tokensGet), documentOf({}), [
      named,
      outOfScope('/tokens'),
    ]);
    expect(problems).toEqual([expect.stringContaining('/tokens explains no call')]);
    expect(calls[0]!.status).toEqual({ served: false, reason: named });
    const twice = classifyCalls(surfaceOf(tokensGet), documentOf({}), [
      outOfScope('/tokens'),
      outOfScope('/tokens'),
    ]);
    expect(twice.problems).toEqual([expect.stringContaining('covered by 2 entries')]);
  });

  it('counts a call unserved when the route of its path does something else, until that route goes', () => {
    const signIn = call('sessions', 'create', 'POST', '/sessions');
    const another: UnservedReason = {
      covers: 'POST /sessions',
      category: 'not planned',
      routeIsAnotherOperation: true,
      why: 'Member sign-in.',
    };
    const withRoute = classifyCalls(surfaceOf(signIn), documentOf({ '/sessions': ['post'] }), [another]);
    expect(withRoute.problems).toEqual([]);
    expect(withRoute.calls[0]!.status).toEqual({ served: false, reason: another });
    const withoutRoute = classifyCalls(surfaceOf(signIn), documentOf({}), [another]);
    expect(withoutRoute.problems).toEqual([expect.stringContaining('drop routeIsAnotherOperation')]);
    const onAPath = classifyCalls(surfaceOf(signIn), documentOf({ '/sessions': ['post'] }), [
      { ...another, covers: '/sessions' },
    ]);
    expect(onAPath.problems).toEqual([expect.stringContaining('not a path (/sessions)')]);
  });
});
