export * from './queues.ts';
