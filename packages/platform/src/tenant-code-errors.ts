import { randomUUID } from 'node:crypto';

/**
 * What the log may say of an error whose text is tenant code's own (a reactor's or a proxy
 * transform's thrown error: its message, stack, detail and field errors can quote whatever the
 * code was given, a card number say). The caller may be answered that text (docs/reactors.md);
 * the log gets these fields only.
 */
export interface TenantCodeOrigin {
  /** This failure's own id: what its log line is found by. */
  errorId: string;
  /** The error's class, one of a fixed list (the reactor SDK's), never a name the code chose. */
  className: string;
  /** What ran the code: `reactors/<id>`, `proxies/<id>`. */
  source?: string;
}

// A registered symbol, not a module-level map: the mark holds whichever copy of this module reads
// it, and (not enumerable) no serializer or JSON.stringify sees it.
const origin = Symbol.for('tokenvault.tenant-code-origin');

/** Marks an error as carrying tenant code's text: every logger built by createLogger keeps it to its origin. */
export function markTenantCode<E extends object>(
  error: E,
  from: Omit<TenantCodeOrigin, 'errorId'> & { errorId?: string },
): E {
  const marked: TenantCodeOrigin = {
    errorId: from.errorId ?? randomUUID(),
    className: from.className,
    ...(from.source === undefined ? {} : { source: from.source }),
  };
  Object.defineProperty(error, origin, { value: marked, enumerable: false, configurable: true });
  return error;
}

/** The origin of an error marked by markTenantCode, or undefined. */
export function tenantCodeOrigin(error: unknown): TenantCodeOrigin | undefined {
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) return undefined;
  return (error as { [origin]?: TenantCodeOrigin })[origin];
}

/** All that a log line says of a marked error: its class, its id and what ran the code. */
export function tenantCodeLogFields(from: TenantCodeOrigin): Record<string, unknown> {
  return {
    type: from.className,
    tenantCode: true,
    errorId: from.errorId,
    ...(from.source === undefined ? {} : { source: from.source }),
  };
}
