const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An own property, even for keys like `__proto__` that plain assignment would not create. */
const setOwn = (into: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });

/**
 * JSON merge patch (RFC 7396): an object patch merges into the target key by key, `null`
 * removing a key, recursively; any other patch (array, string, number, boolean) replaces the
 * target. The target is not modified. Iterative over the patch, so a deep patch cannot exhaust
 * the stack.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const root: Record<string, unknown> = isObject(target) ? { ...target } : {};
  const pending: { into: Record<string, unknown>; patch: Record<string, unknown> }[] = [
    { into: root, patch },
  ];
  while (pending.length) {
    const { into, patch: current } = pending.pop()!;
    for (const [key, value] of Object.entries(current)) {
      if (value === null) {
        delete into[key];
      } else if (isObject(value)) {
        const existing = Object.hasOwn(into, key) ? into[key] : undefined;
        const merged: Record<string, unknown> = isObject(existing) ? { ...existing } : {};
        setOwn(into, key, merged);
        pending.push({ into: merged, patch: value });
      } else {
        setOwn(into, key, value);
      }
    }
  }
  return root;
}
