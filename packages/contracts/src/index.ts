export * from './permissions.ts';
export * from './common.ts';
export * from './checksums.ts';
export * from './tokens.ts';
export * from './applications.ts';
export * from './events.ts';
export * from './tenants.ts';
export * from './logs.ts';
