import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startPeriodicTask } from './periodic-task.ts';

describe('a periodic task', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('skips the ticks that find the previous run still going, and runs again after it', async () => {
    let finish = () => {};
    const run = vi.fn(() => new Promise<void>((resolve) => (finish = resolve)));
    const task = startPeriodicTask({ run, intervalMs: 100, onError: () => {} });
    await vi.advanceTimersByTimeAsync(350);
    expect(run).toHaveBeenCalledTimes(1);
    finish();
    await vi.advanceTimersByTimeAsync(100);
    expect(run).toHaveBeenCalledTimes(2);
    finish();
    await task.stop();
  });

  it('hands a failed run to onError and keeps ticking', async () => {
    const failure = new Error('sweep failed');
    const run = vi.fn().mockRejectedValueOnce(failure).mockResolvedValue(undefined);
    const onError = vi.fn();
    const task = startPeriodicTask({ run, intervalMs: 100, onError });
    await vi.advanceTimersByTimeAsync(200);
    expect(onError).toHaveBeenCalledExactlyOnceWith(failure);
    expect(run).toHaveBeenCalledTimes(2);
    await task.stop();
  });

  it('waits on stop for the run in flight, then runs no more', async () => {
    let finish = () => {};
    const run = vi.fn(() => new Promise<void>((resolve) => (finish = resolve)));
    const task = startPeriodicTask({ run, intervalMs: 100, onError: () => {} });
    await vi.advanceTimersByTimeAsync(100);
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    await vi.advanceTimersByTimeAsync(500);
    expect(run).toHaveBeenCalledTimes(1);
  });
});
