// A second REST gateway in a process of its own, on a running stack's database and Redis: what a
// deployment with several gateway processes has (caches and notifications per process).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '@tokenvault/platform';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface GatewayProcess {
  url: string;
  stop(): Promise<void>;
}

/** `node services/api-gateway/src/main.ts` with the stack's settings; resolves once it listens. */
export async function startGatewayProcess(config: Config, timeoutMs = 60_000): Promise<GatewayProcess> {
  const child: ChildProcess = spawn(process.execPath, ['services/api-gateway/src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: config.DATABASE_URL,
      REDIS_URL: config.REDIS_URL,
      MASTER_KEY: config.MASTER_KEY,
      QUEUE_PREFIX: config.QUEUE_PREFIX,
      PUBLIC_URL: config.PUBLIC_URL,
      PROJECTIONS: config.PROJECTIONS,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the gateway did not start within ${timeoutMs} ms:\n${output.slice(-30).join('\n')}`));
    }, timeoutMs);
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        if (!line.includes('api-gateway listening')) continue;
        const { port } = JSON.parse(line) as { port?: number };
        if (port) {
          clearTimeout(timer);
          resolve(`http://127.0.0.1:${port}`);
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited:\n${output.slice(-30).join('\n')}`));
    });
  });
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
