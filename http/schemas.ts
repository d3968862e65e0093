/**
 * Schemas from openapi.yaml, compiled by Fastify's own compilers (ajv for requests,
 * fast-json-stringify for replies), with the contract's options, and each compiled only when its
 * route first needs it: a contract-testing pipeline starts the server for every job, and most
 * jobs touch a few of the operations (B4).
 */
import AjvCompiler, { type ValidatorFactory } from "@fastify/ajv-compiler";
import { type SerializerFactory, SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import type { ValidateFunction } from "ajv";
import type { FastifyInstance, FastifyServerOptions } from "fastify";
import { isTimestamp } from "../domain/timestamps.ts";

type Compile<F> = (route: object) => F;
const ajvCompilers = AjvCompiler();
const serializerCompilers = SerializerSelector();

/** Fastify's own ajv compilers (same options, same formats), made lazy per route and part. */
function lazyValidators(external: unknown, options: unknown): Compile<unknown> {
  let compile: Compile<ValidateFunction> | undefined;
  return (route) => {
    let validate: ValidateFunction | undefined;
    const lazy = (data: unknown) => {
      compile ??= ajvCompilers(external as never, options as never) as Compile<ValidateFunction>;
      validate ??= compile(route);
      const valid = validate(data);
      lazy.errors = validate.errors;
      return valid;
    };
    lazy.errors = undefined as unknown;
    return lazy;
  };
}

/** Fastify's own fast-json-stringify serializers, compiled on the first reply that needs one. */
function lazySerializers(external: unknown, options: unknown): Compile<unknown> {
  let compile: Compile<(data: unknown) => string> | undefined;
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      compile ??= serializerCompilers(external as never, options as never) as unknown as Compile<
        (data: unknown) => string
      >;
      serialize ??= compile(route);
      return serialize(data);
    };
  };
}

/** The Fastify options that decide how schemas are compiled and what ajv accepts. */
export const schemaOptions = {
  schemaController: {
    compilersFactory: {
      buildValidator: lazyValidators as unknown as ValidatorFactory,
      buildSerializer: lazySerializers as unknown as SerializerFactory,
    },
  },
  ajv: {
    customOptions: {
      strict: true,
      allErrors: true,
      coerceTypes: false,
      removeAdditional: false,
      useDefaults: false,
      allowUnionTypes: true,
      // The schemas are openapi.yaml's, checked against the meta-schemas by npm test (the
      // OpenAPI validator and Redocly); checking them again at every start cost B4 ~25 ms.
      validateSchema: false,
    },
    onCreate: (ajv) => {
      // G6 is more liberal than RFC 3339 (no offset needed, space separator, seconds optional).
      ajv.addFormat("date-time", { type: "string", validate: isTimestamp });
    },
  },
} satisfies Partial<FastifyServerOptions>;

/** Every body is validated, whatever its Content-Type says (a text/plain body gets 415, not a pass). */
export function validateEveryBody(app: FastifyInstance) {
  app.addHook("onRoute", (route) => {
    const schema = route.schema as { body?: { content?: Record<string, { schema: unknown }> } } | undefined;
    const json = schema?.body?.content?.["application/json"]?.schema;
    if (schema && json) schema.body = json as never;
  });
}
