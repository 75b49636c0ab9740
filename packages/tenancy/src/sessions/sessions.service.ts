import { randomUUID } from 'node:crypto';
import { badRequest, forbidden, gone, unauthorized, type Pool } from '@tokenvault/platform';
import type { CurrentSessionResponse } from '@tokenvault/contracts';
import type { Clock } from '@tokenvault/platform';
import { newSessionToken, sha256Hex, type SignInLinks } from './sign-in-links.ts';

export interface SessionSettings {
  /** A session ends after this long without a request. */
  idleTimeoutMs: number;
  /** ...and this long after sign-in, however active. */
  absoluteTimeoutMs: number;
  /** How long a sign-in link works (15 minutes). */
  linkTtlMs?: number;
  /** How often a session's last-seen time (its idle clock) is moved at most. */
  touchEveryMs?: number;
}

/** A live session as a process knows it. */
export interface ActiveSession {
  id: string;
  userId: string;
  expiresAt: Date;
}

export interface SessionMembership {
  tenantId: string;
  settings: Record<string, string>;
}

/** A live link, of another browser (or sent without the cookie of the browser that asked for it). */
export const linkOfAnotherBrowser = () =>
  forbidden(
    'This sign-in link was requested from another browser or device: open it there, or request a new link from this one.',
    { type: 'sign-in-link-other-browser' },
  );

export const linkGone = () =>
  gone('This sign-in link was already used, replaced by a newer one, or has expired.');

const sessionEnded = () => unauthorized('The session has ended or is not valid: sign in again.');

/**
 * Members' sign-in links and sessions, in two plain tables of the owner role (see
 * docs/decisions.md: they belong to a user, not to a tenant, so they are not events). Only
 * SHA-256 digests of link and session tokens are stored.
 */
export class Sessions {
  private readonly pool: Pool;
  private readonly links: SignInLinks;
  private readonly clock: Clock;
  private readonly settings: Required<SessionSettings>;

  constructor(options: { pool: Pool; links: SignInLinks; clock: Clock; settings: SessionSettings }) {
    this.pool = options.pool;
    this.links = options.links;
    this.clock = options.clock;
    this.settings = { linkTtlMs: 15 * 60_000, touchEveryMs: 60_000, ...options.settings };
  }

  /** How long a sign-in link works. */
  get linkTtlMs(): number {
    return this.settings.linkTtlMs;
  }

