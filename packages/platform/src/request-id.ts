import type { Request } from 'express';

const requestIdPattern = /^[\w.:-]{1,64}$/;

/** W3C Trace Context: version-traceid-parentid-flags, the ids lower-case hex and not all zeros. */
const traceparentPattern = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/**
 * The caller's request id: a well-formed X-Request-Id, else the trace-id of a valid W3C
 * `traceparent`, else undefined (a new one is made).
 */
export function incomingRequestId(req: Pick<Request, 'get'>): string | undefined {
  const incoming = req.get('x-request-id');
  if (incoming && requestIdPattern.test(incoming)) return incoming;
  const match = traceparentPattern.exec(req.get('traceparent')?.trim() ?? '');
  if (!match) return undefined;
  const [, version, traceId, parentId] = match as unknown as [string, string, string, string];
  if (version === 'ff' || /^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  return traceId;
}
