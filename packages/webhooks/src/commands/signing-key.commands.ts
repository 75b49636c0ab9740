import { randomUUID } from 'node:crypto';
import { aggregateStream, commandContext, commandHandler, type CommandHandler } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock, Principal } from '@tokenvault/platform';
import type { Vault } from '@tokenvault/vault';
import { signingKeyDecider, type SigningKeyCommand, type SigningKeyState } from '../domain/signing-key.ts';
import { signingKeySubject, streams, type WebhooksEvent } from '../domain/webhooks.events.ts';
import { newSigningSecret } from '../deliveries/signature.ts';

export interface SigningKeyDeps {
  store: EventStore;
  clock: Clock;
  vault: Pick<Vault, 'encrypt' | 'decrypt'>;
  /** How long a replaced key keeps signing beside the new one (WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS). */
  signingKeyOverlapSeconds: number;
}

type Rotated = Extract<WebhooksEvent, { type: 'WebhookSigningKeyRotated' }>;

/**
 * A tenant's webhook signing keys: one stream per tenant, each secret sealed under the tenant's
 * data key in its event (never in the clear at rest), opened only to answer it or to sign.
 */
export class SigningKeyCommands {
  private readonly deps: SigningKeyDeps;
  private readonly handle: CommandHandler<SigningKeyState, SigningKeyCommand, Rotated>;

  constructor(deps: SigningKeyDeps) {
    this.deps = deps;
    this.handle = commandHandler(deps.store, signingKeyDecider, (command) =>
      streams.signingKey(command.tenantId),
    );
  }

  private async decide(type: SigningKeyCommand['type'], principal: Principal, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const keyId = randomUUID();
    const secretCiphertext = await this.deps.vault.encrypt(
      acting.tenantId,
      signingKeySubject(keyId),
      newSigningSecret(),
    );
    return this.handle(
      { type, keyId, secretCiphertext, overlapSeconds: this.deps.signingKeyOverlapSeconds, ...acting },
      metadata,
    );
  }

  /** The tenant's first key, unless it has one: a webhook's deliveries are never unsigned. */
  async ensure(principal: Principal, correlationId: string): Promise<void> {
    const { state } = await aggregateStream(
      this.deps.store,
      streams.signingKey(principal.tenantId),
      signingKeyDecider,
    );
    if (state.keys.length === 0) await this.decide('CreateSigningKey', principal, correlationId);
  }

  /** The current secret (made at the first call when there is none). */
  async current(principal: Principal, correlationId: string): Promise<string> {
    await this.ensure(principal, correlationId);
    const [current] = await this.secrets(principal.tenantId);
    if (!current) throw new Error('no signing key after it was made');
    return current;
  }

  /** A new key; the replaced one signs beside it for the overlap window (signingKeyOverlapSeconds). */
  async rotate(principal: Principal, correlationId: string): Promise<string> {
    const outcome = await this.decide('RotateSigningKey', principal, correlationId);
    const current = outcome.state.keys[0];
    if (!current) throw new Error('no signing key after a rotation');
    return this.open(principal.tenantId, current.key_id, current.secret_ciphertext);
  }

  /** The secrets that sign now: the current one first, then those within their overlap window. */
  async secrets(tenantId: string): Promise<string[]> {
    const now = this.deps.clock.now().getTime();
    return (await this.signingSecrets(tenantId))
      .filter((key) => key.validUntilMs > now)
      .map((key) => key.secret);
  }

  /**
   * The secrets that sign now, each with the end of its overlap window (Infinity for the current
   * one): a sender that keeps them a few seconds drops a replaced one on time.
   */
  async signingSecrets(tenantId: string): Promise<{ secret: string; validUntilMs: number }[]> {
    const { state } = await aggregateStream(this.deps.store, streams.signingKey(tenantId), signingKeyDecider);
    const now = this.deps.clock.now().getTime();
    const valid = state.keys.filter((key) => !key.valid_until || Date.parse(key.valid_until) > now);
    return Promise.all(
      valid.map(async (key) => ({
        secret: await this.open(tenantId, key.key_id, key.secret_ciphertext),
        validUntilMs: key.valid_until ? Date.parse(key.valid_until) : Infinity,
      })),
    );
  }

  private async open(tenantId: string, keyId: string, ciphertext: string): Promise<string> {
    return (await this.deps.vault.decrypt(tenantId, signingKeySubject(keyId), ciphertext)) as string;
  }
}
