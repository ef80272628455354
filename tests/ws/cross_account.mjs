// nats.js's own "jetstream - cross account pull" and "cross account subscribe" steps (jetstream/tests/
// jetstream_pullconsumer_test.ts, jetstream_pushconsumer_test.ts), over WebSocket, run by
// tests/server/test_cross_account_js.py against the embedded server and nats-server 2.15.1 configured
// as nats.js's jetstreamExportServerConf. Prints one JSON line of what it saw (or the error).
import WebSocket from "ws";
globalThis.WebSocket = WebSocket;

const { wsconnect, createInbox } = await import("@nats-io/nats-core");
const { jetstream, jetstreamManager, AckPolicy } = await import("@nats-io/jetstream");

const url = process.argv[2];
const out = {};
try {
  const admin = await wsconnect({ servers: url, user: "js", pass: "js", timeout: 10000 });
  const admjsm = await jetstreamManager(admin);
  await admjsm.streams.add({ name: "S", subjects: ["S.>"] });
  const admjs = jetstream(admin);
  await admjs.publish("S.a");
  await admjs.publish("S.a");
  await admjsm.consumers.add("S", { ack_policy: AckPolicy.None, durable_name: "me" });

  const nc = await wsconnect({ servers: url, user: "a", pass: "s3cret", inboxPrefix: "A", timeout: 10000 });
  const js = jetstream(nc, { apiPrefix: "IPA" });

  // cross account pull: next() (a pull with idle heartbeats), twice, then nothing within expires
  const c = await js.consumers.get("S", "me");
  const pulled = [];
  for (let i = 0; i < 2; i++) {
    const m = await c.next();
    pulled.push(m ? m.seq : null);
  }
  const none = await c.next({ expires: 2000 });
  out.pull = { seqs: pulled, last: none };

  // cross account subscribe: a push consumer delivering to an inbox under the import, ackAck each
  const jsm = await js.jetstreamManager();
  let ci = await jsm.consumers.add("S", {
    durable_name: "push",
    ack_policy: AckPolicy.Explicit,
    deliver_subject: createInbox("A"),
  });
  const sub = await js.consumers.getPushConsumer("S", ci.name);
  const messages = await sub.consume();
  const acks = [];
  const seen = [];
  for await (const m of messages) {
    seen.push(m.seq);
    acks.push(m.ackAck());
    if (m.seq === 2) break;
  }
  await Promise.all(acks);
  ci = await sub.info();
  out.push = {
    seqs: seen,
    num_pending: ci.num_pending,
    delivered: ci.delivered.stream_seq,
    ack_floor: ci.ack_floor.stream_seq,
  };
  await sub.delete();
  await nc.close();
  await admin.close();
} catch (err) {
  out.error = String(err?.message ?? err);
}
console.log(JSON.stringify(out));
process.exit(0);
