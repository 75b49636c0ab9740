/** What is wrong with each field, by its path (`body.metadata`): what to send instead. */
export type FieldErrors = Record<string, string[]>;

/**
 * What a decider refuses a command for, in domain words. The HTTP edge picks the status
 * (`problemOf` in errors.ts maps each kind once): a decider never names one.
 */
export type DomainErrorKind =
  /** The command itself is wrong: a field, a combination of fields, a reference to nothing. */
  | 'invalid'
  /** The caller may not do this, or may not grant what it asks to grant. */
  | 'not-allowed'
  /** What the command is about does not exist (or no longer does, for this command). */
  | 'not-found'
  /** A create of what exists already (ids are never reused). */
  | 'already-exists'
  /** The state forbids it now: something depends on it, or it changed under the command. */
  | 'conflict'
  /** It existed but can no longer be used (a replaced, expired or used link). */
  | 'gone'
  /** Well-formed, but it cannot be carried out as it stands (code that does not compile). */
  | 'unprocessable';

/** A refusal of a command by a decider (or a rule it calls). */
export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  /** For a person: what went wrong and how to fix it. Never holds the input's data. */
  readonly detail: string;
  /** What is wrong with each field, when fields can be named. */
  readonly fields?: FieldErrors;
  /**
   * A stable name of its own, for the few refusals the API answers with their own problem type
   * (`invalid-reactor-configuration`); without one, the kind's type.
   */
  readonly code?: string;
  constructor(kind: DomainErrorKind, detail: string, options: { fields?: FieldErrors; code?: string } = {}) {
    super(detail);
    this.name = 'DomainError';
    this.kind = kind;
    this.detail = detail;
    if (options.fields !== undefined) this.fields = options.fields;
    if (options.code !== undefined) this.code = options.code;
  }
}

export const invalidCommand = (detail: string, fields?: FieldErrors, code?: string) =>
  new DomainError('invalid', detail, { ...(fields && { fields }), ...(code && { code }) });
export const notAllowed = (detail: string, fields?: FieldErrors) =>
  new DomainError('not-allowed', detail, { ...(fields && { fields }) });
export const notFoundError = (detail: string) => new DomainError('not-found', detail);
export const alreadyExists = (detail: string) => new DomainError('already-exists', detail);
export const conflictError = (detail: string) => new DomainError('conflict', detail);
export const goneError = (detail: string) => new DomainError('gone', detail);
export const unprocessableCommand = (detail: string, fields?: FieldErrors) =>
  new DomainError('unprocessable', detail, { ...(fields && { fields }) });

/** Whether an error is a decider's refusal of this kind (a create that found its id taken, say). */
export const isDomainError = (error: unknown, kind: DomainErrorKind): error is DomainError =>
  error instanceof DomainError && error.kind === kind;
