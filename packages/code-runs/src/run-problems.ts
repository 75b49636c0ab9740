import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { internalError } from '@tokenvault/platform';
import { REACTOR_ERRORS, type SandboxOutcome } from '@tokenvault/sandbox';
import type { ProblemData } from './run-request.ts';

/** A run's own failure (what it answered cannot be used): a 500 `reactor-runtime` with this detail. */
export const runtimeProblem = (detail: string) => internalError(detail, { type: 'reactor-runtime' });

/**
 * The code's thrown error (an SDK class, or anything else as ReactorRuntimeError) as a problem:
 * `reactor/<class name>`, the class's status, its message as the detail. Its detail and errors
 * are the code's own text (they can quote what it was given): the problem is tenant code's, kept
 * out of every log by its id and class (`tenant_code`).
 */
export function guestProblem(outcome: Extract<SandboxOutcome, { ok: false }>): ProblemData {
  const { name, status, message, errors } = outcome.error;
  // The sandbox answers only the SDK's class names; anything else would be text of the code's.
  const className = Object.hasOwn(REACTOR_ERRORS, name) ? name : 'ReactorRuntimeError';
  return {
    status,
    slug: `reactor/${className}`,
    title: STATUS_CODES[status] ?? className,
    detail: message,
    ...(errors ? { errors } : {}),
    tenant_code: { error_id: randomUUID(), class: className },
  };
}

/** An outcome's problem by name, for a metric label: `reactor/BadRequestError` → `BadRequestError`; a service problem keeps its slug. */
export const outcomeName = (problem: ProblemData) => problem.slug.replace(/^reactor\//, '');
