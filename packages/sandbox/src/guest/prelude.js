// Runs inside every new sandbox context, before the tenant's code (compiled once per isolate).
// It is guest-side code: it sees only what the context sees. The host set `__tv_host` (a plain
// ivm.Callback, arguments copied) on the global just before this script; the script captures it
// and deletes it. Its completion value is the `control` function, which the host holds as a
// Reference and which is never reachable from the global. Everything it needs later is captured
// here, so a tenant who tampers with built-ins only breaks its own run.
(function prelude() {
  'use strict';
  const g = globalThis;
  const host = g.__tv_host;
  delete g.__tv_host;

  const SDK_MODULE = '@basis-theory/basis-theory-reactor-formulas-sdk-js';
  const MAX_MESSAGE = 4096;
  const { stringify, parse } = JSON;
  const { defineProperty, freeze, keys: objectKeys } = Object;
  const { isArray } = Array;
  const { apply } = Reflect;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const StringCtor = String;
  const MapCtor = Map;
  const WeakMapCtor = WeakMap;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const stringSlice = String.prototype.slice;
  const stringSplit = String.prototype.split;
  const stringCharCodeAt = String.prototype.charCodeAt;
  const arrayMap = Array.prototype.map;
  const promiseThen = Promise.prototype.then;

  function toStr(value) {
    try {
      if (typeof value === 'string') return value;
      if (value !== null && typeof value === 'object') return stringify(value) ?? StringCtor(value);
      return StringCtor(value);
    } catch {
      return 'Invalid value';
    }
  }

  function truncate(s) {
    return s.length > MAX_MESSAGE ? apply(stringSlice, s, [0, MAX_MESSAGE]) : s;
  }

  function toStringArray(value) {
    if (isArray(value)) return apply(arrayMap, value, [(v) => toStr(v)]);
    return [toStr(value)];
  }

  // The anchor's rule: a string → {error: [s]}, an array → {error: [...]}, an Error →
  // {error: [message]}, an object → per property, each value a string[].
  function normalizeErrors(errors) {
    if (errors === undefined || errors === null) return undefined;
    if (typeof errors === 'string') return { error: [errors] };
    if (isArray(errors)) return { error: toStringArray(errors) };
    if (errors instanceof ErrorCtor) return { error: [toStr(errors.message)] };
    if (typeof errors === 'object') {
      const out = {};
      const props = objectKeys(errors);
      for (let i = 0; i < props.length; i++) {
        const prop = props[i];
        const value = errors[prop];
        if (value === undefined || value === null) continue;
        defineProperty(out, prop, { value: toStringArray(value), enumerable: true, writable: true });
      }
      return out;
    }
    return { error: [toStr(errors)] };
  }

  // Instances created by the SDK classes below: error → {name, status}. Names and statuses come
  // from here, never from properties a tenant can overwrite.
  const brand = new WeakMapCtor();
  const sdk = {};
  const definitions = [
    ['BadRequestError', 400, 'Bad Request'],
    ['InvalidReactorConfigurationError', 400, 'Invalid Reactor Configuration'],
    ['AuthenticationError', 401, 'Authentication Failed'],
    ['InvalidPaymentMethodError', 402, 'Invalid Payment Method'],
    ['AuthorizationError', 403, 'Forbidden'],
    ['RateLimitError', 429, 'Rate Limit Exceeded'],
    ['ReactorRuntimeError', 500, 'Reactor Runtime Error'],
    ['ServiceUnavailableError', 503, 'Service Unavailable'],
  ];
  for (let i = 0; i < definitions.length; i++) {
    const [name, status, fallback] = definitions[i];
    const SdkError = class extends ErrorCtor {
      // new X(message?, errors?); like the anchor's SDK, a lone non-string argument is `errors`.
      constructor(message, errors) {
        if (
          errors === undefined &&
          message !== undefined &&
          message !== null &&
          typeof message !== 'string'
        ) {
          errors = message;
          message = undefined;
        }
        super(message === undefined || message === null ? fallback : toStr(message));
        defineProperty(this, 'name', { value: name, writable: true, configurable: true });
        this.status = status;
        const normalized = normalizeErrors(errors);
        if (normalized !== undefined) this.errors = normalized;
        apply(weakSet, brand, [this, { name, status }]);
      }
    };
    defineProperty(SdkError, 'name', { value: name });
    sdk[name] = SdkError;
    defineProperty(g, name, { value: SdkError, writable: true, configurable: true });
  }
  freeze(sdk);

  const module = { exports: {} };
  g.module = module;
  g.exports = module.exports;
  g.require = function require(name) {
    if (name === SDK_MODULE) return sdk;
    const error = new ErrorCtor(`Cannot find module '${toStr(name)}'`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  };

  function errorOf(thrown) {
    try {
      const branded =
        thrown !== null && typeof thrown === 'object' ? apply(weakGet, brand, [thrown]) : undefined;
      if (branded !== undefined) {
        const out = {
          __proto__: null,
          name: branded.name,
          status: branded.status,
          message: truncate(toStr(thrown.message)),
        };
        const errors = normalizeErrors(thrown.errors);
        if (errors !== undefined) out.errors = errors;
        return out;
      }
      let message = 'Reactor Runtime Error';
      if (typeof thrown === 'string' && thrown !== '') message = thrown;
      else if (thrown instanceof ErrorCtor && thrown.message) message = toStr(thrown.message);
      return { __proto__: null, name: 'ReactorRuntimeError', status: 500, message: truncate(message) };
    } catch {
      return { __proto__: null, name: 'ReactorRuntimeError', status: 500, message: 'Reactor Runtime Error' };
    }
  }

  function runtimeError(message) {
    return { __proto__: null, name: 'ReactorRuntimeError', status: 500, message };
  }

  // A lower bound of the JSON size of `value` without building it (string lengths are O(1) even
  // for ropes), so a 100 MB result is refused before JSON.stringify flattens it.
  function exceedsLowerBound(value, limit) {
    let size = 0;
    let visited = 0;
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (++visited > 1e6) return false;
      if (typeof v === 'string') size += v.length + 2;
      else if (v !== null && typeof v === 'object') {
        if (visited > 1 && v === value) return false; // a cycle: JSON.stringify reports it
        const props = objectKeys(v);
        size += 2;
        for (let i = 0; i < props.length; i++) {
          const prop = props[i];
          if (!isArray(v)) size += prop.length + 3;
          stack.push(v[prop]);
        }
      } else size += 1;
      if (size > limit) return true;
    }
    return false;
  }

  function utf8Length(s, limit) {
    if (s.length > limit) return s.length;
    if (s.length * 3 <= limit) return s.length;
    let bytes = 0;
    for (let i = 0; i < s.length; i++) {
      const c = apply(stringCharCodeAt, s, [i]);
      if (c < 0x80) bytes += 1;
      else if (c < 0x800) bytes += 2;
      else if (c >= 0xd800 && c <= 0xdbff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    }
    return bytes;
  }

  let maxBytes = 0;
  let nextCallId = 0;
  const pending = new MapCtor();

  function callService(method, args) {
    return new PromiseCtor((resolve, reject) => {
      let json;
      try {
        json = stringify(args);
      } catch {
        reject(new TypeErrorCtor(`Arguments of ${method} must be JSON-serialisable`));
        return;
      }
      if (utf8Length(json, maxBytes) > maxBytes) {
        reject(new TypeErrorCtor(`Arguments of ${method} exceed ${maxBytes} bytes`));
        return;
      }
      const id = ++nextCallId;
      apply(mapSet, pending, [id, { resolve, reject }]);
      host('svc', id, method, json);
    });
  }

  function makeSvc(methods) {
    if (methods === null) return null;
    const root = {};
    for (let i = 0; i < methods.length; i++) {
      const method = methods[i];
      const parts = apply(stringSplit, method, ['.']);
      let node = root;
      for (let j = 0; j < parts.length - 1; j++) {
        const part = parts[j];
        if (node[part] === undefined) node[part] = {};
        node = node[part];
      }
      node[parts[parts.length - 1]] = (...args) => callService(method, args);
    }
    return root;
  }

  function settle(id, ok, payload) {
    const waiter = apply(mapGet, pending, [id]);
    if (waiter === undefined) return;
    apply(mapDelete, pending, [id]);
    if (ok) {
      waiter.resolve(payload === undefined ? undefined : parse(payload));
      return;
    }
    const info = parse(payload);
    const error = new ErrorCtor(info.message);
    defineProperty(error, 'name', { value: 'BasisTheoryApiError', writable: true, configurable: true });
    error.status = info.status;
    if (info.data !== undefined) error.data = info.data;
    waiter.reject(error);
  }

  // The run itself: resolves to the outcome as a JSON string whose UTF-8 size is at most `limit`
  // bytes: nothing bigger ever leaves the isolate.
  async function execute(argsJson, configurationJson, methods, limit) {
    maxBytes = limit;
    let outcome;
    try {
      const fn = module.exports;
      if (typeof fn !== 'function') {
        throw new sdk.ReactorRuntimeError(
          'Reactor code must export a function: module.exports = async function (req) {…}',
        );
      }
      const req = {
        args: argsJson === undefined ? undefined : parse(argsJson),
        configuration: configurationJson === undefined ? undefined : parse(configurationJson),
        svc: makeSvc(methods),
      };
      const result = await fn(req);
      if (result === null || typeof result !== 'object' || isArray(result)) {
        outcome = { __proto__: null, ok: false, error: runtimeError('Reactor must return an object') };
      } else if (exceedsLowerBound(result, limit)) {
        outcome = {
          __proto__: null,
          ok: false,
          error: runtimeError(`Reactor result exceeded the output limit of ${limit} bytes`),
        };
      } else {
        let json;
        try {
          json = stringify(result);
        } catch {
          json = undefined;
        }
        if (json === undefined)
          outcome = {
            __proto__: null,
            ok: false,
            error: runtimeError('Reactor result is not JSON-serialisable'),
          };
        else if (utf8Length(json, limit) > limit) {
          outcome = {
            __proto__: null,
            ok: false,
            error: runtimeError(`Reactor result exceeded the output limit of ${limit} bytes`),
          };
        } else return `{"ok":true,"result":${json}}`;
      }
    } catch (thrown) {
      outcome = { __proto__: null, ok: false, error: errorOf(thrown) };
    }
    let json;
    try {
      json = stringify(outcome);
    } catch {
      json = undefined;
    }
    if (json === undefined || utf8Length(json, limit) > limit) {
      return stringify({
        __proto__: null,
        ok: false,
        error: runtimeError(`Reactor error exceeded the output limit of ${limit} bytes`),
      });
    }
    return json;
  }

  // The host's handle, with copied arguments: ('start', argsJson, configurationJson, methods,
  // limit) once, the outcome reported through `host('done', 0, json)`; ('settle', callId, ok,
  // payloadJson) for each answered service call.
  return function control(kind, a, b, c, d) {
    if (kind === 'settle') {
      settle(a, b, c);
      return;
    }
    if (kind !== 'start') return;
    apply(promiseThen, execute(a, b, c, d), [
      (json) => host('done', 0, json),
      () => host('done', 0, undefined),
    ]);
  };
})();
