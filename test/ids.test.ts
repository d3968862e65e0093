/** domain/ids.ts: version 7 UUIDs, time-ordered and monotonic within the process. */
import t from "tap";
import { uuidv7 } from "../domain/ids.ts";

const FORM = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string) => Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16);

t.test("version 7, variant 10, the millisecond first", async (t) => {
  const now = Date.now() + 10_000;
  const id = uuidv7(now);
  t.match(id, FORM);
  t.equal(msOf(id), now);
});

t.test("ids made one after another in one millisecond sort in that order", async (t) => {
  const at = Date.now() + 20_000;
  const ids = Array.from({ length: 5000 }, () => uuidv7(at));
  t.ok(
    ids.every((id) => FORM.test(id) && msOf(id) === at),
    "every one well formed, of that millisecond",
  );
  t.strictSame([...ids].sort(), ids, "sorted as made");
  t.equal(new Set(ids).size, ids.length, "all different");
  const later = uuidv7(at + 1);
  t.equal(msOf(later), at + 1, "a later millisecond starts afresh");
  t.ok(later > (ids.at(-1) as string));
  t.equal(msOf(uuidv7(at - 5000)), at - 5000, "an earlier time is kept (E3: the receive time)");
});
