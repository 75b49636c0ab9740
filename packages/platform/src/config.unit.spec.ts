import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, defaultHttpProcesses, loadConfig } from './config.ts';

describe('config', () => {
  it('has working defaults and derives PUBLIC_URL from PORT', () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
    const config = loadConfig({ PORT: '9000', MASTER_KEY_FILE: keyFile });
    expect(config).toMatchObject({
      PORT: 9000,
      PUBLIC_URL: 'http://localhost:9000',
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/tokenvault',
    });
    expect(Buffer.from(config.MASTER_KEY, 'base64')).toHaveLength(32);
    // The generated development key is kept, so a restart can still decrypt.
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(config.MASTER_KEY);
    expect(loadConfig({ MASTER_KEY_FILE: keyFile }).MASTER_KEY).toBe(config.MASTER_KEY);
  });

  it('runs an HTTP process per core but one, at least one, unless HTTP_PROCESSES says', () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
    expect([1, 2, 3, 8].map((cores) => defaultHttpProcesses(cores))).toEqual([1, 1, 2, 7]);
    expect(loadConfig({ MASTER_KEY_FILE: keyFile }).HTTP_PROCESSES).toBe(
      Math.max(1, availableParallelism() - 1),
    );
    expect(loadConfig({ MASTER_KEY_FILE: keyFile, HTTP_PROCESSES: '3' }).HTTP_PROCESSES).toBe(3);
    try {
      loadConfig({ MASTER_KEY_FILE: keyFile, HTTP_PROCESSES: '0' });
      expect.unreachable();
    } catch (error) {
      expect((error as ConfigError).issues.map((issue) => issue.split(':')[0])).toEqual(['HTTP_PROCESSES']);
    }
  });

  it('names every wrong variable', () => {
    try {
      loadConfig({ PORT: 'eighty', MASTER_KEY: 'short', DATABASE_APP_ROLE: 'Robert"); DROP' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const fields = (error as ConfigError).issues.map((issue) => issue.split(':')[0]).sort();
      expect(fields).toEqual(['DATABASE_APP_ROLE', 'MASTER_KEY', 'PORT']);
    }
  });

  it('refuses a setting under its former name, naming the one to set', () => {
    const keyFile = join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
    try {
      loadConfig({ MASTER_KEY_FILE: keyFile, LOG_SEALING: 'off', LOG_SEAL_INTERVAL_MS: '50' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).issues).toEqual([
        'LOG_SEALING: renamed LOG_TREE_HEADS; set LOG_TREE_HEADS instead',
        'LOG_SEAL_INTERVAL_MS: renamed LOG_TREE_HEAD_INTERVAL_MS; set LOG_TREE_HEAD_INTERVAL_MS instead',
      ]);
    }
    expect(
      loadConfig({ MASTER_KEY_FILE: keyFile, LOG_TREE_HEADS: 'off', LOG_TREE_HEAD_INTERVAL_MS: '50' }),
    ).toMatchObject({ LOG_TREE_HEADS: 'off', LOG_TREE_HEAD_INTERVAL_MS: 50 });
  });

  it('requires a real master key in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', MASTER_KEY_FILE: '/nonexistent/key' })).toThrow(
      ConfigError,
    );
  });
});

