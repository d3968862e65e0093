// The HTTP floor of `npm run bench`: a bare Fastify server in its own process. Its one POST route
// parses the JSON body and answers {"status":"success"}; POST /v2/create_session answers the same,
// for the cold-start baseline. Plain JavaScript run by plain node: no loader, no schema, no storage.
import Fastify from "fastify";

const app = Fastify({ bodyLimit: 5 * 1024 * 1024 });
const ok = async () => ({ status: "success" });
app.post("/v2/create_events", ok);
app.post("/v2/create_session", ok);
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
const { port } = app.server.address();
process.stdout.write(`floor: listening on http://127.0.0.1:${port}\n`);
process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
