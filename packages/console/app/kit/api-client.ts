// The console's calls of the API: same origin, with the session cookie (HttpOnly: this script
// never sees it) and the current tenant as SVC-TENANT-ID.
import { currentTenantId } from './console-state.ts';

/** Dispatched on `window` when the API refuses the session (401): the console starts over. */
export const sessionEndedEvent = 'console:session-ended';

export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, detail: string) {
    super(detail);
    this.status = status;
  }
}

/** A page of a list, as the API answers it. */
export interface Page<T> {
  pagination: { next?: string | null; total_pages?: number; page_number?: number | null };
  data: T[];
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const tenantId = currentTenantId();
  if (tenantId && !path.startsWith('/sessions')) headers['svc-tenant-id'] = tenantId;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed = (text ? JSON.parse(text) : undefined) as { detail?: string } | undefined;
  if (!response.ok) {
    // An event, not a call of the router: the router imports the pages, which import this client.
    if (response.status === 401 && !path.startsWith('/sessions'))
      window.dispatchEvent(new Event(sessionEndedEvent));
    throw new ApiError(response.status, parsed?.detail ?? `The request failed (${response.status}).`);
  }
  return parsed as T;
}
