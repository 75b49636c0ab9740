/**
 * Runs `run` every `intervalMs` until stopped, one run at a time: a tick that finds the previous
 * run still going is skipped, not queued. A run's failure goes to `onError` and the next tick runs
 * again. The timer does not keep the process alive; `stop()` waits for the run in flight.
 */
export function startPeriodicTask(options: {
  run: () => Promise<void>;
  intervalMs: number;
  onError: (error: unknown) => void;
}): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = options
      .run()
      .catch(options.onError)
      .finally(() => {
        running = null;
      });
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
