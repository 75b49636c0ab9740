export * from './config.ts';
export * from './db.ts';
export * from './errors.ts';
export * from './logger.ts';
export * from './redis.ts';
export * from './http.ts';
export * from './input.ts';
export * from './route-call.ts';
