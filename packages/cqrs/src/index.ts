export * from './decider.ts';
export * from './aggregate-stream.ts';
export * from './command.ts';
export * from './processor.ts';
export * from './projector.ts';
export * from './consistency.ts';
export * from './checkpoint.ts';
export * from './context-manifest.ts';
