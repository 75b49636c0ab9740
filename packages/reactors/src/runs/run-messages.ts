import { Problem, type ContainerRule, type FieldErrors, type Principal } from '@tokenvault/platform';
import type { ReactorResponse } from '@tokenvault/contracts';
import { configurationErrors } from '../domain/configuration.ts';

/** What Redis holds of a run: ids, and everything else sealed under the tenant's data key. */
export interface ReactorRunJob {
  tenant_id: string;
  /** The reactor run; empty for a proxy's code transform (which has `proxy_id`). */
  reactor_id: string;
  /** A proxy's code transform: the proxy it belongs to (its code is in the sealed request). */
  proxy_id?: string;
  /** Who invoked: only they may read an async run's result. */
  actor_id: string;
  /**
   * AES-256-GCM (the tenant's data key), bound to the run id: a ReactorRunRequest. Emptied once
   * the run is over (an async run's job stays for its result; its detokenized args need not).
   */
  sealed_request: string;
  /** The reply list of the gateway process that queued the run (run-replies.ts). */
  reply_to?: string;
}

/** A principal as plain data (it crosses Redis inside the sealed request). */
export interface PrincipalData {
  tenantId: string;
  actorId: string;
  actorType: Principal['actorType'];
  permissions: string[];
  rules: ContainerRule[];
  tenantSettings: Record<string, string>;
}

export interface ReactorRunRequest {
  code: string;
  /** Detokenized and validated against the formula's request parameters. */
  args: Record<string, unknown>;
  configuration: Record<string, unknown>;
  /** The reactor's application: `svc` acts as it; null means `req.svc` is null. */
  application_id: string | null;
  /** Who invoked: `tokenize` creates tokens as this caller when the reactor has no application. */
  caller: PrincipalData;
  request_id: string;
  /** The tokens detokenized into `args`: an async result that saw them is kept while they live. */
  token_ids?: string[];
  /**
   * What the code answers: a reactor's `{ raw, tokenize }` (the default), or a proxy transform's
   * `{ headers, body }` (passed back as the outcome's `raw`, nothing tokenized).
   */
  answers?: 'reactor' | 'transform';
}

export interface ProblemData {
  status: number;
  slug: string;
  title: string;
  detail?: string;
  errors?: FieldErrors;
}

/**
 * The result of a run, as the sync call answers it (and the async result reports it), with the
 * tokens whose data the run saw (detokenized into its args, read through `svc`): what it answers
 * may hold their data, so an async result is withdrawn once one of them is deleted.
 */
export type ReactorRunOutcome = (
  { ok: true; body: { tokens?: unknown; raw?: unknown } } | { ok: false; problem: ProblemData }
) & { token_ids?: string[] };

/** A run the worker could not carry out (not the reactor's own error, which is an outcome). */
export const runFailure: ReactorRunOutcome = {
  ok: false,
  problem: {
    status: 500,
    slug: 'reactor-runtime',
    title: 'Internal Server Error',
    detail: 'The reactor run could not be completed.',
  },
};

/**
 * Sealing subjects: a request or outcome sealed for one run opens for that run only. `/` cannot
 * occur in a token id, so no token's data is ever sealed under one of these subjects.
 */
export const sealedRequestSubject = (runId: string) => `reactor-run/${runId}/request`;
export const sealedOutcomeSubject = (runId: string) => `reactor-run/${runId}/outcome`;

export function principalData(principal: Principal): PrincipalData {
  return {
    tenantId: principal.tenantId,
    actorId: principal.actorId,
    actorType: principal.actorType,
    permissions: [...principal.permissions],
    rules: [...principal.rules],
    tenantSettings: { ...principal.tenantSettings },
  };
}

/**
 * What a run of this reactor takes from it (its code, its configuration, its application), or a
 * 400 when its configuration no longer satisfies its formula (the formula changed since).
 */
export function reactorRunBase(
  reactor: ReactorResponse,
): Pick<ReactorRunRequest, 'code' | 'configuration' | 'application_id'> {
  const misconfigured = configurationErrors(reactor.formula.configuration, reactor.configuration);
  if (Object.keys(misconfigured).length > 0) {
    throw new Problem(
      400,
      'invalid-reactor-configuration',
      'Bad Request',
      'The reactor’s configuration no longer satisfies its formula; update the reactor.',
      misconfigured,
    );
  }
  return {
    code: reactor.formula.code,
    configuration: reactor.configuration,
    application_id: reactor.application?.id ?? null,
  };
}

export function principalFromData(data: PrincipalData): Principal {
  return { ...data, permissions: new Set(data.permissions) };
}

export function problemData(problem: Problem): ProblemData {
  return {
    status: problem.status,
    slug: problem.slug,
    title: problem.title,
    ...(problem.detail === undefined ? {} : { detail: problem.detail }),
    ...(problem.errors === undefined ? {} : { errors: problem.errors }),
  };
}

export function problemFromData(data: ProblemData): Problem {
  return new Problem(data.status, data.slug, data.title, data.detail, data.errors);
}
