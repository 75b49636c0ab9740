/** A `code` transform of a pre-configured proxy (run in the reactors' sandbox pool). */
export interface ProxyTransform {
  type: 'code';
  code: string;
}

/** A proxy's configuration, as its administrator wrote it (sealed at rest, opened only to run). */
export type ProxyConfiguration = Record<string, string>;

/**
 * A pre-configured proxy as an invocation needs it: loaded by its key, its configuration opened.
 * What the request pipeline (reactors and transforms) reads; nothing here is ever logged.
 */
export interface ConfiguredProxy {
  id: string;
  tenant_id: string;
  /** The proxy's `destination_url`; the invocation's path and query are appended to it. */
  destination: string;
  require_auth: boolean;
  /** Milliseconds; lowers PROXY_TIMEOUT_MS for this proxy's requests (never raises it). */
  timeout?: number;
  request_reactor_id?: string;
  response_reactor_id?: string;
  request_transforms: ProxyTransform[];
  response_transforms: ProxyTransform[];
  /** The proxy's configuration, decrypted. */
  configuration: ProxyConfiguration;
  /** The application the proxy's transforms act as (and a `require_auth: false` call acts with). */
  application_id?: string;
}
