/**
 * Query parameters of the read API, made ready for their one validation (Fastify's, against the
 * route's schema from openapi.yaml; http/errors.ts words its failures as `query.limit`,
 * `path.session_id`, as G2 wants them).
 *
 * A query string carries only strings, and Fastify's parser gives a repeated name as an array
 * (`?tag=a&tag=b` → ["a", "b"]) but a single one as a plain string (`?tag=a` → "a"). ajv could
 * coerce both (`coerceTypes: "array"`), but the option is per ajv instance and the same instance
 * checks request bodies, where the contract wants no coercion ("7" is not a number in an event).
 * So the query alone is normalised here, keyed off the route's schema: a parameter whose schema
 * is an array gets a lone value wrapped in one, an integer parameter written in digits becomes a
 * number. Anything else stays as sent, so that ajv reports it.
 */
import type { FastifyRequest } from "fastify";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
}

const INTEGER = /^-?\d{1,15}$/;

/** A preValidation hook of every route. */
export async function normaliseQuery(req: FastifyRequest): Promise<void> {
  const schema = (req.routeOptions.schema as { querystring?: Schema } | undefined)?.querystring;
  if (!schema) return;
  const query = req.query as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    const type = schema.properties?.[name]?.type;
    if (type === "array" && !Array.isArray(value)) query[name] = [value];
    else if (type === "integer" && typeof value === "string" && INTEGER.test(value)) query[name] = Number(value);
  }
}
