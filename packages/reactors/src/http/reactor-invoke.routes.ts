import {
  defineRoute,
  notFound,
  type Clock,
  type Principal,
  type RouteDefinition,
  type TenantConcurrencyCap,
} from '@tokenvault/platform';
import type { Detokenizer, TokenQueries } from '@tokenvault/tokens';
import type { ApplicationQueries } from '@tokenvault/tenancy';
import {
  outcomeBody,
  principalData,
  problemFromData,
  type CodeRunQueue,
  type CodeRunRequest,
  type ResultStillShown,
} from '@tokenvault/code-runs';
import {
  privacyOf,
  asyncReactorRequestSchema,
  asyncReactorResultSchema,
  idParams,
  invokeReactorBody,
  reactorResultParams,
  reactorRunResponseSchema,
} from '@tokenvault/contracts';
import { findTokenExpressions, prepareArguments, substituteTokens } from '../domain/arguments.ts';
import { reactorRunBase, reactorRunOwner } from '../domain/reactor-run.ts';
import { seenStillShown, unchangedSince, useTransformOf, type TokenNow } from '../domain/result-decisions.ts';
import type { ReactorQueries } from '../queries/reactors.queries.ts';

export interface InvocationRouteDeps {
  runs: CodeRunQueue;
  detokenizer: Detokenizer;
  /** The runtime's ReactorDefinitions: read once, kept until a change evicts them. */
  reactors: Pick<ReactorQueries, 'get'>;
  /** Invocations (`react`, `react-async`) one tenant may have in flight: REACTOR_MAX_CONCURRENT_PER_TENANT. */
  maxInFlightPerTenant: number;
  /** Tokens as they are now, and applications' grants now: what an async result is compared with. */
  tokens: Pick<TokenQueries, 'getMany'>;
  applications: Pick<ApplicationQueries, 'getMany'>;
  /** The time a run's reads begin, compared with the tokens' `modified_at` (the tokens' clock). */
  clock: Clock;
}

