import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './generated/schema.ts';

/** An error answer of the API: RFC 9457 problem details (`application/problem+json`). */
export type Problem = components['schemas']['Problem'];

/** The typed client of every operation: `api.GET('/tokens/{id}', { params: { path: { id } } })`. */
export type TokenvaultApi = Client<paths>;

/** The JSON body an operation answers with its status (`ResponseOf<'getToken'>`). */
export type ResponseOf<
  Operation extends keyof operations,
  Status extends keyof operations[Operation]['responses'] =
    200 extends keyof operations[Operation]['responses'] ? 200 : keyof operations[Operation]['responses'],
> = operations[Operation]['responses'][Status] extends { content: { 'application/json': infer Body } }
  ? Body
  : never;

/** The JSON body an operation takes (`RequestOf<'createToken'>`). */
export type RequestOf<Operation extends keyof operations> = operations[Operation] extends {
  requestBody?: { content: infer Content };
}
  ? Content[keyof Content]
  : never;

export interface TokenvaultApiOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where the service is, e.g. `https://tokenvault.example.com`. */
  baseUrl: string;
  /** Sent as SVC-API-KEY on every request; leave out for the operations that need no key. */
  apiKey?: string;
}

/** A client of the API generated from its OpenAPI document (openapi-fetch), the API key set once. */
export function createTokenvaultApi({
  baseUrl,
  apiKey,
  headers,
  ...options
}: TokenvaultApiOptions): TokenvaultApi {
  return createClient<paths>({
    ...options,
    baseUrl: baseUrl.replace(/\/$/, ''),
    headers: {
      ...(apiKey ? { 'SVC-API-KEY': apiKey } : {}),
      ...(headers as Record<string, string> | undefined),
    },
    // `?id=a&id=b`, as the API reads a repeated parameter.
    querySerializer: { array: { style: 'form', explode: true } },
  });
}
