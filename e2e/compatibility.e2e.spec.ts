import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

describe('compatibility', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });

  it('accepts role ADMIN on an invitation, and names body.role for anything else', async () => {
    const admin = await env.tenant.client.request<{ status: string }>('POST', '/tenants/self/invitations', {
      body: { email: 'new-admin@example.com', role: 'ADMIN' },
    });
    expect(admin.status, JSON.stringify(admin.body)).toBe(201);
    expect(admin.body.status).toBe('PENDING');
    for (const role of ['OWNER', 'admin', 1, null]) {
      const refused = await env.tenant.client.request<{ errors: Record<string, string[]> }>(
        'POST',
        '/tenants/self/invitations',
        { body: { email: 'someone@example.com', role } },
      );
      expect(refused.status, String(role)).toBe(400);
      expect(Object.keys(refused.body.errors)).toEqual(['body.role']);
    }
  });

  it('echoes X-Request-Id, else takes the trace-id of a W3C traceparent', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
    const traced = await env.tenant.client.request<{ request_id?: string }>('GET', '/tokens/missing', {
      headers: { traceparent },
    });
    expect(traced.status).toBe(404);
    expect(traced.headers.get('x-request-id')).toBe(traceId);
    expect(traced.body.request_id).toBe(traceId);
    const both = await env.tenant.client.request('GET', '/applications', {
      headers: { traceparent, 'x-request-id': 'mine-1' },
    });
    expect(both.headers.get('x-request-id')).toBe('mine-1');
    for (const invalid of [
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-${traceId}-${'0'.repeat(16)}-01`,
      `ff-${traceId}-00f067aa0ba902b7-01`,
      `00-${traceId.toUpperCase()}-00f067aa0ba902b7-01`,
      'garbage',
    ]) {
      const answer = await env.tenant.client.request('GET', '/applications', {
        headers: { traceparent: invalid },
      });
      const id = answer.headers.get('x-request-id');
      expect(id, invalid).not.toBe(traceId);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
