// CPU profiles per measured run (BENCH_CPU_PROFILE_DIR): the service and the baseline run with
// --inspect on a port of their own; around each measured run the bench starts and stops V8's
// sampling profiler in the process that serves it (the Chrome DevTools protocol over a WebSocket),
// saves the profile as `<dir>/<row>.cpuprofile` (open it in Chrome DevTools or speedscope) and
// reports its top frames by self time.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from './log.ts';
import { settings } from './settings.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One saved profile: where it is, how busy the process was, and its top frames by self time. */
export interface ProfileSummary {
  row: string;
  process: string;
  file: string;
  /** Share of the samples not idle (the main thread's busy time). */
  busyPercent: number;
  top: { frame: string; selfPercent: number }[];
}

const summaries: ProfileSummary[] = [];

/** The profiles saved so far in this run, in order. */
export function profileSummaries(): readonly ProfileSummary[] {
  return summaries;
}

/** The node options that let the bench profile a child process, or none when profiles are off. */
export function inspectOptions(port: number): string[] {
  return settings.cpuProfileDir ? [`--inspect=127.0.0.1:${port}`] : [];
}

class Inspector {
  private nextId = 1;
  private readonly waiting = new Map<number, (result: unknown) => void>();
  private readonly socket: WebSocket;
  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener('message', (message: MessageEvent) => {
      const reply = JSON.parse(String(message.data)) as { id?: number; result?: unknown; error?: unknown };
      if (reply.id === undefined) return;
      this.waiting.get(reply.id)?.(
        reply.error ? Promise.reject(new Error(JSON.stringify(reply.error))) : reply.result,
      );
      this.waiting.delete(reply.id);
    });
  }

  static async connect(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    const url = targets[0]?.webSocketDebuggerUrl;
    if (!url) throw new Error(`no inspector target on port ${port}`);
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', () => reject(new Error(`inspector on port ${port} refused`)), {
        once: true,
      });
    });
    return new Inspector(socket);
  }

  send<T>(method: string, params: object = {}): Promise<T> {
    const id = this.nextId++;
    const answered = new Promise<T>((resolve) => this.waiting.set(id, resolve as (result: unknown) => void));
    this.socket.send(JSON.stringify({ id, method, params }));
    return answered;
  }

  close(): void {
    this.socket.close();
  }
}

/** The processes that can be profiled, by the origin they serve (http://127.0.0.1:port). */
const inspectorPorts = new Map<string, { process: string; port: number }>();

export function registerProfiled(origin: string, process: string, inspectPort: number): void {
  if (settings.cpuProfileDir) inspectorPorts.set(origin, { process, port: inspectPort });
}

/**
 * Starts the sampling profiler in the process serving `url` (when profiles are on and it is
 * known); the returned function stops it, saves the profile and reports its top frames.
 */
export async function startProfile(url: string, row: string): Promise<() => Promise<void>> {
  const dir = settings.cpuProfileDir;
  const target = inspectorPorts.get(new URL(url).origin);
  if (!dir || !target) return async () => {};
  const inspector = await Inspector.connect(target.port);
  await inspector.send('Profiler.enable');
  await inspector.send('Profiler.setSamplingInterval', { interval: 500 });
  await inspector.send('Profiler.start');
  return async () => {
    const { profile } = await inspector.send<{ profile: CpuProfile }>('Profiler.stop');
    inspector.close();
    await mkdir(dir, { recursive: true });
    const file = join(dir, `${row.replace(/[^a-zA-Z0-9]+/g, '-').replace(/^-|-$/g, '')}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    const summary = summarize(row, target.process, file, profile);
    summaries.push(summary);
    log(
      `${row}: ${target.process} busy ${summary.busyPercent.toFixed(0)}%, top frames: ${formatTopFrames(summary)} (${file})`,
    );
  };
}

/** A profile's top frames on one line: `frame 12.3%; frame 4.5%; …`. */
export function formatTopFrames(summary: ProfileSummary): string {
  return summary.top.map((frame) => `${frame.frame} ${frame.selfPercent.toFixed(1)}%`).join('; ');
}

const topFrameCount = 12;

/** Self time per frame (function, file and line), as a share of all samples. */
function summarize(row: string, process: string, file: string, profile: CpuProfile): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const selfByFrame = new Map<string, number>();
  let total = 0;
  let idle = 0;
  samples.forEach((id, index) => {
    const weight = Math.max(0, deltas[index] ?? 0);
    const frame = nodes.get(id)?.callFrame;
    if (!frame) return;
    total += weight;
    if (frame.functionName === '(idle)') {
      idle += weight;
      return;
    }
    const where = frame.url
      ? ` ${frame.url.replace(/^.*\/(node_modules|packages)\//, '$1/')}:${frame.lineNumber + 1}`
      : '';
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    selfByFrame.set(name, (selfByFrame.get(name) ?? 0) + weight);
  });
  const top = [...selfByFrame.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topFrameCount)
    .map(([frame, self]) => ({ frame, selfPercent: total ? (100 * self) / total : 0 }));
  return { row, process, file, busyPercent: total ? (100 * (total - idle)) / total : 0, top };
}
