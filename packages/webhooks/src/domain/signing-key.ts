import type { Decider } from '@tokenvault/cqrs';
import type { WebhooksEvent } from './webhooks.events.ts';

export interface SigningKeyView {
  key_id: string;
  secret_ciphertext: string;
  /** Absent: the current key; otherwise the end of its overlap window. */
  valid_until?: string;
}

/** A tenant's signing keys: the current one first, then those still in their overlap window. */
export interface SigningKeyState {
  keys: SigningKeyView[];
}

export type SigningKeyCommand = {
  tenantId: string;
  actorId: string;
  now: string;
  /** The new key, its secret already sealed by the handler. */
  keyId: string;
  secretCiphertext: string;
  /** How long the replaced key keeps signing beside the new one (WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS). */
  overlapSeconds: number;
} & (
  | { type: 'CreateSigningKey' } // the first key; nothing when there is one
  | { type: 'RotateSigningKey' }
);

type Rotated = Extract<WebhooksEvent, { type: 'WebhookSigningKeyRotated' }>;

export const signingKeyDecider: Decider<SigningKeyState, SigningKeyCommand, Rotated> = {
  initialState: () => ({ keys: [] }),
  evolve(state, event) {
    const d = event.data;
    const previous = state.keys.find((key) => key.key_id === d.previous_key_id);
    return {
      keys: [
        { key_id: d.key_id, secret_ciphertext: d.secret_ciphertext },
        ...(previous && d.previous_valid_until ? [{ ...previous, valid_until: d.previous_valid_until }] : []),
      ],
    };
  },
  decide(command, state) {
    const current = state.keys[0];
    if (command.type === 'CreateSigningKey' && current) return [];
    return [
      {
        type: 'WebhookSigningKeyRotated',
        data: {
          tenant_id: command.tenantId,
          key_id: command.keyId,
          secret_ciphertext: command.secretCiphertext,
          ...(current
            ? {
                previous_key_id: current.key_id,
                previous_valid_until: new Date(
                  Date.parse(command.now) + command.overlapSeconds * 1000,
                ).toISOString(),
              }
            : {}),
          rotated_by: command.actorId,
          rotated_at: command.now,
        },
      },
    ];
  },
};
