// A Node.js client of `mta serve` (@grpc/grpc-js, @grpc/proto-loader), as a user in
// another language would write it: it loads aggregation.proto, calls Describe and a
// few bad requests, streams batches through Ingest waiting for each ack before sending
// the next, sends an out-of-order batch to a "fiba" window and queries a time range of it,
// and prints what it saw as one JSON line for tests/test_node_client.py.
// Usage: node client.js ADDRESS PROTO_DIR TOKEN
"use strict";
const { client, metadata, call, refusal } = require("./connect");

// A producer that sends its next batch only after the ack of the one before, and
// keeps the stream open after the last: every ack must come all the same.
function ingestWaitingForEachAck(window, batches) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + 20000);
    const stream = client.Ingest(metadata, { deadline });
    const acks = [];
    const send = (i) => stream.write({ window, batch_id: `n${i}`, columns: { ts: [i], values: [i + 1] } });
    stream.on("data", (reply) => {
      acks.push(reply.batch_id);
      if (acks.length < batches) {
        send(acks.length);
      } else {
        stream.end();
      }
    });
    stream.on("error", reject);
    stream.on("end", () => resolve(acks));
    send(0);
  });
}

async function main() {
  const seen = {};
  const described = await call("Describe", {});
  seen.monoids = described.monoids.map((m) => m.name);
  seen.time_range = described.policies.find((p) => p.name === "time_range");
  seen.both = await refusal("CreateWindow", { spec: {
    name: "node", monoid: { name: "sum" }, dimensions: [{ name: "a", monoid: { name: "max" } }] } });
  seen.width = await refusal("CreateWindow", { spec: {
    name: "node", monoid: { name: "sum" }, policy: { name: "time_range", params: { width: { string_value: "1h" } } } } });
  await call("CreateWindow", { spec: {
    name: "node", dimensions: [{ name: "avg", monoid: { name: "mean" } }, { name: "peak", monoid: { name: "max" } }] } });
  seen.late = await refusal("Insert", { window: "node", columns: {
    ts: [1, 2, 0], dimensions: { avg: { values: [1, 2, 3] }, peak: { values: [1, 2, 3] } } } });
  seen.nan = await refusal("Insert", { window: "node", updates: [
    { ts: 1, dimensions: { avg: 1, peak: 1 } }, { ts: 2, dimensions: { avg: 2, peak: NaN } }] });
  await call("CreateWindow", { spec: { name: "acks", monoid: { name: "sum" } } });
  seen.acks = await ingestWaitingForEachAck("acks", 5);
  // Out of order: the window keeps (newest - 5, newest]; 2, 4 and 4 leave, 4 is the frontier.
  await call("CreateWindow", { spec: {
    name: "ooo", monoid: { name: "sum" }, algorithm: "fiba", policy: { name: "time_range", params: { width: { float_value: 5 } } } } });
  seen.ooo = await call("Insert", { window: "ooo", columns: { ts: [7, 2, 9, 4, 4], values: [1, 2, 4, 8, 16] } });
  seen.ooo_late = await refusal("Insert", { window: "ooo", columns: { ts: [8, 3], values: [1, 1] } });
  seen.ooo_range = (await call("Query", { windows: ["ooo"], range: { from_ts: 8 } })).results;
  seen.ooo_range_refused = await refusal("Query", { windows: ["acks"], range: { from_ts: 1, to_ts: 2 } });
  seen.query = (await call("Query", { windows: [] })).results;
  console.log(JSON.stringify(seen));
}

main().then(() => client.close(), (error) => { console.error(error); process.exit(1); });
