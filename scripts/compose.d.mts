// Types of compose.mjs, for the TypeScript that imports it (the compose tier, the benchmark).
import type { SpawnSyncReturns, StdioOptions } from 'node:child_process';
export declare const root: string;
export declare const images: Record<
  'base' | 'node' | 'postgres' | 'redis' | 'kafka' | 'haproxy' | 'mailpit' | 'app',
  string
>;
export declare function dockerUnavailableReason(): string | undefined;
export declare function ensureImages(): number;
export declare const composeFiles: string[];
export declare function dockerCompose(
  args: string[],
  options?: { extraFiles?: string[]; env?: NodeJS.ProcessEnv; stdio?: StdioOptions },
): SpawnSyncReturns<string>;
