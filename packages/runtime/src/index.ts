export * from './runtime.ts';
export * from './gateway.ts';
export * from './server.ts';
export * from './process.ts';
export * from './subscribers.ts';
export * from './projections.ts';
export * from './projection-mode.ts';
export * from './token-key-sweeper.ts';
