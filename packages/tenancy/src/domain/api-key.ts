import { createHash, randomBytes } from 'node:crypto';
import type { ApplicationType } from '@tokenvault/contracts';

const prefixes: Record<ApplicationType, string> = { private: 'prv', public: 'pub', management: 'mgt' };
const keyPattern = /^tv_(prv|pub|mgt)_[A-Za-z0-9_-]{43}$/;

/** 256 random bits, prefixed by type so a leaked key is recognisable (and scannable) as ours. */
export function generateApiKey(type: ApplicationType): string {
  return `tv_${prefixes[type]}_${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function looksLikeApiKey(value: string): boolean {
  return keyPattern.test(value);
}
