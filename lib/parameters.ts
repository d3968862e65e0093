/**
 * Query and path parameters of the read API, checked against openapi.yaml before any handler
 * runs (a preValidation hook of every route).
 *
 * A query string carries only strings, and Fastify's parser gives a repeated name as an array
 * (`?tag=a&tag=b` → ["a", "b"]) but a single one as a plain string (`?tag=a` → "a"). ajv could
 * coerce both (`coerceTypes: "array"`), but the option is per ajv instance and the same instance
 * checks request bodies, where the contract wants no coercion ("7" is not a number in an event).
 * So the query alone is normalised here, keyed off the route's schema: a parameter whose schema
 * is an array gets a lone value wrapped in one, an integer parameter written in digits becomes a
 * number. Anything else stays as sent, so that ajv reports it.
 *
 * The route's own compiled validators then check the path and the query, so that a failure
 * names the parameter as G2 wants it (`query.limit`, `path.session_id`), which Fastify's own
 * validation error does not say.
 */
import type { FastifyRequest } from "fastify";
import { ApiError, type ErrorDetail, MAX_DETAILS } from "../handlers/errors.ts";
import { type AjvError, detailsFromAjv } from "./validation.ts";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
}

const INTEGER = /^-?\d{1,15}$/;

function normaliseQuery(query: Record<string, unknown>, schema: Schema): void {
  for (const [name, value] of Object.entries(query)) {
    const type = schema.properties?.[name]?.type;
    if (type === "array" && !Array.isArray(value)) query[name] = [value];
    else if (type === "integer" && typeof value === "string" && INTEGER.test(value)) query[name] = Number(value);
  }
}

/** A 400 for parameters, worded for them (the body's is "The request body is not valid"). */
export function invalidParameters(details: ErrorDetail[]): ApiError {
  const [first] = details;
  const more = details.length > 1 ? ` (and ${details.length - 1} more problem${details.length > 2 ? "s" : ""})` : "";
  return new ApiError(400, {
    error: "Invalid request",
    message: `The request is not valid${first ? `: ${first.path} ${first.message}` : ""}${more}`,
    details: details.slice(0, MAX_DETAILS),
  });
}

/** A detail path under `query` or `path`: `query.limit`, `query.tag[1]`, `query["odd name"]`. */
const under = (prefix: string, path: string) =>
  path === "" ? prefix : path.startsWith("[") ? `${prefix}${path}` : `${prefix}.${path}`;

function problems(req: FastifyRequest, part: "params" | "querystring", prefix: string): ErrorDetail[] {
  const validate = req.getValidationFunction(part);
  if (!validate || validate(part === "params" ? req.params : req.query)) return [];
  return detailsFromAjv((validate.errors ?? []) as AjvError[]).map((d) => ({ ...d, path: under(prefix, d.path) }));
}

export async function checkParameters(req: FastifyRequest): Promise<void> {
  const schema = req.routeOptions.schema as { querystring?: Schema; params?: Schema } | undefined;
  if (!schema?.querystring && !schema?.params) return;
  if (schema.querystring) normaliseQuery(req.query as Record<string, unknown>, schema.querystring);
  const details = [...problems(req, "params", "path"), ...problems(req, "querystring", "query")];
  if (details.length > 0) throw invalidParameters(details);
}
