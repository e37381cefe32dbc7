// A Node.js client of the stream resource of `mta serve`: it creates a stream with a
// tumbling and a session query, watches it, inserts a batch out of order, advances the
// watermark, adds a query mid-stream, and prints what it saw as one JSON line for
// tests/test_node_client.py.
// Usage: node stream_client.js ADDRESS PROTO_DIR TOKEN
"use strict";
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");

const [address, protoDir, token] = process.argv.slice(2);
const definition = loader.loadSync("mta/v1/aggregation.proto",
  { includeDirs: [protoDir], keepCase: true, longs: Number, defaults: false, oneofs: true });
const mta = grpc.loadPackageDefinition(definition).mta.v1;
const client = new mta.Aggregation(address, grpc.credentials.createInsecure());
const metadata = new grpc.Metadata();
metadata.set("authorization", `Bearer ${token}`);

function call(method, request) {
  return new Promise((resolve, reject) =>
    client[method](request, metadata, (error, reply) => (error ? reject(error) : resolve(reply))));
}

async function refusal(method, request) {
  try {
    await call(method, request);
    return null;
  } catch (error) {
    return { code: grpc.status[error.code], details: error.details };
  }
}

// [query, start, end, count, sum, final] of a StreamResult (bounds are ints here).
const row = (r) => [r.query, r.window.start, r.window.end, r.count || 0, r.values.value, Boolean(r.final)];

async function main() {
  const seen = {};
  seen.bad = await refusal("CreateStream", { spec: { name: "node", monoid: { name: "sum" },
    queries: [{ name: "t", window: { sliding: { size: 10, slide: 0 } } }] } });
  await call("CreateStream", { spec: { name: "node", monoid: { name: "sum" }, allowed_lateness: 5, queries: [
    { name: "t10", window: { tumbling: { size: 10 } } },
    { name: "gap", window: { session: { gap: 3 } } }] } });
  const watched = [];
  const watch = client.StreamWatch({ stream: "node" }, metadata);
  const done = new Promise((resolve) => watch.on("error", () => resolve()));
  const inPlace = new Promise((resolve) => watch.on("data", (event) => {
    if (event.info) {
      resolve(); // the first event: the watcher is in place
    } else {
      watched.push(row(event.result));
    }
  }));
  await inPlace;
  const inserted = await call("StreamInsert", { stream: "node", batch_id: "n1",
    columns: { ts: [12, 1, 5, 3, 14], values: [1, 2, 4, 8, 16] } });
  seen.inserted = [inserted.inserted, inserted.dropped || 0];
  seen.first = (await call("Advance", { stream: "node", watermark: 11 })).results.map(row);
  await call("AddQuery", { stream: "node", query: { name: "c2", window: { count: { size: 2 } } } });
  // 9 is late (watermark 11) but within the lateness: "t10" [0, 10) is reported again, final false
  const late = await call("StreamInsert", { stream: "node", columns: { ts: [9, 0, 20], values: [32, 64, 128] },
    watermark: 30 });
  seen.late = [late.inserted, late.dropped];
  seen.second = late.results.map(row);
  seen.info = await call("GetStream", { name: "node" });
  watch.cancel();
  await done;
  seen.watched = watched;
  console.log(JSON.stringify(seen));
}

main().then(() => client.close(), (error) => { console.error(error); process.exit(1); });
