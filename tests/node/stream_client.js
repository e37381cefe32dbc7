// A Node.js client of the stream resource of `mta serve`: it creates a stream with a
// tumbling and a session query, watches it, inserts a batch out of order, advances the
// watermark, adds a query mid-stream, and prints what it saw as one JSON line for
// tests/test_node_client.py.
// Usage: node stream_client.js ADDRESS PROTO_DIR TOKEN
"use strict";
const { client, metadata, call, refusal } = require("./connect");

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
  let expected = Infinity; // how many results the watcher should see: known at the end
  let allSeen;
  const seenAll = new Promise((resolve) => { allSeen = resolve; });
  const watch = client.StreamWatch({ stream: "node" }, metadata);
  const done = new Promise((resolve) => watch.on("error", () => resolve()));
  const inPlace = new Promise((resolve) => watch.on("data", (event) => {
    if (event.info) {
      resolve(); // the first event: the watcher is in place
    } else {
      watched.push(row(event.result));
      if (watched.length >= expected) allSeen();
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
  // The watch delivers after the replies, in its own time: wait for every result (or 10 s).
  expected = seen.first.length + seen.second.length;
  if (watched.length >= expected) allSeen();
  await Promise.race([seenAll, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
  watch.cancel();
  await done;
  seen.watched = watched;
  console.log(JSON.stringify(seen));
}

main().then(() => client.close(), (error) => { console.error(error); process.exit(1); });
