/**
 * The Store contract (db/store.ts): one suite that every storage adapter must pass, whatever its
 * engine. A runner per adapter calls `storeContract` (store.sqlite.test.ts,
 * store.sqlite-thread.test.ts); nothing here knows an engine. Each subtest opens a fresh, empty
 * store through the runner's `open`, on a real database that the runner removes when the
 * subtest ends. The tests are grouped by what they hold the store to, in contract/.
 *
 * What comes back is compared whole (strictSame) with what was sent, on values chosen to break a
 * careless adapter: SQL and LIKE metacharacters, NUL, emoji, `__proto__` keys, nested nulls
 * (contract/values.ts).
 */
import type { Test } from "tap";
import { analyticsContract } from "./contract/analytics.ts";
import { eventContract } from "./contract/events.ts";
import { type Adapter, fixtures } from "./contract/fixture.ts";
import { keyContract } from "./contract/keys.ts";
import { lifecycleContract } from "./contract/lifecycle.ts";
import { listContract } from "./contract/lists.ts";
import { peopleContract } from "./contract/people.ts";
import { priceContract } from "./contract/prices.ts";
import { responseContract } from "./contract/responses.ts";
import { retentionContract } from "./contract/retention.ts";
import { rollupContract } from "./contract/rollups.ts";
import { scoreContract } from "./contract/scores.ts";
import { sessionContract } from "./contract/sessions.ts";
import { totalsContract } from "./contract/totals.ts";
import { traceContract } from "./contract/traces.ts";

export type { Adapter, Opened } from "./contract/fixture.ts";

export function storeContract(t: Test, adapter: Adapter) {
  const f = fixtures(adapter);
  keyContract(t, f);
  sessionContract(t, f);
  eventContract(t, f);
  listContract(t, f);
  lifecycleContract(t, f);
  traceContract(t, f);
  priceContract(t, f);
  retentionContract(t, f);
  totalsContract(t, f);
  analyticsContract(t, f);
  rollupContract(t, f);
  peopleContract(t, f);
  scoreContract(t, f);
  responseContract(t, f);
}
