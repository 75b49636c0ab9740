import type { ParameterType } from '@tokenvault/contracts';
import { isPlainObject } from '@tokenvault/expressions';

/** Whether a value already is of the declared type (no cast). */
export function hasType(value: unknown, type: ParameterType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return isPlainObject(value);
    case 'array':
      return Array.isArray(value);
  }
}

export const typeMessage = (type: ParameterType) =>
  type === 'array' || type === 'object' ? `Must be an ${type}` : `Must be a ${type}`;
