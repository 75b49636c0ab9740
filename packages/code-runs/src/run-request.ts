import {
  markTenantCode,
  problemFromParts,
  tenantCodeOrigin,
  type ContainerRule,
  type FieldErrors,
  type Principal,
  type Problem,
} from '@tokenvault/platform';

/** A principal as plain data (it crosses Redis inside the sealed request). */
export interface PrincipalData {
  tenantId: string;
  actorId: string;
  actorType: Principal['actorType'];
  permissions: string[];
  rules: ContainerRule[];
  tenantSettings: Record<string, string>;
}

/**
 * What the code answers, and so what a run's outcome holds:
 * - `raw-and-tokens`: `{ raw, tokenize }`; each token-create body in `tokenize` becomes a token
 *   (created as the application, or else the caller), answered as `{ raw, tokens }`;
 * - `headers-and-body`: `{ headers, body }`, passed back as the outcome's `raw`, nothing tokenized.
 */
export type RunAnswers = 'raw-and-tokens' | 'headers-and-body';

/**
 * One run of tenant code, whoever asks for it (a reactor's invocation, a proxy's stage): the code,
 * what it is given, who it acts as, and what it answers. The limits of a run (its wall and CPU
 * time, memory, output and service calls) are the worker's, the same for every run.
 */
export interface CodeRunRequest {
  /** `module.exports = async function (req) { … }` */
  code: string;
  /** `req.args`: detokenized already, and checked by whoever asks for the run. */
  args: Record<string, unknown>;
  /** `req.configuration` */
  configuration: Record<string, unknown>;
  /** The application the code acts as: `req.svc` calls routes as it; null means `req.svc` is null. */
  application_id: string | null;
  /** Who asked: `tokenize` creates tokens as this caller when the run has no application. */
  caller: PrincipalData;
  request_id: string;
  /** The tokens detokenized into `args`: an async result that saw them is kept while they live. */
  token_ids?: string[];
  /**
   * What the caller's use decision showed of each token in `args` (reveal, mask, redact): an
   * async result is answered only while the caller's decision now shows as much.
   */
  token_transforms?: Record<string, string>;
  /**
   * When the reads of the run began (ISO time, taken before its args were detokenized): a token
   * changed, or a card's CVC removed, after it may no longer hold what the run saw.
   */
  reads_from?: string;
  answers: RunAnswers;
}

export interface ProblemData {
  status: number;
  slug: string;
  title: string;
  detail?: string;
  errors?: FieldErrors;
  /**
   * Set when `detail` and `errors` are the code's own text (its thrown error): answered to the
   * caller as the reactor docs say, never logged (the problem is marked: markTenantCode). `class`
   * is the SDK error class, `source` what ran the code (`reactors/<id>`, `proxies/<id>`).
   */
  tenant_code?: { error_id: string; class: string; source?: string };
}

/**
 * The result of a run, as the sync call answers it (and the async result reports it), with the
 * tokens whose data the run saw (detokenized into its args, read through `svc`): what it answers
 * may hold their data, so an async result is withdrawn once one of them is deleted.
 */
export type CodeRunOutcome = (
  { ok: true; body: { tokens?: unknown; raw?: unknown } } | { ok: false; problem: ProblemData }
) & { token_ids?: string[]; seen?: SeenDecisions; reads_from?: string };

/**
 * What decided what the run saw of each token: an async result is answered only while what
 * decides now shows as much (the reactors context compares them), so narrowing a rule narrows
 * the results it shaped.
 */
export interface SeenDecisions {
  /** Tokens detokenized into `args`: the caller's token:use transform on each (its request's `token_transforms`). */
  args?: Record<string, string>;
  /** Tokens `svc` read, as the run's application: its grants then, and each token as answered (containers, privacy). */
  svc?: {
    application_id: string;
    permissions: string[];
    rules: ContainerRule[];
    tokens: Record<string, { containers: string[]; privacy?: unknown }>;
  };
}

/** A run the worker could not carry out (not the code's own error, which is an outcome). */
export const runFailure: CodeRunOutcome = {
  ok: false,
  problem: {
    status: 500,
    slug: 'reactor-runtime',
    title: 'Internal Server Error',
    detail: 'The reactor run could not be completed.',
  },
};

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

export function principalFromData(data: PrincipalData): Principal {
  return { ...data, permissions: new Set(data.permissions) };
}

export function problemData(problem: Problem): ProblemData {
  const fromTenantCode = tenantCodeOrigin(problem);
  return {
    status: problem.status,
    slug: problem.slug,
    title: problem.title,
    ...(problem.detail === undefined ? {} : { detail: problem.detail }),
    ...(problem.errors === undefined ? {} : { errors: problem.errors }),
    ...(fromTenantCode === undefined
      ? {}
      : {
          tenant_code: {
            error_id: fromTenantCode.errorId,
            class: fromTenantCode.className,
            ...(fromTenantCode.source === undefined ? {} : { source: fromTenantCode.source }),
          },
        }),
  };
}

/** The problem again; one of tenant code's keeps its mark, so that no log shows its text. */
export function problemFromData(data: ProblemData): Problem {
  const { tenant_code: fromTenantCode, ...parts } = data;
  const problem = problemFromParts(parts);
  if (fromTenantCode === undefined) return problem;
  return markTenantCode(problem, {
    errorId: fromTenantCode.error_id,
    className: fromTenantCode.class,
    ...(fromTenantCode.source === undefined ? {} : { source: fromTenantCode.source }),
  });
}

/** The sync answer of an outcome: its body, or its problem thrown. */
export function outcomeBody(outcome: CodeRunOutcome): { tokens?: unknown; raw?: unknown } {
  if (!outcome.ok) throw problemFromData(outcome.problem);
  return outcome.body;
}
