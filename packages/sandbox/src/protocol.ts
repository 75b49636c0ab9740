// Messages between the pool (parent) and a sandbox child process. JSON over IPC.
import type { SandboxLimits, SandboxOutcome } from './types.ts';

export interface ChildConfig {
  limits: SandboxLimits;
  slots: number;
  maxRunsPerIsolate: number;
}

export type ParentMessage =
  | {
      type: 'run';
      runId: number;
      code: string;
      argsJson: string | undefined;
      configurationJson: string | undefined;
      serviceMethods: string[] | null;
    }
  | { type: 'svcResult'; runId: number; callId: number; ok: boolean; payload: string | undefined };

export type ChildOutcome = SandboxOutcome;

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'svc'; runId: number; callId: number; method: string; argsJson: string }
  | { type: 'done'; runId: number; outcome: ChildOutcome }
  | { type: 'log'; level: 'warn' | 'error'; message: string; details: Record<string, unknown> };