/** Invoking needs token:use (and token:use on a container of every detokenized token). */
export function invocationRoutes(deps: InvocationRouteDeps): RouteDefinition[] {
  const tag = 'Reactors';
  // Both invocation routes count against one cap; a slot lapses when a run can no longer be waited for.
  const invocations: TenantConcurrencyCap = {
    name: 'reactor-invocations',
    max: deps.maxInFlightPerTenant,
    inFlight: 'reactor invocations',
    slotTtlMs: deps.runs.holdMs,
  };

  /**
   * The run request, in the spec's order: the reactor (404), its configuration still fitting its
   * formula, the expressions (at most 100), detokenization (each token on record as read before
   * the code sees it), then the detokenized args checked against the request parameters.
   */
  const prepare = async (
    principal: Principal,
    reactorId: string,
    args: unknown,
    requestId: string,
  ): Promise<CodeRunRequest> => {
    const reactor = await deps.reactors.get(principal.tenantId, reactorId);
    if (!reactor) throw notFound('No reactor with this id.');
    const base = reactorRunBase(reactor);
    const tokenIds = findTokenExpressions(args);
    // Before detokenizing: a token changed from here on may no longer hold what the run sees.
    const readsFrom = deps.clock.now().toISOString();
    const opened = await deps.detokenizer.openTokens(
      principal,
      tokenIds,
      'token:use',
      requestId,
      'body.args',
    );
    // What the caller's use decision showed of each: a result is answered while it shows as much.
    const transforms = Object.fromEntries(
      [...opened.tokens].flatMap(([id, token]) => {
        const transform = useTransformOf(principal, (token as { containers?: string[] }).containers ?? []);
        return transform ? [[id, transform]] : [];
      }),
    );
    return {
      ...base,
      args: prepareArguments(reactor.formula.request_parameters, substituteTokens(args, opened)),
      caller: principalData(principal),
      request_id: requestId,
      reads_from: readsFrom,
      ...(tokenIds.length > 0 ? { token_ids: [...tokenIds], token_transforms: transforms } : {}),
    };
  };

  /**
   * Whether an async result may still be answered to this caller: every token it saw live, with
   * nothing removed since (a card's CVC), none changed since the run began (its data may differ
   * from what the run saw: unchangedSince), and what decides on each now (the caller's use decision
   * for its args, the run's application's read decision for what `svc` read) showing as much as
   * the run saw (seenStillShown).
   */
  const stillShown =
    (principal: Principal): ResultStillShown =>
    async (tenantId, outcome, seenAt) => {
      if (!(await deps.detokenizer.allLive(tenantId, outcome.token_ids ?? [], seenAt))) return false;
      const { seen } = outcome;
      const ids = [
        ...new Set([
          ...(outcome.token_ids ?? []),
          ...Object.keys(seen?.args ?? {}),
          ...Object.keys(seen?.svc?.tokens ?? {}),
        ]),
      ];
      const rows = await deps.tokens.getMany(tenantId, ids);
      // Derived data goes with its data: a token changed since the run began may no longer hold what it saw.
      if (!rows.every((row) => unchangedSince(row.modified_at, seenAt))) return false;
      if (!seen) return true;
      const tokens = new Map<string, TokenNow>(
        rows.map((row) => [
          row.id,
          { containers: row.containers, privacy: privacyOf(row.type, row.privacy) },
        ]),
      );
      const [application] = seen.svc
        ? await deps.applications.getMany(tenantId, [seen.svc.application_id])
        : [];
      return seenStillShown(seen, { caller: principal, application }, tokens);
    };

  return [
    defineRoute({
      method: 'post',
      path: '/reactors/:id/react',
      operationId: 'invokeReactor',
      summary: 'Invoke a reactor: detokenize args, run the formula, tokenize what it returns',
      tag,
      permission: 'token:use',
      params: idParams,
      body: invokeReactorBody,
      // Its answer is whatever the code made of detokenized data: never kept for a replay.
      returnsSensitive: ['token-data'],
      tenantConcurrency: invocations,
      responses: { 200: { description: 'The reactor’s response', schema: reactorRunResponseSchema } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const outcome = await deps.runs.run(principal.tenantId, reactorRunOwner(params.id), request);
        return { status: 200, body: outcomeBody(outcome) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/reactors/:id/react-async',
      operationId: 'invokeReactorAsync',
      summary: 'Invoke a reactor in the background; its result is kept for REACTOR_RESULT_TTL_SECONDS',
      tag,
      permission: 'token:use',
      returnsSensitive: [],
      params: idParams,
      body: invokeReactorBody,
      // An accepted run keeps its slot until it finishes.
      tenantConcurrency: {
        ...invocations,
        holdUntil: ({ status, body }) => {
          const runId = (body as { async_reactor_request_id?: unknown } | undefined)
            ?.async_reactor_request_id;
          return status === 202 && typeof runId === 'string'
            ? deps.runs.settled(runId, deps.runs.holdMs)
            : undefined;
        },
      },
      responses: { 202: { description: 'Queued', schema: asyncReactorRequestSchema } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const job = await deps.runs.submit(principal.tenantId, reactorRunOwner(params.id), request);
        return { status: 202, body: { async_reactor_request_id: job.id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactors/:id/results/:request_id',
      operationId: 'getReactorResult',
      summary:
        'The status of an async invocation and, once done, its response or problem (404 once a token whose data the run saw is deleted or changed, a card’s CVC it saw is removed, or a rule now shows less of a token than the run saw)',
      tag,
      permission: 'token:use',
      returnsSensitive: ['token-data'],
      params: reactorResultParams,
      responses: { 200: { description: 'The run', schema: asyncReactorResultSchema } },
      async handle({ principal, params }) {
        const run = await deps.runs.status(
          principal,
          reactorRunOwner(params.id),
          params.request_id,
          stillShown(principal),
        );
        if (!run) throw notFound('No reactor request with this id.');
        if (run.status === 'withdrawn') {
          throw notFound(
            'This result saw data of a token deleted or changed (or a card’s CVC removed) since, or more of a token than a rule now shows: it was withdrawn with that data.',
          );
        }
        const base = { async_reactor_request_id: params.request_id, status: run.status };
        if (run.status === 'pending') return { status: 200, body: base };
        const { outcome } = run;
        return {
          status: 200,
          body: outcome.ok
            ? { ...base, result: outcome.body }
            : { ...base, error: problemFromData(outcome.problem).toJSON() },
        };
      },
    }),
  ];
}