describe('config: EVENTSTORE_URL', () => {
  const keyFile = () => join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
  const url = 'kurrentdb://127.0.0.1:2113?tls=false';

  it('is unset by default: events in PostgreSQL, projections as configured', () => {
    const config = loadConfig({ MASTER_KEY_FILE: keyFile() });
    expect(config.EVENTSTORE_URL).toBeUndefined();
    expect(config.PROJECTIONS).toBe('inline');
  });

  it('forces async projections when set', () => {
    expect(loadConfig({ MASTER_KEY_FILE: keyFile(), EVENTSTORE_URL: url }).PROJECTIONS).toBe('async');
    expect(
      loadConfig({ MASTER_KEY_FILE: keyFile(), EVENTSTORE_URL: url, PROJECTIONS: 'async' }).PROJECTIONS,
    ).toBe('async');
  });

  it('refuses PROJECTIONS=inline with it, naming both', () => {
    const error = (() => {
      try {
        loadConfig({ MASTER_KEY_FILE: keyFile(), EVENTSTORE_URL: url, PROJECTIONS: 'inline' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toEqual([
      expect.stringMatching(/^PROJECTIONS: inline .*EVENTSTORE_URL/),
    ]);
  });

  it('must be a KurrentDB connection string', () => {
    expect(() => loadConfig({ MASTER_KEY_FILE: keyFile(), EVENTSTORE_URL: 'http://127.0.0.1:2113' })).toThrow(
      /EVENTSTORE_URL: a kurrentdb:\/\//,
    );
  });
});

describe('master keyring config', () => {
  const key = () => Buffer.alloc(32, Math.floor(Math.random() * 255)).toString('base64');

  it('MASTER_KEYS names versions (first primary) and keys the derived secrets by the primary', () => {
    const [a, b] = [key(), key()];
    const config = loadConfig({ MASTER_KEYS: `b:${b},a:${a}`, NODE_ENV: 'production' });
    expect(config.MASTER_KEYS).toBe(`b:${b},a:${a}`);
    expect(config.MASTER_KEY).toBe(b);
  });

  it('refuses MASTER_KEY and MASTER_KEYS together, keys of the wrong size and repeated ids', () => {
    const a = key();
    expect(() => loadConfig({ MASTER_KEY: a, MASTER_KEYS: `a:${a}` })).toThrow(/not both/);
    expect(() => loadConfig({ MASTER_KEYS: `a:${Buffer.alloc(16).toString('base64')}` })).toThrow(/32 bytes/);
    expect(() => loadConfig({ MASTER_KEYS: `a:${a},a:${a}` })).toThrow(/distinct/);
  });

  it('KEK_PROVIDER=pkcs11 needs its module, token, key labels and one PIN source', () => {
    try {
      loadConfig({ KEK_PROVIDER: 'pkcs11', MASTER_KEY: key() });
      expect.unreachable();
    } catch (error) {
      expect((error as ConfigError).issues.map((issue) => issue.split(':')[0]).sort()).toEqual([
        'PKCS11_KEY_LABELS',
        'PKCS11_MODULE',
        'PKCS11_PIN',
        'PKCS11_TOKEN_LABEL',
      ]);
    }
  });
});

describe('config: TRUST_PROXY', () => {
  const keyFile = () => join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
  const trustOf = (value?: string) =>
    loadConfig({ MASTER_KEY_FILE: keyFile(), ...(value === undefined ? {} : { TRUST_PROXY: value }) })
      .TRUST_PROXY;

  it('trusts no proxy unless told: unset or empty', () => {
    expect(trustOf()).toBe(false);
    expect(trustOf('')).toBe(false);
  });

  it('is a hop count, or the proxies’ IPs and CIDRs', () => {
    expect(trustOf('1')).toBe(1);
    expect(trustOf('10.0.0.0/8, 192.168.1.7,fd00::/8')).toEqual(['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
  });

  it('refuses anything else, naming the variable', () => {
    for (const value of ['yes', 'true', '10.0.0.0/33', '1,2', 'loopback', '10.0.0.1,', '-1']) {
      expect(() => trustOf(value), value).toThrow(/TRUST_PROXY: a hop count/);
    }
  });
});

describe('config: CORS_ALLOWED_ORIGINS', () => {
  const keyFile = () => join(mkdtempSync(join(tmpdir(), 'tv-')), 'master.key');
  const originsOf = (value?: string) =>
    loadConfig({
      MASTER_KEY_FILE: keyFile(),
      ...(value === undefined ? {} : { CORS_ALLOWED_ORIGINS: value }),
    }).CORS_ALLOWED_ORIGINS;

  it('allows no origin unless told', () => {
    expect(originsOf()).toEqual([]);
    expect(originsOf('')).toEqual([]);
  });

  it('is a list of origins as browsers send them', () => {
    expect(originsOf('https://shop.example, http://localhost:3000')).toEqual([
      'https://shop.example',
      'http://localhost:3000',
    ]);
  });

  it('refuses a wildcard, a path, a trailing slash or another scheme, naming the variable', () => {
    for (const value of [
      '*',
      'https://shop.example/',
      'https://shop.example/pay',
      'shop.example',
      'ftp://x.example',
      'https://a.example,',
    ]) {
      expect(() => originsOf(value), value).toThrow(/CORS_ALLOWED_ORIGINS: origins, comma-separated/);
    }
  });
});
