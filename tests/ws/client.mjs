// A nats.js client over WebSocket (@nats-io/nats-core's wsconnect + @nats-io/jetstream), run by
// tests/server/test_websocket.py against the embedded server and nats-server 2.15.1: it prints one JSON
// line of what it saw, which the test compares between the two servers.
// Node 20 has no global WebSocket: the `ws` package stands in for the browser's.
import WebSocket from "ws";
globalThis.WebSocket = WebSocket;

const { wsconnect, headers } = await import("@nats-io/nats-core");
const { jetstream, jetstreamManager, AckPolicy } = await import("@nats-io/jetstream");

const url = process.argv[2];
const out = {};
const nc = await wsconnect({ servers: url, timeout: 10000 });
out.connected = true;

// core publish/subscribe, with headers
const sub = nc.subscribe("greet.*", { max: 1 });
const h = headers();
h.set("X-Test", "yes");
nc.publish("greet.js", "hello", { headers: h });
for await (const m of sub) {
  out.core = { subject: m.subject, data: m.string(), header: m.headers?.get("X-Test") };
}

// request/reply and a payload larger than one frame
nc.subscribe("echo", { callback: (_err, m) => m.respond(m.data) });
const big = new Uint8Array(300 * 1024).map((_, i) => i % 251);
const reply = await nc.request("echo", big, { timeout: 10000 });
out.bigEcho = reply.data.length === big.length && reply.data.every((b, i) => b === big[i]);

// JetStream: a stream, publishes with dedupe, a durable pull consumer
const jsm = await jetstreamManager(nc);
const si = await jsm.streams.add({ name: "WS", subjects: ["ws.>"] });
out.stream = { name: si.config.name, subjects: si.config.subjects };
const js = jetstream(nc);
const acks = [];
for (const [subject, id] of [["ws.a", "1"], ["ws.b", "2"], ["ws.b", "2"]]) {
  const pa = await js.publish(subject, `msg-${id}`, { msgID: id });
  acks.push({ stream: pa.stream, seq: pa.seq, duplicate: pa.duplicate });
}
out.acks = acks;
await jsm.consumers.add("WS", { durable_name: "C", ack_policy: AckPolicy.Explicit });
const consumer = await js.consumers.get("WS", "C");
const got = [];
const batch = await consumer.fetch({ max_messages: 2, expires: 2000 });
for await (const m of batch) {
  got.push({ subject: m.subject, data: m.string(), seq: m.seq });
  m.ack();
}
out.fetched = got;
const info = await consumer.info();
out.consumer = { delivered: info.delivered.stream_seq, pending: info.num_pending };
await jsm.streams.delete("WS");

await nc.drain();
console.log(JSON.stringify(out));
