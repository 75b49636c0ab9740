import { describe, expect, it } from 'vitest';
import { problemThrownBy } from '@tokenvault/platform/testing';
import {
  answered,
  requestMessage,
  requestOfMessage,
  responseMessage,
  responseOfMessage,
} from './stage-messages.ts';

describe('a request as a stage sees it and back', () => {
  it('gives a JSON body as its value and forwards an object answer as JSON', () => {
    const message = requestMessage({
      headers: { 'x-a': '1' },
      kind: 'json',
      body: { card: { number: '4' } },
    });
    expect(message).toEqual({ headers: { 'x-a': '1' }, body: { card: { number: '4' } } });
    expect(requestOfMessage('json', { headers: { 'x-a': '1' }, body: { card: 'tok' } }, 'stage')).toEqual({
      headers: { 'x-a': '1' },
      kind: 'json',
      body: { card: 'tok' },
    });
  });

  it('gives form fields as an object and re-encodes an object answer as fields (non-text values as JSON)', () => {
    const message = requestMessage({
      headers: {},
      kind: 'form',
      body: [
        ['card[number]', '4242'],
        ['amount', '10'],
      ],
    });
    expect(message.body).toEqual({ 'card[number]': '4242', amount: '10' });
    expect(
      requestOfMessage('form', { headers: {}, body: { card: 'tok', amount: 10 } }, 'stage').body,
    ).toEqual([
      ['card', 'tok'],
      ['amount', '10'],
    ]);
  });

  it('gives bytes as base64 and takes a string answer back as base64 bytes', () => {
    const bytes = Buffer.from([0, 1, 254, 255]);
    const message = requestMessage({ headers: {}, kind: 'bytes', body: bytes });
    expect(message.body).toBe(bytes.toString('base64'));
    expect(requestOfMessage('bytes', message, 'stage')).toEqual({ headers: {}, kind: 'bytes', body: bytes });
  });

  it('sends a string answer as it is, whatever the request’s kind, and no body for null', () => {
    expect(requestOfMessage('json', { headers: {}, body: '<xml/>' }, 'stage')).toEqual({
      headers: {},
      kind: 'text',
      body: '<xml/>',
    });
    expect(requestOfMessage('json', { headers: {}, body: null }, 'stage').body).toBeUndefined();
  });

  it('never forwards the service’s own, hop-by-hop or host headers a stage answers; names are lower-cased', () => {
    const request = requestOfMessage(
      'json',
      {
        headers: {
          'SVC-API-KEY': 'k',
          'svc-proxy-key': 'p',
          Host: 'x',
          Connection: 'close',
          'X-Kept': 'yes',
          'x-n': 5,
        } as unknown as Record<string, string>,
      },
      'stage',
    );
    expect(request.headers).toEqual({ 'x-kept': 'yes', 'x-n': '5' });
  });

  it('refuses headers that are not text with a 422 naming the stage and the header', () => {
    const refused = problemThrownBy(() =>
      requestOfMessage(
        'json',
        { headers: { 'x-object': { a: 1 } as unknown as string } },
        'request_transforms[0]',
      ),
    );
    expect(refused.status).toBe(422);
    expect(refused.detail).toContain('request_transforms[0]');
    expect(refused.detail).toContain('x-object');
  });

  it('refuses a header name or value HTTP does not take with a 422 that quotes no name it refused', () => {
    const card = '4242 4242 4242 4242';
    const refusedName = problemThrownBy(() =>
      requestOfMessage('json', { headers: { [`x card ${card}`]: 'yes' } }, 'request_transforms[0]'),
    );
    expect(refusedName.status).toBe(422);
    expect(refusedName.detail).toContain('request_transforms[0]');
    expect(refusedName.detail).not.toContain(card);
    for (const value of [`declined\n${card}`, `declined ${card}\u2028`, 'nul\u0000']) {
      const refusedValue = problemThrownBy(() =>
        responseOfMessage(200, 'json', { headers: { 'x-card': value } }, 'response_transforms[0]'),
      );
      expect(refusedValue.status, value).toBe(422);
      expect(refusedValue.detail).toContain('x-card');
      expect(refusedValue.detail).not.toContain(card);
    }
    // Latin-1 text and tabs are HTTP's: kept.
    expect(
      requestOfMessage('json', { headers: { 'x-name': 'Zoë\tand co' } }, 'request_transforms[0]').headers,
    ).toEqual({ 'x-name': 'Zoë\tand co' });
  });
});

describe('a stage’s answer applied', () => {
  it('replaces the parts it answers and keeps the others (a body of null is an empty body)', () => {
    const message = { headers: { 'x-a': '1' }, body: { a: 1 } };
    expect(answered(message, {}, 'stage')).toEqual(message);
    expect(answered(message, { body: { b: 2 } }, 'stage')).toEqual({
      headers: { 'x-a': '1' },
      body: { b: 2 },
    });
    expect(answered(message, { headers: { 'X-B': '2' }, body: null }, 'stage')).toEqual({
      headers: { 'x-b': '2' },
      body: null,
    });
  });
});

describe('a destination’s answer as a stage sees it and back', () => {
  it('parses a JSON answer and keeps the status', () => {
    const { kind, message } = responseMessage({
      status: 402,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"declined":true}'),
    });
    expect(kind).toBe('json');
    expect(message.body).toEqual({ declined: true });
    const response = responseOfMessage(402, kind, { ...message, body: { declined: 'yes' } }, 'stage');
    expect(response.status).toBe(402);
    expect(response.body.toString('utf8')).toBe('{"declined":"yes"}');
  });

  it('reads a JSON answer that does not parse as text', () => {
    const { kind, message } = responseMessage({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{not json'),
    });
    expect(kind).toBe('text');
    expect(message.body).toBe('{not json');
    expect(responseOfMessage(200, kind, message, 'stage').body.toString('utf8')).toBe('{not json');
  });

  it('an empty answer stays empty', () => {
    const { kind, message } = responseMessage({ status: 204, headers: {}, body: Buffer.alloc(0) });
    expect(message.body).toBeUndefined();
    expect(responseOfMessage(204, kind, message, 'stage').body.length).toBe(0);
  });
});
