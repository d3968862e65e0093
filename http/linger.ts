/**
 * Answers that arrive (issue 27, docs/decisions/029-inflight-answers-and-cost.md). A request may be
 * answered before its body has been read: the memory ceiling's 503 on a declared length, a 401,
 * 413, 429, O2's 503, and O1's 408 for a request (or its headers) that did not arrive in time.
 * Closing the connection right after such an answer, while the client is still sending, makes
 * the kernel reset it: the client's next write fails with EPIPE or ECONNRESET, and the answer
 * waiting in its receive buffer is often lost with the connection (a client that writes its whole
 * body before it reads, like Python's http.client, never sees it at all). So the server closes
 * such a connection the way RFC 9112 §9.6 asks, a "lingering close": it sends the answer, closes
 * its own sending side, and reads and drops what the client still sends until the client closes
 * its side, within a bound of bytes and of time, so that a client cannot keep it reading forever.
 *
 * Node already reads and drops the rest of an unread body on a keep-alive connection, and keeps
 * the connection; what is left is the connection that closes after the answer: a client's
 * `Connection: close`, Fastify's when a body fails half-read (it "must close the connection as
 * the client may send more data"), and O1's 408 (http/errors.ts's clientError).
 */
import { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

/** How long, and how much, a closing connection is read and dropped before it is destroyed. */
export interface LingerBound {
  /** Bytes read and dropped at most: the largest body limit, with room for the headers. */
  bytes: number;
  /** Milliseconds at most: O1's request timeout (30 s when it is off). */
  ms: number;
}

/** Room for a request's headers above its body limit. */
const HEADER_ROOM = 64 * 1024;

export function lingerBound(bodyLimits: number[], requestTimeoutMs: number | undefined): LingerBound {
  return { bytes: Math.max(...bodyLimits) + HEADER_ROOM, ms: requestTimeoutMs || 30_000 };
}

const lingering = new WeakSet<Socket>();

/**
 * Closes `socket` after what has been written to it, reading and dropping what the client still
 * sends until it closes its side, `bound.bytes` have been dropped or `bound.ms` have passed;
 * then destroys it. Node's HTTP parser is detached first (a 'data' listener makes Node stop
 * feeding the parser from the socket, and its own listeners are removed), so nothing sent after
 * the answer is parsed: neither the rest of a refused body nor a request behind it.
 */
export function linger(socket: Socket, bound: LingerBound) {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  let dropped = 0;
  const destroy = () => socket.destroy();
  const drop = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > bound.bytes) destroy();
  };
  socket.on("data", drop);
  for (const listener of socket.listeners("data")) {
    if (listener !== drop) socket.removeListener("data", listener as (chunk: Buffer) => void);
  }
  socket.removeAllListeners("end");
  socket.once("end", destroy);
  const timer = setTimeout(destroy, bound.ms);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  socket.end();
  socket.resume();
  // Node's parser may have stopped the socket's reads (a body nobody read yet), and would have
  // restarted them in a 'resume' listener of its own that detaching it removed: restart them as
  // it would have (_http_server.js, onSocketResume).
  const handle = (socket as unknown as { _handle?: { reading: boolean; readStart(): number } | null })._handle;
  if (handle && !handle.reading) {
    handle.reading = true;
    handle.readStart();
  }
}

/** The request Node's parser is reading on `socket`, if its body has not all arrived. */
function unfinishedRequest(socket: Socket): { complete: boolean } | undefined {
  const incoming = (socket as { parser?: { incoming?: { complete: boolean } | null } }).parser?.incoming;
  return incoming && !incoming.complete ? incoming : undefined;
}

/**
 * Whether the request being read on `socket` has been answered already: its body is still
 * arriving, and no response is attached to the socket any more (Node detaches a response once it
 * has been sent). O1's timeout then finds a request that has its answer: no 408 is sent after it.
 */
export function answeredWhileArriving(socket: Socket): boolean {
  return unfinishedRequest(socket) !== undefined && (socket as { _httpMessage?: unknown })._httpMessage == null;
}

/**
 * Every connection that Node closes after an answer (a last answer: `Connection: close`) while
 * the request's body is still arriving lingers instead of being destroyed at once. Node ends such
 * a connection through `socket.destroySoon()`, once the answer is written (its resOnFinish).
 */
export function lingeringClose(app: FastifyInstance, bound: LingerBound) {
  app.server.on("connection", (socket: Socket) => {
    socket.destroySoon = function destroySoon(this: Socket) {
      if (unfinishedRequest(this) !== undefined) linger(this, bound);
      else Socket.prototype.destroySoon.call(this);
    };
  });
}
