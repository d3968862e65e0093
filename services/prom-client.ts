/**
 * What services/metrics.ts takes from prom-client, re-exported from a module of ours so that it
 * can be imported on first use. Bundled with code splitting (bin/build.js), an import() of the
 * CommonJS package itself would answer only its `default`; of this module, the named exports.
 */
export { collectDefaultMetrics, Registry } from "prom-client";
