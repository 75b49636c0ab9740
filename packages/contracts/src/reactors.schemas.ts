import { z } from 'zod';
import { timestamp, uuid } from './common.ts';
import { applicationTypes } from './applications.schemas.ts';

/**
 * Types a formula may declare for a configuration value or a request parameter. `object` and
 * `array` take a JSON object or array as it is (a card or bank token's data is an `object`).
 */
export const parameterTypes = ['string', 'number', 'boolean', 'object', 'array'] as const;
export type ParameterType = (typeof parameterTypes)[number];

/** Only tenant-private formulas exist here (Basis Theory's `official` ones do not). */
export const formulaTypes = ['private'] as const;
export type FormulaType = (typeof formulaTypes)[number];

/** The longest formula code, in characters (Basis Theory's published limit). */
export const maxFormulaCodeLength = 50_000;

/** Segments that would reach an object's prototype when used as property names. */
const reservedSegments = new Set(['__proto__', 'prototype', 'constructor']);

const declarationName = (dotted: boolean) =>
  z
    .string()
    .min(1, 'Must not be empty')
    .max(200, 'At most 200 characters')
    .superRefine((value, context) => {
      const segments = value.split('.');
      if (!dotted && segments.length > 1) {
        context.addIssue({ code: 'custom', message: 'Must hold no dot (configuration names do not nest)' });
      } else if (segments.some((segment) => segment === '' || /\s/.test(segment))) {
        context.addIssue({
          code: 'custom',
          message: 'Dot-separated segments must be non-empty and hold no white space',
        });
      } else if (segments.some((segment) => reservedSegments.has(segment))) {
        context.addIssue({ code: 'custom', message: '__proto__, prototype and constructor are reserved' });
      }
    });

const description = z.string().max(1000, 'At most 1000 characters').optional();
const parameterType = z.enum(parameterTypes);

const configurationDeclaration = z.strictObject({
  name: declarationName(false),
  description,
  type: parameterType,
});
export type ConfigurationDeclaration = z.output<typeof configurationDeclaration>;

const requestParameterDeclaration = z.strictObject({
  name: declarationName(true),
  description,
  type: parameterType,
  optional: z.boolean().default(false),
});
export type RequestParameterDeclaration = z.output<typeof requestParameterDeclaration>;

/**
 * Names are unique; for request parameters, a name that another one nests under (`user` and
 * `user.name`) is refused. Checked on the list, so it is reported alongside other fields' errors.
 */
const distinctNames =
  (nested: boolean) =>
  (declarations: { name: string }[], context: z.RefinementCtx): void => {
    const names = new Set<string>();
    declarations.forEach(({ name }, index) => {
      if (names.has(name))
        context.addIssue({ code: 'custom', path: [index, 'name'], message: 'Declared twice' });
      names.add(name);
    });
    if (!nested) return;
    declarations.forEach(({ name }, index) => {
      const segments = name.split('.');
      for (let length = 1; length < segments.length; length++) {
        const prefix = segments.slice(0, length).join('.');
        if (names.has(prefix)) {
          context.addIssue({
            code: 'custom',
            path: [index, 'name'],
            message: `Nests under ${prefix}, which is declared as a parameter of its own`,
          });
          return;
        }
      }
    });
  };

const formulaFields = {
  name: z.string().trim().min(1, 'Must not be empty').max(200, 'At most 200 characters'),
  description,
  type: z.enum(formulaTypes).default('private'),
  code: z
    .string()
    .min(1, 'Must not be empty')
    .max(maxFormulaCodeLength, `At most ${maxFormulaCodeLength} characters`),
  configuration: z.array(configurationDeclaration).max(100).superRefine(distinctNames(false)).default([]),
  request_parameters: z
    .array(requestParameterDeclaration)
    .max(100)
    .superRefine(distinctNames(true))
    .default([]),
};

/** Create and update take the same body: an update replaces every field. */
export const reactorFormulaBody = z.strictObject(formulaFields);
export type ReactorFormulaBody = z.output<typeof reactorFormulaBody>;

export const reactorFormulaSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  name: z.string(),
  description: z.string().optional(),
  type: z.enum(formulaTypes),
  code: z.string(),
  configuration: z.array(
    z.object({ name: z.string(), description: z.string().optional(), type: parameterType }),
  ),
  request_parameters: z.array(
    z.object({
      name: z.string(),
      description: z.string().optional(),
      type: parameterType,
      optional: z.boolean(),
    }),
  ),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type ReactorFormulaResponse = z.output<typeof reactorFormulaSchema>;

/** Configuration values: checked against the formula's declarations by the reactors context. */
const configuration = z.record(z.string(), z.unknown());
const reference = z.strictObject({ id: uuid });
const reactorName = z.string().trim().min(1, 'Must not be empty').max(200, 'At most 200 characters');

export const createReactorBody = z.strictObject({
  name: reactorName,
  configuration,
  formula: reference,
  application: reference.optional(),
});
export type CreateReactorBody = z.output<typeof createReactorBody>;

/** The formula is not part of it: a reactor's formula never changes. */
export const updateReactorBody = z.strictObject({
  name: reactorName,
  configuration,
  application: reference.optional(),
});
export type UpdateReactorBody = z.output<typeof updateReactorBody>;

/**
 * A merge patch of a reactor: the fields named change, the others stay; `application: null`
 * unbinds its application; a configuration given replaces the whole configuration.
 */
export const patchReactorBody = z.strictObject({
  name: reactorName.optional(),
  configuration: configuration.optional(),
  application: reference.nullable().optional(),
});
export type PatchReactorBody = z.output<typeof patchReactorBody>;

export const reactorApplicationSchema = z.object({
  id: uuid,
  name: z.string(),
  type: z.enum(applicationTypes),
});

export const reactorSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  name: z.string(),
  formula: reactorFormulaSchema,
  configuration: z.record(z.string(), z.unknown()),
  application: reactorApplicationSchema.optional(),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type ReactorResponse = z.output<typeof reactorSchema>;

/**
 * A name filter of a list: case-insensitive; `*` matches any run of characters and anchors the
 * pattern at both ends; a pattern without `*` matches names that contain it.
 */
export const nameFilter = z.string().min(1).max(200).optional();

/** `args` may mix plain values with `{{ <token id> }}` expressions; checked against the formula. */
export const invokeReactorBody = z.strictObject({ args: z.unknown().optional() });

/** What a reactor answered: `raw` as it returned it, `tokens` made from its `tokenize`. */
export const reactorRunResponseSchema = z.object({
  tokens: z.unknown().optional(),
  raw: z.unknown().optional(),
});

export const asyncReactorRequestSchema = z.object({ async_reactor_request_id: uuid });

export const reactorResultParams = z.object({ id: uuid, request_id: uuid });

export const asyncReactorResultSchema = z.object({
  async_reactor_request_id: uuid,
  status: z.enum(['pending', 'completed', 'failed']),
  /** When completed: the body the sync call would have answered. */
  result: reactorRunResponseSchema.optional(),
  /** When failed: the problem (RFC 9457) the sync call would have answered. */
  error: z.record(z.string(), z.unknown()).optional(),
});
