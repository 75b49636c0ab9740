// Child processes of the bench (the service, the baseline, the CLI, the relay, the listeners):
// every one is tracked, so that lifecycle.ts can stop them all at the end, also on failure.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

export interface Child {
  name: string;
  process: ChildProcess;
  /** The last few KB of its stdout and stderr, for error reports. */
  output(): string;
}

const children = new Set<Child>();

function track(name: string, child: ChildProcess): Child {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const tracked: Child = { name, process: child, output: () => tail };
  children.add(tracked);
  child.on('exit', () => children.delete(tracked));
  return tracked;
}

/** A TypeScript entry point (path relative to the repository root) as a long-running child. */
export function startTsChild(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  nodeOptions: string[] = [],
): Child {
  const child = spawn(process.execPath, [...nodeOptions, script], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return track(name, child);
}

export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export async function stopChild(child: Child): Promise<void> {
  if (exited(child.process)) return;
  const exit = once(child.process, 'exit');
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exit;
  clearTimeout(timer);
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)));
}

/** Synchronous, for the process's 'exit' handler. */
export function killAllChildren(): void {
  for (const child of children) child.process.kill('SIGKILL');
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export async function waitForHttp(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited(child.process))
      throw new Error(`${child.name} exited before it was ready:\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  throw new Error(`${child.name} not ready at ${url} after ${timeoutMs} ms:\n${child.output()}`);
}

/** Runs a TypeScript entry point to its end and returns its stdout; throws unless it exits 0. */
export async function runToCompletion(
  name: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tracked = track(name, child);
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${name} failed (exit ${code}):\n${tracked.output()}`);
  return stdout;
}

/**
 * The protocol of the listener children (the scenarios' *-listener.ts): `ready` once listening,
 * then their observations in reply to the message `dump`.
 */
export type ListenerReply<Observation> =
  { type: 'ready' } | { type: 'observations'; observations: Observation[] };

export interface Listener<Observation> {
  child: Child;
  dump(): Promise<Observation[]>;
}

/** A listener as a child process of its own, so the busy load generator cannot delay its timestamps. */
export async function startListener<Observation>(
  name: string,
  module: URL,
  env: NodeJS.ProcessEnv,
): Promise<Listener<Observation>> {
  const child = fork(fileURLToPath(module), [], {
    cwd: repoRoot,
    execArgv: [],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const tracked = track(name, child);
  const nextMessage = () =>
    new Promise<ListenerReply<Observation>>((resolve, reject) => {
      child.once('message', (message) => resolve(message as ListenerReply<Observation>));
      child.once('exit', () => reject(new Error(`${name} exited:\n${tracked.output()}`)));
    });
  const ready = await nextMessage();
  if (ready.type !== 'ready') throw new Error(`${name} did not start`);
  return {
    child: tracked,
    async dump() {
      const reply = nextMessage();
      child.send('dump');
      const message = await reply;
      if (message.type !== 'observations') throw new Error(`${name} sent no observations`);
      return message.observations;
    },
  };
}
