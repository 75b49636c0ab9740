// The service as a child process (`node services/all-in-one/src/main.ts`, as `npm start` runs it),
// for tests that restart it with another configuration, and the admin CLI's commands.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const defaultStartTimeoutMs = 60_000;

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote (stdout and stderr). */
  output: string[];
  stop(): Promise<void>;
}

/** Resolves once it logs that it listens (PORT=0: that line gives the port); fails with its output. */
export async function startServiceProcess(
  env: NodeJS.ProcessEnv,
  { startTimeoutMs = defaultStartTimeoutMs } = {},
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['services/all-in-one/src/main.ts'], {
    cwd: root,
    // A service started after a SIGKILL waits for its predecessor's processor leases to run out:
    // 3 s instead of the default 10 keeps the crash specs' catch-up within their waits.
    env: { PROCESSOR_LEASE_MS: '3000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`the service did not listen within ${startTimeoutMs} ms:\n${output.join('\n')}`)),
      startTimeoutMs,
    );
    const lines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
      let partial = '';
      stream.on('data', (chunk: Buffer) => {
        const split = (partial + chunk.toString('utf8')).split('\n');
        partial = split.pop()!;
        split.forEach(onLine);
      });
    };
    lines(child.stdout, (line) => {
      output.push(line);
      if (!line.includes('tokenvault is listening')) return;
      const parsed = JSON.parse(line) as { url?: string };
      if (parsed.url) {
        clearTimeout(timer);
        resolve(parsed.url);
      }
    });
    lines(child.stderr, (line) => output.push(line));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      reject(new ServiceExited(code, signal, output));
    });
  });
  return {
    url,
    child,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(15_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      await exited;
    },
  };
}

/** The service ended before it listened: its exit code and what it wrote. */
export class ServiceExited extends Error {
  readonly code: number | null;
  readonly output: string[];
  constructor(code: number | null, signal: string | null, output: string[]) {
    super(
      `the service exited (${signal ?? `code ${code}`}) before it listened:\n${output.slice(-40).join('\n')}`,
    );
    this.code = code;
    this.output = output;
  }
}

/** Runs an admin-cli script; resolves with its stdout's last JSON line (its summary). */
export async function runAdminCli(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<Record<string, unknown>> {
  const { stdout } = await execFileAsync(process.execPath, [`services/admin-cli/src/${script}`, ...args], {
    cwd: root,
    env: { ...env, LOG_LEVEL: 'warn' },
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const json = stdout
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    })
    .filter((line) => line !== undefined);
  const last = json.at(-1);
  if (!last) throw new Error(`${script} printed no JSON:\n${stdout}`);
  return last;
}
