/** Where commands, queries and expiry checks take "now" from: the system clock, or a test's controllable one. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
