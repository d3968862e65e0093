import t from "tap";
import { API_KEY, build } from "./helper.ts";

t.test("smoke: create a session", async (t) => {
  const { withKey } = await build(t);
  const res = await withKey("/v2/create_session", { session: { id: "s1" } }, API_KEY);
  t.equal(res.statusCode, 200);
  t.equal(res.json().status, "success");
});
