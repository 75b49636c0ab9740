import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { adoptCompatibilityHeaders } from './wire-names.ts';

describe('Basis Theory’s header names', () => {
  it('become the service’s own, and no BT-* name is left', () => {
    const headers: IncomingHttpHeaders = {
      'bt-api-key': 'key_1',
      'bt-idempotency-key': 'once',
      'bt-proxy-key': 'proxy_1',
      'bt-proxy-url': 'https://processor.example',
      'bt-trace-id': 'trace-1',
      accept: 'application/json',
    };
    expect(adoptCompatibilityHeaders(headers)).toBeUndefined();
    expect(headers).toEqual({
      'svc-api-key': 'key_1',
      'svc-idempotency-key': 'once',
      'svc-proxy-key': 'proxy_1',
      'svc-proxy-url': 'https://processor.example',
      'x-request-id': 'trace-1',
      accept: 'application/json',
    });
  });

  it('accept both names of one header with the same value', () => {
    const headers: IncomingHttpHeaders = { 'bt-api-key': 'key_1', 'svc-api-key': 'key_1' };
    expect(adoptCompatibilityHeaders(headers)).toBeUndefined();
    expect(headers).toEqual({ 'svc-api-key': 'key_1' });
  });

  it('refuse both names with different values: a 400 naming each such header', () => {
    const headers: IncomingHttpHeaders = {
      'bt-api-key': 'key_1',
      'svc-api-key': 'key_2',
      'bt-trace-id': 'a',
      'x-request-id': 'b',
    };
    const problem = adoptCompatibilityHeaders(headers);
    expect(problem?.status).toBe(400);
    expect(Object.keys(problem?.errors ?? {})).toEqual(['headers.bt-api-key', 'headers.bt-trace-id']);
    expect(problem?.errors?.['headers.bt-api-key']?.[0]).toContain('SVC-API-KEY');
    // Neither value is echoed: a key is a secret.
    expect(JSON.stringify(problem?.toJSON())).not.toMatch(/key_1|key_2/);
    expect(headers['svc-api-key']).toBe('key_2');
    expect(headers['bt-api-key']).toBeUndefined();
  });
});
