export * from './decider.ts';
export * from './command.ts';
export * from './processor.ts';
export * from './projector.ts';
export * from './consistency.ts';
export * from './checkpoint.ts';
