import {
  createTokenvaultApi,
  type Problem,
  type RequestOf,
  type ResponseOf,
  type TokenvaultApi,
} from './api.ts';

export type { Problem } from './api.ts';

export interface ApiResponse<Body = unknown> {
  status: number;
  headers: Headers;
  body: Body;
}

export class ApiError extends Error {
  readonly response: ApiResponse<Problem>;
  constructor(response: ApiResponse<Problem>) {
    super(`${response.status} ${response.body.title}: ${response.body.detail ?? ''}`);
    this.response = response;
    this.name = 'ApiError';
  }
}

export interface Page<Item> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: Item[];
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is: lets tests send malformed JSON. */
  rawBody?: string;
  query?: Record<string, string | number | (string | number)[] | undefined>;
  headers?: Record<string, string>;
  /** Overrides the client's key; null sends none. */
  apiKey?: string | null;
}

/** The data of a generated client's answer; an ApiError for any answer that is not a success. */
async function succeeded<Data>(
  call: Promise<{ data?: Data; error?: unknown; response: Response }>,
): Promise<Data> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw new ApiError({ status: response.status, headers: response.headers, body: error as Problem });
  }
  return data as Data;
}

/**
 * `api` is the client generated from the OpenAPI document (every operation, typed); `tokens` and
 * `applications` are shortcuts through it that throw ApiError on any answer that is not a
 * success; `request` sends anything at all and returns whatever the API answered (for input the
 * API must refuse, which a typed client cannot send).
 */
export class TokenvaultClient {
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly api: TokenvaultApi;
  constructor(baseUrl: string, apiKey?: string) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
    this.api = createTokenvaultApi({ baseUrl, ...(apiKey ? { apiKey } : {}) });
  }

  withKey(apiKey: string): TokenvaultClient {
    return new TokenvaultClient(this.baseUrl, apiKey);
  }

  async request<Body = unknown>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<Body>> {
    const url = new URL(
      path.replace(/^\//, ''),
      this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`,
    );
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(item));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    const apiKey = options.apiKey === undefined ? this.apiKey : options.apiKey;
    if (apiKey) headers['svc-api-key'] = apiKey;
    let payload: string | undefined = options.rawBody;
    if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(url, {
      method,
      headers,
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: (text ? JSON.parse(text) : undefined) as Body,
    };
  }

  readonly tokens = {
    create: (body: RequestOf<'createToken'>) =>
      succeeded<ResponseOf<'createToken', 201>>(this.api.POST('/tokens', { body })),
    get: (id: string) =>
      succeeded<ResponseOf<'getToken'>>(this.api.GET('/tokens/{id}', { params: { path: { id } } })),
    delete: (id: string) => succeeded<void>(this.api.DELETE('/tokens/{id}', { params: { path: { id } } })),
  };

  readonly applications = {
    create: (body: RequestOf<'createApplication'>) =>
      succeeded<ResponseOf<'createApplication', 201>>(this.api.POST('/applications', { body })),
    get: (id: string) =>
      succeeded<ResponseOf<'getApplication'>>(
        this.api.GET('/applications/{id}', { params: { path: { id } } }),
      ),
    list: (query: { page?: number; size?: number } = {}) =>
      succeeded<ResponseOf<'listApplications'>>(this.api.GET('/applications', { params: { query } })),
    update: (id: string, body: RequestOf<'updateApplication'>) =>
      succeeded<ResponseOf<'updateApplication'>>(
        this.api.PUT('/applications/{id}', { params: { path: { id } }, body }),
      ),
    delete: (id: string) =>
      succeeded<void>(this.api.DELETE('/applications/{id}', { params: { path: { id } } })),
  };
}
