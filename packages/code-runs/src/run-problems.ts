import { STATUS_CODES } from 'node:http';
import { internalError } from '@tokenvault/platform';
import type { SandboxOutcome } from '@tokenvault/sandbox';
import type { ProblemData } from './run-request.ts';

/** A run's own failure (what it answered cannot be used): a 500 `reactor-runtime` with this detail. */
export const runtimeProblem = (detail: string) => internalError(detail, { type: 'reactor-runtime' });

/**
 * The code's thrown error (an SDK class, or anything else as ReactorRuntimeError) as a problem:
 * `reactor/<class name>`, the class's status, its message as the detail.
 */
export function guestProblem(outcome: Extract<SandboxOutcome, { ok: false }>): ProblemData {
  const { name, status, message, errors } = outcome.error;
  return {
    status,
    slug: `reactor/${name}`,
    title: STATUS_CODES[status] ?? name,
    detail: message,
    ...(errors ? { errors } : {}),
  };
}

/** An outcome's problem by name, for a metric label: `reactor/BadRequestError` → `BadRequestError`; a service problem keeps its slug. */
export const outcomeName = (problem: ProblemData) => problem.slug.replace(/^reactor\//, '');
