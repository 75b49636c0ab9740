/** A started process role: close() stops it gracefully (what runUntilSignalled calls on SIGTERM). */
export interface StartedRole {
  close(): Promise<void>;
}
