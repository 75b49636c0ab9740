import { z } from 'zod';
import {
  defineRoute,
  notFound,
  type Principal,
  type RouteDefinition,
} from '@tokenvault/platform';
import type { Detokenizer } from '@tokenvault/tokens';
import type { RequestParameterDeclaration } from '@tokenvault/contracts';
import { findTokenExpressions, prepareArguments, substituteTokens } from '../domain/arguments.ts';
import { outcomeBody, type ReactorRunQueue } from '../runs/run-queue.ts';
import { principalData, problemFromData, type ReactorRunRequest } from '../runs/run-messages.ts';

/** What an invocation needs of a reactor. */
export interface ReactorForInvocation {
  id: string;
  configuration: Record<string, unknown>;
  application_id?: string;
  formula: { code: string; request_parameters: readonly RequestParameterDeclaration[] };
}

export interface InvocationRouteDeps {
  runs: ReactorRunQueue;
  detokenizer: Detokenizer;
  /** The tenant's reactor with its formula, or undefined (unknown, deleted, another tenant's). */
  reactorForInvocation(tenantId: string, id: string): Promise<ReactorForInvocation | undefined>;
}

const reactorParams = z.strictObject({ id: z.uuid() });
const resultParams = z.strictObject({ id: z.uuid(), request_id: z.uuid() });
const invokeBody = z.strictObject({ args: z.unknown().optional() });
const reactorResponse = z.object({ tokens: z.unknown().optional(), raw: z.unknown().optional() });
const asyncAccepted = z.object({ async_reactor_request_id: z.uuid() });
const asyncResult = z.object({
  async_reactor_request_id: z.uuid(),
  status: z.enum(['pending', 'completed', 'failed']),
  result: reactorResponse.optional(),
  error: z.record(z.string(), z.unknown()).optional(),
});

export function invocationRoutes(deps: InvocationRouteDeps): RouteDefinition[] {
  const tag = 'Reactors';

  /**
   * The run request, in the spec's order: the reactor (404), the expressions (at most 100),
   * detokenization (token:use on every container of every token, each read on record before the
   * code sees it), then validation of the detokenized args against the request parameters.
   */
  const prepare = async (
    principal: Principal,
    reactorId: string,
    args: unknown,
    requestId: string,
  ): Promise<ReactorRunRequest> => {
    const reactor = await deps.reactorForInvocation(principal.tenantId, reactorId);
    if (!reactor) throw notFound('No reactor with this id.');
    const tokenIds = findTokenExpressions(args);
    const tokenData = await deps.detokenizer.open(principal, tokenIds, 'token:use', requestId, 'body.args');
    const prepared = prepareArguments(reactor.formula.request_parameters, substituteTokens(args, tokenData));
    return {
      code: reactor.formula.code,
      args: prepared,
      configuration: reactor.configuration,
      application_id: reactor.application_id ?? null,
      caller: principalData(principal),
      request_id: requestId,
    };
  };

  return [
    defineRoute({
      method: 'post',
      path: '/reactors/:id/react',
      summary: 'Invoke a reactor: detokenize args, run the formula, tokenize its result',
      tag,
      permission: 'token:use',
      params: reactorParams,
      body: invokeBody,
      responses: { 200: { description: 'The reactor’s response', schema: reactorResponse } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const outcome = await deps.runs.run(principal.tenantId, params.id, request);
        return { status: 200, headers: { 'cache-control': 'no-store' }, body: outcomeBody(outcome) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/reactors/:id/react-async',
      summary: 'Invoke a reactor in the background; poll its result by the returned id',
      tag,
      permission: 'token:use',
      params: reactorParams,
      body: invokeBody,
      responses: { 202: { description: 'Queued', schema: asyncAccepted } },
      async handle({ principal, params, body, requestId }) {
        const request = await prepare(principal, params.id, body.args, requestId);
        const runId = await deps.runs.submit(principal.tenantId, params.id, request);
        return { status: 202, body: { async_reactor_request_id: runId } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactors/:id/results/:request_id',
      summary: 'The status and, once done, the response or problem of an async invocation',
      tag,
      permission: 'token:use',
      params: resultParams,
      responses: { 200: { description: 'The run', schema: asyncResult } },
      async handle({ principal, params }) {
        const run = await deps.runs.status(principal.tenantId, params.id, params.request_id);
        if (!run) throw notFound('No reactor request with this id.');
        const base = { async_reactor_request_id: params.request_id, status: run.status };
        if (run.status === 'pending') return { status: 200, body: base };
        const { outcome } = run;
        return {
          status: 200,
          headers: { 'cache-control': 'no-store' },
          body: outcome.ok
            ? { ...base, result: outcome.body }
            : { ...base, error: problemFromData(outcome.problem).toJSON() },
        };
      },
    }),
  ];
}
