import { exportTraces as store } from "../services/otlp.ts";
import { type Deps, type Handler, otlpClaimsOf } from "./types.ts";

/** otlp.md T1, T8-T17: OTLP traces in; the answer's media type is the request's (http/otlp.ts). */
export const exportTraces =
  (deps: Deps): Handler<"exportTraces"> =>
  async (req) =>
    store(deps, otlpClaimsOf(req), req.body);
