export * from './client.ts';
export * from './log-proof.ts';
