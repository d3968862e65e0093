/**
 * Fuzzing of query parameter names, of delete_sessions's `extra` keys and of request headers
 * (test/fuzz/names.ts; issue 27, decision 031), on the store STORE names: unlike test/fuzz.test.ts,
 * whose oracles read the SQLite file, these properties check only the answers (no 5xx, G2 bodies),
 * so they run on every engine (scripts/check.sh lists this file in THREAD_TESTS).
 *
 * 10 000 cases on SQLite in this process (the gate's first run), a tenth of that on the storage
 * thread and on PostgreSQL: the SQL the names reach is the adapter's, the same text whichever the
 * store, and the tenth costs those runs a few seconds; FUZZ_SCALE multiplies every count (a deeper
 * search on one engine: STORE=postgres FUZZ_SCALE=10). The seed is fixed (FUZZ_SEED replays another).
 */
import t from "tap";
import { deleteExtraKeysNever5xx, headersNever5xx, namesApp, queryNamesNever5xx } from "./fuzz/names.ts";
import { SCALE, SEED } from "./fuzz/setup.ts";
import { storeKind } from "./helper.ts";

t.setTimeout(600_000);

const share = storeKind() === "sqlite" ? 1 : 0.1;
const runs = (n: number) => Math.max(1, Math.ceil(n * share * SCALE));
const RUNS = { names: runs(6000), deletes: runs(1000), headers: runs(3000) };

t.comment(
  `fast-check seed ${SEED}, store ${storeKind()}: ${RUNS.names} + ${RUNS.deletes} + ${RUNS.headers} = ${RUNS.names + RUNS.deletes + RUNS.headers} cases`,
);

t.test("query parameter names (every extra.<key> family) never get a 5xx", async (t) => {
  await queryNamesNever5xx(t, await namesApp(t), RUNS.names);
});

t.test("delete_sessions's extra keys never get a 5xx, and a dry run removes nothing", async (t) => {
  await deleteExtraKeysNever5xx(t, await namesApp(t), RUNS.deletes);
});

t.test("random headers on every operation never get a 5xx", async (t) => {
  await headersNever5xx(t, await namesApp(t), RUNS.headers);
});
