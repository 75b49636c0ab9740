// Members' sign-in over the API, as a client outside a browser does it.
import { request } from 'node:http';
import type { TestTenant } from './stack.ts';

export interface SignInAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/**
 * A client that keeps the cookies the service sets, as `curl -c/-b` does (a sign-in link works
 * only with the tv_sign_in cookie of the request that asked for it). `localAddress` puts it on a
 * local address of its own (127.0.0.x: every one is this machine's); `forwardedFor` plays a proxy
 * in front of the service that says whom it forwards.
 */
export function signInClient(baseUrl: string, options: { localAddress?: string } = {}) {
  const { hostname, port } = new URL(baseUrl);
  const jar = new Map<string, string>();
  const call = (method: string, path: string, body: unknown, forwardedFor?: string) =>
    new Promise<SignInAnswer>((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (jar.size) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
      if (forwardedFor) headers['x-forwarded-for'] = forwardedFor;
      const outgoing = request(
        { host: hostname, port, method, path, headers, localAddress: options.localAddress },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            for (const cookie of response.headers['set-cookie'] ?? []) {
              const [pair = ''] = cookie.split(';');
              const at = pair.indexOf('=');
              jar.set(pair.slice(0, at), pair.slice(at + 1));
            }
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
            });
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(JSON.stringify(body));
    });
  return {
    askLink: (email: string, forwardedFor?: string) =>
      call('POST', '/sessions/email', { email }, forwardedFor),
    signIn: (token: string) => call('POST', '/sessions', { token }),
  };
}

export type SignInClient = ReturnType<typeof signInClient>;

/** The e-mail address of a tenant's owner. */
export async function ownerEmailOf(tenant: TestTenant): Promise<string> {
  const members = await tenant.client.request<{ data: { user: { email: string } }[] }>(
    'GET',
    '/tenants/self/members',
  );
  return members.body.data[0]!.user.email;
}
