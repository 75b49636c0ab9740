import type { z } from 'zod';
import type {
  ApplicationResponse,
  TokenResponse,
  createApplicationBody,
  createTokenBody,
  updateApplicationBody,
} from '@tokenvault/contracts';

export interface ApiResponse<Body = unknown> {
  status: number;
  headers: Headers;
  body: Body;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: Record<string, string[]>;
  request_id?: string;
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

/**
 * A thin client: `request` returns whatever the API answered; the typed helpers throw ApiError
 * on any status that is not a success.
 */
export class TokenvaultClient {
  readonly baseUrl: string;
  readonly apiKey?: string;
  constructor(baseUrl: string, apiKey?: string) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
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

  private async expectOk<Body>(method: string, path: string, options?: RequestOptions): Promise<Body> {
    const response = await this.request<Body>(method, path, options);
    if (response.status >= 300) throw new ApiError(response as unknown as ApiResponse<Problem>);
    return response.body;
  }

  readonly tokens = {
    create: (body: z.input<typeof createTokenBody>) =>
      this.expectOk<TokenResponse>('POST', '/tokens', { body }),
    get: (id: string) => this.expectOk<TokenResponse>('GET', `/tokens/${encodeURIComponent(id)}`),
    delete: (id: string) => this.expectOk<void>('DELETE', `/tokens/${encodeURIComponent(id)}`),
  };

  readonly applications = {
    create: (body: z.input<typeof createApplicationBody>) =>
      this.expectOk<ApplicationResponse & { key: string }>('POST', '/applications', { body }),
    get: (id: string) => this.expectOk<ApplicationResponse>('GET', `/applications/${id}`),
    list: (query: { page?: number; size?: number } = {}) =>
      this.expectOk<Page<ApplicationResponse>>('GET', '/applications', { query }),
    update: (id: string, body: z.input<typeof updateApplicationBody>) =>
      this.expectOk<ApplicationResponse>('PUT', `/applications/${id}`, { body }),
    delete: (id: string) => this.expectOk<void>('DELETE', `/applications/${id}`),
  };
}
