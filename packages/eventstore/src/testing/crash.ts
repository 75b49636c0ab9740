import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CrashStage } from '../contract.ts';
import type { NewEvent } from '../port.ts';

const script = fileURLToPath(new URL('./crash-append.ts', import.meta.url));

/**
 * Runs crash-append.ts in a child process and resolves once it was killed at its stage; rejects
 * when it exited any other way (it failed before reaching the stage).
 */
export function appendAndKill(
  stage: CrashStage,
  stream: string,
  events: NewEvent[],
  env: { CLAIMS_DATABASE_URL: string; EVENTS_DATABASE_URL?: string; EVENTSTORE_URL?: string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, ...env, STAGE: stage, STREAM: stream, EVENTS: JSON.stringify(events) },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve();
      else reject(new Error(`crash-append exited with ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}
