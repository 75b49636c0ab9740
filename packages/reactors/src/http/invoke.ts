import { defineRoute, notFound, type Principal, type RouteDefinition } from '@tokenvault/platform';
import type { Detokenizer } from '@tokenvault/tokens';
import {
  asyncReactorRequestSchema,
  asyncReactorResultSchema,
  idParams,
  invokeReactorBody,
  reactorResultParams,
  reactorRunResponseSchema,
} from '@tokenvault/contracts';
import { findTokenExpressions, prepareArguments, substituteTokens } from '../domain/arguments.ts';
import type { ReactorQueries } from '../queries/reactors.ts';
import { outcomeBody, type ReactorRunQueue } from '../runs/run-queue.ts';
import {
  principalData,
  problemFromData,
  reactorRunBase,
  type ReactorRunRequest,
} from '../runs/run-messages.ts';

export interface InvocationRouteDeps {
  runs: ReactorRunQueue;
  detokenizer: Detokenizer;
  /** The runtime's ReactorDefinitions: read once, kept until a change evicts them. */
  reactors: Pick<ReactorQueries, 'get'>;
}

/** Invoking needs token:use (and token:use on a container of every detokenized token). */
export function invocationRoutes(deps: InvocationRouteDeps): RouteDefinition[] {
  const tag = 'Reactors';

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
  ): Promise<ReactorRunRequest> => {
    const reactor = await deps.reactors.get(principal.tenantId, reactorId);
    if (!reactor) throw notFound('No reactor with this id.');
    const base = reactorRunBase(reactor);
    const tokenIds = findTokenExpressions(args);
    const opened = await deps.detokenizer.openTokens(
      principal,
      tokenIds,
      'token:use',
      requestId,
      'body.args',
    );
    return {
      ...base,
      args: prepareArguments(reactor.formula.request_parameters, substituteTokens(args, opened)),
      caller: principalData(principal),
      request_id: requestId,
      ...(tokenIds.length > 0 ? { token_ids: [...tokenIds] } : {}),
    };
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
      returnsTokenData: true,
      responses: { 200: { description: 'The reactor’s response', schema: reactorRunResponseSchema } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const outcome = await deps.runs.run(principal.tenantId, params.id, request);
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
      params: idParams,
      body: invokeReactorBody,
      responses: { 202: { description: 'Queued', schema: asyncReactorRequestSchema } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const job = await deps.runs.submit(principal.tenantId, params.id, request);
        return { status: 202, body: { async_reactor_request_id: job.id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactors/:id/results/:request_id',
      operationId: 'getReactorResult',
      summary:
        'The status of an async invocation and, once done, its response or problem (404 once a token whose data the run saw is deleted)',
      tag,
      permission: 'token:use',
      params: reactorResultParams,
      responses: { 200: { description: 'The run', schema: asyncReactorResultSchema } },
      async handle({ principal, params }) {
        const run = await deps.runs.status(principal, params.id, params.request_id, (tenantId, ids) =>
          deps.detokenizer.allLive(tenantId, ids),
        );
        if (!run) throw notFound('No reactor request with this id.');
        if (run.status === 'withdrawn') {
          throw notFound(
            'This result saw the data of a token deleted since: it was withdrawn with the token.',
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
