// The SDK's modules: generated from the OpenAPI document (api.ts, generated/) and written by hand.
export * from './api.ts';
export * from './client.ts';
export * from './log-proof.ts';
export * from './webhook-signature.ts';
export type { components, operations, paths } from './generated/schema.ts';
