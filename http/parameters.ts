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
 *
 * Before that, a path or query parameter holding U+0000 is a 400 naming it (decision 017): it
 * could reach a query of the store, and PostgreSQL refuses the character there.
 */
import type { FastifyRequest } from "fastify";
import { type ErrorDetail, invalidParameters } from "../domain/errors.ts";
import { hasNul, NUL_IN_NAME, NUL_IN_VALUE } from "../domain/nul.ts";
import { childPath } from "./validation.ts";

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
}

const INTEGER = /^-?\d{1,15}$/;

/** The path and query parameters that hold U+0000, as details (`path.session_id`, `query.tag[1]`). */
function nulParameters(req: FastifyRequest): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const look = (prefix: string, parameters: unknown) => {
    for (const [name, value] of Object.entries((parameters ?? {}) as Record<string, unknown>)) {
      const at = childPath(prefix, name);
      if (hasNul(name)) details.push({ path: at, message: NUL_IN_NAME });
      const values = Array.isArray(value) ? value : [value];
      values.forEach((item, i) => {
        if (typeof item === "string" && hasNul(item)) {
          details.push({ path: Array.isArray(value) ? childPath(at, i) : at, message: NUL_IN_VALUE });
        }
      });
    }
  };
  look("path", req.params);
  look("query", req.query);
  return details;
}

/** A preValidation hook of every route. */
export async function normaliseQuery(req: FastifyRequest): Promise<void> {
  // A NUL reaches a parameter only percent-encoded: any other URL is not looked at again.
  if (req.url.includes("%00")) {
    const details = nulParameters(req);
    if (details.length > 0) throw invalidParameters(details);
  }
  const schema = (req.routeOptions.schema as { querystring?: Schema } | undefined)?.querystring;
  if (!schema) return;
  const query = req.query as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    const type = schema.properties?.[name]?.type;
    if (type === "array" && !Array.isArray(value)) query[name] = [value];
    else if (type === "integer" && typeof value === "string" && INTEGER.test(value)) query[name] = Number(value);
  }
}
