// Types of kafka.mjs, for the TypeScript that imports it (test setup, benchmark).
export declare const cacheDir: string;
export declare function fetchJars(options?: { quiet?: boolean }): string;
export declare function brokerDir(port: number): string;
export declare function freePort(): Promise<number>;
export declare function probe(port: number, timeoutMs?: number): Promise<boolean>;
export interface StartedBroker {
  bootstrap: string;
  pid: number;
  dir: string;
  /** False when a broker was already running from that folder (a no-op). */
  started: boolean;
}
export declare function startBroker(options?: {
  port?: number;
  controllerPort?: number;
  dir?: string;
  heap?: string;
  fresh?: boolean;
  timeoutMs?: number;
  quiet?: boolean;
}): Promise<StartedBroker>;
export declare function stopBroker(options?: {
  port?: number;
  dir?: string;
  timeoutMs?: number;
  remove?: boolean;
}): Promise<boolean>;
