// CPU time from /proc/<pid>/stat (utime + stime, all threads) of the two sides of a measured run:
// the process serving the requests with its descendants, and PostgreSQL: every child of the
// postmaster except the backends of the cluster's other databases (the shared processes, such as
// the WAL writer and the checkpointer, count). Processes come and go (a pool closes an idle
// connection), so a meter samples every 250 ms and keeps each process's first and last reading:
// one that started during the run counts from 0, one that exited counts up to its last sample.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const ticksPerMs = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) / 1000;
const sampleEveryMs = 250;

export interface CpuSources {
  /** The process serving the requests; its descendants count too. */
  servicePid: number;
  /** The PostgreSQL server's postmaster when it runs on this machine. */
  postmasterPid: number | undefined;
  /** The database under test: the backends of the cluster's other databases are left out. */
  database: string;
}

interface ProcessStat {
  ppid: number;
  ticks: number;
}

function readStat(pid: number): ProcessStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which may hold spaces: state, ppid, …, utime (14th), stime (15th).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined; // Exited.
  }
}

/**
 * The database a backend serves, from its title `postgres: [<cluster_name>: ]<user> <database>
 * <host>(<port>) <state>`; undefined for the server's own processes.
 */
function backendDatabase(pid: number): string | undefined {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return /^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title)?.[1];
  } catch {
    return undefined;
  }
}

type Side = 'service' | 'postgres';

export interface CpuMs {
  serviceMs: number;
  /** null when PostgreSQL does not run on this machine. */
  postgresMs: number | null;
}

export class CpuMeter {
  private readonly first = new Map<number, { side: Side; ticks: number }>();
  private readonly last = new Map<number, number>();
  /** Excluded pids (backends of another database), so that their titles are read once. */
  private readonly others = new Set<number>();
  private readonly timer: NodeJS.Timeout;
  private readonly sources: CpuSources;

  constructor(sources: CpuSources) {
    this.sources = sources;
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), sampleEveryMs);
  }

  private sample(atStart: boolean): void {
    const stats = new Map<number, ProcessStat>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = readStat(Number(entry));
      if (stat) stats.set(Number(entry), stat);
    }
    const service = new Set([this.sources.servicePid]);
    // Parents have lower pids than their children only until pids wrap: iterate to a fixed point.
    for (let grew = true; grew;) {
      grew = false;
      for (const [pid, stat] of stats)
        if (!service.has(pid) && service.has(stat.ppid)) {
          service.add(pid);
          grew = true;
        }
    }
    for (const [pid, stat] of stats) {
      const side: Side | undefined = service.has(pid)
        ? 'service'
        : stat.ppid === this.sources.postmasterPid && this.sources.postmasterPid !== undefined
          ? 'postgres'
          : undefined;
      if (!side || this.others.has(pid)) continue;
      if (!this.first.has(pid)) {
        if (side === 'postgres') {
          const database = backendDatabase(pid);
          if (database !== undefined && database !== this.sources.database) {
            this.others.add(pid);
            continue;
          }
        }
        this.first.set(pid, { side, ticks: atStart ? stat.ticks : 0 });
      }
      this.last.set(pid, stat.ticks);
    }
  }

  private totals(): CpuMs {
    const sum = { service: 0, postgres: 0 };
    for (const [pid, { side, ticks }] of this.first) sum[side] += (this.last.get(pid) ?? ticks) - ticks;
    return {
      serviceMs: sum.service / ticksPerMs,
      postgresMs: this.sources.postmasterPid === undefined ? null : sum.postgres / ticksPerMs,
    };
  }

  /** Takes a last sample and stops: the CPU ms of each side since the meter started. */
  stop(): CpuMs {
    clearInterval(this.timer);
    this.sample(false);
    return this.totals();
  }
}