  /**
   * A new sign-in link for the user of this address, usable only with this browser's nonce, and
   * replacing any earlier one of the same browser (links asked for elsewhere stay: a flood of
   * requests from another client never takes the member's own link away). Its id when the address
   * is a user's, undefined otherwise. One statement either way (the look-up, the sweep of the
   * user's used and expired links, the write), so an unknown address costs the same time as a
   * known one.
   */
  async requestLink(email: string, browserNonce: string): Promise<string | undefined> {
    const linkId = randomUUID();
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.settings.linkTtlMs);
    const result = await this.pool.query<{ id: string }>(
      `WITH target AS (
         SELECT id FROM users WHERE lower(email) = lower($1) ORDER BY created_at, id LIMIT 1
       ), swept AS (
         DELETE FROM sign_in_links l USING target
          WHERE l.user_id = target.id AND l.browser_hash <> $5 AND (l.used_at IS NOT NULL OR l.expires_at <= $6)
       )
       INSERT INTO sign_in_links (user_id, browser_hash, id, token_hash, expires_at)
         SELECT id, $5, $2, $3, $4 FROM target
       ON CONFLICT (user_id, browser_hash) DO UPDATE
         SET id = excluded.id, token_hash = excluded.token_hash, expires_at = excluded.expires_at, used_at = NULL
       RETURNING id`,
      [email, linkId, sha256Hex(this.links.token(linkId)), expiresAt, sha256Hex(browserNonce), now],
    );
    return result.rows[0]?.id;
  }

  /** What the sign-in e-mail of a link needs, while the link is still usable. */
  async mailOf(linkId: string): Promise<{ email: string; token: string; expiresAt: string } | undefined> {
    const result = await this.pool.query<{ email: string; expires_at: Date }>(
      `SELECT u.email, l.expires_at FROM sign_in_links l JOIN users u ON u.id = l.user_id
        WHERE l.id = $1 AND l.used_at IS NULL AND l.expires_at > $2`,
      [linkId, this.clock.now()],
    );
    const row = result.rows[0];
    return (
      row && { email: row.email, token: this.links.token(linkId), expiresAt: row.expires_at.toISOString() }
    );
  }

  /**
   * Uses a sign-in link (once), in the browser that asked for it (its nonce), and starts a
   * session: its token is returned here only. A live link sent without that browser's nonce is
   * refused and stays usable where it was asked for.
   */
  async signIn(
    token: string,
    browserNonce: string | undefined,
  ): Promise<{ token: string; session: CurrentSessionResponse }> {
    const linkId = this.links.parse(token);
    if (!linkId)
      throw badRequest('This is not a valid sign-in link.', { 'body.token': ['Not a valid link'] });
    const now = this.clock.now();
    const used = await this.pool.query<{ user_id: string }>(
      `UPDATE sign_in_links SET used_at = $3
        WHERE id = $1 AND token_hash = $2 AND used_at IS NULL AND expires_at > $3 AND browser_hash = $4
        RETURNING user_id`,
      [linkId, sha256Hex(token), now, browserNonce === undefined ? null : sha256Hex(browserNonce)],
    );
    const userId = used.rows[0]?.user_id;
    if (!userId) {
      const live = await this.pool.query(
        `SELECT 1 FROM sign_in_links WHERE id = $1 AND token_hash = $2 AND used_at IS NULL AND expires_at > $3`,
        [linkId, sha256Hex(token), now],
      );
      throw live.rowCount ? linkOfAnotherBrowser() : linkGone();
    }
    const sessionToken = newSessionToken();
    const expiresAt = new Date(now.getTime() + this.settings.absoluteTimeoutMs);
    await this.pool.query(
      `INSERT INTO sessions (id, token_hash, user_id, created_at, last_seen_at, expires_at)
         VALUES ($1, $2, $3, $4, $4, $5)`,
      [randomUUID(), sha256Hex(sessionToken), userId, now, expiresAt],
    );
    return { token: sessionToken, session: await this.describe({ userId, expiresAt }) };
  }

  /**
   * The live session of a token (or 401), with the user's memberships (of one tenant when given;
   * at most two rows: one is the answer, two means the tenant must be named). One query, on every
   * request and in every process: a sign-out, a member's removal or a tenant's deletion is seen by
   * the very next request, with no cache to notify. The idle clock (last_seen_at) is moved at most
   * once a minute.
   */
  async resolve(
    token: string,
    tenantId?: string,
  ): Promise<{ session: ActiveSession; memberships: SessionMembership[] }> {
    const now = this.clock.now();
    const result = await this.pool.query<{
      id: string;
      user_id: string;
      expires_at: Date;
      last_seen_at: Date;
      tenant_id: string | null;
      settings: Record<string, string> | null;
    }>(
      `SELECT s.id, s.user_id, s.expires_at, s.last_seen_at, m.tenant_id, t.settings
         FROM sessions s
         LEFT JOIN (tenant_members m JOIN tenants t ON t.id = m.tenant_id)
           ON m.user_id = s.user_id AND ($4::uuid IS NULL OR m.tenant_id = $4::uuid)
        WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $2
          AND s.last_seen_at > $2 - make_interval(secs => $3::double precision / 1000)
        LIMIT 2`,
      [sha256Hex(token), now, this.settings.idleTimeoutMs, tenantId ?? null],
    );
    const first = result.rows[0];
    if (!first) throw sessionEnded();
    if (now.getTime() - first.last_seen_at.getTime() > this.settings.touchEveryMs) {
      await this.pool.query('UPDATE sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2', [
        first.id,
        now,
      ]);
    }
    return {
      session: { id: first.id, userId: first.user_id, expiresAt: first.expires_at },
      memberships: result.rows.flatMap((row) =>
        row.tenant_id === null ? [] : [{ tenantId: row.tenant_id, settings: row.settings ?? {} }],
      ),
    };
  }

  /** Who the session is, and the tenants where the user is a member. */
  async describe({
    userId,
    expiresAt,
  }: {
    userId: string;
    expiresAt: Date;
  }): Promise<CurrentSessionResponse> {
    const [user, memberships] = await Promise.all([
      this.pool.query<{ id: string; email: string; first_name: string | null; last_name: string | null }>(
        'SELECT id, email, first_name, last_name FROM users WHERE id = $1',
        [userId],
      ),
      this.pool.query<{ tenant_id: string; tenant_name: string; role: 'OWNER' | 'ADMIN' }>(
        `SELECT m.tenant_id, t.name AS tenant_name, m.role FROM tenant_members m
           JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = $1 ORDER BY t.name, m.tenant_id`,
        [userId],
      ),
    ]);
    const row = user.rows[0];
    if (!row) throw sessionEnded();
    return {
      expires_at: expiresAt.toISOString(),
      user: {
        id: row.id,
        email: row.email,
        ...(row.first_name ? { first_name: row.first_name } : {}),
        ...(row.last_name ? { last_name: row.last_name } : {}),
      },
      memberships: memberships.rows,
    };
  }

  /** Sign-out: the next request with this session is refused, in every process. */
  async end(sessionId: string): Promise<void> {
    await this.pool.query('UPDATE sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL', [
      sessionId,
      this.clock.now(),
    ]);
  }

  /** Ends every session of a user (sign out everywhere). */
  async endAllOf(userId: string): Promise<void> {
    await this.pool.query('UPDATE sessions SET ended_at = $2 WHERE user_id = $1 AND ended_at IS NULL', [
      userId,
      this.clock.now(),
    ]);
  }
}
